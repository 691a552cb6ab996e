"""Who may see what. Rankings and scores are public; a submission's code and detailed results are not.

A submission's source and its detailed results are visible to its author and to admins, and to everyone once
its leaderboard has closed if the leaderboard says so (``public_after_close``). The core applies these rules in
its handlers; adapters never decide them.
"""

from __future__ import annotations

from datetime import datetime

from core.service.people import Caller
from storage.records import Leaderboard, SubmissionDetail


def closed(board: Leaderboard, now: datetime) -> bool:
    return board.deadline is not None and board.deadline <= now


def why_hidden(detail: SubmissionDetail, caller: Caller, board: Leaderboard | None, now: datetime) -> str | None:
    """``None`` when ``caller`` may see the submission's code and detailed results, else one sentence saying why
    not (its verdicts and scores are public either way)."""
    if caller.admin or detail.person_id == caller.person_id:
        return None
    if board is not None and board.public_after_close and closed(board, now):
        return None
    opens = (
        f" until {board.name} closes on {board.deadline:%Y-%m-%d %H:%M} UTC"
        if board is not None and board.public_after_close and board.deadline is not None
        else ""
    )
    return (
        f"Submission #{detail.id} is someone else's: only its author and admins can see its code and detailed "
        f"results{opens}; `show {detail.leaderboard}` has the public ranking."
    )
