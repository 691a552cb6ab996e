"""The judge: the trusted side of an evaluation, inside the forked, sandboxed child.

Order matters: torch is already imported (by the harness server, before the fork). The judge first forks
the runner (``harness.runner.runner_process``, reached through ``harness.judge.runner_link``), which will hold
the submission and nothing else; then it seals its imports (``harness.judge.sealed_imports``: the problem's
files from memory, nothing from a folder the job can write), picks the device, measures what an empty call to
the runner costs, binds the problem's reference and removes reference.py from disk, and only then lets the
runner import the submission. Inputs, the secret-seeded generation, reference outputs, the problem's checker,
every verdict and every admitted time stay here (``harness.judge.modes``). Everything goes to the supervisor as
records on the private channel, which the runner never holds; the child always ends with ``os._exit`` and never
returns into the server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import importlib
import inspect
import io
import os
import random
import re
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn, cast

import torch

from harness import transport
from harness.builds import build
from harness.channel import Outbox
from harness.codec import to_jsonable
from harness.device import system_info
from harness.failures import Verdict, problem_failure, summary
from harness.isolation import sandbox, zygote
from harness.isolation.staging import Stage
from harness.job import EvalJob
from harness.judge import brackets, calibration, checking, modes, sealed_imports
from harness.judge.cu_reference import CuReference
from harness.judge.runner_api import Runner
from harness.judge.runner_link import RunnerLink
from harness.problem import CHECKER_ARGS
from harness.result import FailureKind, Mode
from harness.seeds import SeedPlan, seeded

REQUIRES_CUDA = re.compile(r"^#!kernelrank\s+requires\s+cuda\b", re.MULTILINE | re.IGNORECASE)
HARNESS_BUG_EXIT = 70
CALIBRATION_SEED = 1  # the inputs of the judge's own calibration calls, before the submission exists


def child_entry(channel_fd: int, stdout_fd: int, stderr_fd: int) -> NoReturn:
    """Entry of a child of the zygote (harness.isolation.zygote): its job arrives first on its channel."""
    try:
        handed = zygote.receive(channel_fd)
    except BaseException:
        os._exit(HARNESS_BUG_EXIT)
    child_main(handed["job"], handed["launch"], handed["nonce"], channel_fd, stdout_fd, stderr_fd)


def child_main(
    job: EvalJob, launch: sandbox.Launch, nonce: str, channel_fd: int, stdout_fd: int, stderr_fd: int
) -> NoReturn:
    """Entry of the forked child; enters the sandbox (harness.isolation.sandbox) and never returns."""
    code = 0
    try:
        workdir = sandbox.enter(
            launch,
            channel_fd,
            stdout_fd,
            stderr_fd,
            report=lambda leftovers: Outbox(channel_fd, nonce).send("sandbox", leftovers=leftovers),
        )
        stage = dataclasses.replace(launch.stage, workdir=workdir)
        _settle(stage)
        faulthandler.enable()  # a segfault prints the Python stack into the captured stderr
        run(job, stage, Outbox(channel_fd, nonce))
    except sandbox.SandboxError as exc:  # in the sandbox's own processes, before any submitted code
        outbox = Outbox(channel_fd, nonce)
        outbox.send(
            "failure",
            failure={
                "kind": FailureKind.HARNESS_ERROR.value,
                "log_tail": "",
                "message": f"The evaluation's sandbox could not be set up ({exc}). This is "
                "not your submission's fault; tell the kernelrank maintainers.",
            },
        )
        outbox.send("final")
        with contextlib.suppress(Exception):  # the server's stderr may be gone by now
            traceback.print_exc()
    except BaseException:  # nothing may escape into the server's code
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
    sys.path.insert(0, str(stage.workdir))  # for the runner, forked next; the judge seals its imports then
    sys.dont_write_bytecode = True  # the working directory keeps exactly the staged files
    for stream in (sys.stdout, sys.stderr):  # line by line: a crash must not swallow what was printed before it
        cast(io.TextIOWrapper, stream).reconfigure(line_buffering=True)


def run(job: EvalJob, stage: Stage, outbox: Outbox) -> None:
    """Evaluate, then send exactly one final record (after a failure record when it failed)."""
    outbox.progress("starting")
    phases = modes.Phases()
    # first: the runner must start from a process that holds no reference, no seed and no CUDA context
    runner: Runner = RunnerLink.spawn(job, outbox, max_bytes=job.memory_limit_mb * 2**20)
    try:
        sealed_imports.seal(job.problem.files, stage.workdir)  # before the runner has run anything
        with phases("prepare"):
            ctx = prepare(job, stage, outbox, runner)
        ctx.phases = phases
        modes.run(job.mode, ctx)
    except Verdict as verdict:
        outbox.send("failure", failure=to_jsonable(verdict.failure))
    except Exception as exc:
        traceback.print_exc()
        outbox.send(
            "failure",
            failure={
                "kind": FailureKind.HARNESS_ERROR.value,
                "message": f"The harness itself failed ({summary(exc)}). This is not your submission's fault; "
                "please report it to the kernelrank maintainers.",
                "log_tail": "".join(traceback.format_exception(exc))[-4000:],
            },
        )
    compile_s = 0.0
    with contextlib.suppress(Verdict, OSError):
        compile_s = runner.compile_seconds()
    runner.close()  # before the final record: nothing of the job may outlive the judge
    outbox.send("accounting", compile_s=compile_s, phases_s=phases.seconds)
    outbox.send("final")


def prepare(job: EvalJob, stage: Stage, outbox: Outbox, runner: Runner) -> modes.Context:
    device = pick_device(job)
    runner.start(device)
    outbox.send("system", system=to_jsonable(system_info(device)))
    # the exchange's own cost, measured while the runner holds only the harness (brackets.Allowance)
    allowance = runner.calibrate()
    if job.problem.task.lang == "cu":  # the judge's own module, built without the submission
        cu = CuReference(stage.workdir / build.CU_REFERENCE)
        reference, runner.rebuild_us = cu.functions(), cu.rebuild_us
    else:
        reference = _arm(bind_reference(job, stage, device), stage)
        if device == "cpu" and job.mode in (Mode.BENCHMARK, Mode.RANKED):
            allowance = calibration.shapes(allowance, runner.call, _calibration_inputs(job, reference))
    runner.import_submission()
    files = {name: text.encode() for name, text in job.problem.files.items()}
    files[job.problem.submission_name] = job.submission_source.encode()
    for name in (build.CU_MODULE, build.CU_REFERENCE):
        if (module := stage.workdir / name).is_file():
            files[name] = module.read_bytes()
    return modes.Context(
        task=job.problem.task,
        device=device,
        reference=reference,
        runner=runner,
        allowance=allowance,
        outbox=outbox,
        seeds=SeedPlan(outbox),
        files=files,
        submission=job.problem.submission_name,
    )


def _calibration_inputs(job: EvalJob, reference: modes.Reference) -> dict[str, Any]:
    """One input per timed CPU shape, from a seed of the judge's own (never one of the evaluation's), for
    ``calibration.shapes``; a shape the generator refuses is left to the timing, which names the problem's fault."""
    inputs = {}
    for spec in job.problem.task.benchmarks_for("cpu"):
        try:
            own = {**spec, "seed": CALIBRATION_SEED} if seeded(spec) else spec
            inputs[brackets.shape_key(spec)] = reference.generate_input(**own)
        except Exception:  # noqa: BLE001 - the problem's code; its failure is reported where it counts
            continue
    return inputs


