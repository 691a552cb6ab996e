"""The Slack adapter over HTTP, as Slack calls it: signed requests to the real Bolt app in HTTP mode, the
real core and a worker behind it on a real NATS, and the fake Slack recording the adapter's Web API calls."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from runners.fake import FakeRunner
from tests.adapters.slack.slack_kit import CORRECT, RunningSlack, fake_workspace, form_values, running_slack
from tests.fakes.slack import FakeSlack, payloads


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with fake_workspace() as server:
        yield server


@pytest.fixture
async def slack(make_system, fake) -> AsyncIterator[RunningSlack]:
    system = await make_system(FakeRunner())
    async with running_slack(system.settings.nats_url, fake) as running:
        running.system = system
        yield running


def blocks_text(params: dict) -> str:
    return json.dumps(params.get("blocks", []), ensure_ascii=False) + params.get("text", "")


async def slash(slack: RunningSlack, text: str, **fields) -> dict:
    """Run a slash command; the answer that came back through its response_url."""
    url = slack.fake.response_url()
    status, body = await slack.sender.command(payloads.slash_command(text, response_url=url, **fields))
    assert status == 200 and body == ""  # acknowledged at once, with nothing shown yet
    calls = await slack.fake.wait_for("response_url", url=url)
    return calls[-1].params


async def open_form(slack: RunningSlack, text: str = "submit") -> dict:
    await slack.sender.command(payloads.slash_command(text, response_url=slack.fake.response_url()))
    (opened,) = await slack.fake.wait_for("views.open")
    return {**opened.params["view"], "id": "V0FORM1", "hash": "1700000000.h4sh"}


# ----- request signing ---------------------------------------------------------------------------------------


async def test_forged_and_stale_requests_are_refused(slack):
    form = payloads.slash_command("list", response_url=slack.fake.response_url())
    assert (await slack.sender.command(form, secret="not-the-secret"))[0] == 401
    assert (await slack.sender.command(form, timestamp=int(time.time()) - 301))[0] == 401
    unsigned = await slack.sender.post(
        "command=%2Fkernelrank&text=list", "application/x-www-form-urlencoded", headers={"X-Slack-Signature": ""}
    )
    assert unsigned[0] == 401
    assert slack.fake.calls_to("response_url") == []
    assert (await slack.sender.command(form, timestamp=int(time.time()) - 200))[0] == 200


async def test_slack_can_verify_the_request_url(slack):
    challenge = {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "type": "url_verification",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    }
    status, body = await slack.sender.event(challenge)
    assert status == 200 and challenge["challenge"] in body
    assert (await slack.sender.event(challenge, secret="wrong"))[0] == 401


# ----- the slash command ---------------------------------------------------------------------------------


async def test_help_and_unknown_subcommands_print_the_usage_privately(slack):
    shown = await slash(slack, "help")
    assert shown["response_type"] == "ephemeral"
    for line in (
        "/kernelrank show LEADERBOARD [GPU]",
        "/kernelrank eval-code",
        "/kernelrank queue [GPU]",
        "/kernelrank token",
    ):
        assert line in blocks_text(shown)
    unknown = await slash(slack, "frobnicate now")
    assert "`/kernelrank frobnicate` is not a command" in blocks_text(unknown)
    assert "/kernelrank submission ID" in blocks_text(unknown)
    missing = await slash(slack, "show")
    assert "needs a leaderboard" in blocks_text(missing)


async def test_queries_go_to_the_core_and_come_back_through_the_response_url(slack):
    listed = await slash(slack, "list")
    assert listed["response_type"] == "ephemeral" and listed["replace_original"] is False
    assert "vectoradd" in blocks_text(listed) and "```" in blocks_text(listed)
    task = await slash(slack, "task vectoradd")
    assert "Task vectoradd" in blocks_text(task)
    wrong = await slash(slack, "show nosuchboard")
    assert "There is no leaderboard" in blocks_text(wrong) and "❌" in blocks_text(wrong)
    for text in ("queue", "token", "eval-code"):  # answered by the core (or its refusal), privately
        assert (await slash(slack, text))["response_type"] == "ephemeral"
    (lookup,) = slack.fake.calls_to("users.info")  # the name is asked once and cached
    assert lookup.params["user"] == "U0ALICE"


async def test_submit_opens_a_form_prefilled_from_the_words(slack):
    view = await open_form(slack, "submit test vectoradd CPU")
    assert view["callback_id"] == "kr_submit" and json.loads(view["private_metadata"])["channel"] == "C0GENERAL"
    blocks = {b["block_id"]: b for b in view["blocks"] if "block_id" in b}
    assert blocks["kr_file"]["element"]["type"] == "file_input"
    assert blocks["kr_file"]["element"]["max_files"] == 1
    assert blocks["kr_leaderboard"]["element"]["initial_option"]["value"] == "vectoradd"
    assert blocks["kr_gpus.vectoradd"]["element"]["initial_options"][0]["value"] == "CPU"
    assert blocks["kr_mode"]["element"]["initial_option"]["value"] == "test"


# ----- the form -------------------------------------------------------------------------------------------


async def test_the_form_keeps_itself_open_with_a_message_when_the_file_will_not_do(slack):
    view = await open_form(slack)
    cases = [
        (None, "Attach one kernel file"),
        (slack.fake.add_file("notes.txt", b"hello"), "not a kernel file"),
        (slack.fake.add_file("big.py", b"x = 1\n", size=10 * 1024 * 1024), "the limit is 256 KiB"),
    ]
    for file, words in cases:
        status, body = await slack.sender.interaction(payloads.view_submission(view, form_values(file)))
        answer = json.loads(body)
        assert status == 200 and answer["response_action"] == "errors" and words in answer["errors"]["kr_file"]
    assert slack.fake.calls_to("files.info") == [] and slack.fake.calls_to("file.download") == []


async def update_saying(slack, text: str, timeout_s: float = 30.0):
    """The first ``chat.update`` whose blocks say ``text``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        for call in slack.fake.calls_to("chat.update"):
            if text in blocks_text(call.params):
                return call
        assert asyncio.get_running_loop().time() < deadline, f"no chat.update said {text!r}"
        await asyncio.sleep(0.05)


