"""Every command kernelrank understands, declared once: its words, arguments, who may run it, how it is asked.

The front ends follow this table. The terminal client's parser and its requests, the API's routes, the Slack
subcommands and the Discord slash commands are built from it; ``tests/adapters/test_registry_parity.py``
fails when a front end lacks a command (unless the entry says why it is not there). The core's handler table
(``core.service.handlers.HANDLERS``) is keyed by the same ``CommandKind``s, and a test holds the two together.

A new command costs one ``Spec`` here, one handler, and its rendering where the generic one is not enough.

Conventions every front end keeps:
- ``words`` are what people type: ``kernelrank admin token issue NAME``, ``/kernelrank admin token issue NAME``
  (Slack), ``/admin token issue`` (Discord: commands whose first word is ``admin`` live in the ``/admin``
  group, every other one in ``/leaderboard``).
- Required arguments are positional in the terminal, optional ones are ``--options`` (unless ``positional``);
  Slack takes every argument in declaration order or as ``name=value``; Discord has one option per argument.
- ``aliases`` of a command are other spellings people already use (the public bot's ``show-personal``);
  ``aliases`` of an argument are other option names (``leaderboard_name``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from core.contracts.messages import CommandKind

FRONT_ENDS = ("terminal", "api", "discord", "slack")


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
    aliases: tuple[str, ...] = ()  # other names for the option, as people of other tools type them
    positional: bool | None = None  # in the terminal; None: positional exactly when required

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
        """The argument called ``name`` or one of its aliases."""
        return next((a for a in self.args if name == a.name or name in a.aliases), None)

    def usage(self) -> str:
        shown = [a.name.upper() if a.required else f"[{a.name.upper()}]" for a in self.args]
        return " ".join([self.name, *shown])

    def offered_on(self, front_end: str) -> bool:
        return front_end not in self.not_on


LEADERBOARD = Arg("leaderboard", "the leaderboard", required=True, aliases=("leaderboard_name",))
GPU = Arg("gpu", "only this GPU (default: every GPU the leaderboard offers)")


def _board(path: str = "") -> str:
    return "/v1/leaderboards/{leaderboard}" + path


_PROBLEM_HELP = "the problem: a reference.py, or a .zip or .tar.gz of its folder (the terminal takes the folder itself)"
_SETTINGS = (
    Arg("gpu", "the GPUs it runs on (default: every GPU its problem can use)", ArgKind.GPUS, aliases=("gpus",)),
    Arg("deadline", 'when it closes, "YYYY-MM-DD HH:MM" in UTC (default: never)'),
    Arg("opens", 'when it opens, "YYYY-MM-DD HH:MM" in UTC (default: as soon as it is validated)'),
    Arg("description", "one line on what to solve (default: the problem's own)"),
)
_ADMIN_BOARD = "/v1/admin/leaderboards/{leaderboard}"
TITLE = Arg("title", "the challenge's title", required=True)
_CHALLENGE_SETTINGS = (
    Arg("leaderboards", "its leaderboards, a comma list: a,b", positional=False),
    Arg("opens", 'when it opens, "YYYY-MM-DD HH:MM" in UTC (default: now)'),
    Arg("closes", 'when it closes, "YYYY-MM-DD HH:MM" in UTC', positional=False),
    Arg("announce", "where news and winners go, a comma list: discord:CHANNEL,slack:CHANNEL"),
)

COMMANDS: tuple[Spec, ...] = (
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
                aliases=("leaderboard_name",),
            ),
            Arg(
                "gpu",
                "the GPUs to run on (default: the file's #!POPCORN gpu line, or asked)",
                ArgKind.GPUS,
                aliases=("gpus",),
            ),
            Arg(
                "mode",
                "test, benchmark, ranked (the default) or profile",
                choices=("test", "benchmark", "ranked", "profile"),
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
        (LEADERBOARD, GPU, Arg("limit", "how many rows (default 10)", ArgKind.NUMBER)),
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
        routes=(Route("GET", _board("/task")),),
    ),
    Spec(
        CommandKind.TEMPLATE,
        ("template",),
        "a starter file for a leaderboard",
        (LEADERBOARD, Arg("lang", "the template's language (Python, Triton, CUDA...; default: every one)")),
        private=True,
        routes=(Route("GET", _board("/template")),),
    ),
    Spec(
        CommandKind.SUBMISSION,
        ("submission",),
        "one submission: its runs, results and code",
        (Arg("id", "the submission number, as in #12", ArgKind.NUMBER, required=True),),
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
        (Arg("who", "#N (their number on the web), discord:ID, slack:ID or a name", required=True),),
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
        CommandKind.ISSUE_TOKEN,
        ("admin", "token", "issue"),
        "a token for someone who uses only the terminal",
        (Arg("name", "the person the token is for", required=True),),
        access=Access.ADMIN,
        private=True,
        routes=(Route("POST", "/v1/admin/tokens"),),
    ),
    Spec(
        CommandKind.BOARD_CREATE,
        ("admin", "create"),
        "a new leaderboard from a problem's files; its reference runs once before it opens",
        (
            Arg("name", "the new leaderboard's name", required=True),
            Arg("problem", _PROBLEM_HELP, ArgKind.FILE, required=True, positional=False),
            *_SETTINGS,
        ),
        access=Access.CREATOR,
        routes=(Route("POST", "/v1/admin/leaderboards"),),
    ),
    Spec(
        CommandKind.BOARD_UPDATE,
        ("admin", "update"),
        "new problem files (a new version: earlier runs are kept) or new settings for a leaderboard",
        (LEADERBOARD, Arg("problem", _PROBLEM_HELP, ArgKind.FILE), *_SETTINGS),
        access=Access.CREATOR,
        routes=(Route("POST", _ADMIN_BOARD),),
    ),
    Spec(
        CommandKind.BOARD_CLOSE,
        ("admin", "close"),
        "close a leaderboard now: ranked submissions stop",
        (LEADERBOARD,),
        access=Access.CREATOR,
        routes=(Route("POST", _ADMIN_BOARD + "/close"),),
    ),
    Spec(
        CommandKind.BOARD_REOPEN,
        ("admin", "reopen"),
        "reopen a closed leaderboard until a new deadline",
        (LEADERBOARD, Arg("deadline", 'the new deadline, "YYYY-MM-DD HH:MM" in UTC (default: none)')),
        access=Access.CREATOR,
        routes=(Route("POST", _ADMIN_BOARD + "/reopen"),),
    ),
    Spec(
        CommandKind.BOARD_DELETE,
        ("admin", "delete"),
        "delete a leaderboard: hidden with its history kept, or erased with --purge yes",
        (
            LEADERBOARD,
            Arg("confirm", "the leaderboard's name again, to confirm"),
            Arg("purge", "yes: erase its submissions and runs too", choices=("yes", "no")),
        ),
        access=Access.CREATOR,
        routes=(Route("DELETE", _ADMIN_BOARD),),
    ),
    Spec(
        CommandKind.CHALLENGE_CREATE,
        ("admin", "challenge", "create"),
        "a challenge: leaderboards between an opening and a close, with reminders, a verified podium and winners",
        (TITLE, *_CHALLENGE_SETTINGS),
        access=Access.CREATOR,
        routes=(Route("POST", "/v1/admin/challenges"),),
    ),
    Spec(
        CommandKind.CHALLENGE_UPDATE,
        ("admin", "challenge", "update"),
        "change a challenge's leaderboards, times or channels before it closes",
        (TITLE, *_CHALLENGE_SETTINGS),
        access=Access.CREATOR,
        routes=(Route("POST", "/v1/admin/challenges/{title}"),),
    ),
    Spec(
        CommandKind.CHALLENGE_CANCEL,
        ("admin", "challenge", "cancel"),
        "cancel a challenge: nothing more happens",
        (TITLE,),
        access=Access.CREATOR,
        routes=(Route("POST", "/v1/admin/challenges/{title}/cancel"),),
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
        CommandKind.TEAM_ADD,
        ("admin", "team", "add"),
        "put people in a team, for a challenge's team standings",
        (
            Arg("team", "the team's name", required=True),
            Arg("people", "who: a comma list of discord:ID, slack:ID or names", required=True),
        ),
        access=Access.ADMIN,
        routes=(Route("POST", "/v1/admin/teams"),),
    ),
    Spec(
        CommandKind.ROLE,
        ("admin", "role"),
        "grant or revoke a person's role: admin, or creator of leaderboards",
        (
            Arg("action", "grant or revoke", choices=("grant", "revoke"), required=True),
            Arg("person", "who: discord:ID, slack:ID or a name", ArgKind.PERSON, required=True),
            Arg("role", "admin or creator", choices=("admin", "creator"), required=True),
        ),
        access=Access.ADMIN,
        routes=(Route("POST", "/v1/admin/roles"),),
    ),
    Spec(
        CommandKind.BAN,
        ("admin", "ban"),
        "stop a person from submitting",
        (
            Arg("person", "who: discord:ID, slack:ID or a name", ArgKind.PERSON, required=True),
            Arg("reason", "why, for the audit log and for them"),
        ),
        access=Access.ADMIN,
        routes=(Route("POST", "/v1/admin/bans"),),
    ),
    Spec(
        CommandKind.UNBAN,
        ("admin", "unban"),
        "let a banned person submit again",
        (
            Arg("person", "who: discord:ID, slack:ID or a name", ArgKind.PERSON, required=True),
            Arg("reason", "why, for the audit log"),
        ),
        access=Access.ADMIN,
        routes=(Route("DELETE", "/v1/admin/bans/{person}"),),
    ),
    Spec(
        CommandKind.INVALIDATE,
        ("admin", "invalidate"),
        "take a submission out of every ranking (it is kept in history, marked)",
        (
            Arg("id", "the submission number, as in #12", ArgKind.NUMBER, required=True),
            Arg("reason", "why: shown with the submission", required=True, positional=False),
        ),
        access=Access.ADMIN,
        routes=(Route("POST", "/v1/admin/submissions/{id}/invalidate"),),
    ),
    Spec(
        CommandKind.LIMIT,
        ("admin", "limit"),
        "a person's own rate limit, or a leaderboard's for everyone together, in submissions per minute per GPU",
        (
            Arg(
                "person", "who: discord:ID, slack:ID or a name; or a leaderboard's name", ArgKind.PERSON, required=True
            ),
            Arg("rate", "how many, like 5/min", required=True),
        ),
        access=Access.ADMIN,
        routes=(Route("POST", "/v1/admin/limits"),),
    ),
    Spec(
        CommandKind.AUDIT,
        ("admin", "audit"),
        "the audit log: who did what, when and why",
        (Arg("since", 'from when, "YYYY-MM-DD HH:MM" in UTC (default: the last 7 days)'),),
        access=Access.ADMIN,
        private=True,
        routes=(Route("GET", "/v1/admin/audit"),),
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
        CommandKind.UNLINK,
        ("unlink",),
        "split this account off the person it was linked into",
        private=True,
        routes=(Route("POST", "/v1/unlink"),),
    ),
    Spec(
        CommandKind.ADMIN_LINK,
        ("admin", "link"),
        "join two people's accounts into one person",
        # plain text, not a person picker: the two accounts are usually on two platforms
        (
            Arg("person", "one account: discord:ID, slack:ID or a name", required=True),
            Arg("other", "the other account, named the same way", required=True),
        ),
        access=Access.ADMIN,
        private=True,
        routes=(Route("POST", "/v1/admin/link"),),
    ),
    Spec(
        CommandKind.ADMIN_UNLINK,
        ("admin", "unlink"),
        "split an account (platform:ID) off its person, or every link of a person",
        (Arg("person", "discord:ID, slack:ID or a name", required=True),),
        access=Access.ADMIN,
        private=True,
        routes=(Route("POST", "/v1/admin/unlink"),),
    ),
)

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
