"""Write the command transcript of docs/discord.md from what the fake Discord recorded.

    .venv/bin/python -m tests.fakes.discord.transcript docs/discord.md

Runs a whole kernelrank on this machine (nats-server, the core on the repository's problems, a CPU worker
with the real harness, the bot against the fake Discord), sends each command as Discord would, and replaces the
part of the file between the transcript markers with what the bot sent back, call by call. Nothing in it is
written by hand: every line is rendered from a recorded HTTP call.
"""

from __future__ import annotations

import asyncio
import io
import logging
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.fakes.discord import objects as o
from tests.fakes.discord import payloads
from tests.fakes.discord.server import Call, FakeDiscord

REPO = Path(__file__).resolve().parents[3]
START, END = "<!-- transcript:start -->", "<!-- transcript:end -->"
EPHEMERAL = 1 << 6
SHOWN = (
    "/interactions/{interaction}/{token}/callback",
    "/webhooks/{application}/{token}",
    "/webhooks/{application}/{token}/messages/{message}",
    "/channels/{channel}/messages",
    "/channels/{channel}/messages/{message}",
    "/channels/{channel}/messages/{message}/threads",
)
CALLBACKS = {
    4: "answers",
    5: 'acknowledges at once ("kernelrank is thinking...")',
    7: "updates the menu's message",
    8: "offers choices",
}


def render_call(call: Call, fake: FakeDiscord) -> list[str]:
    """A recorded call as a reader sees its effect, or nothing for calls that change nothing on screen."""
    if call.route not in SHOWN or call.method == "GET" or call.status >= 400:
        return []
    body = call.json or {}
    if call.route.endswith("/callback"):
        data = body.get("data") or {}
        private = " privately" if int(data.get("flags") or 0) & EPHEMERAL else ""
        head = f"- callback type {body.get('type')}: {CALLBACKS.get(body.get('type'), 'answers')}{private}"
        if body.get("type") == 8:
            return [head + ": " + ", ".join(f"`{c['name']}`" for c in data.get("choices", []))]
        return [head] + (_message(data, call) if body.get("type") in (4, 7) else [])
    if call.route.endswith("/threads"):
        return [f"- opens the thread **{body.get('name')}** on that message"]
    where = _where(call, fake)
    if call.method == "DELETE":
        return [f"- deletes {where}"]
    private = " (only the user sees it)" if int(body.get("flags") or 0) & EPHEMERAL else ""
    verb = "edits" if call.method == "PATCH" else "posts"
    return [f"- {verb} {where}{private}:"] + _message(body, call)


def _where(call: Call, fake: FakeDiscord) -> str:
    if call.route.startswith("/webhooks"):
        return "its answer" if call.path.endswith("@original") else "a followup"
    channel = call.path.split("/channels/")[1].split("/")[0]
    kind = (
        "the submission's thread"
        if fake.channels.get(channel, {}).get("type") == o.PUBLIC_THREAD
        else "#announcements"
        if channel == o.ANNOUNCE_CHANNEL
        else "a direct message"
        if channel not in fake.channels
        else f"#{fake.channels[channel].get('name', 'channel')}"
    )
    return f"the status message in {kind}" if "/messages/" in call.route else f"in {kind}"


def _message(body: dict[str, Any], call: Call) -> list[str]:
    lines = []
    if body.get("content"):
        lines += body["content"].split("\n")
    for embed in body.get("embeds") or []:
        if embed.get("title"):
            lines.append(f"**{embed['title']}**")
        if embed.get("description"):
            lines += embed["description"].split("\n")
        if embed.get("image"):
            lines.append(f"[image: {embed['image']['url'].removeprefix('attachment://')}]")
        if (embed.get("footer") or {}).get("text"):
            lines.append(f"_{embed['footer']['text']}_")
    for row in body.get("components") or []:
        for item in row.get("components", []):
            if item.get("type") == 3:
                lines.append(
                    f"[menu: {item.get('placeholder')}: {' / '.join(o['label'] for o in item.get('options', []))}]"
                )
            elif item.get("type") == 2:
                lines.append(f"[button: {item.get('label')}]")
    lines += [f"[file: {f['name']}, {f['size']:,} bytes]" for f in call.files]
    return ["", "  ````text", *[f"  {line}" for line in lines], "  ````", ""]


