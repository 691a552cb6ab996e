"""The integrity suite as data: every cheat, honest solution and hostile submission, with what must happen.

Shared by the pytest suites here and ``bench/integrity_gpu.py`` (which runs the CUDA cases on a GPU
machine without pytest). A case names a file under ``cheats/``, ``honest/`` or ``hostile/`` (or a path
from the repository root), the problem it runs on, the mode and device, and the outcome: the failure kinds
that count as "caught" (a cheat is never ranked: it fails, or it is held for review), or ``PASSED`` for
an honest solution, which must also carry no finding that holds a ranked run.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import EvalJob, EvalResult, FailureKind, Mode, Problem, Status, load_problem, transport
from harness.judge import runner_memory

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROBLEMS = {
    "fixture": REPO / "tests" / "fixtures" / "harness" / "vectoradd",
    "lenient": REPO / "tests" / "fixtures" / "harness" / "lenient",
    "lazy_import": REPO / "tests" / "fixtures" / "harness" / "lazy_import",
    **{
        name: REPO / "problems" / name
        for name in ("vectoradd", "matmul", "histogram", "prefixsum", "identity", "vectoradd_cu", "grayscale_cu")
    },
}
PASSED = "passed"

F = FailureKind
HELD = F.HELD_FOR_REVIEW


@functools.cache
def judge_reads_runner_memory() -> str:
    """Why a parent may not read its child's memory here, as the judge reads its runner's on the CPU
    (``harness.judge.runner_memory``); empty where it may. A kernel or container that forbids ``process_vm_readv``
    keeps the socket exchange, where the ``memory`` cases' defences do not apply."""
    probe = bytearray(transport.MEMORY_PROBE)
    where = ctypes.addressof(ctypes.c_char.from_buffer(probe))  # the same address in the forked child
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(read, 1)
        os._exit(0)
    try:
        return runner_memory.probe(pid, {"address": where}) or ""
    finally:
        os.write(write, b"x")
        os.waitpid(pid, 0)
        os.close(read)
        os.close(write)


@dataclass(frozen=True)
class Case:
    file: str  # under cheats/, honest/, hostile/, or from the repository root
    entry: str  # catalogue entry ("C7"), "honest", or the hostile input it stands for
    defence: str  # what catches it (docs/integrity.md's table)
    expect: tuple[F | str, ...]  # acceptable outcomes: failure kinds, or PASSED
    reason: str = ""  # words the failure message must contain (the right reason)
    mode: Mode = Mode.RANKED
    problem: str = "fixture"
    cuda: bool = False
    check: Callable[[EvalResult], str | None] | None = None  # a further condition, None when it holds
    timeout_s: float | None = None  # the mode's time limit, when the problem's would only make the test slow
    slow: bool = False  # takes seconds (a time limit run out, a compile): left out of ``make test-fast``
    memory: bool = False  # caught through the judge's reads of the runner's memory: skipped where the host forbids them

    @property
    def name(self) -> str:
        return Path(self.file).stem

    @property
    def path(self) -> Path:
        for folder in ("cheats", "honest", "hostile"):
            if (HERE / folder / self.file).exists():
                return HERE / folder / self.file
        return REPO / self.file

    def job(self, problems: dict[str, Problem] | None = None, **fields: object) -> EvalJob:
        problem = (problems or {}).get(self.problem) or load_problem(PROBLEMS[self.problem])
        if self.timeout_s is not None:
            limit = self.timeout_s
            problem = dataclasses.replace(
                problem,
                task=dataclasses.replace(
                    problem.task, test_timeout=limit, benchmark_timeout=limit, ranked_timeout=limit
                ),
            )
        settings: dict[str, object] = {
            "mode": self.mode,
            "device": "cuda" if self.cuda else "cpu",
            "secret_seed": 20261123,
            **fields,
        }
        return EvalJob(
            problem=problem,
            submission_name=problem.submission_name,
            submission_source=self.path.read_text(),
            **settings,
        )  # type: ignore[arg-type]

    def judge(self, result: EvalResult) -> str | None:
        """None when the result is what this case expects; otherwise what is wrong with it."""
        got = PASSED if result.status is Status.PASSED else (result.failure.kind if result.failure else "?")
        if got not in self.expect:
            message = result.failure.message if result.failure else ""
            return f"expected {' or '.join(map(str, self.expect))}, got {got}: {message[:300]}"
        if got != PASSED and self.reason.lower() not in result.failure.message.lower():
            return f"the failure does not say {self.reason!r}: {result.failure.message[:300]}"
        if self.entry == "honest" and (held := [f.message for f in result.findings if f.hold]):
            return f"an honest solution was flagged: {held}"
        return self.check(result) if self.check else None


