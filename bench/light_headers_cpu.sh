#!/bin/bash
# CPU seconds of the first inline-CUDA build's two compiles, with torch's headers and with the light headers
# kernelrank's builder tries first (harness/builds/header_tiers.py, light_options). Runs where there is nvcc but no GPU:
#     bash bench/light_headers_cpu.sh          # from the repository root, ~10 min on 2 cores
# Prints one line per compile (wall and user+sys CPU seconds); figures in docs/benchmarks.md (issue 21).
set -euo pipefail
PY=${PYTHON:-.venv/bin/python}
WORK=$(mktemp -d /tmp/kernelrank-light-headers-XXXX)
TI=$($PY -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))")
PYINC=$($PY -c "import sysconfig; print(sysconfig.get_path('include'))")
# torch's own main.cpp and flags for a C++-only add (its build also times load_inline end to end)
$PY - "$WORK/torch" <<'PYEOF'
import sys, time
from torch.utils.cpp_extension import load_inline
started = time.monotonic()
load_inline(name="probe_add", cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b) { return a + b; }",
            functions=["add"], build_directory=sys.argv[1])
print(f"load_inline of a C++-only add, end to end: {time.monotonic() - started:.1f} s")
PYEOF
# the same main.cpp and vectoradd's inline-CUDA source, each as torch writes it and with the light headers
$PY - "$WORK" <<'PYEOF'
import re, sys
from pathlib import Path
from harness.builds import header_tiers
work = Path(sys.argv[1])
main = (work / "torch" / "main.cpp").read_text()
(work / "full.cpp").write_text(main)
(work / "light.cpp").write_text(main.replace("#include <torch/extension.h>", "\n".join(header_tiers.LIGHT_CPP_HEADERS), 1))
cu = re.search(r'CUDA_SOURCE = r"""(.*?)"""', Path("problems/vectoradd/solutions/correct/cuda_inline.py").read_text(),
               re.S).group(1)
head = "\n".join(header_tiers.LIGHT_CUDA_HEADERS) + "\n"        # what load_inline prepends, too
(work / "full.cu").write_text(head + cu)
(work / "light.cu").write_text(head + header_tiers.lighten(cu))
PYEOF
mkdir -p "$WORK/shim/c10/cuda/impl" && echo '#pragma once' > "$WORK/shim/c10/cuda/impl/cuda_cmake_macros.h"  # CPU wheels lack it
FLAGS=$(sed -n 's/^cflags = //p' "$WORK/torch/build.ninja")
cd "$WORK"
uptime
for f in full.cpp light.cpp; do
  /usr/bin/time -f "g++ $f: wall %e s, cpu %U+%S s" c++ $FLAGS -c $f -o $f.o
done
for f in full.cu light.cu; do
  /usr/bin/time -f "nvcc $f: wall %e s, cpu %U+%S s" nvcc -I"$WORK/shim" -DTORCH_EXTENSION_NAME=probe \
    -DTORCH_API_INCLUDE_EXTENSION_H -isystem "$TI" -isystem "$TI/torch/csrc/api/include" -isystem "$PYINC" \
    -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ \
    -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
    --compiler-options '-fPIC' -O3 -std=c++20 -c $f -o $f.o
done
uptime
rm -rf "$WORK"
