"""Static pre-check of a submission: flags, never bans, the constructs the cheat catalogue is made of.

Runs in the supervisor on the source text before anything is executed. Python is read as a syntax tree
(so a comment or the word "upstream" is not a stream, and ``allow_tf32 = True`` is configuration, not a
patch); CUDA and C++ sources (strings handed to ``load_inline``, ``.cu`` files) are matched by name.

Each ``Finding`` names a rule, the first line it was seen on and what was seen. Rules marked *hold* are
constructs an honest kernel does not need (an unjoined side stream, threads, patching torch or the
harness, files outside the working directory, frame or heap walking, the reference, signals to other
processes, persisting L2); a ranked run that shows one is held for an admin's review instead of being
ranked (``hold``). The others are notes for the admin's report. The runtime checks stay the defence of
record: a flag only says where to look.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from harness.result import EvalResult, Failure, FailureKind, Finding, Mode, Status

# rule -> (what it suggests, catalogue entries, whether a ranked run is held)
RULES: dict[str, tuple[str, str, bool]] = {
    "side_stream": ("uses a CUDA stream of its own and never makes the current stream wait for it", "C5", True),
    "thread": ("starts threads or processes", "C7", True),
    "monkey_patch": ("replaces a function of torch, the standard library or the harness", "C9", True),
    "outside_file": ("reaches files outside its working directory", "C2, C11", True),
    "introspection": ("inspects the interpreter's frames, heap or arguments", "C11, C15", True),
    "reference": ("reads the problem's reference or the harness", "C11, C20", True),
    "process_control": ("signals, traces or preloads into other processes", "C22", True),
    "persisting_l2": ("sets up persisting L2 cache", "C19", True),
    "ctypes": ("loads native code through ctypes", "C22", False),
    "precision": ("computes in a lower precision", "C13", False),
}

_WATCHED_ROOTS = (
    "torch",
    "triton",
    "time",
    "builtins",
    "sys",
    "gc",
    "os",
    "threading",
    "harness",
    "reference",
    "utils",
    "task",
    "numpy",
    "math",
    "random",
    "inspect",
    "importlib",
    "functools",
)
_STREAM_MAKERS = {
    "torch.cuda.Stream",
    "torch.cuda.ExternalStream",
    "torch.Stream",
    "torch.cuda.set_stream",
    "cupy.cuda.Stream",
    "torch.cuda.streams.Stream",
}
_MAIN_STREAMS = {"torch.cuda.current_stream", "torch.cuda.default_stream"}
_THREAD_CALLS = re.compile(
    r"^(threading\.(Thread|Timer)|_thread\.start_new(_thread)?|concurrent\.futures\."
    r"|multiprocessing\.|os\.(fork|forkpty|posix_spawn|spawn|system|popen|exec)|subprocess\."
    r"|pty\.spawn|asyncio\.create_subprocess)"
)
_INTROSPECTION = {
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "sys._getframe",
    "sys._current_frames",
    "sys.settrace",
    "sys.setprofile",
    "threading.settrace",
    "inspect.currentframe",
    "inspect.stack",
    "inspect.getouterframes",
    "inspect.trace",
    "sys.modules",
    "sys.argv",
    "ctypes.pythonapi",
}
_FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "__subclasses__"}
_PROCESS_CALLS = {"os.kill", "os.killpg", "signal.signal", "signal.pthread_kill", "os.setsid", "os.setpgid"}
_FILE_CALLS = re.compile(
    r"^(open|io\.open|os\.(open|listdir|scandir|walk|remove|unlink|rename|replace|stat|chmod)"
    r"|shutil\.\w+|glob\.\w+|numpy\.(load|save|fromfile)|torch\.(load|save))$"
)
_PATH_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "iterdir", "unlink", "glob", "rglob"}
_PRECISION = {
    "torch.float16",
    "torch.half",
    "torch.bfloat16",
    "triton.language.float16",
    "triton.language.bfloat16",
    "torch.float8_e4m3fn",
    "torch.float8_e5m2",
}
_NATIVE_PATTERNS = [  # CUDA / C++ text inside strings and .cu files
    (
        "side_stream",
        re.compile(
            r"cudaStreamCreate|getStreamFromPool|cudaStreamPerThread|cublasSetStream|"
            r"default-stream[ =]per-thread"
        ),
    ),
    ("thread", re.compile(r"std::thread|pthread_create|std::async|\bfork\s*\(")),
    (
        "persisting_l2",
        re.compile(
            r"PersistingL2|accessPolicyWindow|AccessPolicyWindow|cudaAccessPropertyPersisting|"
            r"cu(Ctx|Device)SetLimit|cudaDeviceSetLimit"
        ),
    ),
    ("process_control", re.compile(r"\bptrace\b|process_vm_writev|LD_PRELOAD|/proc/self/mem|dlsym\s*\(\s*RTLD_NEXT")),
    ("monkey_patch", re.compile(r"cudaEventElapsedTime|cuEventElapsedTime")),
    ("precision", re.compile(r"__float2half|__float2bfloat16|__half\b|__nv_bfloat16")),
]
_NATIVE_JOIN = re.compile(r"cudaStreamSynchronize|cudaDeviceSynchronize|cudaStreamWaitEvent|cudaEventSynchronize")
_SUSPICIOUS_PATHS = re.compile(r"/proc/|/dev/shm|^~|\.\./|^/(home|root|var|run|etc/kernelrank)\b")


@dataclass
class _Seen:
    rule: str
    line: int
    what: str


def check(source: str, file_name: str) -> list[Finding]:
    """Findings on a submission's source, one per rule (its first occurrence), in rule order."""
    seen: list[_Seen] = []
    if file_name.lower().endswith((".cu", ".cuh", ".cpp", ".cc", ".h")):
        seen += _native(source, 1)
    else:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []  # the worker reports the syntax error itself
        seen += _Visitor(tree).findings()
    first: dict[str, _Seen] = {}
    for item in sorted(seen, key=lambda s: s.line):
        first.setdefault(item.rule, item)
    return [
        Finding(rule=rule, line=first[rule].line, message=_message(first[rule]), hold=RULES[rule][2])
        for rule in RULES
        if rule in first
    ]


