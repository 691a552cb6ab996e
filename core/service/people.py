"""Who sends each command, and whether they are an admin.

A person is what a chat platform vouches for (the Slack or Discord adapter's ``actor``), or the holder of a
personal API token: the API process sends the token's SHA-256 with the command and the core looks it up here.
A command that claims to come from the terminal or the web without a token is refused, since its ``actor`` is
whatever a client wrote.

Admins are configured by identity (``KERNELRANK_ADMINS=discord:123,slack:U456,cli:ada``); on a one-machine
install the local user, whose token ``kernelrank up`` issues, is one too. A token carries its person's rights.
Roles granted from chat (``admin role grant PERSON admin|creator``) count on every platform, and on Discord the
server roles ``Leaderboard Admin`` and ``Leaderboard Creator`` count too (the adapter sends the member's roles).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from core.contracts.config import Settings
from core.contracts.errors import NotSignedIn
from core.contracts.messages import SERVER_MANAGER, Command, Platform
from core.service.db import Database
from storage.records import NewToken, TokenOwner

log = logging.getLogger(__name__)

CHAT_PLATFORMS = frozenset({Platform.SLACK, Platform.DISCORD})
# server role name -> role; the adapter adds SERVER_MANAGER for a member who may manage the server
DISCORD_ROLES = {"Leaderboard Admin": "admin", "Leaderboard Creator": "creator", SERVER_MANAGER: "admin"}
LOCAL_LABEL = "kernelrank up"
LOCAL_PLATFORM = "cli"  # people known only at the terminal: the local user, people an admin issued tokens to
_HASH = re.compile(r"[0-9a-f]{64}")
TOKEN_CACHE_S = 60.0  # a token's owner is trusted this long without a look-up; revoking forgets it at once
GET_A_TOKEN = (
    "get one with `/leaderboard token` in Discord or `/kernelrank token` in Slack (or from an admin), "
    "then run `kernelrank login`"
)


@dataclass(frozen=True)
class Caller:
    person_id: int
    display_name: str
    admin: bool = False
    creator: bool = False  # may create leaderboards and challenges, and manage those they created

    def manages(self, created_by: int | None) -> bool:
        """Whether this caller may change something ``created_by`` made (admins: everything)."""
        return self.admin or (self.creator and created_by == self.person_id)

    @property
    def signature(self) -> str:
        """Who, as the audit log records it."""
        return f"{self.display_name} (person {self.person_id})"


VISITOR = Caller(person_id=0, display_name="a visitor")  # no person has id 0: the sequence starts at 1


def admin_identities(settings: Settings) -> frozenset[str]:
    """``platform:user id`` of every admin: the configured ones, and the local user when ``kernelrank up`` runs."""
    configured = {_identity(*entry.split(":", 1)) for entry in settings.admins if ":" in entry}
    local = {_identity(LOCAL_PLATFORM, settings.user)} if settings.local_token_id else set()
    return frozenset(configured | local)


class People:
    """Resolves commands to callers; caches what it learns, since every command needs it and it rarely changes."""

    def __init__(self, db: Database, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self._db = db
        self._admins = admin_identities(settings)
        self._local_user = settings.user
        self._local_prefix, _, self._local_sha = settings.local_token_id.rpartition(":")
        self._clock = clock
        self._chat: dict[tuple[str, str, str], int] = {}  # (platform, user id, name) -> person id
        self._tokens: dict[str, tuple[float, Caller]] = {}  # token hash -> (when looked up, its holder)
        self._roles: dict[int, frozenset[str]] | None = None  # granted roles, read once, reset on a change

    async def caller(self, cmd: Command, now: datetime) -> Caller:
        """The person behind ``cmd`` with their rights; ``NotSignedIn`` when there is none."""
        found = await self._person(cmd, now)
        if self._roles is None:
            self._roles = await self._db.read(self._db.store.admin.roles)
        roles = set(self._roles.get(found.person_id, ()))
        if cmd.actor.platform is Platform.DISCORD and not cmd.credential_sha256:
            roles |= {DISCORD_ROLES[name] for name in cmd.actor.roles if name in DISCORD_ROLES}
        return replace(found, admin=found.admin or "admin" in roles, creator="creator" in roles)

    def roles_changed(self) -> None:
        self._roles = None

    async def _person(self, cmd: Command, now: datetime) -> Caller:
        if cmd.credential_sha256:
            if not _HASH.fullmatch(cmd.credential_sha256):
                raise NotSignedIn(f"That token is not valid; {GET_A_TOKEN}.")
            return await self._holder(cmd.credential_sha256, now)
        actor = cmd.actor
        if actor.platform not in CHAT_PLATFORMS or not actor.user_id:
            raise NotSignedIn(f"Sign in first: this needs a personal token; {GET_A_TOKEN}.")
        key = (actor.platform.value, actor.user_id, actor.display_name or actor.user_id)
        if key not in self._chat:
            self._chat[key] = await self._db.write(self._db.store.person, *key)
        return Caller(self._chat[key], key[2], _identity(*key[:2]) in self._admins)

    def forget_everyone(self) -> None:
        """Linking or splitting people changes whose accounts and tokens are whose: look everyone up afresh."""
        self._chat.clear()
        self._tokens.clear()

    def forget(self, hashes: list[str]) -> None:
        """Drop revoked tokens from the cache, so they stop working at once."""
        for sha in hashes:
            self._tokens.pop(sha, None)

    async def _holder(self, sha: str, now: datetime) -> Caller:
        cached = self._tokens.get(sha)
        if cached and self._clock() - cached[0] < TOKEN_CACHE_S:
            return cached[1]
        owner = await self._db.write(self._db.store.tokens.use, sha, now)
        if owner is None and self._local_sha and sha == self._local_sha:
            owner = await self._register_local(now)
        if owner is None:
            raise NotSignedIn(f"That token is not valid (mistyped, or from another kernelrank); {GET_A_TOKEN}.")
        if owner.revoked_at is not None:
            raise NotSignedIn(
                f"That token was revoked on {owner.revoked_at:%Y-%m-%d %H:%M} UTC; get a new one: {GET_A_TOKEN}."
            )
        caller = Caller(owner.person_id, owner.display_name, any(i in self._admins for i in owner.identities))
        if len(self._tokens) > 10_000:
            self._tokens.clear()
        self._tokens[sha] = (self._clock(), caller)
        return caller

    async def _register_local(self, now: datetime) -> TokenOwner | None:
        """The token ``kernelrank up`` issued the local user, seen for the first time: store it for them."""
        token = NewToken(
            sha256=self._local_sha, prefix=self._local_prefix, person_id=0, label=LOCAL_LABEL, created_at=now
        )
        user = self._local_user
        await self._db.write(lambda: self._db.store.tokens.issue(LOCAL_PLATFORM, user, user, token, replacing=True))
        log.info("registered the local user's token %s for %s", self._local_prefix, self._local_user)
        return await self._db.write(self._db.store.tokens.use, self._local_sha, now)


def _identity(platform: str, user_id: str) -> str:
    return f"{platform.strip().lower()}:{user_id.strip()}"
