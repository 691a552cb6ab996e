"""A fresh directory per evaluation holding only the problem's staged files and the submission.

Layout: ``<root>/work`` is the submission's working directory (and ``sys.path[0]``); ``<root>/logs``
holds its captured stdout and stderr, outside the directory the submission is pointed at; ``<root>/view``
is the empty folder the sandbox builds the job's filesystem on, and ``<root>/scratch`` holds HOME, caches
and temporary files when the host cannot sandbox (``harness.sandbox``).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.problem import Problem


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
        stage = cls.empty(Path(tempfile.mkdtemp(prefix="kernelrank-")))
        for name, text in problem.files.items():
            (stage.workdir / name).write_text(text)
        (stage.workdir / problem.submission_name).write_text(submission_source)
        return stage

    @classmethod
    def empty(cls, root: Path) -> Stage:
        """The folders of a stage under ``root``, with no files in them yet."""
        stage = cls(root, root / "work", root / "logs" / "stdout.txt", root / "logs" / "stderr.txt", root / "view",
                    root / "scratch")
        for folder in (stage.workdir, stage.stdout_path.parent, stage.view, stage.scratch):
            folder.mkdir()
        return stage

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".") and "\0" not in name
