"""The pilot of the 2026-11-27 protocol, read by its registered rules
(``validate/plans/REGISTRATION_PILOT_2026_11_27.md``): each study's depths for the protocol to register, and the
replicate check (do two runs on disjoint seeds agree within their stated CIs?).

    python validate/protocol_pilot.py --a results/pilot-a --b results/pilot-b

Writes ``docs/findings/protocol_pilot.md`` and keeps both runs' ``summary.json`` in
``docs/findings/protocol_pilot/`` (so the page regenerates without the runs); prints the depth sets.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEEP = ROOT / "docs" / "findings" / "protocol_pilot"
PAGE = ROOT / "docs" / "findings" / "protocol_pilot.md"


def depths_to_register(a: dict, b: dict, candidates: dict) -> dict:
    """Rule 1: up to the deepest candidate that learns in both runs (every shallower one kept); fewer than three
    such depths -> the three shallowest candidates."""
    from amutheory.train.learning import row_learns

    out = {}
    for name, cand in candidates.items():
        if len(cand) < 3:
            out[name] = {"depths": list(cand), "learning": None, "why": "a width study (one depth)"}
            continue
        axis = a["studies"][name]["axis"]
        both = []
        for L in cand:
            ok = [row_learns(next(r for r in s["studies"][name]["rows"] if r[axis] == L)) for s in (a, b)]
            both.append(bool(ok[0]) and bool(ok[1]))
        deepest = max((L for L, ok in zip(cand, both) if ok), default=None)
        kept = [L for L in cand if deepest is not None and L <= deepest]
        if len(kept) < 3:
            out[name] = {"depths": list(cand[:3]), "learning": [L for L, ok in zip(cand, both) if ok],
                         "why": "fewer than three depths learn in both runs: the three shallowest (untestable if they "
                                "do not learn)"}
        else:
            out[name] = {"depths": kept, "learning": [L for L, ok in zip(cand, both) if ok],
                         "why": f"deepest learning in both runs: {deepest}"}
    return out


def replicate(a: dict, b: dict) -> list[dict]:
    """Rule 2: each run's estimate inside the other's 95% CI? (:func:`amutheory.protocol.replicate.replicate_rows`)"""
    from amutheory.protocol.replicate import replicate_rows

    return replicate_rows(a, b)


def estimate_minutes(run: Path, cut: dict, seeds=(3, 4), rates=(9 + 2, 11 + 2), cores: int = 2) -> float | None:
    """Rule 3: the registered protocol's wall time on ``cores`` from a pilot run's own cells (run on this machine):
    per study the core-seconds of its cells at the depths kept, scaled by seeds and rates (grid + refined),
    plus the probe's seconds at the kept depths, over ``cores``."""
    import collections

    if run is None or not Path(run).is_dir():
        return None
    per = collections.defaultdict(float)
    for f in Path(run).glob("*/cells.jsonl"):
        study = f.parent.name
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            spec = rec["cell"]["spec"]
            if study in cut and (spec["depth"] in cut[study]["depths"] or len(cut[study]["depths"]) == 1):
                per[study] += rec["timing"]["wall_s"]
    probe = 0.0
    for f in Path(run).glob("*/onestep.json"):
        saved = json.loads(f.read_text())
        probe += sum(v.get("seconds", 0.0) for L, v in saved.get("depths", {}).items()
                     if int(L) in cut.get(f.parent.name, {}).get("depths", []))
    scale = seeds[1] / seeds[0] * rates[1] / rates[0]
    return (sum(per.values()) * scale / cores + probe) / 60


def _ci(c):
    return "n/a" if not c else f"[{c[0]:+.2f}, {c[1]:+.2f}]"


def _machine(key: str) -> str:
    """The CPU a run ran on (kept beside the summaries)."""
    f = KEEP / f"machine_{key}.txt"
    if not f.is_file():
        return "machine not recorded"
    first = f.read_text().splitlines()[0]
    return first.split(":", 1)[-1].strip() + (", a lent device machine's CPU cores" if key == "a" else ", this machine")


