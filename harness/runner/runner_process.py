"""The runner: the one process of an evaluation that holds the submission, and nothing else worth forging.

The judge (``harness.judge.judge_process``) forks it first thing, before it picks a device, binds the problem's
reference or learns a seed; the runner drops the judge's result channel at once and from then on talks
only to the judge, over a private socket (``harness.transport``). It imports the submission when told,
and for each "call" request calls ``custom_kernel`` at once on the inputs it brings (host bytes, or CUDA buffers
the runner allocated before and the judge filled after its clock started), timed by its own timer, and
answers with the timing, the output and the inputs as the call left them. Nothing it says is believed:
the judge copies the output into its own memory and runs the problem's checker there, and admits a time
only inside its own clock's bracket (``harness.judge.brackets``). The runner's own guard and call monitor stay,
so that a naive patch or a stray thread still gets its named verdict; a runner that silences them gains
nothing the judge would accept.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import torch
from torch.profiler import ProfilerActivity, profile

from harness import cuda_ipc, limits, transport
from harness.builds.build import CU_MODULE
from harness.codec import to_jsonable
from harness.failures import Rejection, Verdict, classify, kernel_failure, rejected, summary, user_traceback
from harness.isolation import seccomp
from harness.job import EvalJob
from harness.result import FailureKind
from harness.runner import extension_builds
from harness.runner.compile_time import CompileClock
from harness.runner.cu_module import CuKernel
from harness.runner.guard import Guard
from harness.runner.monitor import CallMonitor
from harness.timing import Timer, make_timer, run_call

ENTRY_POINT = "custom_kernel"
KEEP_ALIVE = 3  # calls whose inputs and outputs stay alive, so their addresses are not recycled

# What the runner's timer and monitor reach at run time, besides the harness's modules.
_WATCHED = [
    (time, ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns")),
    (builtins, ("isinstance", "type", "len", "bool", "float", "getattr", "all", "any", "zip")),
    (torch, ("allclose", "isclose", "equal", "isfinite", "isnan", "isinf", "abs", "device", "no_grad", "Tensor")),
    (
        torch.Tensor,
        (
            "clone",
            "copy_",
            "zero_",
            "__eq__",
            "__ne__",
            "__bool__",
            "all",
            "any",
            "item",
            "to",
            "abs",
            "isnan",
            "isfinite",
            "isposinf",
            "isneginf",
            "sum",
            "data_ptr",
        ),
    ),
    (torch.testing, ("assert_close",)),
    (torch.cuda, ("synchronize", "Event", "current_stream", "Stream")),
    (torch.cuda.Event, None),
]


class _Relay:
    """What ``harness.runner.extension_builds`` needs of an outbox: the build request goes to the judge, which
    passes it on to the supervisor and sends the answer back on the same socket."""

    def __init__(self, link: transport.Link) -> None:
        self.fd = link.fileno()
        self._link = link

    def send(self, kind: str, **fields: Any) -> None:
        self._link.send({"t": kind, **fields})


class Runner:
    """The runner's state: the submission's entry point, its timer and monitor, the calls kept alive."""

    def __init__(self, link: transport.Link, job: EvalJob, device: str) -> None:
        self.link = link
        self.device = device
        self.file = job.problem.submission_name
        self.cu_module = Path.cwd() / CU_MODULE if job.problem.task.lang == "cu" else None
        if device == "cpu":
            limits.limit_address_space(job.memory_limit_mb)
        self.timer: Timer = make_timer(device)
        self.monitor = CallMonitor(str(Path.cwd() / self.file), device)
        self.timer.watch(self.monitor.watch)
        self.guard = guard_for(self.timer)
        self.monitor.install(self.guard)
        extension_builds.install(_Relay(link))
        self.compiles = CompileClock(on_compile=lambda: link.send({"t": "progress", "stage": "compiling"})).install()
        self.kernel: Callable[[Any], Any] | None = None
        self.staged: dict[int, torch.UntypedStorage] = {}
        self.buffers: dict[tuple[int, ...], deque[tuple[int, list[torch.UntypedStorage]]]] = {}
        self.profiler: torch.profiler.profile | None = None
        self.alive: deque[tuple[Any, ...]] = deque(maxlen=KEEP_ALIVE)
        # known bytes the judge reads to learn whether it may reach this process's memory (harness.judge.runner_memory)
        self.probe = torch.frombuffer(bytearray(transport.MEMORY_PROBE), dtype=torch.uint8)

    def handle(self, request: dict[str, Any], blobs: list[bytearray]) -> None:
        op = request.get("op")
        if op == "import":
            with self.monitor.watch():
                self.kernel = load_cu(self.cu_module) if self.cu_module else import_submission(self.file)
            self._untampered("importing the submission")
            self.link.send({"t": "imported"})
        elif op == "alloc":
            self._alloc(request)
        elif op == "call":
            self._call(request, blobs)
        elif op == "guard":
            self._untampered(str(request.get("during", "a call")))
            self.link.send({"t": "guarded"})
        elif op == "busy":
            self.timer.busy(float(request.get("seconds", 0.0)))
            self.link.send({"t": "busy"})
        elif op == "profile":
            self._profile(request)
        elif op == "accounting":
            self.link.send({"t": "accounting", "compile_s": self.compiles.seconds()})
        else:
            raise Verdict(FailureKind.HARNESS_ERROR, f"the runner got an unknown request {op!r}")

    def _alloc(self, request: dict[str, Any]) -> None:
        """Buffers for the judge to copy a call's inputs into (CUDA, or host memory the judge writes with
        ``process_vm_writev``, ``harness.judge.runner_memory``): one of ``KEEP_ALIVE + 1`` sets per list of sizes,
        used in turn, each shared with the judge once (a share keeps a CUDA event alive for as long as its buffer
        lives; torch stops recording them past 1,000). Fresh buffers every call kept the caching allocator from
        settling (blocks shared with the judge wait for it to let go before reuse, so new memory kept coming): on
        an H200 a 16384² grayscale call ran 8 % slower on new memory, and ranked scores took two levels
        (docs/timing.md, "Input buffers")."""
        sizes = tuple(int(size) for size in request.get("sizes") or [])
        if sizes not in self.buffers:
            self.buffers = {sizes: deque()}  # a new shape: the last one's sets go once no kept call holds them
        ring = self.buffers[sizes]
        if len(ring) > KEEP_ALIVE:
            slot, buffers = ring.popleft()
            shared = None
        else:
            slot = len(ring)
            buffers = [torch.empty(size, dtype=torch.uint8, device=self.device).untyped_storage() for size in sizes]
            shared = [
                cuda_ipc.share_cuda(storage) if self.device == "cuda" else {"address": storage.data_ptr(), "nbytes": n}
                for storage, n in zip(buffers, sizes, strict=True)
            ]
        ring.append((slot, buffers))
        self.staged = dict(enumerate(buffers))
        self.link.send({"t": "allocated", "slot": slot, **({"storages": shared} if shared is not None else {})})

    def _call(self, request: dict[str, Any], blobs: list[bytearray]) -> None:
        """The call, then the answer at once; the guard's look comes after it (the judge reads a failure it reports
        with its next request), or when the judge asks for it (``guard_asked``). The judge's clock runs from before
        these inputs were visible here."""
        storages = _storages(request.get("storages") or [], blobs, self.staged)
        data = transport.unpack(request.get("value"), storages, rebuild_classes=True)
        kernel = _fresh_like if request.get("calibration") else self.kernel
        if kernel is None:
            raise Verdict(FailureKind.HARNESS_ERROR, "the runner was asked for a call before the import")
        during = str(request.get("during", "a call"))
        cu = kernel if isinstance(kernel, CuKernel) else None
        try:
            arguments = cu.prepare(data) if cu else data  # before the timer: the input as custom_kernel takes it
            output, timing = run_call(
                self.timer, lambda: _ready(kernel)(arguments), bool(request.get("timed")), bool(request.get("host"))
            )
            built, output = (output, cu.export(output)) if cu else (None, output)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from a submission are its failures too
            raise kernel_failure(exc, during) from None
        # a fresh byte shared after every call: its IPC event lets the judge wait for everything queued on this
        # stream; kept alive with the call, then freed, so its event is released (a storage keeps one per share)
        fence = (
            torch.empty(1, dtype=torch.uint8, device=self.device).untyped_storage() if self.device == "cuda" else None
        )
        self.alive.append((data, output, fence))
        answer: transport.Storages = []
        try:
            value = transport.pack({"output": output, "inputs": data}, answer)
        except transport.TransportError as exc:
            self._untampered(during)
            why = f"the output holds {exc}; return plain torch.Tensor objects (a lazy output computes after the timer)"
            raise rejected(Rejection(FailureKind.BAD_OUTPUT_TYPE, "plain-tensor", False, why), during) from None
        by_address = bool(request.get("by_address"))  # host memory the judge reads itself
        staged_at = {s.data_ptr(): i for i, s in self.staged.items()}
        described = [
            {"staged": staged_at[s.data_ptr()]}
            if s.device.type == self.device and s.data_ptr() in staged_at
            else ({"at": [s.data_ptr(), s.nbytes()]} if by_address else {"cpu": s.nbytes()})
            if s.device.type == "cpu"
            else {"cuda": cuda_ipc.share_cuda(s)}
            for s in answer
        ]
        fenced = {"fence": cuda_ipc.share_cuda(fence)} if fence is not None else {}
        self.link.send(
            {
                "t": "done",
                "timing": to_jsonable(timing),
                "value": value,
                "address": _address(output),
                "storages": described,
                **fenced,
            },
            [] if by_address else transport.cpu_blobs([s for s in answer if s.device.type == "cpu"]),
        )
        del built  # a cu output_t's own memory, freed once the judge has the answer
        if not request.get("guard_asked"):
            self._untampered(during)

    def _profile(self, request: dict[str, Any]) -> None:
        """Start torch's profiler around the calls that follow, or stop it and answer with its table."""
        if self.profiler is None:
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device == "cuda" else [])
            self.profiler = profile(activities=activities)
            self.profiler.__enter__()
            self.link.send({"t": "profiling"})
            return
        self.profiler.__exit__(None, None, None)
        sort_by = "self_device_time_total" if self.device == "cuda" else "self_cpu_time_total"
        table = self.profiler.key_averages().table(sort_by=sort_by, row_limit=int(request.get("rows", 15)))
        self.profiler = None
        self.link.send({"t": "profiled", "table": table})

    def _untampered(self, during: str) -> None:
        check_untampered(self.guard, during)


