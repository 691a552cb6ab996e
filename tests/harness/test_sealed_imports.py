"""The judge's sealed imports (``harness.judge.sealed_imports``), in a forked child running as another user, as the
judge does: the problem's files come from memory, and nothing is imported from a folder that user can write."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.judge import sealed_imports

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing to another user needs root")


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder the unprivileged user may enter but not change: root's, in the sticky /tmp (pytest's own folders
    are root's alone, so that user could not even look inside)."""
    folder = Path(tempfile.mkdtemp(prefix="kernelrank-sealed-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def _in_child_as_nobody(check) -> None:
    """Run ``check()`` in a forked child as an unprivileged user; fail here with its traceback."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            check()
        except BaseException:
            os.write(write, traceback.format_exc().encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as child:
        report = child.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, report


def _plant(folder: Path, name: str, value: str) -> None:
    (folder / f"{name}.py").write_text(f"VALUE = {value!r}\n")


def test_the_judge_imports_problem_files_from_memory_and_nothing_the_job_can_write(root: Path) -> None:
    work, later, kept = root / "work", root / "later", root / "kept"
    for folder in (work, later, kept):
        folder.mkdir(mode=0o755)
    os.chown(work, NOBODY, NOBODY)  # the job's working folder: it owns it
    later.chmod(0o777)  # writable by anyone
    _plant(work, "helper", "planted on disk")
    _plant(work, "planted_lazy", "planted")
    _plant(later, "planted_later", "planted")
    _plant(kept, "kept_module", "the interpreter's own")
    (kept / "kept_pkg").mkdir()
    (kept / "kept_pkg" / "__init__.py").write_text("")
    _plant(later, "sub", "planted in a package's path")

    def check() -> None:
        sys.path[:0] = [str(work), "", str(kept)]
        sealed_imports.seal({"helper.py": "VALUE = 'from memory'\n", "notes.txt": "x"}, work)
        assert str(work) not in sys.path and "" not in sys.path and str(kept) in sys.path
        assert str(work) not in sys.path_importer_cache
        import helper  # noqa: PLC0415 - what the judge does, late

        assert helper.VALUE == "from memory" and helper.__file__ == str(work / "helper.py")
        assert __import__("kept_module").VALUE == "the interpreter's own"
        sys.path.append(str(later))  # torch appends a temporary folder of its own after the seal
        for name in ("planted_lazy", "planted_later"):
            with pytest.raises(ModuleNotFoundError):
                __import__(name)
        package = __import__("kept_pkg")
        package.__path__.append(str(later))
        with pytest.raises(ModuleNotFoundError):
            __import__("kept_pkg.sub")
        assert os.environ["PYTHONNOUSERSITE"] == "1" and os.environ["PYTHONSAFEPATH"] == "1"

    _in_child_as_nobody(check)


def test_a_folder_above_that_the_job_may_write_counts_as_writable(root: Path) -> None:
    (root / "open" / "locked").mkdir(parents=True)
    (root / "open").chmod(0o777)  # the job could move "locked" away and put its own folder there
    (root / "open" / "locked").chmod(0o755)
    (root / "sticky" / "locked").mkdir(parents=True)
    (root / "sticky").chmod(0o1777)  # like /tmp: the job may add its own entries, not move root's
    (root / "sticky" / "locked").chmod(0o755)
    (root / "closed").mkdir(mode=0o755)

    def check() -> None:
        writable = sealed_imports.JobWritable()
        assert writable(str(root / "open" / "locked" / "lib")) and writable(str(root / "open" / "missing"))
        assert writable(str(root / "sticky" / "missing")) and not writable(str(root / "sticky" / "locked"))
        assert not writable(str(root / "closed")) and not writable(str(root / "closed" / "missing"))
        assert writable("") and writable("relative/folder")

    _in_child_as_nobody(check)
