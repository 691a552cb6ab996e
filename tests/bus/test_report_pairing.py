"""Which worker's report counts for a run (``core.service.worker_reports``), on a real nats-server.

The run book knows a run's worker once the core has handled its ``started`` event; before that (the progress
consumer lags, or the core restarted) the worker's own start must be in EVENTS. Workers here have their own
keys, as ``kernelrank workers add`` hands them out.
"""

from __future__ import annotations

import pytest

from core.contracts import signing
from core.contracts.bus import Bus, Role
from core.contracts.config import ConfigError
from core.contracts.credentials import BusCredentials
from core.contracts.messages import RunProgress, RunResult
from core.service.runs import RunBook
from core.service.worker_reports import ReportCheck
from harness.result import EvalResult, Mode, Progress, Status
from runners.worker import check_credentials

SECRET = b"the core's secret"
RUN = "run-1"


def attempt_key(attempt: int = 1) -> str:
    """What the core hands the worker it grants this attempt (``core.service.dispatch``)."""
    return signing.attempt_key(signing.run_key(SECRET, RUN), attempt)


def credentials(name: str) -> BusCredentials:
    return BusCredentials(Role.WORKER, user=name, password="p", key=signing.worker_key(SECRET, name), pools=("CPU",))


def result(worker: str, attempt: int = 1) -> RunResult:
    passed = EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="identity")
    return RunResult(RUN, 1, "CPU", passed, worker=worker, attempts=attempt)


def started(worker: str, attempt: int = 1) -> RunProgress:
    return RunProgress(RUN, 1, "CPU", Progress(stage="started"), attempt=attempt, worker=worker)


@pytest.fixture
async def buses(bus: Bus, nats_url: str):
    """The core's bus (``bus``, with the streams) and two workers' (an open server takes any user)."""
    workers = {name: await Bus.connect(nats_url, name, credentials(name)) for name in ("w-a", "w-b")}
    yield workers
    for worker in workers.values():
        await worker.close()


async def signed_result(worker: Bus, report: RunResult) -> RunResult:
    """The result as the worker's bus signs it, read back as the core would."""
    await worker.publish_result(report, attempt_key(report.attempts))
    stored = await worker.last_result(RUN)
    assert stored is not None
    return stored


async def test_a_result_counts_from_the_worker_whose_start_is_in_events_and_no_other(bus: Bus, buses) -> None:
    check = ReportCheck(SECRET, RunBook(), bus, worker_keys=True)
    key = attempt_key()
    await buses["w-a"].publish_progress(started("w-a"), key, confirm=True)
    assert not await check.result_counts(await signed_result(buses["w-b"], result("w-b")))  # never started it
    assert await check.result_counts(await signed_result(buses["w-a"], result("w-a")))  # the book knows nothing yet
    assert not await check.result_counts(await signed_result(buses["w-a"], result("w-a", attempt=2)))


async def test_once_the_core_saw_a_start_another_worker_cannot_claim_that_delivery(bus: Bus, buses) -> None:
    runs = RunBook()
    check = ReportCheck(SECRET, runs, bus, worker_keys=True)
    key = attempt_key()
    await buses["w-a"].publish_progress(started("w-a"), key, confirm=True)
    a_started = signing.sign(started("w-a"), check.key(RUN, "w-a", 1))
    assert check.progress_counts(a_started)
    runs.attempt_started(RUN, 1, "w-a")
    b_started = signing.sign(started("w-b"), check.key(RUN, "w-b", 1))
    assert not check.progress_counts(b_started)  # a second start of the same delivery
    await buses["w-b"].publish_progress(started("w-b"), key, confirm=True)  # its own start in EVENTS changes nothing
    assert not await check.result_counts(await signed_result(buses["w-b"], result("w-b")))
    assert await check.result_counts(await signed_result(buses["w-a"], result("w-a")))


async def test_a_report_signed_with_the_attempt_key_alone_does_not_count_where_workers_have_keys(bus: Bus) -> None:
    check = ReportCheck(SECRET, RunBook(), bus, worker_keys=True)
    assert not check.signed(signing.sign(result("w-a"), attempt_key()), "result")
    open_bus = ReportCheck(SECRET, RunBook(), bus, worker_keys=False)  # no worker has a key there
    assert open_bus.signed(signing.sign(result("w-a"), attempt_key()), "result")
    assert not open_bus.signed(signing.sign(result("w-a"), signing.run_key(SECRET, RUN)), "result")  # no attempt's
    assert not open_bus.signed(signing.sign(result("w-a", attempt=2), attempt_key(1)), "result")  # another attempt


def test_a_worker_refuses_credentials_it_cannot_serve_with() -> None:
    check_credentials(credentials("w-a"), "CPU")
    check_credentials(BusCredentials(Role.WORKER), "CPU")  # an open bus: nothing to check
    with pytest.raises(ConfigError, match="was issued for CPU, not H100"):
        check_credentials(credentials("w-a"), "H100")
    with pytest.raises(ConfigError, match="no signing key"):
        check_credentials(BusCredentials(Role.WORKER, user="w-a", password="p"), "CPU")
