"""Leaderboards managed live: ``admin create``, ``update``, ``close``, ``reopen`` and ``delete``.

A leaderboard is data: created from a problem's files, stored with them in the database, and seen by the next
command (``BoardCache.forget``), never needing a restart. New files are validated before anything is stored:
loaded from a safely unpacked folder (``core.service.problem_files``), then their reference run once on a worker
(``core.service.validation``). An update with new files is a new version; earlier runs keep theirs. Every change is
written to the audit log with who made it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from core.contracts import reply_parts
from core.contracts.errors import Forbidden, NotFound, UserError, shown
from core.contracts.messages import Command, Reply, Tone
from core.service.args import choose_gpus, leaderboard, moment_arg, reply
from core.service.deadlines import keep_in_step
from core.service.deps import Deps
from core.service.leaderboards import Board, fitted, leaderboard_for, offered_pools
from core.service.pending import Pending
from core.service.people import Caller
from core.service.problem_files import load_upload
from core.service.validation import opened_words, save, start
from harness.problem import Problem
from storage.records import Leaderboard

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_DESCRIPTION_CHARS = 2_000  # --description: shown with the leaderboard in every list


async def create(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    name = str(cmd.args.get("name") or "").strip()
    if not NAME.fullmatch(name):
        raise UserError(
            f"{shown(name)!r} cannot name a leaderboard: use 1 to 64 letters, digits, '-', '_' or '.', "
            "starting with a letter or digit, like weekly-softmax."
        )
    if deleted := await deps.db.read(deps.db.store.deleted_leaderboard, name):
        raise UserError(
            f"{deleted} was deleted and keeps its history: `admin reopen {deleted}` brings it back, or "
            f"`admin delete {deleted} --purge` erases it for good and frees the name."
        )
    if await deps.db.read(deps.db.store.leaderboard_name_taken, name) or deps.validations.waiting_for(name):
        raise UserError(
            f"A leaderboard called {name} exists already; choose another name, or change it with `admin update {name}`."
        )
    problem, public = _problem(cmd, name, deps.gpu_pools)
    new = dataclasses.replace(leaderboard_for(problem, list(deps.gpu_pools), public), created_by=caller.person_id)
    new = _with_settings(cmd, new, problem, deps)
    return await _validate_then_save(cmd, caller, deps, new, problem, "create")


async def update(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    board = await _live(deps, cmd)
    old = _managed(board.leaderboard, caller)
    if not any(cmd.args.get(key) for key in ("gpu", "deadline", "opens", "description")) and cmd.attachment is None:
        raise UserError(
            f"Nothing to change on {old.name}: give --problem, --gpu, --deadline, --opens or --description."
        )
    if cmd.attachment is None:
        changed = _with_settings(cmd, old, board.problem, deps)
        await save(Pending(changed, "update", cmd.reply_to, cmd.id, caller.signature), deps, deps.now())
        return reply(
            cmd,
            f"{old.name} updated",
            [reply_parts.text(_settings_words(changed))],
            data={"leaderboard": old.name, "state": "open", "version": changed.version},
        )
    problem, public = _problem(cmd, old.name, deps.gpu_pools)
    fresh = leaderboard_for(problem, list(deps.gpu_pools), public)
    kept_gpus = [g for g in old.gpus if g in fresh.gpus] or fresh.gpus
    new = dataclasses.replace(
        fresh,
        secret_seed=old.secret_seed,
        created_at=old.created_at,
        version=old.version + 1,
        created_by=old.created_by,
        deadline=old.deadline,
        opens_at=old.opens_at,
        gpus=kept_gpus,
        description=old.description if old.description != board.problem.task.description.strip() else fresh.description,
    )
    new = _with_settings(cmd, new, problem, deps)
    return await _validate_then_save(cmd, caller, deps, new, problem, "update")


async def close(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    old = _managed((await _live(deps, cmd)).leaderboard, caller)
    now = deps.now()
    if old.deadline is not None and old.deadline <= now:
        raise UserError(
            f"{old.name} closed already on {old.deadline:%Y-%m-%d %H:%M} UTC; `admin reopen {old.name}` opens it again."
        )
    closed = dataclasses.replace(old, deadline=now)
    await save(Pending(closed, "close", cmd.reply_to, cmd.id, caller.signature), deps, now)
    return reply(
        cmd,
        f"{old.name} closed",
        [
            reply_parts.text(
                f"**{old.name}** closed at {now:%Y-%m-%d %H:%M} UTC: ranked submissions are refused from now on; test "
                "and benchmark runs still work, unranked."
            )
        ],
        data={"leaderboard": old.name, "state": "closed"},
    )


async def reopen(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    old = _managed((await _live(deps, cmd, restoring=caller)).leaderboard, caller)
    now, deadline = deps.now(), moment_arg(cmd, "deadline")
    if deadline is not None and deadline <= now:
        raise UserError(f"The new deadline {deadline:%Y-%m-%d %H:%M} UTC has passed; give a later one.")
    opened = dataclasses.replace(old, deadline=deadline)
    await save(Pending(opened, "reopen", cmd.reply_to, cmd.id, caller.signature), deps, now)
    return reply(
        cmd,
        f"{old.name} reopened",
        [reply_parts.text(_settings_words(opened))],
        data={"leaderboard": old.name, "state": "open"},
    )


async def delete(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    purge, name = cmd.args.get("purge") == "yes", str(cmd.args.get("leaderboard") or "")
    what = "erases it with every submission and run" if purge else "hides it and keeps its history"
    deleted = await deps.db.read(deps.db.store.deleted_leaderboard, name) if purge and name else None
    if deleted and cmd.args.get("confirm") != deleted:  # asked before it is shown again to be erased
        return _confirm(cmd, deleted, what)
    old = _managed((await _live(deps, cmd, restoring=caller if purge else None)).leaderboard, caller)
    if cmd.args.get("confirm") != old.name:
        return _confirm(cmd, old.name, what)
    erased = await deps.db.write(deps.db.store.delete_leaderboard, old.name, deps.now(), purge)
    await deps.db.write(
        deps.db.store.audit,
        caller.signature,
        "leaderboard delete",
        {"leaderboard": old.name, "purge": purge, "submissions_erased": erased},
    )
    deps.boards.forget(old.name)
    await keep_in_step(old, cmd.reply_to, deps, deleted=True)
    words = (
        f"**{old.name}** was erased with its {erased} submissions."
        if purge
        else f"**{old.name}** was deleted: it is hidden, and its history is kept."
    )
    return reply(
        cmd,
        f"{old.name} deleted",
        [reply_parts.text(words)],
        data={"leaderboard": old.name, "state": "purged" if purge else "deleted"},
    )


def _confirm(cmd: Command, name: str, what: str) -> Reply:
    return Reply(
        reply_to=cmd.reply_to,
        in_reply_to=cmd.id,
        title=f"Delete {name}?",
        tone=Tone.WARNING,
        parts=[
            reply_parts.text(
                f"Deleting **{name}** {what}. To go ahead, send the command again with `--confirm {name}`."
            )
        ],
        data={"leaderboard": name, "state": "confirm", "confirm": name},
    )


async def _validate_then_save(
    cmd: Command, caller: Caller, deps: Deps, new: Leaderboard, problem: Problem, action: str
) -> Reply:
    pending = Pending(new, action, cmd.reply_to, cmd.id, caller.signature)
    if problem.task.lang == "cu":  # no Python reference to call: loading it was its validation
        await save(pending, deps, deps.now())
        return reply(
            cmd,
            f"{new.name} is ready",
            [reply_parts.text(opened_words(new, action))],
            data={"leaderboard": new.name, "state": "open", "version": new.version},
        )
    run_id = await start(pending, problem, deps)
    return Reply(
        reply_to=cmd.reply_to,
        in_reply_to=cmd.id,
        final=False,
        title=f"Checking {new.name}",
        parts=[
            reply_parts.status(
                f"{new.name} loaded; its reference now runs once in test mode on {new.gpus[0]}, and it is "
                f"{action}d only if that passes. The outcome follows here.",
                Tone.INFO,
            )
        ],
        data={"leaderboard": new.name, "state": "validating", "validation_run": run_id, "version": new.version},
    )


async def _live(deps: Deps, cmd: Command, restoring: Caller | None = None) -> Board:
    """The leaderboard the command names. A deleted one is named as such; ``restoring`` (reopen, and a purge, which
    must see it to erase it) shows it again first, written to the audit log."""
    name = str(cmd.args.get("leaderboard") or "")
    deleted = await deps.db.read(deps.db.store.deleted_leaderboard, name) if name else None
    if deleted and restoring is None:
        raise NotFound(f"{deleted} was deleted; `admin reopen {deleted}` brings it back, with its history.")
    if deleted and restoring is not None:
        if not restoring.admin:
            raise Forbidden(f"{deleted} was deleted; only an admin can bring it back or erase it.")
        await deps.db.write(deps.db.store.restore_leaderboard, deleted)
        await deps.db.write(deps.db.store.audit, restoring.signature, "leaderboard restore", {"leaderboard": deleted})
        deps.boards.forget(deleted)
        name = deleted
    return await leaderboard(deps, name)


def _managed(lb: Leaderboard, caller: Caller) -> Leaderboard:
    """``lb``, if the caller may change it: an admin may change any, a creator those they created."""
    if not caller.manages(lb.created_by):
        raise Forbidden(f"{lb.name} was created by someone else; only they or an admin can change it.")
    return lb


def _problem(cmd: Command, name: str, pools: Iterable[str]) -> tuple[Problem, bool]:
    """The attached problem, loaded, and whether its task.yml makes its code public after the close."""
    if cmd.attachment is None:
        raise UserError(
            "Attach the problem: a reference.py, or a .zip or .tar.gz of its folder "
            "(from the terminal, --problem FOLDER)."
        )
    problem, public = load_upload(cmd.attachment, name)
    return fitted(problem, list(pools)), public


def _with_settings(cmd: Command, lb: Leaderboard, problem: Problem, deps: Deps) -> Leaderboard:
    """``lb`` with the GPUs, times and description the command gives; each checked, in one sentence."""
    now, offered = deps.now(), offered_pools(problem, list(deps.gpu_pools))
    if not offered:
        raise UserError(
            f"{lb.name}'s problem runs on none of this kernelrank's GPU pools "
            f"({', '.join(deps.gpu_pools) or 'none'}): check `devices` in its task.yml (cpu, cuda) "
            "against the workers that run here."
        )
    if wanted := cmd.args.get("gpu"):  # a list (terminal, API) or one comma string (chat)
        lb = dataclasses.replace(
            lb,
            gpus=choose_gpus(
                dataclasses.replace(lb, gpus=offered), [wanted] if isinstance(wanted, str) else list(wanted)
            ),
        )
    if len(description := str(cmd.args.get("description") or "")) > MAX_DESCRIPTION_CHARS:
        raise UserError(
            f"The description is {len(description):,} characters long; give at most {MAX_DESCRIPTION_CHARS:,} "
            "(the problem's README.md can hold the rest)."
        )
    deadline, opens = moment_arg(cmd, "deadline"), moment_arg(cmd, "opens")
    if deadline is not None and deadline <= now:
        raise UserError(f"The deadline {deadline:%Y-%m-%d %H:%M} UTC has passed already; give a later one.")
    lb = dataclasses.replace(
        lb,
        deadline=deadline or lb.deadline,
        opens_at=opens or lb.opens_at,
        description=str(cmd.args.get("description") or lb.description),
    )
    if lb.deadline and lb.opens_at and lb.opens_at >= lb.deadline:
        raise UserError(
            f"{lb.name} would open ({lb.opens_at:%Y-%m-%d %H:%M} UTC) after its deadline "
            f"({lb.deadline:%Y-%m-%d %H:%M} UTC); give an earlier --opens or a later --deadline."
        )
    return lb


def _settings_words(lb: Leaderboard) -> str:
    when = f"until {lb.deadline:%Y-%m-%d %H:%M} UTC" if lb.deadline else "with no deadline"
    opens = f", opening {lb.opens_at:%Y-%m-%d %H:%M} UTC" if lb.opens_at else ""
    return f"**{lb.name}** (version {lb.version}) runs on {', '.join(lb.gpus)} {when}{opens}."
