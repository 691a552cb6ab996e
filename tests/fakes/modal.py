"""A stand-in for the ``modal`` module where workers touch it: Modal's servers are out of reach from here.

It offers what ``runners.modal_backend`` uses, with the real signatures and Modal's own exception classes:
``Function.from_name(app, name)`` (lazy; a missing app or function raises ``NotFoundError`` on first use),
``.with_options(timeout=...)``, ``.spawn.aio(payload)``, ``.get_current_stats.aio()`` (a real
``modal.types.FunctionCurrentStats``), ``FunctionCall.from_id(id)`` (sync, as in Modal 1.x),
``.get.aio(timeout=...)`` (the builtin ``TimeoutError`` while running) and ``.cancel.aio(terminate_containers=...)``.

Arguments and return values cross a pickle round trip, as with Modal. A call runs its function's body in a
thread; ``outcomes`` scripts what each new call does instead: ``"ok"`` (run the body), ``"hang"`` (never
finish), an exception instance that ``get`` raises (``InternalFailure`` for a lost container, ...), or
``Flaky(exc)`` (the first ``get`` raises it, then the call runs normally). ``gate`` holds every body until
it is set, to catch a call mid-run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import pickle
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import modal.exception
from modal.types import FunctionCurrentStats

Body = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Flaky:
    """The first ``get`` of the call raises ``error`` (a network blip), then the body runs as usual."""

    error: BaseException


class _Aio:
    """A Modal method: the worker must call its ``.aio`` form, never block the event loop."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.aio = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("blocking Modal call from async code: use .aio")


class FakeCall:
    def __init__(
        self,
        fake: FakeModal,
        object_id: str,
        future: concurrent.futures.Future | None,
        error: BaseException | None,
        blip: BaseException | None = None,
    ) -> None:
        self.fake, self.object_id = fake, object_id
        self._future, self._error, self._blip = future, error, blip
        self.cancelled = False
        self.terminated = False
        self.get = _Aio(self._get)
        self.cancel = _Aio(self._cancel)

    async def _get(self, timeout: float | None = None) -> Any:
        self.fake.polls += 1
        if self.cancelled:
            raise modal.exception.RemoteError("the call was cancelled")
        if self._error is not None:
            raise self._error
        if self._blip is not None:
            blip, self._blip = self._blip, None
            raise blip
        if self._future is None:  # "hang": queued forever
            await asyncio.sleep(min(timeout or 0.05, 0.05))
            raise TimeoutError()
        try:
            answer = await asyncio.wait_for(asyncio.wrap_future(self._future), min(timeout or 60, 0.2))
        except TimeoutError:
            raise TimeoutError() from None  # builtin, like Modal's get(timeout=...)
        json.dumps(answer)  # our contract: functions return plain JSON-able data
        return pickle.loads(pickle.dumps(answer))

    async def _cancel(self, terminate_containers: bool = False) -> None:
        self.cancelled, self.terminated = True, terminate_containers


class FakeFunction:
    def __init__(self, fake: FakeModal, app: str, name: str, options: dict[str, Any] | None = None) -> None:
        self.fake, self.app, self.name, self.options = fake, app, name, options or {}
        self.spawn = _Aio(self._spawn)
        self.get_current_stats = _Aio(self._stats)

    def with_options(self, **options: Any) -> FakeFunction:
        return FakeFunction(self.fake, self.app, self.name, {**self.options, **options})

    def _body(self) -> Body:
        if not self.fake.credentials:
            raise modal.exception.AuthError("Token missing. Could not authenticate client.")
        body = self.fake.apps.get(self.app, {}).get(self.name)
        if body is None:
            raise modal.exception.NotFoundError(f"Lookup failed for Function '{self.name}' from the '{self.app}' app")
        return body

    async def _spawn(self, payload: dict[str, Any]) -> FakeCall:
        body = self._body()
        json.dumps(payload)  # our contract: plain JSON-able data
        payload = pickle.loads(pickle.dumps(payload))
        outcome = self.fake.outcomes.pop(0) if self.fake.outcomes else "ok"
        object_id = f"fc-{uuid.uuid4().hex[:20]}"
        future = None
        if outcome == "ok" or isinstance(outcome, Flaky):
            future = self.fake.pool.submit(self.fake.run_body, body, payload)
        call = FakeCall(
            self.fake,
            object_id,
            future,
            outcome if isinstance(outcome, BaseException) else None,
            outcome.error if isinstance(outcome, Flaky) else None,
        )
        self.fake.calls[object_id] = call
        self.fake.spawned.append((self.app, self.name, self.options, payload))
        return call

    async def _stats(self) -> FunctionCurrentStats:
        self._body()
        return FunctionCurrentStats(
            backlog=self.fake.backlog, num_total_runners=1, num_running_inputs=0, input_headroom=0
        )


class _FunctionClass:
    def __init__(self, fake: FakeModal) -> None:
        self.fake = fake

    def from_name(self, app_name: str, name: str, *, environment_name: str | None = None) -> FakeFunction:
        return FakeFunction(self.fake, app_name, name)


class _FunctionCallClass:
    def __init__(self, fake: FakeModal) -> None:
        self.fake = fake

    def from_id(self, function_call_id: str) -> FakeCall:
        known = self.fake.calls.get(function_call_id)
        if known is not None:
            return known
        return FakeCall(
            self.fake,
            function_call_id,
            None,
            modal.exception.NotFoundError(f"FunctionCall {function_call_id} not found"),
        )


class FakeModal:
    """``FakeModal({"kernelrank": {"run_H100": body}})``: one deployed app with its function bodies."""

    exception = modal.exception

    def __init__(self, apps: dict[str, dict[str, Body]] | None = None) -> None:
        self.apps = apps or {}
        self.credentials = True
        self.outcomes: list[str | BaseException | Flaky] = []
        self.backlog = 0
        self.gate = threading.Event()
        self.gate.set()
        self.calls: dict[str, FakeCall] = {}
        self.spawned: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
        self.polls = 0
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        self.Function = _FunctionClass(self)
        self.FunctionCall = _FunctionCallClass(self)

    def run_body(self, body: Body, payload: dict[str, Any]) -> dict[str, Any]:
        self.gate.wait(60)
        return body(payload)

    def close(self) -> None:
        self.gate.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
