"""``summary.json``, ``report.md`` and the figures of a protocol run, written from its summary.

:func:`markdown_sections` gives the report's tables (verdicts, zero-shot transfer, the papers'
segmented scheme, the bridge, the cost), so the findings page (and any page with a protocol block) can be
generated from the same summary (``python validate/protocol_findings.py``), never typed.
"""

from __future__ import annotations

import json
from pathlib import Path

from amutheory.families import get_family, result_family
from amutheory.train.learning import DOES_NOT_LEARN, row_learns


def _g(v, fmt=".3g") -> str:
    return "n/a" if v is None else format(v, fmt)


def _ci(c, fmt=".3g") -> str:
    return "n/a" if not c else f"[{format(c[0], fmt)}, {format(c[1], fmt)}]"


def _pct(v) -> str:
    return "n/a" if v is None else ("inf" if v == float("inf") else f"{100 * v:+.0f}%")


def claim_numbers(c: dict) -> str:
    if c["kind"] in ("exponent", "width"):
        f = c.get("fit")
        text = "n/a" if not f else f"exponent {f['exponent']:.2f} {_ci(f['exponent_ci'], '.2f')}, prefactor {f['prefactor']:.3g}"
        rules = c.get("rules") or {}
        return text + "".join(f"; {k} rule {r['exponent']:+.2f}: {r['verdict']}" for k, r in rules.items())
    if c["kind"] == "same-exponent":
        d, r = c.get("difference"), c.get("prefactor_ratio")
        text = "n/a" if not d else f"difference {d['exponent_difference']:+.2f} {_ci(d['exponent_difference_ci'], '+.2f')}"
        if r:
            text += f"; prefactor ratio {r['ratio']:.2f} {_ci(r['ratio_ci'], '.2f')}"
        return text
    parts = []
    for key, label in (("difference_critical", "critical c"), ("difference_he", "He c = 2")):
        d = c.get(key)
        if d:
            parts.append(f"{label}: {d['exponent_difference']:+.2f} {_ci(d['exponent_difference_ci'], '+.2f')}")
    return "; ".join(parts) or "n/a"


def _deepest(summary: dict, study: str) -> str:
    """Does the deepest net of the study learn?  At its grid optimum: the final training loss (last
    tenth of the steps) against the chance loss, and the test accuracy."""
    s = summary["studies"].get(study)
    if not s:
        return "n/a"
    row = s["rows"][-1]
    flags = f" ({', '.join(row['flags'])})" if row["flags"] else ""
    return (f"{_g(row.get('final_loss_at_optimum'), '.2f')} / {row['chance_loss']:.2f}, test accuracy "
            f"{_g(row.get('test_accuracy_at_optimum'), '.2f')}{flags}")


def learning_points(c: dict) -> str:
    """Per study of the claim, the points its fits use that learn, of those it uses."""
    learns = c.get("learns")
    if not learns:
        return "n/a"
    return "; ".join(f"{study}: {', '.join(p for p, ok in pts.items() if ok) or 'none'} of {len(pts)}"
                     for study, pts in learns.items())


def replicate_cell(row: dict | None) -> str:
    """The replicate's estimate and CI, and whether it lands inside the registered CI."""
    if row is None or row["b"] is None:
        return "n/a"
    inside = {True: "inside the registered CI", False: "**outside the registered CI**",
              None: "no registered CI"}[row["second_inside_first"]]
    return f"{row['b']:+.2f} {_ci(row['b_ci'], '+.2f')}: {inside} (replicate's verdict: {row['verdict_b']})"


def verdict_table(summary: dict, replicate: list | None = None) -> list[str]:
    """One row per claim; with ``replicate`` (:func:`amutheory.protocol.replicate.replicate_rows` of this run and a
    run on disjoint seeds) a column says where the replicate's estimate lands."""
    extra = " replicate on disjoint seeds (95% CI) |" if replicate else ""
    lines = ["| claim | verdict | numbers (95% CI) | why | deepest net at its optimum: final loss / chance | "
             "points that learn |" + extra,
             "|---|---|---|---|---|---|" + ("---|" if replicate else "")]
    rows = {r["claim"]: r for r in replicate or []}
    for c in summary["claims"]:
        why = c["reason"] + (f" (condition: {c['condition']})" if c.get("condition") else "")
        lines.append(f"| {c['statement']} | **{c['verdict']}** | {claim_numbers(c)} | {why} | "
                     f"{_deepest(summary, c['studies'][0])} | {learning_points(c)} |"
                     + (f" {replicate_cell(rows.get(c['name']))} |" if replicate else ""))
    return lines


