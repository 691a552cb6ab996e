"""Files that carry secrets between processes of one user on one host, readable by that user alone.

``kernelrank up`` leaves the local user's token under ``<home>/run/``; ``kernelrank login`` keeps a token under the
user's config folder. Both are written whole (a reader never sees half a file) and created owner-only, so the
secret is never readable by anyone else, not even for a moment.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 (its folder made 0700 when new), replacing any earlier file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def read_private(path: Path) -> str:
    """The file's text, stripped; "" when it is missing, unreadable, or readable by others than its owner (a
    token anyone on the host can read is no longer the owner's alone, so it is not used)."""
    try:
        if path.stat().st_mode & 0o077:
            return ""
        return path.read_text().strip()
    except OSError:
        return ""
