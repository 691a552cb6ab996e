"""The judge imports only its own code: the problem's files from memory, nothing from a folder the job can write.

The judge and the runner run as one user, so whatever the runner may write (the working folder, /tmp, HOME, the
build caches, /dev/shm) the judge could import from: a module planted under a name the judge imports later (a
checker's lazy import, a standard-library or third-party module that a torch submodule pulls in) would run with
the judge's rights and could pass anything. ``seal`` runs in the judge right after the runner is forked, before
the runner runs anything, and from then on:

* the problem's Python files (``reference``, ``task``, ``utils``, any helper a checker imports late) are imported
  from the texts the supervisor handed over, never from disk (``ProblemModules``, ahead of ``sys.path``);
* every ``sys.path`` entry the job could write or replace (relative entries such as ``""``, which mean the working
  folder; folders it, or a folder above it, may write; folders it owns and could make writable) leaves
  ``sys.path`` and ``sys.path_importer_cache``;
* the path finder skips such folders on every later import too (``SealedPathFinder``), also in a package's
  ``__path__`` and in entries added after the seal (torch appends a temporary folder of its own);
* Python processes the judge starts skip the user's site folder (under the job's HOME) and the working folder.

``.pth`` files and ``sitecustomize`` are read only when an interpreter starts, which the forked judge never does.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

_PathFinder = importlib.machinery.PathFinder


class JobWritable:
    """Whether the job could change what a path holds: it may write the folder itself (or owns it, and so may make
    it writable), or it may replace or create it, or any folder above it, in a folder it may write (in a sticky
    folder such as /tmp, only what it owns). Read-only mounts count as unwritable. Remembered: the job cannot
    make a folder writable that it neither owns nor may write."""

    def __init__(self) -> None:
        self._entries: dict[str, bool] = {}
        self._replaceable: dict[str, bool] = {}
        self._stats: dict[str, os.stat_result | None] = {}

    def __call__(self, entry: object) -> bool:
        if not isinstance(entry, str) or not os.path.isabs(entry):
            return True  # "" and relative entries resolve against the working folder
        if (known := self._entries.get(entry)) is None:
            known = self._entries[entry] = self._may_write(entry) or any(
                map(self._replaceable_in_parent, _with_ancestors(entry))
            )
        return known

    def _replaceable_in_parent(self, path: str) -> bool:
        if (known := self._replaceable.get(path)) is None:
            parent = os.path.dirname(path)
            if parent == path or not self._may_write(parent):
                known = False
            else:
                mine, folder = self._stat(path), self._stat(parent)
                owners = {mine.st_uid if mine else -1, folder.st_uid if folder else -1}
                sticky = folder is not None and bool(folder.st_mode & stat.S_ISVTX)
                known = mine is None or not sticky or os.geteuid() in owners
            self._replaceable[path] = known
        return known

    def _may_write(self, path: str) -> bool:
        if (info := self._stat(path)) is None:
            return False  # missing: whether it can be made is its parent's question
        try:
            read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
        except OSError:
            return False
        return not read_only and (info.st_uid == os.geteuid() or os.access(path, os.W_OK))

    def _stat(self, path: str) -> os.stat_result | None:
        if path not in self._stats:
            try:
                self._stats[path] = os.lstat(path)
            except OSError:
                self._stats[path] = None
        return self._stats[path]


class SealedPathFinder(importlib.abc.MetaPathFinder):
    """``sys.meta_path``'s path finder, searching only folders the job cannot write."""

    def __init__(self, writable: JobWritable) -> None:
        self._writable = writable

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        search = [entry for entry in (sys.path if path is None else path) if not self._writable(entry)]
        return _PathFinder.find_spec(fullname, search, target)

    def invalidate_caches(self) -> None:
        _PathFinder.invalidate_caches()


class ProblemModules(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """The problem's staged Python files as top-level modules, from their texts; ``__file__`` names the staged copy
    (problems locate data beside it), but the code is the text the judge holds."""

    def __init__(self, files: dict[str, str], folder: Path) -> None:
        self._sources = {
            Path(name).stem: (text, str(folder / name))
            for name, text in files.items()
            if name.endswith(".py") and Path(name).stem.isidentifier()
        }

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in self._sources:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self._sources[fullname][1])

    def is_package(self, fullname: str) -> bool:
        return False

    def get_source(self, fullname: str) -> str:
        return self._sources[fullname][0]

    def exec_module(self, module: ModuleType) -> None:
        text, origin = self._sources[module.__name__]
        module.__file__ = origin
        exec(compile(text, origin, "exec", dont_inherit=True), module.__dict__)


def seal(problem_files: dict[str, str], folder: Path) -> None:
    """Make the judge import only its own code from now on (the module's docstring); call in the judge, after the
    runner is forked and before it runs anything. ``problem_files``: the staged files' texts, the submission
    excluded; ``folder``: where they were staged."""
    writable = JobWritable()
    removed = {entry for entry in sys.path if writable(entry)}
    sys.path[:] = [entry for entry in sys.path if entry not in removed]
    # the finders of package folders are only asked through SealedPathFinder, which checks each on use
    for entry in [key for key in sys.path_importer_cache if key in removed or not os.path.isabs(key)]:
        sys.path_importer_cache.pop(entry, None)
    at = sys.meta_path.index(_PathFinder) if _PathFinder in sys.meta_path else len(sys.meta_path)
    sys.meta_path[at : at + 1] = [ProblemModules(problem_files, folder), SealedPathFinder(writable)]  # sys.path's turn
    os.environ["PYTHONNOUSERSITE"] = "1"  # the user's site folder lies under the job's HOME
    os.environ["PYTHONSAFEPATH"] = "1"  # no working folder or script folder first on a child's path
    with contextlib.suppress(KeyError):
        kept = [entry for entry in os.environ["PYTHONPATH"].split(os.pathsep) if not writable(entry)]
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)


def _with_ancestors(path: str) -> Iterable[str]:
    """``path`` as written and as resolved (a link may point elsewhere), and every folder above each."""
    for start in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
        current = start
        while True:
            yield current
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
