"""The terminal client's conventions as a person meets them: a `kernelrank` subprocess against the API process."""

from __future__ import annotations

import asyncio
import json
import re
import threading

from api_kit import SUBMISSIONS, kernelrank, kernelrank_on_a_terminal, serving_api, token_of

from core.contracts.version import __version__
from harness.result import Progress
from runners.fake import FakeRunner, passed_result
from runners.worker import Worker

KERNEL = SUBMISSIONS / "correct.py"


async def test_json_on_read_commands_and_colour_on_request(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        signed_in = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": token}
        code, out = await kernelrank(tmp_path, "list", "--json", **signed_in)
        assert code == 0 and json.loads(out)["leaderboards"][0]["name"] == "vectoradd"
        code, out = await kernelrank(tmp_path, "show", "vectoradd", "--json", **signed_in)
        assert code == 0 and json.loads(out)["leaderboard"] == "vectoradd"
        code, out = await kernelrank(tmp_path, "list", FORCE_COLOR="1", **signed_in)
        assert code == 0 and "\033[" in out
        code, out = await kernelrank(tmp_path, "list", FORCE_COLOR="1", NO_COLOR="1", **signed_in)
        assert code == 0 and "\033" not in out and "vectoradd" in out


async def test_status_shows_the_api_the_core_and_the_pools(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        code, out = await kernelrank(tmp_path, "status", KERNELRANK_API_URL=url, KERNELRANK_TOKEN=token)
        assert code == 0 and "core: ok" in out and f"this client {__version__}" in out, out
        code, out = await kernelrank(tmp_path, "status", "--json", KERNELRANK_API_URL=url)
        assert code == 0 and json.loads(out)["core"] == "ok" and json.loads(out)["pools"] == {}, out  # no token
    code, out = await kernelrank(tmp_path, "status", KERNELRANK_API_URL=url)
    assert code == 1 and "API at" in out and "unreachable" in out


# a redraw of the live rows: each line erased to its end, then "• GPU: where its run is"; two GPUs' rows together
ROW = r"\x1b\[K(?:\x1b\[\d+m)?• (\w+): [^\r\n]*\r?\n"


def two_rows(screen: str) -> bool:
    return any({a, b} == {"CPU", "H100"} for a, b in re.findall(ROW + ROW, screen))


class InFlight(FakeRunner):
    """The kernel's runs keep reporting progress until ``release`` (other jobs, e.g. the reference's timing, pass
    at once): the runs of a submission are in flight together for as long as the test needs."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    async def run(self, job, on_progress=None):
        for step in range(1, 300):
            if self.release.is_set() or job.submission_source != KERNEL.read_text() or on_progress is None:
                break
            await on_progress(Progress(stage="testing", index=step, total=step + 1))
            await asyncio.sleep(0.2)
        return passed_result(job)


async def test_a_two_gpu_submit_shows_one_live_row_per_gpu(make_system, nats_url, tmp_path):
    runner = InFlight()
    system = await make_system(runner, pools=["CPU", "H100"])
    stop = asyncio.Event()
    h100 = asyncio.create_task(Worker(system.bus, "H100", runner, poll_s=0.2, status_s=0.5).run(stop))
    token = await token_of(system, "ada")
    try:
        async with serving_api(system.settings, nats_url) as url:
            code, out = await kernelrank_on_a_terminal(
                tmp_path,
                "submit",
                str(KERNEL),
                "-l",
                "vectoradd",
                "--gpu",
                "CPU,H100",
                "--mode",
                "test",
                seen=lambda screen: two_rows(screen) and runner.release.set(),
                KERNELRANK_API_URL=url,
                KERNELRANK_TOKEN=token,
            )
    finally:
        runner.release.set()
        stop.set()
        await h100
    assert code == 0 and two_rows(out), out
    assert out.count("test passed") == 2, out
