"""Write ``docs/findings/protocol_rerun.md``: the registered protocol run again on another machine,
against the registered report.

    python validate/protocol_rerun_findings.py

Reads the rerun's ``summary.json`` (kept in ``docs/findings/protocol_rerun/``; made by ``amutheory validate
--preset protocol-2026-11 --out results/protocol`` on 2026-11-27) and the registered report
``docs/findings/protocol_2026_11.md`` (its verdict table and its zero-shot table: the registered run's
``summary.json`` was not kept, so its numbers are read off the page it generated).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RERUN = ROOT / "docs" / "findings" / "protocol_rerun" / "summary.json"
REGISTERED = ROOT / "docs" / "findings" / "protocol_2026_11.md"
PAGE = ROOT / "docs" / "findings" / "protocol_rerun.md"


def _table(text: str, head: str) -> list[list[str]]:
    """The rows (cells stripped) of the first markdown table whose header starts with ``head``."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(head))
    rows = []
    for ln in lines[i + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip().strip("|").split("|")])
    return rows


def _first(text: str) -> tuple[float | None, list[float] | None]:
    """The first number and the first ``[lo, hi]`` of a numbers cell (the exponent or the difference)."""
    import re

    num = re.search(r"([-+]?\d+\.\d+)", text)
    ci = re.search(r"\[([-+]?\d+\.\d+), ([-+]?\d+\.\d+)\]", text)
    return (float(num.group(1)) if num else None, [float(ci.group(1)), float(ci.group(2))] if ci else None)


def main() -> int:
    from amutheory.protocol.report import claim_numbers

    s = json.loads(RERUN.read_text())
    reg = REGISTERED.read_text()
    claims = {r[0]: (r[1].strip("*"), r[2]) for r in _table(reg, "| claim | verdict |")}
    rules = {r[0]: (r[1], r[2]) for r in _table(reg, "| rule | verdict | median abs log error |")}
    lines = ["# The registered protocol run again: how much of it moves", "",
             "Written by `python validate/protocol_rerun_findings.py` from the rerun's `summary.json` (kept in "
             "`docs/findings/protocol_rerun/`) and the registered report [protocol_2026_11.md](protocol_2026_11.md).", "",
             f"The rerun: `amutheory validate --preset protocol-2026-11` (fingerprint `{s['fingerprint']}`, the "
             "registered protocol, unchanged) on 2026-11-27, on another machine of the same kind (2 cores, an AMD "
             "EPYC with AVX-512), from the current code.  Its cell keys are the registered run's; its records are "
             "not: one chain1d group (depth 14, seed 0) trained here by the code of the registration (7598eed) and "
             "by the current code gives the same records bit for bit, and the registration-time analysis run on "
             "the rerun's cells gives the rerun's verdicts.  So the difference below is the machine's float "
             "rounding, amplified by 200 steps of SGD near the edge of stability, not a change of code; the "
             "registered report's claim that a second run reproduces bit for bit held on the machine that ran it.",
             "", "## Verdicts", "",
             "| claim | registered verdict | registered numbers (95% CI) | rerun verdict | rerun numbers (95% CI) |",
             "|---|---|---|---|---|"]
    changed = []
    for c in s["claims"]:
        rv, rn = claims.get(c["statement"], ("n/a", "n/a"))
        if rv != c["verdict"]:
            changed.append(c["name"])
        lines.append(f"| {c['statement']} | {rv} | {rn} | **{c['verdict']}** | {claim_numbers(c)} |")
    t = s["transfer"]["rules"]
    lines += ["", "## Zero-shot transfer (chain1d, calibrated at L = 3, 4; held out 5..16)", "",
              "| rule | registered verdict | registered median abs log error | rerun verdict | rerun median |",
              "|---|---|---|---|---|"]
    moved = []
    for name, r in t.items():
        rv, re = rules.get(name, ("n/a", "n/a"))
        if rv != r["verdict"]:
            moved.append(name)
        lines.append(f"| {name} | {rv} | {re} | {r['verdict']} | {r['median_abs_log_error']:.2f} |")
    outside, disjoint = [], []
    for c in s["claims"]:
        _, reg_ci = _first(claims.get(c["statement"], ("", ""))[1])
        est, new_ci = _first(claim_numbers(c))
        if reg_ci and est is not None and not reg_ci[0] <= est <= reg_ci[1]:
            outside.append(c["name"])
        if reg_ci and new_ci and (new_ci[1] < reg_ci[0] or new_ci[0] > reg_ci[1]):
            disjoint.append(c["name"])
    from amutheory.train.learning import learns

    def deepest_learns(name):
        return all(learns(s["studies"][st]["rows"][-1]["final_loss_at_optimum"], 10) for st in
                   next(c for c in s["claims"] if c["name"] == name)["studies"])

    weak = [n for n in changed if not deepest_learns(n)]
    chain = s["studies"][s["transfer"]["study"]]["rows"]
    deep_chain = [r["depth"] for r in chain if not learns(r["final_loss_at_optimum"], 10)]
    lines += ["", "## Reading", "",
              f"* {len(changed)} of {len(s['claims'])} claim verdicts differ between two runs of one registered "
              f"protocol ({', '.join(changed) or 'none'}), and {len(moved)} of {len(t)} transfer-rule verdicts "
              f"({', '.join(moved) or 'none'}).",
              f"* The rerun's estimate (exponent or difference) lies outside the registered 95% CI for {len(outside)} "
              f"of {len(s['claims'])} claims ({', '.join(outside) or 'none'}); the two CIs are disjoint for "
              f"{len(disjoint)} ({', '.join(disjoint) or 'none'}).  Intervals that carried the run-to-run variation "
              "would hold the other run's estimate about 19 times in 20, so one rerun does not show these CIs too "
              "narrow (issue 41's replica at other sizes did); it shows that verdicts decided at a CI's edge or a "
              "transfer tolerance's edge flip with the machine's rounding.",
              f"* Of the claims whose verdict moved, {len(weak)} rest on a deepest net that does not learn at its "
              f"optimum ({', '.join(weak) or 'none'}); the transfer study (chain1d) does not learn at depths "
              f"{', '.join(map(str, deep_chain)) or 'none'} of its held-out 5..16, where the loss-against-rate curves "
              "are flat and rounding moves the argmin.  This is the evidence behind the next registration's nets that "
              "learn, wider resampling and replicate check.", ""]
    PAGE.write_text("\n".join(lines) + "\n")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
