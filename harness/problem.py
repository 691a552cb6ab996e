"""Problems in the public GPU MODE task format, plus kernelrank's extensions (``docs/problem-format.md``).

A problem folder holds ``task.yml``, ``reference.py``, ``task.py``, templates and fixtures. ``task.yml``
lists the files an evaluation stages (``{name, source}``, sources relative to the folder, ``../utils.py``
allowed, ``@SUBMISSION@`` marking the user's file). Keys other tools do not know are ours and optional:

``devices``          where the problem runs: ``[cuda]`` (the default) or ``[cpu, cuda]``; declaring it also
                     makes the evaluation's device torch's default device around ``generate_input``.
                     Without it the problem runs exactly as its author wrote it (on CUDA).
``strict_output``    ``true``: the output must have the reference's structure, shapes and dtypes exactly
``output_may_alias_input``  what an output may share memory with: unset, the public conventions (an input the
                     reference writes or returns, or one the call wrote: a destination buffer); ``false``, only
                     the inputs the reference writes or returns; ``true``, any input (``harness.judge.checking``)
``cpu_benchmarks``   benchmark specs used on CPU (default: the test specs)
``roofline``         ``{bytes: expr, flops: expr, dtype: fp32}`` over a spec's args: achieved GB/s, TFLOP/s, % of peak
``shape_budget_ms``  wall-clock budget of one shape's timed loop (default 500)
``timing``           ``events`` (default) or ``graph`` for the ranked number of tiny shapes
``evaluator``        ``auto`` (default): the author's ``config.main`` evaluator runs when reference.py lacks
                     the standard functions; ``author`` always runs it; ``kernelrank`` never
                     (``harness.host.author_eval``)

A folder holding only ``reference.py`` (or that file itself) is GPU MODE's first format
(``harness.first_format``). A loaded ``Problem`` is self-contained (file contents, not paths), so it can be
shipped to a GPU machine inside an ``EvalJob`` and stored by the core.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.codec import from_jsonable, to_jsonable
from harness.result import Mode

log = logging.getLogger(__name__)

SUBMISSION_MARK = "@SUBMISSION@"
RANKING_RULES = ("last", "mean", "geom")
DEVICES = ("cpu", "cuda")
# How check_implementation is called: the public format's (data, output), or the first format's
# (output, reference_output), where the harness computes the reference's output itself.
CHECKER_ARGS = ("data, output", "output, reference_output")
# What a problem of each language must stage: the CUDA format's types live in task.h, its functions in reference.cuh.
REQUIRED_FILES = {"py": ("reference.py",), "cu": ("task.h", "reference.cuh")}
# Derived by the loader, never read from task.yml.
_DERIVED_KEYS = frozenset({"files", "default_device"})
# What kernelrank's own harness calls in reference.py; a problem without them may bring its own evaluator.
REFERENCE_FUNCTIONS = ("generate_input", "ref_kernel", "check_implementation")
EVALUATORS = ("auto", "author", "kernelrank")


class ProblemError(ValueError):
    """A problem folder or task.yml is malformed; the message says what to fix."""


class Opaque:
    """A value the harness cannot look inside (a ``lang: cu`` problem's ``input_t``): it copies itself."""

    def clone(self) -> Opaque:
        raise NotImplementedError


@dataclass
class Roofline:
    bytes: str = "0"  # expression over the spec's args: bytes that must move through memory
    flops: str = "0"  # expression over the spec's args: arithmetic operations
    dtype: str = "fp32"  # lowest compute precision the checker accepts: picks the peak (harness/roofline.py)


@dataclass
class TaskSpec:
    lang: str = "py"  # "py" | "cu"
    description: str = ""
    tests: list[dict[str, Any]] = field(default_factory=list)
    benchmarks: list[dict[str, Any]] = field(default_factory=list)
    test_timeout: float = 180.0  # seconds of wall time per mode
    benchmark_timeout: float = 180.0
    ranked_timeout: float = 180.0
    ranking_by: str = "last"  # GPU MODE's default when unset
    seed: int | None = None
    multi_gpu: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)  # language -> file name in the folder
    checker_args: str = CHECKER_ARGS[0]
    # kernelrank extensions
    devices: list[str] = field(default_factory=lambda: ["cuda"])
    default_device: bool = True  # generate_input under the evaluation's device: only when devices is declared
    strict_output: bool = False
    output_may_alias_input: bool | None = None  # None: the public conventions (harness.judge.checking)
    cpu_benchmarks: list[dict[str, Any]] | None = None
    roofline: Roofline | None = None
    shape_budget_ms: float = 500.0
    timing: str = "events"
    evaluator: str = "auto"  # who evaluates: EVALUATORS (the author's config.main, or kernelrank's harness)

    def timeout_s(self, mode: Mode) -> float:
        """The whole run's wall-clock bound: a ranked run's tests have test_timeout, its timing ranked_timeout
        (each phase's own limit: ``harness.liveness``)."""
        return {
            Mode.TEST: self.test_timeout,
            Mode.BENCHMARK: self.benchmark_timeout,
            Mode.RANKED: self.test_timeout + self.ranked_timeout,
            Mode.PROFILE: self.benchmark_timeout,
        }[mode]

    def benchmarks_for(self, device: str) -> list[dict[str, Any]]:
        if device == "cpu":
            return self.cpu_benchmarks if self.cpu_benchmarks is not None else self.tests
        return self.benchmarks


