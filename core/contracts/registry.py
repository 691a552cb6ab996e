"""Every command kernelrank understands, declared once: its words, arguments, who may run it, how it is asked.

The front ends follow this table. The terminal client's parser and its requests, the API's routes, the Slack
subcommands and the Discord slash commands are built from it; ``tests/adapters/test_registry_parity.py``
fails when a front end lacks a command (unless the entry says why it is not there). The core's handler table
(``core.service.handlers.HANDLERS``) is keyed by the same ``CommandKind``s, and a test holds the two together.

A new command costs one ``Spec`` here (an admin's in ``core.contracts.admin_commands``, whose entries close this
table), one handler, and its rendering where the generic one is not enough. The types are in ``core.contracts.specs``.

Conventions every front end keeps:
- ``words`` are what people type: ``kernelrank admin token issue NAME``, ``/kernelrank admin token issue NAME``
  (Slack), ``/admin token issue`` (Discord: commands whose first word is ``admin`` live in the ``/admin``
  group, every other one in ``/leaderboard``).
- Required arguments are positional in the terminal, optional ones are ``--options`` (unless ``positional``);
  Slack takes every argument in declaration order or as ``name=value`` (a ``sentence`` argument also takes the
  words left after the others: a reason needs no quotes); Discord has one option per argument.
- ``aliases`` of a command are other spellings people already use (the public bot's ``show-personal``);
  ``aliases`` of an argument are other option names (``leaderboard_name``); the arguments in ``SHORT_NAMES`` also
  take one letter (``-l``, ``l=``).
- ``submit`` follows its entry like every other command, its file coming the way each front end carries files (a
  path, a form's file field, an attachment): the terminal and the API take its arguments by name, Discord offers
  one command per mode (``/leaderboard submit ranked``, described by the mode's ``choice_help``: the one table of
  modes is ``core.contracts.commands.MODES``), and Slack reads its words in any order (a mode by its name, then the
  leaderboard, then GPUs) or by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from core.contracts.admin_commands import ADMIN_COMMANDS
from core.contracts.commands import DEFAULT_MODE, MODES
from core.contracts.messages import CommandKind
from core.contracts.specs import (
    FRONT_ENDS,
    GPU,
    LEADERBOARD,
    SHORT_NAMES,
    SUBMISSION_ID,
    TITLE,
    Access,
    Arg,
    ArgKind,
    Route,
    Spec,
)

__all__ = [
    "BY_KIND",
    "COMMANDS",
    "FRONT_ENDS",
    "SHORT_NAMES",
    "Access",
    "Arg",
    "ArgKind",
    "Route",
    "Spec",
    "find",
    "first_words",
]


def _board(path: str = "") -> str:
    return "/v1/leaderboards/{leaderboard}" + path


_EVERYDAY: tuple[Spec, ...] = (
    Spec(
        CommandKind.SUBMIT,
        ("submit",),
        "submit a kernel: check it, time it and rank it on the GPUs you pick",
        (
            Arg(
                "file",
                "your kernel: a .py file defining custom_kernel, or a .cu file",
                ArgKind.FILE,
                required=True,
                aliases=("script",),
            ),
            Arg(
                "leaderboard",
                "the leaderboard (default: the file's #!POPCORN leaderboard line)",
                aliases=("leaderboard_name", "lb", "problem"),
            ),
            Arg(
                "gpu",
                "the GPUs to run on (default: the file's #!POPCORN gpu line, or asked)",
                ArgKind.GPUS,
                aliases=("gpus",),
            ),
            Arg(
                "mode",
                "; ".join(f"{mode}: {about}" for mode, about in MODES.items())
                + f" (default: the file's #!POPCORN mode line, or {DEFAULT_MODE})",
                choices=tuple(MODES),
                choice_help=MODES,
                default=DEFAULT_MODE,
            ),
        ),
        routes=(Route("POST", "/v1/submissions"),),
    ),
    Spec(
        CommandKind.LIST,
        ("list",),
        "the leaderboards, their GPUs and deadlines",
        access=Access.PUBLIC,
        routes=(Route("GET", "/v1/leaderboards"),),
    ),
    Spec(
        CommandKind.SHOW,
        ("show",),
        "a leaderboard's ranking on each GPU",
        (
            LEADERBOARD,
            GPU,
            Arg("limit", "how many rows (default 10)", ArgKind.NUMBER),
            Arg("round", "which round: a number from 1 (the first), or all for all time (default: the current one)"),
            Arg("page", "which page of rows, from 1 (default 1)", ArgKind.NUMBER),
        ),
        access=Access.PUBLIC,
        routes=(Route("GET", _board()),),
    ),
    Spec(
        CommandKind.MINE,
        ("mine",),
        "your own submissions to a leaderboard",
        (LEADERBOARD, GPU, Arg("limit", "how many rows (default 20)", ArgKind.NUMBER)),
        aliases=(("show-personal",),),
        private=True,
        routes=(Route("GET", _board("/mine")),),
    ),
    Spec(
        CommandKind.HISTORY,
        ("history",),
        "best score over time, as a table and a chart",
        (
            LEADERBOARD,
            GPU,
            Arg("user", "someone else's progress (scores only): discord:ID, slack:ID or a name", ArgKind.PERSON),
        ),
        routes=(Route("GET", _board("/history")),),
    ),
    Spec(
        CommandKind.TASK,
        ("task",),
        "the problem to solve: its description and reference files",
        (LEADERBOARD,),
        aliases=(("reference-code",),),
        access=Access.PUBLIC,  # a problem's statement and reference are what a newcomer reads first (its web page)
        routes=(Route("GET", _board("/task")),),
    ),
    Spec(
        CommandKind.TEMPLATE,
        ("template",),
        "a starter file for a leaderboard",
        (LEADERBOARD, Arg("lang", "the template's language (Python, Triton, CUDA...; default: every one)")),
        private=True,
        access=Access.PUBLIC,
        routes=(Route("GET", _board("/template")),),
    ),
    Spec(
        CommandKind.SUBMISSION,
        ("submission",),
        "one submission: its runs, results and code",
        (SUBMISSION_ID,),
        aliases=(("get-submission",),),
        private=True,
        routes=(Route("GET", "/v1/submissions/{id}"),),
    ),
    Spec(
        CommandKind.QUEUE,
        ("queue",),
        "jobs waiting and running on each GPU, and where yours are",
        (Arg("gpu", "only this GPU pool"),),
        private=True,
        routes=(Route("GET", "/v1/queue"),),
    ),
    Spec(
        CommandKind.STATS,
        ("stats",),
        "kernelrank in figures",
        access=Access.PUBLIC,
        routes=(Route("GET", "/v1/stats"),),
    ),
    Spec(
        CommandKind.PERSON,
        ("person",),
        "someone's entries, progress and latest submissions (scores only)",
        (
            Arg(
                "who",
                "#N (their number on the web; N alone too, outside chat), discord:ID, slack:ID or a name",
                required=True,
            ),
        ),
        access=Access.PUBLIC,
        routes=(Route("GET", "/v1/people/{who}"),),
    ),
    Spec(
        CommandKind.EVAL_CODE,
        ("eval-code",),
        "the evaluation harness's own source: nothing of it is hidden",
        (Arg("lang", "only the files in this language: python or cuda (default: every file)", positional=True),),
        private=True,
        routes=(Route("GET", "/v1/eval-code"),),
    ),
    Spec(
        CommandKind.TOKEN,
        ("token",),
        "personal tokens for the terminal and the web: make, list, revoke",
        (
            Arg(
                "action",
                "new (make one, shown once), list, revoke or whoami",
                choices=("new", "list", "revoke", "whoami"),
                positional=True,
            ),
            Arg("prefix", "for revoke: the token's first characters, as list shows them", positional=True),
        ),
        private=True,
        routes=(
            Route("GET", "/v1/tokens", MappingProxyType({"action": "list"})),
            Route("POST", "/v1/tokens", MappingProxyType({"action": "new"})),
            Route("DELETE", "/v1/tokens/{prefix}", MappingProxyType({"action": "revoke"})),
            Route("GET", "/v1/me", MappingProxyType({"action": "whoami"})),
        ),
    ),
    Spec(
        CommandKind.CHALLENGES,
        ("challenges",),
        "the challenges: upcoming, open with the time left, and winners",
        access=Access.PUBLIC,
        routes=(Route("GET", "/v1/challenges"),),
    ),
    Spec(
        CommandKind.CHALLENGE,
        ("challenge",),
        "one challenge: its standings, or its verified winners",
        (TITLE,),
        access=Access.PUBLIC,
        routes=(Route("GET", "/v1/challenges/{title}"),),
    ),
    Spec(
        CommandKind.LINK,
        ("link",),
        "join your accounts on Slack, Discord and the terminal into one person",
        (Arg("code", "the code `link` showed on your other account (none: show a code here)", positional=True),),
        private=True,
        routes=(Route("POST", "/v1/link"),),
    ),
    Spec(
        CommandKind.REPORT,
        ("report",),
        "flag a submission you think cheats: the admins review it (its author is not told who reported it)",
        (
            SUBMISSION_ID,
            Arg("reason", "what looks wrong, in a sentence or two", required=True, positional=False, sentence=True),
        ),
        private=True,  # answered to the reporter alone: the channel does not learn who reported
        routes=(Route("POST", "/v1/submissions/{id}/reports"),),
    ),
    Spec(
        CommandKind.UNLINK,
        ("unlink",),
        "split this account off the person it was linked into",
        private=True,
        routes=(Route("POST", "/v1/unlink"),),
    ),
)

COMMANDS: tuple[Spec, ...] = (*_EVERYDAY, *ADMIN_COMMANDS)


BY_KIND: Mapping[CommandKind, Spec] = MappingProxyType({spec.kind: spec for spec in COMMANDS})


def find(words: list[str]) -> tuple[Spec, int] | None:
    """The command the leading ``words`` name (its words or an alias, longest match first) and how many words
    that took; None when they name none."""
    typed = [w.lower() for w in words]
    spellings = sorted(
        ((spelling, spec) for spec in COMMANDS for spelling in (spec.words, *spec.aliases)),
        key=lambda pair: -len(pair[0]),
    )
    for spelling, spec in spellings:
        if tuple(typed[: len(spelling)]) == spelling:
            return spec, len(spelling)
    return None


def first_words() -> tuple[str, ...]:
    """The words a command line can start with (``admin`` for the admin commands)."""
    return tuple(dict.fromkeys(w for spec in COMMANDS for w in (spec.words[0], *(a[0] for a in spec.aliases))))
