"""A file argument from the terminal (``admin create NAME --problem PATH``), packed the way the core reads it.

A file goes as it is. A folder goes as a ``.tar.gz`` of ``FOLDER/...``, with the files its ``task.yml`` names
outside it (GPU MODE problems share ``../utils.py``) beside it, so the problem loads on the core as it does here.
Links are not followed into the archive: the core refuses archives holding them.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import yaml

from core.contracts.commands import MAX_PROBLEM_BYTES, file_value


class PackError(Exception):
    """The path cannot be sent; the message says why and what to do."""


def file_argument(path: Path) -> dict[str, str]:
    if path.is_dir():
        name, content = f"{path.resolve().name}.tar.gz", _tar(path.resolve())
    else:
        try:
            name, content = path.name, path.read_bytes()
        except OSError as exc:
            raise PackError(f"cannot read {path}: {exc.strerror}.") from None
    if len(content) > MAX_PROBLEM_BYTES:
        raise PackError(
            f"{path} packs to {len(content) // 1024:,} KiB; the most kernelrank takes is "
            f"{MAX_PROBLEM_BYTES // 1024 // 1024} MiB. Leave out data files the problem can generate."
        )
    return file_value(name, content)


def _tar(folder: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                archive.add(path, arcname=f"{folder.name}/{path.relative_to(folder)}", recursive=False)
        for shared in _shared_files(folder):
            archive.add(shared, arcname=str(shared.relative_to(folder.parent)), recursive=False)
    return out.getvalue()


def _shared_files(folder: Path) -> list[Path]:
    """Files beside ``folder`` that its task.yml names as ``../NAME`` (nothing further up)."""
    try:
        raw: Any = yaml.safe_load((folder / "task.yml").read_text())
    except (OSError, yaml.YAMLError):
        return []
    entries = raw.get("files", []) if isinstance(raw, dict) else []
    sources = [str(e.get("source", "")) for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    found = []
    for source in sources:
        path = (folder / source).resolve()
        if path.parent == folder.parent and path.is_file() and not (folder / source).is_symlink():
            found.append(path)
    return found
