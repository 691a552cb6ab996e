"""``kernelrank eval SUBMISSION --problem FOLDER``: evaluate a submission on this machine, no services needed.

Prints the readable report (or the JSON result with ``--json``); the exit code is 0 only when the
evaluation passed, 1 when it did not, and 2 when the command itself was used wrongly.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import sys
import uuid
from pathlib import Path

from harness.host.server import evaluate
from harness.job import EvalJob
from harness.loading import load_problem
from harness.problem import ProblemError
from harness.result import EvalResult, Mode, Progress
from harness.result_text import render

USAGE_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already explained
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    try:
        problem = load_problem(args.problem)
    except ProblemError as exc:
        return _usage_error(f"{exc} Pass --problem a folder such as problems/vectoradd, or a reference.py.")
    try:
        source = args.submission.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        return _usage_error(f"cannot read {args.submission} ({reason}); check the path to your kernel file.")
    mode = Mode(args.mode)
    job = EvalJob(
        problem=problem,
        submission_name=args.submission.name,
        submission_source=source,
        mode=mode,
        device=args.device,
        secret_seed=secrets.randbits(62) if mode is Mode.RANKED else None,
        run_id=uuid.uuid4().hex,
    )
    live = sys.stderr.isatty() and not args.json
    result = evaluate(job, on_progress=_show_progress if live else None)
    if live:
        print("\r\033[K", end="", file=sys.stderr)
    print(result.to_json() if args.json else render(result, colour=sys.stdout.isatty()))
    _save_reports(result, args.reports, job.run_id)
    return 0 if result.passed else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelrank eval", description="Evaluate a kernel submission against a problem on this machine."
    )
    parser.add_argument("submission", type=Path, help="the kernel file, e.g. my_kernel.py")
    parser.add_argument(
        "--problem",
        type=Path,
        required=True,
        help="problem folder holding task.yml, or a GPU MODE first-format reference.py (or its folder)",
    )
    parser.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=Mode.TEST.value,
        help="test (default), benchmark, ranked or profile",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto (default) uses CUDA when this machine has it",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of the report")
    parser.add_argument(
        "--reports",
        type=Path,
        default=Path("kernelrank-reports"),
        help="folder where profile mode saves ncu's full reports (default: ./kernelrank-reports)",
    )
    return parser


def _save_reports(result: EvalResult, folder: Path, run_id: str) -> None:
    """Write the ncu reports profile mode attached, each under its run and shape, and say where."""
    for entry in result.profiles:
        if entry.report is None:
            continue
        path = folder / f"{run_id[:8]}-{Path(entry.report.name).name}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(entry.report.data_b64))
        except OSError as exc:
            print(
                f"kernelrank eval: could not save {path} ({exc.strerror}); pass --reports a writable folder.",
                file=sys.stderr,
            )
            return
        print(f"ncu report saved to {path} (open it in Nsight Compute)", file=sys.stderr)


def _show_progress(progress: Progress) -> None:
    counted = f" {progress.index} of {progress.total}" if progress.total else ""
    detail = f" ({progress.detail})" if progress.detail else ""
    print(f"\r\033[K{progress.stage}{counted}{detail}", end="", file=sys.stderr, flush=True)


def _usage_error(message: str) -> int:
    print(f"kernelrank eval: {message}", file=sys.stderr)
    return USAGE_ERROR
