"""``summary.json``, ``report.md`` and the figures of a protocol run, written from its summary.

:func:`markdown_sections` gives the report's tables (verdicts, the largest stable rate, zero-shot transfer, the
papers' segmented scheme, the bridge, the cost), :func:`method_lines` the interval method and verdict rule stated once
and :func:`terms_lines` the jargon a page uses, defined once, so the findings page (and any page with a protocol
block) can be generated from the same summary (``python validate/protocol_findings.py``), never typed.  Summaries
written before the registration of 2026-11-27b (no ``interval``, ``margin``, ``eta_max``, ``not_run``, ``horizons``)
render as well.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from amutheory.families import get_family, result_family
from amutheory.train.learning import DOES_NOT_LEARN, row_learns


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _g(v, fmt=".3g") -> str:
    return format(v, fmt) if _finite(v) else "n/a"


def _ci(c, fmt=".3g") -> str:
    if not c or len(c) != 2 or not all(_finite(v) for v in c):
        return "n/a"
    return f"[{format(c[0], fmt)}, {format(c[1], fmt)}]"


def _est(v, c, fmt=".2f") -> str:
    """An estimate and its 95% CI (``(no CI)`` where it has none)."""
    if not _finite(v):
        return "n/a"
    return f"{format(v, fmt)} " + (_ci(c, fmt) if _ci(c, fmt) != "n/a" else "(no CI)")


def _pct(v) -> str:
    if v == float("inf"):
        return "inf"
    return f"{100 * v:+.0f}%" if _finite(v) else "n/a"


#: the two verdicts set in bold; ``conditional``, ``inconclusive`` and ``untestable`` stay plain
BOLD_VERDICTS = ("holds", "fails")


def verdict_cell(verdict: str) -> str:
    return f"**{verdict}**" if verdict in BOLD_VERDICTS else str(verdict)


# ----------------------------------------------------------------------------- axes
#: a claim's axis in words (``depth`` is the sweep's own: layers L, or blocks K for a residual net / Transformer)
AXIS_WORDS = {"effective-depth": "effective depth", "blocks": "blocks K", "width": "width n"}


def sweep_axis(study: dict | None) -> str:
    """What a study sweeps, in words: ``depth L`` (layers), ``blocks K`` or ``width n``."""
    if not study:
        return "depth L"
    if study.get("axis") == "width":
        return "width n"
    return "blocks K" if result_family(study).counts_blocks else "depth L"


def _symbol(study: dict | None) -> str:
    return sweep_axis(study).split()[-1]


def _point(study: dict | None, p) -> str:
    """One sweep point in words: ``depth 12``, ``K = 4`` or ``width 16``."""
    axis = sweep_axis(study)
    return f"K = {p}" if axis == "blocks K" else f"{axis.split()[0]} {p}"


def claim_axis(c: dict, summary: dict | None = None) -> str:
    """The axis a claim's exponent is read on, in words (``depth`` claims: the sweep's own)."""
    axis = c.get("axis") or "depth"
    if axis == "depth":
        return sweep_axis(_study(summary, c["studies"][0]))
    return AXIS_WORDS.get(axis, axis)


def _study(summary: dict | None, name: str) -> dict | None:
    return ((summary or {}).get("studies") or {}).get(name)


def _points(study: dict | None) -> list:
    return [r[study["axis"]] for r in study["rows"]] if study else []


def _axis_map(c: dict, summary: dict | None, fit: dict | None) -> str:
    """Where the claim's axis is not the sweep's (effective depth of a sweep in K or L): its value at each point."""
    if (c.get("axis") or "depth") != "effective-depth" or not fit or not fit.get("x"):
        return ""
    study = _study(summary, c["studies"][0])
    xs = ", ".join(format(x, "g") for x in fit["x"])
    pts = _points(study)
    if len(pts) != len(fit["x"]):
        return f" (effective depth {xs})"
    return f" (effective depth {xs} at {_symbol(study)} = {', '.join(map(str, pts))})"


def _horizons(c: dict, summary: dict | None) -> str:
    """At which step each study of a comparison is read, where the steps differ or a study is read before its end."""
    h = c.get("horizons")
    if not h:
        return ""
    steps = {s: (_study(summary, s) or {}).get("steps") for s in h}
    if len(set(h.values())) > 1:
        return " (read at step " + ", ".join(f"{v} for {s}" for s, v in h.items()) + ")"
    early = [f"{s} trained {steps[s]}" for s in h if steps[s] and steps[s] != h[s]]
    if early:
        return f" (all read at step {next(iter(h.values()))}; {', '.join(early)})"
    return ""


# ----------------------------------------------------------------------------- the verdict table
def claim_numbers(c: dict, summary: dict | None = None) -> str:
    """The claim's estimate with its 95% CI, always naming the axis it is read on (``summary``: the run's, for the
    sweep's axis, the effective depth at each point and the step each study is read at)."""
    if c.get("not_run"):
        return "not run"
    axis = claim_axis(c, summary)
    if c["kind"] in ("exponent", "width", "eta-max"):
        f = c.get("fit")
        what = "exponent of eta_max" if c["kind"] == "eta-max" else "exponent"
        if not f:
            return f"{what} in {axis}: n/a"
        text = f"{what} in {axis}: {_est(f.get('exponent'), f.get('exponent_ci'))}, prefactor {_g(f.get('prefactor'))}"
        text += _axis_map(c, summary, f)
        rules = c.get("rules") or {}
        return text + "".join(f"; {k} rule {r['exponent']:+.2f}: {r['verdict']}" for k, r in rules.items())
    studies = c.get("studies") or []
    if c["kind"] == "same-exponent":
        d, r = c.get("difference"), c.get("prefactor_ratio")
        who = f" ({studies[0]} minus {studies[1]})" if len(studies) == 2 else ""
        text = f"exponent difference in {axis}{who}: " + \
            ("n/a" if not d else _est(d.get("exponent_difference"), d.get("exponent_difference_ci"), "+.2f"))
        if r:
            text += f"; prefactor ratio {_est(r.get('ratio'), r.get('ratio_ci'))}"
        return text + _horizons(c, summary)
    parts = []
    for key, label, who in (("difference_critical", "critical c", 1), ("difference_he", "He c = 2", 0)):
        d = c.get(key)
        if d:
            minus = f" ({studies[who]} minus {studies[2]})" if len(studies) == 3 else ""
            parts.append(f"{label}{minus}: {_est(d.get('exponent_difference'), d.get('exponent_difference_ci'), '+.2f')}")
    return f"exponent difference in {axis} (below 0: steeper): " + ("; ".join(parts) or "n/a") + _horizons(c, summary)

