"""Builds of .cu submissions and load_inline calls: nvcc for sm_90a, errors with file and line, the cache.

Everything runs for real: nvcc (CUDA toolkit installed here, no GPU needed to compile), the sandboxed
builder forked from this process, the content-addressed cache on disk, and a harness server whose jobs try
to write the cache. Running a built module needs a GPU: those tests are marked ``cuda``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from harness import EvalJob, FailureKind, HarnessServer, Mode, Status, load_problem
from harness.builds import build, header_tiers
from harness.builds.builder import Builds
from harness.builds.cache import BuildCache, key
from harness.builds.toolchain import ARCHES, arch_named, nvcc
from harness.isolation import sandbox

REPO = Path(__file__).resolve().parents[2]
CU_PROBLEMS = ("vectoradd_cu", "grayscale_cu")
needs_nvcc = pytest.mark.skipif(nvcc() is None, reason="no CUDA compiler (nvcc) on this machine")
H100 = ARCHES["9.0"].sm


def _sources(problem: str) -> list[Path]:
    folder = REPO / "problems" / problem
    return [folder / "template.cu", *sorted(folder.glob("solutions/*/*.cu"))]


@pytest.fixture(scope="module")
def capability() -> sandbox.Capability:
    return sandbox.probe("auto")


def test_the_arch_table_names_one_target_per_gpu() -> None:
    assert {a.sm for a in ARCHES.values()} == {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a"}
    assert arch_named("9.0").sm == arch_named("sm_90").sm == arch_named("sm_90a").sm == "sm_90a"
    assert arch_named("12.0").sm == "sm_120" and arch_named("nonsense") is None


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize(
    "source", [s for p in CU_PROBLEMS for s in _sources(p)], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_shipped_cu_source_compiles_for_sm_90a(source: Path, tmp_path: Path) -> None:
    problem = load_problem(source.parents[2] if source.parent.name in ("correct", "wrong") else source.parent)
    outcome = build.run(build.cu_request(problem.files, problem.submission_name, source.read_text(), H100), tmp_path)
    assert outcome.ok, outcome.log
    module = outcome.files[build.CU_MODULE]
    assert module[:4] == b"\x7fELF" and b"kr_custom_kernel" in module


@pytest.mark.slow
@needs_nvcc
def test_a_compile_error_names_the_users_file_and_line(tmp_path: Path) -> None:
    problem = load_problem(REPO / "problems" / "vectoradd_cu")
    source = (REPO / "problems/vectoradd_cu/solutions/correct/half2_add.cu").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if "output_t c(n);" in text)
    broken = "\n".join(source).replace("output_t c(n);", "output_t c(n) undeclared_name;")
    outcome = build.run(build.cu_request(problem.files, problem.submission_name, broken, H100), tmp_path)
    assert not outcome.ok
    log = build.user_log(outcome.log, problem.submission_name, "my_kernel.cu", str(tmp_path))
    assert build.first_error(log).startswith(f"my_kernel.cu({line}): error")
    assert "submission.cu" not in log and str(tmp_path) not in log


@pytest.mark.slow
@needs_nvcc
def test_a_missing_custom_kernel_fails_at_link_time(tmp_path: Path) -> None:
    problem = load_problem(REPO / "problems" / "vectoradd_cu")
    outcome = build.run(build.cu_request(problem.files, problem.submission_name, "// nothing here\n", H100), tmp_path)
    assert not outcome.ok and "custom_kernel" in outcome.log


@pytest.mark.slow
@needs_nvcc
def test_compile_errors_reach_the_result_through_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELRANK_CUDA_ARCH", "sm_90a")  # no GPU here: build for an H100 anyway
    monkeypatch.setenv("KERNELRANK_BUILD_CACHE", str(tmp_path / "cache"))
    problem = load_problem(REPO / "problems" / "vectoradd_cu")
    job = EvalJob(
        problem=problem,
        submission_name="fast_add.cu",
        mode=Mode.TEST,
        submission_source='#include "task.h"\noutput_t custom_kernel(input_t data) { return data.a + 1; }\n',
    )
    with HarnessServer() as server:
        result = server.evaluate(job)
    assert result.status is Status.ERROR and result.failure.kind is FailureKind.COMPILE_ERROR
    assert result.failure.message.startswith("The submission failed to compile: fast_add.cu(2): error")
    assert "fast_add.cu(2): error" in result.failure.log_tail and result.compile_s > 0


@pytest.mark.slow
@needs_nvcc
def test_the_second_build_is_a_cache_hit(tmp_path: Path, capability: sandbox.Capability) -> None:
    problem = load_problem(REPO / "problems" / "vectoradd_cu")
    source = (REPO / "problems/vectoradd_cu/solutions/correct/half2_add.cu").read_text()
    request = build.cu_request(problem.files, problem.submission_name, source, H100)
    cache = BuildCache(tmp_path / "cache", 2**30)

    first = Builds(cache, capability).build(request, 120)
    second = Builds(cache, capability).build(request, 120)
    other = Builds(cache, capability).build(
        build.cu_request(problem.files, problem.submission_name, source, "sm_80"), 120
    )

    assert first.ok and not first.cached, first.log
    assert second.ok and second.cached and second.files == first.files
    assert other.ok and not other.cached  # another GPU, another key
    entry = cache.entry(request.key())
    assert sorted(p.name for p in entry.iterdir()) == [build.CU_MODULE]
    assert not stat.S_IMODE(entry.stat().st_mode) & 0o022  # nobody else may write it


def test_the_cache_renames_atomically_evicts_least_recently_used_and_keeps_the_first(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path, max_bytes=250)
    keys = [key({"n": n}) for n in range(3)]
    for n, build_key in enumerate(keys):
        cache.store(build_key, {"module.so": bytes([n]) * 100})
        os.utime(cache.entry(build_key), (n, n))  # older first
    assert cache.lookup(keys[0]) is None  # 300 bytes > 250: the oldest went
    assert cache.lookup(keys[1]) is not None and cache.lookup(keys[2]) is not None
    cache.store(keys[2], {"module.so": b"\xff" * 100})  # a second build of a stored key loses the race
    assert (cache.entry(keys[2]) / "module.so").read_bytes() == bytes([2]) * 100
    assert not [p for p in tmp_path.rglob(".incoming-*")]
    with pytest.raises(ValueError, match="plain name"):
        cache.store(key({"n": 9}), {"../escape.so": b""})


def test_only_plain_load_inline_arguments_are_built_outside_the_job() -> None:
    call = {
        "name": "add_ext",
        "cpp_sources": "torch::Tensor add(torch::Tensor a);",
        "cuda_sources": ["// cuda"],
        "functions": ["add"],
        "extra_cuda_cflags": ["-O3"],
        "verbose": True,
    }
    request = build.extension_request(call, "sm_90a", {"task.py": "x"})
    assert request is not None and "verbose" not in request.options and request.sources == {}
    assert request.key() == build.extension_request(dict(call, verbose=False), "sm_90a", {}).key()
    assert request.key() != build.extension_request(dict(call, extra_cuda_cflags=["-O2"]), "sm_90a", {}).key()
    assert build.extension_request(dict(call, extra_include_paths=["."]), "sm_90a", {"task.h": "x"}).sources
    for odd in (
        {"build_directory": "/tmp/x"},
        {"name": "../x"},
        {"functions": [object()]},
        {"cpp_sources": type("Sneaky", (str,), {})("x")},
        {"sycl_sources": ["x"]},
    ):
        assert build.extension_request({**call, **odd}, "sm_90a", {}) is None


@pytest.mark.slow
@needs_nvcc
def test_a_submission_cannot_plant_a_module_in_the_cache(
    tmp_path: Path, capability: sandbox.Capability, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job computes the cache key of a known-good source (all of it is public) and writes a trojan where the
    cache keeps that build; the next build of that source must still be the honest one."""
    cache_root = tmp_path / "cache"
    monkeypatch.setenv("KERNELRANK_BUILD_CACHE", str(cache_root))
    problem = load_problem(REPO / "problems" / "vectoradd_cu")
    source = (REPO / "problems/vectoradd_cu/solutions/correct/half2_add.cu").read_text()
    request = build.cu_request(problem.files, problem.submission_name, source, H100)
    target = BuildCache(cache_root, 2**30).entry(request.key()) / build.CU_MODULE
    planter = (REPO / "tests/fixtures/harness/cuda/plant_cache.py").read_text().replace('"TARGET"', repr(str(target)))
    fixture = load_problem(REPO / "tests/fixtures/harness/vectoradd")
    with HarnessServer() as server:
        planted = server.evaluate(
            EvalJob(
                problem=fixture, submission_name="plant.py", submission_source=planter, mode=Mode.TEST, device="cpu"
            )
        )
    assert planted.status is Status.PASSED, planted.failure
    assert "planted" in planted.stdout or "refused" in planted.stdout  # its own private /tmp, or read-only
    assert not target.exists()
    honest = Builds(BuildCache(cache_root, 2**30), capability).build(request, 120)
    assert honest.ok and not honest.cached and b"TROJAN" not in honest.files[build.CU_MODULE]
    assert target.read_bytes() == honest.files[build.CU_MODULE]


