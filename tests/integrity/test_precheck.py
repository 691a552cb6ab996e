"""The static pre-check: which constructs it flags (and holds), which honest ones it leaves alone."""

from __future__ import annotations

import pytest
from cases import CATALOGUE, HERE

from harness.host import precheck
from harness.result import EvalResult, FailureKind, Mode, Status


def _rules(source: str, name: str = "submission.py") -> set[str]:
    return {f.rule for f in precheck.check(source, name)}


@pytest.mark.parametrize(
    "source, rule",
    [
        ("import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    pass\n", "side_stream"),
        ("import torch as t\ns = t.cuda.Stream()\ns.wait_stream(t.cuda.current_stream())\n", "side_stream"),
        ("src = 'cudaStream_t s; cudaStreamCreate(&s); kernel<<<1, 1, 0, s>>>();'\n", "side_stream"),
        ("import threading\nthreading.Thread(target=print).start()\n", "thread"),
        ("from concurrent.futures import ThreadPoolExecutor\n", "thread"),
        ("import os\nos.fork()\n", "thread"),
        ("import subprocess\n", "thread"),
        ("src = 'std::thread worker(run);'\n", "thread"),
        ("import torch\ntorch.cuda.Event.elapsed_time = lambda self, end: 0.0\n", "monkey_patch"),
        ("import time\ntime.perf_counter = lambda: 0\n", "monkey_patch"),
        ("import torch\nsetattr(torch, 'allclose', lambda *a, **k: True)\n", "monkey_patch"),
        ("import sys\nsys.modules['harness.stats'] = None\n", "monkey_patch"),
        ("open('/etc/passwd').read()\n", "outside_file"),
        ("from pathlib import Path\nPath('/proc/1/environ').read_text()\n", "outside_file"),
        ("data = open('../../secrets').read()\n", "outside_file"),
        ("import gc\nobjects = gc.get_objects()\n", "introspection"),
        ("import sys\ncaller = sys._getframe(1).f_locals\n", "introspection"),
        ("import sys\nmode = sys.argv\n", "introspection"),
        ("import reference\n", "reference"),
        ("from reference import ref_kernel\n", "reference"),
        ("import importlib\nimportlib.import_module('harness.timing')\n", "reference"),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", "process_control"),
        ("src = 'ptrace(PTRACE_ATTACH, pid, 0, 0);'\n", "process_control"),
        ("src = 'cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n);'\n", "persisting_l2"),
        ("import ctypes\n", "ctypes"),
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", "precision"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.isidentifier() else None,
)
def test_suspicious_constructs_are_flagged(source, rule):
    assert rule in _rules(source)


@pytest.mark.parametrize(
    "source",
    [
        # a side stream joined back: the PyTorch documentation's pattern
        "import torch\ns = torch.cuda.Stream()\ns.wait_stream(torch.cuda.current_stream())\n"
        "with torch.cuda.stream(s):\n    y = 1\ntorch.cuda.current_stream().wait_stream(s)\n",
        "import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    y = 1\ns.synchronize()\n",
        # configuration is not patching
        "import torch\ntorch.backends.cudnn.benchmark = True\ntorch._dynamo.config.cache_size_limit = 64\n",
        "import torch._inductor.config as config\nconfig.max_autotune = True\n",
        # words in comments, docstrings and names are not constructs
        '"""Uses no cudaStreamCreate, no threads, no /proc/self/mem."""\n# upstream stream\nupstream = 1\n',
        "import threading\nlock = threading.Lock()\n",
        "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0'\n",
        "from torch.utils.cpp_extension import load_inline\nload_inline('k', cpp_sources='', "
        "extra_include_paths=['/usr/local/cuda/include'])\n",
        "import torch\ngraph = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(graph):\n    y = 1\n",
        "def broken(:\n",  # a syntax error is the worker's to report
    ],
)
def test_honest_constructs_are_not_flagged(source):
    assert {f.rule for f in precheck.check(source, "submission.py") if f.hold} == set()


@pytest.mark.parametrize(
    "file, rules",
    [
        ("c02_replay_from_files.py", {"outside_file"}),
        ("c05_side_stream.py", {"side_stream"}),
        ("c07_background_thread.py", {"thread"}),
        ("c09_patch_timer.py", {"monkey_patch", "reference"}),
        ("c10_nonce_forgery.py", {"introspection"}),
        ("c11_frame_walk.py", {"introspection"}),
        ("c11_read_reference_file.py", {"reference"}),
        ("c16_seed_ahead.py", {"introspection"}),
        ("c16_batch_with_generator.py", {"reference"}),
        ("c19_persisting_l2.py", {"persisting_l2", "ctypes"}),
        ("c20_calls_reference.py", {"reference"}),
        ("c22_hijack.py", {"process_control", "ctypes"}),
        ("c23_leftover_process.py", {"thread"}),
    ],
)
def test_the_catalogue_cheats_are_flagged_for_what_they_do(file, rules):
    assert rules <= _rules((HERE / "cheats" / file).read_text())


def test_cuda_sources_are_read_as_text():
    assert _rules("__global__ void k() {}\nvoid run() { cudaStream_t s; cudaStreamCreate(&s); }\n", "kernel.cu") == {
        "side_stream"
    }


def test_a_flag_holds_a_ranked_run_and_only_a_ranked_run():
    findings = precheck.check("import threading\nthreading.Thread(target=print).start()\nx = y.half()\n", "k.py")
    assert [f.hold for f in findings] == [True, False]
    for mode in Mode:
        result = EvalResult(status=Status.PASSED, mode=mode, problem="p", score_us=12.5)
        precheck.hold(result, findings)
        assert result.findings == findings and result.score_us == 12.5  # the admin sees both
        if mode is Mode.RANKED:
            assert (result.status, result.failure.kind) == (Status.FAILED, FailureKind.HELD_FOR_REVIEW)
            assert "line 2 starts threads or processes" in result.failure.message
        else:
            assert result.status is Status.PASSED and result.failure is None


def test_every_catalogue_file_exists():
    assert all(case.path.exists() for case in CATALOGUE)


def test_reports_show_the_findings_and_how_the_job_was_isolated():
    from core.contracts.reply_parts import result_parts
    from harness.result import SandboxInfo
    from harness.result_text import render

    result = EvalResult(
        status=Status.PASSED,
        mode=Mode.TEST,
        problem="p",
        findings=precheck.check("import ctypes\n", "k.py"),
        sandbox=SandboxInfo(isolated=False, description="not isolated (no namespaces here)"),
    )
    text = render(result, colour=False)
    assert "note: line 1 loads native code through ctypes" in text
    assert "Sandbox: not isolated (no namespaces here)." in text
    assert any("Ran without a sandbox" in part.text for part in result_parts(result))
    result.sandbox.isolated = True
    assert not any("without a sandbox" in part.text for part in result_parts(result))
