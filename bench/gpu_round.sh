#!/bin/bash
# This round's GPU evidence (issues 25 and 26) in one or two calls, from the repository root on a CUDA machine:
#     bash bench/gpu_round.sh SECTION...      (sections: integrity ranked ours large before builds types cu memory cpu unexplained)
#   integrity  the cheat catalogue's CUDA cases, the honest solutions and hostile input (bench/integrity_gpu.py)
#   ranked     5 fresh ranked evaluations each: kernelrank's vectoradd, grayscale, matmul, histogram and the
#              public-style pmpp problems (bench/fixtures/public_style), with per-shape figures
#   ours       5 fresh ranked evaluations each of kernelrank's vectoradd, grayscale, matmul and histogram alone
#   large      3 ranked evaluations each of the problems with the largest shapes (a quick check of the exchange)
#   before     the same ranked runs on an older checkout unpacked under .probe/before (the baseline, same call):
#              git archive REV --prefix=.probe/before/ | tar -x; cp -r bench/fixtures .probe/before/bench/
#   builds     first inline-CUDA builds of three sources as people write them (bench/first_build.py)
#   types      the output-type table on CUDA (tests/harness/test_transport_fidelity.py, run without the suite's conftest)
#   cu         .cu submissions through their two modules: the shipped solutions in every mode, the packed values
#   memory     the judge's reads and writes of a runner's host memory on this machine's kernel (CPU exchange)
#   cpu        the catalogue's CPU cases, honest solutions and hostile input on this machine's CPU
#   unexplained  what the judge's CPU clock cannot explain of honest CPU calls here (bench/cpu_unexplained.py)
# Everything goes to stdout; figures go to docs/benchmarks.md by hand, with the GPU named.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
RANKED=(vectoradd grayscale matmul histogram bench/fixtures/public_style/vectoradd_py
        bench/fixtures/public_style/grayscale_py bench/fixtures/public_style/histogram_py
        bench/fixtures/public_style/grayscale_py/solutions/correct/weighted_sum.py)
for section in "$@"; do
    echo "== $section  $(date -u +%H:%M:%S)"
    case $section in
        integrity) python3 bench/integrity_gpu.py --cuda-only ;;
        ranked) python3 bench/ranked_wall.py --runs 5 --device cuda --shapes "${RANKED[@]}" ;;
        ours) python3 bench/ranked_wall.py --runs 5 --device cuda --shapes "${RANKED[@]:0:4}" ;;
        large) python3 bench/ranked_wall.py --runs 3 --device cuda --shapes vectoradd matmul "${RANKED[4]}" "${RANKED[7]}" ;;
        before) python3 bench/ranked_wall.py --runs 5 --device cuda --root .probe/before "${RANKED[@]}" ;;
        builds) python3 bench/first_build.py ;;
        types) python3 -m pytest -q -p no:cacheprovider --noconftest -p bench.gpu_pytest_plugin -m cuda \
                   tests/harness/test_transport_fidelity.py ;;
        cu) python3 -m pytest -q -p no:cacheprovider --noconftest -p bench.gpu_pytest_plugin \
                tests/problems/test_cu_problems.py tests/harness/test_cu_values.py ;;
        cpu) python3 bench/integrity_gpu.py --cpu-only ;;
        unexplained) python3 bench/cpu_unexplained.py --runs 2 2>&1 | grep -v '^harness-server' ;;
        memory) python3 -m pytest -q -p no:cacheprovider --noconftest tests/harness/test_runner_memory.py ;;
        *) echo "unknown section $section" ;;
    esac
done
echo "== done  $(date -u +%H:%M:%S)"
