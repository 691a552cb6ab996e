"""Who may do what on the bus: one NATS user per role, and each role's subject permissions, in one place.

=========  ==========================================================================================
role       may
=========  ==========================================================================================
core       everything kernelrank does with JetStream (streams, consumers, KV buckets), serve commands
           (``svc.command.*``), publish jobs, dead letters and replies, answer requests
worker     one NATS user per worker (``worker_permissions``), named as the worker: ask the core for its own
           pools' jobs and settle the ones it holds (``svc.work.<name>.<gpu>``; no JetStream access to JOBS at
           all: not its consumers, not their acks), publish progress and results under its own name
           (``runs.progress.<name>.*``, ``runs.result.<name>.*``) and its own pools' status
           (``pools.status.<name>.<gpu>``), use its own keys (``<name>.<run>``) of the ``runner_calls`` KV bucket
discord    request on ``svc.command.discord``; consume its replies through the ``replies-discord`` durable
slack      the same for ``slack``; both keep their delivery ledger in ``ledger-<platform>``
api        request on ``svc.command.cli`` and ``svc.command.web``; follow cli and web replies through
           ephemeral consumers filtered to ``replies.cli.>`` / ``replies.web.>``
=========  ==========================================================================================

Nobody but the core may subscribe to commands, read jobs (they carry sources and the secret seed), pull,
acknowledge, give back or inspect the job queues' deliveries, create, change or delete streams, or publish
replies: the allow lists never grant these, and every role but the core also has them on its deny list, so a
later widening of an allow list cannot grant them by accident. The JetStream API subjects are the ones nats-py 2.16
uses against nats-server 2.15:

- consumers are created through ``$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>``, the form that names
  the filter, so a permission can pin what a consumer may read (the server refuses a request whose body
  filter differs from the subject's). ``Bus`` always sets the consumer's ``name`` so nats-py uses this form.
- KV reads go through ``$JS.API.DIRECT.GET.KV_<bucket>.>`` (or ``$JS.API.STREAM.MSG.GET.KV_<bucket>``),
  writes are publishes on ``$KV.<bucket>.>``, and opening a bucket reads ``$JS.API.STREAM.INFO.KV_<bucket>``.
- Replies to requests come back on the requester's inbox: each role's inboxes start with
  ``_INBOX.<role>`` (``inbox_prefix``), each worker's with ``_INBOX.worker.<name>``, and a role (a worker)
  may subscribe to its own inboxes only, so one role cannot read another's answers, nor one worker the
  jobs a pull delivers to another.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.contracts import subjects
from core.contracts.messages import Platform


class Role(enum.StrEnum):
    CORE = "core"
    WORKER = "worker"
    DISCORD = "discord"
    SLACK = "slack"
    API = "api"


CHAT_PLATFORMS = (Platform.DISCORD, Platform.SLACK)
API_PLATFORMS = (Platform.CLI, Platform.WEB)
JS_API = "$JS.API"


@dataclass(frozen=True)
class Permissions:
    """One NATS user's ``permissions`` block."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    publish_deny: tuple[str, ...] = ()
    subscribe_deny: tuple[str, ...] = ()
    allow_responses: bool = False

    def to_config(self) -> dict[str, object]:
        """The block as nats-server's configuration expects it (JSON is a valid NATS configuration)."""
        config: dict[str, object] = {
            "publish": {"allow": list(self.publish), "deny": list(self.publish_deny)},
            "subscribe": {"allow": list(self.subscribe), "deny": list(self.subscribe_deny)},
        }
        if self.allow_responses:
            config["allow_responses"] = True
        return config


def inbox_prefix(role: Role) -> str:
    """The prefix of every inbox a process of ``role`` creates (requests' answers, pulled messages)."""
    return f"_INBOX.{role.value}"


def _inbox(role: Role) -> str:
    return inbox_prefix(role) + ".>"


def _kv(bucket: str) -> tuple[str, ...]:
    """Open, read and write one KV bucket, and nothing else of it (no purge, no delete of the bucket)."""
    stream = f"KV_{bucket}"
    return (
        f"{JS_API}.STREAM.INFO.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}.>",
        f"{JS_API}.DIRECT.GET.{stream}",
        f"{JS_API}.STREAM.MSG.GET.{stream}",
        f"$KV.{bucket}.>",
    )


def _pull(stream: str, durable: str) -> tuple[str, ...]:
    """Bind to an existing durable pull consumer, fetch from it and settle what it delivers."""
    return (
        f"{JS_API}.CONSUMER.INFO.{stream}.{durable}",
        f"{JS_API}.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
    )


def _adapter(platform: Platform) -> Permissions:
    durable = subjects.adapter_durable(platform.value)
    return Permissions(
        publish=(
            subjects.command_subject(platform.value),
            f"{JS_API}.CONSUMER.CREATE.{subjects.REPLIES}.{durable}.{subjects.platform_replies(platform.value)}",
            *_pull(subjects.REPLIES, durable),
            *_kv(subjects.ledger_bucket(platform.value)),
        ),
        subscribe=(_inbox(Role(platform.value)),),
        publish_deny=_CORE_ONLY_PUBLISH,
        subscribe_deny=_CORE_ONLY_SUBSCRIBE,
    )


def _read_or_consume(stream: str) -> tuple[str, ...]:
    """Every JetStream API request that reads a stream's messages, directly or through a new consumer."""
    return tuple(
        f"{JS_API}.{op}.{stream}{rest}"
        for op in ("CONSUMER.CREATE", "DIRECT.GET", "STREAM.MSG.GET")
        for rest in ("", ".>")
    )


