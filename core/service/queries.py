"""The read-only commands about standings and runs: leaderboards, rankings, a person's submissions and progress,
one submission, figures and the queue (a problem's own pages: ``core.service.task_queries``). Each is a plain
function of the command, its caller and the service's dependencies, returning one ``Reply``."""

from __future__ import annotations

import dataclasses

from core.contracts import reply_parts
from core.contracts.errors import NotFound
from core.contracts.messages import Command, Reply
from core.service.access import why_hidden
from core.service.args import (
    choose_gpus,
    deadline_words,
    int_arg,
    language,
    leaderboard,
    other_person,
    page_number,
    reply,
    row_limit,
)
from core.service.challenge_report import podium_marks
from core.service.deps import Deps
from core.service.people import Caller
from core.service.queueing import queue_report
from core.service.reference_timing import COLUMNS, MEANING, yardsticks
from core.service.rounds import chosen_window
from harness.result import EvalResult


async def list_leaderboards(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    boards = await deps.db.read(deps.db.store.list_leaderboards)
    if not boards:
        return reply(
            cmd,
            "Leaderboards",
            [reply_parts.text("No leaderboards yet: an admin creates one with `admin create NAME --problem PATH`.")],
            data={"leaderboards": [], "pools": list(deps.gpu_pools)},
        )
    now = deps.now()
    rows = [
        [
            b.name,
            ", ".join(b.gpus) or "-",
            deadline_words(b.deadline, now),
            b.submissions,
            b.people,
            reply_parts.clip(b.description.strip().splitlines()[0], 60) if b.description.strip() else "",
        ]
        for b in boards
    ]
    return reply(
        cmd,
        "Leaderboards",
        [
            reply_parts.table(["leaderboard", "GPUs", "deadline", "submissions", "people", "about"], rows),
            reply_parts.text("`task LEADERBOARD` shows a leaderboard's whole description."),
        ],
        data={
            "leaderboards": [
                {
                    "name": b.name,
                    "gpus": list(b.gpus),
                    "deadline": b.deadline.isoformat() if b.deadline else None,
                    "opens": b.opens_at.isoformat() if b.opens_at else None,
                    "version": b.version,
                    "about": b.description.strip(),
                    "submissions": b.submissions,
                    "people": b.people,
                }
                for b in boards
            ],
            "pools": list(deps.gpu_pools),
        },
    )  # what a new leaderboard may run on


async def show(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await leaderboard(deps, cmd.args.get("leaderboard", ""))
    board = found.leaderboard
    gpus = choose_gpus(board, [cmd.args["gpu"]] if cmd.args.get("gpu") else [], allow_all=True)
    sticks = yardsticks(deps, found, gpus)
    limit = row_limit(cmd, 10)
    page = page_number(cmd)
    window, round_words = chosen_window(deps, board.name, str(cmd.args.get("round") or ""))
    closed = [
        ch.results for ch in deps.db.store.challenges.listed() if ch.results and board.name in ch.leaderboards
    ]  # each closed challenge marks its podium (in its own round)
    parts, rankings = [], {}
    if round_words:
        parts.append(
            reply_parts.text(
                f"{board.name}, {round_words}: `show {board.name} --round N` shows another round, `--round all` "
                "all time."
            )
        )
    more = {}
    round_option = f" --round {cmd.args['round']}" if cmd.args.get("round") else ""
    for gpu in gpus:
        # one row past the page says whether another follows; the rows before it are skipped, not read out; the
        # asker's own entry comes in the same read, wherever it stands
        first = (page - 1) * limit
        found_rows = await deps.db.read(
            deps.db.store.ranking_page, board.name, gpu, limit + 1, first, window, caller.person_id
        )
        listed = [r for r in found_rows if first < r.rank <= first + limit + 1]
        more[gpu], rows = len(listed) > limit, listed[:limit]
        if caller.person_id and all(r.person_id != caller.person_id for r in rows):
            rows += [r for r in found_rows if r.person_id == caller.person_id]
        marks = {run: mark for results in closed for run, mark in podium_marks(results, board.name, gpu).items()}
        rankings[gpu] = [
            {
                "rank": r.rank,
                "person_id": r.person_id,
                "name": r.display_name,
                "score_us": r.score_us,
                "submission_id": r.submission_id,
                "submitted_at": r.submitted_at.isoformat(),
                "podium": marks.get(r.run_id),
                "you": r.person_id == caller.person_id,
                **sticks[gpu].figures(r.score_us),
            }
            for r in rows
        ]
        compared = sticks[gpu].known
        parts.append(reply_parts.text(f"**{board.name} on {gpu}**"))
        parts.append(
            reply_parts.table(
                ["rank", "who", "score", *(COLUMNS if compared else []), "submission", "when"],
                [
                    [
                        f"{r.rank} {marks[r.run_id]}" if r.run_id in marks else r.rank,
                        r.display_name,
                        reply_parts.format_us(r.score_us),
                        *(sticks[gpu].cells(r.score_us) if compared else []),
                        f"#{r.submission_id}",
                        f"{r.submitted_at:%Y-%m-%d %H:%M}",
                    ]
                    for r in rows
                ],
            )
            if rows
            else reply_parts.text("No passing ranked runs yet." if page == 1 else f"No entries on page {page}.")
        )
        if more[gpu]:
            parts.append(
                reply_parts.text(
                    f"`show {board.name} --gpu {gpu}{round_option} --page {page + 1}` shows the next {limit} "
                    f"(ranks {page * limit + 1}-{(page + 1) * limit})."
                )
            )
    if any(stick.known for stick in sticks.values()):
        parts.append(reply_parts.text(MEANING))
    if closed:
        parts.append(
            reply_parts.text(
                "🥇🥈🥉: the podium verified at the challenge's close; held: kept for an admin's "
                "review (`challenge TITLE` says why)."
            )
        )
    return reply(
        cmd,
        f"{board.name} leaderboard",
        parts,
        {
            "leaderboard": board.name,
            "round": round_words or None,
            "rankings": rankings,
            "page": page,
            "more": more,  # gpu -> whether a next page has entries
            "yardsticks": {gpu: dataclasses.asdict(stick) for gpu, stick in sticks.items()},
        },
    )


async def mine(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    board = (await leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    rows = await deps.db.read(
        deps.db.store.history, board.name, caller.person_id, cmd.args.get("gpu"), row_limit(cmd, 20)
    )
    if not rows:
        return reply(cmd, f"Your submissions to {board.name}", [reply_parts.text("You have not submitted yet.")])
    return reply(
        cmd,
        f"Your submissions to {board.name}",
        [
            reply_parts.table(
                ["submission", "GPU", "mode", "status", "score", "file", "when"],
                [
                    [
                        f"#{r.submission_id}",
                        r.gpu,
                        r.mode,
                        r.status or "queued",
                        reply_parts.format_us(r.score_us),
                        r.file_name,
                        f"{r.created_at:%Y-%m-%d %H:%M}",
                    ]
                    for r in rows
                ],
            )
        ],
        {
            "runs": [
                {
                    "submission_id": r.submission_id,
                    "gpu": r.gpu,
                    "mode": r.mode,
                    "status": r.status,
                    "score_us": r.score_us,
                    "file_name": r.file_name,
                    "submitted_at": r.created_at.isoformat(),
                }
                for r in rows
            ]
        },
    )


async def history(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """The asker's best over time, or another person's (scores only): ``user`` is ``platform:id``, an id on the
    asker's chat platform, or (from the terminal) a display name."""
    board = (await leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    other = str(cmd.args.get("user") or "")
    person = await other_person(cmd, deps, other) if other else caller.person_id
    whose = "Your" if person == caller.person_id else f"{cmd.args.get('user_name') or other}'s"
    parts, series = [], []
    for gpu in choose_gpus(board, [cmd.args["gpu"]] if cmd.args.get("gpu") else [], allow_all=True):
        points = await deps.db.read(deps.db.store.best_over_time, board.name, person, gpu)
        if points:
            parts.append(reply_parts.text(f"**{whose} best on {gpu} over time**"))
            parts.append(
                reply_parts.table(
                    ["when", "best"], [[f"{t:%Y-%m-%d %H:%M}", reply_parts.format_us(v)] for t, v in points]
                )
            )
            series += [(gpu, t, v) for t, v in points]
    if series:
        parts.append(reply_parts.chart(f"Best score on {board.name}", "submitted", "best score (µs)", series))
    by_gpu: dict[str, list] = {}
    for gpu, moment, best in series:
        by_gpu.setdefault(gpu, []).append([moment.isoformat(), best])
    return reply(
        cmd,
        f"{whose} progress on {board.name}",
        parts or [reply_parts.text("No passing ranked runs yet.")],
        {"leaderboard": board.name, "best_over_time": by_gpu},
    )


async def submission(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    sub_id = int_arg(cmd, "id", "submission id")
    detail = await deps.db.read(deps.db.store.submission_detail, sub_id)
    if detail is None:
        raise NotFound(f"There is no submission #{sub_id}; `mine LEADERBOARD` lists yours.")
    board = await deps.boards.get(detail.leaderboard)
    hidden = why_hidden(detail, caller, None if board is None else board.leaderboard, deps.now())
    version = await deps.db.read(deps.db.store.submission_version, sub_id)
    invalid = await deps.db.read(deps.db.store.admin.invalid_reason, sub_id)
    parts = [
        reply_parts.text(
            f"Judged by version {version} of {detail.leaderboard}'s problem."
            + (f" **Invalidated by an admin: {invalid}.** It counts in no ranking." if invalid else "")
        ),
        reply_parts.table(
            ["run", "GPU", "status", "score"],
            [
                [r.info.run_id[:8], r.info.gpu, r.info.status or r.info.state, reply_parts.format_us(r.info.score_us)]
                for r in detail.runs
            ],
        ),
    ]
    for run in detail.runs:  # the verdicts are public; the rest is the author's and admins'
        if run.result is not None:
            result = EvalResult.from_dict(run.result)
            parts += [
                reply_parts.text(f"**On {run.info.gpu}**"),
                *reply_parts.verdict_parts(result),
                *(reply_parts.detail_parts(result) if hidden is None else []),
            ]
    data = {
        "submission_id": sub_id,
        "details": hidden is None,
        "leaderboard": detail.leaderboard,
        "person_id": detail.person_id,
        "author": detail.display_name,
        "file_name": detail.file_name,
        "mode": detail.mode,
        "submitted_at": detail.created_at.isoformat(),
        "runs": [
            {
                "gpu": r.info.gpu,
                "status": r.info.status or r.info.state,
                "score_us": r.info.score_us,
                **({"result": r.result} if hidden is None else {}),
            }
            for r in detail.runs
        ],
    }
    if hidden is None:
        parts.append(reply_parts.code(detail.source, language(detail.file_name), filename=detail.file_name))
        before = await deps.db.read(deps.db.store.previous_submission, sub_id)
        data["source"] = detail.source
        data["previous"] = before and {"submission_id": before[0], "file_name": before[1], "source": before[2]}
    else:
        parts.append(reply_parts.text(hidden))
    return reply(
        cmd,
        f"Submission #{sub_id}: {detail.file_name} by {detail.display_name} to {detail.leaderboard}",
        parts,
        {**data, "problem_version": version, "invalidated": invalid},
    )


async def stats(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    figures = await deps.db.read(deps.db.store.stats)
    by_status = ", ".join(f"{count:,} {status}" for status, count in sorted(figures.runs_by_status.items()))
    rows = [
        ["people", f"{figures.people:,}"],
        ["leaderboards", f"{figures.leaderboards:,}"],
        ["submissions", f"{figures.submissions:,}"],
        ["runs", f"{figures.runs:,}" + (f" ({by_status})" if by_status else "")],
        ["GPU hours", f"{figures.gpu_seconds / 3600:,.2f}"],
        ["estimated cost", reply_parts.format_cost(figures.cost_usd)],
    ]
    parts = [reply_parts.table(["what", "count"], rows)]
    if figures.by_gpu:
        parts.append(
            reply_parts.table(
                ["GPU", "runs", "GPU hours", "estimated cost"],
                [
                    [u.gpu, u.runs, f"{u.gpu_seconds / 3600:.2f}", reply_parts.format_cost(u.cost_usd)]
                    for u in figures.by_gpu
                ],
            )
        )
    return reply(cmd, "kernelrank in figures", parts, dataclasses.asdict(figures))


async def queue(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    runs = await deps.db.read(deps.db.store.unfinished_runs)
    pools = deps.pools.summary()
    if gpu := str(cmd.args.get("gpu") or "").lower():  # one pool only
        runs = [run for run in runs if run.gpu.lower() == gpu]
        pools = {name: pool for name, pool in pools.items() if name.lower() == gpu}
    parts, data = queue_report(runs, deps.runs.started, pools, caller.person_id)
    return reply(cmd, "Queue", parts, data)
