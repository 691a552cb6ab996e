"""The terminal client as a person runs it: a `kernelrank` subprocess against the API process over real HTTP."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys

import pytest
from api_kit import REPO, SUBMISSIONS, kernelrank, serving_api, token_of

from core.contracts.config import Settings
from core.contracts.messages import CommandKind
from runners.fake import FakeRunner


@pytest.mark.slow
async def test_submit_shows_progress_then_the_verdict_and_score(local_runner, make_system, nats_url, tmp_path):
    system = await make_system(local_runner)
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        signed_in = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": token}
        code, out = await kernelrank(
            tmp_path, "submit", str(SUBMISSIONS / "correct.py"), "--leaderboard", "vectoradd", **signed_in
        )
        assert code == 0, out
        assert "queued as #1 on CPU, nothing ahead" in out
        assert "CPU: " in out  # at least one live progress line
        assert "ranked passed" in out and "Score" in out and "New #1!" in out

        code, out = await kernelrank(
            tmp_path, "submit", str(SUBMISSIONS / "wrong_output.py"), "-l", "vectoradd", "--mode", "test", **signed_in
        )
        assert code == 1, out
        assert "test failed" in out

        code, out = await kernelrank(tmp_path, "show", "vectoradd", **signed_in)
        assert code == 0 and "ada" in out.lower()
        code, out = await kernelrank(tmp_path, "submission", "1", **signed_in)
        assert code == 0 and "── correct.py ──" in out


async def test_clear_errors_and_exit_codes(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        signed_in = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": token}
        code, out = await kernelrank(tmp_path, "show", "nope", **signed_in)
        assert code == 1 and "no leaderboard 'nope'" in out
        code, out = await kernelrank(tmp_path, "submit", str(tmp_path / "missing.py"), **signed_in)
        assert code != 0 and "cannot read" in out
        code, out = await kernelrank(tmp_path, "template", "vectoradd", "-o", str(tmp_path / "mine.py"), **signed_in)
        assert code == 1 and "no templates" in out  # the fixture problem ships none
        code, out = await kernelrank(tmp_path, "list", KERNELRANK_API_URL=url, KERNELRANK_TOKEN="kr_wrong")
        assert code == 1 and "not valid" in out and "kernelrank login" in out
        code, out = await kernelrank(tmp_path, "list", KERNELRANK_API_URL=url)
        assert code == 1 and "personal token" in out
        code, out = await kernelrank(tmp_path, "queue", **signed_in)
        assert code == 0 and "You have nothing queued" in out


async def test_login_checks_the_token_and_keeps_it_for_the_owner_alone(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        code, out = await kernelrank(tmp_path, "login", "--url", url, stdin="kr_not_a_token\n")
        assert code == 1 and "not valid" in out
        stored = tmp_path / "config" / "kernelrank" / "login.json"
        assert not stored.exists()
        code, out = await kernelrank(tmp_path, "login", "--url", url + "/", stdin=f"{token}\n")
        assert code == 0 and "Signed in" in out and "as Ada" in out and token not in out
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        code, out = await kernelrank(tmp_path, "mine", "vectoradd")  # no settings: the stored login
        assert code == 0 and "You have not submitted yet" in out
        code, out = await kernelrank(tmp_path, "token", "new")
        assert code == 0 and "kr_" in out and "shown only this once" in out
        code, out = await kernelrank(tmp_path, "token")
        assert code == 0 and out.count(" live") == 2
        # the stored token goes only to the API it was stored for
        code, out = await kernelrank(tmp_path, "list", KERNELRANK_API_URL="http://127.0.0.1:9")
        assert code == 1 and "personal token" in out


@pytest.mark.slow
async def test_no_api_and_no_core_are_answered_at_once(nats_url, tmp_path):
    code, out = await kernelrank(tmp_path, "list")
    assert code == 1 and "not running here" in out and "kernelrank up" in out
    code, out = await kernelrank(tmp_path, "list", KERNELRANK_API_URL="http://127.0.0.1:9", KERNELRANK_TOKEN="t")
    assert code == 1 and "not running at http://127.0.0.1:9" in out
    async with serving_api(Settings(home=tmp_path / "api"), nats_url) as url:  # an API with no core behind
        code, out = await kernelrank(tmp_path, "list", KERNELRANK_API_URL=url, KERNELRANK_TOKEN="t")
    assert code == 1 and "kernelrank is not running" in out


async def test_the_client_never_loads_nats(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    probe = (
        "import sys\nfrom core.launch.main import main\ncode = main(sys.argv[1:])\n"
        "loaded = sorted(m for m in sys.modules if m == 'nats' or m.startswith('nats.'))\n"
        "print('LOADED', loaded, 'CODE', code)\n"
    )
    async with serving_api(system.settings, nats_url) as url:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "KERNELRANK_API_URL": url,
            "KERNELRANK_TOKEN": token,
            "XDG_CONFIG_HOME": str(tmp_path),
        }
        for args in (["list"], ["submit", str(SUBMISSIONS / "correct.py"), "-l", "vectoradd"]):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", probe, *args, cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE
            )
            out = (await asyncio.wait_for(proc.communicate(), 60))[0].decode()
            assert "LOADED [] CODE 0" in out, out


async def test_link_and_unlink_from_the_terminal(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner(), admins=["discord:root"])
    issued = await system.ask("root", CommandKind.ISSUE_TOKEN, name="grace")
    async with serving_api(system.settings, nats_url) as url:
        signed_in = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": issued.data["token"]}
        code, out = await kernelrank(tmp_path, "link", **signed_in)
        assert code == 0 and "/leaderboard link" in out, out
        (shown,) = set(re.findall(r"\b[A-HJ-NP-Z2-9]{8}\b", out))
        linked = await system.ask("grace-discord", CommandKind.LINK, code=shown)
        assert linked.data["accounts"] == ["cli:grace", "discord:grace-discord"], linked.parts
        code, out = await kernelrank(tmp_path, "link", shown, **signed_in)
        assert code == 1 and "already used" in out
        code, out = await kernelrank(tmp_path, "unlink", **signed_in)
        assert code == 0 and "2 people again" in out, out
