"""What a build is and how it runs: ``.cu`` submissions with our driver, and ``load_inline`` extensions.

A ``BuildRequest`` is plain data (sources, options, target architecture); its ``key`` hashes all of it with
the toolchain's fingerprint, so equal requests share one cached build (``harness.builds.cache``). ``run``
compiles a request in the current folder and returns the built files; the harness server calls it only
inside a sandboxed builder process (``harness.builds.builder``), never in a submission's process.

Compile errors keep the compiler's words, with file and line, under the user's own file name; warnings
stay in the log that comes back with a successful build.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.builds import cache, header_tiers, toolchain

# A .cu submission makes two modules (docs/cuda.md, "Two modules"): the runner's, with the submission, and the
# judge's, with the problem's reference alone; our drivers and their shared header are staged under these names.
CU_MODULE = "kernelrank_cu_module.so"  # the runner's: the submission's custom_kernel
CU_REFERENCE = "kernelrank_cu_reference.so"  # the judge's: generate_input and check_implementation
RUNNER_DRIVER = "kernelrank_runner.cu"  # harness/builds/cu_runner.cu
JUDGE_DRIVER = "kernelrank_judge.cu"  # harness/builds/cu_judge.cu
VALUES_HEADER = "kernelrank_values.h"  # harness/builds/cu_values.h
COMPILE_TIMEOUT_ENV = "KERNELRANK_COMPILE_TIMEOUT_S"
COMPILE_TIMEOUT_S = 180.0
MAX_ARTIFACT_BYTES = 40 * 2**20  # a built module travels in one channel record
LOG_CHARS = 20_000
# nvcc flags of every .cu build: one target, optimised, a shared library on the shared CUDA runtime (the one
# torch loaded, so the submission's work and the harness's events share the default stream), line info for ncu.
CU_FLAGS = (
    "-std=c++20",
    "-O3",
    "-shared",
    "-Xcompiler",
    "-fPIC",
    "-Xlinker",
    "--no-undefined",
    "-cudart",
    "shared",
    "-lineinfo",
    "--expt-relaxed-constexpr",
    "--extended-lambda",
)
# load_inline arguments a cached build accepts (anything else, e.g. build_directory, builds in the job as before).
EXTENSION_ARGS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "cpp_sources": (str, list),
    "cuda_sources": (str, list, type(None)),
    "functions": (str, list, dict, type(None)),
    "extra_cflags": (list, type(None)),
    "extra_cuda_cflags": (list, type(None)),
    "extra_ldflags": (list, type(None)),
    "extra_include_paths": (list, type(None)),
    "with_cuda": (bool, type(None)),
    "is_python_module": bool,
    "with_pytorch_error_handling": bool,
    "no_implicit_headers": bool,
}
_IGNORED_ARGS = ("verbose", "keep_intermediates")
_ERROR_LINE = re.compile(r"(?m)^.*\b(error|fatal error)\b.*$")
FALLBACK_NOTE = "The builds against light torch headers failed, so the sources were built as written."
TIER_NOTE = "Built against the {} tier's torch headers (harness/builds/header_tiers.py)."


@dataclass(frozen=True)
class BuildRequest:
    kind: str  # "cu" | "extension"
    arch: str  # nvcc's target, e.g. "sm_90a"
    sources: dict[str, str] = field(default_factory=dict)  # files written into the build folder
    options: dict[str, Any] = field(default_factory=dict)  # cu: {"units", "module"}; extension: load_inline's args

    def key(self) -> str:
        return cache.key(
            {
                "kind": self.kind,
                "arch": self.arch,
                "sources": self.sources,
                "options": self.options,
                "toolchain": toolchain.fingerprint(),
            }
        )


@dataclass
class BuildOutcome:
    ok: bool
    files: dict[str, bytes] = field(default_factory=dict)
    log: str = ""  # the compiler's output: warnings on success, errors on failure
    message: str = ""  # on failure: one sentence for the user
    seconds: float = 0.0
    cached: bool = False
    problem_fault: bool = False  # the problem's own sources failed (a .cu problem's judge module), not the submission


def compile_timeout_s() -> float:
    return float(os.environ.get(COMPILE_TIMEOUT_ENV) or COMPILE_TIMEOUT_S)


def cu_request(problem_files: dict[str, str], staged_name: str, source: str, arch: str) -> BuildRequest:
    """The runner's module of a .cu submission: our runner driver, the problem's headers and the submission."""
    sources = {**problem_files, staged_name: source, **_drivers("cu_runner.cu", RUNNER_DRIVER)}
    return BuildRequest("cu", arch, sources, {"units": [RUNNER_DRIVER, staged_name], "module": CU_MODULE})


def cu_reference_request(problem_files: dict[str, str], staged_name: str, arch: str) -> BuildRequest:
    """The judge's module of a .cu problem: our judge driver and the problem's files, without the submission (the
    same build for every submission to the problem, so the cache holds it after the first)."""
    files = {name: text for name, text in problem_files.items() if name != staged_name}
    sources = {**files, **_drivers("cu_judge.cu", JUDGE_DRIVER)}
    return BuildRequest("cu", arch, sources, {"units": [JUDGE_DRIVER], "module": CU_REFERENCE})


def _drivers(driver: str, staged_as: str) -> dict[str, str]:
    here = Path(__file__).parent
    return {staged_as: (here / driver).read_text(), VALUES_HEADER: (here / "cu_values.h").read_text()}


def extension_request(arguments: dict[str, Any], arch: str, problem_files: dict[str, str]) -> BuildRequest | None:
    """The build of one ``load_inline`` call, or None when its arguments are not plain data we can cache."""
    options: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in _IGNORED_ARGS:
            continue
        if name not in EXTENSION_ARGS or not isinstance(value, EXTENSION_ARGS[name]) or not _plain(value):
            return None
        options[name] = value
    if not isinstance(options.get("name"), str) or not options["name"].isidentifier():
        return None
    # include paths are resolved in the build folder, which holds the problem's files: they become inputs
    sources = dict(problem_files) if options.get("extra_include_paths") else {}
    return BuildRequest("extension", arch, sources, options)


def run(request: BuildRequest, folder: Path, timeout_s: float | None = None) -> BuildOutcome:
    """Compile ``request`` in ``folder`` (written to first); never raises for what the sources hold."""
    timeout_s = timeout_s or compile_timeout_s()
    for name, text in request.sources.items():
        (folder / name).write_text(text)
    started = time.monotonic()
    builder: Callable[[BuildRequest, Path, float], BuildOutcome] = _cu if request.kind == "cu" else _extension
    try:
        outcome = builder(request, folder, timeout_s)
    except subprocess.TimeoutExpired:
        outcome = BuildOutcome(
            False,
            message=f"The build did not finish within {timeout_s:g} s and was stopped. "
            "Simplify the code (deep template instantiation, huge unrolled loops).",
        )
    outcome.seconds = time.monotonic() - started
    if outcome.ok and sum(len(data) for data in outcome.files.values()) > MAX_ARTIFACT_BYTES:
        return BuildOutcome(
            False,
            log=outcome.log,
            seconds=outcome.seconds,
            message=(f"The built module is larger than {MAX_ARTIFACT_BYTES // 2**20} MiB; build less code."),
        )
    return outcome


def user_log(log: str, staged_name: str, user_name: str, folder: str) -> str:
    """The compiler's output as the user should read it: their file name, no build folder paths."""
    log = log.replace(folder.rstrip("/") + "/", "")
    if user_name and user_name != staged_name:
        log = re.sub(rf"(?<![\w./-]){re.escape(staged_name)}(?=[(:\s,\"]|$)", user_name, log)
    return log[-LOG_CHARS:]


