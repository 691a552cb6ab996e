"""Replies as Discord messages: one embed per message body, files attached, Discord's limits kept.

A ``Reply`` becomes one ``Outgoing`` (a message to send): mentions in the content (so they notify), the body
in one embed whose colour is the reply's tone, charts and images as attached PNGs shown in embeds, and files
(code parts that name one, and code too long to read inline) as attachments. A body longer than an embed's
description becomes pages, shown one at a time with buttons, and the whole text is attached as well, so it
stays readable when the buttons no longer answer (after a restart). Limits, from Discord's documentation
(the library enforces none of them): 2,000 characters of content, 4,096 of embed description, 256 of title,
6,000 over all embeds, 10 embeds and 10 files per message.

Everything here is pure: ``Outgoing`` holds plain dicts and bytes, and ``adapters.discord.poster`` turns it
into discord.py objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from discord.utils import escape_markdown

from adapters.moments import discord_moments
from adapters.render import (
    attachment_name,
    bundle,
    chart_png,
    is_file,
    medal,
    monospace_table,
    slug,
    split_text,
    strip_markup,
    table_pages,
    tone_icon,
)
from core.contracts.messages import Part, PartKind, Reply, Tone

CONTENT_LIMIT = 2000
DESCRIPTION_LIMIT = 4096
TITLE_LIMIT = 256
EMBEDS_LIMIT = 10
FILES_LIMIT = 10
INLINE_CODE_CHARS = 1200  # longer code is attached as a file rather than shown
INLINE_CODE_LINES = 30
PAGE_LIMIT = 3900  # description chars per page, leaving room for nothing else to overflow

COLOURS = {Tone.INFO: 0x5865F2, Tone.SUCCESS: 0x57F287, Tone.WARNING: 0xFEE75C, Tone.ERROR: 0xED4245}
_SNOWFLAKE = re.compile(r"\d{15,21}")


@dataclass
class Outgoing:
    """One Discord message: ``pages`` holds the embed description pages (one unless paginated)."""

    content: str = ""
    embeds: list[dict] = field(default_factory=list)
    files: list[tuple[str, bytes]] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)

    def page_embed(self, index: int) -> dict:
        """The first embed showing page ``index`` (0-based) of the body."""
        embed = dict(self.embeds[0])
        embed["description"] = self.pages[index]
        if len(self.pages) > 1:
            embed["footer"] = {"text": f"Page {index + 1} of {len(self.pages)}"}
        return embed


def render_reply(reply: Reply) -> Outgoing:
    """The Discord message for a reply (an announcement gets its own shape)."""
    if reply.data.get("kind") == "announcement":
        return _announcement(reply)
    mentions: list[str] = []
    body: list[Part] = []
    images: list[tuple[str, bytes]] = []
    files: list[tuple[str, bytes]] = []
    for part in reply.parts:
        if part.kind is PartKind.MENTION:
            if _SNOWFLAKE.fullmatch(part.text):  # never let a mention part smuggle @everyone in
                mentions.append(f"<@{part.text}>")
        elif part.kind in (PartKind.CHART, PartKind.IMAGE):
            images.append(
                (f"chart-{len(images) + 1}.png", chart_png(part))
                if part.kind is PartKind.CHART
                else (part.filename or f"image-{len(images) + 1}.png", part.data)
            )
        elif is_file(part) or (part.kind is PartKind.CODE and _too_long_inline(part.text)):
            files.append((attachment_name(reply, part, len(files)), part.text.encode()))
        else:
            body.append(part)
    blocks = [_block(part) for part in body]
    pages = _pages(body, blocks)
    head = {"title": _truncate(f"{tone_icon(reply.tone)} {reply.title}", TITLE_LIMIT)} if reply.title else {}
    if len(pages) > 1:
        files.append((slug(reply.title) + ".txt", strip_markup("\n\n".join(blocks)).encode()))
    return _assemble(
        Outgoing(content=" ".join(dict.fromkeys(mentions)), pages=pages),
        {**head, "color": COLOURS[reply.tone]},
        images,
        files,
        slug(reply.title, "files"),
    )


def render_text(text: str, tone: Tone = Tone.ERROR) -> Outgoing:
    """A one-sentence answer (an error the adapter itself found), as a small embed."""
    return Outgoing(
        embeds=[{"description": _truncate(f"{tone_icon(tone)} {text}", DESCRIPTION_LIMIT), "color": COLOURS[tone]}],
        pages=[],
    )


def status_line(reply: Reply, label: str = "") -> str:
    """The first status (or text) of a reply as one plain line, for a submission's live status message.

    ``label`` (a GPU) goes in front when the text does not name it already, as in a final report's verdict.
    """
    first = next((p.text for p in reply.parts if p.kind is PartKind.STATUS and p.text), "") or next(
        (p.text for p in reply.parts if p.kind is PartKind.TEXT and p.text), ""
    )
    text = strip_markup(first).replace("\n", " ")
    if label and not text.startswith(f"{label}:"):
        text = f"{label}: {text}"
    return f"{tone_icon(reply.tone) if reply.final else '⏳'} {text}".strip()


def _announcement(reply: Reply) -> Outgoing:
    top = reply.data.get("top") or []
    table = next((p for p in reply.parts if p.kind is PartKind.TABLE), None)
    headline = next((p.text for p in reply.parts if p.kind is PartKind.TEXT), "")
    try:
        lines = (
            [
                f"{medal(int(entry[0]))} **{_escape(row[1])}** · {row[2]}"
                for entry, row in zip(top, table.rows, strict=True)
            ]
            if table
            else []
        )
    except (ValueError, TypeError, IndexError):  # not the documented shape: show it as any other reply
        lines = []
    if not lines:
        return render_reply(Reply(reply_to=reply.reply_to, parts=reply.parts, title=reply.title, tone=reply.tone))
    body = _truncate("\n".join([headline, "", *lines]), DESCRIPTION_LIMIT)
    embed = {"title": _truncate(f"🏆 {reply.title}", TITLE_LIMIT), "description": body, "color": COLOURS[Tone.SUCCESS]}
    return Outgoing(embeds=[embed], pages=[body])


def _block(part: Part) -> str:
    if part.kind is PartKind.STATUS:
        return f"{tone_icon(part.tone)} **{discord_moments(part.text)}**"
    if part.kind is PartKind.TABLE:
        return _fence(monospace_table(part.headers, _escaped_rows(part)))
    if part.kind is PartKind.CODE:
        return _fence(_escape_code(part.text.rstrip()), part.language)
    return discord_moments(part.text)


def _pages(parts: list[Part], blocks: list[str]) -> list[str]:
    """Blocks packed into description pages; a block too long for a page is cut (a table keeps its header)."""
    pieces: list[str] = []
    for part, block in zip(parts, blocks, strict=True):
        if len(block) <= PAGE_LIMIT:
            pieces.append(block)
        elif part.kind is PartKind.TABLE:
            pieces += [_fence(page) for page in table_pages(part.headers, _escaped_rows(part), PAGE_LIMIT - 8)]
        else:
            pieces += split_text(block, PAGE_LIMIT)
    pages: list[str] = []
    for piece in pieces:
        if pages and len(pages[-1]) + 1 + len(piece) <= PAGE_LIMIT:
            pages[-1] += "\n" + piece
        else:
            pages.append(piece)
    return pages or [""]


def _assemble(
    out: Outgoing, embed: dict, images: list[tuple[str, bytes]], files: list[tuple[str, bytes]], bundle_name: str
) -> Outgoing:
    embed = {**embed, "description": out.pages[0]}
    out.embeds.append(embed)
    for index, (name, _) in enumerate(images[:EMBEDS_LIMIT]):
        if index == 0:
            embed["image"] = {"url": f"attachment://{name}"}
        else:
            out.embeds.append({"image": {"url": f"attachment://{name}"}, "color": embed["color"]})
    if len(images) + len(files) > FILES_LIMIT:  # keep every image visible; zip the rest
        files = [(f"{bundle_name}.zip", bundle(files))]
    out.files = images[:EMBEDS_LIMIT] + files
    if len(out.pages) > 1:
        embed["footer"] = {"text": f"Page 1 of {len(out.pages)}"}
    return out


def _escaped_rows(part: Part) -> list[list[str]]:
    return [[_escape_code(cell) for cell in row] for row in part.rows]


def _too_long_inline(text: str) -> bool:
    return len(text) > INLINE_CODE_CHARS or text.count("\n") >= INLINE_CODE_LINES


def _fence(text: str, language: str = "") -> str:
    return f"```{language}\n{text}\n```"


def _escape_code(text: str) -> str:
    """Text that cannot close the code block it sits in."""
    return str(text).replace("```", "`\u200b`\u200b`")


def _escape(text: str) -> str:
    """Someone's text shown as it is: discord.py's escaping covers masked links, headings and lists too."""
    return escape_markdown(str(text))


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
