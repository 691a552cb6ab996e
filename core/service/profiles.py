"""``person``: someone's public page. Their entries with ranks, their best score over time on each leaderboard and
GPU (the points where it changed, at most ``storage._progress.MAX_POINTS`` a series, with the number of runs behind
it), and their latest runs: scores and verdicts only, never code or detailed results (``core.service.access``). One
read of the store, whatever the person's history holds.

``Reply.data`` carries it as plain JSON (times in µs as numbers, instants in ISO 8601) for the web pages and
scripts; the parts are the same for chat and the terminal.
"""

from __future__ import annotations

from core.contracts import reply_parts
from core.contracts.errors import NotFound
from core.contracts.messages import Command, Reply
from core.service.args import other_person, reply
from core.service.deps import Deps
from core.service.people import Caller

RUNS_SHOWN = 50


async def person(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    who = str(cmd.args.get("who") or "").strip()
    person_id = int(who[1:]) if who[:1] == "#" and who[1:].isdigit() else await other_person(cmd, deps, who)
    found = await deps.db.read(deps.db.store.person_summary, person_id, RUNS_SHOWN)
    if found is None:
        raise NotFound(f"kernelrank knows nobody as {who[:40]!r}; `show LEADERBOARD` lists people.")
    progress = [
        {
            "leaderboard": best.leaderboard,
            "gpu": best.gpu,
            "runs": series.runs,
            "points": [[at.isoformat(), score] for at, score in series.points],
        }
        for best in found.bests
        if (series := found.progress.get((best.leaderboard, best.gpu)))
    ]
    parts = [
        reply_parts.table(
            ["leaderboard", "GPU", "rank", "best", "submission"],
            [
                [b.leaderboard, b.gpu, f"#{b.rank}", reply_parts.format_us(b.score_us), f"#{b.submission_id}"]
                for b in found.bests
            ],
        )
        if found.bests
        else reply_parts.text("No ranked entry yet.")
    ]
    if found.runs:
        parts.append(
            reply_parts.table(
                ["submission", "leaderboard", "GPU", "status", "score", "when"],
                [
                    [
                        f"#{r.submission_id}",
                        r.leaderboard,
                        r.gpu,
                        r.status or "waiting",
                        reply_parts.format_us(r.score_us),
                        f"{r.created_at:%Y-%m-%d %H:%M}",
                    ]
                    for r in found.runs[:10]
                ],
            )
        )
    data = {
        "person_id": found.person_id,
        "name": found.display_name,
        "bests": [
            {
                "leaderboard": b.leaderboard,
                "gpu": b.gpu,
                "rank": b.rank,
                "score_us": b.score_us,
                "submission_id": b.submission_id,
            }
            for b in found.bests
        ],
        "progress": progress,
        "runs": [
            {
                "submission_id": r.submission_id,
                "leaderboard": r.leaderboard,
                "gpu": r.gpu,
                "mode": r.mode,
                "status": r.status,
                "score_us": r.score_us,
                "submitted_at": r.created_at.isoformat(),
            }
            for r in found.runs
        ],
    }
    return reply(cmd, f"{found.display_name} on kernelrank", parts, data)
