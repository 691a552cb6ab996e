"""The modal backend: every job runs in the deployed Modal function of its GPU type, looked up by name.

``kernelrank worker --gpu H100 --backend modal``, per job::

    Function.from_name(app, "run_H100").spawn(payload)    the call id goes to the KV bucket runner_calls
    FunctionCall.get(timeout=poll_s) until the answer       the worker heartbeats the job meanwhile
    answer -> EvalResult                                    the GPU the container saw, the seconds it held it

A worker that restarts finds the call id under the run id and re-attaches instead of paying twice; a
worker that is stopped leaves its calls running for that reason. The app module (``runners/modal_app.py``)
is never imported here: functions are found by name. What goes wrong becomes a result the user can act on,
or a retry through the queue (Modal's exception classes, ``modal.exception``)::

    AuthError, PermissionDeniedError, NotFoundError (spawn)  "the Modal runner is not configured: ..." result
    InternalFailure                                         container lost or preempted: RunnerUnavailable,
                                                            NATS delivers the job again
    FunctionTimeoutError                                    a timeout result
    OutputExpiredError, NotFoundError (re-attach)           the old call is gone: spawn a new one
    ConnectionError, ServiceError, OSError                  transient: keep polling (RunnerUnavailable at spawn)
    anything else raised remotely                           an error result blamed on kernelrank
    no answer by the deadline (limit + queueing)            the call is cancelled, its container killed

``get(timeout=...)`` raises the *builtin* ``TimeoutError`` while a call runs; Modal's own timeout errors
are ``modal.exception.TimeoutError`` subclasses, a different class.
"""

from __future__ import annotations

import importlib
import logging
import time
from types import ModuleType
from typing import Any

from harness.host.remote import payload_for
from harness.job import EvalJob
from harness.result import EvalResult, FailureKind
from runners import remote
from runners.base import ProgressCallback, RunnerUnavailable
from runners.remote import CallStore, quietly

log = logging.getLogger(__name__)

POLL_S = 20.0  # one long-poll of get(); Modal itself polls in slices of up to 55 s
MAX_CALLS_PER_RUN = 3  # calls one delivery may start when earlier ones vanish (expired, unknown id)
BACKEND = "modal"


def function_name(pool: str) -> str:
    """``A100-80GB`` -> ``run_A100_80GB`` (the app module names its functions the same way; a test holds both)."""
    return "run_" + "".join(c if c.isalnum() else "_" for c in pool)


class _Restart(Exception):
    """The call we were following is gone (output expired, unknown id): spawn a new one."""


