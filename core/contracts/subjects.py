"""Every NATS subject, stream and durable consumer name kernelrank uses, in one place.

======================================  ==========  ===================================================
subject                                 stream      carries
======================================  ==========  ===================================================
``svc.command.<platform>``              (none)      ``Command`` -> ``Reply``, request-reply, queue "core";
                                                    only that platform's adapter may publish here
``jobs.submit.<gpu>``                   JOBS        ``RunJob``; work queue, one durable per GPU pool, read by
                                                    the core alone
``svc.work.<worker>.<gpu>``             (none)      a worker asks the core for its pool's next job and settles
                                                    the jobs it holds, request-reply, queue "core"
``jobs.dead.<gpu>``                     JOBS_DLQ    ``RunJob`` that failed ``max_deliver`` times
``runs.progress.<worker>.<run_id>``     EVENTS      ``RunProgress`` from the worker named (may be lossy)
``runs.result.<worker>.<run_id>``       EVENTS      ``RunResult`` from the worker named (never lossy)
``replies.<platform>.<route>``          REPLIES     ``Reply`` from the core; the route is
                                                    ``ReplyTo.channel`` (the terminal's session id)
``pools.status.<worker>.<gpu>``         (none)      ``PoolStatus`` from the worker named, every few seconds
``$KV.runner_calls.<worker>.<run_id>``  KV bucket   the remote call (Modal, GitHub) a worker started for a
                                                    run, so a restarted worker re-attaches to it
``$KV.ledger-<platform>.<key>``         KV          a chat adapter's delivery ledger (``Bus.ledger``)
======================================  ==========  ===================================================

Who may publish or subscribe on which of these (and on the JetStream API subjects behind them) is
listed per role in ``core.contracts.roles``.

A worker's reports carry its name in their subject, and each worker's NATS user may publish only under its
own name (``core.contracts.roles.worker_permissions``): the subject says who sent a report, whatever its body
claims (``publisher``).

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
WORKER_INBOXES = "_INBOX.worker.>"  # every worker's inboxes (``worker_inbox``): the core answers workers there
WORK_ALL = "svc.work.*.*"  # what the core serves: workers' requests for jobs (``work_subject``)

RUNNER_CALLS = "runner_calls"  # KV bucket (stream KV_runner_calls): <worker>.<run id> -> remote call

CORE_RESULTS = "core-results"  # the core's durable consumer of results
CORE_PROGRESS = "core-progress"  # the core's durable consumer of progress events

# The server's notice that a job consumer gave up on a message; the last token is the consumer.
MAX_DELIVERIES_ADVISORY = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{JOBS}.*"

_JOB_PREFIX = "jobs.submit."
_DEAD_PREFIX = "jobs.dead."
_SAFE = re.compile(r"[A-Za-z0-9-]")
NO_ROUTE = "_"  # the route of a reply with no channel; ``token`` never yields it
NO_WORKER = "_"  # the worker token of a report that names no worker (tests, tools on an open bus)


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


def worker_token(worker: str) -> str:
    """The subject token of a worker's name (a name issued by ``kernelrank workers add`` is its own token)."""
    return token(worker) if worker else NO_WORKER


def progress_subject(worker: str, run_id: str) -> str:
    return f"runs.progress.{worker_token(worker)}.{token(run_id)}"


def result_subject(worker: str, run_id: str) -> str:
    return f"runs.result.{worker_token(worker)}.{token(run_id)}"


def any_result_subject(run_id: str) -> str:
    """Every worker's result for one run (a filter: the newest one stored is what a lookup returns)."""
    return f"runs.result.*.{token(run_id)}"


def publisher(subject: str) -> str:
    """``runs.result.w1.r1`` or ``pools.status.w1.H100`` -> ``w1``: the token of the worker that published it."""
    parts = subject.split(".")
    return parts[2] if len(parts) == 4 else ""


def work_subject(worker: str, gpu: str) -> str:
    """Where ``worker`` asks the core for ``gpu``'s jobs; only that worker's user may publish here."""
    return f"svc.work.{worker_token(worker)}.{token(gpu)}"


def worker_inbox(worker: str) -> str:
    """The prefix of every inbox one worker creates: jobs it pulls arrive there, and only it may listen."""
    return f"_INBOX.worker.{worker_token(worker)}"


def reply_subject(platform: str, route: str) -> str:
    return f"replies.{token(platform)}.{token(route) if route else NO_ROUTE}"


def platform_replies(platform: str) -> str:
    """Every reply for one platform: the filter of that adapter's durable consumer."""
    return f"replies.{token(platform)}.>"


def adapter_durable(platform: str) -> str:
    """The durable consumer one chat adapter reads its platform's replies through."""
    return "replies-" + token(platform)


def pool_status_subject(worker: str, gpu: str) -> str:
    return f"pools.status.{worker_token(worker)}.{token(gpu)}"


def pool_of(subject: str) -> str:
    """``pools.status.w1.H100`` -> ``H100`` (as a token)."""
    return subject.rsplit(".", 1)[-1]


def ledger_bucket(platform: str) -> str:
    """The key-value bucket one chat adapter keeps its delivery records in."""
    return "ledger-" + token(platform)
