"""Which light header tier a load_inline call is built against, chosen from its source text before compiling.

The vocabulary is the real one: the host compiler preprocesses torch's header sets once for the module (a few
seconds). No source is compiled here; tests/harness/test_builds.py compiles the tiers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.builds import header_tiers, toolchain
from harness.builds.header_vocabulary import Vocabulary, Words

CPP = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor a, torch::Tensor b);"
DISPATCH = """template <typename scalar_t>
__global__ void k(const scalar_t* a, scalar_t* c, int n) { int i = threadIdx.x; if (i < n) c[i] = a[i]; }
torch::Tensor f(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes(), "same shapes");
    auto c = torch::empty_like(a);
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(a.scalar_type(), "k", ([&] {
        k<scalar_t><<<1, 256>>>(a.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), a.numel());
    }));
    return c;
}"""
EXTENSION = "#include <torch/extension.h>\n"
ARITHMETIC = "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return at::add(a, b) * 2 + b; }"
NN = EXTENSION + "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return torch::nn::functional::relu(a); }"
INDEXING = (
    EXTENSION + "using torch::indexing::Slice;\n"
    "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return a.index({Slice(0, 2)}); }"
)
CASTERS = frozenset({"at::Tensor", "at::IntArrayRef"})
COMMENTED = EXTENSION + "// torch::nn::Linear would do, but not here\n" + ARITHMETIC
OWN_HEADER = '#include "c10/cuda/CUDAException.h"\n' + ARITHMETIC.replace(
    "return", "C10_CUDA_KERNEL_LAUNCH_CHECK(); return"
)
# the three fixtures of bench/first_build.py, and what each gets: the lightest tier its names allow, then light only
# where it would change the CUDA source (it includes torch/extension.h)
CASES = {
    "public style: dispatch macros, no include in the CUDA source": (CPP, DISPATCH, ["ops"]),
    "torch/extension.h in the CUDA source": (CPP, EXTENSION + DISPATCH, ["ops", "light"]),
    "at:: operators and tensor arithmetic": (CPP, ARITHMETIC, ["ops"]),
    "torch::nn needs torch/extension.h itself": (CPP, NN, []),
    "torch::indexing is beyond the operators' headers": (CPP, INDEXING, ["light"]),
    "a name in a comment rules nothing out": (CPP, COMMENTED, ["ops", "light"]),
    "a macro of the source's own includes rules nothing out": (CPP, OWN_HEADER, ["ops"]),
    "C++ only: main.cpp is all of the build": (CPP, None, ["ops", "light"]),
    "C++ only with torch::nn": (CPP.replace(";", " { return torch::nn::functional::relu(a); }"), None, []),
}


@pytest.fixture(scope="module")
def vocabulary() -> Vocabulary:
    if (loaded := header_tiers.vocabulary()) is None:
        pytest.skip("no host compiler that preprocesses torch's headers")
    return loaded


@pytest.fixture(scope="module")
def ops_folder() -> Path:
    from torch.utils import cpp_extension

    return Path(cpp_extension.include_paths()[0]) / "ATen" / "ops"


@pytest.mark.parametrize("case", CASES)
def test_the_tier_is_chosen_from_the_names_the_source_uses(case: str, vocabulary: Vocabulary, ops_folder: Path) -> None:
    cpp, cuda, expected = CASES[case]
    call = {"name": "f_ext", "cpp_sources": cpp, "cuda_sources": cuda, "functions": ["f"]}
    assert [name for name, _ in header_tiers.plan(call, ops_folder, vocabulary)] == expected


def test_a_call_that_chose_its_headers_is_built_as_written(vocabulary: Vocabulary, ops_folder: Path) -> None:
    call = {"name": "f_ext", "cpp_sources": CPP, "cuda_sources": DISPATCH, "no_implicit_headers": True}
    assert header_tiers.plan(call, ops_folder, vocabulary) == []


def test_without_a_vocabulary_every_tier_is_tried(ops_folder: Path) -> None:
    call = {"name": "f_ext", "cpp_sources": CPP, "cuda_sources": NN, "functions": ["f"]}
    assert [name for name, _ in header_tiers.plan(call, ops_folder, None)] == ["ops", "light"]


def test_the_operators_tier_brings_the_dispatch_macros_the_operators_and_the_ones_it_calls(ops_folder: Path) -> None:
    call = {"name": "f_ext", "cpp_sources": CPP, "cuda_sources": ARITHMETIC, "functions": ["f"]}
    (name, ops), *_ = header_tiers.plan(call, ops_folder, None)
    assert name == "ops"
    headers = ops["cuda_sources"][: -len(header_tiers.CUDA_RUNTIME_HEADERS) - 1]
    assert "#include <ATen/Dispatch.h>" in headers and "#include <ATen/TensorOperators.h>" in headers
    assert "#include <ATen/ops/add.h>" in headers and ops["cuda_sources"][-1] == ARITHMETIC
    # the flag that keeps TensorOperators.h from including every operator is gone before the source's own lines
    assert headers.index("#undef AT_PER_OPERATOR_HEADERS") < len(headers) - 1
    # main.cpp: the same headers plus pybind's casters, the declarations without torch/extension.h
    assert ops["cpp_sources"][: len(header_tiers.OPS_MAIN_HEADERS)] == list(header_tiers.OPS_MAIN_HEADERS)
    assert "torch/extension.h" not in ops["cpp_sources"][-1] and "torch::Tensor f(" in ops["cpp_sources"][-1]
    assert ops["no_implicit_headers"] and ops["functions"] == ["f"]


def test_used_names_reads_paths_and_macros_but_not_comments_or_the_sources_own_macros() -> None:
    names, macros = header_tiers.used_names(
        "#define MY_BLOCK_SIZE 256\n/* at::native::x */ auto s = torch::indexing::Slice(MY_BLOCK_SIZE);\n"
        "TORCH_CHECK(c10 :: cuda :: current_device() >= 0);"
    )
    assert names == {"indexing", "Slice", "cuda", "current_device"}
    assert macros == {"TORCH_CHECK"}


def test_missing_names_are_those_the_full_headers_declare_and_the_tier_does_not() -> None:
    vocabulary = Vocabulary(
        full=Words(frozenset({"Tensor", "nn", "Slice"}), frozenset({"TORCH_CHECK", "AT_DISPATCH_ALL_TYPES"}), CASTERS),
        sets={"ops": Words(frozenset({"Tensor"}), frozenset({"TORCH_CHECK"}), frozenset())},
    )
    assert vocabulary.missing("ops", {"Tensor", "nn", "getCurrentCUDAStream"}, {"TORCH_CHECK"}) == {"nn"}
    assert vocabulary.missing("ops", set(), {"AT_DISPATCH_ALL_TYPES", "C10_CUDA_CHECK"}) == {"AT_DISPATCH_ALL_TYPES"}
    assert vocabulary.missing("light", {"nn"}, set()) == set()  # a set not read: nothing known to be missing


def test_bindings_are_compiled_light_only_with_the_casters_of_torch_extension_h(vocabulary: Vocabulary) -> None:
    assert vocabulary.binds_alike("main_light") and vocabulary.binds_alike("main_ops")  # torch as installed here
    assert any("at::Tensor" in caster for caster in vocabulary.full.casters)
    fewer = Vocabulary(vocabulary.full, {"main_light": Words(frozenset(), frozenset(), CASTERS - {"at::Tensor"})})
    assert not fewer.binds_alike("main_light") and not fewer.binds_alike("main_ops")
    call = {"name": "f_ext", "cpp_sources": CPP, "cuda_sources": DISPATCH, "functions": ["f"]}
    assert header_tiers.plan(call, Path("/nonexistent"), fewer) == []  # no main.cpp tier: built as written


def test_the_toolchain_fingerprint_covers_the_code_that_picks_the_headers() -> None:
    assert len(toolchain.fingerprint()) == 64  # reads harness/builds' own modules: they must all exist
