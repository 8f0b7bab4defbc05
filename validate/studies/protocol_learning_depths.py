"""Added after the results, not registered: the 2026-11-27 protocol's run (and its replicate) re-read on the depths
whose nets learn in that run, so an ``untestable`` claim still shows what its learning nets say.

The registered verdict stays the run's own (``docs/findings/protocol_2026_11_27.md``); this is a post-hoc reading, labelled as
such.  For each study it keeps the depths where the net learns at its optimum in the run being read (a study with
fewer than three such depths is left as it is) and re-runs the protocol's analysis (same cells, same jackknife) on
them.

    python validate/studies/protocol_learning_depths.py \\
        --run results/protocol-2026-11-27 --replicate results/protocol-2026-11-27-replicate

Writes ``docs/findings/protocol_learning_depths.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PAGE = ROOT / "docs" / "findings" / "protocol_learning_depths.md"


def learning_depths(summary: dict) -> dict:
    """Per depth study, the depths whose net learns at its optimum in this run."""
    from amutheory.train.learning import row_learns

    out = {}
    for name, st in summary["studies"].items():
        if st["axis"] != "depth":
            continue
        out[name] = tuple(r["depth"] for r in st["rows"] if row_learns(r))
    return out


def reanalyse(folder: Path, first_seed: int, keep: dict) -> dict:
    """The registered protocol's analysis of the run in ``folder`` with each study cut to ``keep`` (when it has at
    least three learning depths; the transfer plan's depths cut the same way)."""
    from amutheory.protocol.analysis import analyse
    from amutheory.protocol.presets import PRESETS
    from amutheory.protocol.run import _prepare, _probe, study_rates
    from amutheory.train.sweep import refined_plan

    base = PRESETS["protocol-2026-11-27"]
    studies = tuple(dataclasses.replace(s, first_seed=first_seed,
                                        depths=keep[s.name] if len(keep.get(s.name, ())) >= 3 else s.depths)
                    for s in base.studies)
    t = base.transfer
    chain = next(s for s in studies if s.name == t.study)
    transfer = dataclasses.replace(t, targets=tuple(d for d in t.targets if d in chain.depths))
    p = dataclasses.replace(base, studies=studies, transfer=transfer)
    prep = _prepare(p, folder, None, "cpu")
    rates = {st.name: refined_plan(prep[st.name]["template"], prep[st.name]["table"], st.depths, st.widths,
                                   study_rates(st), st.seed_list, "mean", st.refine)[0] for st in p.studies}
    onestep = {st.name: _probe(st, prep[st.name], 1, lambda m: None) for st in p.studies if st.onestep}
    return analyse(p, prep, rates, onestep)


def page(rows: list) -> str:
    lines = ["# The 2026-11-27 protocol on the depths that learn (added after the results, not registered)", "",
             "Written by `python validate/studies/protocol_learning_depths.py`. The registered verdicts are on "
             "[protocol_2026_11_27.md](protocol_2026_11_27.md); a claim resting on a net that does not learn there is `untestable`. This "
             "page re-reads the same cells on the depths whose nets learn in each run (a study with fewer than three "
             "such depths is left whole), with the same jackknife: what the learning nets say, for a reader to weigh, "
             "not a verdict of the registration.", "",
             "| claim | registered verdict | run: depths kept | run: verdict on them | numbers (95% CI) | replicate: "
             "verdict on its learning depths | numbers (95% CI) |", "|---|---|---|---|---|---|---|"]
    lines += rows
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from amutheory.protocol.report import claim_numbers

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", default="results/protocol-2026-11-27")
    p.add_argument("--replicate", default="results/protocol-2026-11-27-replicate")
    a = p.parse_args(argv)
    read = {}
    for key, folder in (("run", Path(a.run)), ("replicate", Path(a.replicate))):
        summary = json.loads((folder / "summary.json").read_text())
        first = json.loads((folder / "protocol.json").read_text())["protocol"]["studies"][0].get("first_seed", 0)
        keep = learning_depths(summary)
        read[key] = (summary, keep, reanalyse(folder, first, keep))
    rows = []
    registered, keep, cut = read["run"]
    _, keep_r, cut_r = read["replicate"]
    for c, c_cut, c_rep in zip(registered["claims"], cut["claims"], cut_r["claims"]):
        kept = "; ".join(f"{s}: {', '.join(map(str, keep.get(s, ()))) or 'none'}" for s in c["studies"]
                         if s in keep)
        rows.append(f"| {c['statement']} | {c['verdict']} | {kept or 'a width study'} | **{c_cut['verdict']}** | "
                    f"{claim_numbers(c_cut)} | {c_rep['verdict']} | {claim_numbers(c_rep)} |")
    PAGE.write_text(page(rows))
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
