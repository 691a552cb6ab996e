"""GPU MODE's first problem format: a single ``reference.py``, no ``task.yml``.

The public bot's documentation still teaches creating a leaderboard from one file that defines
``generate_input()`` (no arguments), ``ref_kernel(data)`` and ``check_implementation(custom_output,
reference_output) -> bool``; submissions define ``custom_kernel(data)`` and import little beyond torch.
``load`` turns such a file (or its folder) into a ``Problem`` with a default plan:

* ``TEST_SEEDS``: checked calls, each on a fresh input (the public bot checked ten);
* ``BENCHMARK_SEED``: one benchmark "shape", timed on fresh inputs per call and ranked by its median.

The specs carry only a seed. ``generate_input`` gets the keyword arguments it declares (a ``seed``
parameter, when it has one); torch's, Python's and NumPy's global generators are seeded from the spec
first, so inputs differ per call and repeat per seed (``harness.judge.judge_process.adapt_generate_input``). The
checker is called as ``check_implementation(output, ref_kernel(data))`` (``checker_args``). Helper modules
that ``reference.py`` imports from its own folder are staged with it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.problem import CHECKER_ARGS, Problem, ProblemError, TaskSpec

TEST_SEEDS = (4242, 5236, 1001, 5531, 9173, 2217, 3343, 7717, 8093, 6151)
BENCHMARK_SEED = 31232
SUBMISSION_NAME = "submission.py"
REQUIRED = ("generate_input", "ref_kernel", "check_implementation")


def load(reference: Path, name: str | None = None) -> Problem:
    """The ``Problem`` of a first-format ``reference.py``; ``ProblemError`` when the file does not fit."""
    try:
        text = reference.read_text()
        tree = ast.parse(text, filename=str(reference))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"{reference} cannot be read ({exc}).") from exc
    except SyntaxError as exc:
        raise ProblemError(f"{reference} is not valid Python (line {exc.lineno}: {exc.msg}).") from exc
    if missing := [n for n in REQUIRED if n not in _top_level_names(tree)]:
        raise ProblemError(
            f"{reference} defines no {', '.join(missing)}; a reference.py needs generate_input, "
            "ref_kernel and check_implementation."
        )
    files = {"reference.py": text, **_local_imports(tree, reference.parent, seen={reference.stem})}
    benchmarks = [{"seed": BENCHMARK_SEED}]
    task = TaskSpec(
        description=ast.get_docstring(tree) or "",
        tests=[{"seed": seed} for seed in TEST_SEEDS],
        benchmarks=benchmarks,
        cpu_benchmarks=benchmarks,
        ranking_by="geom",
        checker_args=CHECKER_ARGS[1],
        default_device=False,
    )
    readme = reference.parent / "README.md"
    default_name = reference.parent.name if reference.name == "reference.py" else reference.stem
    return Problem(
        name=name or default_name,
        task=task,
        files=files,
        submission_name=SUBMISSION_NAME,
        readme=readme.read_text() if readme.is_file() else "",
    )


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level: functions, classes, assignments and imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _local_imports(tree: ast.Module, folder: Path, seen: set[str]) -> dict[str, str]:
    """Modules of ``folder`` that ``tree`` imports, and theirs in turn: staged file name -> text."""
    files: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module]
        else:
            continue
        for module in (m.split(".")[0] for m in modules):
            path = folder / f"{module}.py"
            if module in seen or module == Path(SUBMISSION_NAME).stem or not path.is_file():
                continue
            seen.add(module)
            try:
                text = path.read_text()
                imported = ast.parse(text, filename=str(path))
            except (OSError, UnicodeDecodeError, SyntaxError) as exc:
                raise ProblemError(f"{path}, which the reference imports, cannot be read as Python ({exc}).") from exc
            files[path.name] = text
            files.update(_local_imports(imported, folder, seen))
    return files
