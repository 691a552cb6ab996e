"""Chat-neutral replies built from typed parts; every adapter renders them its own way.

No platform markup here: a table is headers and rows, a verdict is a status part with a tone. The only
text styling allowed is ``**bold**`` and ``code`` spans, which every front end can render or strip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.contracts.messages import Part, PartKind, Reply, ReplyTo, Tone
from harness.popcorn import MEASURED_BY, NOTE
from harness.result import EvalResult, Progress, ShapeStats, Status
from harness.result_text import format_us as harness_format_us

LOG_TAIL_CHARS = 1500
CI_MEANING = (
    "± is the 95% confidence interval of each median, as a share of it: repeat the timing and the "
    "median lands that close 95 times in 100."
)


def format_us(us: float | None) -> str:
    """A time for chat: the terminal report's rounding, with the µ sign, and ``-`` for no time."""
    return "-" if us is None else harness_format_us(us, micro="µs")


def format_spec(spec: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in spec.items() if k != "seed")


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 submission``, ``2 submissions``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def tail(text: str, limit: int) -> str:
    """The end of ``text`` in about ``limit`` characters, from the start of a line, saying what came before it (the
    end of a log or of printed output matters most, and a line cut at its start reads as garbage)."""
    if len(text) <= limit:
        return text
    kept = text[-limit:]
    start = kept.find("\n")
    if start == -1 or start == len(kept) - 1:  # one long line: only characters can be left out
        return f"[{counted(len(text) - len(kept), 'earlier character')} left out]\n{kept}"
    kept = kept[start + 1 :]
    return f"[{counted(text[: len(text) - len(kept)].count(chr(10)), 'earlier line')} left out]\n{kept}"


def clip(value: str, limit: int) -> str:
    """``value`` on one line, cut at a word to at most ``limit`` characters, an ellipsis marking the cut."""
    value = " ".join(value.split())
    if len(value) <= limit:
        return value
    cut = value[: limit - 1].rsplit(" ", 1)[0] if " " in value[: limit - 1] else value[: limit - 1]
    return cut.rstrip(" ,;:.") + "…"


def text(body: str) -> Part:
    return Part(kind=PartKind.TEXT, text=body)


def status(body: str, tone: Tone) -> Part:
    return Part(kind=PartKind.STATUS, text=body, tone=tone)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Part:
    return Part(kind=PartKind.TABLE, headers=list(headers), rows=[[str(c) for c in row] for row in rows])


def code(body: str, language: str = "", filename: str = "") -> Part:
    """A code block; with a ``filename`` it is a file, which chat adapters attach rather than show inline."""
    return Part(kind=PartKind.CODE, text=body, language=language, filename=filename)


def chart(title: str, x_label: str, y_label: str, points: Sequence[tuple[str, Any, float]]) -> Part:
    """A line chart as data: ``points`` are (series, x, y), x an ISO 8601 time or a number; adapters draw it."""
    return Part(
        kind=PartKind.CHART,
        text=title,
        headers=[x_label, y_label],
        rows=[
            [series, x.isoformat() if hasattr(x, "isoformat") else str(x), repr(float(y))] for series, x, y in points
        ],
    )


def error_reply(reply_to: ReplyTo, message: str, in_reply_to: str = "") -> Reply:
    return Reply(
        reply_to=reply_to, parts=[status(message, Tone.ERROR)], tone=Tone.ERROR, in_reply_to=in_reply_to, ephemeral=True
    )


def progress_reply(reply_to: ReplyTo, run_id: str, gpu: str, progress: Progress) -> Reply:
    counted = f" {progress.index} of {progress.total}" if progress.total else ""
    detail = f" ({progress.detail})" if progress.detail else ""
    return Reply(
        reply_to=reply_to,
        parts=[status(f"{gpu}: {progress.stage}{counted}{detail}", Tone.INFO)],
        in_reply_to=run_id,
        update_key=run_id,
        final=False,
    )


_VERDICT = {
    Status.PASSED: ("passed", Tone.SUCCESS),
    Status.FAILED: ("failed", Tone.ERROR),
    Status.ERROR: ("could not run", Tone.ERROR),
    Status.TIMEOUT: ("timed out", Tone.WARNING),
}


def result_parts(result: EvalResult, cost_usd: float | None = None) -> list[Part]:
    """The body of a result report: verdict, score, per-shape table, failure, where it ran and what it cost."""
    return verdict_parts(result) + detail_parts(result, cost_usd)