def _deepest(summary: dict, study: str) -> str:
    """Does the deepest net of the study learn?  At its grid optimum: the final training loss (last
    tenth of the steps) against the chance loss, and the test accuracy."""
    s = summary["studies"].get(study)
    if not s:
        return "n/a"
    row = s["rows"][-1]
    flags = f" ({', '.join(row['flags'])})" if row.get("flags") else ""
    return (f"{_g(row.get('final_loss_at_optimum'), '.2f')} / {_g(row.get('chance_loss'), '.2f')}, test accuracy "
            f"{_g(row.get('test_accuracy_at_optimum'), '.2f')}{flags}")


def learning_points(c: dict) -> str:
    """Per study of the claim, the points its fits use that learn, of those it uses."""
    learns = c.get("learns")
    if not learns:
        return "n/a"
    return "; ".join(f"{study}: {', '.join(p for p, ok in pts.items() if ok) or 'none'} of {len(pts)}"
                     for study, pts in learns.items())


def _row(study: dict | None, p) -> dict | None:
    if not study:
        return None
    return next((r for r in study["rows"] if str(r.get(study["axis"])) == str(p)), None)


def _does_not_learn(study: dict | None, p) -> str:
    """``12: 1.17 > 1.15``: a point that does not learn, its final loss at the optimum against the threshold."""
    row = _row(study, p)
    if row is None:
        return f"{p}: no record"
    loss, chance = row.get("final_loss_at_optimum"), row.get("chance_loss")
    if not _finite(loss):
        return f"{p}: every rate diverged"
    if not _finite(chance):
        return f"{p}: {loss:.2f}"
    limit = DOES_NOT_LEARN * chance
    fmt = ".2f" if format(loss, ".2f") != format(limit, ".2f") else ".3f"
    return f"{p}: {format(loss, fmt)} > {format(limit, fmt)}"