def _leftover(result: EvalResult) -> str | None:
    return None if result.sandbox.leftovers >= 1 else f"nothing was left running to kill: {result.sandbox}"


def _no_planted_code(result: EvalResult) -> str | None:
    """c25_planted_module's code prints this wherever it runs outside the runner."""
    return "planted code ran outside the runner" if "PLANTED-" + "CODE-RAN-OUTSIDE" in result.stdout else None


def _timed_in_full(result: EvalResult) -> str | None:
    """The millisecond the submission left queued on the device is inside every timed sample."""
    fast = [s.median_us for s in result.shapes if s.median_us < 500]
    return f"shapes timed below the queued work: {fast}" if fast else None


CATALOGUE = [
    Case(
        "c01_cache_by_shape.py",
        "C1",
        "fresh inputs every call, every warm-up output checked",
        (F.WRONG_OUTPUT,),
        "wrong output",
        Mode.BENCHMARK,
    ),
    Case(
        "c01_cache_by_pointer.py",
        "C1",
        "fresh allocations, the last inputs kept alive, every output checked",
        (F.WRONG_OUTPUT, PASSED),
        "wrong output",
    ),
    Case(
        "c02_replay_from_files.py",
        "C2",
        "per-job /tmp, /dev/shm and HOME; never-seen inputs; pre-check",
        (HELD,),
        "outside its working directory",
    ),
    Case("c03_return_input.py", "C3", "seed-dependent inputs, the problem's checker", (F.WRONG_OUTPUT,), "mismatched"),
    Case(
        "c04_stale_memory.py",
        "C4",
        "freed reference outputs poisoned before each call",
        (F.WRONG_OUTPUT,),
        "wrong output",
    ),
    Case(
        "c04_stale_memory.py",
        "C4",
        "freed reference outputs poisoned before each call (CUDA caching allocator)",
        (F.WRONG_OUTPUT,),
        "wrong output",
        cuda=True,
    ),
    Case(
        "c05_side_stream.py",
        "C5",
        "device-wide post-sync marker vs event time; the judge's bracket; pre-check",
        (F.ESCAPED_TIMING, F.UNTRUSTED_TIME),
        "",
        Mode.BENCHMARK,
        cuda=True,
    ),
    Case(
        "c06_async_work.py",
        "C6",
        "CUDA events and a device sync: queued work is timed",
        (PASSED,),
        mode=Mode.BENCHMARK,
        cuda=True,
        check=_timed_in_full,
    ),
    Case(
        "c07_background_thread.py",
        "C7",
        "after each call no thread may still run the submission's code",
        (F.ESCAPED_TIMING,),
        "thread it started",
    ),
    Case(
        "c07_thread_library_target.py",
        "C7",
        "threads the submission started must be done when it returns",
        (F.ESCAPED_TIMING,),
        "thread it started",
    ),
    Case(
        "c08_lazy_tensor.py",
        "C8",
        "the output must be a plain torch.Tensor",
        (F.BAD_OUTPUT_TYPE,),
        "plain torch.Tensor",
    ),
    Case(
        "c09_patch_timer.py", "C9", "timer and checker bound before import, verified after", (F.TAMPERING,), "replaced"
    ),
    Case(
        "c10_fake_records.py",
        "C10",
        "private channel with a per-run nonce; nothing read from stdout",
        (F.TAMPERING, F.CRASH),
        "",
    ),
    Case(
        "c10_nonce_forgery.py",
        "C10",
        "the runner never holds the judge's result channel (its descriptor is closed)",
        (F.IMPORT_ERROR,),
        "OSError",  # EBADF, or EINVAL where a library of the runner reused the number (an H200 host, 2026-11-27)
    ),
    Case(
        "c11_frame_walk.py",
        "C11",
        "the reference never runs in the runner: no frame or object to find",
        (F.WRONG_OUTPUT,),
        "mismatched",
    ),
    Case(
        "c11_read_reference_file.py",
        "C11",
        "reference.py removed from the working directory once bound",
        (F.EXCEPTION,),
        "No such file",
    ),
    Case(
        "c12_zero_inputs.py",
        "C12",
        "the checker sees a pristine copy of the inputs",
        (F.WRONG_OUTPUT,),
        "checker rejected",
    ),
    Case(
        "c12_scribble_input.py",
        "C12",
        "inputs unchanged unless the reference writes them or the output aliases them",
        (F.WRONG_OUTPUT,),
        "inputs-unchanged",
        problem="lenient",
    ),
    Case("c13_half_precision.py", "C13", "the problem's dtype-aware tolerance", (F.WRONG_OUTPUT,), "mismatched"),
    Case(
        "c14_public_seed_replay.py",
        "C14",
        "ranked inputs from a secret run key, handed over per call",
        (F.WRONG_OUTPUT,),
        "wrong output",
    ),
    Case(
        "c15_shape_shortcut.py",
        "C15",
        "benchmark shapes checked in every mode",
        (F.WRONG_OUTPUT,),
        "benchmark shape",
        Mode.BENCHMARK,
    ),
    Case(
        "c16_seed_ahead.py",
        "C16",
        "seeds live in the judge: the runner has no seed plan to ask ahead",
        (PASSED,),
        mode=Mode.BENCHMARK,
        slow=True,
    ),
    Case(
        "c16_batch_with_generator.py",
        "C16",
        "the input generator never loads in the runner",
        (F.IMPORT_ERROR,),
        "No module named 'reference'",
    ),
    Case(
        "c17_import_time_work.py",
        "C17",
        "the problem's functions never load in the runner",
        (F.IMPORT_ERROR,),
        "No module named 'reference'",
    ),
    Case(
        "c18_uninitialised.py",
        "C18",
        "poisoned freed memory, NaN/Inf and value checks",
        (F.WRONG_OUTPUT,),
        "wrong output",
    ),
    Case(
        "c18_illegal_address.py",
        "C18",
        "CUDA errors checked after every call",
        (F.CUDA_ERROR,),
        "CUDA error",
        cuda=True,
    ),
    # held for review (the pre-check) where the driver already reserves the most the GPU allows: nothing changed
    Case(
        "c19_persisting_l2.py",
        "C19",
        "persisting-L2 limit checked after every call; pre-check",
        (F.TAMPERING, HELD),
        "persisting L2",
        cuda=True,
    ),
    Case(
        "c20_calls_reference.py",
        "C20",
        "the reference never loads in the runner",
        (F.IMPORT_ERROR,),
        "No module named 'reference'",
    ),
    Case("c21_nan_output.py", "C21", "the problem's NaN-aware checker", (F.WRONG_OUTPUT,), "mismatched"),
    Case(
        "c21_nan_output.py",
        "C21",
        "NaN where the reference has none, when the checker lets NaN through",
        (F.WRONG_OUTPUT,),
        "finite-output",
        problem="lenient",
    ),
    Case(
        "c22_hijack.py",
        "C22",
        "PID namespace and a user of its own: nothing to kill, trace or write",
        (F.WRONG_OUTPUT,),
        "mismatched",
    ),
    # its burner's CPU time is the job's (issue 25): named untrusted_time before the pre-check's hold applies
    Case(
        "c23_leftover_process.py",
        "C23",
        "PID namespace killed with the job; the job's CPU time; pre-check",
        (HELD, F.UNTRUSTED_TIME),
        "",
        check=_leftover,
    ),
    # issue 20: the judge/runner split (docs/integrity.md, "The judge and the runner")
    Case(
        "c24_heap_forgery.py",
        "C10",
        "the runner holds no channel to forge on; its early exit is a crash",
        (F.CRASH,),
        "exited with code 0",
    ),
    Case(
        "c24_forged_time.py",
        "C9",
        "reported times must account for the runner's CPU time in the judge's bracket",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
    ),
    Case(
        "c24_patched_comparison.py",
        "C9",
        "the checker runs in the judge, on copies, untouched by the runner",
        (F.WRONG_OUTPUT,),
        "mismatched",
    ),
    Case(
        "c24_done_early.py",
        "C7",
        "the judge copies the output when the runner answers",
        (F.WRONG_OUTPUT,),
        "mismatched",
    ),
    Case(
        "c24_done_early_cuda.py",
        "C5",
        "the judge waits for the runner's stream and copies the output then",
        # or its own timer fails on events that never completed (seen on an H200): not passed either way
        (F.WRONG_OUTPUT, F.ESCAPED_TIMING, F.UNTRUSTED_TIME, F.EXCEPTION),
        "",
        cuda=True,
    ),
    Case(
        "c24_write_channel.py",
        "C10",
        "anything on the judge's link that is not the harness's answer",
        (F.TAMPERING,),
        "protocol",
    ),
    # issue 25: the judge's clock bounds every time (docs/integrity.md, "The judge's clock")
    Case(
        "c25_work_before_clock.py",
        "C17",
        "the judge's clock starts before the inputs reach the runner",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
    ),
    Case(
        "c25_view_of_big_buffer.py",
        "C9",
        "transfer time allowed for a view's extent, at the judge's own socket speed",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
    ),
    Case(
        "c25_forked_helper.py",
        "C7",
        "CPU time of the whole job (its cgroup, else the runner's process tree)",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
    ),
    Case(
        "c25_quarter_of_one_core.py",
        "C9",
        "CPU time over the cores the call kept busy, a 25 % slack",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
    ),
    Case(
        "c25_bytes_at_wall_speed.py",
        "C9",
        "a byte's allowance is its cost in the job's CPU time, measured before the import, not a socket's wall time",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
        problem="vectoradd",
    ),
    Case(
        "c25_lie_under_two_ms.py",
        "C9",
        "the judge moves host bytes itself and counts the busiest thread, so the CPU slack is 600 us, not 2 ms",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
        memory=True,
    ),
    Case(
        "c25_serial_relay.py",
        "C9",
        "the job's CPU time counts up to the bracket's wall time (less the runner's waits for a core), so threads that "
        "take turns count in full, not over the cores",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
        memory=True,
    ),
    Case(
        "c25_forged_sub_microsecond.py",
        "C9",
        "under the judge's CPU slack, but faster than the job's cores could move the shape's bytes (1 TB/s a core)",
        (F.IMPLAUSIBLE_TIME,),
        "CPU cores need at least",
        problem="vectoradd",
    ),
    Case(
        "c25_reaped_in_ticks.py",
        "C7",
        "reaped children's CPU time, which comes in 10 ms ticks, counts as the shape's mean per call, not the median",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
    ),
    Case(
        "c25_cuda_memory_on_cpu.py",
        "C10",
        "a CPU evaluation's answer may describe no CUDA memory: the runner's protocol breach, not the harness's error",
        (F.TAMPERING,),
        "CUDA memory in an evaluation on the CPU",
    ),
    Case(
        "c25_autoreaped_worker.py",
        "C7",
        "the runner's seccomp filter refuses a new action for SIGCHLD: no process of the job is reaped unseen",
        (F.IMPORT_ERROR,),
        "Operation not permitted",
    ),
    Case(
        "c25_work_before_clock.py",
        "C17",
        "the judge's clock starts before its copy of the inputs into the runner's buffers (CUDA)",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
        cuda=True,
    ),
    Case(
        "c25_event_sync_off.py",
        "C5",
        "the judge always waits on the runner's stream, whatever the runner's IPC description asks",
        (F.UNTRUSTED_TIME, F.WRONG_OUTPUT),
        "",
        cuda=True,
    ),
    Case(
        "c25_baseline_gap.py",
        "C5",
        "the side-stream baseline comes from empty calls before the submission existed",
        (F.ESCAPED_TIMING, F.UNTRUSTED_TIME, F.WRONG_OUTPUT),
        "",
        Mode.BENCHMARK,
        cuda=True,
    ),
    # the same on a GPU (bench/integrity_gpu.py): CUDA IPC answers, the bracket as the judge's measure
    Case("c24_heap_forgery.py", "C10", "no channel in the runner (CUDA)", (F.CRASH,), "exited with code 0", cuda=True),
    Case(
        "c24_forged_time.py",
        "C9",
        "the judge's bracket around a CUDA call",
        (F.UNTRUSTED_TIME,),
        "shorter than the work took",
        cuda=True,
    ),
    Case(
        "c24_patched_comparison.py", "C9", "the checker in the judge (CUDA)", (F.WRONG_OUTPUT,), "mismatched", cuda=True
    ),
    Case("c24_write_channel.py", "C10", "the judge's link (CUDA)", (F.TAMPERING,), "protocol", cuda=True),
    # issue 25 (docs/integrity.md, "The judge runs only its own code", "Output contracts")
    Case(
        "c25_planted_module.py",
        "C22",
        "the judge imports the problem's files from memory and nothing from a folder the job can write",
        (F.WRONG_OUTPUT, F.TAMPERING),
        "",
        Mode.TEST,
        problem="lazy_import",
        check=_no_planted_code,
    ),
    Case(
        "c25_planted_module.py",
        "C22",
        "the same with CUDA answers",
        (F.WRONG_OUTPUT, F.TAMPERING),
        "",
        Mode.TEST,
        problem="lazy_import",
        cuda=True,
        check=_no_planted_code,
    ),
    Case(
        "c25_output_is_input.py",
        "C3",
        "an output may not share memory with an input the reference neither writes nor returns",
        (F.BAD_OUTPUT_TYPE,),
        "output-not-input",
        problem="identity",
    ),
    Case(
        "c25_output_is_input.py",
        "C3",
        "the same on a GPU: the output is the buffer the input was staged in",
        (F.BAD_OUTPUT_TYPE,),
        "output-not-input",
        problem="identity",
        cuda=True,
    ),
    Case(
        "c25_undumpable_runner.py",
        "C22",
        "a runner the judge may not write into (undumpable) breaks the protocol: a named verdict, not a harness error",
        (F.TAMPERING,),
        "could not write the call's inputs",
        memory=True,
    ),
    Case(
        "c25_shared_memory_output.py",
        "C3",
        "the judge reads outputs only from the runner's private memory: an output in shared memory is the output's "
        "fault (bad_output_type, with what to do), not the protocol's",
        (F.BAD_OUTPUT_TYPE,),
        "own memory",
        memory=True,
    ),
    Case(
        "c25_hidden_alias_cpu.py",
        "C3",
        "the judge reads host outputs from the runner's memory itself: an input buffer named as fresh memory is the "
        "input, and the alias rules refuse it",
        (F.BAD_OUTPUT_TYPE,),
        "output-not-input",
        problem="identity",
        memory=True,
    ),
    Case(
        "c25_hidden_alias_cuda.py",
        "C3",
        "a staged input buffer named as fresh output memory is seen as the input it is, and the alias rules refuse it",
        (F.BAD_OUTPUT_TYPE,),
        "output-not-input",
        problem="identity",
        cuda=True,
    ),
    Case(
        "c25_cu_checker_in_reach.cu",
        "C11",
        "a .cu submission is built and loaded apart from the problem's checker, in the runner's process",
        (F.WRONG_OUTPUT, F.TAMPERING),
        "",
        problem="vectoradd_cu",
        cuda=True,
        slow=True,
    ),
]

