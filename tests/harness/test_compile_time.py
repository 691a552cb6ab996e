"""compile_s: seconds spent compiling, counted once, kept out of timing (CompileClock and end to end)."""

from __future__ import annotations

import sys
import time
import types

import pytest
import torch
from torch.utils import cpp_extension

from harness import Mode, Status
from harness.runner.compile_time import CompileClock, used_torch_compile

BUILD_S = 0.05


@pytest.fixture(autouse=True)
def _restore_extension_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    """install() wraps torch's loaders in this process: put the originals back after each test."""
    for name in ("load_inline", "load"):
        monkeypatch.setattr(cpp_extension, name, getattr(cpp_extension, name))


@pytest.fixture
def slow_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stand-ins for load_inline and load that take BUILD_S each (a real C++ build takes ~35 s here)."""
    built: list[str] = []

    def build(name: str, *args: object, **kwargs: object) -> str:
        time.sleep(BUILD_S)
        built.append(name)
        return name

    monkeypatch.setattr(cpp_extension, "load_inline", build)
    monkeypatch.setattr(cpp_extension, "load", build)
    return built


def test_extension_builds_count_their_wall_time_and_say_so(slow_builds: list[str]) -> None:
    started: list[bool] = []
    clock = CompileClock(on_compile=lambda: started.append(True)).install()

    from torch.utils.cpp_extension import load_inline  # as a submission imports it, after the install

    assert load_inline("kernel") == "kernel" and slow_builds == ["kernel"]
    assert BUILD_S <= clock.seconds() < BUILD_S + 0.5
    assert started == [True]


def test_a_build_inside_a_build_counts_once(slow_builds: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    clock = CompileClock().install()
    inner = cpp_extension.load

    def outer_build(name: str) -> str:
        inner("helper")
        time.sleep(BUILD_S)
        return name

    monkeypatch.setattr(cpp_extension, "load_inline", clock._timed(outer_build))
    cpp_extension.load_inline("kernel")
    assert 2 * BUILD_S <= clock.seconds() < 3 * BUILD_S + 0.5  # the outer build's time, which holds the inner


def test_triton_compiles_are_counted_from_its_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    earlier: list[int] = []
    compilation = types.SimpleNamespace(listener=lambda **details: earlier.append(details["times"].total))
    monkeypatch.setitem(
        sys.modules, "triton", types.SimpleNamespace(knobs=types.SimpleNamespace(compilation=compilation))
    )
    clock = CompileClock().install()

    compilation.listener(
        src=None, metadata={}, metadata_group={}, times=types.SimpleNamespace(total=250_000), cache_hit=False
    )
    assert clock.seconds() == pytest.approx(0.25) and earlier == [250_000]  # microseconds; the old one still hears


def test_an_old_triton_without_the_listener_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "triton", types.SimpleNamespace())
    assert CompileClock().install().seconds() >= 0


def test_torch_compile_time_comes_from_dynamo() -> None:
    clock = CompileClock()
    before = clock.seconds()
    compiled = torch.compile(lambda x: x * 2 + 1, backend="eager")
    assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 3.0))
    assert clock.seconds() > before


def test_a_torch_compile_submission_reports_compile_s(evaluate_fixture, make_job, harness_server):
    job = make_job("correct", Mode.TEST)
    job.submission_source = (
        "import torch\n\n"
        "@torch.compile(backend='eager')\n"
        "def add(a, b):\n    return a + b\n\n"
        "def custom_kernel(data):\n    a, b, out = data\n    return out.copy_(add(a, b))\n"
    )
    compiled = harness_server.evaluate(job)
    plain = evaluate_fixture("correct", Mode.TEST)

    assert compiled.status is Status.PASSED, compiled.failure
    assert compiled.compile_s > 0 and plain.compile_s == 0
    assert {"prepare", "tests"} <= set(compiled.phases_s)


def test_used_torch_compile_turns_true_once_dynamo_compiled() -> None:
    torch.compile(lambda x: x - 1, backend="eager")(torch.ones(2))
    assert used_torch_compile()