def learning_text(c: dict, summary: dict | None = None) -> str:
    """Per study of the claim, how many of the points its fits use learn, and the ones that do not with their final
    loss at the optimum against the threshold: ``7 of 8 depths learn (not 12: 1.17 > 1.15)``."""
    if c.get("not_run"):
        return "not run"
    if c["kind"] == "eta-max":
        return "not required (eta_max is measured whether or not a net learns)"
    learns = c.get("learns")
    if not learns:
        return "n/a"
    parts = []
    for name, pts in learns.items():
        study = _study(summary, name)
        noun = "widths" if study and study.get("axis") == "width" else "depths"
        ok = [p for p, v in pts.items() if v is True]
        if len(ok) == len(pts):
            text = {1: f"the one {noun[:-1]} learns", 2: f"both {noun} learn"}.get(len(pts), f"all {len(pts)} {noun} learn")
        else:
            bad = [_does_not_learn(study, p) for p, v in pts.items() if v is not True]
            text = f"{len(ok)} of {len(pts)} {noun} learn (not {', '.join(bad)})"
        parts.append(text if len(learns) == 1 else f"{name}: {text}")
    return "; ".join(parts)


def _short(reason: str) -> str:
    """A registration's reason for not running a claim, to its first clause (parentheses left out)."""
    first = reason.split(";")[0]
    return re.sub(r"\s*\([^()]*\)", "", first).strip()


def why(c: dict) -> str:
    """The verdict's reason, short: an ``untestable`` claim says why (not run, with the registration's reason; or a
    net it uses does not learn, with the verdict it would have had)."""
    reason = c.get("reason") or ""
    if c.get("verdict") == "untestable":
        if c.get("not_run"):
            return _short(reason) or "not run"
        would = c.get("verdict_if_tested")
        if would is None:
            m = re.search(r"the verdict it would have had: (\w+)", reason)
            would = m.group(1) if m else None
        if "do not learn" in reason or c.get("learns"):
            return "a net it uses does not learn (see nets that learn)" + (f"; it would have read {would}" if would else "")
        return reason
    return reason + (f" (condition: {c['condition']})" if c.get("condition") else "")


def replicate_cell(row: dict | None) -> str:
    """The replicate's estimate and CI, whether it lands inside the registered CI, and the replicate's verdict."""
    if row is None:
        return "n/a"
    if row.get("b") is None:
        return f"no estimate (replicate's verdict: {row['verdict_b']})"
    inside = {True: "inside the registered CI", False: "outside the registered CI",
              None: "no registered CI"}[row["second_inside_first"]]
    return f"{_est(row['b'], row.get('b_ci'), '+.2f')}: {inside} (replicate's verdict: {row['verdict_b']})"


#: the replicate column, explained in one line above the table
REPLICATE_NOTE = ("The replicate column: the same claim's estimate (95% CI) from a second run of this protocol on "
                  "disjoint seeds, whether it lies inside this run's (the registered) 95% CI, and the replicate's own "
                  "verdict. The verdicts are this run's; the replicate does not change them.")


def learning_note(summary: dict) -> str:
    """The learning column, explained in one line (the threshold read off the run)."""
    chances = {round(r["chance_loss"], 6) for s in summary["studies"].values() for r in s["rows"]
               if _finite(r.get("chance_loss"))}
    limit = f" ({DOES_NOT_LEARN * next(iter(chances)):.2f} here)" if len(chances) == 1 else ""
    return (f"Nets that learn: a net learns when its final training loss at its optimum (the last tenth of the steps) is "
            f"at most {DOES_NOT_LEARN:g} x the chance loss ln(classes){limit}; a point that does not is listed with "
            "its loss against that threshold. A claim resting on a point that does not learn is untestable.")


