"""A problem sent from chat or the terminal, unpacked safely into a temporary folder and loaded.

What comes in is a lone ``reference.py`` (GPU MODE's first format) or a ``.zip`` / ``.tar.gz`` of a problem
folder. Nothing of an archive is trusted: a member whose path leaves the folder (absolute, ``..``), a link, a
device or any other non-regular file refuses the whole archive, and so does one that unpacks to more than
``MAX_FILES`` files or ``MAX_UNPACKED_BYTES`` (sizes are counted while reading, never taken from the headers,
so a zip bomb stops at the limit). The folder is removed once the problem is loaded: a ``Problem`` carries every
file it needs as text.
"""

from __future__ import annotations

import io
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

import yaml

from core.contracts.commands import MAX_PROBLEM_BYTES
from core.contracts.errors import UserError, shown
from core.contracts.messages import Attachment
from core.service.leaderboards import public_after_close
from harness.loading import load_problem
from harness.problem import Problem, ProblemError

MAX_UPLOAD_BYTES = MAX_PROBLEM_BYTES  # the attachment itself
MAX_FILES = 200
MAX_UNPACKED_BYTES = 16 * 1024 * 1024  # all files together, once unpacked
ARCHIVES = (".zip", ".tar.gz", ".tgz", ".tar")


class UnsafeArchive(UserError):
    """The archive holds something that may not be unpacked; the message says what."""


def load_upload(attachment: Attachment, name: str) -> tuple[Problem, bool]:
    """The problem in ``attachment``, named ``name``, and whether its code is public after the close; ``UserError``
    says why it cannot be loaded."""
    with unpacked(attachment) as folder:
        try:
            return load_problem(folder, name), public_after_close(folder)
        except ProblemError as exc:  # its message names the temporary folder: name the upload instead
            reason = str(exc).replace(str(folder.resolve()), attachment.name).replace(str(folder), attachment.name)
            raise UserError(f"The problem in {attachment.name} cannot be loaded: {reason}") from None


@contextmanager
def unpacked(attachment: Attachment) -> Iterator[Path]:
    """A temporary folder holding the problem's files (an archive's one problem folder is stepped into)."""
    if len(attachment.content) > MAX_UPLOAD_BYTES:
        raise UserError(
            f"{attachment.name} is {len(attachment.content) // 1024:,} KiB; a problem may be at most "
            f"{MAX_UPLOAD_BYTES // 1024 // 1024} MiB. Leave out data files the reference can generate."
        )
    lowered = attachment.name.lower()
    with tempfile.TemporaryDirectory(prefix="kernelrank-problem-") as tmp:
        root = Path(tmp) / "problem"
        root.mkdir()
        if lowered.endswith(".py"):
            (root / "reference.py").write_bytes(attachment.content)
        elif lowered.endswith(".zip"):
            _unzip(attachment, root)
        elif lowered.endswith(ARCHIVES):
            _untar(attachment, root)
        else:
            raise UserError(
                f"{attachment.name} is not a problem: attach a reference.py, or a .zip or .tar.gz of "
                "the problem's folder."
            )
        folder = _top(root)
        _check_confined(folder, root, attachment.name)
        yield folder


def _unzip(attachment: Attachment, root: Path) -> None:
    budget = _Budget(attachment.name)
    try:
        with zipfile.ZipFile(io.BytesIO(attachment.content)) as archive:
            for info in archive.infolist():
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise UnsafeArchive(
                        f"{attachment.name} holds a link ({info.filename}); kernelrank unpacks plain files only."
                    )
                target = _target(root, info.filename, attachment.name)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                with archive.open(info) as member:
                    budget.copy(member, target)
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise UserError(f"{attachment.name} is not a readable .zip ({exc}); make it again and attach it.") from None


