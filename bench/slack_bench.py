"""Slack adapter benchmark: how fast Slack gets its acknowledgement, and people their answers, under load.

    python bench/slack_bench.py [--commands 300] [--submissions 200] [--in-flight 20]

Starts, as separate processes as `kernelrank up` would: an embedded nats-server, `kernelrank core`,
`kernelrank worker --backend fake` (answers at once), the fake Slack (`python -m tests.fakes.slack`,
recording every call with its time) and `kernelrank slack --http` pointed at it. This process then
posts signed requests as Slack does, ``--in-flight`` at a time:

1. slash commands (`/kernelrank list`): time to the HTTP 200 (Slack's deadline is 3 s), and to the
   answer on the command's response_url;
2. mentions carrying a kernel file, each sent twice (the second as Slack's retry, `X-Slack-Retry-Num: 1`):
   time to the HTTP 200, to the first message in the thread, and to the report; then every thread is
   checked for exactly one report, and the database for exactly one submission per mention;
3. the adapter's resident memory at the end.

Prints a table; figures, not pass/fail checks. All processes share this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from core_bench import rss_mib  # noqa: E402
from storage_bench import percentile  # noqa: E402
from system_kit import start  # noqa: E402

from core.launch.natsserver import EmbeddedNats  # noqa: E402
from tests.fakes.slack import payloads  # noqa: E402

SECRET = "bench-signing-secret"
BOT, APP = "xoxb-bench-bot-token", "xapp-bench-app-token"
KERNEL = (REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()
PROBLEM = REPO / "tests" / "fixtures" / "harness" / "vectoradd"


class Slack:
    """Posts signed requests to the adapter, as Slack does, on one HTTP session."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def post(self, body: str, content_type: str, headers: dict[str, str] | None = None) -> float:
        """Seconds until the adapter's HTTP answer (which must be 200)."""
        ts = str(int(time.time()))
        sent = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": payloads.signature(SECRET, ts, body),
            **(headers or {}),
        }
        began = time.perf_counter()
        async with self.session.post(self.url, data=body.encode(), headers=sent) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"the adapter answered {response.status}")
        return time.perf_counter() - began