def render_calls(calls: list[Call], fake: FakeDiscord) -> list[str]:
    """Calls in order; a run of edits of one status message becomes one bullet: its lines in turn, then the last."""
    out: list[str] = []
    index = 0
    while index < len(calls):
        call = calls[index]
        if call.method == "PATCH" and call.route == "/channels/{channel}/messages/{message}" and call.status < 400:
            run = [call]
            while index + len(run) < len(calls) and (calls[index + len(run)].method, calls[index + len(run)].path) == (
                call.method,
                call.path,
            ):
                run.append(calls[index + len(run)])
            if len(run) > 1:
                steps = [(c.json or {}).get("content", "").split("\n")[-1] for c in run]
                out.append(
                    f"- edits the status message in place {len(run)} times: "
                    + " → ".join(f"`{step}`" for step in steps[:-1])
                    + ", finally:"
                )
                out += _message(run[-1].json or {}, run[-1])
                index += len(run)
                continue
        out += render_call(call, fake)
        index += 1
    return out


async def _scenarios(fake: FakeDiscord, system: Any) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    correct = (REPO / "problems" / "vectoradd" / "solutions" / "correct" / "pytorch.py").read_bytes()
    wrong = (REPO / "problems" / "vectoradd" / "solutions" / "wrong" / "bf16_compute.py").read_bytes()

    def slash(path: list[str], options: dict | None = None, **kwargs: Any):
        return lambda: fake.inject(payloads.slash(fake, path, options, **kwargs))

    def submit(mode: str, content: bytes, name: str, wait_for: str = "", **options: str):
        async def run():
            attachment = fake.add_attachment(name, content)
            await fake.inject(
                payloads.slash(fake, ["leaderboard", "submit", mode], options, attachments={"script": attachment})
            )
            if wait_for:
                await _finished(fake, wait_for)

        return run

    async def pick_gpu():
        menu_message = next(m for m in reversed(list(fake.messages.values())) if m["components"])
        await fake.inject(payloads.select(menu_message, "kernelrank:submit:gpus", ["CPU"]))
        await _finished(fake, "submission #2 ")

    async def create(options: dict, user: dict = payloads.ADA, wait_for: str = "", broken: bool = False):
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            replaced = "identity/reference.py" if broken else ""
            tar.add(
                REPO / "problems" / "identity", arcname="identity", filter=lambda m: None if m.name == replaced else m
            )
            tar.add(REPO / "problems" / "utils.py", arcname="utils.py")
            if broken:  # a reference that raises: its own test run refuses the problem
                source = (REPO / "problems" / "identity" / "reference.py").read_text()
                raising = source.replace("    return data.clone()", "    raise ValueError('this reference is broken')")
                member = tarfile.TarInfo("identity/reference.py")
                member.size = len(raising.encode())
                tar.addfile(member, io.BytesIO(raising.encode()))
        upload = fake.add_attachment("identity.tar.gz", archive.getvalue())
        await fake.inject(
            payloads.slash(fake, ["admin", "create"], options, user=user, attachments={"problem": upload})
        )
        if wait_for:
            await _shown(fake, wait_for)

    async def challenge():
        await fake.inject(
            payloads.slash(
                fake,
                ["admin", "challenge", "create"],
                {"title": "Week 1", "leaderboards": "vectoradd", "closes": "2099-01-01 18:00"},
            )
        )
        await _shown(fake, "Week 1 is open")

    lb = {"leaderboard": "vectoradd"}
    weekly = {"leaderboard": "weekly"}
    return [
        ("/leaderboard help", slash(["leaderboard", "help"])),
        ("/leaderboard list", slash(["leaderboard", "list"])),
        (
            "/leaderboard show leaderboard: vec… (autocomplete while typing)",
            lambda: fake.inject(
                payloads.autocomplete(fake, ["leaderboard", "show"], {"leaderboard": "vec"}, focused="leaderboard")
            ),
        ),
        ("/leaderboard task leaderboard: vectoradd", slash(["leaderboard", "task"], lb)),
        (
            "/leaderboard template leaderboard: vectoradd lang: Triton",
            slash(["leaderboard", "template"], {**lb, "lang": "Triton"}),
        ),
        (
            "/leaderboard submit ranked script: pytorch.py leaderboard: vectoradd gpu: CPU",
            submit("ranked", correct, "pytorch.py", wait_for="submission #1 ", gpu="CPU", **lb),
        ),
        (
            "/leaderboard submit test script: bf16_compute.py leaderboard: vectoradd (a GPU menu, then a failing run)",
            submit("test", wrong, "bf16_compute.py", **lb),
        ),
        ("(picks CPU in the menu)", pick_gpu),
        (
            "/leaderboard submit ranked script: pytorch.py leaderboard: vectoradd gpu: CPU (again: compared with the "
            "first)",
            submit("ranked", correct, "pytorch.py", wait_for="submission #3 ", gpu="CPU", **lb),
        ),
        ("/leaderboard show leaderboard: vectoradd", slash(["leaderboard", "show"], lb, user=payloads.BOB)),
        (
            "/leaderboard show leaderboard: nope (an error: private, one sentence)",
            slash(["leaderboard", "show"], {"leaderboard": "nope"}),
        ),
        ("/leaderboard mine leaderboard: vectoradd", slash(["leaderboard", "mine"], lb)),
        ("/leaderboard history leaderboard: vectoradd", slash(["leaderboard", "history"], lb)),
        ("/leaderboard submission id: 1", slash(["leaderboard", "submission"], {"id": 1})),
        ("/leaderboard queue", slash(["leaderboard", "queue"])),
        ("/leaderboard eval-code", slash(["leaderboard", "eval-code"])),
        ("/leaderboard token", slash(["leaderboard", "token"])),
        (
            "/admin create name: weekly problem: identity.tar.gz (by a participant: refused)",
            lambda: create({"name": "weekly"}, user=payloads.BOB),
        ),
        (
            "/admin create name: broken problem: identity.tar.gz (by an admin, with a reference that raises: its run "
            "refuses it, and nothing is created)",
            lambda: create({"name": "broken"}, wait_for="was not created", broken=True),
        ),
        (
            "/admin create name: weekly problem: identity.tar.gz deadline: 2099-01-01 18:00 (by an admin, no GPU "
            "named: every pool its problem runs on; its reference runs once on the worker, then it opens)",
            lambda: create({"name": "weekly", "deadline": "2099-01-01 18:00"}, wait_for="was created"),
        ),
        (
            "/admin update leaderboard: weekly deadline: 2099-01-08 18:00",
            slash(["admin", "update"], {**weekly, "deadline": "2099-01-08 18:00"}),
        ),
        ("/admin close leaderboard: weekly", slash(["admin", "close"], weekly)),
        ("/admin delete leaderboard: weekly (asks to confirm)", slash(["admin", "delete"], weekly)),
        (
            "/admin delete leaderboard: weekly confirm: weekly",
            slash(["admin", "delete"], {**weekly, "confirm": "weekly"}),
        ),
        (
            "/admin challenge create title: Week 1 leaderboards: vectoradd closes: 2099-01-01 18:00 (no announce "
            "given: the news goes to KERNELRANK_ANNOUNCE, here #announcements)",
            challenge,
        ),
        (
            "/admin sync scope: this server (by a server admin)",
            slash(["admin", "sync"], {"scope": "guild"}, roles=[o.ADMIN_ROLE], permissions=o.MEMBER | o.ADMINISTRATOR),
        ),
    ]