class ModalRunner:
    """Implements ``runners.base.Runner`` on Modal; ``modal_api`` is the ``modal`` module, or a stand-in in tests."""

    name = BACKEND

    def __init__(
        self,
        gpu: str,
        calls: CallStore,
        *,
        app: str = "kernelrank",
        modal_api: ModuleType | Any = None,
        price_per_s: float | None = None,
        deployed_timeout_s: int = 1200,
        queue_timeout_s: float = 1800.0,
        poll_s: float = POLL_S,
        function: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """``function`` and ``options`` (for ``with_options``) call another function than the pool's own."""
        self.gpu, self.calls, self.app = gpu, calls, app
        self.options = options or {}
        self.modal = modal_api if modal_api is not None else importlib.import_module("modal")
        self.price_per_s = price_per_s
        self.deployed_timeout_s = deployed_timeout_s
        self.queue_timeout_s = queue_timeout_s
        self.poll_s = poll_s
        self.function = function or function_name(gpu)
        self._handle: Any = None
        self._backlog_warned = False

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult:
        errors = self.modal.exception
        record = await quietly(self.calls.get(job.run_id))
        for _ in range(MAX_CALLS_PER_RUN):
            try:
                if record and record.get("backend") == BACKEND and record.get("call_id"):
                    log.info("run %s: re-attaching to Modal call %s", job.run_id, record["call_id"])
                    call = self.modal.FunctionCall.from_id(record["call_id"])
                else:
                    call, record = await self._spawn(job)
                return await self._follow(job, call, record, on_progress)
            except _Restart as exc:
                log.warning("run %s: %s; starting a new call", job.run_id, exc)
                await quietly(self.calls.delete(job.run_id))
                record = None
            except (errors.AuthError, errors.PermissionDeniedError, errors.NotFoundError) as exc:
                log.error("run %s: the Modal runner is not configured: %r", job.run_id, exc)
                self._handle = None  # look the function up afresh: it may be deployed by then
                return remote.failure(
                    job, FailureKind.HARNESS_ERROR, f"{self._not_configured(exc)}. {remote.NOT_YOUR_FAULT}"
                )
        raise RunnerUnavailable(f"Modal lost {MAX_CALLS_PER_RUN} calls of this run in a row")

    async def _spawn(self, job: EvalJob) -> tuple[Any, dict[str, Any]]:
        errors = self.modal.exception
        function = self._function()
        limit = remote.job_time_limit_s(job)
        options = {**self.options, **({"timeout": limit} if limit > self.deployed_timeout_s else {})}
        if options:  # e.g. a job that needs longer than the deployed limit
            function = function.with_options(**options)
        try:
            call = await function.spawn.aio(payload_for(job))
        except (
            errors.ConnectionError,
            errors.ServiceError,
            errors.InternalError,
            errors.ResourceExhaustedError,
            OSError,
        ) as exc:
            raise RunnerUnavailable(f"Modal is unreachable or busy ({type(exc).__name__}: {exc})") from exc
        record = {"backend": BACKEND, "call_id": call.object_id, "function": self.function, "started_at": time.time()}
        await quietly(self.calls.put(job.run_id, record))
        log.info("run %s: Modal call %s on %s", job.run_id, call.object_id, self.function)
        return call, record

    async def _follow(
        self, job: EvalJob, call: Any, record: dict[str, Any], on_progress: ProgressCallback | None
    ) -> EvalResult:
        errors = self.modal.exception
        started_at = float(record.get("started_at") or time.time())
        give_up = remote.give_up_at(job, started_at, self.queue_timeout_s)
        where = f"on Modal {self.gpu}"
        noted: float | None = None
        while True:
            if on_progress is not None and (noted is None or time.monotonic() - noted >= remote.NOTE_EVERY_S):
                noted = time.monotonic()
                await on_progress(remote.waiting(where, started_at))
            remaining = give_up - time.time()
            if remaining <= 0:
                return await self._abandon(job, call, started_at)
            try:
                data = await call.get.aio(timeout=min(self.poll_s, remaining))
            except TimeoutError:  # builtin: still queued or running
                continue
            except errors.FunctionTimeoutError as exc:
                await quietly(self.calls.delete(job.run_id))
                return remote.failure(
                    job,
                    FailureKind.TIMEOUT,
                    "The Modal function ran past its time limit and was "
                    "stopped. Make the kernel faster, or test it on fewer shapes first.",
                    str(exc),
                )
            except errors.OutputExpiredError as exc:
                raise _Restart("the Modal call's output has expired") from exc
            except errors.NotFoundError as exc:
                raise _Restart(f"Modal does not know call {call.object_id}") from exc
            except (errors.AuthError, errors.PermissionDeniedError):
                raise  # not configured: run() says so
            except errors.InternalFailure as exc:
                await quietly(self.calls.delete(job.run_id))
                raise RunnerUnavailable(
                    f"Modal lost the container (preempted or failed: {exc}); the job goes back to the queue"
                ) from exc
            except (errors.ConnectionError, errors.ServiceError, errors.InternalError, OSError) as exc:
                log.warning("run %s: cannot reach Modal (%r); the call goes on, polling again", job.run_id, exc)
                continue
            except Exception as exc:  # raised by the remote side: RemoteError, ExecutionError, ...
                log.exception("run %s: the Modal call %s failed", job.run_id, call.object_id)
                await quietly(self.calls.delete(job.run_id))
                return remote.failure(
                    job,
                    FailureKind.HARNESS_ERROR,
                    f"The Modal runner failed while evaluating this submission. {remote.NOT_YOUR_FAULT}",
                    f"{type(exc).__name__}: {exc}",
                )
            return remote.result_from_answer(job, self.gpu, data, "Modal")

    async def _abandon(self, job: EvalJob, call: Any, started_at: float) -> EvalResult:
        """Cancel a call past its deadline, killing its container, and say so."""
        waited = (time.time() - started_at) / 60
        try:
            await call.cancel.aio(terminate_containers=True)
        except Exception as exc:
            log.warning("run %s: could not cancel Modal call %s: %r", job.run_id, call.object_id, exc)
        await quietly(self.calls.delete(job.run_id))
        return remote.failure(
            job,
            FailureKind.TIMEOUT,
            f"No Modal {self.gpu} finished this run within {waited:.0f} "
            "minutes (waiting for a free GPU included), so it was cancelled. Modal may be short of "
            f"{self.gpu}s right now: submit again later or pick another GPU.",
        )

    def _function(self) -> Any:
        if self._handle is None:  # lazy: no network until the first spawn
            self._handle = self.modal.Function.from_name(self.app, self.function)
        return self._handle

    def _not_configured(self, exc: Exception) -> str:
        errors = self.modal.exception
        if isinstance(exc, errors.NotFoundError):
            return (
                f"The Modal runner is not configured: the app {self.app!r} has no function {self.function} "
                "(deploy it with `kernelrank modal deploy`)"
            )
        return (
            "The Modal runner is not configured: Modal refused this worker's credentials (set "
            "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET for the worker, or run `modal token set`)"
        )

    async def backlog(self) -> int:
        """Inputs waiting inside Modal for this GPU type's function, for the queue position (0 when unknown)."""
        try:
            stats = await self._function().get_current_stats.aio()
        except Exception as exc:
            if not self._backlog_warned:
                log.warning("cannot read Modal's queue for %s: %r", self.function, exc)
                self._backlog_warned = True
            return 0
        self._backlog_warned = False
        return int(stats.backlog)

    async def close(self) -> None:
        """Calls in flight keep running: a restarted worker re-attaches to them."""
