"""Discord's documented limits on what a message may carry, checked as Discord checks them.

A violation is answered as Discord answers it: HTTP 400 with JSON error code 50035 ("Invalid Form Body") and
the offending fields under ``errors``, or 50006 for an empty message.
"""

from __future__ import annotations

from typing import Any

CONTENT = 2000
EMBEDS = 10
FILES = 10
EMBED_TITLE = 256
EMBED_DESCRIPTION = 4096
EMBED_FIELDS = 25
EMBED_FIELD_NAME = 256
EMBED_FIELD_VALUE = 1024
EMBED_FOOTER = 2048
EMBED_AUTHOR = 256
EMBED_TOTAL = 6000
ACTION_ROWS = 5
SELECT_OPTIONS = 25
CUSTOM_ID = 100
CHOICES = 25
THREAD_NAME = 100


def _too_long(limit: int) -> dict[str, Any]:
    return {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {limit} or fewer in length."}]}


def message_errors(payload: dict[str, Any], files: int, *, editing: bool = False) -> dict[str, Any] | None:
    """The 400 body Discord would send for this message payload, or ``None`` when it is acceptable."""
    errors: dict[str, Any] = {}
    content = payload.get("content") or ""
    if len(content) > CONTENT:
        errors["content"] = _too_long(CONTENT)
    embeds = payload.get("embeds") or []
    if len(embeds) > EMBEDS:
        errors["embeds"] = _too_long(EMBEDS)
    total = 0
    for index, embed in enumerate(embeds):
        problems: dict[str, Any] = {}
        for key, limit in (("title", EMBED_TITLE), ("description", EMBED_DESCRIPTION)):
            text = embed.get(key) or ""
            total += len(text)
            if len(text) > limit:
                problems[key] = _too_long(limit)
        footer, author = (embed.get("footer") or {}).get("text") or "", (embed.get("author") or {}).get("name") or ""
        total += len(footer) + len(author)
        if len(footer) > EMBED_FOOTER:
            problems["footer"] = {"text": _too_long(EMBED_FOOTER)}
        if len(author) > EMBED_AUTHOR:
            problems["author"] = {"name": _too_long(EMBED_AUTHOR)}
        fields = embed.get("fields") or []
        if len(fields) > EMBED_FIELDS:
            problems["fields"] = _too_long(EMBED_FIELDS)
        for field in fields:
            total += len(field.get("name", "")) + len(field.get("value", ""))
            if len(field.get("name", "")) > EMBED_FIELD_NAME or len(field.get("value", "")) > EMBED_FIELD_VALUE:
                problems["fields"] = _too_long(EMBED_FIELD_VALUE)
        if problems:
            errors.setdefault("embeds", {})[str(index)] = problems
    if total > EMBED_TOTAL:
        errors.setdefault("embeds", {})["_errors"] = [
            {"code": "MAX_EMBED_SIZE_EXCEEDED", "message": f"Embed size exceeds maximum size of {EMBED_TOTAL}"}
        ]
    if files > FILES:
        errors["files"] = _too_long(FILES)
    component_errors = _component_errors(payload.get("components") or [])
    if component_errors:
        errors["components"] = component_errors
    if errors:
        return {"code": 50035, "errors": errors, "message": "Invalid Form Body"}
    if not editing and not (
        content or embeds or files or payload.get("components") or payload.get("sticker_ids") or payload.get("poll")
    ):
        return {"code": 50006, "message": "Cannot send an empty message"}
    return None


def _component_errors(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if len(rows) > ACTION_ROWS:
        return _too_long(ACTION_ROWS)
    errors: dict[str, Any] = {}
    for index, row in enumerate(rows):
        for item in row.get("components", []):
            if len(item.get("custom_id", "")) > CUSTOM_ID or len(item.get("options", [])) > SELECT_OPTIONS:
                errors[str(index)] = _too_long(CUSTOM_ID)
    return errors


def choice_errors(choices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The 400 body for an autocomplete answer Discord would refuse."""
    if len(choices) > CHOICES:
        return {"code": 50035, "errors": {"data": {"choices": _too_long(CHOICES)}}, "message": "Invalid Form Body"}
    for choice in choices:
        if not 1 <= len(str(choice.get("name", ""))) <= 100 or len(str(choice.get("value", ""))) > 100:
            return {"code": 50035, "errors": {"data": {"choices": _too_long(100)}}, "message": "Invalid Form Body"}
    return None