def verdict_table(summary: dict, replicate: list | None = None) -> list[str]:
    """One row per claim; with ``replicate`` (:func:`amutheory.protocol.replicate.replicate_rows` of this run and a
    run on disjoint seeds) a column says where the replicate's estimate lands."""
    extra = " replicate on disjoint seeds (95% CI) |" if replicate else ""
    lines = ["| claim | verdict | numbers (95% CI) | why | nets that learn |" + extra,
             "|---|---|---|---|---|" + ("---|" if replicate else "")]
    rows = {r["claim"]: r for r in replicate or []}
    for c in summary["claims"]:
        lines.append(f"| {c['statement']} | {verdict_cell(c['verdict'])} | {claim_numbers(c, summary)} | {why(c)} | "
                     f"{learning_text(c, summary)} |"
                     + (f" {replicate_cell(rows.get(c['name']))} |" if replicate else ""))
    return lines


def not_run_lines(summary: dict) -> list[str]:
    """The registration's reasons, in full, for the claims it did not run."""
    skipped = [c for c in summary["claims"] if c.get("not_run")]
    if not skipped:
        return []
    return ["Not run, as registered (the reasons in full):", ""] + \
        [f"* {c['name']}: {c.get('reason') or 'no reason recorded'}." for c in skipped]


# ----------------------------------------------------------------------------- the method, stated once, and the terms
def method_lines(summary: dict) -> list[str]:
    """The interval method and the verdict rule, stated once near the top of a page (read off the summary)."""
    from amutheory.protocol.verdicts import MAX_CI_WIDTH

    out = []
    seeds = {s.get("seeds") for s in summary["studies"].values() if s.get("seeds")}
    n = next(iter(seeds)) if len(seeds) == 1 else None
    interval = summary.get("interval")
    if interval == "jackknife":
        dof = f", t at {n - 1} degrees of freedom ({n} seeds)" if n else ""
        out.append(f"**Intervals.** Every 95% CI on this page: the delete-one-seed jackknife (Terms){dof}; rates and "
                   "ratios on their log. Where the one-step probe's own seeds enter (the one-step rules, the bridge), "
                   "their jackknife variance is added.")
    elif interval:
        out.append(f"**Intervals.** Every 95% CI on this page: the {interval} over seeds.")
    else:
        out.append("**Intervals.** This summary does not name its interval method (it was written before the "
                   "registration of 2026-11-27b); its registration states it.")
    margin = summary.get("margin")
    if _finite(margin):
        out.append(f"**Verdicts.** The margin rule (Terms) with delta = {margin:g} in exponent units; a steeper-than "
                   "claim is one-sided (holds when its CI lies below 0, fails when it lies at or above 0).")
    else:
        out.append(f"**Verdicts** (this registration's rule, used up to 2026-11-27): a claim holds when the claimed "
                   f"value lies inside the 95% CI and the CI is at most {MAX_CI_WIDTH:g} wide, is inconclusive when it "
                   "lies inside a wider CI, and fails (or is conditional) when it lies outside.")
    if summary.get("optimum") == "smooth":
        out.append("**Optima.** eta*_train at each point is the smooth optimum (Terms).")
    elif summary.get("optimum") == "per-seed":
        out.append("**Optima.** eta*_train at each point is the per-seed optimum (Terms): each seed's own smooth "
                   "optimum, averaged over seeds.")
    return out


def _rounds(summary: dict) -> int | None:
    return next((e.get("rounds") for e in (summary.get("eta_max") or {}).values() if e.get("rounds")), None)