def first_error(log: str) -> str:
    """The first line of the compiler's output that reports an error (file, line and what), or ''."""
    match = _ERROR_LINE.search(log)
    return match.group(0).strip() if match else ""


def _cu(request: BuildRequest, folder: Path, timeout_s: float) -> BuildOutcome:
    compiler = toolchain.nvcc()
    if compiler is None:
        return BuildOutcome(
            False,
            message="This machine has no CUDA compiler (nvcc), so .cu submissions cannot be "
            "built here; choose a GPU runner with the CUDA toolkit.",
        )
    includes = [f"-I{path}" for path in (str(folder), *toolchain.library_includes())]
    libraries = ["-lcublas"] if toolchain.has_cublas() else []
    command = [
        compiler,
        *CU_FLAGS,
        f"-arch={request.arch}",
        *includes,
        *request.options["units"],
        "-o",
        module := request.options["module"],
        *libraries,
    ]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout_s)
    log = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or not (folder / module).is_file():
        what = "The submission" if module == CU_MODULE else "The problem's reference (with kernelrank's judge driver)"
        return BuildOutcome(False, log=log, message=f"{what} failed to compile")
    return BuildOutcome(True, {module: (folder / module).read_bytes()}, log)


def _extension(request: BuildRequest, folder: Path, timeout_s: float) -> BuildOutcome:
    """torch's own load_inline build, for this GPU only, without loading what it built (that would run it here):
    first against the lightest headers the sources can do with (header_tiers.plan), then as written."""
    from torch.utils import cpp_extension

    arch = toolchain.arch_named(request.arch)
    os.environ["TORCH_CUDA_ARCH_LIST"] = arch.torch if arch else os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))  # ninja compiles main.cpp and the .cu at once
    cpp_extension._import_module_from_library = lambda *args, **kwargs: None  # build only, never import
    options = dict(request.options)
    ops_folder = Path(cpp_extension.include_paths()[0]) / "ATen" / "ops"
    tiers = header_tiers.plan(options, ops_folder, header_tiers.vocabulary())
    # the tiers tried before, with their seconds: an operator's log says where a first build's time went
    failed: list[str] = []
    for name, tier in tiers:  # one folder: where two tiers share a main.cpp, ninja keeps its main.o
        started = time.monotonic()
        if (outcome := _load_inline(cpp_extension, tier, folder / "light")).ok:
            outcome.log = " ".join([*failed, TIER_NOTE.format(name)])
            return outcome
        failed.append(f"The {name} tier failed after {time.monotonic() - started:.1f} s.")
        cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(options["name"], None)  # same name, not name_v1
    outcome = _load_inline(cpp_extension, options, folder / "build")
    if tiers:
        outcome.log = f"{FALLBACK_NOTE} {' '.join(failed)}\n{outcome.log}".strip()
    return outcome


def _load_inline(cpp_extension: Any, options: dict[str, Any], build_directory: Path) -> BuildOutcome:
    build_directory.mkdir(exist_ok=True)
    try:
        cpp_extension.load_inline(**options, build_directory=str(build_directory), verbose=False)
    except Exception as exc:  # torch reports a failed build as RuntimeError with the compiler output
        return BuildOutcome(False, log=str(exc), message=f"Building the extension {options['name']!r} failed")
    built = build_directory / f"{options['name']}.so"
    if not built.is_file():
        return BuildOutcome(False, message=f"Building the extension {options['name']!r} made no module")
    return BuildOutcome(True, {built.name: built.read_bytes()})


def _plain(value: Any) -> bool:
    """JSON-like data only: a subclass of str or list could behave differently when the builder reads it."""
    if type(value) in (str, bool, type(None)):
        return True
    if type(value) is list:
        return all(type(item) is str for item in value)
    if type(value) is dict:
        return all(type(k) is str and type(v) is str for k, v in value.items())
    return False
