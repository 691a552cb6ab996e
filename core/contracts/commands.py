"""Command grammar shared by every adapter, and the checks a submission file must pass.

Adapters build ``Command`` messages with these helpers so that a submission from Slack, Discord or a
terminal means the same thing. File checks live here (not in each adapter) so that the rules are
written once: size, UTF-8, file kind, and the ``#!POPCORN`` header lines GPU MODE users already write.
``check_lengths`` bounds the names and ids a command carries before anything is stored.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from core.contracts.errors import UserError, shown
from core.contracts.messages import Actor, Attachment, Command, CommandKind, ReplyTo

# What a submission asks for, the one table of modes: the registry's ``submit`` entry offers them, every front end
# shows them with these words (Discord's /leaderboard submit MODE, Slack's form, the terminal's --help)
MODES: Mapping[str, str] = MappingProxyType(
    {
        "test": "check correctness only",
        "benchmark": "check, then time it (not ranked)",
        "ranked": "check, time it and rank it",
        "profile": "check, then profile it",
    }
)
DEFAULT_MODE = "ranked"
# Other tools' names for our modes: popcorn-cli and the GPU MODE bot call a ranked submission "leaderboard"
MODE_ALIASES: Mapping[str, str] = MappingProxyType({"leaderboard": "ranked"})
SOURCE_SUFFIXES = (".py", ".cu")
TEMPLATE_LANGUAGES = ("Python", "Triton", "CUDA")
_HEADER = re.compile(r"^\s*#!\s*(?:POPCORN|kernelrank)\s+(leaderboard|gpus?|mode)\s+(.+?)\s*$", re.IGNORECASE)
HEADER_SCAN_LINES = 30
_UNNAMING = re.compile(r"[/\\\x00-\x1f\x7f]")  # a folder separator or a control character
MAX_NAME_CHARS = 255  # a file name longer than any file system allows is not a file name
MAX_DISPLAY_NAME_CHARS = 100  # a person's name as rankings show it
MAX_ID_CHARS = 200  # platform ids: users, roles, channels, threads, messages
MAX_PROBLEM_BYTES = 4 * 1024 * 1024  # a problem upload: a reference.py, or a .zip / .tar.gz of its folder


@dataclass
class SubmissionHeaders:
    leaderboard: str = ""
    gpus: list[str] = field(default_factory=list)
    mode: str = ""


def parse_headers(source: str) -> SubmissionHeaders:
    """Read ``#!POPCORN leaderboard X`` / ``#!POPCORN gpu A B`` / ``#!POPCORN mode M`` near the top."""
    headers = SubmissionHeaders()
    for line in source.splitlines()[:HEADER_SCAN_LINES]:
        if match := _HEADER.match(line):
            key, value = match.group(1).lower(), match.group(2)
            if key == "leaderboard":
                headers.leaderboard = value.split()[0]
            elif key == "mode":
                headers.mode = value.split()[0].lower()
            else:
                headers.gpus = [g for g in re.split(r"[\s,]+", value) if g]
    return headers


def decode_source(name: str, content: bytes, max_bytes: int) -> str:
    """Return the file's text or raise ``UserError`` saying what is wrong and what to do."""
    _check_file_name(name)
    if not name.endswith(SOURCE_SUFFIXES):
        raise UserError(f"{shown(name)!r} is not a kernel file: submit a .py or .cu file.")
    if len(content) > max_bytes:
        raise UserError(
            f"{name} is {len(content) // 1024} KiB; the limit is {max_bytes // 1024} KiB. "
            "Move data out of the source and submit again."
        )
    if not content.strip():
        raise UserError(f"{name} is empty: attach the file that defines custom_kernel.")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{name} is not UTF-8 text (byte {exc.start} is invalid): save it as UTF-8 and submit again."
        ) from exc
    if "\0" in text:
        raise UserError(
            f"{name} is a binary file (it holds NUL bytes), not source text: attach the kernel's source file."
        )
    return text


