"""An exploration, not a registered analysis: the 2026-11-27 pilot's two runs with a delete-one-seed jackknife
and a t quantile (n - 1 degrees of freedom) instead of the percentile seed bootstrap, per depth study (slope of
ln eta*_train on ln depth over the study's candidate depths).  Does the replicate check pass then?

    python validate/studies/pilot_jackknife.py      # needs results/pilot-a and results/pilot-b
"""

import dataclasses
import math
import pathlib
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from amutheory.protocol.analysis import axis_values  # noqa: E402
from amutheory.protocol.presets import PRESETS  # noqa: E402
from amutheory.protocol.run import _prepare, study_rates  # noqa: E402
from amutheory.train.sweep import refined_plan, searches_at  # noqa: E402


def run(folder, first):
    """Per depth study of the run in ``folder`` (seeds from ``first``): (slope, jackknife-t CI)."""
    p = PRESETS["protocol-pilot"]
    p = dataclasses.replace(p, studies=tuple(dataclasses.replace(s, first_seed=first) for s in p.studies))
    prep = _prepare(p, pathlib.Path(folder), None, "cpu")
    out = {}
    for st in p.studies:
        if st.axis != "depth":
            continue
        pr = prep[st.name]
        rates, _ = refined_plan(pr["template"], pr["table"], st.depths, st.widths, study_rates(st), st.seed_list, "mean", st.refine)
        x = np.log([axis_values(st, pr["template"], "depth")[L] for L in st.depths])
        def slope(seeds):
            s = searches_at(pr["template"], pr["table"], rates, seeds)
            eta = np.array([s[(L, st.widths[0])].eta_star_train for L in st.depths])
            ok = np.isfinite(eta)
            return np.polyfit(x[ok], np.log(eta[ok]), 1)[0]
        full = slope(st.seed_list)
        loo = np.array([slope([s for s in st.seed_list if s != d]) for d in st.seed_list])
        n = len(loo)
        se = math.sqrt((n - 1) / n * ((loo - loo.mean()) ** 2).sum())
        t = stats.t.ppf(0.975, n - 1)
        out[st.name] = (full, full - t * se, full + t * se)
    return out


def main() -> int:
    a, b = run("results/pilot-a", 5000), run("results/pilot-b", 6000)
    for k in a:
        ea, la, ha = a[k]
        eb, lb, hb = b[k]
        agree = la <= eb <= ha and lb <= ea <= hb
        print(f"{k:18s} A {ea:+.2f} [{la:+.2f},{ha:+.2f}]  B {eb:+.2f} [{lb:+.2f},{hb:+.2f}]  {'agree' if agree else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
