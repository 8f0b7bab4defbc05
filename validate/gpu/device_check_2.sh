#!/usr/bin/env bash
# The second GPU check (after issue 38 and the user's-module probe of issue 39): the gpu-marked tests and
# the user's-module probe on CUDA against the CPU.  Writes under $OUT (default results/gpu2).
set -uo pipefail
OUT=${OUT:-results/gpu2}
mkdir -p "$OUT"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nvidia-smi -L; } > "$OUT/device2.txt" 2>&1
timeout 240 python3 -m pytest -o addopts="" -p no:cacheprovider -m gpu -q tests > "$OUT/gpu_tests2.txt" 2>&1
echo "gpu tests exit $?" >> "$OUT/gpu_tests2.txt"
timeout 200 python3 validate/gpu/module_probe_cuda.py > "$OUT/module_probe_cuda.txt" 2>&1
echo "module probe exit $?" >> "$OUT/module_probe_cuda.txt"
tail -3 "$OUT/gpu_tests2.txt"; cat "$OUT/module_probe_cuda.txt"
