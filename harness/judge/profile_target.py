"""The process Nsight Compute profiles: one benchmark shape of one submission, its calls between
``cudaProfilerStart`` and ``cudaProfilerStop`` (input generation and the warm-up call stay outside).

    python -m harness.judge.profile_target FOLDER SPEC_JSON

FOLDER holds a copy of the problem's files and the submission (and the built module of a .cu submission)
and ``profile.json`` saying which language and entry to use. It runs inside the job's sandbox, started by
the worker (``harness.judge.profiling``); it never talks to the harness server.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROFILED_CALLS = 1  # ncu replays each kernel for its metrics: one call per shape is enough


def main(folder: str, spec_json: str) -> int:
    os.chdir(folder)
    sys.path.insert(0, folder)
    settings = json.loads(Path("profile.json").read_text())
    import torch

    prepare: Callable[[Any], Any] = lambda data: data
    if settings["lang"] == "cu":  # both modules in this one process: profile mode ranks nothing
        from harness.builds.build import CU_MODULE, CU_REFERENCE
        from harness.judge.cu_reference import CuReference
        from harness.runner.cu_module import CuKernel

        generate = CuReference(Path(folder) / CU_REFERENCE).generate_input
        cu = CuKernel(Path(folder) / CU_MODULE)
        kernel, prepare = cu, cu.prepare
    else:
        from harness.judge.judge_process import adapt_generate_input

        generate = importlib.import_module("reference").generate_input
        if settings["first_format"]:
            generate = adapt_generate_input(generate)
        kernel = importlib.import_module(Path(settings["submission"]).stem).custom_kernel
    spec = json.loads(spec_json)
    device = torch.device("cuda") if settings["default_device"] else contextlib.nullcontext()
    with device:
        kernel(prepare(generate(**spec)))  # compiles and first-call effects, not profiled
        inputs = [
            prepare(
                generate(**{**spec, "seed": spec.get("seed", 0) + 13 * (call + 1)})
                if "seed" in spec
                else generate(**spec)
            )
            for call in range(PROFILED_CALLS)
        ]
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for data in inputs:
        kernel(data)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
