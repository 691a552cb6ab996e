"""A .cu submission's two modules and the values between them, without a GPU (host values only).

The fixture problem ``tests/fixtures/harness/cu_values`` puts every host type ``harness/builds/cu_values.h``
moves into its ``input_t`` and ``output_t``. Both modules are built for real with nvcc and loaded here as
the judge and the runner load them: the judge's makes and packs an input, the runner's rebuilds it, calls
custom_kernel and packs the output, and the judge's reads it back and runs the problem's checker. Forged
packed values must be refused, never read past. Device buffers need a GPU: ``tests/problems/test_cu_problems.py``.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest
import torch

from harness import load_problem
from harness.builds import build
from harness.builds.toolchain import ARCHES, cuda_home, nvcc
from harness.cu_abi import CuError
from harness.judge.cu_reference import CuReference
from harness.runner.cu_module import CuKernel

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "harness" / "cu_values"
H100 = ARCHES["9.0"].sm


def _cudart() -> Path | None:
    """The CUDA runtime the built modules link (its toolkit's, where nvcc may be a wrapper script on PATH)."""
    if nvcc() is None:
        return None
    homes = [cuda_home(), os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    found = [lib for home in homes if home for lib in sorted((Path(home) / "lib64").glob("libcudart.so*"))]
    return found[0] if found else None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_cudart() is None, reason="no CUDA toolkit (nvcc and its runtime) on this machine"),
]


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> tuple[CuReference, CuKernel]:
    ctypes.CDLL(str(_cudart()), mode=ctypes.RTLD_GLOBAL)  # the modules link the shared runtime, as torch's does
    problem = load_problem(FIXTURE)
    source = (FIXTURE / "submission.cu").read_text()
    folder = tmp_path_factory.mktemp("cu_values")
    requests = (
        build.cu_reference_request(problem.files, problem.submission_name, H100),
        build.cu_request(problem.files, problem.submission_name, source, H100),
    )
    for request in requests:
        (into := folder / request.options["module"].split(".")[0]).mkdir()
        outcome = build.run(request, into)
        assert outcome.ok, outcome.log
        for name, data in outcome.files.items():
            (folder / name).write_bytes(data)
    return CuReference(folder / build.CU_REFERENCE), CuKernel(folder / build.CU_MODULE)


def test_the_modules_are_built_apart() -> None:
    problem = load_problem(FIXTURE)
    judge = build.cu_reference_request(problem.files, problem.submission_name, H100)
    runner = build.cu_request(problem.files, problem.submission_name, "// mine\n", H100)
    assert problem.submission_name not in judge.sources and build.RUNNER_DRIVER not in judge.sources
    assert judge.options["units"] == [build.JUDGE_DRIVER]
    assert runner.options["units"] == [build.RUNNER_DRIVER, problem.submission_name]
    assert '#include "reference.cuh"' not in runner.sources[build.RUNNER_DRIVER]


def test_an_input_crosses_to_the_runner_and_its_output_back(modules: tuple[CuReference, CuKernel]) -> None:
    reference, kernel = modules
    data = reference.generate_input(size=5, seed=11)
    assert set(data) == {"host", "device"} and data["device"] == [] and data["host"].dtype == torch.uint8
    pristine = {"host": data["host"].clone(), "device": []}
    output = kernel.export(kernel(kernel.prepare(data)))
    assert reference.check(pristine, output) == (True, "")


def test_a_wrong_output_fails_the_checker(modules: tuple[CuReference, CuKernel]) -> None:
    reference, kernel = modules
    data = reference.generate_input(size=5, seed=11)
    other = kernel.export(kernel(kernel.prepare(reference.generate_input(size=5, seed=12))))
    passed, message = reference.check(data, other)
    assert not passed and "ys[0]" in message


@pytest.mark.parametrize(
    "forge",
    [
        lambda host: host[:-1],  # ends early
        lambda host: torch.cat([host, torch.zeros(1, dtype=torch.uint8)]),  # one byte too many
        lambda host: torch.cat([torch.full((8,), 255, dtype=torch.uint8), host[8:]]),  # ys claims 2**64-1 floats
        lambda host: torch.zeros(0, dtype=torch.uint8),  # nothing at all
    ],
    ids=["short", "long", "huge-count", "empty"],
)
def test_a_forged_output_is_refused_not_read_past(modules: tuple[CuReference, CuKernel], forge) -> None:
    reference, kernel = modules
    data = reference.generate_input(size=5, seed=11)
    output = kernel.export(kernel(kernel.prepare(data)))
    passed, message = reference.check(data, {"host": forge(output["host"]), "device": []})
    assert not passed and "could not be read as the problem's output_t" in message


@pytest.mark.parametrize(
    "value",
    [None, {"host": b"abc", "device": []}, {"host": torch.zeros(3), "device": []}, {"host": torch.zeros(3)}],
    ids=["none", "bytes", "float-tensor", "missing-device"],
)
def test_a_value_that_is_not_packed_is_refused(modules: tuple[CuReference, CuKernel], value: object) -> None:
    _, kernel = modules
    with pytest.raises(CuError):
        kernel.prepare(value)
