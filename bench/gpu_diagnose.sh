#!/bin/bash
# Ranked spread and wall of kernelrank's own problems and the public-style pmpp ones, with per-shape figures,
# in one GPU call (the grayscale "two levels" hunt of issue 26). From the repository root on a CUDA machine:
#     bash bench/gpu_diagnose.sh [RUNS] > log
set -u
runs=${1:-5}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
python3 bench/ranked_wall.py --runs "$runs" --device cuda --shapes vectoradd grayscale matmul histogram \
    bench/fixtures/public_style/vectoradd_py bench/fixtures/public_style/grayscale_py \
    bench/fixtures/public_style/histogram_py \
    bench/fixtures/public_style/grayscale_py/solutions/correct/weighted_sum.py