#: the papers' own training protocol (docs/theory.md, section 2), for the sizes table
PAPERS_PROTOCOL = {"data": "CIFAR-10 (32x32 RGB)", "net": "2D conv chains (ReLU, GELU; circular padding), ResNets",
                   "width": "64", "batch": "128", "steps": "100 (sometimes an epoch)",
                   "optimizer": "plain SGD (and Adam)", "seeds x rates": "2 inits x a log grid",
                   "depths": "3..30", "score": "mean training loss over the run"}


def _depths(study: dict) -> str:
    d = study["depths"] if len(study["widths"]) == 1 else study["widths"]
    text = ", ".join(map(str, d))
    return f"widths {text} at depth {study['depths'][0]}" if len(study["widths"]) > 1 else text


def sizes_table(protocol: dict) -> list[str]:
    """The sizes of each study of ``protocol`` (a ``protocol.json``'s definition) beside the papers' own protocol,
    one row each, so a reader compares eta*_train and exponents knowing what differs."""
    p = PAPERS_PROTOCOL
    lines = ["| | data | net | width | batch | steps | optimizer | seeds x rates | depths | score |",
             "|---|---|---|---|---|---|---|---|---|---|",
             f"| **the papers** | {p['data']} | {p['net']} | {p['width']} | {p['batch']} | {p['steps']} | "
             f"{p['optimizer']} | {p['seeds x rates']} | {p['depths']} | {p['score']} |"]
    for st in protocol["studies"]:
        spec = st["spec"]
        data = st["dataset"]
        if data == "digits":
            data = "digits (8x8 images)" if spec["dim"] == 2 else "digits (8 rows x 8 features)"
        if st.get("synthetic_shape"):
            data += f" ({st['synthetic_shape'][0]} features x {st['synthetic_shape'][1]} positions)"
        fam = get_family(spec["family"])
        net = ("" if "dim" in fam.unused_fields else f"{spec['dim']}D ") + fam.title
        net += f", {spec['activation']}" + (f", {st['norm']} norm" if st["norm"] != "none" else "")
        net += f", {spec['branch']} block, init {spec['init']}" if fam.residual and "branch" not in fam.unused_fields \
            else ""
        net += f", dropout {st['dropout']:g}" if st["dropout"] else ""
        lines.append(f"| {st['name']} | {data} | {net} | {spec['width'] if len(st['widths']) == 1 else '-'} | "
                     f"{st['batch_size']} | {st['steps']} | {st['optimizer']} | {st['seeds']} x "
                     f"{st['points']} + {st['refine']} | {_depths(st)} | mean training loss over the run |")
    return lines


def transfer_table(rules: dict, targets: list) -> list[str]:
    head = "| rule | verdict | median abs log error | " + " | ".join(f"L={L}" for L in targets) + " |"
    lines = [head, "|" + "---|" * (3 + len(targets))]
    for name, r in rules.items():
        cells = [f"{_pct(row['relative_error'])} {_ci([100 * v for v in row['relative_error_ci']], '+.0f') if row['relative_error_ci'] else ''}"
                 for row in r["rows"]]
        lines.append(f"| {name} | {r['verdict']} | {_g(r['median_abs_log_error'], '.2f')} | " + " | ".join(cells) + " |")
    return lines


def bridge_table(bridge: dict, exps: dict) -> list[str]:
    lines = ["| horizon T (steps) | exponent of eta*_train | ratio slope in ln L (95% CI) | constant in depth? |",
             "|---|---|---|---|"]
    for T, row in sorted(bridge.items(), key=lambda kv: int(kv[0])):
        f = exps["train"].get(str(T))
        lines.append(f"| {T} | {_g(f and f['exponent'], '.2f')} {_ci(f and f['exponent_ci'], '.2f')} | "
                     f"{_g(row['slope'], '+.2f')} {_ci(row['slope_ci'], '+.2f')} | "
                     f"{'yes' if row['constant_in_depth'] else 'no' if row['constant_in_depth'] is False else 'n/a'} |")
    return lines


