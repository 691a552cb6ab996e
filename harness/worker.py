"""The submission's side of an evaluation, inside the forked, sandboxed child.

Order matters: torch is already imported (by the harness server, before the fork), then the device is
picked, the timer built and the problem's reference bound, and only then is the submission imported,
so whatever it patches, the harness keeps the originals; every call of the submission is watched by
``harness.monitor``. Everything goes to the supervisor as records on the private channel; the child
always ends with ``os._exit`` and never returns into the server.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import faulthandler
import importlib
import inspect
import os
import random
import re
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import torch

from harness import builds, checking, extension_builds, modes, sandbox
from harness.channel import Outbox
from harness.codec import to_jsonable
from harness.compile_time import CompileClock
from harness.cu_module import CuModule
from harness.device import system_info
from harness.failures import Verdict, classify, problem_failure, summary, user_traceback
from harness.graph_timing import bind_torch
from harness.guard import Guard
from harness.job import EvalJob
from harness.monitor import CallMonitor
from harness.problem import CHECKER_ARGS
from harness.result import FailureKind
from harness.seeds import SeedPlan
from harness.staging import Stage
from harness.timing import Timer, make_timer

ENTRY_POINT = "custom_kernel"
REQUIRES_CUDA = re.compile(r"^#!kernelrank\s+requires\s+cuda\b", re.MULTILINE | re.IGNORECASE)
HARNESS_BUG_EXIT = 70

# What the timer and the checkers reach at run time, besides the harness's and the problem's modules.
_WATCHED = [
    (time, ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns")),
    (builtins, ("isinstance", "type", "len", "bool", "float", "getattr", "all", "any", "zip")),
    (torch, ("allclose", "isclose", "equal", "isfinite", "isnan", "isinf", "abs", "device", "no_grad", "Tensor")),
    (torch.Tensor, ("clone", "copy_", "zero_", "__eq__", "__ne__", "__bool__", "all", "any", "item", "to", "abs",
                    "isnan", "isfinite", "isposinf", "isneginf", "sum", "data_ptr")),
    (torch.testing, ("assert_close",)),
    (torch.cuda, ("synchronize", "Event", "current_stream", "Stream")),
    (torch.cuda.Event, None),
]


def child_main(job: EvalJob, launch: sandbox.Launch, nonce: str, channel_fd: int, stdout_fd: int,
               stderr_fd: int) -> NoReturn:
    """Entry of the forked child; enters the sandbox (harness.sandbox) and never returns."""
    code = 0
    try:
        workdir = sandbox.enter(launch, channel_fd, stdout_fd, stderr_fd,
                                report=lambda leftovers: Outbox(channel_fd, nonce).send("sandbox", leftovers=leftovers))
        stage = dataclasses.replace(launch.stage, workdir=workdir)
        _settle(stage)
        faulthandler.enable()       # a segfault prints the Python stack into the captured stderr
        run(job, stage, Outbox(channel_fd, nonce))
    except sandbox.SandboxError as exc:      # in the sandbox's own processes, before any submitted code
        outbox = Outbox(channel_fd, nonce)
        outbox.send("failure", failure={"kind": FailureKind.HARNESS_ERROR.value, "log_tail": "",
                                        "message": f"The evaluation's sandbox could not be set up ({exc}). This is "
                                                   "not your submission's fault; tell the kernelrank maintainers."})
        outbox.send("final")
        with contextlib.suppress(Exception):      # the server's stderr may be gone by now
            traceback.print_exc()
    except BaseException:       # nothing may escape into the server's code
        code = HARNESS_BUG_EXIT
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _settle(stage: Stage) -> None:
    os.chdir(stage.workdir)
    sys.path.insert(0, str(stage.workdir))
    sys.dont_write_bytecode = True       # the working directory keeps exactly the staged files
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True)   # a crash must not swallow what was printed before it


def run(job: EvalJob, stage: Stage, outbox: Outbox) -> None:
    """Evaluate, then send exactly one final record (after a failure record when it failed)."""
    outbox.progress("starting")
    phases = modes.Phases()
    compiles = CompileClock(on_compile=lambda: outbox.progress("compiling"))
    try:
        with phases("prepare"):
            ctx = prepare(job, stage, outbox, compiles)
        ctx.phases = phases
        modes.run(job.mode, ctx)
    except Verdict as verdict:
        outbox.send("failure", failure=to_jsonable(verdict.failure))
    except Exception as exc:
        traceback.print_exc()
        outbox.send("failure", failure={
            "kind": FailureKind.HARNESS_ERROR.value,
            "message": f"The harness itself failed ({summary(exc)}). This is not your submission's fault; "
                       "please report it to the kernelrank maintainers.",
            "log_tail": "".join(traceback.format_exception(exc))[-4000:]})
    outbox.send("accounting", compile_s=compiles.seconds(), phases_s=phases.seconds)
    outbox.send("final")


def prepare(job: EvalJob, stage: Stage, outbox: Outbox, compiles: CompileClock) -> modes.Context:
    device = pick_device(job)
    if device == "cpu":
        sandbox.limit_address_space(job.memory_limit_mb)
    outbox.send("system", system=to_jsonable(system_info(device)))
    timer = make_timer(device)
    if device == "cuda":
        bind_torch()            # graph timing's torch callables, bound before the submission can patch them
    monitor = CallMonitor(str(stage.workdir / job.problem.submission_name), device)
    timer.watch(monitor.watch)
    if job.problem.task.lang == "cu":
        guard = _guard([], timer)
        monitor.install(guard)
        with monitor.watch():           # loading runs the submission's static initialisers
            reference, kernel = load_cu_module(stage.workdir / builds.CU_MODULE)
    else:
        reference, problem_modules = bind_reference(job, stage, device)
        reference = _arm(monitor, reference, stage)
        guard = _guard(problem_modules, timer)
        monitor.install(guard)
        extension_builds.install(outbox)
        compiles.install()
        with monitor.watch():
            kernel = import_submission(job.problem.submission_name)
    if replaced := guard.tampered():
        raise Verdict(FailureKind.TAMPERING, f"Importing the submission replaced {', '.join(replaced[:5])}. The "
                      "timer, the checker and the harness are off limits: a submission may only compute its output.")
    files = {name: text.encode() for name, text in job.problem.files.items()}
    files[job.problem.submission_name] = job.submission_source.encode()
    if (module := stage.workdir / builds.CU_MODULE).is_file():
        files[builds.CU_MODULE] = module.read_bytes()
    return modes.Context(task=job.problem.task, device=device, timer=timer, reference=reference, kernel=kernel,
                         guard=guard, outbox=outbox, seeds=SeedPlan(outbox), files=files,
                         submission=job.problem.submission_name)


def _arm(monitor: CallMonitor, reference: modes.Reference, stage: Stage) -> modes.Reference:
    """The problem's functions as tripwires while submitted code runs, and reference.py gone from disk (C11)."""
    names = ("generate_input", "ref_kernel", "check_implementation")
    monitor.guard_module(sys.modules["reference"], names)
    (stage.workdir / "reference.py").unlink(missing_ok=True)
    return modes.Reference(*(monitor.reference(getattr(reference, field), name)
                             for field, name in zip(("generate_input", "ref_kernel", "check"), names, strict=True)))