def hold(result: EvalResult, findings: list[Finding]) -> None:
    """Attach the findings; a ranked run that passed with a *hold* finding is held, not ranked."""
    result.findings = findings
    held = [f for f in findings if f.hold]
    if result.mode is not Mode.RANKED or result.status is not Status.PASSED or not held:
        return
    reasons = "; ".join(f.message for f in held)
    result.status = Status.FAILED
    result.failure = Failure(
        FailureKind.HELD_FOR_REVIEW,
        (
            f"Held for review: {reasons}. An admin decides whether this ranked score counts; if the construct is "
            "not needed, remove it and submit again."
        ),
    )


def _message(seen: _Seen) -> str:
    suggests, entries, _ = RULES[seen.rule]
    return f"line {seen.line} {suggests} ({seen.what}; catalogue {entries})"


def _native(text: str, first_line: int) -> list[_Seen]:
    found = []
    for rule, pattern in _NATIVE_PATTERNS:
        if match := pattern.search(text):
            if rule == "side_stream" and _NATIVE_JOIN.search(text):
                continue
            found.append(_Seen(rule, first_line + text.count("\n", 0, match.start()), match.group(0)))
    return found


class _Visitor(ast.NodeVisitor):
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.seen: list[_Seen] = []
        self.streams: list[_Seen] = []
        self.joined = False

    def findings(self) -> list[_Seen]:
        self.visit(self.tree)
        return self.seen + ([] if self.joined else self.streams[:1])

    def add(self, rule: str, node: ast.AST, what: str) -> None:
        self.seen.append(_Seen(rule, getattr(node, "lineno", 1), what))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )
            self._imported(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._imported(node, module)
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
            self._imported(node, f"{module}.{alias.name}")

    def _imported(self, node: ast.AST, name: str) -> None:
        root = name.split(".")[0]
        if root in ("reference", "harness"):
            self.add("reference", node, f"import {name}")
        elif root in ("ctypes", "cffi"):
            self.add("ctypes", node, f"import {name}")
        elif _THREAD_CALLS.match(name + ".") or root in ("subprocess", "multiprocessing"):
            self.add("thread", node, f"import {name}")

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualname(node.func)
        if name in _STREAM_MAKERS:
            self.streams.append(_Seen("side_stream", node.lineno, name))
        elif name in _PROCESS_CALLS:
            self.add("process_control", node, name)
        elif name in ("setattr", "delattr") and node.args and self._watched(node.args[0]):
            if name == "delattr" or len(node.args) < 3 or not _constant(node.args[2]):
                self.add("monkey_patch", node, f"{name}({self.qualname(node.args[0])}, ...)")
        elif name in ("importlib.import_module", "__import__") and node.args and _string(node.args[0]):
            self._imported(node, node.args[0].value)  # type: ignore[attr-defined]
        if (path := self._file_argument(node, name)) and (path.startswith(("/", "~")) or ".." in path):
            self.add("outside_file", node, f"{name or 'Path'}({path!r})")
        if self._joins(node, name):
            self.joined = True
        self.generic_visit(node)

    def _file_argument(self, node: ast.Call, name: str | None) -> str | None:
        """The literal path a file-reading or -writing call is given, if any."""
        call = node
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and func.attr in _PATH_METHODS
            and self.qualname(func.value.func) in ("pathlib.Path", "Path")
        ):
            call = func.value  # Path("/etc/passwd").read_text()
        elif not (name and _FILE_CALLS.match(name)):
            return None
        return call.args[0].value if call.args and _string(call.args[0]) else None  # type: ignore[attr-defined]

    def _joins(self, node: ast.Call, name: str | None) -> bool:
        """The current stream waits for another one, or everything is synchronised."""
        if name == "torch.cuda.synchronize":
            return True
        if not isinstance(node.func, ast.Attribute):
            return False
        if node.func.attr in ("synchronize", "wait_event", "wait"):
            return True
        waited = self.qualname(node.args[0].func) if node.args and isinstance(node.args[0], ast.Call) else None
        return node.func.attr == "wait_stream" and waited not in _MAIN_STREAMS

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.seen += _native(node.attr, node.lineno)  # libcuda.cuCtxSetLimit, libc.ptrace: C through ctypes
        name = self.qualname(node)
        if name in _INTROSPECTION:
            self.add("introspection", node, name)
        elif name and _THREAD_CALLS.match(name):
            self.add("thread", node, name)
        elif node.attr in _FRAME_ATTRIBUTES:
            self.add("introspection", node, f".{node.attr}")
        elif name in _PRECISION or node.attr in ("half", "bfloat16") and isinstance(node.ctx, ast.Load):
            self.add("precision", node, name or f".{node.attr}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assigned(node.targets, node.value, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned([node.target], node.value, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._assigned(node.targets, None, node)
        self.generic_visit(node)

    def _assigned(self, targets: list[ast.expr], value: ast.expr | None, node: ast.AST) -> None:
        for target in targets:
            if isinstance(target, ast.Attribute) and self._watched(target.value):
                if value is None or not _constant(value):
                    self.add("monkey_patch", node, self.qualname(target) or target.attr)
                elif target.attr == "allow_tf32" and getattr(value, "value", False) is True:
                    self.add("precision", node, f"{self.qualname(target)} = True")
            elif isinstance(target, ast.Subscript) and (self.qualname(target.value) or "").endswith(
                ("sys.modules", "__dict__", "__builtins__")
            ):
                self.add("monkey_patch", node, f"{self.qualname(target.value)}[...]")

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # docstrings are prose
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for item in _native(node.value, node.lineno):
                self.seen.append(item)
            if _SUSPICIOUS_PATHS.search(node.value):
                self.add("outside_file", node, repr(node.value[:60]))
            elif node.value.endswith("reference.py"):
                self.add("reference", node, repr(node.value[:60]))

    def qualname(self, node: ast.AST) -> str | None:
        """``t.cuda.Stream`` with ``import torch as t`` -> "torch.cuda.Stream"; None for anything else."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        return ".".join([self.aliases.get(node.id, node.id), *reversed(parts)])

    def _watched(self, node: ast.AST) -> bool:
        name = self.qualname(node) or ""
        return name.split(".")[0] in _WATCHED_ROOTS


def _constant(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    return isinstance(node, (ast.Tuple, ast.List)) and all(_constant(e) for e in node.elts)


def _string(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
