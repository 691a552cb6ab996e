"""Every NATS subject, stream and durable consumer name kernelrank uses, in one place.

======================================  ==========  ===================================================
subject                                 stream      carries
======================================  ==========  ===================================================
``svc.command.<platform>``              (none)      ``Command`` -> ``Reply``, request-reply, queue "core";
                                                    only that platform's adapter may publish here
``jobs.submit.<gpu>``                   JOBS        ``RunJob``; work queue, one durable per GPU pool
``jobs.dead.<gpu>``                     JOBS_DLQ    ``RunJob`` that failed ``max_deliver`` times
``runs.progress.<run_id>``              EVENTS      ``RunProgress`` from workers (may be lossy)
``runs.result.<run_id>``                EVENTS      ``RunResult`` from workers (never lossy)
``replies.<platform>.<route>``          REPLIES     ``Reply`` from the core; the route is
                                                    ``ReplyTo.channel`` (the terminal's session id)
``pools.status.<gpu>``                  (none)      ``PoolStatus`` from workers, every few seconds
``$KV.runner_calls.<run_id>``           KV bucket   the remote call (Modal, GitHub) a worker started for a
                                                    run, so a restarted worker re-attaches to it
``$KV.ledger-<platform>.<key>``         KV          a chat adapter's delivery ledger (``Bus.ledger``)
======================================  ==========  ===================================================

Who may publish or subscribe on which of these (and on the JetStream API subjects behind them) is
listed per role in ``core.contracts.roles``.

Names from users or the environment (GPU pools, run ids, routes) go through ``token`` before they
enter a subject or a consumer name, so ``A100 80GB`` or ``a.b`` can never split or widen a subject.
"""

from __future__ import annotations

import re

COMMANDS_ALL = "svc.command.*"  # what the core serves
CORE_QUEUE = "core"  # queue group: core replicas share the command load

JOBS = "JOBS"
JOBS_DLQ = "JOBS_DLQ"
EVENTS = "EVENTS"
REPLIES = "REPLIES"

JOBS_ALL = "jobs.submit.>"
DEAD_ALL = "jobs.dead.>"
PROGRESS_ALL = "runs.progress.>"
RESULTS_ALL = "runs.result.>"
REPLIES_ALL = "replies.>"
POOL_STATUS_ALL = "pools.status.>"

RUNNER_CALLS = "runner_calls"  # KV bucket (stream KV_runner_calls): run id -> remote call

CORE_RESULTS = "core-results"  # the core's durable consumer of results
CORE_PROGRESS = "core-progress"  # the core's durable consumer of progress events

# The server's notice that a job consumer gave up on a message; the last token is the consumer.
MAX_DELIVERIES_ADVISORY = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{JOBS}.*"

_JOB_PREFIX = "jobs.submit."
_DEAD_PREFIX = "jobs.dead."
_SAFE = re.compile(r"[A-Za-z0-9-]")
NO_ROUTE = "_"  # the route of a reply with no channel; ``token`` never yields it


def token(name: str) -> str:
    """One subject token for ``name``; ``H100`` and ``A100-80GB`` stay as they are.

    Letters, digits and ``-`` are kept; every other character (``_`` included) becomes ``_`` plus its
    UTF-8 bytes in hex, so different names never share a token and the result is also a valid
    consumer name (no dots, spaces, wildcards or slashes).
    """
    if not name:
        raise ValueError("a subject token cannot be empty")
    return "".join(c if _SAFE.fullmatch(c) else "".join(f"_{b:02x}" for b in c.encode()) for c in name)


def command_subject(platform: str) -> str:
    """Where commands on behalf of ``platform``'s users go; the subject tells the core who vouched for them."""
    return "svc.command." + token(platform)


def command_platform(subject: str) -> str:
    """``svc.command.discord`` -> ``discord``: the platform whose adapter published a command."""
    return subject.rsplit(".", 1)[-1]


def job_subject(gpu: str) -> str:
    return _JOB_PREFIX + token(gpu)


def dead_subject(job_subject_: str) -> str:
    """``jobs.submit.H100`` -> ``jobs.dead.H100`` (works on a subject read back from the stream)."""
    if not job_subject_.startswith(_JOB_PREFIX):
        raise ValueError(f"{job_subject_!r} is not a job subject")
    return _DEAD_PREFIX + job_subject_.removeprefix(_JOB_PREFIX)


def runner_durable(gpu: str) -> str:
    """The durable pull consumer every worker of one GPU pool shares."""
    return "runners-" + token(gpu)


def progress_subject(run_id: str) -> str:
    return "runs.progress." + token(run_id)


def result_subject(run_id: str) -> str:
    return "runs.result." + token(run_id)


def reply_subject(platform: str, route: str) -> str:
    return f"replies.{token(platform)}.{token(route) if route else NO_ROUTE}"


def platform_replies(platform: str) -> str:
    """Every reply for one platform: the filter of that adapter's durable consumer."""
    return f"replies.{token(platform)}.>"


def adapter_durable(platform: str) -> str:
    """The durable consumer one chat adapter reads its platform's replies through."""
    return "replies-" + token(platform)


def pool_status_subject(gpu: str) -> str:
    return "pools.status." + token(gpu)


def ledger_bucket(platform: str) -> str:
    """The key-value bucket one chat adapter keeps its delivery records in."""
    return "ledger-" + token(platform)