def check_lengths(cmd: Command) -> None:
    """Refuse a command whose identity, routing or file name is longer than kernelrank stores, saying which.

    These are stored with every submission (and a person is created from a user id, the asker's or the one
    ``history`` asks about). Other arguments are looked up, never stored: their handlers refuse an unknown
    value and quote it shortened.
    """
    if len(cmd.actor.display_name) > MAX_DISPLAY_NAME_CHARS:
        raise UserError(
            f"Your display name is {len(cmd.actor.display_name):,} characters long; kernelrank shows "
            f"names of at most {MAX_DISPLAY_NAME_CHARS} characters. Shorten it and try again."
        )
    fields = {
        "user id": cmd.actor.user_id,
        "asked-about user id": str(cmd.args.get("user") or ""),
        **{f"role {shown(r, 20)!r}": r for r in cmd.actor.roles},
        **{f"reply {name}": value for name, value in vars(cmd.reply_to).items() if isinstance(value, str)},
    }
    for what, value in fields.items():
        if len(value) > MAX_ID_CHARS:
            raise UserError(
                f"The {what} is {len(value):,} characters long; at most {MAX_ID_CHARS} are taken. "
                "Shorten it and try again."
            )
    if cmd.attachment is not None:
        _check_file_name(cmd.attachment.name)


def _check_file_name(name: str) -> None:
    """A file's own name: no folder (``../x.py``, ``a/b.py``), no control character (a NUL), not too long. It is
    stored and shown on pages and in chat, never used as a path here, so this keeps it a name."""
    if len(name) > MAX_NAME_CHARS:
        raise UserError(
            f"The file name is {len(name):,} characters long; rename the file to at most "
            f"{MAX_NAME_CHARS} characters and submit again."
        )
    if _UNNAMING.search(name) or name.strip(". ") == "":
        raise UserError(
            f"{shown(name)!r} is not a plain file name (it holds a folder, a control character or only dots); "
            "send the file under its own name, like kernel.py."
        )


def normalise_mode(mode: str) -> str:
    mode = (mode or DEFAULT_MODE).lower()
    mode = MODE_ALIASES.get(mode, mode)
    if mode not in MODES:
        raise UserError(f"Unknown mode {shown(mode)!r}: use one of {', '.join(MODES)}.")
    return mode


def submit_command(actor: Actor, reply_to: ReplyTo, file_name: str, content: bytes, **args: Any) -> Command:
    """A submission as every adapter sends it: the kernel file, and the arguments of the registry's ``submit``
    entry by their names (``leaderboard``, ``gpu``, ``mode``...); empty ones fall back to the file's headers."""
    return Command(
        actor=actor,
        reply_to=reply_to,
        kind=CommandKind.SUBMIT,
        args={name: value for name, value in args.items() if value is not None},
        attachment=Attachment(name=file_name, content=content),
    )


def query_command(actor: Actor, reply_to: ReplyTo, kind: CommandKind, **args: Any) -> Command:
    return Command(actor=actor, reply_to=reply_to, kind=kind, args={k: v for k, v in args.items() if v is not None})


def file_value(name: str, content: bytes) -> dict[str, str]:
    """A file argument (not a submission's kernel) as a JSON body carries it: its name and its bytes in base64."""
    return {"name": name, "base64": base64.b64encode(content).decode()}


def attachment_from(value: Any) -> Attachment:
    """The file a JSON file argument carries; ``UserError`` when it is not ``{"name": ..., "base64": ...}``."""
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("name"), str)
        or not isinstance(value.get("base64"), str)
    ):
        raise UserError('Send a file argument as {"name": "problem.tar.gz", "base64": "..."}.')
    try:
        return Attachment(name=value["name"], content=base64.b64decode(value["base64"], validate=True))
    except (binascii.Error, ValueError):
        raise UserError(f"The file {shown(value['name'])!r} is not valid base64; encode its bytes again.") from None