def test_light_headers_stand_in_for_torch_extension_h_and_nothing_else_changes() -> None:
    call = {
        "name": "add_ext",
        "cpp_sources": "torch::Tensor add(torch::Tensor a);",
        "cuda_sources": '#include <torch/extension.h>\n#include "torch/extension.h"\n__global__ void k() {}',
        "functions": ["add"],
    }
    light = header_tiers.light_options(call)
    assert light["no_implicit_headers"] and light["functions"] == ["add"] and light["name"] == "add_ext"
    assert light["cpp_sources"] == [*header_tiers.LIGHT_CPP_HEADERS, call["cpp_sources"]]
    assert light["cuda_sources"] == [
        *header_tiers.LIGHT_CUDA_HEADERS,
        "#include <torch/types.h>\n#include <torch/types.h>\n__global__ void k() {}",
    ]
    assert header_tiers.light_options({**call, "cuda_sources": None})["cuda_sources"] is None  # C++ only: as passed
    assert header_tiers.light_options({**call, "no_implicit_headers": True}) is None  # the author chose the headers


LIGHT = "torch::Tensor twice(torch::Tensor x) { return x * 2; }"
FULL = "torch::Tensor twice(torch::Tensor x) { return torch::nn::functional::relu(x) * 0 + x * 2; }"  # nn: all.h


