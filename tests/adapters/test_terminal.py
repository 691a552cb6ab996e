from adapters.terminal import render, status_line
from core.contracts.messages import Platform, Reply, ReplyTo, Tone
from core.contracts.reply_parts import code, status, table, text


def test_plain_rendering_has_no_escape_codes():
    reply = Reply(
        reply_to=ReplyTo(Platform.CLI),
        title="vectoradd",
        parts=[
            status("ranked passed", Tone.SUCCESS),
            text("**Score** 12 µs"),
            table(["shape", "median"], [["size=1024", "10 µs"], ["size=16384", "1.2 ms"]]),
            code("def custom_kernel(data):\n    return data"),
        ],
    )
    out = render(reply)
    assert "\033" not in out
    assert "✔ ranked passed" in out and "Score 12 µs" in out
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("shape"))
    assert header.index("median") == lines[lines.index(header) + 1].index("10 µs")
    assert "    def custom_kernel(data):" in out


def test_colour_and_status_line():
    reply = Reply(reply_to=ReplyTo(Platform.CLI), parts=[status("H100: timing 2 of 5", Tone.INFO)], final=False)
    assert status_line(reply) == "• H100: timing 2 of 5"
    assert "\033[36m" in render(reply, colour=True)


def test_a_file_is_shown_under_its_name():
    out = render(Reply(reply_to=ReplyTo(Platform.CLI), parts=[code("x = 1", "python", filename="reference.py")]))
    assert out.splitlines() == ["── reference.py ──", "    x = 1"]


def test_a_decision_without_the_submission_is_refused_before_any_request(capsys, tmp_path):
    """``admin review --decide cheat`` picks the route that needs an id: the terminal asks for it, sends nothing."""
    from adapters import cli
    from core.contracts.config import Settings

    settings = Settings(home=tmp_path, api_url="http://127.0.0.1:9", token="kr_test_token")  # port 9: nobody
    assert cli.main("admin", ["review", "--decide", "cheat"], settings) == 2
    assert "name the ID" in capsys.readouterr().err


def test_submit_takes_its_registry_spellings_and_lists_the_modes_with_what_they_do():
    """The terminal's ``submit`` is its registry entry's: long names, aliases and short letters, the modes' table."""
    from adapters.cli import parser_for
    from core.contracts.commands import MODES
    from core.contracts.messages import CommandKind
    from core.contracts.registry import BY_KIND

    parser = parser_for(BY_KIND[CommandKind.SUBMIT])
    for line in (
        ["k.py", "--leaderboard", "vectoradd", "--gpu", "H100", "--gpu", "A100", "--mode", "test"],
        ["k.py", "-l", "vectoradd", "-g", "H100", "-g", "A100", "-m", "test"],
        ["k.py", "--leaderboard_name", "vectoradd", "--gpus", "H100,A100", "--mode", "test"],
        ["k.py", "--lb", "vectoradd", "--gpus", "H100,A100", "-m", "test"],
    ):
        typed = vars(parser.parse_args(line))
        assert (typed["leaderboard"], ",".join(typed["gpu"]), typed["mode"]) == ("vectoradd", "H100,A100", "test")
    shown = " ".join(parser.format_help().split())
    assert all(f"{mode}: {about}" in shown for mode, about in MODES.items())


def test_popcorn_clis_mode_name_is_taken_as_ranked():
    from adapters.cli import parser_for
    from core.contracts.messages import CommandKind
    from core.contracts.registry import BY_KIND

    assert parser_for(BY_KIND[CommandKind.SUBMIT]).parse_args(["k.py", "--mode", "leaderboard"]).mode == "ranked"