def _terms(summary: dict) -> list[tuple]:
    margin = summary.get("margin")
    rounds = _rounds(summary)
    inconclusive = ("the 95% CI neither lies inside the claim's band nor wholly outside it, or there is no CI"
                    if _finite(margin) else "the CI holds the claimed value but is too wide to tell, or there is no CI")
    eta = ("the learning rate with the lowest training loss averaged over the run (mean over seeds), found at each "
           "depth (or width) on a log grid of rates; the claims are about how it scales")
    if summary.get("optimum") == "per-seed":
        eta = ("the learning rate with the lowest training loss averaged over the run, found for each seed on a log "
               "grid of rates and averaged over seeds (on the log), at each depth (or width); the claims are about "
               "how it scales")
    return [
        (r"eta\*_train", "eta*_train", eta),
        (r"refine", "refined rates", "extra rates trained after the grid, between the grid neighbours of each "
         "point's best seed-mean rate, to place the optimum more finely"),
        (r"next-to-divergence", "next-to-divergence", "a flag: a grid neighbour of the best rate diverged, so the "
         "loss curve is cut off right beside the optimum"),
        (r"prefactor", "prefactor", "c in the power-law fit eta = c x^exponent; two studies are compared by the "
         "ratio of their prefactors"),
        (r"\bK\b", "K (blocks)", "the number of residual blocks (ResNets) or Transformer blocks, the depth those "
         "studies sweep; L counts the layers of a plain chain"),
        (r"effective depth", "effective depth", "the number of layers on the shortest input-to-output path of the "
         "net's graph (a parameterised layer or a residual addition counts 1); the ResNet and Transformer claims are "
         "stated in it, and the numbers column gives its value at each K"),
        (r"smooth optimum", "the smooth optimum", "eta*_train at a point: the vertex of a least-squares parabola in "
         "ln(rate) through the seed-mean losses at every finite rate within two grid steps of the best one (stopping "
         "at the first diverged rate); each leave-one-seed-out replicate refits the same rates, so the jackknife "
         "applies. An optimum held at the window's end (flag outside) has no CI"),
        (r"per-seed optimum", "the per-seed optimum", "eta*_train at a point: exp(mean over seeds of ln eta*_s), "
         "eta*_s the vertex of a least-squares parabola in ln(rate) through that seed's own losses within one grid "
         "step of its own best rate (stopping at its own first diverged rate), held inside those rates (flags "
         "seed-at-divergence, seed-at-edge, seed-outside: k of n seeds held at the window's end); a mean of per-seed "
         "values, so its jackknife is the t interval of a mean"),
        (r"jackknife", "the jackknife", "the delete-one-seed jackknife: the estimate recomputed n times, each time "
         "leaving out one seed; 95% CI = estimate +- t_{n-1} x se, se^2 = (n-1)/n x sum_j (r_j - mean r)^2"),
        (r"margin rule", "the margin rule", "holds when the whole 95% CI lies inside the claimed value +- delta, "
         "fails when it lies wholly outside, inconclusive otherwise" +
         (f"; delta = {margin:g} in exponent units, half the distance from -3/2 to the rival exponents -1 and -2, "
          "so a CI inside the band excludes both" if _finite(margin) else "")),
        (r"eta_max", "eta_max", "the largest stable rate: per seed, the divergence edge between the largest rate "
         "that did not diverge and the smallest that did, narrowed by " +
         (f"{rounds} rounds of " if rounds else "") + "bisection at the geometric midpoint; eta_max is the "
         "geometric mean of the seeds' edges, measured whether or not the net learns"),
        (r"untestable", "untestable", "no verdict: a net the claim's fits use does not learn at its optimum, or the "
         "registration did not run the claim (its reason is given)"),
        (r"conditional", "conditional", "the claim holds only under a named condition: at a shorter training "
         "horizon, with the law's finite-depth corrections, with the exponent unchanged but no prefactor change "
         "resolved, or (GELU) only at He c = 2"),
        (r"inconclusive", "inconclusive", inconclusive),
    ]


def terms_lines(text: str, summary: dict) -> list[str]:
    """The jargon ``text`` uses, each term defined once (only the terms that appear in it)."""
    used = [(term, meaning) for pattern, term, meaning in _terms(summary) if re.search(pattern, text)]
    if not used:
        return []
    return [f"* {term}: {meaning}." for term, meaning in used]


# ----------------------------------------------------------------------------- the largest stable rate
CENSORED = {"above-range": (">=", "no rate diverged"), "below-range": ("<=", "every rate diverged")}


