"""The compile cache: built modules, content-addressed, kept between jobs, written only by the harness server.

A build's key is the SHA-256 of everything its output depends on (``key``): the sources, the flags, the
GPU architecture and the toolchain's fingerprint (``harness.builds.toolchain``). Each entry is a folder
``<root>/<key[:2]>/<key>/`` holding the built files. Only the harness server writes here, with what its
own sandboxed builder compiled (``harness.builds.builder``); evaluations never see the folder (the built files reach
a job as bytes, copied into its private space), so no submission can plant a module another one loads.

Concurrency: an entry is assembled in a private temporary folder and renamed into place, which is atomic
on one filesystem; when two servers build the same key, the second rename fails and its copy is dropped
(both hold the same build). Readers touch an entry's folder when they use it; ``evict`` removes the
least recently used entries until the cache fits ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ROOT_ENV = "KERNELRANK_BUILD_CACHE"
SIZE_ENV = "KERNELRANK_BUILD_CACHE_MB"
DEFAULT_MB = 4096
_TEMP_PREFIX = ".incoming-"


def key(inputs: Mapping[str, Any]) -> str:
    """The content address of a build: canonical JSON of all its inputs, hashed."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class BuildCache:
    def __init__(self, root: str | os.PathLike[str], max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes

    @classmethod
    def from_environment(cls) -> BuildCache | None:
        """The cache named by ``$KERNELRANK_BUILD_CACHE`` (default: ``~/.cache/kernelrank/builds``); None when it
        cannot be created. ``off`` turns caching off."""
        root = os.environ.get(ROOT_ENV) or str(Path.home() / ".cache" / "kernelrank" / "builds")
        if root.strip().lower() == "off":
            return None
        try:
            megabytes = int(os.environ.get(SIZE_ENV) or DEFAULT_MB)
            Path(root).mkdir(parents=True, exist_ok=True, mode=0o700)
        except (OSError, ValueError) as exc:
            log.warning("no compile cache at %s (%s); every build compiles", root, exc)
            return None
        return cls(root, megabytes * 2**20)

    def entry(self, build_key: str) -> Path:
        return self.root / build_key[:2] / build_key

    def lookup(self, build_key: str) -> Path | None:
        """The entry's folder when the cache holds it (and marks it used), else None."""
        folder = self.entry(build_key)
        try:
            os.utime(folder)
        except OSError:
            return None
        return folder

    def store(self, build_key: str, files: Mapping[str, bytes]) -> Path:
        """Put a build's files in the cache under ``build_key``; returns the entry (another server's, if it won)."""
        folder = self.entry(build_key)
        folder.parent.mkdir(parents=True, exist_ok=True)
        incoming = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=folder.parent))
        try:
            for name, data in files.items():
                if "/" in name or name.startswith("."):
                    raise ValueError(f"a cached file needs a plain name, not {name!r}")
                (incoming / name).write_bytes(data)
            os.chmod(incoming, 0o755)
            try:
                incoming.rename(folder)
            except OSError:  # already there: another build of the same key won the race
                shutil.rmtree(incoming, ignore_errors=True)
        except BaseException:
            shutil.rmtree(incoming, ignore_errors=True)
            raise
        self.evict()
        return folder

    def evict(self) -> int:
        """Remove least recently used entries (and stale temporary folders) until the cache fits; how many went."""
        entries, total, removed = [], 0, 0
        for shard in self.root.iterdir() if self.root.is_dir() else ():
            for folder in shard.iterdir() if shard.is_dir() else ():
                with contextlib.suppress(OSError):
                    stat = folder.stat()
                    if folder.name.startswith(_TEMP_PREFIX):
                        if time.time() - stat.st_mtime > 3600:  # a build that died mid-store
                            shutil.rmtree(folder, ignore_errors=True)
                        continue
                    size = sum(f.stat().st_size for f in folder.iterdir())
                    entries.append((stat.st_mtime, size, folder))
                    total += size
        for _, size, folder in sorted(entries):
            if total <= self.max_bytes:
                break
            shutil.rmtree(folder, ignore_errors=True)
            total -= size
            removed += 1
        return removed
