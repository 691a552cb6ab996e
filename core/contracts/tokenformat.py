"""The personal token's format: ``kr_`` and 32 random bytes in URL-safe base64 (256 bits, so a plain SHA-256 is
enough to store it by), recognised by its first 12 characters."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "kr_"
PREFIX_CHARS = 12  # "kr_" and 9 random characters: 54 bits, enough to tell tokens apart


def make_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_sha256(token: str) -> str:
    """The form a token is stored in and sent to the core in (hex)."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_prefix(token: str) -> str:
    return token[:PREFIX_CHARS]
