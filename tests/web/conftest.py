"""A running kernelrank for the browser tests: NATS, the core, a worker (tests.e2e's ``make_system``) and the API
process on a free port, with two of Ada's submissions and one of Bob's stored and judged (``site``), or nothing
submitted yet and the real harness on CPU judging (``live_site``); and a real browser, with JavaScript or without."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest
from browser_kit import Browser, Site, missing

from runners.fake import FakeRunner
from runners.local import LocalRunner
from tests.e2e.api_kit import serving_api, token_of
from tests.e2e.conftest import make_system, problems  # noqa: F401  (a real core, NATS and worker)

KERNEL = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"
FASTER = "def custom_kernel(data):\n    a, b = data\n    return a.add(b)  # faster\n"


@pytest.fixture
def browser() -> Iterator[Browser]:
    if reason := missing():
        pytest.skip(f"no browser for the web tests: {reason}")
    running = Browser()
    yield running
    running.close()


@pytest.fixture
def browser_without_js() -> Iterator[Browser]:
    if reason := missing():
        pytest.skip(f"no browser for the web tests: {reason}")
    running = Browser(javascript=False)
    yield running
    running.close()


@pytest.fixture
async def live_site(make_system) -> AsyncIterator[Site]:  # noqa: F811
    """Nothing submitted yet; the real harness judges on this CPU."""
    async with _empty_site(make_system, LocalRunner()) as site:
        yield site


@pytest.fixture
async def slow_site(make_system) -> AsyncIterator[Site]:  # noqa: F811
    """Nothing submitted yet; each run takes three seconds, with a progress report each second."""
    async with _empty_site(make_system, FakeRunner(delay_s=3, progress_steps=3)) as site:
        yield site


@pytest.fixture
async def strict_site(make_system) -> AsyncIterator[Site]:  # noqa: F811
    """Nothing submitted yet; one run a minute each."""
    async with _empty_site(make_system, FakeRunner(), rate_limit=1) as site:
        yield site


@contextlib.asynccontextmanager
async def _empty_site(make_system, runner, **settings) -> AsyncIterator[Site]:  # noqa: F811
    system = await make_system(runner, max_source_bytes=8192, **settings)
    tokens = {user: await token_of(system, user) for user in ("ada", "bob")}
    people = {user: system.store.find_person("discord", user) for user in ("ada", "bob")}
    async with serving_api(system.settings, system.settings.nats_url) as url:
        yield Site(url, system, tokens, {"ada": [], "bob": []}, people)


@pytest.fixture
async def site(make_system) -> AsyncIterator[Site]:  # noqa: F811
    system = await make_system(FakeRunner())
    submitted: dict[str, list[int]] = {"ada": [], "bob": []}
    for user, source in (("ada", KERNEL), ("bob", KERNEL + "# bob\n"), ("ada", FASTER)):
        accepted = await system.submit(user, source, leaderboard="vectoradd")
        await system.finals({run["run_id"] for run in accepted.data["runs"]})
        submitted[user].append(accepted.data["submission_id"])
    tokens = {user: await token_of(system, user) for user in ("ada", "bob")}
    people = {user: system.store.find_person("discord", user) for user in ("ada", "bob")}
    async with serving_api(system.settings, system.settings.nats_url) as url:
        yield Site(url, system, tokens, submitted, people)
