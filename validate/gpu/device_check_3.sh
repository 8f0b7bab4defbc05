#!/usr/bin/env bash
# The third GPU check (plan: validate/plans/GPU_CHECK_3.md), one prepared script on a lent device machine.
# Writes everything under $OUT (default results/gpu3).
#   bash validate/gpu/device_check_3.sh
set -uo pipefail
OUT=${OUT:-results/gpu3}
mkdir -p "$OUT"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
py=python3
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi -L
  $py -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
} > "$OUT/device.txt" 2>&1
timeout 150 $py -m pytest -o addopts="" -p no:cacheprovider -m gpu -q tests/test_probe.py tests/test_train_models.py \
  > "$OUT/gpu_tests.txt" 2>&1; echo "gpu tests exit $?" >> "$OUT/gpu_tests.txt"
common="--dataset digits --dim 2 --width 64 --kernel 3 --batch-size 128 --seeds 3 --optimizer sgd --score mean
        --dtype float32 --device cuda --workers 1 --quiet --json --compact"
start=$EPOCHREALTIME
timeout 300 $py -m amutheory sweep --family conv --activation relu $common --steps 1000 --depths 4,8,16 \
  --lr-range 0.001,1 --points 12 --out "$OUT/horizon" > "$OUT/horizon.json" 2> "$OUT/horizon.err"
echo "A horizon (108 runs x 1000 steps) exit $? wall_s $($py -c "print(round($EPOCHREALTIME - $start, 1))")" > "$OUT/timing.txt"
start=$EPOCHREALTIME
timeout 200 $py -m amutheory sweep --family resnet --branch conv-mlp --init k-last --activation relu $common --steps 300 \
  --depths 2,4,8,16 --lr-range 0.003,3 --points 12 --out "$OUT/residual" > "$OUT/residual.json" 2> "$OUT/residual.err"
echo "B residual (144 runs x 300 steps) exit $? wall_s $($py -c "print(round($EPOCHREALTIME - $start, 1))")" >> "$OUT/timing.txt"
cp "$OUT/horizon/report.md" "$OUT/horizon_report.md" 2>/dev/null
cp "$OUT/residual/report.md" "$OUT/residual_report.md" 2>/dev/null
cp "$OUT/horizon/transfer.png" "$OUT/horizon_transfer.png" 2>/dev/null
cp "$OUT/residual/transfer.png" "$OUT/residual_transfer.png" 2>/dev/null
rm -f "$OUT"/*/cells.jsonl
cat "$OUT/timing.txt" "$OUT/gpu_tests.txt" | tail -8
tail -c 600 "$OUT/horizon.err" "$OUT/residual.err"
