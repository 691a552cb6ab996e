"""Errors whose message is safe to show to a user.

``UserError`` carries one clear sentence plus what to do next. Handlers raise it; the core turns it into an
error ``Reply`` whose ``data["error"]`` is the error's ``code``, so a front end that has statuses of its own
(the HTTP API) can answer 401, 403, 404 or 429 without reading the sentence. Anything else that escapes a
handler is logged in full and answered with a generic apology, so internal details never reach a chat::

    UserError            bad input or a refused request (code "invalid")
    ├── NotSignedIn      no person behind the command: no token, or an unknown or revoked one ("unauthenticated")
    ├── Forbidden        the person may not do or see this ("forbidden")
    ├── NotFound         no such leaderboard, submission or person ("not_found")
    ├── RateLimited      too many submissions just now; ``retry_after_s`` says when to try again ("rate_limited")
    └── Busy             too many queries waiting already; ``retry_after_s`` says when to try again ("unavailable")
"""


class UserError(Exception):
    """Bad input or a refused request; ``str(err)`` is shown to the user as it is."""

    code = "invalid"


class NotSignedIn(UserError):
    code = "unauthenticated"


class Forbidden(UserError):
    code = "forbidden"


class NotFound(UserError):
    code = "not_found"


class RateLimited(UserError):
    code = "rate_limited"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Busy(UserError):
    code = "unavailable"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def shown(value: str, limit: int = 60) -> str:
    """``value`` cut to ``limit`` characters for a message: a user's 10,000-character name must not turn an
    error into a wall of text."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value):,} characters)"
