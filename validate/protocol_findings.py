"""Write a registered protocol's findings page (and, with ``--readme FILE``, a block of tables in that file)
from a protocol run's ``summary.json`` and, with ``--replicate``, its replicate on disjoint seeds (never typed by hand).

Each registration has its page, kept summaries and figures (``--registration``; the default is the current one):

* ``2026-11-28r`` (``validate/plans/REGISTRATION_PROTOCOL_2026_11_28.md``, preset ``protocol-2026-11-28``):
  ``docs/findings/protocol.md``, kept in ``docs/findings/protocol/``, from ``results/protocol-2026-11-28r`` and
  ``results/protocol-2026-11-28r-replicate``;
* ``2026-11-27b`` (``validate/plans/REGISTRATION_PROTOCOL_2026_11_27B.md``): ``docs/findings/protocol_2026_11_27b.md``,
  kept in ``docs/findings/protocol_2026_11_27b/``, from ``results/protocol-2026-11-28`` and
  ``results/protocol-2026-11-28-replicate``;
* ``2026-11-27`` (``validate/plans/REGISTRATION_PROTOCOL_2026_11_27.md``): ``docs/findings/protocol_2026_11_27.md``,
  kept in ``docs/findings/protocol_2026_11_27/``, from ``results/protocol-2026-11-27`` and its replicate.

The script keeps the run's ``summary.json`` and ``protocol.json`` (and the replicate's) beside the page so the page
regenerates without the runs, copies the figures to ``docs/figures/<prefix>*.png`` and writes the page: first "Does
it replicate?" (the replicate against the registration's targets), the coverage of the interval method (simulated,
kept in ``coverage.json``), the terms the page uses, the verdicts with the replicate's estimate beside each, the
largest stable rate, the sizes beside the papers' own, every study.  With ``--readme FILE`` it also replaces the block
between ``<!-- protocol:begin -->`` and ``<!-- protocol:end -->`` in FILE with the verdict table.

    python validate/protocol_findings.py --run results/protocol-2026-11-28r \\
        --replicate results/protocol-2026-11-28r-replicate --readme README.md
    python validate/protocol_findings.py          # regenerate from the kept summaries
    python validate/protocol_findings.py --registration 2026-11-27   # the page of 2026-11-27, from its kept summaries
    python validate/protocol_findings.py --recheck /tmp/protocol-again   # + a second run's bit-for-bit comparison
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- protocol:begin -->", "<!-- protocol:end -->"
FIGURES = ("transfer_rules.png", "bridge.png", "claims.png")


@dataclasses.dataclass(frozen=True)
class Registration:
    """Where one registration's page, kept summaries and figures live, and what its replicate check is held to."""

    label: str
    title: str
    page: str  # relative to the repository; the kept summaries go to the folder of the page's stem beside it
    run: str
    replicate: str
    figure_prefix: str  # docs/figures/<prefix><figure>.png
    wall_minutes: float | None = None  # the registration's wall-time target per run (None: no target)
    targets: bool = False  # the replicate targets of issue 48 (verdicts differing, untestable, estimates inside)
    posthoc: str | None = None  # a page of post-hoc readings of this run, beside the findings page