def _untar(attachment: Attachment, root: Path) -> None:
    budget = _Budget(attachment.name)
    try:
        with tarfile.open(fileobj=io.BytesIO(attachment.content), mode="r:*") as archive:
            for member in archive:
                if not (member.isfile() or member.isdir()):
                    raise UnsafeArchive(
                        f"{attachment.name} holds {member.name}, which is not a plain file or "
                        "folder (a link or a device); kernelrank unpacks plain files only."
                    )
                target = _target(root, member.name, attachment.name)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                budget.count(member.size)  # the header's size, checked before reading, then the bytes
                source = archive.extractfile(member)
                if source is not None:
                    budget.copy(source, target)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise UserError(
            f"{attachment.name} is not a readable archive ({exc}); make it again with "
            "`tar czf problem.tar.gz FOLDER` and attach it."
        ) from None


def _target(root: Path, member: str, archive: str) -> Path:
    """Where a member goes under ``root``; an absolute path or one that climbs out refuses the archive."""
    path = PurePosixPath(member.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise UnsafeArchive(
            f"{archive} holds {member!r}, a path outside its own folder; pack the problem's "
            "folder with relative paths only."
        )
    target = root.joinpath(*[part for part in path.parts if part not in ("", ".")])
    if target != root and root not in target.parents:
        raise UnsafeArchive(f"{archive} holds {member!r}, a path outside its own folder.")
    return target


class _Budget:
    """Counts files and unpacked bytes across an archive; stops at the limits however the archive declares them."""

    def __init__(self, archive: str) -> None:
        self.archive, self.files, self.bytes = archive, 0, 0

    def count(self, size: int) -> None:
        if size + self.bytes > MAX_UNPACKED_BYTES:
            self._too_large()

    def copy(self, source: IO[bytes], target: Path) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            raise UnsafeArchive(
                f"{self.archive} holds more than {MAX_FILES} files; a problem needs far fewer. "
                "Pack only the problem's folder."
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            while chunk := source.read(64 * 1024):
                self.bytes += len(chunk)
                if self.bytes > MAX_UNPACKED_BYTES:
                    self._too_large()
                out.write(chunk)

    def _too_large(self) -> None:
        raise UnsafeArchive(
            f"{self.archive} unpacks to more than {MAX_UNPACKED_BYTES // 1024 // 1024} MiB; a "
            "problem's files are far smaller. Leave out data the reference can generate."
        )


def _top(root: Path) -> Path:
    """The problem's folder: ``root``, or the one folder under it holding a task.yml or reference.py (an archive of
    ``FOLDER/...``, perhaps with the shared files its task.yml names as ``../utils.py`` beside it)."""
    if _is_problem(root):
        return root
    found = [entry for entry in root.iterdir() if entry.is_dir() and _is_problem(entry)]
    return found[0] if len(found) == 1 else root


def _is_problem(folder: Path) -> bool:
    return (folder / "task.yml").is_file() or (folder / "reference.py").is_file()


def _check_confined(folder: Path, root: Path, archive: str) -> None:
    """Refuse a task.yml that names files outside the unpacked archive (``/etc/passwd``, ``../../secrets``): the
    loader would read them from the core's host into the problem, for anyone to see with ``task``."""
    try:
        raw = yaml.safe_load((folder / "task.yml").read_text())
    except (OSError, yaml.YAMLError):
        return  # no task.yml, or a broken one: the loader says what is wrong
    if not isinstance(raw, dict):
        return
    files, templates = raw.get("files"), raw.get("templates")
    files = files if isinstance(files, list) else []
    templates = templates if isinstance(templates, dict) else {}
    named = [str(e.get("source", "")) for e in files if isinstance(e, dict)] + [str(v) for v in templates.values()]
    root = root.resolve()
    for source in named:
        if source and not source.startswith("@") and root not in (folder / source).resolve().parents:
            raise UnsafeArchive(
                f"{archive}'s task.yml names {shown(source)!r}, a file outside the archive; put "
                "every file the problem needs inside it."
            )
