"""Every Slack command, run through the real system, and what Slack was asked to show in answer.

Each step must show the person something. With ``KERNELRANK_SLACK_TRANSCRIPT=docs/slack.md`` the
transcript replaces the part of that file between its transcript markers (``make`` is not needed:
``KERNELRANK_SLACK_TRANSCRIPT=docs/slack.md .venv/bin/python -m pytest tests/e2e/test_slack_transcript.py``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from tests.adapters.slack.slack_kit import CORRECT, RunningSlack, fake_workspace, form_values, running_slack, settled
from tests.core.test_manage import identity_archive
from tests.e2e.test_leaderboard_admin import raising_identity
from tests.fakes.slack import Call, FakeSlack, payloads
from tests.fakes.slack.transcript import SHOWN, markdown

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "harness"
START, END = "<!-- transcript:start -->", "<!-- transcript:end -->"


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    """The small vectoradd the harness tests use (quick on CPU), and a shipped problem with templates."""
    target = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", target / "vectoradd")
    shutil.copytree(ROOT / "problems" / "identity", target / "identity")
    shutil.copy(ROOT / "problems" / "utils.py", target / "utils.py")
    return target


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with fake_workspace() as server:
        yield server


async def until(check: Callable[[], bool], timeout_s: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the step did not finish")
        await asyncio.sleep(0.1)


def reported(fake: FakeSlack, since: int) -> bool:
    return any(c.method == "chat.postMessage" and "passed" in c.params.get("text", "") for c in fake.calls[since:])


@pytest.mark.slow
async def test_every_command_shows_something(local_runner, make_system, fake, tmp_path):
    system = await make_system(local_runner, admins=["slack:U0ALICE"], announce=["slack:C0NEWS"], scheduler_tick_s=0.2)
    steps: list[tuple[str, list[Call]]] = []
    async with running_slack(system.settings.nats_url, fake) as slack:

        async def step(title: str, act: Callable[[], Awaitable[None]], done: Callable[[int], bool]) -> None:
            since = len(fake.calls)
            await act()
            await until(lambda: done(since))
            await settled(slack.bus, fake)
            calls = [c for c in fake.calls[since:] if c.params.get("channel") != "C0MARKER"]
            assert any(c.method in SHOWN for c in calls), title
            steps.append((title, calls))

        def answered(since: int) -> bool:
            return any(c.method == "response_url" for c in fake.calls[since:])

        for text in ("help", "list", "task vectoradd", "template identity Triton"):
            await step(f"`/kernelrank {text}`", command(slack, text), answered)
        await step(
            "`/kernelrank submit ranked vectoradd`",
            command(slack, "submit ranked vectoradd"),
            lambda since: any(c.method == "views.open" for c in fake.calls[since:]),
        )
        view = {**fake.calls_to("views.open")[-1].params["view"], "id": "V0TRANSCRIPT", "hash": "1.h"}
        await step(
            "The form submitted with `vectoradd.py` attached (a correct kernel)",
            submit_form(slack, view),
            lambda since: reported(fake, since),
        )
        mention = payloads.app_mention("<@U0KRBOT> test vectoradd", files=[fake.add_file("add.py", CORRECT)])
        await step(
            "A message `@kernelrank test vectoradd` with `add.py` attached",
            lambda: slack.sender.event(payloads.event_callback(mention)),
            lambda since: reported(fake, since),
        )
        for text in (
            "show vectoradd",
            "mine vectoradd",
            "history vectoradd",
            "submission 1",
            "queue",
            "eval-code",
            "token",
            "stats",
            "rank vectoradd",
        ):
            await step(f"`/kernelrank {text}`", command(slack, text), answered)
        asking = payloads.event_callback(payloads.app_mention("<@U0KRBOT> show vectoradd CPU"))
        await step(
            "A message `@kernelrank show vectoradd CPU` in a channel",
            lambda: slack.sender.event(asking),
            lambda since: any(c.method == "chat.postMessage" for c in fake.calls[since:]),
        )
        problem = fake.add_file(
            "identity.tar.gz", identity_archive().content, user="U0BOB", mimetype="application/gzip"
        )
        event = payloads.event_callback(
            payloads.app_mention("<@U0KRBOT> admin create weekly", user="U0BOB", files=[problem])
        )
        await step(
            "A message `@kernelrank admin create weekly` with `identity.tar.gz` attached (by a participant: refused)",
            lambda: slack.sender.event(event),
            lambda since: any("Only admins" in str(c.params) for c in fake.calls[since:]),
        )
        broken = fake.add_file(
            "identity.tar.gz", raising_identity(tmp_path).content, user="U0ALICE", mimetype="application/gzip"
        )
        refused = payloads.event_callback(payloads.app_mention("<@U0KRBOT> admin create broken", files=[broken]))
        await step(
            "A message `@kernelrank admin create broken` with a problem whose reference raises attached (by an "
            "admin: its run refuses it, and nothing is created)",
            lambda: slack.sender.event(refused),
            lambda since: any("was not created" in str(c.params) for c in fake.calls[since:]),
        )
        await step(
            "`/kernelrank admin create weekly deadline=2099-01-01T18:00` (by an admin: a form for the "
            "problem's file and the GPUs)",
            command(slack, "admin create weekly deadline=2099-01-01T18:00"),
            lambda since: any(c.method == "views.open" for c in fake.calls[since:]),
        )
        view = {**fake.calls_to("views.open")[-1].params["view"], "id": "V0CREATE", "hash": "1.h"}
        await step(
            "The form submitted with `identity.tar.gz` attached and no GPU chosen (every GPU its problem runs on; "
            "its reference runs once on the worker, then it opens)",
            create_form(slack, view),
            lambda since: any("was created" in str(c.params) for c in fake.calls[since:]),
        )
        await step(
            '`/kernelrank admin challenge create "Week 1" leaderboards=weekly closes="2099-01-01 18:00"` (no '
            "announce= given: the news goes to KERNELRANK_ANNOUNCE, here #news)",
            command(slack, 'admin challenge create "Week 1" leaderboards=weekly closes="2099-01-01 18:00"'),
            lambda since: any(
                c.params.get("channel") == "C0NEWS" and "is open" in str(c.params) for c in fake.calls[since:]
            ),
        )
        for text in ("admin close weekly", "admin delete weekly", "admin delete weekly confirm=weekly"):
            await step(f"`/kernelrank {text}`", command(slack, text), answered)
    target = os.environ.get("KERNELRANK_SLACK_TRANSCRIPT")
    if target:
        write_between_markers(Path(target), markdown(steps))


def command(slack: RunningSlack, text: str) -> Callable[[], Awaitable[object]]:
    return lambda: slack.sender.command(payloads.slash_command(text, response_url=slack.fake.response_url()))


def submit_form(slack: RunningSlack, view: dict) -> Callable[[], Awaitable[object]]:
    values = form_values(slack.fake.add_file("vectoradd.py", CORRECT), mode="ranked")
    return lambda: slack.sender.interaction(payloads.view_submission(view, values))


def create_form(slack: RunningSlack, view: dict) -> Callable[[], Awaitable[object]]:
    problem = slack.fake.add_file("identity.tar.gz", identity_archive().content, mimetype="application/gzip")
    values = {
        "kr_problem": {"problem": payloads.file_value(problem)},
        "kr_create_gpus": {"gpus": payloads.multi_select_value([])},
        "kr_deadline": {"deadline": {"type": "plain_text_input", "value": "2099-01-01 18:00"}},
    }
    return lambda: slack.sender.interaction(payloads.view_submission(view, values))


def write_between_markers(path: Path, body: str) -> None:
    text = path.read_text()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{START}\n\n{body}\n{END}{tail}")
