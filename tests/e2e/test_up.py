"""`kernelrank up`, then `kernelrank submit` on the same machine with no sign-in step, as the quick start promises."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
from pathlib import Path

import pytest
from api_kit import SUBMISSIONS, kernelrank, start_up, wait_for_line

from core.contracts.tokenformat import token_sha256


@pytest.mark.slow
async def test_up_then_submit_works_with_no_token_step(tmp_path: Path):
    up = await start_up(tmp_path)
    log: list[str] = []
    token_file = tmp_path / "var" / "run" / "api.token"
    try:
        await wait_for_line(up, "kernelrank is up", log, timeout_s=120)
        assert "API http://127.0.0.1:" in log[-1]
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()

        code, out = await kernelrank(
            tmp_path, "submit", str(SUBMISSIONS / "correct.py"), "-l", "vectoradd", KERNELRANK_USER="someone-else"
        )  # the client's claimed name is moot
        assert code == 0, out
        assert "queued as #1 on CPU" in out and "ranked passed" in out
        code, out = await kernelrank(tmp_path, "show", "vectoradd")
        assert code == 0 and "ada" in out and "someone-else" not in out
        code, out = await kernelrank(tmp_path, "token")  # the local user is an admin
        assert code == 0 and "whose" in out and "kernelrank up" in out
    finally:
        up.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(up.communicate(), 60)
        log.append(rest.decode())
    everything = "".join(log)
    assert "kernelrank stopped." in everything
    assert token not in everything and token_sha256(token) not in everything and "Bearer" not in everything
    assert not token_file.exists()  # the next `up` issues a new one


@pytest.mark.slow
async def test_a_killed_nats_server_is_restarted_where_it_was_and_nothing_is_lost(tmp_path: Path):
    up = await start_up(tmp_path)
    log: list[str] = []
    run = tmp_path / "var" / "run"
    try:
        await wait_for_line(up, "kernelrank is up", log, timeout_s=120)
        code, out = await kernelrank(tmp_path, "submit", str(SUBMISSIONS / "correct.py"), "-l", "vectoradd")
        assert code == 0 and "ranked passed" in out, out
        (ports,) = run.glob("nats-server_*.ports")
        os.kill(int(ports.stem.rsplit("_", 1)[1]), signal.SIGKILL)
        await wait_for_line(up, "nats-server restarted at", log, timeout_s=60)
        for _ in range(60):  # the core and the API reconnect by themselves
            code, out = await kernelrank(tmp_path, "submit", str(SUBMISSIONS / "correct.py"), "-l", "vectoradd")
            if code == 0:
                break
            await asyncio.sleep(1)
        assert code == 0 and "queued as #2" in out and "ranked passed" in out, out
        code, out = await kernelrank(tmp_path, "mine", "vectoradd")
        assert code == 0 and "#1" in out and "#2" in out, out  # the first one's result is still there
    finally:
        up.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(up.communicate(), 60)
        log.append(rest.decode())
    assert "kernelrank stopped." in "".join(log)
