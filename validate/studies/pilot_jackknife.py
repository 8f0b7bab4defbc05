"""An exploration, not a registered analysis: the 2026-11-27 pilot's two runs with a delete-one-seed jackknife
and a t quantile (n - 1 degrees of freedom) instead of the percentile seed bootstrap, per depth study (slope of
ln eta*_train on ln depth over the study's candidate depths).  Does the replicate check pass then?

    python validate/studies/pilot_jackknife.py             # needs results/pilot-a and results/pilot-b
    python validate/studies/pilot_jackknife.py --learning  # only the depths the pilot's rule 1 keeps
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


def run(folder, first, depths=None):
    """Per depth study of the run in ``folder`` (seeds from ``first``): (slope, jackknife-t CI); ``depths``
    (``{study: [...]}``) restricts each study's fit to those depths."""
    p = PRESETS["protocol-pilot"]
    p = dataclasses.replace(p, studies=tuple(dataclasses.replace(s, first_seed=first) for s in p.studies))
    prep = _prepare(p, pathlib.Path(folder), None, "cpu")
    out = {}
    for st in p.studies:
        if st.axis != "depth":
            continue
        pr = prep[st.name]
        rates, _ = refined_plan(pr["template"], pr["table"], st.depths, st.widths, study_rates(st), st.seed_list, "mean", st.refine)
        use = [L for L in st.depths if depths is None or L in depths.get(st.name, st.depths)]
        if len(use) < 3:
            continue
        x = np.log([axis_values(st, pr["template"], "depth")[L] for L in use])
        def slope(seeds):
            s = searches_at(pr["template"], pr["table"], rates, seeds)
            eta = np.array([s[(L, st.widths[0])].eta_star_train for L in use])
            ok = np.isfinite(eta)
            return np.polyfit(x[ok], np.log(eta[ok]), 1)[0]
        from amutheory.train.search import fit_power

        full = slope(st.seed_list)
        every = searches_at(pr["template"], pr["table"], rates, st.seed_list)
        boot = fit_power([axis_values(st, pr["template"], "depth")[L] for L in use],
                         [every[(L, st.widths[0])] for L in use])["exponent_ci"]
        loo = np.array([slope([s for s in st.seed_list if s != d]) for d in st.seed_list])
        n = len(loo)
        se = math.sqrt((n - 1) / n * ((loo - loo.mean()) ** 2).sum())
        t = stats.t.ppf(0.975, n - 1)
        out[st.name] = (full, full - t * se, full + t * se, boot)
    return out


def main() -> int:
    import json

    cut = None
    if "--learning" in sys.argv:  # only the depths rule 1 keeps (docs/findings/protocol_pilot/cut.json)
        cut = json.loads((pathlib.Path(__file__).resolve().parents[2] / "docs" / "findings" / "protocol_pilot"
                          / "cut.json").read_text())["depths"]
    a, b = run("results/pilot-a", 5000, cut), run("results/pilot-b", 6000, cut)
    both = {"jackknife-t": 0, "bootstrap": 0}
    for k in a:
        ea, la, ha, ba = a[k]
        eb, lb, hb, bb = b[k]
        agree = la <= eb <= ha and lb <= ea <= hb
        agree_boot = bool(ba and bb and ba[0] <= eb <= ba[1] and bb[0] <= ea <= bb[1])
        both["jackknife-t"] += agree
        both["bootstrap"] += agree_boot
        print(f"{k:18s} A {ea:+.2f} jk [{la:+.2f},{ha:+.2f}] boot {_ci(ba)}  B {eb:+.2f} jk [{lb:+.2f},{hb:+.2f}] "
              f"boot {_ci(bb)}  jackknife {'agree' if agree else 'NO'}, bootstrap {'agree' if agree_boot else 'NO'}")
    print(f"agree within each other's 95% CI, of {len(a)} depth studies: " +
          ", ".join(f"{k} {v}" for k, v in both.items()))
    return 0


def _ci(c):
    return "n/a" if not c else f"[{c[0]:+.2f},{c[1]:+.2f}]"


if __name__ == "__main__":
    sys.exit(main())
