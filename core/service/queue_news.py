"""Where each waiting run stands, pushed to its author whenever that changes: a run started or finished on its pool.

A queued run's author otherwise hears nothing between "queued as #12 on H100, 2 jobs ahead" and their run's first
progress, however long the runs ahead take (a kernel that hangs holds the pool until its time limit). Each waiting
run gets a progress reply (it updates the submission's status line in place, as a run's own progress does): how
many runs are ahead of it, and, once a run on that pool was seen whole, roughly when it should start. Runs far
back hear again once they moved up a fifth of their place (``RunBook.worth_telling``), so a long queue does not
cost a reply per waiting run at every start; and a pool's news goes out at most once a second
(``RunBook.news_due``), the news held back meanwhile told by the core's once-a-second task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from core.contracts.messages import Reply, ReplyTo
from core.contracts.reply_parts import progress_reply
from core.service.queueing import ahead_words
from core.service.runs import RunBook
from harness.codec import from_jsonable
from harness.result import Progress


def queue_news(book: RunBook, gpus: Iterable[str]) -> list[Reply]:
    """A progress reply for each run still waiting on one of ``gpus``: its place, and when it should start."""
    wanted, ahead, news = book.news_due(gpus), Counter[str](), list[Reply]()
    if not wanted:
        return news
    estimates = {gpu: book.wait_estimate(gpu) for gpu in wanted}
    for run in list(book.in_flight.values()):  # in the order they were queued
        if run.gpu not in wanted:
            continue
        before = ahead[run.gpu]
        ahead[run.gpu] += 1
        if run.run_id in book.started or not run.reply_to or not book.worth_telling(run.run_id, before):
            continue
        detail = ahead_words(before)
        wait = estimates[run.gpu](before)
        if wait is not None and wait >= 30:
            detail += f", starts in about {max(1, round(wait / 60))} min"
        reply_to = from_jsonable(ReplyTo, run.reply_to)
        news.append(progress_reply(reply_to, run.run_id, run.gpu, Progress(stage="queued", detail=detail)))
    return news
