"""The shape of a registry entry: a command's ``Spec``, its ``Arg``s, its HTTP ``Route``s and who may run it.

``core.contracts.registry`` holds the entries themselves (the everyday commands there, the admins' in
``core.contracts.admin_commands``); this module holds only the types both build from, and the arguments they share.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from core.contracts.errors import UserError
from core.contracts.messages import CommandKind

FRONT_ENDS = ("terminal", "api", "discord", "slack")
# One letter for the arguments typed most, whatever the command: ``-l vectoradd`` in the terminal, ``l=vectoradd``
# or ``-l vectoradd`` in Slack
SHORT_NAMES: Mapping[str, str] = MappingProxyType({"leaderboard": "l", "gpu": "g", "mode": "m", "user": "u"})


class Access(enum.StrEnum):
    PUBLIC = "public"  # anyone, signed in or not: what the public web pages show (rankings, people, challenges)
    ANYONE = "anyone"  # anyone the core knows: a chat account, or a personal token's holder
    ADMIN = "admin"  # admins only; the core refuses everyone else before the handler runs
    CREATOR = "creator"  # admins and leaderboard creators; a creator manages only what they created


class ArgKind(enum.StrEnum):
    TEXT = "text"
    NUMBER = "number"  # a whole number
    GPUS = "gpus"  # one or more GPU names: repeated, or a comma list ("H100,A100")
    FILE = "file"  # a file: the terminal reads a path (a folder goes as a .tar.gz), chat takes an attachment
    PERSON = "person"  # someone else: ``platform:id`` or a name; Discord offers a member picker


@dataclass(frozen=True)
class Arg:
    name: str
    help: str
    kind: ArgKind = ArgKind.TEXT
    required: bool = False
    choices: tuple[str, ...] = ()
    # what each choice does, where a front end offers them one by one (Discord's /leaderboard submit MODE)
    choice_help: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    default: str = ""  # what the core takes when none is given (Slack's form picks it first)
    aliases: tuple[str, ...] = ()  # other names for the option, as people of other tools type them
    positional: bool | None = None  # in the terminal; None: positional exactly when required
    sentence: bool = False  # free text: in Slack, the words typed after the other arguments belong to it

    @property
    def is_positional(self) -> bool:
        return self.required if self.positional is None else self.positional


@dataclass(frozen=True)
class Route:
    """An HTTP route of the API; ``fixed`` are the arguments the route itself implies (``DELETE`` = revoke)."""

    method: str
    path: str  # "/v1/leaderboards/{leaderboard}"
    fixed: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))


@dataclass(frozen=True)
class Spec:
    kind: CommandKind
    words: tuple[str, ...]
    about: str
    args: tuple[Arg, ...] = ()
    aliases: tuple[tuple[str, ...], ...] = ()
    access: Access = Access.ANYONE
    private: bool = False  # in chat, answered to the asker alone
    routes: tuple[Route, ...] = ()
    not_on: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # front end -> why not

    @property
    def name(self) -> str:
        return " ".join(self.words)

    @property
    def submission(self) -> bool:
        return self.kind is CommandKind.SUBMIT

    def arg(self, name: str) -> Arg | None:
        """The argument called ``name``, one of its aliases or its short name (``SHORT_NAMES``)."""
        return next((a for a in self.args if name in (a.name, *a.aliases, SHORT_NAMES.get(a.name))), None)

    def usage(self) -> str:
        shown = [a.name.upper() if a.required else f"[{a.name.upper()}]" for a in self.args]
        return " ".join([self.name, *shown])

    def offered_on(self, front_end: str) -> bool:
        return front_end not in self.not_on


def arg_value(arg: Arg, value: object) -> object:
    """``value`` as ``arg`` takes it, or ``UserError`` in one sentence: GPU names as text (one, or a list of them), a
    whole number as a number or its digits, anything else as text (a number sent where text goes is that text). A
    boolean, an object, or a list where one value goes is no value of any argument."""
    if arg.kind is ArgKind.FILE:  # a file travels as the command's attachment, checked with it
        return value
    if arg.kind is ArgKind.GPUS:
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return value
        raise UserError(f'`{arg.name}` takes GPU names as text, like "H100" or ["H100", "A100"]; send them so.')
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        wanted = "a whole number" if arg.kind is ArgKind.NUMBER else "text"
        raise UserError(f"`{arg.name}` takes {wanted}, not {type(value).__name__}; send one plain value.")
    return value if arg.kind is ArgKind.NUMBER else str(value)


def check_arguments(spec: Spec, args: dict[str, object]) -> None:
    """Refuse a command whose declared arguments carry values none of them takes (``arg_value``), whichever front
    end built it."""
    for name, value in args.items():
        if (arg := spec.arg(name)) is not None and value is not None:
            arg_value(arg, value)


LEADERBOARD = Arg("leaderboard", "the leaderboard", required=True, aliases=("leaderboard_name",))
GPU = Arg("gpu", "only this GPU (default: every GPU the leaderboard offers)")
TITLE = Arg("title", "the challenge's title", required=True)
SUBMISSION_ID = Arg("id", "the submission number, as in #12", ArgKind.NUMBER, required=True)