@dataclass
class Problem:
    name: str
    task: TaskSpec
    files: dict[str, str]  # staged file name -> text (the submission excluded)
    submission_name: str  # the name the submission is staged under, e.g. "submission.py"
    templates: dict[str, str] = field(default_factory=dict)  # language -> template text
    readme: str = ""

    @property
    def author_evaluator(self) -> str | None:
        """The file name of the problem's own evaluator when it evaluates this problem (the loader staged it)."""
        main = self.task.config.get("main")
        return main if isinstance(main, str) and main in self.files else None

    @property
    def sha256(self) -> str:
        """Content hash of everything that defines the problem's verdicts."""
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name].encode() + b"\0")
        h.update(repr(sorted(to_jsonable(self.task).items())).encode())
        return h.hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        return from_jsonable(cls, data)


def load_task_folder(folder: Path, name: str | None = None) -> Problem:
    """Read a problem folder with a ``task.yml`` into a self-contained ``Problem``; raise ``ProblemError``."""
    task_file = folder / "task.yml"
    try:
        raw = yaml.safe_load(task_file.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ProblemError(f"{task_file} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ProblemError(f"{task_file} must be a mapping of keys to values.")
    task = _task_spec(raw, task_file)
    task.default_device = "devices" in raw
    files, submission_name = _staged_files(raw.get("files"), folder, task)
    templates = _templates(folder, task.templates)
    readme_path = folder / "README.md"
    return Problem(
        name=name or folder.name,
        task=task,
        files=files,
        submission_name=submission_name,
        templates=templates,
        readme=readme_path.read_text() if readme_path.is_file() else "",
    )


def _task_spec(raw: dict[str, Any], where: Path) -> TaskSpec:
    data = {k: v for k, v in raw.items() if k in TaskSpec.__dataclass_fields__ and k not in _DERIVED_KEYS}
    for key in ("tests", "benchmarks", "cpu_benchmarks"):
        if data.get(key) is not None:
            data[key] = [_spec(item, where, key) for item in data[key]]
    if data.get("output_may_alias_input") not in (None, True, False):
        raise ProblemError(f"{where}: output_may_alias_input must be true or false, or left out (public conventions).")
    try:
        task = from_jsonable(TaskSpec, data)
    except ValueError as exc:
        raise ProblemError(f"{where}: {exc}") from exc
    if task.lang not in ("py", "cu"):
        raise ProblemError(f"{where}: lang must be 'py' or 'cu', not {task.lang!r}.")
    if task.lang == "cu" and task.devices != ["cuda"]:
        raise ProblemError(f"{where}: a lang: cu problem runs on CUDA only; leave devices out or set [cuda].")
    if task.ranking_by not in RANKING_RULES:
        raise ProblemError(f"{where}: ranking_by must be one of {', '.join(RANKING_RULES)}.")
    if bad := [d for d in task.devices if d not in DEVICES]:
        raise ProblemError(f"{where}: unknown devices {bad}; use cpu and/or cuda.")
    if task.timing not in ("events", "graph"):
        raise ProblemError(f"{where}: timing must be 'events' or 'graph'.")
    if task.checker_args not in CHECKER_ARGS:
        raise ProblemError(f"{where}: checker_args must be one of {' or '.join(map(repr, CHECKER_ARGS))}.")
    if task.evaluator not in EVALUATORS:
        raise ProblemError(f"{where}: evaluator must be one of {', '.join(EVALUATORS)}.")
    if not (task.shape_budget_ms > 0):
        raise ProblemError(f"{where}: shape_budget_ms must be a positive number of milliseconds.")
    if not task.tests:
        raise ProblemError(f"{where}: a problem needs at least one test spec.")
    return task


def _spec(item: Any, where: Path, key: str) -> dict[str, Any]:
    """Accept ``{k: v}`` mappings and GPU MODE's ``"k: v; k: v"`` strings."""
    if isinstance(item, dict):
        return item
    if isinstance(item, str):
        spec: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in item.split(";"))):
            k, sep, v = part.partition(":")
            if not sep:
                raise ProblemError(f"{where}: {key} entry {item!r} is not 'key: value; ...'.")
            v = v.strip()
            spec[k.strip()] = spec_value(v)
        return spec
    raise ProblemError(f"{where}: {key} entries must be mappings, not {type(item).__name__}.")


