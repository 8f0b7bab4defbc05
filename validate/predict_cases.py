"""predict's numbers over representative specs of every family and law, written to one JSON file, so
that two revisions can be compared (``validate/predict_diff.py``).  Uses the public API only, so it runs
on older revisions too:

    git worktree add /tmp/amutheory-old REV
    PYTHONPATH=/tmp/amutheory-old python validate/predict_cases.py /tmp/before.json
    python validate/predict_cases.py /tmp/after.json
    python validate/predict_diff.py /tmp/before.json /tmp/after.json

Calibrated laws are given the same probe measurement in both runs (4 seeds; the point is equality,
not accuracy).  Optional arguments after the output file keep only the cases whose names contain them.
"""

import json
import sys
import time

from amutheory import ArchSpec, measure, predict
from amutheory.spec import ProbeProtocol

C1 = dict(dim=1, width=16, kernel=3, spatial=6, batch=2)
RES = dict(family="resnet", dim=1, width=16, kernel=3, spatial=4, batch=2, init="k-last")
DEN = dict(family="resnet", dim=1, width=16, kernel=1, spatial=1, batch=1, init="k-last")
TRF = dict(family="transformer", width=16, spatial=4, heads=2, mlp_ratio=2, init="k-last", activation="relu")
D = [3, 5, 8]
cases = []


def add(name, spec, cal=None, **kw):
    cases.append((name, spec, cal, kw))



lc, lz = ArchSpec(**C1, activation="linear"), ArchSpec(**C1, activation="linear", padding="zero")
rc, rz = ArchSpec(**C1, activation="relu"), ArchSpec(**C1, activation="relu", padding="zero")
tc = ArchSpec(**C1, activation="tanh")
for n, s in (("lin-circ", lc), ("lin-zero", lz), ("relu-circ", rc), ("relu-zero", rz)):
    calspec = s.with_(padding="circular")
    add(n + "-default", s, calspec)
    add(n + "-default-geo", s, calspec, statistic="geo")
    add(n + "-calibrate", s, calspec, constants="calibrate")
    add(n + "-calibrate-geo", s, calspec, constants="calibrate", statistic="geo", C=2.0)
    add(n + "-mlp-limit", s, None, constants="mlp-limit")
    add(n + "-mlp-limit-geo", s, None, constants="mlp-limit", statistic="geo")
add("lin-circ-derive-iv", lc, lc, constants="derive", protocol=ProbeProtocol(input_var=2.0))
add("relu-circ-derive", rc, None, constants="derive")
add("relu-zero-derive-geo", rz, rz, constants="derive", statistic="geo")
add("relu-circ-law-kernel", rc, None, law="chain-kernel")
add("relu-circ-law-coherent-name", rc, rc, law="chain-coherent")
add("relu-circ-old-coherent", rc, rc, law="coherent")
add("tanh-default", tc, tc)
add("tanh-mlp", tc, None, constants="mlp-limit")
dn = ArchSpec(**DEN, branch="conv-mlp", activation="relu")
rm = ArchSpec(**RES, branch="conv", activation="linear")
rp = ArchSpec(**RES, branch="conv-mlp", activation="relu")
rzl = ArchSpec(**RES, branch="conv", activation="linear", padding="zero")
rpre = ArchSpec(**RES, branch="preact", activation="relu")
CK = [1, 2, 3, 4, 6]
for n, s in (("res-dense", dn), ("res-modes", rm), ("res-points", rp), ("res-zero", rzl), ("res-preact", rpre)):
    add(n + "-default", s, s)
    add(n + "-default-geo", s, s, statistic="geo")
    add(n + "-calibrate", s, s, constants="calibrate")
    add(n + "-calibrate-geo", s, s, constants="calibrate", statistic="geo")
    add(n + "-dense-shape", s, s, constants="calibrate", law="dense-shape")
    add(n + "-selected", s, s, law="selected")
    add(n + "-limit-shape", s, s, law="limit-shape")
    add(n + "-derive-geo", s, None, constants="derive", statistic="geo")
add("res-dense-reg-limit-shape-geo", dn, dn, law="resnet-limit-shape", statistic="geo")
add("trf-default", ArchSpec(**TRF), ArchSpec(**TRF))
add("trf-default-geo", ArchSpec(**TRF), ArchSpec(**TRF), statistic="geo", C=0.5)
add("trf-eff", ArchSpec(**TRF), ArchSpec(**TRF), law="effective-depth")
add("trf-eff-reg", ArchSpec(**TRF), ArchSpec(**TRF), law="transformer-effective-depth", statistic="geo")

only = sys.argv[2:] or None
out = {}
meas_cache = {}
for name, spec, calspec, kw in cases:
    if only and not any(o in name for o in only):
        continue
    t = time.time()
    if calspec is not None:
        key = (calspec, spec.family)
        if key not in meas_cache:
            meas_cache[key] = measure(calspec, CK if spec.family != "conv" else [2, 3, 4, 6], seeds=4)
        kw = dict(kw, calibration_measurement=meas_cache[key])
    try:
        p = predict(spec, D, **kw).to_dict()
        for k in ("law_registry", "law_reason", "law_choice"):
            p.pop(k, None)
        out[name] = p
    except Exception as exc:
        out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(f"{name}: {time.time() - t:.1f}s {out[name].get('error', out[name].get('law'))}", flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1, sort_keys=True, default=str)
