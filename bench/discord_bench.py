"""Discord bot latency: how fast interactions are acknowledged and answered, alone and in bursts.

    python bench/discord_bench.py [--sequential 100] [--burst 100] [--submissions 30]

Starts an embedded nats-server, the core (``kernelrank core``), a fake-backend worker and the bot
(``kernelrank discord``) as separate processes, as ``kernelrank up`` would, against the loopback fake Discord
(in this process). Discord drops an interaction that is not acknowledged within 3 s; the figures are the time
from the gateway dispatch to the bot's acknowledgement (the defer) and to its answer, measured by the fake:

1. ``/leaderboard list`` sent one at a time;
2. a burst of ``/leaderboard list`` sent at once;
3. a burst of ``/leaderboard submit ranked`` with a kernel attached (download, status message, core, thread,
   private answer), then the time until every report is posted in its thread.

Prints a table; figures, not pass/fail checks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from system_kit import start  # noqa: E402

from core.launch.natsserver import EmbeddedNats  # noqa: E402
from tests.fakes.discord import FakeDiscord, Interaction, payloads  # noqa: E402
from tests.fakes.discord import objects as o  # noqa: E402

KERNEL = (REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()
PROBLEM = REPO / "tests" / "fixtures" / "harness" / "vectoradd"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Timings:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def defer_ms(self, interaction: Interaction) -> float | None:
        call = next(
            (
                c
                for c in self.fake.calls
                if c.extra.get("interaction") == interaction.id and c.route.endswith("/callback")
            ),
            None,
        )
        return None if call is None else 1000 * (call.at - interaction.received)

    def answer_ms(self, interaction: Interaction) -> float | None:
        """Until the answer is shown: the edit of the deferred message, or a private followup (an error)."""
        call = next(
            (
                c
                for c in self.fake.calls
                if c.extra.get("interaction") == interaction.id
                and c.method in ("PATCH", "POST")
                and c.route.startswith("/webhooks")
            ),
            None,
        )
        return None if call is None else 1000 * (call.at - interaction.received)

    def failed(self, interactions: list[Interaction]) -> int:
        """Interactions answered with an error (a private followup) instead of their result."""
        return sum(
            1
            for i in interactions
            if any(
                c.extra.get("interaction") == i.id
                and c.method == "POST"
                and c.route == "/webhooks/{application}/{token}"
                for c in self.fake.calls
            )
        )

    async def settled(self, interactions: list[Interaction], timeout_s: float = 300.0) -> None:
        await self.fake.wait_for(lambda f: all(self.answer_ms(i) is not None for i in interactions), timeout_s)


def summary(name: str, values: list[float]) -> list[tuple[str, str]]:
    return [
        (
            f"{name} p50 / p95 / max",
            f"{percentile(values, 50):.0f} / {percentile(values, 95):.0f} / {max(values):.0f} ms",
        )
    ]


async def run(args: argparse.Namespace) -> list[tuple[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="kernelrank-discord-bench-"))
    (home / "problems").mkdir()
    shutil.copytree(PROBLEM, home / "problems" / "vectoradd")
    fake = FakeDiscord(callback_deadline_s=60)
    await fake.start()
    procs: list[subprocess.Popen] = []
    rows: list[tuple[str, str]] = []
    try:
        with EmbeddedNats() as nats:
            url = nats.start(home / "run", home / "store")
            env = {
                **os.environ,
                "KERNELRANK_NATS_URL": url,
                "KERNELRANK_HOME": str(home / "var"),
                "KERNELRANK_PROBLEMS_DIR": str(home / "problems"),
                "KERNELRANK_GPUS": "CPU",
                "KERNELRANK_RATE_LIMIT_PER_MINUTE": "100000",
                "PYTHONPATH": str(REPO),
            }
            procs.append(start(["core"], env, home / "core.log"))
            procs.append(
                start(["worker", "--gpu", "CPU", "--backend", "fake", "--concurrency", "8"], env, home / "worker.log")
            )
            bot = start(
                ["discord"],
                {
                    **env,
                    "DISCORD_TOKEN": fake.bot_token,
                    "KERNELRANK_DISCORD_API_BASE": fake.api_base,
                    "KERNELRANK_DISCORD_GUILDS": o.GUILD_ID,
                },
                home / "discord.log",
            )
            procs.append(bot)
            await fake.wait_identified(120)
            await fake.wait_for(lambda f: f.commands.get(o.GUILD_ID), 60)
            timings = Timings(fake)
            while True:  # until the core answers (it starts beside the bot)
                warm = await fake.inject(payloads.slash(fake, ["leaderboard", "list"]))
                await timings.settled([warm])
                if not timings.failed([warm]):
                    break
                await asyncio.sleep(1)

            sequential = []
            for _ in range(args.sequential):
                interaction = await fake.inject(payloads.slash(fake, ["leaderboard", "list"]))
                await timings.settled([interaction])
                sequential.append(interaction)
            rows += summary(
                f"list, one at a time ({args.sequential}): acknowledged", [timings.defer_ms(i) for i in sequential]
            )
            rows += summary("  ... answered", [timings.answer_ms(i) for i in sequential])

            burst = await asyncio.gather(
                *(fake.inject(payloads.slash(fake, ["leaderboard", "list"])) for _ in range(args.burst))
            )
            await timings.settled(burst)
            rows += summary(f"list, burst of {args.burst}: acknowledged", [timings.defer_ms(i) for i in burst])
            rows += summary("  ... answered", [timings.answer_ms(i) for i in burst])

            loop = asyncio.get_running_loop()
            began = loop.time()
            users = [o.user(str(1300000000000005000 + n), f"user{n}", f"User {n}") for n in range(args.submissions)]
            submissions = await asyncio.gather(
                *(
                    fake.inject(
                        payloads.slash(
                            fake,
                            ["leaderboard", "submit", "ranked"],
                            {"leaderboard": "vectoradd"},
                            user=user,
                            attachments={"script": fake.add_attachment(f"k{n}.py", KERNEL)},
                        )
                    )
                    for n, user in enumerate(users)
                )
            )
            await timings.settled(submissions)
            rows += summary(
                f"submit, burst of {args.submissions}: acknowledged", [timings.defer_ms(i) for i in submissions]
            )
            rows += summary("  ... private answer (queued as #id)", [timings.answer_ms(i) for i in submissions])

            def reports(f: FakeDiscord) -> int:
                return sum(
                    1
                    for m in f.messages.values()
                    if m["embeds"]
                    and "on CPU" in m["embeds"][0].get("title", "")
                    and f.channels.get(m["channel_id"], {}).get("type") == o.PUBLIC_THREAD
                )

            await fake.wait_for(lambda f: reports(f) >= args.submissions, 300)
            rows.append((f"  ... all {args.submissions} reports in their threads", f"{loop.time() - began:.1f} s"))
            late = [t for t in (timings.defer_ms(i) for i in [*sequential, *burst, *submissions]) if t > 3000]
            everything = [*sequential, *burst, *submissions]
            rows.append(("interactions acknowledged after 3 s", f"{len(late)} of {len(everything)}"))
            rows.append(("interactions answered with an error", f"{timings.failed(everything)} of {len(everything)}"))
            rows.append(("bot resident memory", f"{rss_mib(bot.pid):.0f} MiB"))
    finally:
        for proc in reversed(procs):
            proc.send_signal(signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        await fake.stop()
        shutil.rmtree(home, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequential", type=int, default=100)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--submissions", type=int, default=30)
    rows = asyncio.run(run(parser.parse_args()))
    width = max(len(name) for name, _ in rows)
    print(f"\n{'measure'.ljust(width)}  value\n{'-' * width}  -----")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