def horizon_table(summary: dict) -> list[str]:
    """Each study's exponent at every horizon read (the shorter ones of ``horizon_fits`` and its own ``steps``):
    does the exponent settle as T grows?  One row per study trained longer than the registered horizons."""
    longest = max((int(T) for s in summary["studies"].values() for T in s.get("horizon_fits", {})), default=None)
    long = {n: s for n, s in summary["studies"].items() if longest is not None and s["steps"] > longest}
    if not long:
        return []
    Ts = sorted({int(T) for s in long.values() for T in s.get("horizon_fits", {})})
    lines = ["| study | " + " | ".join(f"T = {T}" for T in Ts) + " | T = steps |", "|---|" + "---|" * (len(Ts) + 1)]
    for name, st in long.items():
        cells = [st["horizon_fits"].get(str(T)) for T in Ts] + [st["fit"]]
        lines.append(f"| {name} | " + " | ".join(f"{_g(f and f['exponent'], '.2f')} {_ci(f and f['exponent_ci'], '.2f')}"
                                                  for f in cells) + f" ({st['steps']}) |")
    return lines


def bridges_table(summary: dict) -> list[str]:
    """eta*_train / eta*_onestep (seed mean) per probing study (one per width): its slope in ln L at each horizon."""
    bridges = summary.get("bridges") or {}
    if len(bridges) < 2:
        return []
    Ts = sorted({int(T) for b in bridges.values() for T in b["onestep-mean"]})
    lines = ["| study (width) | " + " | ".join(f"T = {T}: ratio slope in ln L" for T in Ts) + " |",
             "|---|" + "---|" * len(Ts)]
    for name, b in bridges.items():
        cells = [b["onestep-mean"].get(str(T)) for T in Ts]
        lines.append(f"| {name} ({b['width']}) | " + " | ".join(
            "n/a" if c is None else f"{_g(c['slope'], '+.2f')} {_ci(c['slope_ci'], '+.2f')}" for c in cells) + " |")
    return lines


def cost_table(cost: dict) -> list[str]:
    g, o = cost["grid_search"], cost["one_step_route"]
    errs = ", ".join(f"{k} {_g(v, '.2f')}" for k, v in o["median_abs_log_error"].items())
    return ["| route | what runs | cells | forward passes | core-seconds | error at the held-out depths |",
            "|---|---|---|---|---|---|",
            f"| grid search | every rate x seed at depths {g['depths'][0]}..{g['depths'][-1]} | {g['cells']} | "
            f"{g['forward_passes']} | {g['core_seconds']:.0f} | its own CI: median abs log half-width "
            f"{_g(g['median_abs_log_ci_half_width'], '.2f')} |",
            f"| one-step route | the sweep at depths {o['depths']} + the probe ({o['probe_seeds']} seeds) at every depth | "
            f"{o['cells']} | {o['forward_passes']} | {o['core_seconds']:.0f} (probe {o['probe_seconds']:.0f}) | "
            f"median abs log error: {errs} |",
            "", f"Cost ratio (one-step route / grid search): **{_g(cost['core_seconds_ratio'], '.3f')}** in "
            f"core-seconds, {_g(cost['cells_ratio'], '.3f')} in training runs."]


#: a net whose final loss at its optimum is above this fraction of the chance loss does not learn
#: (the one threshold, shared with the sweep's report: amutheory.train.learning)
BARELY_LEARNS = DOES_NOT_LEARN


def caveats(summary: dict) -> list[str]:
    """What a reader must know before trusting a verdict, read off the run (not typed)."""
    out = []
    weak = [f"{name} ({s['axis']} {r[s['axis']]})" for name, s in summary["studies"].items() for r in s["rows"]
            if row_learns(r) is False]
    if weak:
        out.append(f"* Not learning (at the grid optimum, the training loss over the last tenth of the steps is "
                   f"above {BARELY_LEARNS:g} x the chance loss ln(classes)): {', '.join(weak)}. There eta*_train is "
                   "the fastest rate a barely-learning net tolerates, not the optimum of a net that learns.")
    flagged = [f"{name} ({s['axis']} {r[s['axis']]}: {', '.join(r['flags'])})" for name, s in summary["studies"].items()
               for r in s["rows"] if r["flags"]]
    if flagged:
        out.append(f"* Flagged optima (grid edge, next to a diverged rate, or every rate diverged; an all-diverged "
                   f"point is left out of its fit): {'; '.join(flagged)}.")
    return out