@pytest.mark.slow
@pytest.mark.parametrize(("source", "log"), [(LIGHT, build.TIER_NOTE.format("ops")), (FULL, "")])
def test_a_load_inline_build_uses_light_headers_or_builds_the_sources_as_written(
    source: str, log: str, tmp_path: Path, capability: sandbox.Capability
) -> None:
    """The bindings against the ops tier's headers behave as torch's; torch::nn is beyond every tier: the builder
    knows it from the source and builds it as written at once."""
    request = build.extension_request({"name": "twice_ext", "cpp_sources": source, "functions": ["twice"]}, "", {})
    outcome = Builds(None, capability).build(request, 600)
    assert outcome.ok, outcome.log
    assert outcome.log == log
    (tmp_path / "twice_ext.so").write_bytes(outcome.files["twice_ext.so"])
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("twice_ext", tmp_path / "twice_ext.so")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert torch.equal(module.twice(torch.arange(4.0)), torch.arange(4.0) * 2)
    with pytest.raises(TypeError):  # pybind's tensor caster is bound in, as with torch/extension.h
        module.twice("not a tensor")


INLINE_ADD = """
from torch.utils.cpp_extension import load_inline

_module = load_inline(
    name="inline_add_ext",
    cpp_sources='''#include <torch/extension.h>
at::Tensor add_into(at::Tensor a, at::Tensor b, at::Tensor out) {
    TORCH_CHECK(a.sizes() == b.sizes(), "same shapes only");
    return out.copy_(at::add(a, b));
}''',
    functions=["add_into"],
    verbose=True,
)


def custom_kernel(data):
    a, b, out = data
    return _module.add_into(a, b, out)
"""


