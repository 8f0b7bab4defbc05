"""``amutheory tune`` with the probe prior beside the fixed rules' priors, on the plan's user models.

Plan ``validate/plans/TRANSFER_PROBE.md`` (section tune).  For each model it runs, as a user would, the command

    amutheory tune --model validate/user_models/practitioner_zoo.py:M --width n --depth 8 --from-depth 2
        --from-lr ETA2 --from-lr-ci LO,HI --dataset digits --dim 2 --steps 200 --batch-size 32
        --optimizer sgd --seeds 3 --rule R --out OUT/M-R --json

for ``R`` in ``probe``, ``am-mup`` and the fixed rule with the smallest recorded held-out error for the model's
kind (``ETA2``, ``[LO, HI]``: the independent grid's optimum at depth 2, from ``transfer_probe_findings.py``'s
``summary.json``).  Each run resumes (the cells are stored); the table -- prior, landing, its CI, runs, and the
independent grid's optimum at depth 8 beside it -- is written to ``docs/findings/transfer_probe_tune.md``.

    python validate/transfer_probe_tune.py --summary docs/findings/transfer_probe/summary.json --out results/tp-tune
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validate" / "user_models"))
ZOO = "validate/user_models/practitioner_zoo.py"


def run(model: str, width: int, eta, ci, rule: str, out: Path) -> dict:
    cmd = [sys.executable, "-m", "amutheory", "tune", "--model", f"{ZOO}:{model}", "--width", str(width), "--depth", "8",
           "--from-depth", "2", "--from-lr", repr(eta), "--from-lr-ci", f"{ci[0]!r},{ci[1]!r}", "--dataset", "digits",
           "--dim", "2", "--steps", "200", "--batch-size", "32", "--optimizer", "sgd", "--seeds", "3", "--rule", rule,
           "--out", str(out), "--json", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"rc {proc.returncode}"}
    t = json.loads(proc.stdout)["targets"][0]
    return {"prior": t["prior"]["lr"], "rule": t["prior"]["rule"], "landing": t["eta_star_train"],
            "ci": t["eta_star_train_ci"], "runs": t["runs"], "stop": t["stop"], "command": " ".join(cmd[1:])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", default="docs/findings/transfer_probe/summary.json")
    ap.add_argument("--out", default="results/tp-tune")
    ap.add_argument("--page", default="docs/findings/transfer_probe_tune.md")
    ap.add_argument("--models", default=None, help="comma-separated subset")
    a = ap.parse_args(argv)
    from practitioner_zoo import MODELS

    from amutheory.tuning.prior import default_rule

    summary = json.loads(Path(a.summary).read_text())
    kinds = {r["model"]: r["kind"] for r in summary["rows"]}
    results = {}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    names = a.models.split(",") if a.models else list(MODELS)
    for m in names:
        src, tgt = summary["optima"][f"{m}@2"], summary["optima"][f"{m}@8"]
        if not (src["learns"] and tgt["learns"]):
            continue
        best, _ = default_rule(kinds[m])
        for rule in dict.fromkeys(["probe", "am-mup", best]):
            results[(m, rule)] = r = run(m, MODELS[m][1], src["eta"], src["ci"], rule, Path(a.out) / f"{m}-{rule}")
            print(m, rule, r, flush=True)
    lines = ["# `tune` with the probe prior beside the fixed rules' priors", "",
             "Plan: `validate/plans/TRANSFER_PROBE.md` (section tune).  Regenerate: `python validate/transfer_probe_tune.py` "
             "(after `validate/transfer_probe_findings.py`).  The toolkit's trainer (its digits pipeline and seeds "
             "differ from the independent plain loop), so the landing is read beside the grid's optimum, not tested "
             "against it.  The probe prior uses the shipped bridge, which includes the model itself (the "
             "leave-one-out scores are in transfer_probe.md).", "",
             "| model | rule | prior | landing eta*_train | 95% CI | runs | stop | independent grid's optimum |",
             "|---|---|---:|---:|---|---:|---|---|"]
    for (m, rule), r in results.items():
        g = summary["optima"][f"{m}@8"]
        grid = f"{g['eta']:.3g} [{g['ci'][0]:.3g}, {g['ci'][1]:.3g}]"
        if "error" in r:
            lines.append(f"| {m} | {rule} | - | - | - | - | {r['error']} | {grid} |")
            continue
        ci = "n/a" if not r["ci"] else f"[{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]"
        land = "n/a" if r["landing"] is None else f"{r['landing']:.3g}"
        lines.append(f"| {m} | {r['rule']} | {r['prior']:.3g} | {land} | {ci} | {r['runs']} | {r['stop']} | {grid} |")
    import math
    import statistics

    lines += ["", "| rule (as chosen) | tunes | median runs | median abs ln(landing / grid optimum) |", "|---|---:|---:|---:|"]
    by = {}
    for (m, _), r in results.items():
        if "error" not in r and r["landing"] is not None:
            by.setdefault(r["rule"], []).append((r["runs"], abs(math.log(r["landing"] / summary["optima"][f"{m}@8"]["eta"]))))
    for rule, v in by.items():
        lines.append(f"| {rule} | {len(v)} | {statistics.median(x for x, _ in v):g} | {statistics.median(e for _, e in v):.3f} |")
    Path(a.page).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