REGISTRATIONS = {
    "2026-11-28r": Registration(
        "2026-11-28r", "Does the learning rate transfer? The registered protocol of 2026-11-28 (each seed's own optimum)",
        "docs/findings/protocol.md", "results/protocol-2026-11-28r", "results/protocol-2026-11-28r-replicate",
        "protocol_2026_11_28r_", wall_minutes=45, targets=True),
    "2026-11-27b": Registration(
        "2026-11-27b", "Does the learning rate transfer? The registered protocol of 2026-11-27b (superseded by "
        "[2026-11-28](protocol.md))", "docs/findings/protocol_2026_11_27b.md", "results/protocol-2026-11-28",
        "results/protocol-2026-11-28-replicate", "protocol_2026_11_27b_", wall_minutes=45, targets=True),
    "2026-11-27": Registration(
        "2026-11-27", "Does the learning rate transfer? The registered protocol of 2026-11-27 (superseded by "
        "[2026-11-27b](protocol_2026_11_27b.md))", "docs/findings/protocol_2026_11_27.md",
        "results/protocol-2026-11-27", "results/protocol-2026-11-27-replicate", "protocol_",
        posthoc="protocol_learning_depths.md"),
}
#: the current registration (the page docs/findings/protocol.md): 2026-11-28 (preset protocol-2026-11-28), whose run
#: folders are results/protocol-2026-11-28r[-replicate]
DEFAULT = "2026-11-28r"
#: other names: the run folders of 2026-11-27b carry the label 2026-11-28 (its first, mistaken label)
ALIASES = {"2026-11-28": "2026-11-27b", "per-seed": "2026-11-28r"}
RUN = REGISTRATIONS[DEFAULT].run
#: the issue-48 targets for the replicate check (validate/plans/REGISTRATION_PROTOCOL_2026_11_27B.md)
MAX_DIFFERING, MAX_UNTESTABLE, MIN_INSIDE_OF_12 = 1, 2, 10


def origin(protocol_json: dict, run: str) -> dict:
    """The preset a run's ``protocol.json`` is (by fingerprint, with its first seed), the command that made it, and
    the registration file that names the preset's fingerprint (a protocol built in Python: no preset, no
    registration)."""
    from amutheory.protocol.presets import PRESETS, fingerprint

    studies = protocol_json["protocol"]["studies"]
    first = studies[0].get("first_seed", 0)
    # the dated name first: "protocol" follows the current registration, a dated one stays
    for name, preset in sorted(PRESETS.items(), key=lambda kv: kv[0] == "protocol"):
        moved = dataclasses.replace(preset, studies=tuple(dataclasses.replace(s, first_seed=first)
                                                          for s in preset.studies))
        if fingerprint(moved) == protocol_json["fingerprint"]:
            fp = fingerprint(preset)
            plans = [p for p in sorted((ROOT / "validate" / "plans").glob("REGISTRATION*.md"))
                     if f"**`{fp}`**" in p.read_text()]
            seeds = f" --first-seed {first}" if first else ""
            return {"preset": name, "first_seed": first, "fingerprint": fp,
                    "command": f"amutheory validate --preset {name}{seeds} --out {run}",
                    "registration": plans[0].relative_to(ROOT).as_posix() if plans else None}
    return {"preset": None, "first_seed": first, "fingerprint": protocol_json["fingerprint"], "registration": None,
            "command": f"amutheory.protocol.run_protocol(...) into {run} (protocol "
                       f"{protocol_json['protocol']['name']!r}, not a preset)"}


def _records(folder: Path, studies=None) -> dict:
    """Every cell record of a run folder (timing aside), keyed by its cell key; ``studies``: only these."""
    out = {}
    for table in sorted(folder.glob("*/cells.jsonl")):
        if studies is not None and table.parent.name not in studies:
            continue
        for line in table.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            out.setdefault(rec["key"], {k: v for k, v in rec.items() if k != "timing"})
    return out


def _trained(summary: dict) -> dict:
    runs = summary.get("runs") or [summary.get("this_run", {})]
    return next((r for r in runs if r.get("cells_run")), runs[0])


def _run_line(summary: dict) -> str:
    r = _trained(summary)
    return (f"{r.get('cells_run', 0)} cells trained in {r.get('wall_s', 0) / 60:.1f} min of wall-clock on "
            f"{r.get('workers')} workers x {r.get('threads')} thread ({r.get('device')})"
            + (f"; {r['note']}" if r.get("note") else ""))


