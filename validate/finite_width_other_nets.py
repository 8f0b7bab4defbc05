"""Run N of ``validate/plans/FINITE_WIDTH.md`` (addendum 11): ``predict``'s default on nine nets that no test or
earlier run has built, against the probe's seed mean on fresh seeds.  Reports only; decides nothing.

    python validate/finite_width_other_nets.py   # resumes; writes docs/findings/finite_width/other_nets.json per net

``validate/finite_width_table.py report`` puts the result on the page.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "findings" / "finite_width" / "other_nets.json"
SEEDS = range(130000, 131024)
MAX_ABS_Z = 3.0

#: name -> (ArchSpec keywords, depths): the nets of plan addendum 11
NETS = {
    "linear MLP, width 12": (dict(family="mlp", width=12, activation="linear", input_channels=5, batch=3), (3, 6, 10)),
    "ReLU MLP, width 28": (dict(family="mlp", width=28, activation="relu", input_channels=6, batch=4), (4, 8, 12)),
    "GELU MLP, width 36": (dict(family="mlp", width=36, activation="gelu", input_channels=9, batch=3), (4, 8, 12)),
    "tanh MLP, width 20": (dict(family="mlp", width=20, activation="tanh", input_channels=12, batch=6), (4, 8, 12)),
    "linear circular 1-D chain, width 12": (dict(dim=1, width=12, kernel=5, spatial=6, padding="circular",
                                                 activation="linear", input_channels=2, batch=4), (3, 6, 10)),
    "ReLU circular 1-D chain, width 24": (dict(dim=1, width=24, kernel=3, spatial=6, padding="circular",
                                               activation="relu", input_channels=3, batch=4), (4, 8, 12)),
    "GELU zero-padded 1-D chain, width 40": (dict(dim=1, width=40, kernel=3, spatial=6, padding="zero",
                                                  activation="gelu", input_channels=3, batch=4), (4, 8, 12)),
    "tanh circular 1-D chain, width 20": (dict(dim=1, width=20, kernel=5, spatial=7, padding="circular",
                                               activation="tanh", input_channels=3, batch=3), (4, 8, 12)),
    "ReLU circular 2-D chain, width 16": (dict(dim=2, width=16, kernel=3, spatial=4, padding="circular",
                                               activation="relu", input_channels=3, batch=2), (3, 6, 9)),
}


def measure() -> dict:
    import torch

    from amutheory.api import predict
    from amutheory.measure.probe import probe
    from amutheory.spec import ArchSpec

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {"plan": "validate/plans/FINITE_WIDTH.md run N (addendum 11)",
                                                          "seeds": [SEEDS[0], SEEDS[-1]], "nets": {}}
    for name, (kw, depths) in NETS.items():
        if name in d["nets"]:
            continue
        t = time.perf_counter()
        spec = ArchSpec(depth=max(depths), **kw)
        pred = predict(spec, list(depths))
        mc = pred.constants.get("s_bar_mc_rel_se")
        rel = float(mc.value) if mc is not None else 0.0   # the law's worst Monte Carlo error over the depths
        rows = []
        for i, L in enumerate(depths):
            s = np.asarray(probe(spec.with_(depth=L), list(SEEDS), chunk=64).s_bar, float)
            mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
            value = float(pred.s_bar[i])
            rows.append({"depth": L, "probe_mean": mean, "probe_se": se, "law_s_bar": value,
                         "error": value / mean - 1, "z": (value - mean) / math.hypot(se, rel * value)})
        d["nets"][name] = {"spec": repr(spec), "law": pred.law_registry or pred.law, "law_mc_rel_se": rel,
                           "rows": rows, "within": max(abs(r["z"]) for r in rows) <= MAX_ABS_Z}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"N {name} ({d['nets'][name]['law']}): errors {[round(100 * r['error'], 1) for r in rows]} "
              f"z {[round(r['z'], 2) for r in rows]} ({time.perf_counter() - t:.0f} s)", flush=True)
    return d


if __name__ == "__main__":
    measure()
