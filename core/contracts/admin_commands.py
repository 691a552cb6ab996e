"""The admins' commands (words starting with ``admin``), declared like every other entry of the registry.

``core.contracts.registry`` puts them after the everyday commands in its one ``COMMANDS`` table; kept apart only so
that neither module grows past reading length. What is about one person (roles, bans, limits, invalidations), and
an admin's own work in progress (``admin create``), is ``private``: answered to the asker alone on every chat.
"""

from __future__ import annotations

from types import MappingProxyType

from core.contracts.messages import CommandKind
from core.contracts.specs import LEADERBOARD, SUBMISSION_ID, TITLE, Access, Arg, ArgKind, Route, Spec

_PROBLEM_HELP = "the problem: a reference.py, or a .zip or .tar.gz of its folder (the terminal takes the folder itself)"
_SETTINGS = (
    Arg("gpu", "the GPUs it runs on (default: every GPU its problem can use)", ArgKind.GPUS, aliases=("gpus",)),
    Arg("deadline", 'when it closes, "YYYY-MM-DD HH:MM" in UTC (default: never)'),
    Arg("opens", 'when it opens, "YYYY-MM-DD HH:MM" in UTC (default: as soon as it is validated)'),
    Arg("description", "one line on what to solve (default: the problem's own)"),
)
_ADMIN_BOARD = "/v1/admin/leaderboards/{leaderboard}"
_CHALLENGE_SETTINGS = (
    Arg("leaderboards", "its leaderboards, a comma list: a,b", positional=False),
    Arg("opens", 'when it opens, "YYYY-MM-DD HH:MM" in UTC (default: now)'),
    Arg("closes", 'when it closes, "YYYY-MM-DD HH:MM" in UTC', positional=False),
    Arg("announce", "where news and winners go, a comma list: discord:CHANNEL,slack:CHANNEL"),
)

ADMIN_COMMANDS: tuple[Spec, ...] = (
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
        private=True,
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
        private=True,
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
        private=True,
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
        private=True,
        routes=(Route("DELETE", "/v1/admin/bans/{person}"),),
    ),
    Spec(
        CommandKind.INVALIDATE,
        ("admin", "invalidate"),
        "take a submission out of every ranking (it is kept in history, marked)",
        (
            SUBMISSION_ID,
            Arg("reason", "why: shown with the submission", required=True, positional=False),
        ),
        access=Access.ADMIN,
        private=True,
        routes=(Route("POST", "/v1/admin/submissions/{id}/invalidate"),),
    ),
    Spec(
        CommandKind.REVIEW,
        ("admin", "review"),
        "reported and held entries: list them, open one with everything to judge it, decide cheat or fine",
        (
            Arg(
                "id",
                "one case: the submission number, as in #12 (default: list the open cases)",
                ArgKind.NUMBER,
                positional=True,
            ),
            Arg("decide", "cheat (invalidate it, close its reports) or fine (dismiss them)", choices=("cheat", "fine")),
            Arg("note", "why: kept with the decision and in the audit log", sentence=True),
        ),
        access=Access.ADMIN,
        private=True,
        # Reading never decides (the GET routes fix ``decide`` empty); a decision is a POST naming it.
        routes=(
            Route("GET", "/v1/admin/review", MappingProxyType({"decide": ""})),
            Route("GET", "/v1/admin/review/{id}", MappingProxyType({"decide": ""})),
            Route("POST", "/v1/admin/review/{id}/cheat", MappingProxyType({"decide": "cheat"})),
            Route("POST", "/v1/admin/review/{id}/fine", MappingProxyType({"decide": "fine"})),
        ),
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
        private=True,
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
    Spec(
        CommandKind.BACKUP,
        ("admin", "backup"),
        "a consistent copy of the database, written by the running core (restore it with `kernelrank restore`)",
        (
            Arg(
                "path",
                "a new file on the core's host; a relative path is under <home>/backups "
                "(default: <home>/backups/kernelrank-<UTC time>.duckdb)",
            ),
        ),
        access=Access.ADMIN,
        private=True,
        routes=(Route("POST", "/v1/admin/backups"),),
    ),
)
