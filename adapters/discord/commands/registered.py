"""The registry's commands (``core.contracts.registry``) as slash commands, built from their entries.

A registry command appears as ``/leaderboard WORDS``, or, when its first word is ``admin``, as ``/admin WORDS``
(a second word becomes a subgroup: ``/admin token issue``), with one option per argument, typed by its kind (a
number, a member picker for a person, a menu for choices) and described by its help. Each alias of a command
(``show-personal``) is a command of its own with the same callback. Leaderboard and GPU options autocomplete.
A file argument (``admin create``'s problem) is an attachment option, downloaded and sent as the command's attachment;
``/admin create`` with no GPU named runs on every pool its problem can use: only the core, which loads the problem,
knows which those are (a menu here would offer pools the problem cannot use).
``submit`` is built from its entry the same way, with the mode typed as a subcommand as the anchor's bot has it
(``CHOICE_COMMANDS``: ``/leaderboard submit ranked``, one command per mode, described by the registry's table of
modes); what happens after is its own module's (``commands.submit``): a file, a GPU menu and a thread are more than a
query.

A Discord option has one name, so the spellings people bring from the anchor's bot (``SECOND_NAMES``:
``leaderboard_name``) are second, optional options beside the registry's own: ``/leaderboard show
leaderboard_name:vectoradd`` works, and the registry's option becomes optional where the second one can stand in.
Where the anchor's bot has only its own spelling (``ANCHOR_NAMES``: the kernel file is ``script``), that alias is the
option's name.
A person's member picker gets a text option beside it the same way (``person_typed``): ``slack:U123``, a name, or
a leaderboard for ``/admin limit``.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

import discord
from discord import app_commands

from adapters.discord.commands import submit
from adapters.discord.identity import display_name
from adapters.discord.options import gpu_names, leaderboard_names
from adapters.discord.respond import Refusal
from adapters.discord.services import Services
from core.contracts.messages import CommandKind
from core.contracts.registry import COMMANDS, Arg, ArgKind, Spec

AUTOCOMPLETED = {"leaderboard": leaderboard_names, "leaderboard_name": leaderboard_names, "gpu": gpu_names}
SECOND_NAMES = ("leaderboard_name",)  # argument aliases that get an option of their own in Discord
ANCHOR_NAMES = ("script",)  # argument aliases that Discord shows instead of the registry's name
CHOICE_COMMANDS = {CommandKind.SUBMIT: "mode"}  # an argument typed as a subcommand: one command per choice
# A member picker names Discord members only: this text option beside it takes slack:ID, a name or, for
# ``admin limit``, a leaderboard.
PERSON_TYPED = "{}_typed"


def register(groups: dict[str, app_commands.Group], svc: Services) -> None:
    """Add every command of the registry to ``groups["leaderboard"]`` or ``groups["admin"]``."""
    for spec in COMMANDS:
        if not spec.offered_on("discord"):
            continue
        admin = spec.words[0] == "admin"
        for spelling in (spec.words, *spec.aliases):
            words = spelling[1:] if admin else spelling
            parent = _subgroup(groups["admin" if admin else "leaderboard"], words[:-1])
            by_choice = spec.arg(CHOICE_COMMANDS[spec.kind]) if spec.kind in CHOICE_COMMANDS else None
            if by_choice is None:
                parent.add_command(command_for(spec, words[-1], svc))
                continue
            group = app_commands.Group(name=words[-1], description=_short(spec.about), parent=parent)
            for choice in by_choice.choices:
                about = by_choice.choice_help.get(choice, spec.about)
                group.add_command(command_for(spec, choice, svc, {by_choice.name: choice}, about))


def command_for(
    spec: Spec, name: str, svc: Services, fixed: dict[str, str] | None = None, about: str = ""
) -> app_commands.Command:
    """The command ``name`` for ``spec``; the arguments in ``fixed`` are given by the command itself."""
    fixed = fixed or {}
    command: app_commands.Command[Any, ..., None] = app_commands.Command(
        name=name, description=_short(about or spec.about), callback=_callback(spec, svc, fixed)
    )
    for option in (option for arg in spec.args if arg.name not in fixed for option in option_names(arg)):
        if option in AUTOCOMPLETED:
            command.autocomplete(option)(AUTOCOMPLETED[option](svc.catalogue))
    return command


def option_names(arg: Arg) -> tuple[str, ...]:
    """The argument's options: its own (the anchor's spelling where Discord shows that instead), then the others."""
    own = next((alias for alias in arg.aliases if alias in ANCHOR_NAMES), arg.name)
    return (own, *second_names(arg))


def second_names(arg: Arg) -> tuple[str, ...]:
    """The argument's other options: the anchor's spellings, and a person typed out (``PERSON_TYPED``)."""
    typed = (PERSON_TYPED.format(arg.name),) if arg.kind is ArgKind.PERSON else ()
    return (*(alias for alias in arg.aliases if alias in SECOND_NAMES), *typed)


def _callback(spec: Spec, svc: Services, fixed: dict[str, str]):
    offered = [arg for arg in spec.args if arg.name not in fixed]

    async def callback(itx: discord.Interaction, **options: Any) -> None:
        args: dict[str, str] = dict(fixed)
        file: discord.Attachment | None = None
        for arg in offered:
            value = next((options[n] for n in option_names(arg) if options.get(n) is not None), None)
            if value is None:
                continue
            if arg.kind is ArgKind.FILE:  # the attached file travels as the command's attachment
                file = value
                continue
            if isinstance(value, discord.User | discord.Member):
                if value.id != itx.user.id:  # yourself is the default, not "someone else"
                    args.update({arg.name: str(value.id), f"{arg.name}_name": display_name(value)})
                continue
            args[arg.name] = str(value)
        if spec.submission:
            if file is None:  # Discord makes the option required; a client that sent none still gets a sentence
                raise Refusal("Attach your kernel's file to the command and submit again.")
            await submit.run_submission(svc, itx, file, args)
            return
        await svc.query(itx, spec.kind, public=not spec.private, file=file, **args)

    parameters = [inspect.Parameter("itx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=discord.Interaction)]
    required = [arg for arg in offered if arg.required and not second_names(arg)]  # Discord lists them first
    optional = [arg for arg in offered if arg not in required]
    parameters += [
        inspect.Parameter(option_names(arg)[0], inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(arg, True))
        for arg in required
    ]
    parameters += [
        inspect.Parameter(
            option_names(arg)[0], inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(arg, False), default=None
        )
        for arg in optional
    ]
    parameters += [  # the second spellings after the registry's own options
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=str | None if name == PERSON_TYPED.format(arg.name) else _annotation(arg, False),
            default=None,
        )
        for arg in offered
        for name in second_names(arg)
    ]
    # discord.py reads a command's options from its callback's signature and these descriptions
    callback.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    callback.__discord_app_commands_param_description__ = {  # type: ignore[attr-defined]
        **{option_names(arg)[0]: _short(arg.help) for arg in offered},
        **{name: _short(f"{arg.help} (the same as {arg.name})") for arg in offered for name in second_names(arg)},
        **{PERSON_TYPED.format(a.name): _short(a.help) for a in offered if a.kind is ArgKind.PERSON},
    }
    return callback


def _annotation(arg: Arg, required: bool) -> Any:
    if arg.choices:
        kind: Any = Literal[arg.choices]  # a menu of the choices
    elif arg.kind is ArgKind.NUMBER:
        kind = app_commands.Range[int, 1]
    elif arg.kind is ArgKind.PERSON:
        kind = discord.User
    elif arg.kind is ArgKind.FILE:
        kind = discord.Attachment
    else:
        kind = str
    return kind if required else kind | None


def _subgroup(group: app_commands.Group, words: tuple[str, ...]) -> app_commands.Group:
    for word in words:
        found = next((c for c in group.commands if c.name == word and isinstance(c, app_commands.Group)), None)
        group = found or app_commands.Group(name=word, description=f"{word} commands", parent=group)
    return group


def _short(text: str) -> str:
    """Discord allows descriptions of at most 100 characters."""
    return text if len(text) <= 100 else text[:99].rsplit(" ", 1)[0] + "…"
