"""The ``eval-code`` reply: the evaluation harness's own source, every file of it, so nothing is hidden.

The harness package is what runs next to a submission on the GPU machine (staging, sandbox, checking,
timing). The files are read once from the installed package and served as code parts that carry a file name,
which chat adapters attach as files, with a listing and one digest over all of them, so a reader can check that
two copies are the same.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from core.contracts import reply_parts
from core.contracts.errors import UserError, shown
from core.contracts.messages import Part

SOURCE_SUFFIXES = {".py": "python", ".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp", ".h": "cpp", ".c": "c"}
# what people ask for -> the file languages it means (a CUDA kernel is built with the harness's C++ too)
LANGUAGES = {
    "python": {"python"},
    "py": {"python"},
    "triton": {"python"},
    "cuda": {"cuda", "cpp", "c"},
    "cu": {"cuda", "cpp", "c"},
    "cpp": {"cpp", "c"},
    "c++": {"cpp", "c"},
    "c": {"c"},
}


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the repository root, e.g. "harness/timing.py"
    text: str
    sha256: str


@functools.cache
def harness_files(root: Path = Path(harness.__file__).parent) -> tuple[SourceFile, ...]:
    """Every source file of the harness package, sorted by path."""
    files = []
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
            data = path.read_bytes()
            files.append(
                SourceFile(
                    path=path.relative_to(root.parent).as_posix(),
                    text=data.decode("utf-8", errors="replace"),
                    sha256=hashlib.sha256(data).hexdigest(),
                )
            )
    return tuple(files)


def eval_code_report(
    files: tuple[SourceFile, ...] | None = None, language: str = ""
) -> tuple[str, list[Part], dict[str, Any]]:
    """Title, parts and data of the ``eval-code`` reply; ``language`` (python, cuda, cpp, c) keeps its files only."""
    files = harness_files() if files is None else files
    if language:
        wanted = LANGUAGES.get(language.strip().lower())
        if wanted is None:
            raise UserError(
                f"The harness has no {shown(language, 20)} files; ask for python or cuda, or for "
                "every file without a language."
            )
        files = tuple(f for f in files if SOURCE_SUFFIXES[Path(f.path).suffix] in wanted)
    digest = hashlib.sha256("".join(f"{f.path}\0{f.sha256}\n" for f in files).encode()).hexdigest()
    lines = sum(f.text.count("\n") for f in files)
    parts = [
        reply_parts.text(
            f"This is the whole evaluation harness: {len(files)} files, {lines} lines. It stages your "
            "file with the problem's files in a fresh directory, runs it in an isolated process, checks "
            "every shape with the problem's checker and times it as `harness/timing.py` describes."
        ),
        reply_parts.table(["file", "lines", "sha256"], [[f.path, f.text.count("\n"), f.sha256[:12]] for f in files]),
    ]
    parts += [reply_parts.code(f.text, SOURCE_SUFFIXES[Path(f.path).suffix], filename=f.path) for f in files]
    data = {"files": [f.path for f in files], "sha256": digest}
    return f"The evaluation harness ({len(files)} files, sha256 {digest[:12]})", parts, data
