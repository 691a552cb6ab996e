"""The bus's errors and the translation of nats-py's exceptions into them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import nats.errors
import nats.js.errors

NOT_RUNNING = "kernelrank is not running (no core answered). Start it with `kernelrank up`, then try again."


class BusError(Exception):
    """The bus could not do what was asked; the message says what to do."""


class BusUnavailable(BusError):
    """No NATS server at the URL, or the connection to it is gone."""


class CoreUnavailable(BusError):
    """NATS is reachable but no core answered the command."""


@contextlib.contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn nats-py's errors into the bus's hierarchy, keeping the original as the cause."""
    try:
        yield
    except BusError:
        raise
    except nats.js.errors.NoStreamResponseError as exc:
        raise BusError(f"cannot {action}: no stream stores it yet (the core creates them when it starts).") from exc
    except nats.js.errors.APIError as exc:
        raise BusError(f"cannot {action}: NATS refused ({exc.description or exc}).") from exc
    except (nats.errors.ConnectionClosedError, nats.errors.NoServersError, nats.errors.StaleConnectionError,
            nats.errors.ConnectionDrainingError, nats.errors.ConnectionReconnectingError) as exc:
        raise BusUnavailable(f"cannot {action}: the connection to NATS is closed or reconnecting.") from exc
    except TimeoutError as exc:
        raise BusUnavailable(f"cannot {action}: NATS did not answer in time; is it overloaded or restarting?") \
            from exc
    except nats.errors.Error as exc:
        raise BusError(f"cannot {action}: {exc}") from exc

