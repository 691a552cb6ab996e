"""A person's best score over time as a server-rendered SVG step chart: no JavaScript, readable by screen readers
(a title and a description), scaled to its container so it fits a phone."""

from __future__ import annotations

from datetime import datetime
from html import escape

from core.contracts.reply_parts import format_us

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 80, 16, 16, 40  # room for the axis labels


def progress_chart(title: str, points: list[tuple[str, float]], ident: str = "chart") -> str:
    """``points`` are (ISO 8601 instant, best score in µs so far), oldest first; lower is better. ``ident`` keeps
    the ids of several charts on one page apart."""
    moments = [datetime.fromisoformat(at).timestamp() for at, _ in points]
    scores = [score for _, score in points]
    t0, t1 = min(moments), max(moments)
    low, high = min(scores), max(scores)

    def x(t: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.5)

    def y(score: float) -> float:  # slower is higher up: the line falls as the kernel gets faster
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - ((score - low) / (high - low) if high > low else 0.5))

    steps = []
    for i, (t, score) in enumerate(zip(moments, scores, strict=True)):
        if i:
            steps.append(f"{x(t):.1f},{y(scores[i - 1]):.1f}")
        steps.append(f"{x(t):.1f},{y(score):.1f}")
    dots = "".join(f'<circle cx="{x(t):.1f}" cy="{y(s):.1f}" r="3.5"/>' for t, s in zip(moments, scores, strict=True))
    first, last = points[0][0][:10], points[-1][0][:10]
    summary = f"Ranked runs from {first} to {last}; best went from {format_us(scores[0])} to {format_us(scores[-1])}."
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="{ident}-t {ident}-d" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="{ident}-t">{escape(title)}</title>'
        f'<desc id="{ident}-d">{escape(summary)}</desc>'
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>'
        f'<text x="{LEFT - 6}" y="{y(high) + 4:.1f}" text-anchor="end">{escape(format_us(high))}</text>'
        f'<text x="{LEFT - 6}" y="{y(low) + 4:.1f}" text-anchor="end">{escape(format_us(low))}</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 12}">{first}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 12}" text-anchor="end">{last}</text>'
        f'<polyline points="{" ".join(steps)}"/>{dots}</svg>'
    )