def serve(link: transport.Link, job: EvalJob) -> NoReturn:
    """The runner's main loop (in the forked child); ends the process when the judge closes the link."""
    code = 0
    try:
        request, _ = link.receive()
        if request.get("op") != "start":  # the judge ended before it picked a device (one it refused)
            raise EOFError("nothing to run")
        os.setpgid(0, 0)  # a group of its own: kill(0, ...) cannot reach the judge
        seccomp.install()  # before any submitted code; the judge keeps its full surface
        runner = Runner(link, job, str(request.get("device")))
        link.send({"t": "ready", "probe": {"address": runner.probe.data_ptr()}})
        while True:
            request, blobs = link.receive()
            try:
                runner.handle(request, blobs)
            except Verdict as verdict:
                link.send({"t": "failure", "failure": to_jsonable(verdict.failure)})
    except (EOFError, OSError, transport.TransportError):
        pass  # the judge is done with us (or gone)
    except BaseException:
        code = 70
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


def guard_for(timer: Timer) -> Guard:
    guard = Guard()
    for name, module in list(sys.modules.items()):
        if name == "harness" or name.startswith("harness."):
            guard.watch_module(module)
    for owner, names in _WATCHED:
        guard.watch(owner, names, label=getattr(owner, "__name__", None))
    return guard.watch(timer, label="timer")