def markdown_sections(summary: dict, figure_dir: str = "figures", replicate: list | None = None) -> list[str]:
    t = summary["transfer"]
    lines = ["### Verdict per claim", ""] + verdict_table(summary, replicate)
    notes = caveats(summary)
    if notes:
        lines += ["", "Read with:", ""] + notes
    lines += ["", f"### Zero-shot transfer across depth ({t['study']}: calibrated at L = {t['calibration']}, "
              f"verified by fresh sweeps; a rule transfers within a factor {t['tolerance']:g})", "",
              "Relative error of each rule's predicted rate against eta*_train (95% CI):", ""]
    lines += transfer_table(t["rules"], t["targets"])
    for seg in t["segments"]:
        tg = seg["targets"]
        lines += ["", f"The papers' segmented scheme: calibrated at L = {seg['calibration']}, predicting L = "
                  f"{tg[0] if len(tg) == 1 else f'{tg[0]}..{tg[-1]}'}:", ""]
        lines += transfer_table(seg["rules"], seg["targets"])
    if "bridge" in t:
        lines += ["", "### The bridge: eta*_train / eta*_onestep against depth and horizon", "",
                  "One-step exponent (probe, seed mean): "
                  f"{_g(t['bridge_exponents']['onestep-mean']['exponent'], '.2f')} "
                  f"{_ci(t['bridge_exponents']['onestep-mean']['exponent_ci'], '.2f')}; typical (geometric mean): "
                  f"{_g(t['bridge_exponents']['onestep-typical']['exponent'], '.2f')} "
                  f"{_ci(t['bridge_exponents']['onestep-typical']['exponent_ci'], '.2f')}.", ""]
        lines += bridge_table(t["bridge"]["onestep-mean"], t["bridge_exponents"])
        two = bridges_table(summary)
        if two:
            lines += ["", "The bridge at each width (slope of ln(eta*_train / eta*_onestep) in ln L; 0 = the one-step "
                      "rate tracks the trained one across depth):", ""] + two
        lines += ["", "### What the theory saves", ""] + cost_table(t["cost"])
    settle = horizon_table(summary)
    if settle:
        lines += ["", "### Does the exponent settle as the horizon grows?", "",
                  "The exponent of eta*_train read from the same runs at each horizon T (steps):", ""] + settle
    lines += ["", f"![transfer]({figure_dir}/transfer_rules.png)", "", f"![bridge]({figure_dir}/bridge.png)", "",
              f"![claims]({figure_dir}/claims.png)"]
    return lines


def _optima(s: dict) -> str:
    """eta*_train at each point of a study (depth or width: value)."""
    return "; ".join(f"{r[s['axis']]}: {_g(r.get('eta_star_train'), '.3g')}" for r in s["rows"])


def study_table(summary: dict) -> list[str]:
    lines = ["| study | what | axis | eta*_train at each point | exponent (95% CI) | deepest point at its optimum: "
             "final loss / chance | core-s |",
             "|---|---|---|---|---|---|---|"]
    for name, s in summary["studies"].items():
        f = s["fit"]
        axis = "blocks K" if result_family(s).counts_blocks else s["axis"]
        lines.append(f"| {name} | {s['what']} | {axis} | {_optima(s)} | {_g(f and f['exponent'], '.2f')} "
                     f"{_ci(f and f['exponent_ci'], '.2f')} | {_deepest(summary, name)} | "
                     f"{s['cost']['core_seconds']:.0f} |")
    return lines


def markdown(summary: dict) -> str:
    run = summary.get("this_run", {})
    lines = [f"# Protocol `{summary['protocol']}` (fingerprint `{summary['fingerprint']}`)", "",
             summary["description"]]
    if summary.get("size_note"):
        lines += ["", f"**{summary['size_note']}**"]
    lines += ["", "Runs of this folder (a rerun resumes: it trains only missing cells):", ""]
    for i, r in enumerate(summary.get("runs") or [run], 1):
        lines.append(f"{i}. {r.get('finished', '')}: {r.get('cells_run', 0)} cells trained, {r.get('wall_s', 0):.0f} s "
                     f"wall-clock on {r.get('workers')} workers x {r.get('threads')} threads ({r.get('device')})"
                     + (f"; {r['note']}" if r.get("note") else ""))
    lines.append("")
    lines += markdown_sections(summary)
    lines += ["", "### Studies", ""] + study_table(summary)
    lines += ["", "Each study's folder holds its own `report.md`, `summary.json` and loss-vs-lr figure."]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, summary: dict, figures: bool) -> None:
    out = Path(out)
    from amutheory.jsonio import json_safe

    (out / "summary.json").write_text(json.dumps(json_safe(summary), indent=1) + "\n")
    if figures:
        from amutheory.protocol.figures import write_figures

        write_figures(out / "figures", summary)
    (out / "report.md").write_text(markdown(summary))

