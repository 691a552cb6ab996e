"""Where a first inline-CUDA build and a ranked evaluation spend their time (issue 11's compile targets).

    python3 bench/inline_build_profile.py [SECTIONS]   # on a CUDA machine, from the repository root, ~5 min
                                                       # SECTIONS: which of a-e to run (all by default)

a) The machine: CPU, cores, nvcc, torch, and what a fresh process pays to import torch and start CUDA.
b) torch's own ``load_inline`` of vectoradd's inline-CUDA solution in a fresh process, outside kernelrank:
   wall time and each ninja step (the generated main.cpp, the .cu, the link) from ninja's log.
c) nvcc's phases for that .cu (``nvcc --time``), and the generated main.cpp with and without a precompiled
   ``torch/extension.h``.
   Both again against the light headers kernelrank's builder tries first
   (``harness.builds.header_tiers.light_options``).
d) Ranked evaluations through a fresh harness server, as a timeline of its progress events: the PyTorch
   solution, then the inline-CUDA one with an empty compile cache, then again with the cache filled.
e) First and repeat builds of the same kernel, ranked, through ``kernelrank eval`` (a fresh process each, one
   compile cache) and through the service (``kernelrank up`` in a scratch home, ``kernelrank submit``), beside
   torch's own ``load_inline`` of it (section b), all in this one run; each run must pass.

Prints one table per section; with $OUT set also writes $OUT/inline_build_profile.json and .md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import EvalJob, HarnessServer, Mode, load_problem  # noqa: E402
from harness.builds import toolchain  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_report import Report  # noqa: E402

VECTORADD = REPO / "problems" / "vectoradd"
SOLUTIONS = VECTORADD / "solutions" / "correct"
report = Report(name="inline_build_profile", title="Where a first inline-CUDA build spends its time")


def timed(command: list[str] | str, **kwargs: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, shell=isinstance(command, str), **kwargs)
    return time.monotonic() - started, done


def load_inline_arguments(solution: Path) -> dict[str, Any]:
    """The arguments the solution passes to load_inline, caught without building anything."""
    from torch.utils import cpp_extension

    caught: dict[str, Any] = {}

    class Caught(Exception):
        pass

    def catch(**kwargs: Any) -> None:
        caught.update(kwargs)
        raise Caught

    original, cpp_extension.load_inline = cpp_extension.load_inline, catch
    sys.path.insert(0, str(VECTORADD))
    try:
        exec(compile(solution.read_text(), str(solution), "exec"), {"__name__": "solution"})
    except Caught:
        pass
    finally:
        cpp_extension.load_inline = original
        sys.path.remove(str(VECTORADD))
    return caught


def section_a() -> None:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    nvcc = toolchain.nvcc() or "nvcc"
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    torch_s, _ = timed([sys.executable, "-c", "import torch"])
    cuda_s, _ = timed([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda')"])
    import torch

    report.table(
        "a) machine",
        ["what", "value"],
        [
            ["cpu", cpu],
            ["cores", os.cpu_count()],
            ["nvcc", " ".join(version)],
            ["torch", torch.__version__],
            ["gpu", torch.cuda.get_device_name()],
            ["fresh process: import torch", f"{torch_s:.2f} s"],
            ["fresh process: import torch + first CUDA tensor", f"{cuda_s:.2f} s"],
        ],
    )


def section_b(arguments: dict[str, Any], arch: toolchain.Arch, folder: Path) -> None:
    script = (
        "import json, sys, time\nfrom torch.utils.cpp_extension import load_inline\n"
        "arguments = json.loads(sys.argv[1])\nstarted = time.monotonic()\n"
        "load_inline(**arguments, build_directory=sys.argv[2])\nprint(time.monotonic() - started)"
    )
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": arch.torch, "MAX_JOBS": str(os.cpu_count())}
    wall, done = timed([sys.executable, "-c", script, json.dumps(arguments), str(folder)], env=env)
    body = [
        ["whole process (import torch, build, load)", f"{wall:.1f}"],
        ["load_inline call", _seconds(done.stdout) or done.stderr[-300:]],
    ]
    for line in (folder / ".ninja_log").read_text().splitlines()[1:]:
        start_ms, end_ms, _, output, _ = line.split("\t")
        body.append([f"ninja: {output}", f"{(int(end_ms) - int(start_ms)) / 1000:.1f}"])
    report.table("b) torch's load_inline, fresh process, outside kernelrank", ["step", "s"], body)


def ninja_variable(folder: Path, name: str) -> str:
    match = re.search(rf"(?m)^{name} = (.*)$", (folder / "build.ninja").read_text())
    return match.group(1) if match else ""


def section_c(folder: Path) -> None:
    nvcc = ninja_variable(folder, "nvcc")
    cuda_flags = ninja_variable(folder, "cuda_cflags") + " " + ninja_variable(folder, "cuda_post_cflags")
    phases = folder / "phases.csv"
    wall, done = timed(f"{nvcc} {cuda_flags} -c cuda.cu -o again.o --time {phases}", cwd=folder)
    body = [["nvcc, whole", f"{wall:.1f}"]]
    if phases.is_file():
        for row in list(csv_rows(phases))[1:]:
            body.append([f"nvcc: {row[1].strip()}", f"{float(row[6]) / 1000:.1f}"])
    else:
        body.append(["nvcc failed", done.stderr[-300:]])
    cxx = ninja_variable(folder, "cxx")
    flags = ninja_variable(folder, "cflags") + " " + ninja_variable(folder, "post_cflags")
    wall, _ = timed(f"{cxx} {flags} -c main.cpp -o plain.o", cwd=folder)
    body.append(["g++ main.cpp", f"{wall:.1f}"])
    header = next(Path(p) for p in flags.split() if Path(p, "torch", "extension.h").is_file()) / "torch"
    (folder / "pch" / "torch").mkdir(parents=True)
    wall, done = timed(
        f"{cxx} {flags} -x c++-header {shlex.quote(str(header / 'extension.h'))} -o pch/torch/extension.h.gch",
        cwd=folder,
    )
    body.append(["g++ precompile torch/extension.h", f"{wall:.1f}" if not done.returncode else done.stderr[-300:]])
    wall, done = timed(f"{cxx} -Ipch -Winvalid-pch {flags} -c main.cpp -o pch.o", cwd=folder)
    body.append(["g++ main.cpp with it", f"{wall:.1f}" if not done.returncode else done.stderr[-300:]])
    light_cpp, light_cu = light_sources(folder)
    wall, done = timed(f"{cxx} {flags} -c {light_cpp} -o light_main.o", cwd=folder)
    body.append(["g++ main.cpp, light headers", f"{wall:.1f}" if not done.returncode else done.stderr[-300:]])
    wall, done = timed(f"{nvcc} {cuda_flags} -c {light_cu} -o light_cuda.o", cwd=folder)
    body.append(["nvcc cuda.cu, light headers", f"{wall:.1f}" if not done.returncode else done.stderr[-300:]])
    report.table("c) the build's steps one by one", ["step", "s"], body)


def light_sources(folder: Path) -> tuple[str, str]:
    """main.cpp and cuda.cu as kernelrank's builder writes them first: torch/extension.h replaced by light headers
    (the same rewrite as ``harness.builds.header_tiers.light_options``, applied to the files torch generated)."""
    from harness.builds import header_tiers

    main = (
        (folder / "main.cpp")
        .read_text()
        .replace("#include <torch/extension.h>", "\n".join(header_tiers.LIGHT_CPP_HEADERS), 1)
    )
    (folder / "light_main.cpp").write_text(header_tiers.lighten(main))
    (folder / "light_cuda.cu").write_text(header_tiers.lighten((folder / "cuda.cu").read_text()))
    return "light_main.cpp", "light_cuda.cu"


def csv_rows(path: Path) -> list[list[str]]:
    import csv

    with path.open() as handle:
        return list(csv.reader(handle))


def timeline(server: HarnessServer, solution: Path, label: str) -> list[list[Any]]:
    problem = load_problem(VECTORADD)
    job = EvalJob(
        problem=problem,
        submission_name=solution.name,
        submission_source=solution.read_text(),
        mode=Mode.RANKED,
        device="cuda",
        secret_seed=20261124,
        run_id=f"profile-{solution.stem}",
    )
    started = time.monotonic()
    marks: list[tuple[float, str]] = []

    def on_progress(progress: Any) -> None:
        marks.append((time.monotonic() - started, f"{progress.stage} {progress.index}/{progress.total}"))

    result = server.evaluate(job, on_progress)
    wall = time.monotonic() - started
    body = [[label, f"{at:.2f}", what] for at, what in marks]
    body.append([label, f"{wall:.2f}", f"result: {result.status.value}, compile {result.compile_s or 0:.1f} s"])
    return body


def section_d(cache: Path) -> None:
    os.environ["KERNELRANK_BUILD_CACHE"] = str(cache)
    server = HarnessServer()
    started = time.monotonic()
    server.start()
    body = [["server", f"{time.monotonic() - started:.2f}", "started (imports torch, probes the sandbox)"]]
    body += timeline(server, SOLUTIONS / "pytorch.py", "pytorch")
    body += timeline(server, SOLUTIONS / "cuda_inline.py", "inline, cold")
    body += timeline(server, SOLUTIONS / "cuda_inline.py", "inline, cached")
    started = time.monotonic()
    server.close()
    body.append(["server", f"{time.monotonic() - started:.2f}", "closed"])
    report.table(
        "d) ranked evaluations through one harness server (seconds since each began)", ["run", "at s", "event"], body
    )


def section_e(work: Path) -> None:
    """First and repeat ranked runs of the inline-CUDA solution through `kernelrank eval` and the service."""
    solution = SOLUTIONS / "cuda_inline.py"
    kernelrank = [sys.executable, "-m", "core.launch.main"]  # works without an installed entry point
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "PYTHONPATH": pythonpath, "KERNELRANK_BUILD_CACHE": str(work / "eval-cache")}
    body = []
    for label in ("first", "repeat"):
        wall, done = timed(
            [*kernelrank, "eval", str(solution), "--problem", str(VECTORADD), "--mode", "ranked", "--json"],
            env=env,
            cwd=REPO,
        )
        body.append([f"kernelrank eval, {label}", f"{wall:.1f}", _verdict(done.stdout)])
    # a tensor operator (``* 1``) is beyond the operators' tier: its build falls back to torch/types.h
    beyond = work / "cuda_inline_operator.py"
    beyond.write_text(solution.read_text().replace("torch::empty_like(a);", "torch::empty_like(a) * 1;", 1))
    wall, done = timed(
        [*kernelrank, "eval", str(beyond), "--problem", str(VECTORADD), "--mode", "ranked", "--json"],
        env={**env, "KERNELRANK_BUILD_CACHE": str(work / "operator-cache")},
        cwd=REPO,
    )
    body.append(["kernelrank eval, first, a source needing torch/types.h", f"{wall:.1f}", _verdict(done.stdout)])
    home = work / "home"
    env = {
        **env,
        "KERNELRANK_HOME": str(home),
        "KERNELRANK_PROBLEMS_DIR": str(REPO / "problems"),
        "KERNELRANK_BUILD_CACHE": str(work / "service-cache"),
        "KERNELRANK_API_PORT": "0",
    }
    log = open(Path(os.environ.get("OUT") or work) / "up.log", "w")  # noqa: SIM115 (open while up runs)
    up = subprocess.Popen([*kernelrank, "up"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while not (home / "run" / "api.token").is_file() and time.monotonic() < deadline and up.poll() is None:
            time.sleep(0.5)
        time.sleep(5)  # the worker's harness server warms up after the API answers
        for label in ("first", "repeat"):
            wall, done = timed(
                [*kernelrank, "submit", str(solution), "--leaderboard", "vectoradd", "--mode", "ranked"],
                env=env,
                cwd=REPO,
            )
            words = [w for w in ("passed", "failed", "timed out", "could not run") if w in done.stdout]
            body.append([f"service (up + submit), {label}", f"{wall:.1f}", (words or [done.stderr[-200:]])[0]])
            if words != ["passed"]:
                print(f"service, {label}: {done.stdout[-1500:]}{done.stderr[-500:]}", flush=True)
    finally:
        up.terminate()
        up.wait(60)
        log.close()
    report.table("e) first and repeat inline-CUDA builds, ranked, end to end", ["path", "wall s", "verdict"], body)


def _seconds(stdout: str) -> str:
    """The last line a timing script printed, as seconds with one decimal ("" when it printed none)."""
    try:
        return f"{float(stdout.strip().splitlines()[-1]):.1f}"
    except (ValueError, IndexError):
        return ""


def _verdict(stdout: str) -> str:
    try:
        result = json.loads(stdout)
    except ValueError:
        return stdout[-200:]
    return f"{result['status']}, compile {result.get('compile_s') or 0:.1f} s"


def main() -> int:
    arch = toolchain.gpu_arch()
    if arch is None:
        print("no CUDA GPU here", file=sys.stderr)
        return 2
    sections = sys.argv[1] if len(sys.argv) > 1 else "abcde"  # e.g. "abe": the machine, torch's own, end to end
    work = Path(tempfile.mkdtemp(prefix="kernelrank-build-profile-"))
    (work / "torch").mkdir()
    if "a" in sections:
        section_a()
    if "b" in sections or "c" in sections:  # c reads the files b's build left
        section_b(load_inline_arguments(SOLUTIONS / "cuda_inline.py"), arch, work / "torch")
    if "c" in sections:
        section_c(work / "torch")
    if "d" in sections:
        section_d(work / "cache")
    if "e" in sections:
        section_e(work)
    if out := os.environ.get("OUT"):
        report.write(Path(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
