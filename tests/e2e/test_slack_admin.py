"""Leaderboards managed from Slack: the real Bolt app against the fake Slack Web API, a real core and a CPU worker
that runs the problem's reference. A mention carries the problem's archive (``@kernelrank admin create ...``), or
``/kernelrank admin create NAME`` opens a form with a file input and the GPU multi-select; close and delete are
slash commands; a participant is refused in one sentence."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tests.adapters.slack.slack_kit import fake_workspace, running_slack
from tests.core.test_manage import cpu_only_identity, identity_archive
from tests.fakes.slack import FakeSlack, payloads


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with fake_workspace() as server:
        yield server


def said(fake: FakeSlack, words: str) -> list:
    return [
        c
        for c in fake.calls
        if words in json.dumps(c.params.get("blocks", []), ensure_ascii=False) + str(c.params.get("text", ""))
    ]


async def until_said(fake: FakeSlack, words: str, timeout_s: float = 60) -> list:
    for _ in range(int(timeout_s * 5)):
        if found := said(fake, words):
            return found
        await asyncio.sleep(0.2)
    raise AssertionError([(c.method, str(c.params)[:200]) for c in fake.calls][-5:])


async def slash(slack, fake: FakeSlack, text: str, user: str = "U0ALICE") -> str:
    url = fake.response_url()
    await slack.sender.command(payloads.slash_command(text, user=user, user_name=user.lower(), response_url=url))
    (answer,) = await fake.wait_for("response_url", url=url)
    return json.dumps(answer.params.get("blocks", []), ensure_ascii=False) + str(answer.params.get("text", ""))


@pytest.mark.slow
async def test_admin_create_by_mention_with_the_archive_then_close_and_delete_with_permission_checks(
    local_runner, make_system, fake
):
    system = await make_system(local_runner, admins=["slack:U0ALICE"])
    problem = identity_archive()
    async with running_slack(system.settings.nats_url, fake) as slack:
        bob = payloads.app_mention(
            "<@U0KRBOT> admin create weekly",
            user="U0BOB",
            files=[fake.add_file(problem.name, problem.content, user="U0BOB", mimetype="application/gzip")],
        )
        await slack.sender.event(payloads.event_callback(bob))
        await until_said(fake, "Only admins and leaderboard creators can use `admin create`")

        mention = payloads.app_mention(
            "<@U0KRBOT> admin create weekly deadline=2099-01-01T12:00",
            files=[fake.add_file(problem.name, problem.content, mimetype="application/gzip")],
        )
        await slack.sender.event(payloads.event_callback(mention))
        await until_said(fake, "its reference now runs once in test mode on CPU")
        [ready] = await until_said(fake, "(version 1) was created")
        assert ready.params.get("thread_ts") == mention["ts"] and "2099-01-01 12:00" in str(ready.params)

        assert "Only admins and leaderboard creators" in await slash(slack, fake, "admin close weekly", "U0BOB")
        assert "ranked submissions are refused" in await slash(slack, fake, "admin close weekly")
        assert "--confirm weekly" in await slash(slack, fake, "admin delete weekly")
        assert "its history is kept" in await slash(slack, fake, "admin delete weekly confirm=weekly")
        assert "no leaderboard" in await slash(slack, fake, "show weekly")


async def create_by_form(
    slack,
    fake: FakeSlack,
    text: str,
    problem_file: dict,
    gpus: list[str],
    user: str = "U0ALICE",
    deadline: str | None = None,
) -> dict:
    """``/kernelrank TEXT`` by ``user``, then the form it opened, submitted with the file, ``gpus`` and ``deadline``
    (as Slack sends a text input: its value, what was typed or left of the pre-filled one); the view."""
    opened_before = len(fake.calls_to("views.open"))
    await slack.sender.command(
        payloads.slash_command(text, user=user, user_name=user.lower(), response_url=fake.response_url())
    )
    for _ in range(300):
        if len(fake.calls_to("views.open")) > opened_before:
            break
        await asyncio.sleep(0.1)
    view = {**fake.calls_to("views.open")[-1].params["view"], "id": f"V0{user}", "hash": "1.h"}
    values = {
        "kr_problem": {"problem": payloads.file_value(problem_file)},
        "kr_create_gpus": {"gpus": payloads.multi_select_value(gpus)},
        "kr_deadline": {"deadline": {"type": "plain_text_input", "value": deadline}},
    }
    await slack.sender.interaction(payloads.view_submission(view, values, user=user, user_name=user.lower()))
    return view


@pytest.mark.slow
async def test_admin_create_by_the_slash_command_opens_a_form_with_the_file_and_the_gpu_multi_select(
    local_runner, make_system, fake, tmp_path
):
    system = await make_system(local_runner, pools=["CPU", "H100"], admins=["slack:U0ALICE"])
    problem, cpu_only = identity_archive(), cpu_only_identity(tmp_path)
    async with running_slack(system.settings.nats_url, fake) as slack:
        bob_file = fake.add_file(problem.name, problem.content, user="U0BOB", mimetype="application/gzip")
        await create_by_form(slack, fake, "admin create weekly", bob_file, ["CPU"], user="U0BOB")
        await until_said(fake, "Only admins and leaderboard creators can use `admin create`")
        assert not system.store.leaderboard_name_taken("weekly")

        view = await create_by_form(
            slack,
            fake,
            "admin create weekly deadline=2099-01-01T12:00",
            fake.add_file(cpu_only.name, cpu_only.content, mimetype="application/gzip"),
            [],  # left empty: the core picks the pools its problem runs on (the CPU alone here)
            deadline="2099-01-01 12:00",
        )
        blocks = {b.get("block_id"): b for b in view["blocks"]}
        menu = blocks["kr_create_gpus"]["element"]
        assert menu["type"] == "multi_static_select" and [o["value"] for o in menu["options"]] == ["CPU", "H100"]
        assert blocks["kr_problem"]["element"]["type"] == "file_input" and blocks["kr_create_gpus"].get("optional")
        assert blocks["kr_deadline"]["element"]["initial_value"] == "2099-01-01T12:00"
        await until_said(fake, "its reference now runs once in test mode on CPU")
        [ready] = await until_said(fake, "(version 1) was created")
        assert ready.params.get("channel") == "C0GENERAL" and "runs on CPU until 2099-01-01 12:00" in str(ready.params)
