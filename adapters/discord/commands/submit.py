"""``/leaderboard submit test|benchmark|ranked|profile``: a kernel file in, a thread of its own out.

The commands are built from the registry's ``submit`` entry (``commands.registered``); this is what they do. The
life of a submission, as the user sees it:

1. the command is acknowledged privately at once;
2. the attached file is checked for size (before it is downloaded) and downloaded;
3. when no GPU was named (option or ``#!POPCORN gpu`` line) and the leaderboard offers several, a menu asks
   for one or more; with one GPU there is no question;
4. a status message is posted in the channel, then the command goes to the core with that message as the
   place for answers: the core checks and stores the submission and queues one run per GPU;
5. refused: the status message is removed and the reason shown privately. Accepted: a thread is opened on the
   status message, which shows one line per GPU from then on (queued, testing, timing shape i of n, verdict),
   and the private answer says "queued as #id on H100, n jobs ahead" with a link to the thread.

Reports arrive later through the reply consumer (``replies``), posted with the bot token, so they reach the
thread even after the interaction's 15 minutes.
"""

from __future__ import annotations

import logging

import discord
from discord.utils import escape_markdown, escape_mentions

from adapters.discord.gpu_picker import pick_gpus
from adapters.discord.identity import actor_of, display_name, reply_to_of
from adapters.discord.respond import Refusal, answer, defer
from adapters.discord.services import Services
from core.contracts.commands import DEFAULT_MODE, parse_headers, submit_command
from core.contracts.messages import Part, PartKind, Tone

log = logging.getLogger(__name__)

CANNOT_POST = (
    "I cannot post in this channel, so your results would have nowhere to go; submit in another channel, "
    "or ask a server admin to let me send messages here."
)
THREAD_CHANNELS = (discord.ChannelType.text, discord.ChannelType.news)


async def run_submission(
    svc: Services, itx: discord.Interaction, script: discord.Attachment, args: dict[str, str]
) -> None:
    """Submit ``script`` with the entry's other arguments as the options gave them (``gpu`` as typed: one name or a
    comma list), asking for GPUs where none is named and the leaderboard offers several."""
    await defer(itx, public=False)
    _check_can_post(itx)
    limit = svc.settings.max_source_bytes
    if script.size > limit:
        raise Refusal(
            f"{script.filename} is {_kib(script.size)}; the limit is {_kib(limit)}. Move data out of the "
            "source and submit again."
        )
    try:
        content = await script.read()
    except discord.HTTPException as exc:
        log.warning("could not download attachment %s: %s", script.id, exc)
        raise Refusal(f"I could not download {script.filename} from Discord; attach it again.") from exc
    actor = actor_of(itx)
    headers = parse_headers(content.decode("utf-8", errors="replace"))
    board = args.get("leaderboard") or headers.leaderboard
    gpus = [args["gpu"]] if args.get("gpu") else []
    if not gpus and not headers.gpus and board:
        offered = await svc.catalogue.gpus_of(actor, board)
        if len(offered) > 1:
            gpus = await pick_gpus(
                itx,
                f"**{board}** runs on {', '.join(offered)}: which should run your kernel?",
                offered,
                "submit",
                "Submitting to",
            )
            if not gpus:
                return
    mode = args.get("mode") or headers.mode or DEFAULT_MODE
    channel = itx.channel_id
    if channel is None:  # an interaction from no channel: the results would have nowhere to go
        raise Refusal(CANNOT_POST)
    who = escape_markdown(escape_mentions(display_name(itx.user)))
    try:
        status = await svc.poster.send_text(
            channel, f"📥 **{who}** is submitting `{_plain(script.filename)}` ({mode})…"
        )
    except (discord.Forbidden, discord.NotFound) as exc:
        raise Refusal(CANNOT_POST) from exc
    threaded = _can_open_thread(itx)
    reply_to = reply_to_of(itx, thread=status.id if threaded else None, message=status.id)
    reply = await svc.core.ask(submit_command(actor, reply_to, script.filename, content, **{**args, "gpu": gpus}))
    if reply.tone is Tone.ERROR:
        await svc.poster.delete(channel, status.id)
        await answer(itx, reply)
        return
    number, board, runs = reply.data.get("submission_id"), reply.data.get("leaderboard", board), reply.data["runs"]
    header = f"📥 **{who}** · submission #{number} · `{_plain(script.filename)}` → **{board}** · {mode}"
    lines = [
        f"⏳ {run['gpu']}: queued, " + (f"{run['ahead']} ahead" if run.get("ahead") else "next in line") for run in runs
    ]
    await svc.live.open(channel, status.id, header, lines)
    where = "Results will be posted as replies to your submission message."
    if threaded:
        try:
            await svc.poster.start_thread(channel, status.id, f"#{number} {board} {mode} · {script.filename} · {who}")
            where = f"Follow it in <#{status.id}>."
        except discord.HTTPException as exc:  # the first report will try again (see replies)
            log.warning("could not open the thread for submission %s: %s", number, exc)
    reply.parts.append(Part(kind=PartKind.TEXT, text=where))
    await answer(itx, reply)


def _check_can_post(itx: discord.Interaction) -> None:
    """Results are posted with the bot's own account later, so it must be able to post where it was asked."""
    if itx.context.private_channel:
        raise Refusal(
            "I cannot post in this conversation, so your results would have nowhere to go; submit in a "
            "server channel I am in, or in a direct message with me."
        )
    allowed = itx.app_permissions
    if itx.guild_id is None or not allowed.value:  # a DM with the bot, or permissions not sent: try and see
        return
    in_thread = getattr(itx.channel, "type", None) in (
        discord.ChannelType.public_thread,
        discord.ChannelType.private_thread,
        discord.ChannelType.news_thread,
    )
    if not (allowed.view_channel and (allowed.send_messages_in_threads if in_thread else allowed.send_messages)):
        raise Refusal(CANNOT_POST)


def _can_open_thread(itx: discord.Interaction) -> bool:
    allowed = itx.app_permissions
    return (
        itx.guild_id is not None
        and getattr(itx.channel, "type", None) in THREAD_CHANNELS
        and allowed.create_public_threads
        and allowed.send_messages_in_threads
    )


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB"


def _plain(name: str) -> str:
    return name.replace("`", "'")