def recheck_lines(run: Path, again: Path) -> list[str]:
    """A second run of the same protocol (another folder, e.g. from a fresh clone; the whole protocol or some studies
    with ``--only``) against the first: are the records of the studies it ran equal bit for bit (timing aside), and,
    when both are whole, the verdicts?"""
    fp = [json.loads((folder / "protocol.json").read_text())["fingerprint"] for folder in (run, again)]
    if fp[0] != fp[1]:
        raise ValueError(f"{again} holds protocol {fp[1]}, not {fp[0]}")
    first = json.loads((run / "summary.json").read_text())
    whole = (again / "summary.json").is_file()  # a run of some studies (--only) writes no summary.json
    runs = [json.loads(line) for line in (again / "runs.jsonl").read_text().splitlines() if line.strip()]
    second = json.loads((again / "summary.json").read_text()) if whole else {"runs": runs}
    studies = sorted(p.parent.name for p in again.glob("*/cells.jsonl"))
    a, b = _records(run, studies), _records(again, studies)
    same = sum(1 for k in a if k in b and a[k] == b[k])
    verdicts = (f"verdicts {'identical' if first['verdicts'] == second['verdicts'] else 'DIFFERENT'}" if whole else
                f"a partial run (`--only {' --only '.join(studies)}`): no verdicts to compare")
    return ["## Reproduced", "",
            f"A second run of the same protocol in another folder (`{again}`), from a fresh clone, of "
            f"{'every study' if whole else ', '.join(studies)}: {same} of {len(a)} records equal bit for bit (timing "
            f"aside), {len(b)} records in all; {verdicts}; {_run_line(second)}.", ""]


def _figures(lines: list, prefix: str) -> list:
    """The figure links (``FIGDIR/name.png``) to ``prefix`` + name (e.g. ``../figures/protocol_2026_11_27b_``)."""
    return [re.sub(r"\(FIGDIR/([a-z_]+)\.png\)", lambda m: f"({prefix}{m.group(1)}.png)", ln) for ln in lines]


def replicate_lines(rows: list, rep_origin: dict, rep_summary: dict) -> list[str]:
    """The replicate check in words: how many claims land inside the registered CI."""
    tested = [r for r in rows if r["second_inside_first"] is not None]
    inside = [r for r in tested if r["second_inside_first"]]
    both = [r for r in rows if r["agree"]]
    out = [r["claim"] for r in tested if not r["second_inside_first"]]
    return ["## The replicate on disjoint seeds", "",
            f"`{rep_origin['command']}` (seeds {rep_origin['first_seed']}.., fingerprint "
            f"`{rep_summary['fingerprint']}`): {_run_line(rep_summary)}.", "",
            f"The replicate's estimate lies inside the registered 95% CI for **{len(inside)} of {len(tested)}** claims "
            f"with an estimate in the replicate and a CI in this run" + (f"; outside for {', '.join(out)}" if out else "") +
            f". Each inside the other's CI (the pilot's rule 2): {len(both)} of {len(tested)}. The verdicts are the "
            "registered run's; the replicate's own verdict is in the same column.", "", *transfer_replicate(rep_summary)]


def transfer_replicate(rep_summary: dict) -> list[str]:
    """The zero-shot rules in the registered run (kept summary) and in the replicate: verdict and median error."""
    rep = (rep_summary.get("transfer") or {}).get("rules") or {}
    if not rep:
        return []
    return ["Zero-shot transfer in the replicate (each rule's verdict and median abs log error; the registered run's "
            "are in the transfer table above):", "", "| rule | replicate: verdict | median abs log error |",
            "|---|---|---|"] + [f"| {name} | {r['verdict']} | "
                                f"{'n/a' if r.get('median_abs_log_error') is None else format(r['median_abs_log_error'], '.2f')} |"
                                for name, r in rep.items()] + [""]


# ----------------------------------------------------------------------------- does it replicate?
def wall_minutes(summary: dict) -> tuple:
    """``(minutes, sessions, re-readings)``: the wall-clock of every session of a run folder that trained cells (a
    resumed run: all of them, each with its own analysis), and how many later sessions trained nothing (a
    re-reading of the finished cells, not part of the run's time)."""
    runs = summary.get("runs") or [summary.get("this_run") or {}]
    trained = [r for r in runs if (r.get("cells_run") or 0) > 0] or runs[:1]
    return sum(r.get("wall_s") or 0 for r in trained) / 60, len(trained), len(runs) - len(trained)