def check_untampered(guard: Guard, during: str) -> None:
    if replaced := guard.tampered():
        raise Verdict(
            FailureKind.TAMPERING,
            f"The submission replaced {', '.join(replaced[:5])} during {during}. "
            "The timer, the checker and the harness are off limits: a submission may only compute its "
            "output.",
        )


def import_submission(file_name: str) -> Callable[[Any], Any]:
    """Import the staged submission; syntax errors, import errors and a missing entry point become verdicts."""
    module_name = Path(file_name).stem
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f" of {Path(exc.filename).name}" if exc.filename else "")
        raise Verdict(
            FailureKind.SYNTAX_ERROR,
            f"The submission has a syntax error at {where}: {exc.msg}. Fix it and submit again.",
            "".join(traceback.format_exception_only(exc)),
        ) from None
    except BaseException as exc:  # a submission may raise SystemExit at import
        kind = classify(exc)
        kind = FailureKind.IMPORT_ERROR if kind is FailureKind.EXCEPTION else kind
        raise Verdict(
            kind,
            f"Importing the submission raised {summary(exc)}. Check its imports and top-level "
            "code; the traceback below shows where.",
            user_traceback(exc),
        ) from None
    kernel = getattr(module, ENTRY_POINT, None)
    if not callable(kernel):
        raise Verdict(
            FailureKind.MISSING_ENTRY_POINT,
            f"The submission defines no function {ENTRY_POINT}(data). "
            f"Define it: it receives the input that generate_input builds and returns the output.",
        )
    return kernel


