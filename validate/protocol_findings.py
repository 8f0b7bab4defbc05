"""Write ``docs/findings/protocol.md`` (and, with ``--readme FILE``, a block of tables in that file)
from a protocol run's ``summary.json`` and, with ``--replicate``, its replicate on disjoint seeds (never typed by hand).

Reads the run folder of ``amutheory validate --preset protocol --out results/protocol-2026-11-27`` (registered in
``validate/plans/REGISTRATION_PROTOCOL_2026_11_27.md``), keeps its ``summary.json`` and ``protocol.json`` (and the
replicate's ``summary.json``) beside the page in ``docs/findings/protocol/`` so the page regenerates without the
runs, copies the figures to ``docs/figures/protocol_*.png`` and writes the page: the verdicts with the replicate's
estimate beside each, the sizes beside the papers' own, every study.  With ``--readme FILE`` it also replaces the
block between ``<!-- protocol:begin -->`` and ``<!-- protocol:end -->`` in FILE with the verdict table.

    python validate/protocol_findings.py --run results/protocol-2026-11-27 \\
        --replicate results/protocol-2026-11-27-replicate --readme README.md
    python validate/protocol_findings.py          # regenerate from the kept summaries
    python validate/protocol_findings.py --recheck /tmp/protocol-again   # + a second run's bit-for-bit comparison
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- protocol:begin -->", "<!-- protocol:end -->"
RUN = "results/protocol-2026-11-27"
FIGURES = ("transfer_rules.png", "bridge.png", "claims.png")


def origin(protocol_json: dict, run: str) -> dict:
    """The preset a run's ``protocol.json`` is (by fingerprint, with its first seed), the command that made it, and
    the registration file that names the preset's fingerprint (a protocol built in Python: no preset, no
    registration)."""
    from amutheory.protocol.presets import PRESETS, fingerprint

    studies = protocol_json["protocol"]["studies"]
    first = studies[0].get("first_seed", 0)
    for name, preset in PRESETS.items():
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
    return [re.sub(r"\(FIGDIR/([a-z_]+)\.png\)", lambda m: f"({prefix}protocol_{m.group(1)}.png)", ln) for ln in lines]


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
            f"with an estimate in both runs" + (f"; outside for {', '.join(out)}" if out else "") +
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


def findings_page(summary: dict, protocol_json: dict, org: dict, extra: list | None = None,
                  replicate: list | None = None, out_dir: Path | None = None) -> str:
    from amutheory.protocol.report import markdown_sections, sizes_table, study_table

    reg = org["registration"]
    head = ["# Does the learning rate transfer? The registered protocol", "",
            f"Generated by `python validate/protocol_findings.py` from `{org['command']}` (protocol fingerprint "
            f"`{summary['fingerprint']}`" + (f", registered in [{Path(reg).name}](../../{reg}) before it ran"
                                             if reg else ", not registered") +
            "; the verdicts are read from this run, the summaries kept in `docs/findings/protocol/`).",
            f"The run: {_run_line(summary)}.", "", summary["description"], ""]
    if summary.get("size_note"):
        head += [f"**Size**: {summary['size_note']}.", ""]
    body = _figures(markdown_sections(summary, figure_dir="FIGDIR", replicate=replicate), "../figures/")
    sizes = ["## The sizes, beside the papers' own", "",
             "Every study keeps the papers' score (the mean training loss over the run) and optimizer (plain SGD; "
             "Adam for the Adam study); the data (digits or generated data instead of CIFAR-10), the width, batch, "
             "steps and depths differ, as below, so eta*_train and the exponents compare with the papers' in their "
             "depth dependence, not in value. The papers' row is their protocol as [theory.md](../theory.md) section 2 "
             "states it.", "", *sizes_table(protocol_json["protocol"]), ""]
    posthoc = out_dir / "protocol_learning_depths.md" if out_dir else None
    if posthoc is not None and posthoc.is_file():
        extra = [*(extra or []), "## Added after the results: the depths that learn", "",
                 "Not registered: the same cells re-read on the depths whose nets learn in each run "
                 "([protocol_learning_depths.md](protocol_learning_depths.md), "
                 "`python validate/studies/protocol_learning_depths.py`).", ""]
    tail = ["", *(extra or []), *sizes, "## Every study", "", *study_table(summary), "",
            "Each study's loss-against-learning-rate curves (optimum starred) are in its folder of the run "
            "(`RUN/STUDY/transfer.png`).", ""]
    return "\n".join(head + body + tail) + "\n"


def readme_rows(summary: dict, replicate: list | None = None) -> list[str]:
    """The README's rows under training: one per claim (verdict, estimate, depths that learn, the replicate) and the
    bridge (is eta*_train / eta*_onestep constant in depth at the longest horizon, per width?)."""
    from amutheory.protocol.report import claim_numbers, learning_points, replicate_cell

    rows = {r["claim"]: r for r in replicate or []}
    lines = ["| claim, under training | verdict | numbers (95% CI) | points that learn | replicate on disjoint seeds |",
             "|---|---|---|---|---|"]
    for c in summary["claims"]:
        lines.append(f"| {c['statement']} | **{c['verdict']}** | {claim_numbers(c)} | {learning_points(c)} | "
                     f"{replicate_cell(rows.get(c['name']))} |")
    for name, b in (summary.get("bridges") or {}).items():
        T = max(b["onestep-mean"], key=int)
        row = b["onestep-mean"][T]
        const = {True: "**holds**", False: "**fails**", None: "n/a"}[row["constant_in_depth"]]
        lines.append(f"| the one-step eta* equals the training optimum up to a constant ({name}, width {b['width']}, "
                     f"T = {T}) | {const} | ratio slope in ln L {row['slope']:+.2f} "
                     f"[{row['slope_ci'][0]:+.2f}, {row['slope_ci'][1]:+.2f}] | - | - |")
    return lines


def readme_block(summary: dict, org: dict, replicate: list | None = None) -> str:
    lines = [BEGIN, "", f"Generated by `python validate/protocol_findings.py` from `{org['command']}` (registered in "
             f"`{org['registration']}` before it ran; a claim whose nets do not learn at this size is `untestable`); "
             "details, every study and the sizes beside the papers': [docs/findings/protocol.md](docs/findings/protocol.md).",
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
    p.add_argument("--run", default=None, help=f"the protocol's run folder (e.g. {RUN}; default: the kept summaries)")
    p.add_argument("--replicate", default=None, metavar="FOLDER", help="its replicate on disjoint seeds")
    p.add_argument("--readme", default=None, help="also replace the protocol block of this markdown file")
    p.add_argument("--out", default=str(ROOT / "docs" / "findings" / "protocol.md"))
    p.add_argument("--recheck", default=None, metavar="FOLDER",
                   help="a second run of the same protocol: compare its records and verdicts with --run's")
    a = p.parse_args(argv)
    out = Path(a.out)
    keep = out.parent / out.stem
    keep.mkdir(parents=True, exist_ok=True)
    run = Path(a.run) if a.run else None
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
        print(f"error: {e}; run `amutheory validate --preset protocol --out {RUN}` first", file=sys.stderr)
        return 2
    if not (keep / "summary.json").is_file():
        print(f"error: no kept summary in {keep}; give --run FOLDER", file=sys.stderr)
        return 2
    folders = keep / "runs.json"  # the run folders the kept summaries came from, named in the commands
    known = json.loads(folders.read_text()) if folders.is_file() else {}
    known.update({k: v for k, v in (("run", a.run), ("replicate", a.replicate)) if v})
    folders.write_text(json.dumps(known, indent=1) + "\n")
    summary = json.loads((keep / "summary.json").read_text())
    protocol_json = json.loads((keep / "protocol.json").read_text())
    org = origin(protocol_json, known.get("run", RUN))
    rows, extra = None, []
    if (keep / "replicate_summary.json").is_file():
        rep = json.loads((keep / "replicate_summary.json").read_text())
        rep_org = origin(json.loads((keep / "replicate_protocol.json").read_text()),
                         known.get("replicate", f"{RUN}-replicate"))
        rows = replicate_rows(summary, rep)
        extra += replicate_lines(rows, rep_org, rep)
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
                shutil.copyfile(run / "figures" / name, figures / f"protocol_{name}")
    out.write_text(findings_page(summary, protocol_json, org, extra, rows, out.parent))
    if readme:
        start, end = text.index(BEGIN), text.index(END) + len(END)
        readme.write_text(text[:start] + readme_block(summary, org, rows) + text[end:])
    print(f"wrote {out}" + (f" and the block in {readme}" if readme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