def load_cu_module(path: Path) -> tuple[modes.Reference, Callable[[Any], Any]]:
    """The built .cu module's problem functions and custom_kernel (``harness.cu_module``)."""
    try:
        module = CuModule(path)
    except OSError as exc:
        raise Verdict(FailureKind.IMPORT_ERROR, f"The compiled submission could not be loaded ({exc}). Check that "
                      "it defines custom_kernel for the problem's input_t and output_t.") from None
    generate_input, ref_kernel, check, kernel = module.functions()
    return modes.Reference(generate_input, ref_kernel, check), kernel


def pick_device(job: EvalJob) -> str:
    """"auto" is CUDA when this machine has it; refuse devices the problem or the submission cannot use."""
    has_cuda = torch.cuda.is_available()
    if job.device not in ("auto", "cpu", "cuda"):
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE, f"Unknown device {job.device!r}; choose auto, cpu or cuda.")
    device = ("cuda" if has_cuda else "cpu") if job.device == "auto" else job.device
    if device == "cuda" and not has_cuda:
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE,
                      "This evaluation asked for CUDA, but this machine has no usable CUDA GPU; choose a GPU runner.")
    task = job.problem.task
    if task.lang == "cu" and device != "cuda":
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE, f"The problem {job.problem.name} is a CUDA leaderboard: its .cu "
                      "submissions are compiled with nvcc and run on a GPU. Submit it to a GPU runner.")
    if device not in task.devices and not task.default_device and "cuda" in task.devices:
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE, f"The problem {job.problem.name} needs CUDA: it is written "
                      "for GPUs and declares no CPU support, and this evaluation runs on the CPU. Submit it to a GPU "
                      "runner.")
    if device not in task.devices:
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE, f"The problem {job.problem.name} runs on "
                      f"{' and '.join(task.devices)}, not on {device}; choose another runner.")
    if device == "cpu" and REQUIRES_CUDA.search(job.submission_source):
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE, "This submission says it requires CUDA ('#!kernelrank requires "
                      "cuda') and this evaluation runs on the CPU; submit it to a GPU.")
    return device