def _eta_max_point(study: dict | None, row: dict, raw: dict) -> str:
    """One point of eta_max: its estimate and CI, or a bound where a seed is censored."""
    axis = study["axis"] if study else ("width" if "width" in row else "depth")
    p = row.get(axis)
    flags = row.get("flags") or []
    value = _g(row.get("eta_max"))
    seeds = (raw.get(str(p)) or {}).get("per_seed") or []
    censored = [f for f in flags if f in CENSORED]
    if len(censored) == 1:
        sign, what = CENSORED[censored[0]]
        k = sum(s.get("censored") == censored[0] for s in seeds)
        text = f"{sign} {value} ({what}" + (f" for {k} of {len(seeds)} seeds)" if seeds else " for a seed)")
    elif censored:
        text = f"{value} (censored both ways: no bound)"
    else:
        text = f"{value} {_ci(row.get('eta_max_ci'))}" if _ci(row.get("eta_max_ci")) != "n/a" else f"{value} (no CI)"
    other = [f for f in flags if f not in CENSORED]
    if other:
        text += f" ({', '.join(other)})"
    if row.get("in_fit") is False and not censored:
        text += " (not in the fit)"
    return f"{p}: {text}"


def eta_max_lines(summary: dict) -> list[str]:
    """The largest stable rate per study: eta_max at each point (censored points as bounds), its exponent beside
    eta*_train's for the same study."""
    em = summary.get("eta_max")
    if not em:
        return []
    rounds = _rounds(summary)
    res = f" (resolution 1/{2 ** rounds} of a grid step)" if rounds else ""
    lines = ["### The largest stable rate eta_max", "",
             f"eta_max at each point (95% CI) after {rounds or 'the'} bisection rounds{res}. A censored point (a seed "
             "whose edge lies beyond the rates tried) is a bound: it has no CI and is left out of the exponent's fit. "
             "Both exponents are on the study's sweep axis; eta*_train's is its fit over all the study's points.", "",
             "| study | axis | eta_max at each point (95% CI) | exponent of eta_max (95% CI) | "
             "exponent of eta*_train (95% CI) |", "|---|---|---|---|---|"]
    for name, e in em.items():
        study = _study(summary, name)
        raw = (summary.get("eta_max_raw") or {}).get(name) or {}
        cells = "; ".join(_eta_max_point(study, row, raw) for row in e.get("rows", []))
        f, g = e.get("fit") or {}, (study or {}).get("fit") or {}
        lines.append(f"| {name} | {sweep_axis(study)} | {cells} | {_est(f.get('exponent'), f.get('exponent_ci'))} | "
                     f"{_est(g.get('exponent'), g.get('exponent_ci'))} |")
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
        cells = []
        for row in r["rows"]:
            c = row.get("relative_error_ci")
            ci = _ci([100 * v for v in c], "+.0f") if c and all(_finite(v) for v in c) else ""
            cells.append(f"{_pct(row.get('relative_error'))} {ci}".strip())
        lines.append(f"| {name} | {r['verdict']} | {_g(r.get('median_abs_log_error'), '.2f')} | " + " | ".join(cells)
                     + " |")
    return lines


def _yes_no(v) -> str:
    return "yes" if v is True else "no" if v is False else "n/a"


def _constant(row: dict) -> str:
    """yes / no, or why neither: no CI, or (the margin rule) a CI that overlaps 0 +- delta."""
    v = row.get("constant_in_depth")
    if v is not None:
        return _yes_no(v)
    return "no CI" if row.get("slope_ci") is None else "undecided (the CI overlaps the margin)"


def bridge_table(bridge: dict, exps: dict) -> list[str]:
    lines = ["| horizon T (steps) | exponent of eta*_train | ratio slope in ln L (95% CI) | constant in depth? |",
             "|---|---|---|---|"]
    for T, row in sorted(bridge.items(), key=lambda kv: int(kv[0])):
        f = exps["train"].get(str(T)) or {}
        lines.append(f"| {T} | {_est(f.get('exponent'), f.get('exponent_ci'))} | "
                     f"{_est(row.get('slope'), row.get('slope_ci'), '+.2f')} | {_constant(row)} |")
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
        cells = [st["horizon_fits"].get(str(T)) or {} for T in Ts] + [st["fit"] or {}]
        lines.append(f"| {name} | " + " | ".join(_est(f.get("exponent"), f.get("exponent_ci")) for f in cells)
                     + f" ({st['steps']}) |")
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
            "n/a" if c is None else _est(c.get("slope"), c.get("slope_ci"), "+.2f") for c in cells) + " |")
    return lines


