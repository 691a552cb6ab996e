#!/bin/bash
# CPU seconds of a first inline-CUDA build's compiles, each source as written and as kernelrank's builder now builds
# it (harness/builds/header_tiers.py, plan: the lightest tier the source's names allow). Runs where there is nvcc
# but no GPU:
#     bash bench/light_headers_cpu.sh          # from the repository root, ~15 min on 2 cores
# The files and flags are torch's own: load_inline writes main.cpp, cuda.cu and build.ninja (its ninja run is
# skipped), and each compile runs as ninja would run it, one at a time, for sm_90a. Prints one line per compile
# (wall and user+sys CPU seconds); figures in docs/benchmarks.md.
set -euo pipefail
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}  # load_inline asks for it; nvcc on PATH may be a wrapper
PY=${PYTHON:-.venv/bin/python}
WORK=$(mktemp -d /tmp/kernelrank-light-headers-XXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/shim/c10/cuda/impl" && echo '#pragma once' > "$WORK/shim/c10/cuda/impl/cuda_cmake_macros.h"  # CPU wheels lack it
TORCH_CUDA_ARCH_LIST=9.0a PYTHONPATH=$PWD $PY - "$WORK" <<'PYEOF'
import os, sys, time
from pathlib import Path
from torch.utils import cpp_extension
from harness.builds import header_tiers
sys.path.insert(0, "bench")
from inline_build_profile import load_inline_arguments

work = Path(sys.argv[1])
cpp_extension._run_ninja_build = lambda *args, **kwargs: None  # write the sources and build.ninja, compile nothing
cpp_extension._import_module_from_library = lambda *args, **kwargs: None
cpp_extension.CUDA_HOME = os.environ["CUDA_HOME"]  # a CPU wheel of torch knows no CUDA home of its own
ops_folder = Path(cpp_extension.include_paths()[0]) / "ATen" / "ops"
started = time.monotonic()
vocabulary = header_tiers.vocabulary()
print(f"header vocabulary (every header set preprocessed side by side, once per server): {time.monotonic() - started:.1f} s")
fixtures = {
    "public": "bench/fixtures/inline_dispatch_public_style.py",
    "ours": "problems/vectoradd/solutions/correct/cuda_inline.py",
    "aten": "bench/fixtures/inline_aten_ops.py",
}
for label, path in fixtures.items():
    arguments = {k: v for k, v in load_inline_arguments(Path(path)).items() if k != "verbose"}
    plan = header_tiers.plan(arguments, ops_folder, vocabulary)
    print(f"{label}: tiers to try {[name for name, _ in plan] or 'none'}")
    for variant, options in [("written", arguments), *plan]:
        folder = work / f"{label}-{variant}"
        folder.mkdir(exist_ok=True)
        cpp_extension.load_inline(**options, build_directory=str(folder))
PYEOF
cd "$WORK"
var() { sed -n "s/^$1 = //p" "$2/build.ninja"; }
uptime
for dir in public-written ours-light public-ops; do  # main.cpp: as written (torch/extension.h), light, ops
  (cd $dir && /usr/bin/time -f "g++ $dir/main.cpp: wall %e s, cpu %U+%S s" \
    bash -c "c++ $(var cflags .) -c main.cpp -o main.o $(var post_cflags .)")
done
for dir in public-written public-ops ours-written ours-ops aten-written aten-ops; do
  [ -d $dir ] || continue
  (cd $dir && /usr/bin/time -f "nvcc $dir/cuda.cu: wall %e s, cpu %U+%S s" \
    bash -c "nvcc -I$WORK/shim $(var cuda_cflags .) -c cuda.cu -o cuda.o $(var cuda_post_cflags .)")
done
# The GPU code each tier built against the source as written's: the objects' embedded fatbins, equal but for the
# module id, nvcc's hash of the translation unit's text that names its internal symbols.
$PY - <<'PYEOF'
import re, subprocess
from pathlib import Path
def fatbin(folder):
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", f"{folder}/cuda.o", f"{folder}/fatbin"])
    data = Path(f"{folder}/fatbin").read_bytes()
    ids = set(re.findall(rb"_([0-9a-f]{8})_\d+_cuda_cu_[0-9a-f]{8}", data))
    for module_id in ids:
        data = data.replace(module_id, b"MODULEID")
    return data, len(ids)
for written in sorted(Path().glob("*-written/cuda.o")):
    for tier in sorted(Path().glob(written.parent.name.replace("-written", "-*/cuda.o"))):
        if tier != written:
            (a, _), (b, ids) = fatbin(written.parent), fatbin(tier.parent)
            verdict = "identical but for the module id" if a == b else "DIFFERENT"
            print(f"GPU code of {tier.parent} against {written.parent} ({len(b)} bytes, {ids} module id): {verdict}")
PYEOF
uptime