def page(a: dict, b: dict, cut: dict, rep: list, timing: dict) -> str:
    from amutheory.protocol.presets import PROTOCOL_PILOT, fingerprint

    agree = [r for r in rep if r["agree"] is True]
    disagree = [r for r in rep if r["agree"] is False]
    lines = ["# The pilot of the 2026-11-27 protocol: sizes and a replicate", "",
             "Registered before it ran: [REGISTRATION_PILOT_2026_11_27.md](../../validate/plans/REGISTRATION_PILOT_2026_11_27.md) "
             f"(preset `protocol-pilot`, fingerprint `{fingerprint(PROTOCOL_PILOT)}`). Written by "
             "`python validate/protocol_pilot.py` from the two runs' `summary.json` (kept in `docs/findings/protocol_pilot/`).",
             "", f"* Run A (seeds 5000..): `{a['fingerprint']}`; {timing.get('a', 'time not recorded')} "
             f"({_machine('a')}).",
             f"* Run B (seeds 6000..): `{b['fingerprint']}`; {timing.get('b', 'time not recorded')} "
             f"({_machine('b')}).", "",
             "## Final training loss at each study's grid optimum (A / B; learns: at most half of ln 10 = 1.15)", "",
             "| study | " + " | ".join(["points"]) + " |", "|---|---|"]
    for name, st in a["studies"].items():
        axis = st["axis"]
        cells = []
        for ra in st["rows"]:
            rb = next(r for r in b["studies"][name]["rows"] if r[axis] == ra[axis])
            f = lambda v: "div" if v is None else f"{v:.2f}"  # noqa: E731 - every rate diverged
            cells.append(f"{ra[axis]}: {f(ra['final_loss_at_optimum'])} / {f(rb['final_loss_at_optimum'])}")
        lines.append(f"| {name} | {'; '.join(cells)} |")
    lines += ["", "## Rule 1: the depths the protocol registers", "", "| study | depths | why |", "|---|---|---|"]
    lines += [f"| {name} | {', '.join(map(str, c['depths']))} | {c['why']} |" for name, c in cut.items()]
    if timing.get("estimate") is not None:
        lines += ["", f"Rule 3: the registered protocol (4 seeds, 11 rates + 2 refined, at these depths) is estimated at "
                      f"**{timing['estimate']:.0f} minutes on 2 cores** from run B's own cells on this machine (their "
                      "core-seconds at the kept depths, scaled by seeds and rates, halved, plus the probe)."]
    lines += ["", "## Rule 2: the replicate check", "",
              "| claim | A: estimate (95% CI) | B: estimate (95% CI) | each inside the other's CI | verdict A / B |",
              "|---|---|---|---|---|"]
    for r in rep:
        est = lambda e, c: "n/a" if e is None else f"{e:+.2f} {_ci(c)}"  # noqa: E731
        lines.append(f"| {r['claim']} | {est(r['a'], r['a_ci'])} | {est(r['b'], r['b_ci'])} | "
                     f"{'n/a' if r['agree'] is None else ('yes' if r['agree'] else '**no**')} | "
                     f"{r['verdict_a']} / {r['verdict_b']} |")
    lines += ["", f"Two runs agree within their stated CIs on {len(agree)} of {len(agree) + len(disagree)} claims with an "
              f"estimate in both; they disagree on {', '.join(r['claim'] for r in disagree) or 'none'}. These are the "
              "pilot's sizes (3 seeds, 9 rates, every candidate depth, including those that do not learn); the "
              "registered protocol takes 4 seeds and 11 rates at the depths of rule 1.", ""]
    if disagree:
        lines += ["**So the seed bootstrap's CIs do not hold up on a replicate**: the percentile bootstrap over three "
                  "seeds, with each optimum kept inside its grid neighbours, is narrower than the run-to-run variation "
                  f"for {len(disagree)} of {len(agree) + len(disagree)} claims. The protocol of rule 1 is therefore not "
                  "registered with this interval method: its CIs must first carry this variation (a resampling that "
                  "the two pilot runs can check, e.g. a jackknife over seeds with a t quantile, and more seeds), "
                  "checked on these two runs before the registration.", "",
                  "What followed (after this page's first version): the protocol was registered with the "
                  "delete-one-seed jackknife and 6 seeds at the pilot's 9 + 2 rates "
                  "([REGISTRATION_PROTOCOL_2026_11_27.md](../../validate/plans/REGISTRATION_PROTOCOL_2026_11_27.md)), "
                  "and run with a replicate on disjoint seeds ([protocol_2026_11_27.md](protocol_2026_11_27.md)).", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    from amutheory.protocol.presets import LEARNING_CANDIDATES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", default=None, help="run A's folder (default: the kept summaries)")
    p.add_argument("--b", default=None, help="run B's folder")
    args = p.parse_args(argv)
    KEEP.mkdir(parents=True, exist_ok=True)
    for key, folder in (("a", args.a), ("b", args.b)):
        if folder:
            shutil.copyfile(Path(folder) / "summary.json", KEEP / f"summary_{key}.json")
    a = json.loads((KEEP / "summary_a.json").read_text())
    b = json.loads((KEEP / "summary_b.json").read_text())
    timing = {}
    for key, s in (("a", a), ("b", b)):
        run = next((r for r in s.get("runs", []) if r.get("cells_run")), None)
        if run:
            timing[key] = (f"{run['cells_run']} cells in {run['wall_s'] / 60:.1f} min of wall-clock on "
                           f"{run.get('workers')} workers x {run.get('threads')} thread")
    cut = depths_to_register(a, b, LEARNING_CANDIDATES)
    rep = replicate(a, b)
    minutes = estimate_minutes(args.b, cut)
    if minutes is None and (KEEP / "cut.json").is_file():  # regenerating without the run: the kept estimate
        minutes = json.loads((KEEP / "cut.json").read_text()).get("estimate_minutes")
    if minutes is not None:
        timing["estimate"] = minutes
    PAGE.write_text(page(a, b, cut, rep, timing))
    (KEEP / "cut.json").write_text(json.dumps({"depths": {k: v["depths"] for k, v in cut.items()},
                                               "replicate": rep, "estimate_minutes": timing.get("estimate")},
                                              indent=1) + "\n")
    print(f"wrote {PAGE}")
    print(json.dumps({k: v["depths"] for k, v in cut.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
