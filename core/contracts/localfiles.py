"""Files that carry secrets between processes of one user on one host, readable by that user alone.

``kernelrank up`` leaves the local user's token under ``<home>/run/`` and the bus credentials under
``<home>/secrets/`` (``core.contracts.credentials``, ``core.contracts.issued_workers``); ``kernelrank login`` keeps a
token under the user's config folder. Files are created owner-only, so a secret is never readable by anyone else,
not even for a moment, and replaced whole (a reader never sees half a file).
"""

from __future__ import annotations

import os
from pathlib import Path

from core.contracts.config import ConfigError

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and parents) and make it owner-only, whatever its mode was."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
        folder.chmod(FOLDER_MODE)
    except OSError as exc:
        raise ConfigError(
            f"cannot make the private folder {folder} ({exc.strerror}); choose another KERNELRANK_HOME."
        ) from exc


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 (its folder made 0700 when new), replacing any earlier file."""
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def create_private(path: Path, text: str) -> None:
    """Make a new file holding ``text``, mode 0600 from the moment it exists; ``FileExistsError`` when ``path`` is
    there already (another process made it first: its file stands)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def read_private(path: Path) -> str:
    """The file's text, stripped; "" when it is missing, unreadable, or readable by others than its owner (a
    token anyone on the host can read is no longer the owner's alone, so it is not used)."""
    try:
        if path.stat().st_mode & 0o077:
            return ""
        return path.read_text().strip()
    except OSError:
        return ""