_SOLUTIONS = "problems/{}/solutions/correct/{}"
HONEST = [
    Case("h01_out_buffer.py", "honest", "destination passing into the output buffer", (PASSED,)),
    Case("h02_new_tensor.py", "honest", "a fresh output tensor", (PASSED,)),
    Case("h03_chunked.py", "honest", "slices of the output buffer", (PASSED,)),
    Case("h04_numpy.py", "honest", "NumPy on the host", (PASSED,)),
    Case(
        _SOLUTIONS.format("identity", "pytorch.py"), "honest", "a copy into a new tensor", (PASSED,), problem="identity"
    ),
    Case(
        "h05_torch_compile.py",
        "honest",
        "torch.compile with configuration (Inductor's C++ backend)",
        (PASSED,),
        problem="vectoradd",
        slow=True,
    ),
    Case("h01_out_buffer.py", "honest", "destination passing on the GPU", (PASSED,), cuda=True),
    Case(
        "h05_torch_compile.py", "honest", "torch.compile (Inductor, Triton)", (PASSED,), problem="vectoradd", cuda=True
    ),
    Case(
        "h06_cuda_graph.py",
        "honest",
        "a CUDA graph replayed on copied-in inputs",
        (PASSED,),
        problem="vectoradd",
        cuda=True,
    ),
    Case(
        "h07_joined_side_stream.py",
        "honest",
        "a side stream joined back before returning",
        (PASSED,),
        problem="vectoradd",
        cuda=True,
    ),
    Case(
        _SOLUTIONS.format("vectoradd", "triton_add.py"), "honest", "Triton", (PASSED,), problem="vectoradd", cuda=True
    ),
    Case(
        _SOLUTIONS.format("vectoradd", "cuda_inline.py"),
        "honest",
        "inline CUDA (load_inline)",
        (PASSED,),
        problem="vectoradd",
        cuda=True,
    ),
    Case(
        _SOLUTIONS.format("matmul", "pytorch.py"),
        "honest",
        "cuBLAS through torch",
        (PASSED,),
        problem="matmul",
        cuda=True,
    ),
    Case(
        _SOLUTIONS.format("matmul", "triton_tiled.py"),
        "honest",
        "a tiled Triton matmul",
        (PASSED,),
        problem="matmul",
        cuda=True,
    ),
    Case(
        _SOLUTIONS.format("histogram", "triton_private_bins.py"),
        "honest",
        "Triton with atomics",
        (PASSED,),
        problem="histogram",
        cuda=True,
    ),
    Case(
        _SOLUTIONS.format("prefixsum", "triton_three_pass.py"),
        "honest",
        "a three-pass Triton scan",
        (PASSED,),
        problem="prefixsum",
        cuda=True,
    ),
    Case(
        _SOLUTIONS.format("vectoradd_cu", "half2_add.cu"),
        "honest",
        "a .cu submission: input_t rebuilt in the runner's module, output_t read back in the judge's",
        (PASSED,),
        problem="vectoradd_cu",
        cuda=True,
        slow=True,
    ),
    Case(
        _SOLUTIONS.format("grayscale_cu", "grayscale.cu"),
        "honest",
        "a .cu submission whose input_t is a struct of a size and a device buffer",
        (PASSED,),
        problem="grayscale_cu",
        cuda=True,
        slow=True,
    ),
]

