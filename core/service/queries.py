"""The read-only commands: leaderboards, rankings, a person's submissions and progress, problems, templates,
one submission, figures, the queue and the harness's own source. Each is a plain function of the command, its
caller and the service's dependencies, returning one ``Reply``."""

from __future__ import annotations

from core.contracts import report
from core.contracts.errors import NotFound, UserError
from core.contracts.messages import Command, Reply
from core.service.access import check_can_see
from core.service.args import (
    choose_gpus,
    deadline_words,
    int_arg,
    language,
    leaderboard,
    other_person,
    reply,
    row_limit,
)
from core.service.challenge_report import podium_marks
from core.service.deps import Deps
from core.service.harness_source import eval_code_report
from core.service.people import Caller
from core.service.queueing import queue_report


async def list_leaderboards(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    boards = await deps.db.read(deps.db.store.list_leaderboards)
    if not boards:
        return reply(cmd, "Leaderboards", [report.text("No leaderboards yet: an admin creates one with "
                                                       "`admin create NAME --problem PATH`.")],
                     data={"leaderboards": [], "pools": list(deps.gpu_pools)})
    now = deps.now()
    rows = [[b.name, ", ".join(b.gpus) or "-", deadline_words(b.deadline, now), b.submissions, b.people,
             b.description.strip().splitlines()[0][:60] if b.description.strip() else ""] for b in boards]
    return reply(cmd, "Leaderboards", [report.table(["leaderboard", "GPUs", "deadline", "submissions",
                                                      "people", "about"], rows)],
                  data={"leaderboards": [{"name": b.name, "gpus": list(b.gpus),
                                          "deadline": b.deadline.isoformat() if b.deadline else None,
                                          "opens": b.opens_at.isoformat() if b.opens_at else None,
                                          "version": b.version}
                                         for b in boards],
                        "pools": list(deps.gpu_pools)})         # what a new leaderboard may run on


async def show(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    board = (await leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    gpus = choose_gpus(board, [cmd.args["gpu"]] if cmd.args.get("gpu") else [], allow_all=True)
    limit = row_limit(cmd, 10)
    closed = [ch.results for ch in await deps.db.read(deps.db.store.challenges.listed)
              if ch.results and board.name in ch.leaderboards]      # the latest closed challenge marks its podium
    parts = []
    for gpu in gpus:
        rows = await deps.db.read(deps.db.store.ranking, board.name, gpu, limit)
        marks = podium_marks(closed[-1], board.name, gpu) if closed else {}
        parts.append(report.text(f"**{board.name} on {gpu}**"))
        parts.append(report.table(["rank", "who", "score", "submission", "when"],
                                  [[f"{r.rank} {marks[r.run_id]}" if r.run_id in marks else r.rank, r.display_name,
                                    report.format_us(r.score_us), f"#{r.submission_id}",
                                    f"{r.submitted_at:%Y-%m-%d %H:%M}"] for r in rows])
                     if rows else report.text("No passing ranked runs yet."))
    if closed:
        parts.append(report.text("🥇🥈🥉: the podium verified at the challenge's close; held: kept for an admin's "
                                 "review (`challenge TITLE` says why)."))
    return reply(cmd, f"{board.name} leaderboard", parts)


async def mine(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    board = (await leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    rows = await deps.db.read(deps.db.store.history, board.name, caller.person_id, cmd.args.get("gpu"),
                              row_limit(cmd, 20))
    if not rows:
        return reply(cmd, f"Your submissions to {board.name}", [report.text("You have not submitted yet.")])
    return reply(cmd, f"Your submissions to {board.name}", [report.table(
        ["submission", "GPU", "mode", "status", "score", "file", "when"],
        [[f"#{r.submission_id}", r.gpu, r.mode, r.status or "queued", report.format_us(r.score_us), r.file_name,
          f"{r.created_at:%Y-%m-%d %H:%M}"] for r in rows])])


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
            parts.append(report.text(f"**{whose} best on {gpu} over time**"))
            parts.append(report.table(["when", "best"], [[f"{t:%Y-%m-%d %H:%M}", report.format_us(v)]
                                                         for t, v in points]))
            series += [(gpu, t, v) for t, v in points]
    if series:
        parts.append(report.chart(f"Best score on {board.name}", "submitted", "best score (µs)", series))
    return reply(cmd, f"{whose} progress on {board.name}", parts or [report.text("No passing ranked runs yet.")])


async def task(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await leaderboard(deps, cmd.args.get("leaderboard", ""))
    board, problem = found.leaderboard, found.problem
    parts = [report.text(problem.task.description.strip() or problem.readme.strip() or board.name),
             report.table(["kind", "shapes"], [["tests", len(problem.task.tests)],
                                               ["benchmarks", len(problem.task.benchmarks)]]),
             report.text(f"GPUs: {', '.join(board.gpus)}. Ranked by {problem.task.ranking_by}. "
                         f"Deadline: {deadline_words(board.deadline, deps.now())}. "
                         f"Templates: {', '.join(problem.templates) or 'none'}.")]
    parts += [report.code(text, language(name), filename=name) for name, text in sorted(problem.files.items())]
    return reply(cmd, f"Task {board.name}", parts)


async def template(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await leaderboard(deps, cmd.args.get("leaderboard", ""))
    board, templates = found.leaderboard, found.problem.templates
    if not templates:
        raise UserError(f"{board.name} has no templates; see `task {board.name}` for what to write.")
    wanted = (cmd.args.get("lang") or next(iter(templates))).lower()
    match = next((lang for lang in templates if lang.lower() == wanted), None)
    if match is None:
        raise UserError(f"{board.name} has no {wanted} template; choose one of {', '.join(templates)}.")
    suffix = ".cu" if found.problem.task.lang == "cu" else ".py"
    filename = f"{board.name}-{match.lower()}{suffix}"
    return reply(cmd, f"{match} template for {board.name}", [report.code(templates[match], language(filename),
                                                                          filename=filename)],
                  data={"filename": filename, "source": templates[match]})


async def submission(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    sub_id = int_arg(cmd, "id", "submission id")
    detail = await deps.db.read(deps.db.store.submission_detail, sub_id)
    if detail is None:
        raise NotFound(f"There is no submission #{sub_id}; `mine LEADERBOARD` lists yours.")
    board = await deps.boards.get(detail.leaderboard)
    check_can_see(detail, caller, board and board.leaderboard, deps.now())
    version = await deps.db.read(deps.db.store.submission_version, sub_id)
    invalid = await deps.db.read(deps.db.store.admin.invalid_reason, sub_id)
    parts = [report.text(f"Judged by version {version} of {detail.leaderboard}'s problem."
                         + (f" **Invalidated by an admin: {invalid}.** It counts in no ranking." if invalid else "")),
             report.table(["run", "GPU", "status", "score"],
                          [[r.info.run_id[:8], r.info.gpu, r.info.status or r.info.state,
                            report.format_us(r.info.score_us)] for r in detail.runs]),
             report.code(detail.source, language(detail.file_name), filename=detail.file_name)]
    return reply(cmd, f"Submission #{sub_id}: {detail.file_name} by {detail.display_name} to {detail.leaderboard}",
                  parts, data={"submission_id": sub_id, "problem_version": version, "invalidated": invalid})


async def stats(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    figures = await deps.db.read(deps.db.store.stats)
    rows = [[k.replace("_", " "), v] for k, v in vars(figures).items() if k not in ("by_gpu", "cost_usd")]
    rows.append(["estimated cost", report.format_cost(figures.cost_usd)])
    parts = [report.table(["what", "count"], rows)]
    if figures.by_gpu:
        parts.append(report.table(["GPU", "runs", "GPU hours", "estimated cost"],
                                  [[u.gpu, u.runs, f"{u.gpu_seconds / 3600:.2f}", report.format_cost(u.cost_usd)]
                                   for u in figures.by_gpu]))
    return reply(cmd, "kernelrank in figures", parts)


async def queue(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    runs = await deps.db.read(deps.db.store.unfinished_runs)
    pools = deps.pools.summary()
    if gpu := str(cmd.args.get("gpu") or "").lower():          # one pool only
        runs = [run for run in runs if run.gpu.lower() == gpu]
        pools = {name: pool for name, pool in pools.items() if name.lower() == gpu}
    parts, data = queue_report(runs, deps.runs.started, pools, caller.person_id)
    return reply(cmd, "Queue", parts, data)


async def eval_code(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    title, parts, data = eval_code_report()
    return reply(cmd, title, parts, data)