async def test_a_form_submission_opens_a_thread_with_the_acceptance(slack):
    view = await open_form(slack)
    file = slack.fake.add_file("kernel.py", CORRECT)
    status, body = await slack.sender.interaction(payloads.view_submission(view, form_values(file)))
    assert status == 200 and body == ""  # the form closes
    (download,) = await slack.fake.wait_for("file.download")
    assert download.auth == "bot"
    placeholder = (await slack.fake.wait_for("chat.postMessage"))[0]
    assert placeholder.params["channel"] == "C0GENERAL" and "thread_ts" not in placeholder.params
    accepted = await update_saying(slack, "Submission #1 to vectoradd")  # a progress update may come first
    assert "<@U0ALICE>" in blocks_text(accepted.params)
    report = (await slack.fake.wait_for("chat.postMessage", count=3, timeout_s=30))[-1]
    assert report.params["thread_ts"] == accepted.params["ts"] and "test passed" in blocks_text(report.params)
    (stored,) = slack.system.store.history("vectoradd", 1, None, 5)
    assert stored.mode == "test"
    # The same form submitted twice (a double click) is one submission.
    await slack.sender.interaction(payloads.view_submission(view, form_values(file)))
    await slack.fake.wait_for("file.download", count=2)
    assert slack.system.store.stats().submissions == 1