@pytest.mark.slow
def test_an_inline_extension_in_public_style_passes_through_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server reads torch's header sets at start (it preloads the extension builder), builds the call in its
    sandboxed builder against the tier the source's names allow, and the job loads and runs the module."""
    monkeypatch.setenv("KERNELRANK_CUDA_ARCH", "sm_90a")  # no GPU here: the server builds for an H100 anyway
    monkeypatch.setenv("KERNELRANK_BUILD_CACHE", str(tmp_path / "cache"))
    problem = load_problem(REPO / "tests" / "fixtures" / "harness" / "vectoradd")
    problem = dataclasses.replace(problem, task=dataclasses.replace(problem.task, test_timeout=600))  # 2 shared cores
    job = EvalJob(problem=problem, submission_name="inline_add.py", mode=Mode.TEST, submission_source=INLINE_ADD)
    with HarnessServer() as server:
        result = server.evaluate(job)
    assert result.status is Status.PASSED, result.failure
    assert result.compile_s > 0 and list((tmp_path / "cache").glob("*/*/inline_add_ext.so"))


CUDA_HOST_CODE = """#include <torch/extension.h>
#include <c10/util/Exception.h>
torch::Tensor scaled(torch::Tensor a) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && a.dtype() != torch::kF16, "float32 only");
    auto out = torch::empty_like(a);
    auto zero = at::zeros({1}, a.options());
    return out.copy_(a.contiguous().mul(2)).add_(zero.sum());
}
"""


def test_a_cuda_source_is_built_against_the_operators_it_names_first() -> None:
    ops_folder = _ops_folder()
    call = {"name": "scaled_ext", "cpp_sources": "torch::Tensor scaled(torch::Tensor a);", "functions": ["scaled"]}
    ops = header_tiers.ops_options({**call, "cuda_sources": CUDA_HOST_CODE}, ops_folder, light_main=True)
    assert ops["cpp_sources"] == header_tiers.light_options(call)["cpp_sources"]  # main.cpp as in the light tier
    headers = ops["cuda_sources"][:-1]
    assert "#include <ATen/ops/empty_like.h>" in headers and "#include <ATen/ops/zeros.h>" in headers
    assert not any("scaled.h" in line or "torch/" in line for line in headers)  # only ATen's own operators
    assert "torch/extension.h" not in ops["cuda_sources"][-1] and "c10/util/Exception.h" in ops["cuda_sources"][-1]
    assert header_tiers.ops_options(call, ops_folder, light_main=True) is None  # C++ only: light is the lightest
    assert header_tiers.ops_options({**call, "cuda_sources": "#include <torch/types.h>\n"}, ops_folder) is None
    assert (
        header_tiers.ops_options({**call, "cuda_sources": CUDA_HOST_CODE, "no_implicit_headers": True}, ops_folder)
        is None
    )


DISPATCH_HOST_CODE = """template <typename scalar_t>
void twice(const scalar_t* a, scalar_t* c, int64_t n) { for (int64_t i = 0; i < n; ++i) c[i] = a[i] + a[i]; }
torch::Tensor doubled(torch::Tensor a) {
    TORCH_CHECK(a.is_contiguous(), "contiguous only");
    auto c = torch::empty_like(a);
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(a.scalar_type(), "twice", ([&] {
        twice<scalar_t>(a.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), a.numel());
    }));
    return at::add(c, a) * 2 - a / 3;
}
"""


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("g++"), reason="no host compiler (g++) on this machine")
@pytest.mark.parametrize("host_code", [CUDA_HOST_CODE, DISPATCH_HOST_CODE], ids=["operators", "dispatch"])
def test_the_operators_tier_compiles_what_torch_types_h_compiles(host_code: str, tmp_path: Path) -> None:
    """The host side of a CUDA source, against the tier's headers: torch's names resolve to ATen's, and the dispatch
    macros and tensor arithmetic of public submissions are there."""
    from torch.utils import cpp_extension

    ops = header_tiers.ops_options({"name": "x", "cpp_sources": "", "cuda_sources": host_code}, _ops_folder())
    runtime = set(header_tiers.CUDA_RUNTIME_HEADERS)
    (tmp_path / "host.cpp").write_text("\n".join(line for line in ops["cuda_sources"] if line not in runtime))
    includes = [f"-I{path}" for path in cpp_extension.include_paths()]
    done = subprocess.run(
        ["g++", "-fsyntax-only", "-std=c++20", *includes, "host.cpp"], cwd=tmp_path, text=True, capture_output=True
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _ops_folder() -> Path:
    from torch.utils import cpp_extension

    return Path(cpp_extension.include_paths()[0]) / "ATen" / "ops"
