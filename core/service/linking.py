"""One person across Slack, Discord and the terminal: ``link``, ``unlink`` and the admins' ``admin link`` and
``admin unlink``.

``link`` shows a one-time code (``core.service.linkcodes``), privately; ``link CODE`` on another account joins the
two accounts into one person (``storage/_links.py`` moves the identities, submissions and tokens, and rebuilds the
rankings). The older person is the one kept, so ids that people and links already point at stay valid. A code
expires after minutes, works once, and only joins its issuer; wrong codes count against the person who typed them.
"""

from __future__ import annotations

from core.contracts import reply_parts
from core.contracts.errors import NotFound, UserError, shown
from core.contracts.messages import Command, Reply
from core.service.args import other_person
from core.service.deps import Deps
from core.service.linkcodes import CODE_TTL
from core.service.people import CHAT_PLATFORMS, Caller

WHERE_TO_TYPE = (
    "`/leaderboard link {code}` in Discord, `/kernelrank link {code}` in Slack or "
    "`kernelrank link {code}` in a terminal"
)
_PLATFORM_NAMES = {"discord": "Discord", "slack": "Slack", "cli": "the terminal"}


async def link(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    typed = str(cmd.args.get("code") or "").strip()
    now = deps.now()
    if not typed:
        code = deps.links.issue(caller.person_id, now)
        where = WHERE_TO_TYPE.format(code=code)
        return _reply(
            cmd,
            "Link your accounts",
            [
                reply_parts.code(code),
                reply_parts.text(
                    f"On your other account, type {where} within {CODE_TTL.seconds // 60} minutes. The two "
                    "accounts then become one person: one ranking entry each (the better score), one history, "
                    "one set of tokens. `unlink` splits them again."
                ),
            ],
        )
    issuer = deps.links.redeem(typed, caller.person_id, now)
    return await _join(cmd, deps, caller.display_name, issuer, caller.person_id)


async def unlink(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    identity = None if cmd.credential_sha256 else (cmd.actor.platform.value, cmd.actor.user_id)
    split = await deps.db.write(
        deps.db.store.unlink_people, caller.person_id, identity, cmd.credential_sha256 or None, deps.now()
    )
    if not split:
        raise NotFound("This account is not linked to another one: there is nothing to split. `link` joins two.")
    return await _split(cmd, deps, caller.display_name, split)


async def admin_link(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """(Admins: ``dispatch`` checks.) Join two people as ``link`` would, without a code."""
    first = await other_person(cmd, deps, _named(cmd, "person"))
    second = await other_person(cmd, deps, _named(cmd, "other"))
    return await _join(cmd, deps, caller.display_name, first, second)


async def admin_unlink(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """(Admins.) Split one account (``platform:id``) off its person, or every account of a person named."""
    who = _named(cmd, "person")
    person_id = await other_person(cmd, deps, who)
    platform, sep, user_id = who.partition(":")
    identity = (platform.lower(), user_id) if sep else None
    split = await deps.db.write(deps.db.store.unlink_people, person_id, identity, None, deps.now())
    if not split:
        raise NotFound(f"{shown(who)} is not linked to anyone: there is nothing to split.")
    return await _split(cmd, deps, caller.display_name, split)


async def _join(cmd: Command, deps: Deps, by: str, one: int, other: int) -> Reply:
    if one == other:
        raise UserError("These accounts are already one person; `token whoami` or `link` on each shows it.")
    kept, joined = sorted((one, other))
    await deps.db.write(deps.db.store.link_people, kept, joined, deps.now())
    await deps.db.write(deps.db.store.audit, by, "link", {"kept": kept, "joined": joined})
    _forget(deps, {kept, joined})
    accounts = await deps.db.read(deps.db.store.identities, kept)
    return _reply(
        cmd,
        "Accounts linked",
        [
            reply_parts.status(f"One person now: {_accounts(accounts)}.", reply_parts.Tone.SUCCESS),
            reply_parts.text("Rankings show one entry (the better score) and history is merged. `unlink` splits them."),
        ],
        {"person_id": kept, "accounts": [f"{p}:{u}" for p, u, _ in accounts]},
    )


async def _split(cmd: Command, deps: Deps, by: str, split: list[tuple[int, int]]) -> Reply:
    people = {person for pair in split for person in pair}
    await deps.db.write(deps.db.store.audit, by, "unlink", {"split": split})
    _forget(deps, people)
    lines = [_accounts(await deps.db.read(deps.db.store.identities, person)) for person in sorted(people)]
    return _reply(
        cmd,
        "Accounts split",
        [
            reply_parts.status(
                f"{len(people)} people again: " + "; ".join(line for line in lines if line) + ".",
                reply_parts.Tone.SUCCESS,
            ),
            reply_parts.text(
                "Each keeps the submissions and tokens it had before the link; what was made while linked "
                "stays with the first account."
            ),
        ],
        {"people": sorted(people)},
    )


def _forget(deps: Deps, people: set[int]) -> None:
    deps.people.forget_everyone()
    deps.links.forget(people)


def _named(cmd: Command, key: str) -> str:
    who = str(cmd.args.get(key) or "").strip()
    if not who:
        raise UserError("Name the people by their accounts, like `admin link discord:123 slack:U456`.")
    return who


def _accounts(identities: list[tuple[str, str, str]]) -> str:
    return ", ".join(f"{name} ({_PLATFORM_NAMES.get(platform, platform)})" for platform, _, name in identities)


def _reply(cmd: Command, title: str, parts: list, data: dict | None = None) -> Reply:
    return Reply(
        reply_to=cmd.reply_to,
        in_reply_to=cmd.id,
        title=title,
        parts=parts,
        data=data or {},
        ephemeral=cmd.actor.platform in CHAT_PLATFORMS,
    )
