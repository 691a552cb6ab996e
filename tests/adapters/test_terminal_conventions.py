"""What people expect of a command-line tool: --version, help, --json, NO_COLOR/FORCE_COLOR, tables that fit the
terminal, one live row per GPU, shell completion, a top-level help made from the registry, a real .env parser."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from adapters.terminal import LiveRows, Screen, render, status_line
from core.contracts.config import load_settings, read_dotenv
from core.contracts.messages import Platform, Reply, ReplyTo, Tone
from core.contracts.registry import COMMANDS
from core.contracts.reply_parts import status, table
from core.contracts.version import __version__
from core.launch.main import main


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_version_and_help(capsys):
    for flag in ("--version", "-V"):
        assert main([flag]) == 0
        assert capsys.readouterr().out.strip() == f"kernelrank {__version__}"
    assert main(["help"]) == 0
    usage = capsys.readouterr().out
    for spec in COMMANDS:  # generated from the registry: every terminal command is there, none by hand
        if spec.offered_on("terminal"):
            assert f"  {spec.name}" in usage, spec.name
    with pytest.raises(SystemExit) as done:
        main(["help", "show"])
    assert done.value.code == 0 and "usage: kernelrank show" in capsys.readouterr().out
    assert main(["help", "frobnicate"]) == 2 and "not a command" in capsys.readouterr().err


def test_colour_follows_no_color_and_force_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    assert Screen.of(_Tty()).colour and not Screen.of(io.StringIO()).colour
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert Screen.of(io.StringIO()).colour  # into a pipe, on request
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Screen.of(_Tty()).colour  # NO_COLOR wins
    reply = Reply(reply_to=ReplyTo(Platform.CLI), title="t", parts=[status("passed", Tone.SUCCESS)])
    assert "\033" not in render(reply, Screen.of(_Tty()).colour)


def test_tables_fit_the_width_and_keep_whole_cells_when_there_is_room():
    long = "a description that goes on and on about what the kernel has to compute, and then some more"
    reply = Reply(reply_to=ReplyTo(Platform.CLI), parts=[table(["leaderboard", "about"], [["vectoradd", long]])])
    for width in (40, 72):
        lines = render(reply, width=width).splitlines()
        assert max(map(len, lines)) <= width - 1 and lines[1].endswith("…")
    assert long in render(reply, width=200)


def _screen(output: str) -> list[str]:
    """The lines a terminal shows after ``output``: cursor up to a line's start (``ESC[nF``), erase below
    (``ESC[J``) and erase the line (``ESC[K``), as LiveRows writes them."""
    lines, row = [""], 0
    for token in re.split(r"(\033\[\d*[FJK]|\n)", output):
        if token == "\n":
            row += 1
            lines += [""] * (row + 1 - len(lines))
        elif token.startswith("\033[") and token.endswith("F"):
            row -= int(token[2:-1] or 1)
        elif token == "\033[J":
            del lines[row + 1 :]
            lines[row] = ""
        elif token == "\033[K":
            lines[row] = ""
        else:
            lines[row] += token
    return [line for line in lines if line]


def test_two_gpus_get_two_live_rows_then_their_reports():
    def progress(text: str) -> str:
        reply = Reply(reply_to=ReplyTo(Platform.CLI), parts=[status(text, Tone.INFO)], final=False)
        return status_line(reply, width=80)

    out = _Tty()
    rows = LiveRows(out, Screen(live=True, width=80))
    rows.update("run-a", progress("H100: testing"))
    rows.update("run-b", progress("A100: queued"))
    rows.update("run-a", progress("H100: timing shape 2 of 5"))
    rows.update("run-b", progress("A100: testing"))
    assert _screen(out.getvalue()) == ["• H100: timing shape 2 of 5", "• A100: testing"]
    rows.finish("run-a", "H100 report")
    assert _screen(out.getvalue()) == ["H100 report", "• A100: testing"]
    piped = io.StringIO()  # into a pipe every update is a line of its own
    LiveRows(piped, Screen()).update("run-a", "H100: testing")
    assert piped.getvalue() == "H100: testing\n"


def test_dotenv_takes_comments_quotes_and_export(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "# settings\n"
        "KERNELRANK_RATE_LIMIT_PER_MINUTE=5   # per GPU\n"
        "export KERNELRANK_GPUS='H100, A100 # not a comment'\n"
        'DISCORD_TOKEN="a \\"quoted\\" #token"  # the bot\n'
        "KERNELRANK_USER=ada#lovelace\n"
        "not a setting\n"
    )
    assert read_dotenv(dotenv) == {
        "KERNELRANK_RATE_LIMIT_PER_MINUTE": "5",
        "KERNELRANK_GPUS": "H100, A100 # not a comment",
        "DISCORD_TOKEN": 'a "quoted" #token',
        "KERNELRANK_USER": "ada#lovelace",
    }
    settings = load_settings({}, config_file=tmp_path / "none.toml", dotenv=dotenv)
    assert settings.rate_limit_per_minute == 5 and settings.gpus == ["H100", "A100 # not a comment"]


def test_settings_come_from_the_users_folder_wherever_kernelrank_starts(tmp_path, monkeypatch):
    folder = tmp_path / "config" / "kernelrank"
    folder.mkdir(parents=True)
    (folder / "kernelrank.toml").write_text("rate_limit_per_minute = 7\n")
    (folder / ".env").write_text("KERNELRANK_GPUS=T4\n")
    monkeypatch.chdir(tmp_path)  # a folder without its own kernelrank.toml or .env
    settings = load_settings({}, user_config=folder)
    assert settings.rate_limit_per_minute == 7 and settings.gpus == ["T4"]


def test_completion_scripts_complete_the_registrys_words(tmp_path):
    script = tmp_path / "kernelrank.bash"
    with open(script, "w") as out:
        subprocess.run([sys.executable, "-m", "core.launch.main", "completion", "bash"], stdout=out, check=True)
    probe = (
        f"source {script}; COMP_WORDS=(kernelrank adm); COMP_CWORD=1; _kernelrank; echo ${{COMPREPLY[@]}}; "
        "COMP_WORDS=(kernelrank admin tok); COMP_CWORD=2; _kernelrank; echo ${COMPREPLY[@]}; "
        "COMP_WORDS=(kernelrank show --li); COMP_CWORD=2; _kernelrank; echo ${COMPREPLY[@]}"
    )
    shown = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert shown == ["admin", "token", "--limit"]
    assert main(["completion", "tcsh"]) == 2