def _staged_files(entries: Any, folder: Path, task: TaskSpec) -> tuple[dict[str, str], str]:
    if not isinstance(entries, list) or not entries:
        raise ProblemError(f"{folder}/task.yml: 'files' must list {{name, source}} entries.")
    evaluator = task.config.get("main")  # GPU MODE's own eval.py: we bring our harness, unless it is needed
    files: dict[str, str] = {}
    submission_name = ""
    evaluator_path: Path | None = None  # read only when it must run: standard problems may not ship it
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry or "source" not in entry:
            raise ProblemError(f"{folder}/task.yml: every file needs a name and a source, got {entry!r}.")
        name, source = str(entry["name"]), str(entry["source"])
        if "/" in name or name.startswith("."):
            raise ProblemError(f"{folder}/task.yml: staged file name {name!r} must be a plain file name.")
        if source == SUBMISSION_MARK:
            submission_name = name
        elif name != evaluator:
            files[name] = _read(folder / source, f"file {name!r}")
        else:
            evaluator_path = folder / source
    if not submission_name:
        raise ProblemError(f"{folder}/task.yml: no file has source {SUBMISSION_MARK}.")
    if _needs_author_evaluator(task, files, folder, evaluator_path is not None):
        files[str(evaluator)] = _read(evaluator_path, f"the problem's evaluator {evaluator!r}")  # type: ignore[arg-type]
        return files, submission_name
    if missing := [name for name in REQUIRED_FILES[task.lang] if name not in files]:
        raise ProblemError(
            f"{folder}/task.yml: the files of a lang: {task.lang} problem must include {' and '.join(missing)}."
        )
    return files, submission_name


def _needs_author_evaluator(task: TaskSpec, files: dict[str, str], folder: Path, has_evaluator: bool) -> bool:
    """Whether the problem's own evaluator (``config.main``) must run it; raise when neither evaluator can."""
    if task.lang != "py" or task.evaluator == "kernelrank" or ("reference.py" not in files and not has_evaluator):
        return False  # (the last: the loader says reference.py is missing)
    missing = [name for name in REFERENCE_FUNCTIONS if name not in _top_level_names(files.get("reference.py", ""))]
    if task.evaluator == "auto" and not missing:
        return False
    if has_evaluator:
        return True
    why = (
        f"its reference.py lacks {', '.join(missing)}, which kernelrank's harness calls"
        if missing
        else "it sets evaluator: author"
    )
    raise ProblemError(
        f"{folder}/task.yml: {why}, and config.main names no evaluator among its files, so neither "
        "kernelrank's harness nor the problem's own evaluator can run it. Add the missing functions, or "
        "stage the problem's eval.py and name it in config.main."
    )


def _top_level_names(source: str) -> set[str]:
    """Names reference.py defines or imports at top level (read, never run: the loader runs no problem code)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(REFERENCE_FUNCTIONS)  # kernelrank's harness reports the syntax error as it runs it
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body):
        names.update(REFERENCE_FUNCTIONS)  # a star import may bring them: let the harness find out
    return names


def spec_value(text: str) -> int | float | str:
    """A spec value from a "k: v" string: an int or a float when it reads as one, else the text."""
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if math.isfinite(value) else text
    return text


def _templates(folder: Path, paths: dict[str, str]) -> dict[str, str]:
    """The templates that exist: a missing one is a gap in what users can download, not a broken problem."""
    templates = {}
    for lang, rel in paths.items():
        try:
            templates[lang] = _read(folder / rel, f"template {lang!r}")
        except ProblemError as exc:
            log.warning("%s; the problem loads without it", exc)
    return templates


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise ProblemError(f"{what} at {path} cannot be read: {exc.strerror}.") from exc