def load_cu(path: Path) -> CuKernel:
    """The built module of a .cu submission; a module that will not load is the submission's import error."""
    try:
        return CuKernel(path)
    except OSError as exc:
        raise Verdict(
            FailureKind.IMPORT_ERROR,
            f"The compiled submission could not be loaded ({exc}). Check that it defines custom_kernel for the "
            "problem's input_t and output_t.",
        ) from None


def _storages(
    described: list[Any], blobs: list[bytearray], staged: dict[int, torch.UntypedStorage]
) -> transport.Storages:
    """A call's input storages: host memory from the message's blobs, device memory staged before it."""
    host = iter(transport.cpu_storages(blobs))
    return [next(host) if "cpu" in d else staged[int(d["staged"])] for d in described]


def _ready(kernel: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The kernel, waiting for JAX outputs inside the call: JAX computes asynchronously on streams of its own,
    which the timer's events on torch's stream would not wait for."""

    def call(data: Any) -> Any:
        output = kernel(data)
        for item in output if isinstance(output, (tuple, list)) else (output,):
            if type(item).__module__.startswith(("jax", "jaxlib")) and hasattr(item, "block_until_ready"):
                item.block_until_ready()
        return output

    return call


def _address(output: Any) -> int:
    """Where the output's first plain tensor lives in the runner (0 when it has none): groups calls by placement."""
    items = output if isinstance(output, (tuple, list)) else (output,)
    first = next((t for t in items if type(t) is torch.Tensor), None)
    return int(first.data_ptr()) if first is not None else 0


def _fresh_like(data: Any) -> Any:
    """The calibration's call: a fresh output like its input's first tensor, so the exchange it measures shares memory
    back as a real call's does (on CUDA an IPC handle per new output, which costs a fixed 0.1-0.3 ms); on the CPU a
    copy, since real outputs are written (their pages are faulted in, and freed calls later, outside any timer)."""
    first = _first_tensor(data, 0)
    if first is None:
        return None
    return torch.empty_like(first) if first.device.type == "cuda" else first.clone()


def _first_tensor(value: Any, depth: int) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return next((t for item in items if depth < 16 and (t := _first_tensor(item, depth + 1)) is not None), None)