def verdict_parts(result: EvalResult) -> list[Part]:
    """What everyone may read of a result: the verdict line and the score."""
    verdict, tone = _VERDICT[result.status]
    parts = [status(f"{result.mode.value} {verdict}", tone)]
    if result.measured_by == MEASURED_BY:
        parts.append(status(NOTE, Tone.WARNING))
    if result.score_us is not None:
        rule = _ranking_words(result.ranking_by)
        if result.measured_by == MEASURED_BY:  # the author's evaluator reports means, no medians
            rule = rule.replace("median", "mean")
        parts.append(text(f"**Score** {format_us(result.score_us)} ({rule})"))
    return parts


def detail_parts(result: EvalResult, cost_usd: float | None = None) -> list[Part]:
    """What only the author (and admins) may read: tests and the checker's messages, per-shape figures, the
    failure and the kernel's output, profiles, where it ran and what it cost."""
    parts: list[Part] = []
    if result.tests:
        passed = sum(t.passed for t in result.tests)
        parts.append(text(f"Tests: {passed} of {len(result.tests)} passed"))
        failing = [t for t in result.tests if not t.passed][:5]
        if failing:
            parts.append(table(["test", "message"], [[format_spec(t.spec), clip(t.message, 200)] for t in failing]))
    if result.shapes:
        parts.append(_shape_table(result.shapes))
        parts.append(text(CI_MEANING))
    if result.failure:
        parts.append(text(result.failure.message))
        if result.failure.log_tail:
            parts.append(code(tail(result.failure.log_tail, LOG_TAIL_CHARS)))
    output = f"{result.stdout}{result.stderr}".strip()
    if output and not (result.failure and result.failure.log_tail):
        parts.append(text("What your kernel printed"))
        parts.append(code(tail(output, LOG_TAIL_CHARS)))
    for profile in result.profiles:
        parts.append(text(f"Profile of {format_spec(profile.spec)}"))
        parts.append(code(profile.table))
    parts.append(text(_system_line(result) + cost_words(result.gpu_s, cost_usd)))
    if result.sandbox.description and not result.sandbox.isolated:
        parts.append(status(f"Ran without a sandbox: {result.sandbox.description}.", Tone.WARNING))
    return parts


def format_cost(cost_usd: float) -> str:
    """Dollars with the precision a run's cost needs: $0.0143, $1.27."""
    return f"${cost_usd:.4f}" if cost_usd < 1 else f"${cost_usd:,.2f}"


def cost_words(gpu_s: float, cost_usd: float | None) -> str:
    """`` GPU time 14.2 s, about $0.0156.`` for billed runs; nothing where runs are not billed."""
    if cost_usd is None:
        return ""
    return f" GPU time {gpu_s:.1f} s, about {format_cost(cost_usd)}."


def _ranking_words(ranking_by: str) -> str:
    return {
        "geom": "geometric mean of per-shape medians",
        "mean": "mean of per-shape medians",
        "last": "median of the last shape",
    }.get(ranking_by, ranking_by)


def _shape_table(shapes: list[ShapeStats]) -> Part:
    rows = []
    for s in shapes:
        ci = 100 * (s.ci_high_us - s.ci_low_us) / (2 * s.median_us) if s.median_us else 0.0
        rate = (
            f"{s.achieved_gbps:.0f} GB/s"
            if s.achieved_gbps
            else f"{s.achieved_tflops:.1f} TFLOP/s"
            if s.achieved_tflops
            else "-"
        )
        peak = f"{100 * s.peak_fraction:.0f}%" if s.peak_fraction is not None else "-"
        rows.append(
            [
                format_spec(s.spec),
                format_us(s.median_us),
                _percent(ci),
                format_us(s.mean_us),
                format_us(s.min_us),
                format_us(s.p90_us),
                str(s.n),
                rate,
                peak,
            ]
        )
    return table(["shape", "median", "95% CI", "mean", "min", "p90", "n", "achieved", "of peak"], rows)


def _percent(ci: float) -> str:
    """A confidence half-width with the precision it deserves: ±0.42%, ±3.1%, ±27%, and >±999% for noise."""
    if ci >= 1000:
        return ">±999%"
    return f"±{ci:.2f}%" if ci < 1 else f"±{ci:.1f}%" if ci < 10 else f"±{ci:.0f}%"


def _system_line(result: EvalResult) -> str:
    s = result.system
    where = s.gpu_name or s.cpu or s.device
    versions = ", ".join(f"{k} {v}" for k, v in (("torch", s.torch), ("CUDA", s.cuda), ("triton", s.triton)) if v)
    return f"Ran on {where}" + (f" ({versions})" if versions else "") + f" in {result.wall_s:.1f} s."