async def bounded(count: int, in_flight: int, one) -> list:
    slots = asyncio.Semaphore(in_flight)

    async def run(index: int):
        async with slots:
            return await one(index)

    return await asyncio.gather(*(run(i) for i in range(count)))


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def wait_for(check, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the adapter did not finish in time")
        await asyncio.sleep(0.2)


async def bench(args: argparse.Namespace, work: Path) -> dict[str, str]:
    problems = work / "problems"
    shutil.copytree(PROBLEM, problems / "vectoradd")
    record = work / "slack-calls.jsonl"
    nats = EmbeddedNats()
    url = nats.start(work / "run", work / "nats")
    fake_port, adapter_port = 18000 + os.getpid() % 1000, 19000 + os.getpid() % 1000
    env = {
        **os.environ,
        "KERNELRANK_NATS_URL": url,
        "KERNELRANK_HOME": str(work / "var"),
        "KERNELRANK_PROBLEMS_DIR": str(problems),
        "KERNELRANK_GPUS": "CPU",
        "KERNELRANK_LOG_LEVEL": "WARNING",
        "KERNELRANK_RATE_LIMIT_PER_MINUTE": "1000000",
        "SLACK_BOT_TOKEN": BOT,
        "SLACK_APP_TOKEN": APP,
        "SLACK_SIGNING_SECRET": SECRET,
        "KERNELRANK_SLACK_API_URL": f"http://127.0.0.1:{fake_port}/api/",
        "KERNELRANK_SLACK_HTTP_PORT": str(adapter_port),
        "PYTHONPATH": str(REPO),
    }
    fake = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.slack",
            "--port",
            str(fake_port),
            "--record",
            str(record),
            "--bot-token",
            BOT,
            "--app-token",
            APP,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    fake.stdout.readline()
    procs = [
        start(["core"], env, work / "core.log"),
        start(["worker", "--gpu", "CPU", "--backend", "fake"], env, work / "worker.log"),
    ]
    adapter = start(["slack"], env, work / "slack.log")
    procs.append(adapter)
    figures: dict[str, str] = {}
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(session, f"http://127.0.0.1:{adapter_port}/slack/events")
            fake_api = f"http://127.0.0.1:{fake_port}"
            await wait_for(lambda: _healthy(adapter_port), 30)
            await _wait_for_core(slack, record, fake_api)

            # 1. slash commands
            sent_at: dict[str, float] = {}

            async def command(index: int) -> float:
                name = f"bench{index}"
                form = payloads.slash_command(
                    "list", user=f"U{index % 50:05d}", response_url=f"{fake_api}/commands/T0KERNEL/{name}/x"
                )
                sent_at[name] = time.time()
                return await slack.post(urlencode(form), "application/x-www-form-urlencoded")

            acks = await bounded(args.commands, args.in_flight, command)
            await wait_for(
                lambda: sum(r["method"] == "response_url" for r in records(record)) >= args.commands + 1, 120
            )
            answered = [
                r["at"] - sent_at[r["params"]["url"].split("/")[-2]]
                for r in records(record)
                if r["method"] == "response_url" and r["params"]["url"].split("/")[-2] in sent_at
            ]
            figures.update(_stats("slash command: HTTP 200", acks))
            figures.update(_stats("slash command: answer on response_url", answered))

            # 2. mentions with a kernel, each also retried
            files = []
            for index in range(args.submissions):
                async with session.post(
                    f"{fake_api}/_fake/files/k{index}.py?user=U{index % 50:05d}", data=KERNEL
                ) as response:
                    files.append(await response.json())
            mentions = [
                payloads.app_mention("<@U0KRBOT> test vectoradd", user=f"U{i % 50:05d}", files=[files[i]])
                for i in range(args.submissions)
            ]
            thread_sent: dict[str, float] = {}

            async def mention(index: int) -> float:
                envelope = payloads.event_callback(mentions[index], event_id=f"EvBENCH{index:06d}")
                thread_sent[mentions[index]["ts"]] = time.time()
                took = await slack.post(json.dumps(envelope), "application/json")
                await slack.post(
                    json.dumps(envelope),
                    "application/json",
                    {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"},
                )
                return took

            acks = await bounded(args.submissions, args.in_flight, mention)

            def reports() -> list[dict]:
                return [
                    r
                    for r in records(record)
                    if r["method"] == "chat.postMessage"
                    and r["params"].get("thread_ts") in thread_sent
                    and "test passed" in r["params"]["text"]
                ]

            await wait_for(lambda: len(reports()) >= args.submissions, 300)
            await asyncio.sleep(2)  # anything doubled would arrive now
            firsts = {}
            for r in records(record):
                thread = r["params"].get("thread_ts")
                if r["method"] == "chat.postMessage" and thread in thread_sent and thread not in firsts:
                    firsts[thread] = r["at"] - thread_sent[thread]
            per_thread = {t: 0 for t in thread_sent}
            for r in reports():
                per_thread[r["params"]["thread_ts"]] += 1
            figures.update(_stats("mention with a file: HTTP 200", acks))
            figures.update(_stats("mention: first message in the thread", list(firsts.values())))
            figures.update(
                _stats(
                    "mention: report in the thread",
                    [r["at"] - thread_sent[r["params"]["thread_ts"]] for r in reports()],
                )
            )
            doubled = sum(n > 1 for n in per_thread.values())
            missing = sum(n == 0 for n in per_thread.values())
            downloads = sum(r["method"] == "file.download" for r in records(record))
            figures["reports exactly once (retries sent for every mention)"] = (
                f"{args.submissions - doubled - missing} of {args.submissions} (doubled {doubled}, missing {missing},"
                f" files downloaded {downloads})"
            )
            figures["adapter resident memory"] = f"{rss_mib(adapter.pid):.0f} MiB"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(20)
        fake.terminate()
        fake.wait(10)
        nats.stop()
    stored = _stored_submissions(work)
    figures["submissions stored"] = f"{stored} (mentions sent {args.submissions}, each twice)"
    return figures


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


async def _wait_for_core(slack: Slack, record: Path, fake_api: str) -> None:
    """`list` until the core answers it (it creates its streams and loads the problems first)."""
    for attempt in range(60):
        name = f"warmup{attempt}"
        form = payloads.slash_command("list", response_url=f"{fake_api}/commands/T0KERNEL/{name}/x")
        await slack.post(urlencode(form), "application/x-www-form-urlencoded")
        await asyncio.sleep(0.5)
        answers = [r for r in records(record) if r["method"] == "response_url" and name in r["params"]["url"]]
        if answers and "vectoradd" in json.dumps(answers[0]["params"]):
            return
    raise TimeoutError("the core did not answer")


def _stored_submissions(work: Path) -> int:
    from storage import Store

    store = Store(work / "var" / "kernelrank.duckdb")
    try:
        return store.stats().submissions
    finally:
        store.close()


def _stats(name: str, seconds: list[float]) -> dict[str, str]:
    ms = [s * 1000 for s in seconds]
    return {
        name: f"p50 {percentile(ms, 0.5):.0f} ms, p95 {percentile(ms, 0.95):.0f} ms, max {max(ms):.0f} ms (n={len(ms)})"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=300)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="slack-bench-"))
    try:
        figures = asyncio.run(bench(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(k) for k in figures)
    print(f"slack bench: {args.commands} commands, {args.submissions} submissions, {args.in_flight} in flight")
    for name, value in figures.items():
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
