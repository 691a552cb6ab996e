"""Errors whose message is safe to show to a user.

``UserError`` carries one clear sentence plus what to do next. Handlers raise it; the service turns it
into an error ``Reply``; adapters render that reply. Anything else that escapes a handler is logged in
full and answered with a generic apology, so internal details never reach a chat.
"""


class UserError(Exception):
    """Bad input or a refused request; ``str(err)`` is shown to the user as it is."""


def shown(value: str, limit: int = 60) -> str:
    """``value`` cut to ``limit`` characters for a message: a user's 10,000-character name must not turn an
    error into a wall of text."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value):,} characters)"