def _seeds(org: dict, protocol_json: dict) -> str:
    studies = protocol_json["protocol"]["studies"]
    n, first = studies[0].get("seeds"), org.get("first_seed") or 0
    return f"seeds {first}..{first + n - 1}" if n else f"seeds from {first}"


def _against(value: float, ci: list) -> str:
    """``-0.877 against [-1.141, -0.879]``: two decimals, three where two would print the value on a bound."""
    fmt = "+.2f" if format(value, "+.2f") not in (format(ci[0], "+.2f"), format(ci[1], "+.2f")) else "+.3f"
    return f"{format(value, fmt)} against [{format(ci[0], fmt)}, {format(ci[1], fmt)}]"


def _met(ok: bool) -> str:
    return "yes" if ok else "no"


def replication_section(summary: dict, rep: dict, rows: list, org: dict, rep_org: dict, protocol_json: dict,
                        reg: Registration) -> list[str]:
    """"Does it replicate?": the verdicts that differ, the untestable claims (each with its reason), the replicate's
    estimates inside the registered CI (of the claims with an estimate in both, and of the 12 claims of 2026-11-27)
    and each run's wall time, against the registration's targets where it set them."""
    from amutheory.protocol.presets import PROTOCOL_2026_11_27
    from amutheory.protocol.report import learning_text

    claims = summary["claims"]
    n = len(claims)
    differ = [r for r in rows if r["verdict_a"] != r["verdict_b"]]
    untestable = [c for c in claims if c["verdict"] == "untestable"]
    rep_untestable = sum(c["verdict"] == "untestable" for c in rep["claims"])
    tested = [r for r in rows if r["second_inside_first"] is not None]
    inside = [r for r in tested if r["second_inside_first"]]
    old = [c.name for c in PROTOCOL_2026_11_27.claims]
    old_rows = [r for r in rows if r["claim"] in old]
    old_inside = [r for r in old_rows if r["second_inside_first"]]
    no_estimate = [r["claim"] for r in old_rows if r["second_inside_first"] is None]
    target = reg.targets
    head = "| check | result |" + (" target | met? |" if target else "")
    table = [head, "|---|---|" + ("---|---|" if target else "")]

    def row(check, result, goal=None, ok=None):
        table.append(f"| {check} | {result} |" + (f" {goal or '-'} | {'-' if ok is None else _met(ok)} |"
                                                   if target else ""))

    row("verdicts that differ between the run and the replicate", f"{len(differ)} of {n}",
        f"at most {MAX_DIFFERING}", len(differ) <= MAX_DIFFERING)
    row("claims untestable (this run)", f"{len(untestable)} of {n} (the replicate: {rep_untestable})",
        f"at most {MAX_UNTESTABLE}", len(untestable) <= MAX_UNTESTABLE)
    row("the replicate's estimate inside this run's 95% CI", f"{len(inside)} of {len(tested)} claims with an estimate "
        "in the replicate and a CI in this run")
    if {r["claim"] for r in rows} != set(old):
        row(f"the same, of the {len(old)} claims of 2026-11-27", f"{len(old_inside)} of {len(old)}" +
            (f" ({', '.join(no_estimate)}: no estimate in the replicate or no CI in this run, counted as not "
             "inside)" if no_estimate else ""),
            f"at least {MIN_INSIDE_OF_12}", len(old_inside) >= MIN_INSIDE_OF_12)
    for what, s in (("the run", summary), ("the replicate", rep)):
        minutes, sessions, rereads = wall_minutes(s)
        t = _trained(s)
        row(f"wall time of {what}", f"{minutes:.2f} min on {t.get('workers')} workers x {t.get('threads')} thread "
            f"({t.get('device')})" + (f", {sessions} sessions" if sessions > 1 else "")
            + (f"; then {rereads} re-reading(s) of the finished cells, nothing trained" if rereads else ""),
            f"under {reg.wall_minutes:g} min" if reg.wall_minutes else None,
            minutes < reg.wall_minutes if reg.wall_minutes else None)
    lines = ["## Does it replicate?", "",
             f"The protocol ran twice from the same code and design: the registered run ({_seeds(org, protocol_json)}; "
             f"its verdicts are this page's) and its replicate on disjoint seeds ({_seeds(rep_org, protocol_json)})."
             + (" The targets are issue 48's, fixed in the registration before either run." if target else ""), "",
             *table, ""]
    if differ:
        lines += ["Verdicts that differ:", ""] + [f"* {r['claim']}: {r['verdict_a']} in the run, {r['verdict_b']} in "
                                                 "the replicate." for r in differ] + [""]
    if untestable:
        lines += ["Untestable in this run, and why:", ""]
        for c in untestable:
            because = c.get("reason") if c.get("not_run") else f"not every net it uses learns: " \
                                                                f"{learning_text(c, summary)}"
            lines.append(f"* {c['name']}: {because}" + ("" if because.endswith(".") else "."))
        lines.append("")
    outside = [r for r in tested if not r["second_inside_first"]]
    if outside:
        lines += ["The replicate's estimate outside this run's 95% CI: " + "; ".join(
            f"{r['claim']} ({_against(r['b'], r['a_ci'])})" for r in outside) + ".", ""]
    return lines


