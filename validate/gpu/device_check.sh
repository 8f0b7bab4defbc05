#!/usr/bin/env bash
# The GPU check, run on a lent device machine (one prepared script; planned in
# validate/plans/gpu_check.md before it ran).  Writes everything under $OUT (default results/gpu).
#   bash validate/gpu/device_check.sh            # on the device: PYTHONPATH is the checkout
set -uo pipefail
OUT=${OUT:-results/gpu}
mkdir -p "$OUT"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
py=python3
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi -L
  $py -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
} > "$OUT/device.txt" 2>&1
# 1. the gpu-marked tests (CUDA against CPU, float64)
timeout 240 $py -m pytest -o addopts="" -p no:cacheprovider -m gpu -q tests/test_probe.py tests/test_train_models.py \
  > "$OUT/gpu_tests.txt" 2>&1; echo "gpu tests exit $?" >> "$OUT/gpu_tests.txt"
# 2. a GPU-sized study: 2D ReLU conv chain on digits at the papers' width and batch (64, 128), plain SGD,
#    300 steps, depths 4, 8, 16, 12 rates over 3 decades, 3 seeds (108 runs), timed on cuda
sweep="sweep --family conv --dim 2 --activation relu --width 64 --kernel 3 --dataset digits --batch-size 128
       --steps 300 --depths 4,8,16 --seeds 3 --optimizer sgd --score mean --dtype float32 --quiet --json --compact"
start=$EPOCHREALTIME
timeout 330 $py -m amutheory $sweep --lr-range 0.003,3 --points 12 --device cuda --workers 1 --out "$OUT/study" \
  > "$OUT/study.json" 2> "$OUT/study.err"
echo "cuda sweep (108 runs) exit $? wall_s $($py -c "print(round($EPOCHREALTIME - $start, 1))")" > "$OUT/timing.txt"
# 3. the same net at depth 16, 3 rates x 3 seeds x 30 steps, on the device's CPU (one thread) and on cuda: the speed ratio
start=$EPOCHREALTIME
timeout 150 $py -m amutheory ${sweep/--depths 4,8,16/--depths 16} --lrs 0.01,0.03,0.1 --steps 30 --device cpu --threads 1 \
  --workers 1 --no-figures --out "$OUT/cpu16" > "$OUT/cpu16.json" 2> "$OUT/cpu16.err"
echo "cpu depth 16, 3 rates x 3 seeds (9 runs, 30 steps) exit $? wall_s $($py -c "print(round($EPOCHREALTIME - $start, 1))")" >> "$OUT/timing.txt"
start=$EPOCHREALTIME
timeout 100 $py -m amutheory ${sweep/--depths 4,8,16/--depths 16} --lrs 0.01,0.03,0.1 --steps 30 --device cuda \
  --workers 1 --no-figures --out "$OUT/cuda16" > "$OUT/cuda16.json" 2> "$OUT/cuda16.err"
echo "cuda depth 16, 3 rates x 3 seeds (9 runs, 30 steps) exit $? wall_s $($py -c "print(round($EPOCHREALTIME - $start, 1))")" >> "$OUT/timing.txt"
cp "$OUT/study/report.md" "$OUT/study_report.md" 2>/dev/null
ls -R "$OUT" | head -40
cat "$OUT/timing.txt" "$OUT/gpu_tests.txt" | tail -15