def _arm(reference: modes.Reference, stage: Stage) -> modes.Reference:
    """reference.py gone from disk once bound (C11): the runner imports the submission only after this."""
    (stage.workdir / "reference.py").unlink(missing_ok=True)
    return reference


def pick_device(job: EvalJob) -> str:
    """ "auto" is CUDA when this machine has it; refuse devices the problem or the submission cannot use."""
    has_cuda = torch.cuda.is_available()
    if job.device not in ("auto", "cpu", "cuda"):
        raise Verdict(FailureKind.UNSUPPORTED_DEVICE, f"Unknown device {job.device!r}; choose auto, cpu or cuda.")
    device = ("cuda" if has_cuda else "cpu") if job.device == "auto" else job.device
    if device == "cuda" and not has_cuda:
        raise Verdict(
            FailureKind.UNSUPPORTED_DEVICE,
            "This evaluation asked for CUDA, but this machine has no usable CUDA GPU; choose a GPU runner.",
        )
    task = job.problem.task
    if task.lang == "cu" and device != "cuda":
        raise Verdict(
            FailureKind.UNSUPPORTED_DEVICE,
            f"The problem {job.problem.name} is a CUDA leaderboard: its .cu "
            "submissions are compiled with nvcc and run on a GPU. Submit it to a GPU runner.",
        )
    if device not in task.devices and not task.default_device and "cuda" in task.devices:
        raise Verdict(
            FailureKind.UNSUPPORTED_DEVICE,
            f"The problem {job.problem.name} needs CUDA: it is written "
            "for GPUs and declares no CPU support, and this evaluation runs on the CPU. Submit it to a GPU "
            "runner.",
        )
    if device not in task.devices:
        raise Verdict(
            FailureKind.UNSUPPORTED_DEVICE,
            f"The problem {job.problem.name} runs on "
            f"{' and '.join(task.devices)}, not on {device}; choose another runner.",
        )
    if device == "cpu" and REQUIRES_CUDA.search(job.submission_source):
        raise Verdict(
            FailureKind.UNSUPPORTED_DEVICE,
            "This submission says it requires CUDA ('#!kernelrank requires "
            "cuda') and this evaluation runs on the CPU; submit it to a GPU.",
        )
    return device


def bind_reference(job: EvalJob, stage: Stage, device: str) -> modes.Reference:
    """Import the problem's reference.py from the staged files; returns its functions."""
    for name in [*job.problem.files, job.problem.submission_name]:
        sys.modules.pop(Path(name).stem, None)  # never reuse a same-named module from elsewhere
    try:
        module = importlib.import_module("reference")
    except Exception as exc:
        raise problem_failure(exc, "reference.py", None, device) from None
    names = ("generate_input", "ref_kernel", "check_implementation")
    if missing := [n for n in names if not callable(getattr(module, n, None))]:
        raise Verdict(
            FailureKind.INVALID_PROBLEM,
            f"The problem's reference.py lacks {', '.join(missing)}; tell the leaderboard's maintainers.",
        )
    generate_input, ref_kernel, check = (getattr(module, n) for n in names)
    transport.allow_namedtuples(vars(module))  # the problem's own result classes cross as themselves
    first_format = job.problem.task.checker_args == CHECKER_ARGS[1]
    return modes.Reference(
        adapt_generate_input(generate_input) if first_format else generate_input,
        ref_kernel,
        adapt_checker(check, ref_kernel, first_format),
    )


def adapt_checker(check: Callable[..., Any], ref_kernel: Callable[[Any], Any], first_format: bool) -> checking.Check:
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
        parameters: Mapping[str, inspect.Parameter] = inspect.signature(generate_input).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): call it as documented, bare
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