def cost_table(cost: dict) -> list[str]:
    g, o = cost["grid_search"], cost["one_step_route"]
    errs = ", ".join(f"{k} {_g(v, '.2f')}" for k, v in o["median_abs_log_error"].items())
    return ["| route | what runs | cells | forward passes | core-seconds | error at the held-out depths |",
            "|---|---|---|---|---|---|",
            f"| grid search | every rate x seed at depths {g['depths'][0]}..{g['depths'][-1]} | {g['cells']} | "
            f"{g['forward_passes']} | {g['core_seconds']:.0f} | its own CI: median abs log half-width "
            f"{_g(g.get('median_abs_log_ci_half_width'), '.2f')} |",
            f"| one-step route | the sweep at depths {o['depths']} + the probe ({o['probe_seeds']} seeds) at every depth | "
            f"{o['cells']} | {o['forward_passes']} | {o['core_seconds']:.0f} (probe {o['probe_seconds']:.0f}) | "
            f"median abs log error: {errs} |",
            "", f"Cost ratio (one-step route / grid search): **{_g(cost.get('core_seconds_ratio'), '.3f')}** in "
            f"core-seconds, {_g(cost.get('cells_ratio'), '.3f')} in training runs."]


#: a net whose final loss at its optimum is above this fraction of the chance loss does not learn
#: (the one threshold, shared with the sweep's report: amutheory.train.learning)
BARELY_LEARNS = DOES_NOT_LEARN

#: what each optimum flag means (amutheory.train.search)
FLAG_MEANING = {"edge": "the best rate is at the grid's end, the optimum may lie beyond it",
                "next-to-divergence": "a grid neighbour of the best rate diverged",
                "all-diverged": "every rate diverged, left out of its fit",
                "tie": "several rates share the best score",
                "few-points": "fewer than three rates in the smooth window, no CI",
                "no-curvature": "the window's parabola does not open upward, no CI",
                "outside": "the smooth optimum is held at its window's end, no CI",
                "seed-at-divergence": "a seed's loss still falls at the last rate below its own divergence, its "
                                      "optimum held there",
                "seed-at-edge": "a seed's best rate is at the grid's end, its optimum held there",
                "seed-outside": "a seed's vertex lies beyond its one-step window, held at the window's end",
                "seed-few-points": "fewer than three rates in a seed's window, its best rate kept",
                "seed-no-curvature": "a seed's parabola does not open upward, its best rate kept"}


def caveats(summary: dict) -> list[str]:
    """What a reader must know before trusting a verdict, read off the run (not typed)."""
    out = []
    studies = summary["studies"]
    weak = [f"{name} ({_point(s, r[s['axis']])}: {_g(r.get('final_loss_at_optimum'), '.2f')})"
            for name, s in studies.items() for r in s["rows"] if row_learns(r) is False]
    if weak:
        out.append(f"* Not learning (at the optimum, the training loss over the last tenth of the steps is above "
                   f"{BARELY_LEARNS:g} x the chance loss ln(classes)): {', '.join(weak)}. There eta*_train is the "
                   "fastest rate a barely-learning net tolerates, not the optimum of a net that learns.")
    flagged = [f"{name} ({_point(s, r[s['axis']])}: {', '.join(r['flags'])})" for name, s in studies.items()
               for r in s["rows"] if r.get("flags")]
    if flagged:
        seen = sorted({f.split(":")[0] for s in studies.values() for r in s["rows"] for f in r.get("flags") or []})
        meaning = "; ".join(f"{f}: {FLAG_MEANING[f]}" for f in seen if f in FLAG_MEANING)
        out.append(f"* Flagged optima: {'; '.join(flagged)}." + (f" ({meaning}.)" if meaning else ""))
    flat = [f"{name} ({_point(s, r[s['axis']])})" for name, s in studies.items() for r in s["rows"]
            if r.get("eta_star_train_ci") and r["eta_star_train_ci"][0] == r["eta_star_train_ci"][1]]
    if flat:
        out.append(f"* A zero-width CI: {', '.join(flat)}: every seed's optimum is held at the same rate (the grid's "
                   "end or a divergence), so eta*_train there is a bound, not an estimate, and the CI of a fit through "
                   "it is too narrow. (Noted after the 2026-11-28 run: the per-seed optimum keeps a point whose seeds "
                   "are all held; the registration did not foresee it.)")
    return out


