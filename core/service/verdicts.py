"""A run's result as replies: the verdict for everyone, the details for its author.

In a chat channel everyone sees the verdict line, the score and the rank change (the public reply, final, id
``result-<run_id>``); the per-shape figures, the checker's messages and the kernel's output go to the author alone
(the detail reply: ``ephemeral``, ``data["kind"] == "detail"``, published first and not final, so whatever waits
for a run's final reply gets the public one). Discord posts the detail in a private thread, Slack as an ephemeral
message in the thread (a direct message where that cannot be shown). A terminal or web client is its author's
alone, so it gets one reply with everything. ``submission ID`` shows the details again to the author and admins.
"""

from __future__ import annotations

from core.contracts import reply_parts
from core.contracts.messages import Part, PartKind, Platform, Reply, ReplyTo
from core.service.compare import with_changes
from harness.codec import from_jsonable
from harness.result import EvalResult
from storage.records import PreviousBest, RankRow, RunInfo

CHAT = (Platform.SLACK, Platform.DISCORD)


def result_replies(
    run: RunInfo,
    result: EvalResult,
    standing: dict[int, RankRow] | None,
    previous: PreviousBest | None,
    cost_usd: float | None = None,
) -> list[Reply]:
    """The replies that answer one run, in the order they are published."""
    reply_to = from_jsonable(ReplyTo, run.reply_to)
    public = reply_parts.verdict_parts(result)
    if standing is not None:
        public.append(reply_parts.text(standing_words(run, standing.get(run.person_id))))
    details = with_changes(reply_parts.detail_parts(result, cost_usd), result, previous)
    title = f"Submission #{run.submission_id} to {run.leaderboard} on {run.gpu}"
    data = {
        "submission_id": run.submission_id,
        "run_id": run.run_id,
        "status": result.status.value,
        "score_us": result.score_us,
        "gpu_s": result.gpu_s,
        "cost_usd": cost_usd,
        "leaderboard": run.leaderboard,
        "gpu": run.gpu,
        "mode": run.mode,
    }
    tone = reply_parts.Tone.SUCCESS if result.passed else reply_parts.Tone.ERROR
    if reply_to.platform not in CHAT:
        return [
            Reply(
                reply_to=reply_to,
                parts=public + details,
                tone=tone,
                in_reply_to=run.run_id,
                update_key=run.run_id,
                title=title,
                data=data,
                id=f"result-{run.run_id}",
            )
        ]
    replies = []
    if reply_to.user:
        mention = [Part(kind=PartKind.MENTION, text=reply_to.user)]
        public = (
            mention
            + public
            + [
                reply_parts.text(
                    f"The details (per-shape times, test messages, output) went to you privately; "
                    f"`submission {run.submission_id}` shows them again."
                )
            ]
        )
        replies.append(
            Reply(
                reply_to=reply_to,
                parts=mention + details,
                tone=tone,
                in_reply_to=run.run_id,
                final=False,
                ephemeral=True,
                title=f"Details of submission #{run.submission_id} on {run.gpu}",
                data={**data, "kind": "detail"},
                id=f"detail-{run.run_id}",
            )
        )
    else:  # nobody to show the details to here: `submission ID` does
        public.append(reply_parts.text(f"`submission {run.submission_id}` shows its author the details."))
    replies.append(
        Reply(
            reply_to=reply_to,
            parts=public,
            tone=tone,
            in_reply_to=run.run_id,
            update_key=run.run_id,
            title=title,
            data=data,
            id=f"result-{run.run_id}",
        )
    )
    return replies


def standing_words(run: RunInfo, mine: RankRow | None) -> str:
    if mine is None:
        return "Not ranked."
    if mine.run_id != run.run_id:
        return (
            f"Your best on {run.gpu} is still {reply_parts.format_us(mine.score_us)} "
            f"(#{mine.submission_id}), rank #{mine.rank}."
        )
    return (
        "**New #1!** " if mine.rank == 1 else "**New personal best.** "
    ) + f"Rank #{mine.rank} on {run.leaderboard} / {run.gpu}."
