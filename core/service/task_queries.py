"""The read-only commands about a problem itself: its statement and files, its templates, and the harness's own
source that judges it. Each is a plain function of the command, its caller and the service's dependencies,
returning one ``Reply``."""

from __future__ import annotations

from core.contracts import reply_parts
from core.contracts.errors import UserError, shown
from core.contracts.messages import Command, Reply
from core.service.args import deadline_words, language, leaderboard, reply
from core.service.deps import Deps
from core.service.harness_source import eval_code_report
from core.service.leaderboards import Board
from core.service.people import Caller


async def task(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await leaderboard(deps, cmd.args.get("leaderboard", ""))
    board, problem = found.leaderboard, found.problem
    parts = [
        reply_parts.text(problem.task.description.strip() or problem.readme.strip() or board.name),
        reply_parts.table(
            ["kind", "shapes"], [["tests", len(problem.task.tests)], ["benchmarks", len(problem.task.benchmarks)]]
        ),
        reply_parts.text(
            f"GPUs: {', '.join(board.gpus)}. Ranked by {problem.task.ranking_by}. "
            f"Deadline: {deadline_words(board.deadline, deps.now())}. "
            f"Templates: {', '.join(problem.templates) or 'none'}."
        ),
    ]
    parts += [reply_parts.code(text, language(name), filename=name) for name, text in sorted(problem.files.items())]
    return reply(cmd, f"Task {board.name}", parts, _task_data(found))


def _task_data(found: Board) -> dict:
    """What a problem page shows beside the files (which travel as the reply's code parts)."""
    board, task = found.leaderboard, found.problem.task
    return {
        "leaderboard": board.name,
        "version": board.version,
        "description": task.description.strip() or found.problem.readme.strip(),
        "lang": task.lang,
        "tests": task.tests,
        "benchmarks": task.benchmarks,
        "ranking_by": task.ranking_by,
        "gpus": list(board.gpus),
        "deadline": board.deadline.isoformat() if board.deadline else None,
        "templates": list(found.problem.templates),
        "roofline": task.roofline is not None,
    }


async def template(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await leaderboard(deps, cmd.args.get("leaderboard", ""))
    board, templates = found.leaderboard, found.problem.templates
    if not templates:
        raise UserError(f"{board.name} has no templates; see `task {board.name}` for what to write.")
    suffix = ".cu" if found.problem.task.lang == "cu" else ".py"
    names = {lang: f"{board.name}-{lang.lower().replace(' ', '-')}{suffix}" for lang in templates}
    wanted = str(cmd.args.get("lang") or "").lower()
    chosen = [lang for lang in templates if not wanted or lang.lower() == wanted]  # no language: every one
    if not chosen:
        raise UserError(f"{board.name} has no {shown(wanted, 30)} template; choose one of {', '.join(templates)}.")
    parts = [reply_parts.code(templates[lang], language(names[lang]), filename=names[lang]) for lang in chosen]
    if len(chosen) > 1:
        parts.insert(
            0,
            reply_parts.text(
                f"{board.name} ships {len(chosen)} templates: {', '.join(chosen)}. "
                f"`template {board.name} --lang {chosen[-1]}` gives one."
            ),
        )
    title = f"{chosen[0]} template for {board.name}" if len(chosen) == 1 else f"Templates for {board.name}"
    return reply(
        cmd,
        title,
        parts,
        data={
            "filename": names[chosen[0]],
            "source": templates[chosen[0]],
            "templates": {lang: names[lang] for lang in chosen},
        },
    )


async def eval_code(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    title, parts, data = eval_code_report(language=str(cmd.args.get("lang") or ""))
    return reply(cmd, title, parts, data)
