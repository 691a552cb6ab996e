"""What people type: the slash command's subcommands, and the words of a mention that carries a kernel.

``/kernelrank show vectoradd H100`` and ``@kernelrank show vectoradd H100`` mean the same thing. Arguments
are positional in the order the usage line gives, or named (``gpu=H100``, ``--gpu H100``). Slack escapes
``&``, ``<`` and ``>`` in message text and wraps mentions and links in ``<...>``; both are undone here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.contracts.commands import MODES, SubmissionHeaders
from core.contracts.errors import UserError
from core.contracts.messages import CommandKind

_ENTITY = re.compile(r"<([@#!][^>|]*)(?:\|[^>]*)?>")     # <@U123>, <#C123|general>, <!here>
_LINK = re.compile(r"<((?:https?|mailto):[^>|]*)(?:\|([^>]*))?>")
_SPLIT = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Subcommand:
    name: str
    kind: CommandKind | None        # None: handled by the adapter itself (help)
    params: tuple[str, ...] = ()    # positional argument names, in order
    required: int = 0               # how many of them must be given
    about: str = ""
    private: bool = False           # answered only to the asker, even when asked in public
    usage_args: str = ""

    @property
    def usage(self) -> str:
        return f"{self.name} {self.usage_args}".strip()


SUBCOMMANDS: dict[str, Subcommand] = {s.name: s for s in (
    Subcommand("submit", CommandKind.SUBMIT, about="submit a kernel (opens a form; or mention me with the file)",
               usage_args="[MODE] [LEADERBOARD] [GPU ...]"),
    Subcommand("list", CommandKind.LIST, about="the leaderboards"),
    Subcommand("show", CommandKind.SHOW, ("leaderboard", "gpu"), 1, "a leaderboard's ranking per GPU",
               usage_args="LEADERBOARD [GPU]"),
    Subcommand("mine", CommandKind.MINE, ("leaderboard", "gpu"), 1, "your submissions to a leaderboard", True,
               "LEADERBOARD [GPU]"),
    Subcommand("history", CommandKind.HISTORY, ("leaderboard", "gpu"), 1, "your best score over time, as a chart",
               True, "LEADERBOARD [GPU]"),
    Subcommand("task", CommandKind.TASK, ("leaderboard",), 1, "the problem to solve", usage_args="LEADERBOARD"),
    Subcommand("template", CommandKind.TEMPLATE, ("leaderboard", "lang"), 1, "a starter file",
               usage_args="LEADERBOARD [Python|Triton|CUDA]"),
    Subcommand("eval-code", CommandKind.EVAL_CODE, about="the source of the evaluation harness"),
    Subcommand("submission", CommandKind.SUBMISSION, ("id",), 1, "one submission with its code and runs",
               usage_args="ID"),
    Subcommand("queue", CommandKind.QUEUE, ("gpu",), 0, "jobs waiting and running per GPU", usage_args="[GPU]"),
    Subcommand("stats", CommandKind.STATS, about="kernelrank in figures"),
    Subcommand("token", CommandKind.TOKEN, ("action", "prefix"), 0,
               "a personal token for the terminal client and the web; list or revoke yours (private)", True,
               "[new|list|revoke PREFIX]"),
    Subcommand("help", None, about="this help", private=True),
)}


@dataclass
class Invocation:
    sub: Subcommand
    args: dict[str, str] = field(default_factory=dict)
    rest: list[str] = field(default_factory=list)     # the words after the subcommand, as typed


SubmitArgs = SubmissionHeaders      # the same three choices as a file's header lines, typed as words


def clean(text: str) -> str:
    """Message text as the person typed it: mentions removed, links and Slack's escapes undone."""
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text or "")
    text = _ENTITY.sub(" ", text)
    return " ".join(text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").split())


def words(text: str) -> list[str]:
    return [w for w in clean(text).split() if w]


def parse(text: str, command: str) -> Invocation:
    """A slash command's text (or a mention's words) as a subcommand and its arguments.

    Raises ``UserError`` with the usage line when the subcommand is unknown or an argument is missing.
    An empty text is ``help``.
    """
    tokens = words(text)
    if not tokens:
        return Invocation(SUBCOMMANDS["help"])
    name = tokens[0].lower()
    sub = SUBCOMMANDS.get(name)
    if sub is None:
        raise UserError(f"`{command} {tokens[0][:40]}` is not a command. {help_hint(command)}")
    if sub.kind is CommandKind.SUBMIT:
        return Invocation(sub, rest=tokens[1:])
    args = _named_and_positional(tokens[1:], sub, command)
    missing = [p for p in sub.params[:sub.required] if p not in args]
    if missing:
        raise UserError(f"`{command} {sub.name}` needs {_a(missing[0])}: `{command} {sub.usage}`.")
    return Invocation(sub, args, tokens[1:])


def parse_submit(tokens: list[str]) -> SubmitArgs:
    """``[MODE] [LEADERBOARD] [GPU ...]`` in any order: a mode is recognised by name, the first other word is
    the leaderboard and the rest are GPUs. ``leaderboard=``, ``gpu=`` and ``mode=`` (or ``--gpu X``) name them."""
    found = SubmitArgs()
    positional: list[str] = []
    for key, value in _pairs(tokens):
        if key in ("leaderboard", "lb", "l", "problem"):
            found.leaderboard = value
        elif key in ("gpu", "gpus", "g"):
            found.gpus += [g for g in _SPLIT.split(value) if g]
        elif key in ("mode", "m"):
            found.mode = value.lower()
        elif key:
            raise UserError(f"`{key}` is not an option of submit: give a mode, a leaderboard and GPUs, "
                            "like `ranked vectoradd H100`.")
        elif value.lower() in MODES and not found.mode:
            found.mode = value.lower()
        else:
            positional += [v for v in _SPLIT.split(value) if v]
    if positional and not found.leaderboard:
        found.leaderboard = positional.pop(0)
    found.gpus += positional
    found.gpus = list(dict.fromkeys(found.gpus))
    return found


def usage(command: str) -> str:
    width = max(len(s.usage) for s in SUBCOMMANDS.values())
    lines = [f"{command} {s.usage.ljust(width)}  {s.about}" for s in SUBCOMMANDS.values()]
    return "\n".join(lines)


def help_hint(command: str) -> str:
    return f"`{command} help` lists the commands."


def _named_and_positional(tokens: list[str], sub: Subcommand, command: str) -> dict[str, str]:
    args: dict[str, str] = {}
    free = list(sub.params)
    for key, value in _pairs(tokens):
        if key:
            if key not in sub.params:
                raise UserError(f"`{key}` is not an option of {sub.name}: `{command} {sub.usage}`.")
            args[key] = value
            if key in free:
                free.remove(key)
        elif not free:
            raise UserError(f"Too many words after `{sub.name}`: `{command} {sub.usage}`.")
        else:
            args[free.pop(0)] = value
    return args


def _pairs(tokens: list[str]) -> list[tuple[str, str]]:
    """``key=value`` and ``--key value`` as (key, value); a plain word as ("", word)."""
    pairs: list[tuple[str, str]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.startswith("-") and len(token) > 1 and "=" not in token:
            key = token.lstrip("-").lower()
            if index + 1 >= len(tokens):
                raise UserError(f"`{token}` needs a value after it.")
            pairs.append((key, tokens[index + 1]))
            index += 2
            continue
        key, sep, value = token.partition("=")
        pairs.append((key.lstrip("-").lower(), value) if sep and key else ("", token))
        index += 1
    return pairs


def _a(param: str) -> str:
    return {"leaderboard": "a leaderboard", "id": "a submission id", "gpu": "a GPU"}.get(param, param)
