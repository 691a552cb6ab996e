"""What people type after the slash command or in a mention, read as commands."""

from __future__ import annotations

import pytest

from adapters.slack.grammar import SUBCOMMANDS, clean, parse, parse_submit, usage
from core.contracts.errors import UserError
from core.contracts.messages import CommandKind

CMD = "/kernelrank"


@pytest.mark.parametrize(
    ("text", "kind", "args"),
    [
        ("list", CommandKind.LIST, {}),
        ("show vectoradd", CommandKind.SHOW, {"leaderboard": "vectoradd"}),
        ("SHOW vectoradd H100", CommandKind.SHOW, {"leaderboard": "vectoradd", "gpu": "H100"}),
        ("show vectoradd gpu=H100", CommandKind.SHOW, {"leaderboard": "vectoradd", "gpu": "H100"}),
        ("mine --gpu A100-80GB vectoradd", CommandKind.MINE, {"leaderboard": "vectoradd", "gpu": "A100-80GB"}),
        ("history matmul", CommandKind.HISTORY, {"leaderboard": "matmul"}),
        ("task matmul", CommandKind.TASK, {"leaderboard": "matmul"}),
        ("template matmul Triton", CommandKind.TEMPLATE, {"leaderboard": "matmul", "lang": "Triton"}),
        ("submission #42", CommandKind.SUBMISSION, {"id": "#42"}),
        ("queue", CommandKind.QUEUE, {}),
        ("queue H100", CommandKind.QUEUE, {"gpu": "H100"}),
        ("eval-code", CommandKind.EVAL_CODE, {}),
        ("token", CommandKind.TOKEN, {}),
        ("token list", CommandKind.TOKEN, {"action": "list"}),
        ("token revoke kr_AbCdEfGh1", CommandKind.TOKEN, {"action": "revoke", "prefix": "kr_AbCdEfGh1"}),
        ("stats", CommandKind.STATS, {}),
        # a reason or a note is a sentence: the words after the other arguments, no quotes needed
        (
            "report #12 reads the answer from a file",
            CommandKind.REPORT,
            {"id": "#12", "reason": "reads the answer from a file"},
        ),
        ("report 12 reason=too fast", CommandKind.REPORT, {"id": "12", "reason": "too fast"}),
        ("admin review", CommandKind.REVIEW, {}),
        ("admin review 12 cheat copies it", CommandKind.REVIEW, {"id": "12", "decide": "cheat", "note": "copies it"}),
        ("<@U0KRBOT> show vectoradd", CommandKind.SHOW, {"leaderboard": "vectoradd"}),
        # quoted like a shell: a time as the errors ask for it, a reason of several words, Slack's curly quotes
        (
            'admin update weekly deadline="2026-12-01 18:00" --opens "2026-11-30 09:00"',
            CommandKind.BOARD_UPDATE,
            {"leaderboard": "weekly", "deadline": "2026-12-01 18:00", "opens": "2026-11-30 09:00"},
        ),
        (
            "admin ban slack:U1 \u201cspams the queue\u201d",
            CommandKind.BAN,
            {"person": "slack:U1", "reason": "spams the queue"},
        ),
        (
            "admin invalidate 12 'reads the answer' ",
            CommandKind.INVALIDATE,
            {"id": "12", "reason": "reads the answer"},
        ),
        ("report 12 it doesn't check", CommandKind.REPORT, {"id": "12", "reason": "it doesn't check"}),
    ],
)
def test_subcommands_become_commands_with_named_arguments(text, kind, args):
    invocation = parse(text, CMD)
    assert invocation.sub.kind is kind
    assert invocation.args == args


def test_help_and_empty_text_are_help():
    assert parse("", CMD).sub.name == "help"
    assert parse("  help ", CMD).sub.name == "help"
    assert parse("<@U0KRBOT>", CMD).sub.kind is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("frobnicate", "`/kernelrank frobnicate` is not a command"),
        ("show", "needs a leaderboard"),
        ("submission", "needs a submission id"),
        ("show a b 5 1 2 c", "Too many words"),  # leaderboard, GPU, limit, round, page: then one too many
        ("show vectoradd colour=red", "`colour` is not an option of show"),
        ("show vectoradd --gpu", "needs a value"),
        ('admin update weekly deadline="2026-12-01 18:00', 'A " opens quoted words that never close'),
    ],
)
def test_mistakes_say_what_is_wrong_and_how_to_write_it(text, words):
    with pytest.raises(UserError) as caught:
        parse(text, CMD)
    assert words in str(caught.value)