async def record_transcript() -> str:
    from adapters.discord.app import run_discord
    from core.contracts.bus import Bus
    from core.contracts.config import Settings
    from core.launch.natsserver import EmbeddedNats
    from core.service.bootstrap import bootstrap
    from core.service.db import Database
    from runners.local import LocalRunner
    from runners.worker import Worker
    from storage.store import Store

    home = Path(tempfile.mkdtemp(prefix="kernelrank-transcript-"))
    try:
        with EmbeddedNats() as nats:
            url = nats.start(home / "run", home / "store")
            settings = Settings(
                home=home / "var",
                problems_dir=REPO / "problems",
                nats_url=url,
                announce=[f"discord:{o.ANNOUNCE_CHANNEL}"],
                admins=[f"discord:{payloads.ADA['id']}"],
                scheduler_tick_s=0.5,
            )
            bus = await Bus.connect(url, name="transcript")
            db = Database(Store(settings.database))
            core = bootstrap(bus, db, settings, ["CPU", "H100"])
            await core.start()
            stop = asyncio.Event()
            worker = asyncio.create_task(Worker(bus, "CPU", LocalRunner(), poll_s=0.2).run(stop))
            fake = FakeDiscord(callback_deadline_s=30)
            await fake.start()
            bot_settings = Settings(
                home=home / "bot",
                discord_token=fake.bot_token,
                discord_api_base=fake.api_base,
                discord_guilds=[o.GUILD_ID],
                request_timeout_s=30,
            )
            bot = asyncio.create_task(run_discord(bot_settings, url, stop))
            await fake.wait_identified(60)
            await fake.wait_for(lambda f: f.commands.get(o.GUILD_ID), 30)
            sections = []
            for title, action in await _scenarios(fake, core):
                first = len(fake.calls)
                await action()
                await _settle(fake)
                lines = render_calls(fake.calls[first:], fake)
                sections.append("\n".join([f"#### `{title}`", "", *lines]))
            stop.set()
            await asyncio.gather(bot, worker)
            await core.stop()
            await db.close()
            await bus.close()
            await fake.stop()
        return "\n\n".join(sections)
    finally:
        shutil.rmtree(home, ignore_errors=True)