# ----------------------------------------------------------------------------- the coverage of the method
def coverage(keep: Path, summary: dict, recompute: bool = False) -> dict | None:
    """The simulated coverage of the registered interval method (``amutheory.protocol.coverage``), kept in
    ``keep/coverage.json``: written when missing (or with ``recompute``), read otherwise.  Only for summaries of the
    methods it simulates (the smooth or the per-seed optimum with the jackknife); ``None`` for others."""
    optimum = summary.get("optimum")
    if optimum not in ("smooth", "per-seed") or summary.get("interval") != "jackknife":
        return None
    kept = keep / "coverage.json"
    if kept.is_file() and not recompute:
        return json.loads(kept.read_text())
    import numpy as np

    from amutheory.protocol.coverage import AT_EDGE, NEAR_EDGE, NOISY, REALISTIC, simulate

    opts = dict(optimum=optimum)  # at the method's registered window
    scenarios = {"realistic": REALISTIC, "noisy": NOISY}
    if optimum == "per-seed":
        scenarios.update({"near_edge": NEAR_EDGE, "at_edge": AT_EDGE})
    with np.errstate(over="ignore"):  # a diverging bootstrap replicate's exp overflows to inf: not a CI we use
        data = {"command": "python validate/protocol_findings.py --coverage (amutheory.protocol.coverage.simulate "
                           f"of {', '.join(n.upper() for n in scenarios)}, optimum {optimum})",
                **{name: simulate(sc, **opts) for name, sc in scenarios.items()}}
    kept.write_text(json.dumps(data, indent=1) + "\n")
    return data


def _rel(path: Path) -> str:
    path = Path(path).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def coverage_lines(cov: dict | None, keep: Path) -> list[str]:
    if not cov:
        return []
    r, z = cov["realistic"], cov["noisy"]
    depths = ", ".join(map(str, r["depths"]))
    per_seed = r.get("optimum") == "per-seed"

    def pct(d):
        return f"{100 * d['optimum_coverage']:.1f}% and {100 * d['exponent_coverage']:.1f}%"

    text = (f"The method, on synthetic sweeps with a known optimum (`amutheory.protocol.coverage.simulate`: {r['reps']} "
            f"simulated studies of {r['seeds']} seeds, 9 + 2 rates, depths {depths}, analysed as the protocol analyses "
            f"its runs): at the seed-to-seed spread of the 2026-11-27 run (sigma_u = {r['scenario']['sigma_u']:g}), "
            f"the per-point 95% CI of eta*_train covers the true optimum in **{100 * r['optimum_coverage']:.1f}%** of "
            f"{r['optimum_cis']} CIs and the exponent's CI the true exponent in "
            f"**{100 * r['exponent_coverage']:.1f}%** of {r['reps']}. At twice that spread (sigma_u = "
            f"{z['scenario']['sigma_u']:g}): {pct(z)}")
    if per_seed:
        near, at = cov["near_edge"], cov["at_edge"]
        text += (f". With each seed diverging {near['scenario']['edge']:g} (in ln rate) above its own optimum (as in "
                 f"the 2026-11-27b runs): {pct(near)}. A stated limit: with divergence {at['scenario']['edge']:g} above "
                 f"it, the seeds' optima are held at their divergence and the CIs cover {pct(at)}")
    else:
        text += (" (a missing CI counts as not covering), a stated limit: a study whose seeds disagree that much reads "
                 "inconclusive")
    text += (f". Kept in `{_rel(keep / 'coverage.json')}` (python validate/protocol_findings.py regenerates it; "
             "`--coverage` recomputes it).")
    return ["## Do the intervals cover?", "", text, ""]