def markdown_sections(summary: dict, figure_dir: str = "figures", replicate: list | None = None) -> list[str]:
    t = summary["transfer"]
    lines = ["### Verdict per claim", ""]
    if replicate:
        lines += [REPLICATE_NOTE, ""]
    lines += verdict_table(summary, replicate) + ["", learning_note(summary)]
    skipped = not_run_lines(summary)
    if skipped:
        lines += [""] + skipped
    notes = caveats(summary)
    if notes:
        lines += ["", "Read with:", ""] + notes
    em = eta_max_lines(summary)
    if em:
        lines += [""] + em
    lines += ["", f"### Zero-shot transfer across depth ({t['study']}: calibrated at L = {t['calibration']}, "
              f"verified by fresh sweeps; a rule transfers within a factor {t['tolerance']:g})", "",
              "Relative error of each rule's predicted rate against eta*_train (95% CI):", ""]
    lines += transfer_table(t["rules"], t["targets"])
    for seg in t.get("segments") or []:
        tg = seg["targets"]
        lines += ["", f"The papers' segmented scheme: calibrated at L = {seg['calibration']}, predicting L = "
                  f"{tg[0] if len(tg) == 1 else f'{tg[0]}..{tg[-1]}'}:", ""]
        lines += transfer_table(seg["rules"], seg["targets"])
    if "bridge" in t:
        be = t["bridge_exponents"]
        lines += ["", "### The bridge: eta*_train / eta*_onestep against depth and horizon", "",
                  "One-step exponent (probe, seed mean): "
                  f"{_est(be['onestep-mean'].get('exponent'), be['onestep-mean'].get('exponent_ci'))}; typical "
                  f"(geometric mean): {_est(be['onestep-typical'].get('exponent'), be['onestep-typical'].get('exponent_ci'))}.",
                  ""]
        lines += bridge_table(t["bridge"]["onestep-mean"], be)
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
        f = s["fit"] or {}
        lines.append(f"| {name} | {s['what']} | {sweep_axis(s)} | {_optima(s)} | "
                     f"{_est(f.get('exponent'), f.get('exponent_ci'))} | {_deepest(summary, name)} | "
                     f"{s['cost']['core_seconds']:.0f} |")
    return lines


def with_terms(lines: list[str], at: int, summary: dict, heading: str = "### Terms") -> list[str]:
    """``lines`` with a terms section (the terms the whole page uses, each defined once) inserted before line
    ``at``."""
    terms = terms_lines("\n".join(lines), summary)
    return lines[:at] + ([heading, ""] + terms + [""] if terms else []) + lines[at:]


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
    for line in method_lines(summary):
        lines += [line, ""]
    at = len(lines)
    lines += markdown_sections(summary)
    lines += ["", "### Studies", ""] + study_table(summary)
    lines += ["", "Each study's folder holds its own `report.md`, `summary.json` and loss-vs-lr figure."]
    return "\n".join(with_terms(lines, at, summary)) + "\n"


def write_outputs(out: Path, summary: dict, figures: bool) -> None:
    out = Path(out)
    from amutheory.jsonio import json_safe

    (out / "summary.json").write_text(json.dumps(json_safe(summary), indent=1) + "\n")
    if figures:
        from amutheory.protocol.figures import write_figures

        write_figures(out / "figures", summary)
    (out / "report.md").write_text(markdown(summary))