async def _finished(fake: FakeDiscord, status: str, timeout_s: float = 300.0) -> None:
    """Wait until the status message containing ``status`` shows a verdict."""

    def done(f: FakeDiscord) -> bool:
        return any(status in m["content"] and m["content"].split("\n")[-1][:1] in "✅❌⚠" for m in f.messages.values())

    await fake.wait_for(done, timeout_s)


async def _shown(fake: FakeDiscord, words: str, timeout_s: float = 300.0) -> None:
    """Wait until a message shows ``words``."""
    await fake.wait_for(
        lambda f: any(words in (m.get("content") or "") + str(m.get("embeds")) for m in f.messages.values()), timeout_s
    )


async def _settle(fake: FakeDiscord, quiet_s: float = 3.0, limit_s: float = 120.0) -> None:
    """Wait until no call has come for ``quiet_s`` (the command's whole effect, reports included)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    seen, since = len(fake.calls), loop.time()
    while loop.time() - start < limit_s:
        await asyncio.sleep(0.2)
        if len(fake.calls) != seen:
            seen, since = len(fake.calls), loop.time()
        elif loop.time() - since >= quiet_s:
            return


def replace_section(document: str, transcript: str) -> str:
    head, _, rest = document.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n\n{transcript}\n\n{END}{tail}"


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING)
    target = Path(argv[0]) if argv else REPO / "docs" / "discord.md"
    document = target.read_text()
    if START not in document or END not in document:
        print(f"{target} has no {START} ... {END} markers", file=sys.stderr)
        return 2
    target.write_text(replace_section(document, asyncio.run(record_transcript())))
    print(f"wrote the transcript into {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
