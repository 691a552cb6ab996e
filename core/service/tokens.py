"""The ``token`` command: personal API tokens for the terminal client and the web.

``token`` (or ``token new``) makes one for the asker and shows it once, privately; ``token list`` shows the
asker's tokens (everyone's to an admin) by prefix, never the token; ``token revoke PREFIX`` ends one (an admin
may end anyone's); ``token whoami`` says whose a token is (``kernelrank login`` checks a token with it); an admin's
``admin token issue NAME`` (a command of its own) makes a token for a person known only at the terminal. The store
keeps a token's SHA-256 and its first characters (``core.contracts.tokenformat``), never the token.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime

from core.contracts import reply_parts
from core.contracts.errors import NotFound, UserError, shown
from core.contracts.messages import Command, Platform, Reply
from core.contracts.tokenformat import make_token, token_prefix, token_sha256
from core.service.deps import Deps
from core.service.people import CHAT_PLATFORMS, LOCAL_PLATFORM, Caller
from storage.records import NewToken, TokenInfo

MAX_LIVE_TOKENS = 20  # per person: tokens are cheap to make, so bound what one person can pile up
MAX_NAME_CHARS = 64
LISTED = 50


def new_token(person_id: int, label: str, now: datetime) -> tuple[str, NewToken]:
    """A fresh token and the record that stores it (hash and prefix only)."""
    token = make_token()
    return token, NewToken(
        sha256=token_sha256(token), prefix=token_prefix(token), person_id=person_id, label=label, created_at=now
    )


async def token(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    action = str(cmd.args.get("action") or "new").lower()
    act = _ACTIONS.get(action)
    if act is None:
        raise UserError(
            f"`token {shown(action, 20)}` is not a token command: use `token`, `token list`, "
            "`token revoke PREFIX` or `token whoami`."
        )
    return await act(cmd, caller, deps)


async def _new(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    live = [t for t in await deps.db.read(deps.db.store.tokens.listed, caller.person_id) if t.revoked_at is None]
    if len(live) >= MAX_LIVE_TOKENS:
        raise UserError(
            f"You have {len(live)} live tokens, the most one person may hold; revoke one with "
            "`token revoke PREFIX` (`token list` shows them) and ask again."
        )
    label = cmd.actor.platform.value if cmd.actor.platform in CHAT_PLATFORMS else "api"
    secret, record = new_token(caller.person_id, label, deps.now())
    await deps.db.write(deps.db.store.tokens.add, record)
    return _shown_once(
        cmd,
        "Your personal token",
        secret,
        record.prefix,
        "It acts as you from the terminal (`kernelrank login`, then paste it) and the web.",
    )


async def issue_token(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """(Admins: ``dispatch`` checks.) A token for a person known only at the terminal, shown once."""
    name = _person_name(str(cmd.args.get("name") or ""))
    secret, record = new_token(0, f"issued by {caller.display_name}", deps.now())
    await deps.db.write(deps.db.store.tokens.issue, LOCAL_PLATFORM, name, name, record)
    return _shown_once(
        cmd,
        f"A token for {name}",
        secret,
        record.prefix,
        f"Give it to {name} privately; they run `kernelrank login` and paste it.",
    )


async def _list(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    tokens = await deps.db.read(deps.db.store.tokens.listed, None if caller.admin else caller.person_id)
    if not tokens:
        return _reply(cmd, "Your tokens", [reply_parts.text("You have no tokens; `token` makes one.")])
    headers = ["prefix", "from", "created", "last used", "state"]
    rows = [[t.prefix, t.label, _when(t.created_at), _when(t.last_used_at), _state(t)] for t in tokens[:LISTED]]
    if caller.admin:
        headers.insert(1, "whose")
        for row, t in zip(rows, tokens, strict=False):
            row.insert(1, t.display_name)
    return _reply(
        cmd,
        "Tokens" if caller.admin else "Your tokens",
        [reply_parts.table(headers, rows)],
        {"tokens": [{"prefix": t.prefix, "label": t.label, "live": t.revoked_at is None} for t in tokens[:LISTED]]},
    )


async def _revoke(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    prefix = str(cmd.args.get("prefix") or "").strip()
    if not prefix:
        raise UserError(
            "Say which token to revoke by its prefix, like `token revoke kr_AbCdEfGh1`; `token list` shows them."
        )
    revoked = await deps.db.write(
        deps.db.store.tokens.revoke, prefix, None if caller.admin else caller.person_id, deps.now()
    )
    if not revoked:
        raise NotFound(
            f"{'There is' if caller.admin else 'You have'} no live token {shown(prefix, 20)!r}; "
            "`token list` shows the prefixes."
        )
    deps.people.forget(revoked)
    return _reply(
        cmd, "Token revoked", [reply_parts.status(f"Token {prefix} no longer works.", reply_parts.Tone.SUCCESS)]
    )


async def _whoami(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    rights = ", an admin" if caller.admin else ""
    return _reply(
        cmd,
        "Signed in",
        [reply_parts.text(f"You are {caller.display_name}{rights}.")],
        {"person_id": caller.person_id, "display_name": caller.display_name, "admin": caller.admin},
    )


def _person_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise UserError("Name the person the token is for, like `kernelrank admin token issue ada`.")
    if len(name) > MAX_NAME_CHARS or any(unicodedata.category(c).startswith("C") for c in name):
        raise UserError(f"A name is at most {MAX_NAME_CHARS} printable characters; choose a shorter one.")
    return name


def _shown_once(cmd: Command, title: str, secret: str, prefix: str, use: str) -> Reply:
    parts = [
        reply_parts.code(secret),
        reply_parts.text(
            f"{use} It is shown only this once: keep it like a password. `token revoke {prefix}` ends it."
        ),
    ]
    reply = _reply(cmd, title, parts, {"token": secret, "prefix": prefix})
    reply.ephemeral = True
    return reply


def _reply(cmd: Command, title: str, parts: list, data: dict | None = None) -> Reply:
    ephemeral = cmd.actor.platform in (Platform.SLACK, Platform.DISCORD)
    return Reply(
        reply_to=cmd.reply_to, in_reply_to=cmd.id, title=title, parts=parts, data=data or {}, ephemeral=ephemeral
    )


def _when(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M}" if moment else "never"


def _state(info: TokenInfo) -> str:
    return f"revoked {info.revoked_at:%Y-%m-%d}" if info.revoked_at else "live"


_ACTIONS = {"new": _new, "list": _list, "revoke": _revoke, "whoami": _whoami}
