"""How long the asker of a query still waits: the deadline that travels with a command, and what drops late work.

A client's ``Bus.request`` sends ``Command.answer_within_s``, the seconds it will wait. The core's command server
turns it into ``ANSWER_BY``, a ``time.monotonic()`` instant of its own clock counted from when the command arrived
(so the two hosts' clocks need not agree), set while the command's handler runs. Work that reaches its turn after
that instant is dropped (``check`` raises ``Abandoned``): nobody is waiting for its answer any more, and under a
crowd the core would otherwise spend its time on pages whose readers have gone. Only the public reads (the
registry's ``Access.PUBLIC`` commands: what pages and crowds ask) are ever dropped: they change nothing, so stopping
one half-way loses nothing. A submission, or any command that may write, is always carried through.
"""

from __future__ import annotations

import time
from contextvars import ContextVar

from core.contracts.messages import Command
from core.contracts.registry import BY_KIND
from core.contracts.specs import Access

ANSWER_BY: ContextVar[float | None] = ContextVar("answer_by", default=None)


class Abandoned(Exception):
    """The asker stopped waiting before this work began; nothing is answered."""


def deadline(command: Command, received: float) -> float | None:
    """The instant (``time.monotonic()``) after which nobody waits for ``command``'s answer; None: it is always
    answered (not a public read, or sent without a deadline)."""
    spec = BY_KIND.get(command.kind)
    if spec is None or spec.access is not Access.PUBLIC or command.answer_within_s <= 0:
        return None
    return received + command.answer_within_s


def check(due: float | None) -> None:
    """Raise ``Abandoned`` if ``due`` has passed."""
    if due is not None and time.monotonic() > due:
        raise Abandoned
