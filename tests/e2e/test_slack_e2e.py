"""Slack end to end: a kernel submitted from Slack runs through NATS, the core and a CPU worker (the real
harness), and the verdict comes back into the thread; replies survive an adapter restart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from core.contracts.bus import Role
from runners.fake import FakeRunner
from tests.adapters.slack.slack_kit import CORRECT, fake_workspace, form_values, running_slack, settled
from tests.fakes.slack import FakeSlack, payloads


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with fake_workspace() as server:
        yield server


def text_of(params: dict) -> str:
    return json.dumps(params.get("blocks", []), ensure_ascii=False) + params.get("text", "")


def report_in(fake: FakeSlack, thread: str) -> list:
    return [
        c
        for c in fake.calls_to("chat.postMessage", thread_ts=thread)
        if "Submission #" in c.params["text"] and "queued" not in c.params["text"]
    ]


@pytest.mark.slow
async def test_a_kernel_from_slack_is_judged_and_ranked(local_runner, make_system, fake):
    system = await make_system(local_runner)
    async with running_slack(system.settings.nats_url, fake) as slack:
        # A mention carrying the kernel.
        mention = payloads.app_mention("<@U0KRBOT> ranked vectoradd", files=[fake.add_file("add.py", CORRECT)])
        await slack.sender.event(payloads.event_callback(mention))
        # The same through the form, by someone else.
        await slack.sender.command(
            payloads.slash_command("submit vectoradd", user="U0BOB", user_name="bob", response_url=fake.response_url())
        )
        (opened,) = await fake.wait_for("views.open")
        view = {**opened.params["view"], "id": "V0E2E", "hash": "1.h"}
        values = form_values(fake.add_file("bob.py", CORRECT, user="U0BOB"), mode=None)
        await slack.sender.interaction(payloads.view_submission(view, values, user="U0BOB", user_name="bob"))

        for _ in range(600):
            form_thread = next(
                (c.params["ts"] for c in fake.calls_to("chat.update") if "Submission #2" in c.params["text"]), None
            )
            if report_in(fake, mention["ts"]) and form_thread and report_in(fake, form_thread):
                break
            await asyncio.sleep(0.2)
        (by_mention,) = report_in(fake, mention["ts"])
        (by_form,) = report_in(fake, form_thread)
        for report, who in ((by_mention, "U0ALICE"), (by_form, "U0BOB")):
            words = text_of(report.params)
            assert report.params["text"].startswith(f"<@{who}>")
            assert "ranked passed" in words and "*Score*" in words and "µs" in words
            assert "95% CI" not in words  # the per-shape table: the author's
            shown_to = [c for c in fake.calls_to("chat.postEphemeral", user=who) if "95% CI" in text_of(c.params)]
            assert shown_to, f"{who} never saw the per-shape table"
        assert "New #1!" in text_of(by_mention.params) or "New #1!" in text_of(by_form.params)

        shown = fake.response_url("show")
        await slack.sender.command(payloads.slash_command("show vectoradd", response_url=shown))
        (board,) = await fake.wait_for("response_url", url=shown)
        assert "Ada Lovelace" in text_of(board.params) and "Bob" in text_of(board.params)


class GatedRunner(FakeRunner):
    """Runs only once the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def run(self, job, on_progress=None):
        await self.gate.wait()
        return await super().run(job, on_progress)


async def test_results_that_arrive_while_the_adapter_is_down_are_posted_once_when_it_is_back(on_bus, fake):
    runner = GatedRunner()
    system = await on_bus.make_system(runner)
    credentials = on_bus.credentials(Role.SLACK)
    mention = payloads.app_mention("<@U0KRBOT> ranked vectoradd", files=[fake.add_file("add.py", CORRECT)])
    async with running_slack(system.settings.nats_url, fake, credentials) as slack:
        await slack.sender.event(payloads.event_callback(mention))
        await fake.wait_for("chat.update")  # accepted; the run waits at the gate
    runner.gate.set()
    for _ in range(200):
        if system.store.stats().submissions == 1 and not system.store.unfinished_runs():
            break
        await asyncio.sleep(0.05)
    assert report_in(fake, mention["ts"]) == []  # nobody posted it meanwhile
    for _ in range(2):  # restarted twice: still one report
        async with running_slack(system.settings.nats_url, fake, credentials):
            await settled(system.service.bus, fake)  # the marker reply comes from the core
    (report,) = report_in(fake, mention["ts"])
    assert "ranked passed" in text_of(report.params)