# What only the core may do, denied to every other role whatever its allow list says.
_CORE_ONLY_PUBLISH = (
    f"{JS_API}.STREAM.CREATE.>",
    f"{JS_API}.STREAM.UPDATE.>",
    f"{JS_API}.STREAM.DELETE.>",
    f"{JS_API}.STREAM.PURGE.>",
    f"{JS_API}.STREAM.MSG.DELETE.>",
    f"{JS_API}.CONSUMER.DELETE.>",
    f"{JS_API}.CONSUMER.DURABLE.CREATE.>",
    *(op for stream in (subjects.JOBS, subjects.JOBS_DLQ, subjects.EVENTS) for op in _read_or_consume(stream)),
    # the job queues' consumers are the core's: a worker holding another's delivery could settle it (issue 25)
    f"{JS_API}.CONSUMER.INFO.{subjects.JOBS}.>",
    f"{JS_API}.CONSUMER.MSG.NEXT.{subjects.JOBS}.>",
    f"$JS.ACK.{subjects.JOBS}.>",
    subjects.JOBS_ALL,
    subjects.DEAD_ALL,
    subjects.REPLIES_ALL,
)
_CORE_ONLY_SUBSCRIBE = (
    subjects.COMMANDS_ALL,
    subjects.WORK_ALL,
    subjects.JOBS_ALL,
    subjects.DEAD_ALL,
    subjects.PROGRESS_ALL,
    subjects.RESULTS_ALL,
    subjects.REPLIES_ALL,
)

# The chat adapters' durables: no other role may create (and so re-filter) a consumer under those names.
_ADAPTER_DURABLES = tuple(
    f"{JS_API}.CONSUMER.CREATE.{subjects.REPLIES}.{subjects.adapter_durable(p.value)}.>" for p in CHAT_PLATFORMS
)

# Every role but the worker: workers have one user each (``worker_permissions``).
PERMISSIONS: dict[Role, Permissions] = {
    Role.CORE: Permissions(
        # workers' and adapters' inboxes outright, not only through allow_responses: a configuration reload
        # (``kernelrank workers add``) forgets the response permissions of requests in flight, and so does a cluster
        # node the core moves to when its own dies; an answer refused then is lost
        publish=(
            f"{JS_API}.>",
            "$JS.ACK.>",
            subjects.JOBS_ALL,
            subjects.DEAD_ALL,
            subjects.REPLIES_ALL,
            subjects.WORKER_INBOXES,
            *(_inbox(role) for role in (Role.API, Role.DISCORD, Role.SLACK)),
        ),
        subscribe=(
            subjects.COMMANDS_ALL,
            subjects.WORK_ALL,
            _inbox(Role.CORE),
            subjects.MAX_DELIVERIES_ADVISORY,
            subjects.POOL_STATUS_ALL,
        ),
        allow_responses=True,
    ),  # answers commands on the requester's inbox
    Role.DISCORD: _adapter(Platform.DISCORD),
    Role.SLACK: _adapter(Platform.SLACK),
    Role.API: Permissions(
        publish=(
            *(subjects.command_subject(p.value) for p in API_PLATFORMS),
            *(
                f"{JS_API}.CONSUMER.CREATE.{subjects.REPLIES}.*.{subjects.platform_replies(p.value)}"
                for p in API_PLATFORMS
            ),
        ),
        subscribe=(_inbox(Role.API),),
        publish_deny=(*_CORE_ONLY_PUBLISH, *_ADAPTER_DURABLES),
        subscribe_deny=_CORE_ONLY_SUBSCRIBE,
    ),
}


def worker_permissions(name: str, pools: Iterable[str]) -> Permissions:
    """One worker's user: its own pools' jobs through the core, its own inbox, reports and status under its own
    name only."""
    me = subjects.worker_token(name)
    pools = list(pools)
    return Permissions(
        publish=(
            *(subjects.work_subject(name, pool) for pool in pools),
            f"runs.progress.{me}.*",
            f"runs.result.{me}.*",
            *(subjects.pool_status_subject(name, pool) for pool in pools),
            # its own keys of the runner_calls bucket (``<worker>.<run>``), read by subject only
            f"{JS_API}.STREAM.INFO.KV_{subjects.RUNNER_CALLS}",
            f"{JS_API}.DIRECT.GET.KV_{subjects.RUNNER_CALLS}.$KV.{subjects.RUNNER_CALLS}.{me}.>",
            f"$KV.{subjects.RUNNER_CALLS}.{me}.>",
        ),
        subscribe=(subjects.worker_inbox(name) + ".>",),
        publish_deny=_CORE_ONLY_PUBLISH,
        subscribe_deny=_CORE_ONLY_SUBSCRIBE,
    )


@dataclass(frozen=True)
class WorkerUser:
    """What the server needs of one issued worker: its name (the NATS user), password hash and pools."""

    name: str
    password_hash: str
    pools: Sequence[str]


def user_name(role: Role) -> str:
    """The NATS user of a role on the embedded server (a worker's user is its own name)."""
    return f"kernelrank-{role.value}"


def authorization(password_hashes: dict[Role, str], workers: Iterable[WorkerUser] = ()) -> dict[str, object]:
    """nats-server's ``authorization`` block: one user per role but the worker, one per issued worker, each with
    its (bcrypt-hashed) password."""
    roles = [
        {"user": user_name(role), "password": password_hashes[role], "permissions": PERMISSIONS[role].to_config()}
        for role in PERMISSIONS
    ]
    return {
        "users": roles
        + [
            {
                "user": w.name,
                "password": w.password_hash,
                "permissions": worker_permissions(w.name, w.pools).to_config(),
            }
            for w in workers
        ]
    }
