"""A post-hoc reading of the registration 2026-11-27b's runs (an exploration, not a verdict).

The registered verdicts are the run's own (``docs/findings/protocol_2026_11_27b.md``). This script re-reads the same
cells, training nothing, under analysis variants that differ from the registered one in a single choice each:

* ``registered``: the smooth optimum, the jackknife, the margin rule (what the run reports);
* ``vertex``: the three-point vertex of 2026-11-27 instead of the smooth optimum (jackknife, margin rule);
* ``vertex, width cut``: the 2026-11-27 rules on these cells (three-point vertex, jackknife, "holds" = inside
  the CI and at most 1.0 wide);
* ``diverged = chance``: a diverged run scored at the chance loss ln(classes), so the seed mean stays finite;
* ``per-seed optimum``: each seed's own smooth optimum (one grid step), averaged in ln over seeds -- the design
  this reading led to, registered as 2026-11-28 and tested on its own seeds.

It also counts, per seed, the optima (the seed's argmin over its finite rates) that sit next to that seed's own
divergence.

For every run given it writes the verdicts per variant and counts the optima the smooth fit cannot resolve
(flag ``outside``: the seed-mean loss still falls at the last rate below divergence, so the vertex lies
beyond it and the point has no CI). With two runs (the run and its replicate) it counts, per variant, the
verdicts that differ between them.

    python validate/studies/protocol_reanalysis.py --run results/protocol-2026-11-28 \\
        --run results/protocol-2026-11-28-replicate --out docs/findings/protocol_reanalysis.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

VARIANTS = {"registered": {}, "vertex": {"optimum": "vertex"},
            "vertex, width cut": {"optimum": "vertex", "margin": None},
            "diverged = chance": {"diverged": "chance"}, "per-seed optimum": {"optimum": "per-seed"}}


def _protocol_of(folder: Path):
    from amutheory.protocol.presets import PRESETS, fingerprint

    meta = json.loads((folder / "protocol.json").read_text())
    first = meta["protocol"]["studies"][0].get("first_seed", 0)
    base = PRESETS["protocol-2026-11-27b"]
    p = dataclasses.replace(base, studies=tuple(dataclasses.replace(s, first_seed=first) for s in base.studies))
    if fingerprint(p) != meta["fingerprint"]:
        raise SystemExit(f"{folder} does not hold the registration 2026-11-27b (fingerprint {meta['fingerprint']})")
    return p, first


def seed_edge(prepared: dict) -> list:
    """``[k, n]``: of the ``n`` (study, point, seed) with a finite rate, the ``k`` whose argmin over its finite
    rates has a diverged next rate up."""
    import collections

    k = n = 0
    for state in prepared.values():
        runs = collections.defaultdict(dict)
        for rec in state["table"].values():
            c = rec["cell"]
            runs[(c["spec"]["depth"], c["spec"]["width"], c["seed"])][c["lr"]] = None if rec["diverged"] else rec["score"]
        for by_lr in runs.values():
            lrs = sorted(by_lr)
            finite = [i for i, lr in enumerate(lrs) if by_lr[lr] is not None]
            if not finite:
                continue
            best = min(finite, key=lambda i: by_lr[lrs[i]])
            n += 1
            k += best + 1 < len(lrs) and by_lr[lrs[best + 1]] is None
    return [int(k), n]


def read_run(folder: Path) -> dict:
    """Per variant: ``verdicts`` and the points flagged ``outside`` (``{study: [points]}``)."""
    from amutheory.protocol.analysis import analyse
    from amutheory.protocol.run import _prepare, study_eta_max, study_rates
    from amutheory.train.sweep import refined_plan

    protocol, first = _protocol_of(folder)
    prepared = _prepare(protocol, folder, None, "cpu")
    rates = {st.name: refined_plan(prepared[st.name]["template"], prepared[st.name]["table"], st.depths, st.widths,
                                   study_rates(st), st.seed_list, "mean", st.refine)[0] for st in protocol.studies}
    onestep = {st.name: json.loads((folder / st.name / "onestep.json").read_text())
               for st in protocol.studies if st.onestep}
    eta_max = {st.name: study_eta_max(st, prepared[st.name]) for st in protocol.studies if st.eta_max_rounds}
    out = {"folder": str(folder), "first_seed": first, "variants": {}, "seed_edge": seed_edge(prepared)}
    for name, change in VARIANTS.items():
        s = analyse(dataclasses.replace(protocol, **change), prepared, rates, onestep, eta_max=eta_max)
        outside = {study: [r.get("depth", r.get("width")) for r in v["rows"] if "outside" in r["flags"]]
                   for study, v in s["studies"].items()}
        out["variants"][name] = {"verdicts": s["verdicts"], "outside": {k: v for k, v in outside.items() if v},
                                 "points": sum(len(v["rows"]) for v in s["studies"].values())}
    return out


def page(runs: list) -> str:
    lines = ["# A post-hoc reading of the registration 2026-11-27b's runs", "",
             "Written by `python validate/studies/protocol_reanalysis.py "
             + " ".join(f"--run {Path(r['folder']).as_posix()}" for r in runs) + "`. **An exploration after the results, "
             "not a verdict**: the registered verdicts are the runs' own ([protocol_2026_11_27b.md](protocol_2026_11_27b.md)). "
             "The same cells are re-read (nothing trained) under analysis variants that each change one registered "
             "choice. This reading chose the design registered as 2026-11-28 (the per-seed optimum; "
             "[protocol.md](protocol.md) is its test on seeds of its own).", ""]
    reg = runs[0]["variants"]["registered"]
    n_out = sum(len(v) for v in reg["outside"].values())
    lines += [f"**Optima the smooth fit cannot resolve** (flag `outside`), run with seeds from {runs[0]['first_seed']}: "
              f"{n_out} of {reg['points']} points: " + "; ".join(f"{k} at {', '.join(map(str, v))}"
                                                               for k, v in reg["outside"].items()) + ".", ""]
    if len(runs) > 1:
        rep = runs[1]["variants"]["registered"]
        lines += [f"Replicate (seeds from {runs[1]['first_seed']}): {sum(len(v) for v in rep['outside'].values())} of "
                  f"{rep['points']} points.", ""]
    lines += ["**The seeds, not their mean**: a seed's own optimum (its argmin over its finite rates) sits next to its "
              "own divergence in " + "; ".join(f"{r['seed_edge'][0]} of {r['seed_edge'][1]} seed-points (seeds from "
                                                 f"{r['first_seed']})" for r in runs) +
              ". A rate where one seed diverged has no finite seed mean, so the mean's curve ends at the edge while "
              "the other seeds' losses still fall.", ""]
    head = "| claim | " + " | ".join(f"{v}: run / replicate" if len(runs) > 1 else v for v in VARIANTS) + " |"
    lines += [head, "|---" * (len(VARIANTS) + 1) + "|"]
    claims = list(reg["verdicts"])
    for c in claims:
        cells = []
        for v in VARIANTS:
            got = [r["variants"][v]["verdicts"][c] for r in runs]
            cells.append(" / ".join(got))
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    if len(runs) > 1:
        diff = {v: [c for c in claims if runs[0]["variants"][v]["verdicts"][c] != runs[1]["variants"][v]["verdicts"][c]]
                for v in VARIANTS}
        lines += ["", "Verdicts that differ between the run and its replicate, per variant:", ""]
        lines += [f"* {v}: {len(d)} of {len(claims)}" + (f" ({', '.join(d)})" if d else "") for v, d in diff.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="append", required=True, help="a run folder of the registration (repeat: replicate)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "findings" / "protocol_reanalysis.md"))
    args = ap.parse_args(argv)
    runs = [read_run(Path(r)) for r in args.run]
    out = Path(args.out)
    out.write_text(page(runs))
    out.with_suffix(".json").write_text(json.dumps(runs, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
