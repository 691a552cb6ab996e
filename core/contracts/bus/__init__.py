"""The NATS bus: the one package (with ``core.launch.natsserver``) that speaks nats-py.

Every process talks to the others through a ``Bus``: commands by request-reply, jobs through a
JetStream work queue per GPU pool that the core hands out to workers one delivery at a time (``_work``),
progress, results and replies through durable streams. Subject and stream names come from
``core.contracts.subjects``. Payloads are ``core.contracts.messages`` dataclasses, JSON on the wire.

Errors, all raised from here, messages safe to show to a user::

    BusError              the bus could not do what was asked
    ├── BusUnavailable    no NATS server at the URL, or the connection is gone
    │   └── Reconnecting  the connection dropped and did not come back within the caller's time
    ├── CoreUnavailable   NATS is up, but no core answered a command in time
    ├── PayloadTooLarge   a message bigger than NATS carries (sending it again fails the same way)
    └── QueueFull         a job queue is at its size limit

Background work (a command server, a durable pull loop, an advisory watcher) is a ``Running``: stop it
with ``await running.stop()`` or use it as an async context manager; ``Bus.close()`` stops what is left.

The modules behind this surface are private: ``_bus`` (the connection and its operations), ``_commands``
(request-reply, both sides), ``_link`` (the connection's state and the retry rules that follow from it),
``_streams`` (stream set-up, retention, and what recovery reads from JetStream), ``_consumers`` (durable
pull loops), ``_kv`` (key-value records), ``_pools`` (workers' pool status), ``_work`` (jobs handed to workers
by the core), ``_dead_letters`` (jobs that used up their deliveries), ``_fit`` (cutting a message to the payload
limit), ``_errors``.
"""

from core.contracts.bus._bus import Bus
from core.contracts.bus._consumers import Consumer, Delivery, Puller, Running
from core.contracts.bus._errors import (
    BusError,
    BusUnavailable,
    CoreUnavailable,
    PayloadTooLarge,
    QueueFull,
    Reconnecting,
)
from core.contracts.bus._kv import JsonBucket, Ledger
from core.contracts.bus._work import Granted, Held, Refused, Settle, WorkQueue
from core.contracts.roles import Role

__all__ = [
    "Bus",
    "BusError",
    "BusUnavailable",
    "Consumer",
    "CoreUnavailable",
    "Delivery",
    "Granted",
    "Held",
    "JsonBucket",
    "Ledger",
    "PayloadTooLarge",
    "Puller",
    "QueueFull",
    "Reconnecting",
    "Refused",
    "Role",
    "Running",
    "Settle",
    "WorkQueue",
]