async def test_choosing_a_leaderboard_narrows_the_gpu_choices(slack):
    view = await open_form(slack)
    action = {
        "type": "static_select",
        "action_id": "kr_pick_leaderboard",
        "block_id": "kr_leaderboard",
        "selected_option": {"text": {"type": "plain_text", "text": "vectoradd"}, "value": "vectoradd"},
    }
    state = {"values": form_values(None, mode="benchmark")}
    status, _ = await slack.sender.interaction(payloads.block_actions(action, view={**view, "state": state}))
    assert status == 200
    (updated,) = await slack.fake.wait_for("views.update")
    assert updated.params["view_id"] == "V0FORM1" and updated.params["hash"] == "1700000000.h4sh"
    blocks = {b["block_id"]: b for b in updated.params["view"]["blocks"] if "block_id" in b}
    assert [o["value"] for o in blocks["kr_gpus.vectoradd"]["element"]["options"]] == ["CPU"]
    assert blocks["kr_mode"]["element"]["initial_option"]["value"] == "benchmark"


# ----- mentions and direct messages ---------------------------------------------------------------------


async def test_a_mention_with_a_file_submits_and_answers_in_its_thread(slack):
    file = slack.fake.add_file("vectoradd.py", CORRECT)
    mention = payloads.app_mention("<@U0KRBOT> test vectoradd CPU", files=[file])
    envelope = payloads.event_callback(mention, event_id="Ev0MENTION1")
    assert (await slack.sender.event(envelope))[0] == 200
    (info,) = await slack.fake.wait_for("files.info")
    assert info.params["file"] == file["id"]
    first = (await slack.fake.wait_for("chat.postMessage"))[0]
    assert first.params["thread_ts"] == mention["ts"] and "is submitting `vectoradd.py`" in first.params["text"]
    accepted = (await slack.fake.wait_for("chat.update"))[0]
    assert accepted.params["channel"] == "C0GENERAL" and "queued as #1 on CPU" in blocks_text(accepted.params)
    # Slack retries an event it thinks was not acknowledged in time: the retry changes nothing.
    assert (await slack.sender.event(envelope, retry_num=1))[0] == 200
    report = (await slack.fake.wait_for("chat.postMessage", count=3, timeout_s=30))[-1]
    assert report.params["thread_ts"] == mention["ts"] and "test passed" in blocks_text(report.params)
    assert len(slack.fake.calls_to("files.info")) == 1 and slack.system.store.stats().submissions == 1


async def test_a_file_slack_sends_without_details_is_looked_up(slack):
    file = slack.fake.add_file("shared.py", CORRECT)  # as in a Slack Connect channel
    stub = {
        "id": file["id"],
        "file_access": "check_file_info",
        "created": file["created"],
        "timestamp": file["timestamp"],
        "user": "U0ALICE",
    }
    await slack.sender.event(payloads.event_callback(payloads.app_mention("<@U0KRBOT> test vectoradd", files=[stub])))
    accepted = (await slack.fake.wait_for("chat.update"))[0]
    assert "test run of shared.py queued as #" in blocks_text(accepted.params)


async def test_mentions_without_a_file_are_commands(slack):
    channel_event = payloads.app_mention("<@U0KRBOT> list")
    await slack.sender.event(payloads.event_callback(channel_event))
    (posted,) = await slack.fake.wait_for("chat.postMessage")
    assert posted.params["thread_ts"] == channel_event["ts"] and "vectoradd" in blocks_text(posted.params)
    for text, words in (
        ("<@U0KRBOT> mine vectoradd", "You have not submitted yet"),
        ("<@U0KRBOT> hello there", "is not a command"),
        ("<@U0KRBOT> submit vectoradd", "Attach your kernel file"),
    ):
        before = len(slack.fake.calls_to("chat.postEphemeral"))
        await slack.sender.event(payloads.event_callback(payloads.app_mention(text)))
        private = (await slack.fake.wait_for("chat.postEphemeral", count=before + 1))[-1]
        assert private.params["user"] == "U0ALICE" and words in blocks_text(private.params)
    assert len(slack.fake.calls_to("chat.postMessage")) == 1  # private answers stayed private


