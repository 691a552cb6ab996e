"""Which format a problem path is in, and the loader for it: the one entry point for reading problems.

A folder with a ``task.yml`` (or the file itself) is the public task format (``harness.problem``); a lone
``reference.py``, or a folder holding one and no ``task.yml``, is GPU MODE's first format (``harness.first_format``).
"""

from __future__ import annotations

from pathlib import Path

from harness import first_format
from harness.problem import Problem, ProblemError, load_task_folder


def load_problem(path: str | Path, name: str | None = None) -> Problem:
    """Read a problem into a self-contained ``Problem``; raise ``ProblemError`` on bad input.

    ``path`` is a problem folder (``task.yml``), its ``task.yml``, or, for GPU MODE's first format, a
    folder holding only ``reference.py`` or that file itself.
    """
    folder = Path(path).resolve()
    if folder.is_file() and folder.name == "task.yml":
        folder = folder.parent
    elif folder.is_file() and folder.suffix == ".py":
        return first_format.load(folder, name)
    if not folder.is_dir():
        raise ProblemError(f"{folder} does not exist; pass a problem folder (with task.yml) or a reference.py.")
    if not (folder / "task.yml").is_file():
        if (folder / "reference.py").is_file():
            return first_format.load(folder / "reference.py", name or folder.name)
        raise ProblemError(
            f"{folder} has no task.yml, nor a reference.py in GPU MODE's first format; a problem "
            "folder needs one of them."
        )
    return load_task_folder(folder, name)
