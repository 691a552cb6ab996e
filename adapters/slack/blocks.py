"""A ``Reply`` as a Slack message: Block Kit blocks, a plain notification text, and files to upload.

Slack's limits shape the output: at most 50 blocks, 3,000 characters in a section and 150 in a header.
A table or code block too long for one section becomes a file (with a preview of the table's first
rows), charts become PNG files, and a report with more parts than blocks allowed gets its full text as a
file. Text from users is escaped (``&``, ``<``, ``>``), so a display name can never ping a channel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from adapters.moments import slack_moments
from adapters.render import (
    attachment_name,
    chart_png,
    monospace_table,
    split_text,
    strip_markup,
    summary_line,
    tone_icon,
)
from adapters.terminal import render as plain_text
from core.contracts.messages import Part, PartKind, Reply
from core.contracts.reply_parts import format_us

SECTION_LIMIT = 3000
HEADER_LIMIT = 150
MAX_BLOCKS = 50
TEXT_LIMIT = 3000  # the notification text (Slack allows 40,000; it shows far less)
PREVIEW_CHARS = 1200  # table rows shown above a table that went into a file
FENCE = "```"
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")

# Buttons on a finished run's report; their values are parsed back by ``adapters.slack.actions``.
VIEW_SUBMISSION = "kr_view_submission"
SHOW_BOARD = "kr_show_board"
SUBMIT_AGAIN = "kr_submit_again"


@dataclass
class Upload:
    filename: str
    content: bytes
    title: str


@dataclass
class SlackMessage:
    text: str  # notifications, and clients that cannot show blocks
    blocks: list[dict[str, Any]]
    uploads: list[Upload] = field(default_factory=list)


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn(text: str) -> str:
    """Report markup (``**bold**``, `code`) as Slack mrkdwn, with user text escaped."""
    return _BOLD.sub(r"*\1*", escape(text))


def mention(user_id: str) -> str:
    return f"<@{user_id}>" if _USER_ID.match(user_id) else ""


def render(reply: Reply, *, buttons: bool = True) -> SlackMessage:
    """The whole reply as one message (plus uploads)."""
    blocks: list[dict[str, Any]] = []
    uploads: list[Upload] = []
    mentions = [m for m in (mention(p.text) for p in reply.parts if p.kind is PartKind.MENTION) if m]
    for index, part in enumerate(reply.parts):
        blocks += _part_blocks(part, index, reply, uploads)
    if mentions:  # "@Ada ✅ ranked passed": the mention leads the first line
        first = next((b for b in blocks if b["type"] == "section" and not b["text"]["text"].startswith(FENCE)), None)
        if first is None:
            blocks.insert(0, _section(" ".join(mentions)))
        else:
            first["text"]["text"] = _cut(" ".join(mentions) + " " + first["text"]["text"], SECTION_LIMIT)
    if reply.title:
        blocks.insert(0, {"type": "header", "text": _plain(f"{tone_icon(reply.tone)} {reply.title}", HEADER_LIMIT)})
    actions = _actions(reply) if buttons else []
    room = MAX_BLOCKS - len(actions)
    if len(blocks) > room:
        blocks = blocks[: room - 1] + [_context("The rest of this report is in the attached report.txt.")]
        uploads.append(Upload("report.txt", plain_text(reply).encode(), reply.title or "report"))
    text = " ".join([*mentions, escape(summary_line(reply))])
    return SlackMessage(text=_cut(text, TEXT_LIMIT), blocks=blocks + actions, uploads=uploads)


def one_line(reply: Reply) -> SlackMessage:
    """A short status form of a reply: a progress line, or a finished run's line once its report is posted."""
    score = reply.data.get("score_us") if reply.final else None
    line = escape(summary_line(reply)) + (f", score {format_us(score)}" if isinstance(score, int | float) else "")
    return SlackMessage(text=_cut(line, TEXT_LIMIT), blocks=[_context(line)])


