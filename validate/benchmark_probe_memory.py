"""Calibrate the probe's memory estimate (amutheory.limits): the peak resident memory of real probes.

Each config runs in a fresh interpreter (one torch thread): a tiny probe first (torch, vmap and the
libraries loaded), then the peak resident size is reset to the current one (``/proc/self/clear_refs``;
where that is refused, ``ru_maxrss`` is read instead), the config's probe runs, and the peak is read;
its rise over the resident size before is the probe's own peak.  Printed per config: that peak, the shape counts of
:mod:`amutheory.limits` (activations x batch, parameters, times chunk and itemsize), their ratio (the
factor the estimate needs; for the deep narrow nets, KiB per module) and the estimate with the
calibrated constants (it must not be below the peak).
Usage: ``python validate/benchmark_probe_memory.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

#: (label, ArchSpec fields, chunk, which count dominates)
CONFIGS = [
    ("conv acts", dict(width=8, spatial=1024, batch=16, depth=16), 4, "activations"),
    ("conv acts chunk 8", dict(width=8, spatial=1024, batch=8, depth=16), 8, "activations"),
    ("conv acts deep", dict(width=8, spatial=256, batch=16, depth=64), 4, "activations"),
    ("conv acts 2D", dict(dim=2, width=8, spatial=32, batch=16, depth=16), 4, "activations"),
    ("resnet acts", dict(family="resnet", branch="conv-mlp", width=8, spatial=512, batch=16, depth=16), 4,
     "activations"),
    ("transformer acts", dict(family="transformer", width=16, heads=2, spatial=256, batch=8, depth=4), 2,
     "activations"),
    ("conv params", dict(width=512, kernel=3, spatial=3, batch=1, depth=8), 2, "parameters"),
    ("resnet params", dict(family="resnet", branch="conv-mlp", width=384, kernel=3, spatial=3, batch=1, depth=8), 2,
     "parameters"),
    ("transformer params", dict(family="transformer", width=384, heads=2, spatial=2, batch=1, depth=4), 2,
     "parameters"),
    ("conv modules", dict(width=4, spatial=4, batch=2, depth=4000), 2, "modules"),
    ("resnet modules", dict(family="resnet", branch="conv-mlp", width=4, spatial=4, batch=2, depth=2000), 2,
     "modules"),
    ("transformer modules", dict(family="transformer", width=4, heads=2, spatial=4, batch=2, depth=1000), 2,
     "modules"),
]

CHILD = """
import json, resource, sys
import torch
torch.set_num_threads(1)
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec


def status_kib(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":"))


fields, chunk = json.loads(sys.argv[1]), int(sys.argv[2])
probe(ArchSpec(width=4, spatial=4, batch=2, depth=2, **{k: v for k, v in fields.items() if k in ("family", "dim")}),
      [0, 1], chunk=2)
try:  # reset the peak (VmHWM) to the current resident size, so the import's own peak does not hide the probe's
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before, peak_key = status_kib("VmRSS"), "VmHWM"
except OSError:
    before, peak_key = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, None
probe(ArchSpec(**fields), list(range(chunk)), chunk=chunk)
after = status_kib(peak_key) if peak_key else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_bytes": (after - before) * 1024}))
"""


def measure(fields: dict, chunk: int) -> int:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(fields), str(chunk)], capture_output=True,
                          text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["peak_bytes"]


def main() -> None:
    from amutheory import limits
    from amutheory.spec import ArchSpec

    print(f"{'config':<20} {'peak MiB':>9} {'count MiB':>10} {'ratio':>6} {'estimate MiB':>13}")
    for label, fields, chunk, dominant in CONFIGS:
        spec = ArchSpec(**fields)
        peak = measure(fields, chunk)
        if dominant == "activations":
            count = chunk * 8 * spec.batch * limits.activation_elements(spec)
        elif dominant == "parameters":
            count = chunk * 8 * limits.parameter_count(spec)
        else:  # bytes per module of one net: compare the ratio with MODULE_BYTES / 2^10
            count = chunk * spec.depth * limits.modules_per_block(spec) * 2**10
        estimate = limits.probe_bytes(spec, chunk)
        print(f"{label:<20} {peak / 2**20:>9.1f} {count / 2**20:>10.1f} {peak / count:>6.2f} "
              f"{estimate / 2**20:>13.1f}{'' if estimate >= peak else '  UNDER-ESTIMATE'}")


if __name__ == "__main__":
    main()
