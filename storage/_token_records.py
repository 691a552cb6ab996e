"""``Store.tokens``: personal API tokens, each stored as its SHA-256 with a prefix to recognise it by."""

from __future__ import annotations

from datetime import datetime

from storage import _tokens, _writes
from storage._part import StorePart
from storage._time import as_utc
from storage.records import NewToken, TokenInfo, TokenOwner


class TokenRecords(StorePart):
    def add(self, token: NewToken) -> None:
        with self._writing() as cur:
            _tokens.add(cur, token)

    def use(self, sha256: str, now: datetime) -> TokenOwner | None:
        """Who holds the token with this hash (None when no token has it); a live token's last use becomes ``now``.

        An unknown hash costs one read and no transaction: anyone who can reach the API can send one.
        """
        with self._reading() as cur:
            found = _tokens.owner(cur, sha256)
        if found is not None and found.revoked_at is None:
            with self._writing() as cur:
                _tokens.touch(cur, sha256, as_utc(now))
        return found

    def listed(self, person_id: int | None = None) -> list[TokenInfo]:
        """One person's tokens, or everyone's; newest first, revoked ones included."""
        with self._reading() as cur:
            return _tokens.listed(cur, person_id)

    def revoke(self, prefix: str, person_id: int | None, now: datetime) -> list[str]:
        """Revoke the live token shown as ``prefix`` (only among ``person_id``'s unless None); the hashes revoked."""
        with self._writing() as cur:
            return _tokens.revoke(cur, prefix, person_id, as_utc(now))

    def issue(self, platform: str, user_id: str, display_name: str, token: NewToken, *, replacing: bool = False) -> int:
        """Add ``token`` for the person behind (platform, user_id), made when new; returns the person id.

        ``token.person_id`` is ignored: the person is found (or made) in the same transaction. ``replacing``
        revokes that person's other live tokens with the same label (``kernelrank up`` issues a fresh local token
        at every start).
        """
        with self._writing() as cur:
            person_id = _writes.person(cur, platform, user_id, display_name)
            _tokens.add(cur, NewToken(token.sha256, token.prefix, person_id, token.label, token.created_at))
            if replacing:
                _tokens.revoke_labelled(cur, person_id, token.label, token.sha256, as_utc(token.created_at))
        return person_id