def _part_blocks(part: Part, index: int, reply: Reply, uploads: list[Upload]) -> list[dict[str, Any]]:
    if part.kind is PartKind.STATUS:
        return [_section(f"{tone_icon(part.tone)} {slack_moments(mrkdwn(part.text))}")]
    if part.kind is PartKind.TEXT:  # moments as Slack's date tokens: each reader sees their own time
        text = slack_moments(mrkdwn(part.text))
        return [_section(chunk) for chunk in split_text(text, SECTION_LIMIT) if chunk.strip()]
    if part.kind is PartKind.TABLE:
        return _table(part, index, uploads)
    if part.kind is PartKind.CODE:
        return _code(part, index, reply, uploads)
    if part.kind is PartKind.CHART:
        name = f"chart-{index + 1}.png"
        uploads.append(Upload(name, chart_png(part), part.text or "chart"))
        return [_context(f"📈 {escape(part.text or 'Chart')}: see the attached {name}.")]
    if part.kind is PartKind.IMAGE and part.data:
        name = part.filename or f"image-{index + 1}.png"
        uploads.append(Upload(name, part.data, name))
        return [_context(f"🖼 Attached {escape(name)}.")]
    return []


def _table(part: Part, index: int, uploads: list[Upload]) -> list[dict[str, Any]]:
    text = monospace_table(part.headers, part.rows)
    fenced = f"{FENCE}\n{escape(text)}\n{FENCE}"
    if len(fenced) <= SECTION_LIMIT:
        return [_section(fenced)]
    name = f"table-{index + 1}.txt"
    uploads.append(
        Upload(
            name,
            monospace_table(part.headers, part.rows, max_cell=10_000).encode(),
            " / ".join(part.headers[:3]) or "table",
        )
    )
    lines = escape(text).split("\n")
    shown: list[str] = []
    for line in lines:
        if sum(len(s) + 1 for s in shown) + len(line) > PREVIEW_CHARS:
            break
        shown.append(line)
    more = len(lines) - len(shown)
    return [
        _section(f"{FENCE}\n" + "\n".join(shown) + f"\n{FENCE}"),
        _context(f"{more} more rows in the attached {name}."),
    ]


def _code(part: Part, index: int, reply: Reply, uploads: list[Upload]) -> list[dict[str, Any]]:
    fenced = f"{FENCE}\n{escape(part.text.rstrip())}\n{FENCE}"
    if len(fenced) <= SECTION_LIMIT:
        return [_section(fenced)]
    name = str(reply.data.get("filename") or attachment_name(reply, part, index))
    uploads.append(Upload(name, part.text.encode(), name))
    return [_context(f"📎 {part.text.count(chr(10)) + 1} lines: see the attached {escape(name)}.")]


def _actions(reply: Reply) -> list[dict[str, Any]]:
    """Buttons under a finished run's report and under announcements."""
    data = reply.data
    elements = []
    if reply.final and data.get("submission_id") and data.get("run_id"):
        elements.append(_button("View submission", VIEW_SUBMISSION, str(data["submission_id"])))
    board, gpu = str(data.get("leaderboard") or ""), str(data.get("gpu") or "")
    if reply.final and board and (data.get("run_id") or data.get("kind") == "announcement"):
        elements.append(_button("Leaderboard", SHOW_BOARD, f"{board} {gpu}".strip()))
        elements.append(
            _button(
                "Submit again" if data.get("run_id") else "Submit a kernel",
                SUBMIT_AGAIN,
                " ".join(w for w in (str(data.get("mode") or ""), board, gpu) if w),
            )
        )
    return [{"type": "actions", "block_id": "kr_report_actions", "elements": elements}] if elements else []


def _button(label: str, action_id: str, value: str) -> dict[str, Any]:
    return {"type": "button", "text": _plain(label, 75), "action_id": action_id, "value": value[:2000]}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cut(text, SECTION_LIMIT)}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(text, SECTION_LIMIT)}]}


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": _cut(strip_markup(text), limit), "emoji": True}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