# ----------------------------------------------------------------------------- the page
def findings_page(summary: dict, protocol_json: dict, org: dict, extra: list | None = None,
                  replicate: list | None = None, out_dir: Path | None = None, reg: Registration | None = None,
                  keep: Path | None = None, first: list | None = None) -> str:
    """The page: the head (command, run, method), ``first`` (does it replicate?, the coverage), the terms, the
    verdicts and sections of :func:`amutheory.protocol.report.markdown_sections`, ``extra``, the sizes, every
    study."""
    from amutheory.protocol.report import markdown_sections, method_lines, sizes_table, study_table, with_terms

    reg = reg or REGISTRATIONS[DEFAULT]
    regen = "python validate/protocol_findings.py" + ("" if reg.label == DEFAULT else f" --registration {reg.label}")
    kept = f", the summaries kept in `{_rel(keep)}/`" if keep else ""
    plan = org["registration"]
    head = [f"# {reg.title}", "",
            f"Generated by `{regen}` from `{org['command']}` (protocol fingerprint "
            f"`{summary['fingerprint']}`" + (f", registered in [{Path(plan).name}](../../{plan}) before it ran"
                                             if plan else ", not registered") +
            f"; the verdicts are read from this run{kept}).",
            f"The run: {_run_line(summary)}.", "", summary["description"], ""]
    if summary.get("size_note"):
        head += [f"**Size**: {summary['size_note']}.", ""]
    for line in method_lines(summary):
        head += [line, ""]
    head += [*(first or [])]
    at = len(head)
    body = _figures(markdown_sections(summary, figure_dir="FIGDIR", replicate=replicate),
                    f"../figures/{reg.figure_prefix}")
    sizes = ["## The sizes, beside the papers' own", "",
             "Every study keeps the papers' score (the mean training loss over the run) and optimizer (plain SGD; "
             "Adam for the Adam study); the data (digits or generated data instead of CIFAR-10), the width, batch, "
             "steps and depths differ, as below, so eta*_train and the exponents compare with the papers' in their "
             "depth dependence, not in value. The papers' row is their protocol as [theory.md](../theory.md) section 2 "
             "states it.", "", *sizes_table(protocol_json["protocol"]), ""]
    posthoc = out_dir / reg.posthoc if out_dir and reg.posthoc else None
    if posthoc is not None and posthoc.is_file():
        extra = [*(extra or []), "## Added after the results: the depths that learn", "",
                 "Not registered: the same cells re-read on the depths whose nets learn in each run "
                 f"([{reg.posthoc}]({reg.posthoc}), `python validate/studies/protocol_learning_depths.py`).", ""]
    tail = ["", *(extra or []), *sizes, "## Every study", "", *study_table(summary), "",
            "Each study's loss-against-learning-rate curves (optimum starred) are in its folder of the run "
            "(`RUN/STUDY/transfer.png`).", ""]
    return "\n".join(with_terms(head + body + tail, at, summary, heading="## Terms")) + "\n"