async def test_a_file_sent_to_the_app_directly_is_submitted_there(slack):
    file = slack.fake.add_file("k.py", CORRECT)
    await slack.sender.event(payloads.event_callback(payloads.direct_message("vectoradd test", files=[file])))
    accepted = (await slack.fake.wait_for("chat.update"))[0]
    assert accepted.params["channel"] == "D0ALICE" and "Submission #1" in blocks_text(accepted.params)


async def test_bad_files_and_refusals_get_one_private_sentence(slack):
    cases = [
        (slack.fake.add_file("k.py", b"\xff\xfe\x00\x00"), "vectoradd", "is not UTF-8"),
        (slack.fake.add_file("k.py", CORRECT), "nosuchboard", "There is no leaderboard 'nosuchboard'"),
        (slack.fake.add_file("k.py", CORRECT, mode="hidden_by_limit"), "vectoradd", "Slack hides k.py"),
        (slack.fake.add_file("a.py", CORRECT), "vectoradd two", "does not offer two"),
    ]
    for index, (file, words, expected) in enumerate(cases, start=1):
        await slack.sender.event(payloads.event_callback(payloads.app_mention(f"<@U0KRBOT> {words}", files=[file])))
        private = (await slack.fake.wait_for("chat.postEphemeral", count=index))[-1]
        assert expected in blocks_text(private.params), blocks_text(private.params)
    slack.fake.fail("files.info", "missing_scope")
    await slack.sender.event(
        payloads.event_callback(
            payloads.app_mention("<@U0KRBOT> vectoradd", files=[slack.fake.add_file("k.py", CORRECT)])
        )
    )
    private = (await slack.fake.wait_for("chat.postEphemeral", count=len(cases) + 1))[-1]
    assert "files:read" in blocks_text(private.params)
    # The "submitting" line of each refused submission is taken back; only private answers remain.
    assert len(slack.fake.calls_to("chat.delete")) == len(slack.fake.calls_to("chat.postMessage")) == 2
    assert slack.fake.messages == {} and slack.system.store.stats().submissions == 0


# ----- buttons under a report ----------------------------------------------------------------------------


async def test_report_buttons_show_the_submission_and_the_leaderboard(slack):
    file = slack.fake.add_file("vectoradd.py", CORRECT)
    await slack.sender.event(payloads.event_callback(payloads.app_mention("<@U0KRBOT> ranked vectoradd", files=[file])))
    report = (await slack.fake.wait_for("chat.postMessage", count=3, timeout_s=30))[-1]
    (actions,) = [b for b in report.params["blocks"] if b["type"] == "actions"]
    buttons = {e["action_id"]: e for e in actions["elements"]}
    message = {
        "type": "message",
        "ts": "1700000000.000300",
        "thread_ts": "1700000000.000100",
        "blocks": report.params["blocks"],
        "text": report.params["text"],
    }
    for action_id, words in (("kr_view_submission", "vectoradd.py by Ada Lovelace"), ("kr_show_board", "Ada Lovelace")):
        url = slack.fake.response_url(action_id)
        await slack.sender.interaction(
            payloads.block_actions(
                {**buttons[action_id], "block_id": "kr_report_actions"}, message=message, response_url=url
            )
        )
        (answer,) = await slack.fake.wait_for("response_url", url=url)
        assert answer.params["response_type"] == "ephemeral"
        assert words in blocks_text(answer.params)
    again = {**buttons["kr_submit_again"], "block_id": "kr_report_actions"}
    await slack.sender.interaction(
        payloads.block_actions(again, message=message, response_url=slack.fake.response_url())
    )
    (opened,) = await slack.fake.wait_for("views.open")
    assert json.loads(opened.params["view"]["private_metadata"]) == {
        "channel": "C0GENERAL",
        "thread": "1700000000.000100",
    }


async def test_with_kernelrank_down_people_are_told_so(nats_url, fake):
    async with running_slack(nats_url, fake) as slack:  # not even the core's streams exist yet
        shown = await slash(slack, "list")
        assert "kernelrank is not running" in blocks_text(shown)