HOSTILE = [
    Case("empty.py", "empty file", "", (F.MISSING_ENTRY_POINT,), "defines no function", Mode.TEST),
    Case("binary.py", "binary file", "", (F.SYNTAX_ERROR, F.IMPORT_ERROR), "null bytes", Mode.TEST),
    Case("syntax_error.py", "syntax error", "", (F.SYNTAX_ERROR,), "line 4", Mode.TEST),
    Case("missing_module.py", "missing module", "", (F.IMPORT_ERROR,), "kernelrank_hostile_module", Mode.TEST),
    Case("no_entry_point.py", "no custom_kernel", "", (F.MISSING_ENTRY_POINT,), "custom_kernel", Mode.TEST),
    Case(
        "loop_at_import.py", "infinite loop at import", "", (F.TIMEOUT,), "starting", Mode.TEST, timeout_s=4, slow=True
    ),
    Case(
        "loop_in_kernel.py",
        "infinite loop in the kernel",
        "",
        (F.TIMEOUT,),
        "testing 1 of 3",
        Mode.TEST,
        timeout_s=4,
        slow=True,
    ),
    Case("fork_bomb.py", "fork bomb", "", (F.RESOURCE_LIMIT,), "processes", Mode.TEST, slow=True),
    Case("forks_128.py", "128 forked copies", "", (PASSED,), mode=Mode.TEST, slow=True),
    Case("allocate_10gb.py", "10 GB allocation", "", (F.OUT_OF_MEMORY,), "memory", Mode.TEST),
    Case("output_100mb.py", "100 MB of output", "", (F.OUTPUT_FLOOD,), "MiB of output", Mode.TEST),
    Case("exits.py", "os._exit", "", (F.CRASH,), "exited with code 0", Mode.TEST),
    Case("segfault.py", "segfault through ctypes", "", (F.CRASH,), "SIGSEGV", Mode.TEST),
    Case("illegal_address.py", "CUDA illegal address", "", (F.CUDA_ERROR,), "CUDA error", Mode.TEST, cuda=True),
    Case("writes_outside.py", "writing outside the working directory", "", (F.EXCEPTION,), "writable", Mode.TEST),
    Case("background_process.py", "a background process", "", (PASSED,), mode=Mode.TEST, check=_leftover),
    Case("network.py", "a network connection", "", (F.EXCEPTION,), "no network", Mode.TEST),
    Case("exit_at_import.py", "sys.exit at import", "", (F.IMPORT_ERROR,), "SystemExit", Mode.TEST),
    Case("deep_recursion.py", "unbounded recursion", "", (F.EXCEPTION,), "RecursionError", Mode.TEST),
    Case("unprintable_error.py", "an exception that cannot print itself", "", (F.EXCEPTION,), "Unprintable", Mode.TEST),
    Case("returns_none.py", "returns None", "", (F.BAD_OUTPUT_TYPE,), "NoneType", Mode.TEST),
    Case("huge_file.py", "a 2 GiB file", "", (F.RESOURCE_LIMIT,), "MiB in all", Mode.TEST),
    Case("many_files.py", "100,000 open files", "", (F.RESOURCE_LIMIT,), "files", Mode.TEST),
    Case("kills_init.py", "signals its init and everything else", "", (PASSED,), mode=Mode.TEST),
    # tests/integrity/test_disk_and_reach.py runs these two on the CPU with their own checks; here on the GPU,
    # where the driver's threads and Triton's helpers share the runner's filter
    Case("reaches_the_judge.py", "aims at the judge's threads", "", (PASSED,), mode=Mode.TEST, cuda=True),
    Case("reserves_disk.py", "reserves disk past stdout's size", "", (PASSED,), mode=Mode.TEST, cuda=True),
]