def readme_rows(summary: dict, replicate: list | None = None) -> list[str]:
    """The README's rows under training: one per claim (verdict, estimate, depths that learn, the replicate) and the
    bridge (is eta*_train / eta*_onestep constant in depth at the longest horizon, per width?)."""
    from amutheory.protocol.report import _est, claim_numbers, learning_text, replicate_cell, verdict_cell

    rows = {r["claim"]: r for r in replicate or []}
    lines = ["| claim, under training | verdict | numbers (95% CI) | nets that learn | replicate on disjoint seeds |",
             "|---|---|---|---|---|"]
    for c in summary["claims"]:
        lines.append(f"| {c['statement']} | {verdict_cell(c['verdict'])} | {claim_numbers(c, summary)} | "
                     f"{learning_text(c, summary)} | {replicate_cell(rows.get(c['name']))} |")
    for name, b in (summary.get("bridges") or {}).items():
        T = max(b["onestep-mean"], key=int)
        row = b["onestep-mean"][T]
        const = {True: "**holds**", False: "**fails**"}.get(row.get("constant_in_depth"), "inconclusive")
        lines.append(f"| the one-step eta* equals the training optimum up to a constant ({name}, width {b['width']}, "
                     f"T = {T}) | {const} | ratio slope in ln L "
                     f"{_est(row.get('slope'), row.get('slope_ci'), '+.2f')} | - | - |")
    return lines


def readme_block(summary: dict, org: dict, replicate: list | None = None, page: str = "docs/findings/protocol.md",
                 regen: str = "python validate/protocol_findings.py") -> str:
    plan = f"registered in `{org['registration']}` before it ran" if org.get("registration") else "not registered"
    lines = [BEGIN, "", f"Generated by `{regen}` from `{org['command']}` ({plan}; a claim whose nets do not learn at "
             "this size is `untestable`); "
             f"details, every study, the terms and the sizes beside the papers': [{page}]({page}).",
             "", *readme_rows(summary, replicate), "", END]
    return "\n".join(lines)


def _design(protocol_json: dict) -> dict:
    """A ``protocol.json``'s definition without its seeds: two runs of one design on other seeds compare equal."""
    d = json.loads(json.dumps(protocol_json["protocol"]))
    for study in d["studies"]:
        study.pop("first_seed", None)
    return d


def _keep(folder: Path | None, keep: Path, names: dict) -> None:
    if folder is None:
        return
    for src, dst in names.items():
        if not (folder / src).is_file():
            raise FileNotFoundError(f"{folder / src} not found")
        shutil.copyfile(folder / src, keep / dst)


