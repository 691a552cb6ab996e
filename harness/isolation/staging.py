"""A fresh directory per evaluation holding only the problem's staged files and the submission.

Layout: ``<root>/work`` is the submission's working directory (and ``sys.path[0]``); ``<root>/logs``
holds its captured stdout and stderr, outside the directory the submission is pointed at; ``<root>/view``
is the empty folder the sandbox builds the job's filesystem on, and ``<root>/scratch`` holds HOME, caches
and temporary files when the host cannot sandbox (``harness.isolation.sandbox``). The folder is named after the
harness server's pid, so a server that starts can remove what a killed one left behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.problem import Problem

PREFIX = "kernelrank-"


class StagingError(ValueError):
    """The job names a file that cannot be staged safely."""


@dataclass(frozen=True)
class Stage:
    root: Path
    workdir: Path
    stdout_path: Path
    stderr_path: Path
    view: Path
    scratch: Path

    @classmethod
    def create(cls, problem: Problem, submission_source: str) -> Stage:
        names = [*problem.files, problem.submission_name]
        if bad := [n for n in names if not _plain_name(n)]:
            raise StagingError(f"the problem stages files with unsafe names: {', '.join(map(repr, bad))}")
        stage = cls.empty(Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")))
        for name, text in problem.files.items():
            (stage.workdir / name).write_text(text)
        (stage.workdir / problem.submission_name).write_text(submission_source)
        return stage

    @classmethod
    def empty(cls, root: Path) -> Stage:
        """The folders of a stage under ``root``, with no files in them yet."""
        stage = cls(
            root,
            root / "work",
            root / "logs" / "stdout.txt",
            root / "logs" / "stderr.txt",
            root / "view",
            root / "scratch",
        )
        for folder in (stage.workdir, stage.stdout_path.parent, stage.view, stage.scratch):
            folder.mkdir()
        return stage

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def remove_orphans() -> int:
    """Remove the stages of harness servers that died without cleaning up (a stage is named after its
    server's pid); how many were removed. Stages of live servers, on this host, are left alone."""
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        owner = folder.name[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)) and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".") and "\0" not in name