def test_private_subcommands_are_the_registry_private_ones_and_help():
    from core.contracts.registry import COMMANDS

    assert {s.name for s in SUBCOMMANDS.values() if s.private} == {c.name for c in COMMANDS if c.private} | {"help"}


@pytest.mark.parametrize(
    ("words", "found"),
    [
        ([], {}),
        (["ranked", "vectoradd", "H100"], {"mode": "ranked", "leaderboard": "vectoradd", "gpu": ["H100"]}),
        (["vectoradd", "H100", "test"], {"mode": "test", "leaderboard": "vectoradd", "gpu": ["H100"]}),
        (["vectoradd", "H100,A100", "L4"], {"leaderboard": "vectoradd", "gpu": ["H100", "A100", "L4"]}),
        (
            ["BENCHMARK", "leaderboard=matmul", "--gpu", "H100"],
            {"mode": "benchmark", "leaderboard": "matmul", "gpu": ["H100"]},
        ),
        (["gpu=H100", "matmul", "mode=profile"], {"mode": "profile", "leaderboard": "matmul", "gpu": ["H100"]}),
        (["ranked", "test"], {"mode": "ranked", "leaderboard": "test"}),  # one mode; the next word is the leaderboard
        # the spellings Slack took before submit followed the registry: aliases and short names
        (["lb=matmul", "g=H100", "m=TEST"], {"mode": "test", "leaderboard": "matmul", "gpu": ["H100"]}),
        (["problem=matmul", "gpus=H100,L4"], {"leaderboard": "matmul", "gpu": ["H100", "L4"]}),
        (["leaderboard_name=matmul", "-l", "vectoradd", "-g", "A100"], {"leaderboard": "vectoradd", "gpu": ["A100"]}),
    ],
)
def test_submit_words_in_any_order(words, found):
    assert parse_submit(words) == found


def test_submit_rejects_unknown_options():
    with pytest.raises(UserError, match="not an option of submit"):
        parse_submit(["speed=11"])


def test_slack_markup_is_undone_before_reading():
    assert (
        clean("<@U0KRBOT|kernelrank> show &lt;vec&gt; &amp; <#C0123|general> <https://x.io|x.io>")
        == "show <vec> & x.io"
    )
    assert parse("<!here> show vectoradd", CMD).args == {"leaderboard": "vectoradd"}


def test_usage_lists_every_subcommand_once_and_aliases_parse_as_their_command():
    lines = usage(CMD).splitlines()
    everyday = {s.name for s in SUBCOMMANDS.values() if not s.name.startswith("admin ")}
    assert len(lines) == len(everyday) + 2 < len(SUBCOMMANDS)  # the admins' commands share one line, then quoting
    assert all(name.removeprefix("admin ") in lines[-2] for name in {s.name for s in SUBCOMMANDS.values()} - everyday)
    assert lines[-1].startswith("Words with spaces go in quotes")
    assert parse("show-personal vectoradd", CMD).sub.kind is CommandKind.MINE
    assert parse("get-submission 12", CMD).args == {"id": "12"}
    assert parse("show leaderboard_name=vectoradd", CMD).args == {"leaderboard": "vectoradd"}
    assert parse("admin token issue grace", CMD).args == {"name": "grace"}
    assert all(line.startswith(CMD + " ") for line in lines[:-1])
    assert any("submit [MODE] [LEADERBOARD] [GPU ...]" in line for line in lines)


def test_the_submit_form_offers_the_modes_with_what_they_do_and_keeps_a_typed_one():
    from adapters.slack.modal import submit_view
    from core.contracts.commands import DEFAULT_MODE, MODES

    boards = [{"name": "vectoradd", "gpus": ["CPU", "H100"]}]
    for chosen, shown in (({}, DEFAULT_MODE), (parse_submit(["test", "vectoradd"]), "test")):
        (mode,) = [b for b in submit_view(boards, chosen, "{}")["blocks"] if b.get("block_id") == "kr_mode"]
        menu = mode["element"]
        assert {o["value"]: o["description"]["text"] for o in menu["options"]} == dict(MODES)
        assert menu["initial_option"]["value"] == shown and not mode["optional"]
