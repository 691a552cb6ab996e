"""What people type: the slash command's subcommands, and the words of a mention that carries a kernel.

``/kernelrank show vectoradd H100`` and ``@kernelrank show vectoradd H100`` mean the same thing. Arguments
are positional in the order the usage line gives, or named (``gpu=H100``, ``--gpu H100``); words are split like a
shell's, so quotes keep a time or a reason in one argument (``deadline="2026-12-01 18:00"``). Slack escapes
``&``, ``<`` and ``>`` in message text and wraps mentions and links in ``<...>``; both are undone here.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from core.contracts.errors import UserError
from core.contracts.messages import CommandKind
from core.contracts.registry import BY_KIND, COMMANDS, Arg, ArgKind, Spec, find, first_words

_ENTITY = re.compile(r"<([@#!][^>|]*)(?:\|[^>]*)?>")  # <@U123>, <#C123|general>, <!here>
_LINK = re.compile(r"<((?:https?|mailto):[^>|]*)(?:\|([^>]*))?>")
_SPLIT = re.compile(r"[\s,]+")
_STRAIGHT_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})  # Slack's “ ” ‘ ’


@dataclass(frozen=True)
class Subcommand:
    name: str
    kind: CommandKind | None  # None: handled by the adapter itself (help)
    params: tuple[str, ...] = ()  # argument names, in the order they may be typed without their name
    required: int = 0  # how many of them must be given
    about: str = ""
    private: bool = False  # answered only to the asker, even when asked in public
    usage_args: str = ""
    spec: Spec | None = None

    @property
    def usage(self) -> str:
        return f"{self.name} {self.usage_args}".strip()


def submit_usage(spec: Spec) -> str:
    """``[MODE] [LEADERBOARD] [GPU ...]``, as ``parse_submit`` reads them, then any argument that must be named."""
    board, gpus = _free_words(spec)
    chosen = [arg for arg in spec.args if arg.choices]
    named = [arg for arg in spec.args if arg not in (*chosen, board, gpus) and arg.kind is not ArgKind.FILE]
    return " ".join(
        [
            *(f"[{arg.name.upper()}]" for arg in chosen),
            f"[{board.name.upper()}] [{gpus.name.upper()} ...]",
            *(f"[{arg.name}=...]" for arg in named),
        ]
    )


def _free_words(spec: Spec) -> tuple[Arg, Arg]:
    """The arguments that words typed without a name go to: the first text argument, then the GPUs."""
    board = next(a for a in spec.args if a.kind is ArgKind.TEXT and not a.choices)
    return board, next(a for a in spec.args if a.kind is ArgKind.GPUS)


def _subcommand(spec: Spec) -> Subcommand:
    typed = [a for a in spec.args if spec.submission or a.kind is not ArgKind.FILE]  # a file comes attached
    required = next((i for i, arg in enumerate(typed) if not arg.required), len(typed))
    form = spec.submission or any(a.kind is ArgKind.FILE and a.required for a in spec.args)  # admin create
    about = (
        f"{spec.about} (opens a form; or mention me with the file)"
        if form
        else f"{spec.about} (mention me with the file attached)"
        if len(typed) < len(spec.args)
        else spec.about
    )
    usage = " ".join(a.name.upper() if a.required else f"[{a.name.upper()}]" for a in typed)
    return Subcommand(
        spec.name,
        spec.kind,
        tuple(a.name for a in typed),
        required,
        about,
        spec.private,
        submit_usage(spec) if spec.submission else usage,
        spec,
    )


HELP = Subcommand("help", None, about="this help", private=True)
# Every registry command offered on Slack, by name and by each alias (``show-personal`` is ``mine``), and help
SUBCOMMANDS: dict[str, Subcommand] = {
    " ".join(spelling): sub
    for spec in COMMANDS
    if spec.offered_on("slack")
    for sub in [_subcommand(spec)]
    for spelling in (spec.words, *spec.aliases)
} | {"help": HELP}


@dataclass
class Invocation:
    sub: Subcommand
    args: dict[str, str] = field(default_factory=dict)
    rest: list[str] = field(default_factory=list)  # the words after the subcommand, as typed


SubmitArgs = dict[str, Any]  # the ``submit`` entry's arguments by name; its GPUs a list


def clean(text: str) -> str:
    """Message text as the person typed it: mentions removed, links and Slack's escapes undone."""
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text or "")
    text = _ENTITY.sub(" ", text)
    return " ".join(text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").split())


def words(text: str) -> list[str]:
    """The words typed, split like a shell: quotes keep spaces inside one word (``deadline="2026-12-01 18:00"``,
    ``reason='reads the answer'``). Slack's curly quotes count as straight ones, a backslash is a backslash, and
    an apostrophe with no partner is a letter (``don't``). An opened double quote left unclosed is refused."""
    typed = clean(text).translate(_STRAIGHT_QUOTES)
    try:
        return _shell_words(typed, "\"'")
    except ValueError:  # an unpaired ' is an apostrophe
        pass
    try:
        return _shell_words(typed, '"')
    except ValueError:
        raise UserError(
            'A " opens quoted words that never close: close it, like deadline="2026-12-01 18:00", or leave it out.'
        ) from None


def _shell_words(text: str, quotes: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split, lexer.quotes, lexer.escape, lexer.commenters = True, quotes, "", ""
    return list(lexer)


def parse(text: str, command: str) -> Invocation:
    """A slash command's text (or a mention's words) as a subcommand and its arguments.

    Raises ``UserError`` with the usage line when the subcommand is unknown or an argument is missing.
    An empty text is ``help``.
    """
    tokens = words(text)
    if not tokens or tokens[0].lower() == "help":
        return Invocation(HELP)
    sub, used = _lookup(tokens)
    if sub is None:
        typed = tokens[:2] if tokens[0].lower() in first_words() else tokens[:1]  # "admin frob", or "frob"
        raise UserError(f"`{command} {' '.join(typed)[:60]}` is not a command. {help_hint(command)}")
    if sub.kind is CommandKind.SUBMIT:
        return Invocation(sub, rest=tokens[used:])
    args = _named_and_positional(tokens[used:], sub, command)
    missing = [p for p in sub.params[: sub.required] if p not in args]
    if missing:
        raise UserError(f"`{command} {sub.name}` needs {_a(missing[0])}: `{command} {sub.usage}`.")
    return Invocation(sub, args, tokens[used:])


def is_command(tokens: list[str]) -> bool:
    """Whether the words start with a command other than submit (a mention that asks something)."""
    sub, _ = _lookup(tokens)
    return (sub is not None and sub.kind is not CommandKind.SUBMIT) or (bool(tokens) and tokens[0].lower() == "help")


def _lookup(tokens: list[str]) -> tuple[Subcommand | None, int]:
    found = find(tokens)
    if found is None or not found[0].offered_on("slack"):
        return None, 0
    return SUBCOMMANDS[found[0].name], found[1]


def parse_submit(tokens: list[str]) -> SubmitArgs:
    """The words of a submission, in any order: a word that is one of an argument's choices is that argument (a
    mode), the first other word is the leaderboard and the rest are GPUs (``_free_words``). Any argument of the
    ``submit`` entry may be named instead: ``leaderboard=``, ``gpu=``, ``mode=``, an alias or a short name, or
    ``--gpu X``."""
    spec = BY_KIND[CommandKind.SUBMIT]
    board, gpus = _free_words(spec)
    found: SubmitArgs = {}
    free: list[str] = []
    for key, value in _pairs(tokens):
        arg = spec.arg(key) if key else _choice_of(spec, value, found)
        if key and (arg is None or arg.kind is ArgKind.FILE):
            raise UserError(
                f"`{key}` is not an option of submit: give a mode, a leaderboard and GPUs, "
                "like `ranked vectoradd H100`."
            )
        if arg is None:
            free += [word for word in _SPLIT.split(value) if word]
        elif arg.kind is ArgKind.GPUS:
            found[arg.name] = [*found.get(arg.name, []), *(g for g in _SPLIT.split(value) if g)]
        else:
            found[arg.name] = value.lower() if arg.choices else value
    if free and board.name not in found:
        found[board.name] = free.pop(0)
    if free or gpus.name in found:
        found[gpus.name] = list(dict.fromkeys([*found.get(gpus.name, []), *free]))
    return found


def _choice_of(spec: Spec, word: str, found: SubmitArgs) -> Arg | None:
    """The argument not given yet that has ``word`` among its choices (``ranked`` is a mode)."""
    return next((a for a in spec.args if word.lower() in a.choices and a.name not in found), None)


def usage(command: str) -> str:
    """Every command with its usage; the admins' ones named on one line, so the help fits in one message."""
    subs = list({id(s): s for s in SUBCOMMANDS.values()}.values())  # each once, not once per alias
    everyday = [s for s in subs if not s.name.startswith("admin ")]
    admin = [s.name.removeprefix("admin ") for s in subs if s.name.startswith("admin ")]
    width = max(len(s.usage) for s in everyday)
    lines = [f"{command} {s.usage.ljust(width)}  {s.about}" for s in everyday]
    if admin:
        lines.append(
            f"{command} {'admin ...'.ljust(width)}  for admins: {', '.join(admin)} (typed alone, each "
            "says what it needs)"
        )
    lines.append('Words with spaces go in quotes: deadline="2026-12-01 18:00", reason="reads the answer from a file".')
    return "\n".join(lines)


def help_hint(command: str) -> str:
    return f"`{command} help` lists the commands."


def _named_and_positional(tokens: list[str], sub: Subcommand, command: str) -> dict[str, str]:
    args: dict[str, str] = {}
    free = list(sub.params)
    for key, value in _pairs(tokens):
        if key:
            arg = sub.spec.arg(key) if sub.spec else None
            if arg is None:
                raise UserError(f"`{key}` is not an option of {sub.name}: `{command} {sub.usage}`.")
            key = arg.name
            args[key] = value
            if key in free:
                free.remove(key)
        elif not free:
            sentence = next((a.name for a in sub.spec.args if a.sentence), None) if sub.spec else None
            if sentence is None:
                raise UserError(f"Too many words after `{sub.name}`: `{command} {sub.usage}`.")
            args[sentence] = f"{args[sentence]} {value}" if sentence in args else value  # a reason needs no quotes
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