def main(argv=None) -> int:
    from amutheory.protocol.replicate import replicate_rows

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--registration", default=DEFAULT, choices=sorted({*REGISTRATIONS, *ALIASES}),
                   help=f"which registration's page (default {DEFAULT}, the current one: docs/findings/protocol.md; "
                        "2026-11-27: docs/findings/protocol_2026_11_27.md)")
    p.add_argument("--run", default=None, help="the protocol's run folder (e.g. the registration's, "
                                               f"{RUN}; default: the kept summaries)")
    p.add_argument("--replicate", default=None, metavar="FOLDER", help="its replicate on disjoint seeds")
    p.add_argument("--readme", default=None, help="also replace the protocol block of this markdown file")
    p.add_argument("--out", default=None, help="the page (default: the registration's)")
    p.add_argument("--keep", default=None, metavar="FOLDER",
                   help="where the summaries are kept (default: the folder of the page's stem beside it)")
    p.add_argument("--coverage", action="store_true", help="recompute the kept coverage simulation (about 10 s)")
    p.add_argument("--recheck", default=None, metavar="FOLDER",
                   help="a second run of the same protocol: compare its records and verdicts with --run's")
    a = p.parse_args(argv)
    reg = REGISTRATIONS[ALIASES.get(a.registration, a.registration)]
    out = Path(a.out) if a.out else ROOT / reg.page
    keep = Path(a.keep) if a.keep else out.parent / out.stem
    run = Path(a.run) if a.run else None
    if run or a.replicate:
        keep.mkdir(parents=True, exist_ok=True)
    if a.replicate:  # before anything is copied: the replicate must be the same design on other seeds
        base = (run or keep) / "protocol.json"
        other = Path(a.replicate) / "protocol.json"
        if base.is_file() and other.is_file():
            first, second = json.loads(base.read_text()), json.loads(other.read_text())
            if _design(first) != _design(second):
                print(f"error: --replicate {a.replicate} is not a run of the same protocol on other seeds (protocol "
                      f"{second['fingerprint']} against {first['fingerprint']})", file=sys.stderr)
                return 2
    try:
        _keep(run, keep, {"summary.json": "summary.json", "protocol.json": "protocol.json"})
        _keep(Path(a.replicate) if a.replicate else None, keep,
              {"summary.json": "replicate_summary.json", "protocol.json": "replicate_protocol.json"})
    except FileNotFoundError as e:
        print(f"error: {e}; run `amutheory validate --preset protocol --out {reg.run}` first", file=sys.stderr)
        return 2
    if not (keep / "summary.json").is_file():
        print(f"error: no kept summary in {keep}; give --run FOLDER (e.g. --run {reg.run} --replicate "
              f"{reg.replicate})", file=sys.stderr)
        return 2
    folders = keep / "runs.json"  # the run folders the kept summaries came from, named in the commands
    known = json.loads(folders.read_text()) if folders.is_file() else {}
    known.update({k: v for k, v in (("run", a.run), ("replicate", a.replicate)) if v})
    folders.write_text(json.dumps(known, indent=1) + "\n")
    summary = json.loads((keep / "summary.json").read_text())
    protocol_json = json.loads((keep / "protocol.json").read_text())
    org = origin(protocol_json, known.get("run", reg.run))
    rows, extra, first = None, [], []
    if (keep / "replicate_summary.json").is_file():
        rep = json.loads((keep / "replicate_summary.json").read_text())
        rep_org = origin(json.loads((keep / "replicate_protocol.json").read_text()),
                         known.get("replicate", reg.replicate))
        rows = replicate_rows(summary, rep)
        first += replication_section(summary, rep, rows, org, rep_org, protocol_json, reg)
        extra += replicate_lines(rows, rep_org, rep)
    first += coverage_lines(coverage(keep, summary, a.coverage), keep)
    recheck = keep / "recheck.json"  # the comparison needs both runs' cells: its lines are kept, not recomputed
    if a.recheck:
        if run is None:
            print("error: --recheck needs --run", file=sys.stderr)
            return 2
        recheck.write_text(json.dumps(recheck_lines(run, Path(a.recheck)), indent=1) + "\n")
    if recheck.is_file():
        extra += json.loads(recheck.read_text())
    readme = Path(a.readme) if a.readme else None
    text = readme.read_text() if readme else ""
    if readme and (BEGIN not in text or END not in text):
        print(f"error: {readme} has no {BEGIN} ... {END} block", file=sys.stderr)
        return 2
    if run is not None:
        figures = out.parent.parent / "figures"  # docs/findings/protocol.md -> docs/figures
        figures.mkdir(parents=True, exist_ok=True)
        for name in FIGURES:
            if (run / "figures" / name).is_file():
                shutil.copyfile(run / "figures" / name, figures / f"{reg.figure_prefix}{name}")
    out.write_text(findings_page(summary, protocol_json, org, extra, rows, out.parent, reg, keep, first))
    if readme:
        start, end = text.index(BEGIN), text.index(END) + len(END)
        page = Path(os.path.relpath(out.resolve(), readme.resolve().parent)).as_posix()
        regen = "python validate/protocol_findings.py" + ("" if reg.label == DEFAULT else
                                                           f" --registration {reg.label}")
        readme.write_text(text[:start] + readme_block(summary, org, rows, page, regen) + text[end:])
    print(f"wrote {out}" + (f" and the block in {readme}" if readme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
