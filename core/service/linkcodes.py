"""One-time link codes: one live code per issuer, expiring after ``CODE_TTL``, and each person's wrong guesses.

Codes live in the core's memory: a restart forgets them, which costs a user one more ``link``. A code is 8
characters of a 32-letter alphabet (about 10^12 codes) against ``MAX_FAILURES`` guesses per ``FAILURE_WINDOW``
and person, so nobody can guess one.
"""

from __future__ import annotations

import math
import secrets
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.contracts.errors import RateLimited, UserError, shown

CODE_TTL = timedelta(minutes=10)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread
CODE_LENGTH = 8  # 32^8: about 10^12 codes against 5 guesses per 15 minutes
MAX_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)


@dataclass(frozen=True)
class _Code:
    issuer: int
    expires: datetime


class LinkCodes:
    """Live codes (one per issuer) and each person's recent wrong guesses."""

    def __init__(self) -> None:
        self._codes: dict[str, _Code] = {}
        self._failures: dict[int, deque[datetime]] = defaultdict(deque)

    def issue(self, person_id: int, now: datetime) -> str:
        """A fresh code for ``person_id``; any earlier one of theirs stops working."""
        self._drop(lambda c: c.issuer == person_id or c.expires <= now)
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        self._codes[code] = _Code(person_id, now + CODE_TTL)
        return code

    def redeem(self, typed: str, person_id: int, now: datetime) -> int:
        """The issuer of ``typed``, which stops working; ``UserError`` for a wrong, expired, used or own code."""
        failures = self._failures[person_id]
        while failures and failures[0] <= now - FAILURE_WINDOW:
            failures.popleft()
        if len(failures) >= MAX_FAILURES:
            wait_s = math.ceil((failures[0] + FAILURE_WINDOW - now).total_seconds())
            raise RateLimited(
                f"Too many wrong codes: try again in {math.ceil(wait_s / 60)} minutes, with a fresh "
                "code from `link` on your other account.",
                wait_s,
            )
        code = "".join(typed.split()).upper().replace("-", "")
        found = self._codes.get(code)
        if found is not None and found.issuer == person_id:
            raise UserError("That code is for your other account: type it there, not here.")
        if found is None or found.expires <= now:
            failures.append(now)
            raise UserError(
                f"The code {shown(typed, 20)!r} is not valid: mistyped, older than "
                f"{CODE_TTL.seconds // 60} minutes, or already used. Run `link` on your other account "
                "for a new one."
            )
        del self._codes[code]
        return found.issuer

    def forget(self, people: set[int]) -> None:
        """Codes of people who were just linked or split point at a person who changed: drop them."""
        self._drop(lambda c: c.issuer in people)

    def _drop(self, gone: Callable[[_Code], bool]) -> None:
        for code in [code for code, entry in self._codes.items() if gone(entry)]:
            del self._codes[code]
