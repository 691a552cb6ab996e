"""A ranked result against the author's previous best on the same leaderboard and GPU, shape by shape.

The previous best is the run that was the author's entry before this result (``Store.previous_bests``); the
table shows each shape both runs measured, its median now and then, and the change (negative is faster).
"""

from __future__ import annotations

from core.contracts import reply_parts
from core.contracts.messages import Part, PartKind
from harness.result import EvalResult
from storage.records import PreviousBest


def change_table(result: EvalResult, previous: PreviousBest) -> Part | None:
    """The per-shape comparison, or ``None`` when no shape was measured by both runs."""
    before = {reply_parts.format_spec(spec): median for spec, median in previous.shapes if median}
    rows = []
    for shape in result.shapes:
        then = before.get(reply_parts.format_spec(shape.spec))
        if then and shape.median_us:
            rows.append(
                [
                    reply_parts.format_spec(shape.spec),
                    reply_parts.format_us(shape.median_us),
                    reply_parts.format_us(then),
                    f"{100 * (shape.median_us - then) / then:+.1f}%",
                ]
            )
    if not rows:
        return None
    return reply_parts.table(["shape", "median now", f"your best before (#{previous.submission_id})", "change"], rows)


def with_changes(parts: list[Part], result: EvalResult, previous: PreviousBest | None) -> list[Part]:
    """``parts`` with the comparison placed right after the per-shape table (or at the end)."""
    table = change_table(result, previous) if previous else None
    if table is None:
        return parts
    after = next((i + 1 for i, p in enumerate(parts) if p.kind is PartKind.TABLE and "median" in p.headers), len(parts))
    return [*parts[:after], reply_parts.text("**Against your previous best**"), table, *parts[after:]]
