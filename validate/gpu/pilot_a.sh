#!/usr/bin/env bash
# Pilot A of the 2026-11-27 protocol (validate/plans/REGISTRATION_PILOT_2026_11_27.md) on a lent device machine's
# CPU cores (15 workers x 1 thread); the run folder comes back as one archive (a resumable run if cut short).
set -uo pipefail
OUT=${OUT:-results}
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
lscpu | grep -m1 "Model name" > "$OUT/pilot-a-machine.txt"; nproc >> "$OUT/pilot-a-machine.txt"
start=$EPOCHREALTIME
timeout 480 python3 -m amutheory validate --preset protocol-pilot --first-seed 5000 --out "$OUT/pilot-a" \
  --workers 15 --threads 1 --quiet > "$OUT/pilot-a.log" 2>&1
echo "pilot A exit $? wall_s $(python3 -c "print(round($EPOCHREALTIME - $start, 1))")" >> "$OUT/pilot-a-machine.txt"
tar czf "$OUT/pilot-a.tgz" -C "$OUT" pilot-a && rm -rf "$OUT/pilot-a"
cat "$OUT/pilot-a-machine.txt"; tail -c 1500 "$OUT/pilot-a.log"
