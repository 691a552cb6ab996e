"""What the terminal shows people, from the real core's replies rendered by ``adapters.terminal``: no raw dumps, no
Python reprs, no ISO timestamps, cells cut at a word, confidence as an explained percentage, a task's files listed
by name, and a failed submission's reason, figures and output for its author."""

from __future__ import annotations

import re

from adapters.terminal import render
from core.contracts.messages import CommandKind
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind, ShapeStats, Status
from harness.result import TestResult as Checked
from runners.fake import FakeRunner, passed_result

ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
REPR = re.compile(r"\{'|\[\(|\b\w+\(\w+=|<[\w.]+ object|\d\.\d{6,}|\bNone\b")
LONG = (
    "the output differs from the reference at index 17 by 0.0123 where the tolerance allows 0.001, which is "
    "usually a missing synchronisation between the two halves of the reduction"
)


def judged(job: EvalJob) -> EvalResult:
    if "# broken" in job.submission_source:
        return EvalResult(
            status=Status.FAILED,
            mode=job.mode,
            problem=job.problem.name,
            stdout="debug: n=1000\n",
            tests=[Checked(spec={"size": 1000}, passed=False, message=LONG)],
            failure=Failure(FailureKind.WRONG_OUTPUT, "Test size=1000 failed: " + LONG),
        )
    result = passed_result(job)
    result.shapes = [
        ShapeStats(
            spec={"size": 1 << 20},
            n=40,
            median_us=1234.5678,
            mean_us=1300.0,
            trimmed_mean_us=1250.0,
            std_us=400.0,
            ci_low_us=10.0,
            ci_high_us=30000.0,
            min_us=900.0,
            p10_us=950.0,
            p90_us=2000.0,
            max_us=5000.0,
            first_call_us=9000.0,
        )
    ]
    return result


def shown(reply, files_hint: str = "") -> str:
    text = render(reply, files_hint=files_hint)
    assert not ISO.search(text), ISO.search(text)
    assert not REPR.search(text), REPR.search(text)
    return text


def cut_at_words(text: str, full: str) -> None:
    """Every cell ending in an ellipsis is a prefix of ``full`` that stops at a word boundary."""
    for cut in re.findall(r"(\S[^│\n]*?)…", text):
        words = cut.split("  ")[-1].strip()
        assert full.startswith(words) and full[len(words)] in " ,.;:", (words, full[len(words) : len(words) + 5])


async def test_terminal_output_reads_cleanly(make_system):
    system = await make_system(FakeRunner(result_for=judged))
    source = (system.settings.problems_dir / "vectoradd" / "reference.py").read_text()
    ok = await system.submit("ada", "def custom_kernel(data):\n    return data[0] + data[1]\n", leaderboard="vectoradd")
    bad = await system.submit(
        "ada", "def custom_kernel(data):\n    return data[0]  # broken\n", leaderboard="vectoradd"
    )
    await system.finals({r["run_id"] for r in ok.data["runs"] + bad.data["runs"]})

    history = shown(await system.ask("ada", CommandKind.HISTORY, leaderboard="vectoradd"))
    assert "Best score on vectoradd" in history and "→" in history and "over 1 run" in history

    stats = shown(await system.ask("ada", CommandKind.STATS))
    assert re.search(r"runs\s+2 \(1 failed, 1 passed\)", stats), stats

    listing = shown(await system.ask("ada", CommandKind.LIST))
    assert "`task LEADERBOARD` shows" in listing

    task = shown(
        await system.ask("ada", CommandKind.TASK, leaderboard="vectoradd"),
        files_hint="`kernelrank task vectoradd --all` prints them.",
    )
    assert "reference.py" in task and "--all` prints them" in task and source.splitlines()[-1] not in task

    mine = shown(await system.ask("ada", CommandKind.SUBMISSION, id=str(ok.data["submission_id"])))
    assert "1.23 ms" in mine and ">±999%" in mine and mine.count("95% confidence interval") == 1

    failed = shown(await system.ask("ada", CommandKind.SUBMISSION, id=str(bad.data["submission_id"])))
    assert "ranked failed" in failed and "debug: n=1000" in failed  # the kernel's output
    assert "Test size=1000 failed: the output differs" in failed and "reduction" in failed  # the whole reason
    assert "…" in failed  # the test table's long message, cut at a word
    cut_at_words(failed, LONG)