def bind_reference(job: EvalJob, stage: Stage, device: str) -> tuple[modes.Reference, list[types.ModuleType]]:
    """Import the problem's reference.py from the staged files; returns its functions and the staged modules."""
    for name in [*job.problem.files, job.problem.submission_name]:
        sys.modules.pop(Path(name).stem, None)       # never reuse a same-named module from elsewhere
    try:
        module = importlib.import_module("reference")
    except Exception as exc:
        raise problem_failure(exc, "reference.py", None, device) from None
    names = ("generate_input", "ref_kernel", "check_implementation")
    if missing := [n for n in names if not callable(getattr(module, n, None))]:
        raise Verdict(FailureKind.INVALID_PROBLEM, f"The problem's reference.py lacks {', '.join(missing)}; "
                      "tell the leaderboard's maintainers.")
    generate_input, ref_kernel, check = (getattr(module, n) for n in names)
    first_format = job.problem.task.checker_args == CHECKER_ARGS[1]
    reference = modes.Reference(adapt_generate_input(generate_input) if first_format else generate_input,
                                ref_kernel, adapt_checker(check, ref_kernel, first_format))
    workdir = str(stage.workdir)
    staged = [m for m in list(sys.modules.values())
              if str(getattr(m, "__file__", None) or "").startswith(workdir)]
    return reference, staged


def adapt_checker(check: Callable[..., Any], ref_kernel: Callable[[Any], Any],
                  first_format: bool) -> checking.Check:
    """``check(pristine, output) -> (ok, message)`` whatever the problem's checker takes and answers.

    The public format calls ``check_implementation(data, output)``; the first format
    ``check_implementation(output, reference_output)``, with the reference run here on the pristine copy.
    """
    if not first_format:
        return lambda pristine, output: checking.checker_verdict(check(pristine, output))

    def check_outputs(pristine: Any, output: Any) -> tuple[bool, str]:
        with torch.no_grad():
            expected = ref_kernel(pristine)
        return checking.checker_verdict(check(output, expected), none_passes=False)

    return check_outputs


def adapt_generate_input(generate_input: Callable[..., Any]) -> Callable[..., Any]:
    """The first format's ``generate_input()``, called with a spec: seeds the global generators from it.

    It gets only the keyword arguments it declares (often none, sometimes ``seed``), so every call draws
    fresh values, and the same seed gives the same input.
    """
    try:
        parameters = inspect.signature(generate_input).parameters
    except (TypeError, ValueError):          # no signature to read (a builtin): call it as documented, bare
        parameters = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())

    def generate(**spec: Any) -> Any:
        if isinstance(seed := spec.get("seed"), int):
            random.seed(seed)
            torch.manual_seed(seed % 2**63)
            if (numpy := sys.modules.get("numpy")) is not None:
                numpy.random.seed(seed % 2**32)
        return generate_input(**{k: v for k, v in spec.items() if takes_any or k in parameters})

    return generate


def import_submission(file_name: str) -> Callable[[Any], Any]:
    """Import the staged submission; syntax errors, import errors and a missing entry point become verdicts."""
    module_name = Path(file_name).stem
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f" of {Path(exc.filename).name}" if exc.filename else "")
        raise Verdict(FailureKind.SYNTAX_ERROR, f"The submission has a syntax error at {where}: {exc.msg}. Fix it "
                      "and submit again.", "".join(traceback.format_exception_only(exc))) from None
    except BaseException as exc:      # a submission may raise SystemExit at import
        kind = classify(exc)
        kind = FailureKind.IMPORT_ERROR if kind is FailureKind.EXCEPTION else kind
        raise Verdict(kind, f"Importing the submission raised {summary(exc)}. Check its imports and top-level "
                      "code; the traceback below shows where.", user_traceback(exc)) from None
    kernel = getattr(module, ENTRY_POINT, None)
    if not callable(kernel):
        raise Verdict(FailureKind.MISSING_ENTRY_POINT, f"The submission defines no function {ENTRY_POINT}(data). "
                      f"Define it: it receives the input that generate_input builds and returns the output.")
    return kernel


def _guard(problem_modules: list[types.ModuleType], timer: Timer) -> Guard:
    guard = Guard()
    harness_modules = [m for name, m in list(sys.modules.items()) if name == "harness" or name.startswith("harness.")]
    for module in problem_modules + harness_modules:
        guard.watch_module(module)
    for owner, names in _WATCHED:
        guard.watch(owner, names, label=getattr(owner, "__name__", None))
    return guard.watch(timer, label="timer")
