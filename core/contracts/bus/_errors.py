"""The bus's errors and the translation of nats-py's exceptions into them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import nats.errors
import nats.js.errors

NOT_RUNNING = "kernelrank is not running (no core answered). Start it with `kernelrank up`, then try again."
RECONNECTING = "kernelrank is reconnecting to its message bus; try again in a few seconds."


class BusError(Exception):
    """The bus could not do what was asked; the message says what to do."""


class BusUnavailable(BusError):
    """No NATS server at the URL, or the connection to it is gone."""


class Reconnecting(BusUnavailable):
    """The connection to NATS dropped and has not come back within the time the caller gave."""


class StreamBusy(BusError):
    """A stream did not take a message just now: none answered (not created yet, or its cluster is electing a
    leader), or an earlier attempt with the same message id is still being replicated. Repeatable."""


class CoreUnavailable(BusError):
    """NATS is reachable but no core answered the command."""


class PayloadTooLarge(BusError):
    """A message is larger than NATS carries; sending it again will fail the same way."""


class QueueFull(BusError):
    """A job queue reached its size limit and takes no more jobs until workers catch up."""


# JetStream's codes for "cannot keep that many copies": a single server (10074), too few servers in the cluster (10023)
REPLICAS_REFUSED = frozenset({10074, 10023})
REPLICAS_SETTING = "KERNELRANK_NATS_REPLICAS"
IN_PROCESS = "duplicate message id is in process"

# nats-py's ways of saying "the connection is not there right now": each means try again once it is back.
CONNECTION_LOST = (
    nats.errors.ConnectionClosedError,
    nats.errors.NoServersError,
    nats.errors.StaleConnectionError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError,
)


@contextlib.contextmanager
def replicas_checked(what: str, replicas: int) -> Iterator[None]:
    """``translated``, saying in one sentence what to change when NATS cannot keep ``replicas`` copies of ``what``."""
    try:
        with translated(f"create {what}"):
            yield
    except BusError as exc:
        cause = exc.__cause__
        if isinstance(cause, nats.js.errors.APIError) and cause.err_code in REPLICAS_REFUSED:
            raise BusError(
                f"{REPLICAS_SETTING} asks for {replicas} copies of {what}, more than this NATS can keep "
                f"({cause.description}): set it to at most the number of JetStream servers in the cluster "
                "(1 on a single server) and start the core again."
            ) from cause
        raise


@contextlib.contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn nats-py's errors into the bus's hierarchy, keeping the original as the cause."""
    try:
        yield
    except BusError:
        raise
    except nats.js.errors.NoStreamResponseError as exc:
        raise StreamBusy(
            f"cannot {action}: no stream answered (the core creates them when it starts; on a cluster, the "
            "stream's servers may be electing a new leader)."
        ) from exc
    except nats.js.errors.APIError as exc:
        description = exc.description or str(exc)
        if IN_PROCESS in description.lower():  # a repeat of a publish a cluster is still replicating
            raise StreamBusy(f"cannot {action}: an earlier attempt is still being stored ({description}).") from exc
        if "maximum" in description.lower() and "exceeded" in description.lower():
            raise QueueFull(f"cannot {action}: the stream is full ({description}).") from exc
        raise BusError(f"cannot {action}: NATS refused ({description}).") from exc
    except nats.errors.MaxPayloadError as exc:
        raise PayloadTooLarge(f"cannot {action}: the message is larger than NATS carries.") from exc
    except CONNECTION_LOST as exc:
        raise BusUnavailable(f"cannot {action}: the connection to NATS is closed or reconnecting.") from exc
    except TimeoutError as exc:
        raise BusUnavailable(f"cannot {action}: NATS did not answer in time; is it overloaded or restarting?") from exc
    except nats.errors.Error as exc:
        raise BusError(f"cannot {action}: {exc}") from exc
