#!/bin/bash
# Issue 21's ranked-run evidence in one GPU call: kernelrank's ranked runs (per-shape figures for the
# histograms) and the public harness's own eval.py on the same problems. From the repository root on a
# CUDA machine, with the public eval.py fetched into .public/ (bench/public_harness.py says how):
#     bash bench/ranked_comparison.sh [RUNS]
# Figures go to docs/benchmarks.md by hand, with this command and the GPU it ran on.
set -u
runs=${1:-5}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
echo "== kernelrank, ranked mode, $runs fresh evaluations each"
python3 bench/ranked_wall.py --runs "$runs" --device cuda --shapes \
    vectoradd grayscale matmul histogram tests/conformance/problems/histogram_py
echo "== the public harness's eval.py, leaderboard mode, $runs runs each"
python3 bench/public_harness.py --runs "$runs" vectoradd grayscale matmul histogram
