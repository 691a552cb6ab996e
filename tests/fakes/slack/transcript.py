"""Recorded Slack calls as a readable transcript (Markdown), for docs/slack.md.

Each step is a title (what the person did) and the calls the app made in answer; a call that shows
something to people becomes a quoted message, Block Kit rendered roughly as Slack shows it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tests.fakes.slack.calls import Call

SHOWN = {
    "response_url": "answer through the command's response_url",
    "chat.postMessage": "message",
    "chat.update": "message edited in place",
    "chat.postEphemeral": "visible only to the asker",
    "views.open": "form opened",
    "views.update": "form updated",
    "files.completeUploadExternal": "files uploaded",
    "chat.delete": "message deleted",
}
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


def markdown(steps: Sequence[tuple[str, Sequence[Call]]]) -> str:
    out: list[str] = []
    for title, calls in steps:
        out.append(f"#### {title}\n")
        shown = [c for c in calls if c.method in SHOWN]
        if not shown:
            out.append("_(nothing shown)_\n")
        for call in shown:
            out.append(f"*{_where(call)}*\n")
            body = _body(call)
            if body:
                out.append("\n".join("> " + line if line else ">" for line in body.splitlines()) + "\n")
    return "\n".join(out)


def _where(call: Call) -> str:
    p = call.params
    what = SHOWN[call.method]
    if call.method == "response_url":
        return f"{what} ({p.get('response_type', 'ephemeral')})"
    if call.method == "files.completeUploadExternal":
        names = ", ".join(str(f.get("title")) for f in p.get("files") or [])
        return f"{what}: {names} (`files_upload_v2` into {_place(p.get('channel_id'), p.get('thread_ts'))})"
    if call.method.startswith("views."):
        return f"{what} (`{call.method}`)"
    return f"{what} (`{call.method}` in {_place(p.get('channel'), p.get('thread_ts'))})"


def _place(channel: Any, thread: Any) -> str:
    return f"{channel}, thread {thread}" if thread else f"{channel}"


def _body(call: Call) -> str:
    p = call.params
    if call.method.startswith("views."):
        view = p.get("view") or {}
        lines = [f"**{view.get('title', {}).get('text', '')}**"]
        for block in view.get("blocks") or []:
            if block.get("type") == "input":
                element = block.get("element") or {}
                chosen = (
                    (element.get("initial_option") or {}).get("value")
                    or ", ".join(o["value"] for o in element.get("initial_options") or [])
                    or element.get("initial_value")
                )
                options = ", ".join(o["value"] for o in element.get("options") or [])
                lines.append(
                    f"- {block['label']['text']}: {element.get('type')}"
                    + (f" [{options}]" if options else "")
                    + (f" = {chosen}" if chosen else "")
                )
        lines.append(f"- [{(view.get('submit') or {}).get('text', 'Submit')}]")
        return "\n".join(lines)
    if call.method in ("files.completeUploadExternal", "chat.delete"):
        return ""
    return blocks_text(p.get("blocks") or []) or _unescape(str(p.get("text", "")))


def blocks_text(blocks: Sequence[dict[str, Any]]) -> str:
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            lines.append(f"**{block['text']['text']}**")
        elif kind == "section":
            lines.append(_mrkdwn(block["text"]["text"]))
        elif kind == "context":
            lines.append(" ".join(f"_{_mrkdwn(e.get('text', ''))}_" for e in block.get("elements", [])))
        elif kind == "actions":
            lines.append(" ".join(f"`[{e['text']['text']}]`" for e in block.get("elements", [])))
    return "\n".join(lines)


def _mrkdwn(text: str) -> str:
    """Slack mrkdwn as Markdown: *bold* becomes **bold** outside code blocks."""
    parts = text.split("```")
    for index in range(0, len(parts), 2):
        parts[index] = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"**\1**", parts[index])
    return _unescape("```".join(parts))


def _unescape(text: str) -> str:
    for escaped, plain in _ENTITIES:
        text = text.replace(escaped, plain)
    return text
