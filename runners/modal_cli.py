"""``kernelrank modal deploy|check|warm``: put the runners on Modal, prove they work, fill their compile caches.

``deploy`` runs ``modal deploy`` on ``runners/modal_app.py`` as a plain file (so only that file and the
harness ship), with the app name and time limit from the settings. ``check`` sends the identity problem
(``runners/identity``) through the same backend the workers use to each GPU type, and prints what every
container saw: GPU name, verdict, wall time, GPU seconds and cost. ``warm`` runs every problem's own
reference through the app's ``warm_cache`` function on each GPU type, so what the references compile
(Triton kernels, inline CUDA) is cached for later runs. Exit code 0 only when every run passed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.contracts.config import Settings
from core.contracts.reply_parts import format_cost
from harness.job import EvalJob
from harness.loading import load_problem
from harness.problem import ProblemError
from harness.result import EvalResult, Mode
from runners.base import RunnerUnavailable
from runners.remote import MemoryCalls, wrong_gpu

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
APP_FILE = Path(__file__).resolve().with_name("modal_app.py")
IDENTITY = Path(__file__).resolve().with_name("identity")
SUBMISSIONS = {"python": "submission.py", "cuda": "submission_cuda.py"}
REFERENCE_SUBMISSION = "from reference import ref_kernel\n\n\ndef custom_kernel(data):\n    return ref_kernel(data)\n"
NOT_INSTALLED = "the Modal client is not installed here: pip install 'kernelrank[modal]', then try again."


def main(argv: list[str], settings: Settings, modal_api: Any = None) -> int:
    args = _parser().parse_args(argv)
    if modal_api is None and importlib.util.find_spec("modal") is None:
        print(f"kernelrank modal: {NOT_INSTALLED}", file=sys.stderr)
        return 1
    if args.action == "deploy":
        return deploy(settings)
    gpus = args.gpu or settings.modal_gpus or list(_app_gpu_types())
    if args.action == "warm":
        rows = asyncio.run(warm(gpus, settings, modal_api=modal_api))
    else:
        rows = asyncio.run(
            check(
                gpus,
                settings,
                modal_api=modal_api,
                mode=Mode(args.mode),
                submissions=["python", "cuda"] if args.cuda else ["python"],
            )
        )
    _print(f"kernelrank modal {args.action}", rows)
    return 0 if rows and all(row.ok for row in rows) else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelrank modal", description="Deploy and check the Modal runners.")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("deploy", help="deploy (or update) the Modal app with one function per GPU type")
    check_ = actions.add_parser("check", help="run the identity problem on each GPU type and report what ran where")
    check_.add_argument("--gpu", action="append", default=[], help="a GPU type to check (repeat; default: all)")
    check_.add_argument(
        "--mode",
        default=Mode.TEST.value,
        choices=[m.value for m in Mode],
        help="test (default) or benchmark, to see timing work too",
    )
    check_.add_argument("--cuda", action="store_true", help="also run an inline-CUDA submission (nvcc on the GPU)")
    warm_ = actions.add_parser("warm", help="compile every problem's reference into each GPU type's compile cache")
    warm_.add_argument("--gpu", action="append", default=[], help="a GPU type to warm (repeat; default: all)")
    return parser


def deploy(settings: Settings) -> int:
    """``modal deploy`` of the app file; Modal's own output (and its errors) go straight to the terminal."""
    env = {
        **os.environ,
        "KERNELRANK_MODAL_APP": settings.modal_app,
        "KERNELRANK_MODAL_TIMEOUT_S": str(settings.modal_timeout_s),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-m", "modal", "deploy", str(APP_FILE)]
    print(f"Deploying Modal app {settings.modal_app!r} ({' '.join(command[1:])}) ...", flush=True)
    code = subprocess.run(command, env=env, cwd=PACKAGE_ROOT).returncode
    if code != 0:
        print(
            f"kernelrank modal: the deploy failed (exit code {code}); Modal's message is above. With no token "
            "yet, run `modal token new` (or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET) and deploy again.",
            file=sys.stderr,
        )
        return 1
    print(
        "Deployed. Start a worker per GPU type: kernelrank worker --gpu H100 --backend modal; then check it "
        "with `kernelrank modal check --gpu H100`."
    )
    return 0


@dataclass
class CheckRow:
    gpu: str
    submission: str
    seen: str = ""
    verdict: str = "not run"
    detail: str = ""  # why a GPU did not pass, printed under the table
    wall_s: float = 0.0
    gpu_s: float = 0.0
    cost_usd: float | None = None
    ok: bool = False


async def check(
    gpus: list[str],
    settings: Settings,
    *,
    modal_api: Any = None,
    mode: Mode = Mode.TEST,
    submissions: list[str] | None = None,
) -> list[CheckRow]:
    """Run the identity problem on each GPU type through ``ModalRunner``, all at once."""
    problem = load_problem(IDENTITY)
    work: list[tuple[CheckRow, Any, EvalJob | None]] = []
    for gpu in gpus:
        runner = _runner(gpu, settings, modal_api)
        for name in submissions or ["python"]:
            job = EvalJob(
                problem=problem,
                submission_name=SUBMISSIONS[name],
                submission_source=(IDENTITY / SUBMISSIONS[name]).read_text(),
                mode=mode,
                device="auto",
                run_id=f"check-{gpu}-{name}-{uuid.uuid4().hex[:8]}",
            )
            work.append((CheckRow(gpu=gpu, submission=name), runner, job))
    return await _run_all(work)


async def warm(gpus: list[str], settings: Settings, *, modal_api: Any = None) -> list[CheckRow]:
    """Run each GPU problem's reference as a submission through ``warm_cache``, on each GPU type."""
    problems = []
    for folder in sorted(p for p in settings.problems_dir.iterdir() if (p / "task.yml").is_file()):
        try:
            problem = load_problem(folder)
        except ProblemError as exc:
            print(f"skipping {folder.name}: {exc}", file=sys.stderr)
            continue
        if problem.task.lang == "py" and "cuda" in problem.task.devices:
            problems.append(problem)
    gpu_strings = _app_gpu_types()
    work: list[tuple[CheckRow, Any, EvalJob | None]] = []
    for gpu in gpus:
        if gpu not in gpu_strings:
            work.append((CheckRow(gpu=gpu, submission="-", detail=f"the app has no {gpu} GPU type"), None, None))
            continue
        runner = _runner(gpu, settings, modal_api, function="warm_cache", options={"gpu": gpu_strings[gpu]})
        work += [
            (
                CheckRow(gpu=gpu, submission=problem.name),
                runner,
                EvalJob(
                    problem=problem,
                    submission_name="submission.py",
                    submission_source=REFERENCE_SUBMISSION,
                    mode=Mode.TEST,
                    device="cuda",
                    run_id=f"warm-{gpu}-{problem.name}-{uuid.uuid4().hex[:8]}",
                ),
            )
            for problem in problems
        ]
    return await _run_all(work)


def _runner(gpu: str, settings: Settings, modal_api: Any, **options: Any) -> Any:
    from runners.modal_backend import ModalRunner

    return ModalRunner(
        gpu,
        MemoryCalls(),
        app=settings.modal_app,
        modal_api=modal_api,
        price_per_s=settings.gpu_prices.get(gpu),
        deployed_timeout_s=settings.modal_timeout_s,
        queue_timeout_s=settings.remote_queue_timeout_s,
        **options,
    )


async def _run_all(work: list[tuple[CheckRow, Any, EvalJob | None]]) -> list[CheckRow]:
    """Every job at once (one container each); a row without a job keeps the reason it has none."""
    todo = [(row, runner, job) for row, runner, job in work if job is not None]
    outcomes = await asyncio.gather(*(runner.run(job) for _, runner, job in todo), return_exceptions=True)
    for (row, runner, _), outcome in zip(todo, outcomes, strict=True):
        _row(row, runner.price_per_s, outcome)
    return [row for row, _, _ in work]


def _row(row: CheckRow, price_per_s: float | None, outcome: EvalResult | BaseException) -> CheckRow:
    if isinstance(outcome, BaseException):
        row.detail = (
            f"{outcome} (try again later)"
            if isinstance(outcome, RunnerUnavailable)
            else f"{type(outcome).__name__}: {outcome}"
        )
        return row
    evaluated = bool(outcome.tests or outcome.shapes)
    row.seen = outcome.system.gpu_name or (outcome.system.device if evaluated else "")
    row.wall_s, row.gpu_s = outcome.wall_s, outcome.gpu_s
    row.cost_usd = None if price_per_s is None or not outcome.gpu_s else outcome.gpu_s * price_per_s
    row.verdict = outcome.status.value
    on_gpu = outcome.system.device == "cuda" or not outcome.system.gpu_name
    if outcome.failure:
        row.detail = outcome.failure.message
    elif not on_gpu:
        row.verdict, row.detail = "cpu", "the container has a GPU, but the evaluation could not use it (CUDA)"
    row.ok = outcome.passed and on_gpu and not wrong_gpu(row.gpu, outcome.system.gpu_name)
    return row


def _print(title: str, rows: list[CheckRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for header in ("GPU", "job", "ran on", "verdict", "wall", "GPU s", "cost"):
        table.add_column(header)
    for row in rows:
        cost = "-" if row.cost_usd is None else format_cost(row.cost_usd)
        table.add_row(
            row.gpu,
            row.submission,
            row.seen or "-",
            row.verdict if row.ok else f"✗ {row.verdict}",
            f"{row.wall_s:.1f} s",
            f"{row.gpu_s:.1f}",
            cost,
            style=None if row.ok else "red",
        )
    console = Console()
    console.print(table)
    for row in rows:
        if row.detail:
            console.print(f"{row.gpu} ({row.submission}): {row.detail}", soft_wrap=True)


def _app_gpu_types() -> dict[str, str]:
    """The GPU types the app defines (the CLI may import the app module; workers never do)."""
    from runners import modal_app

    return modal_app.GPU_TYPES
