"""An exploration, not a registered analysis: the 2026-11-27 pilot's two runs re-analysed through the protocol's own
claims with the seed bootstrap and with the delete-one-seed jackknife (``Protocol.interval``), on every candidate
depth and on the depths the pilot's rule 1 keeps: for how many claims do the two runs agree within each other's
95% CI?

    python validate/studies/pilot_intervals.py      # needs results/pilot-a and results/pilot-b
"""

import dataclasses
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validate"))

from amutheory.protocol.analysis import analyse  # noqa: E402
from amutheory.protocol.presets import PRESETS, learning_protocol  # noqa: E402
from amutheory.protocol.run import _prepare, _probe, study_rates  # noqa: E402
from amutheory.train.sweep import refined_plan  # noqa: E402
from protocol_pilot import replicate  # noqa: E402

CUT = {k: tuple(v) for k, v in json.loads((ROOT / "docs" / "findings" / "protocol_pilot" / "cut.json")
                                          .read_text())["depths"].items()}


def summary(folder, first, interval, protocol):
    """The protocol's analysis of the run in ``folder`` (trained on seeds from ``first``) by ``interval``."""
    p = dataclasses.replace(protocol, studies=tuple(dataclasses.replace(s, first_seed=first) for s in protocol.studies))
    prep = _prepare(p, pathlib.Path(folder), None, "cpu")
    rates = {st.name: refined_plan(prep[st.name]["template"], prep[st.name]["table"], st.depths, st.widths,
                                   study_rates(st), st.seed_list, "mean", st.refine)[0] for st in p.studies}
    onestep = {st.name: _probe(st, prep[st.name], 1, lambda m: None) for st in p.studies if st.onestep}
    return analyse(dataclasses.replace(p, interval=interval), prep, rates, onestep)


def main() -> int:
    cut = learning_protocol("protocol-pilot", PRESETS["protocol-pilot"].description, CUT, seeds=3, points=9)
    for label, protocol in (("every candidate depth", PRESETS["protocol-pilot"]), ("depths that learn", cut)):
        for interval in ("bootstrap", "jackknife"):
            rows = replicate(summary("results/pilot-a", 5000, interval, protocol),
                             summary("results/pilot-b", 6000, interval, protocol))
            ok = [r["claim"] for r in rows if r["agree"] is True]
            no = [r["claim"] for r in rows if r["agree"] is False]
            print(f"{label}, {interval}: {len(ok)} of {len(ok) + len(no)} claims agree; disagree: {', '.join(no)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
