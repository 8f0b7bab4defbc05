"""One campaign's configs at two or more widths, side by side: is a miss a finite-width effect?

A campaign compares the infinite-width law with nets of one width ``n``.  Where the derived
exponent falls outside the measured CI, the question is whether the law is wrong or the width is
too small for the depths measured (``K / n`` up to 4 in the full-cpu preset).  :func:`compare_widths`
reads finished campaign folders measured at different widths (a ``full-cpu`` run, e.g. ``results/quick``
as that preset's output was called before issue 33, at n = 64 and
``results/resnet-wide`` at n = 128, say), matches their configs by name (same spec apart from the
width, same depths and seeds) and gives, per config:

* per width: the fitted exponent of ``eta*`` over the deepest three depths with its 95% CI, whether
  the derived exponent lies inside, and the held-out verdicts of that campaign;
* the ``n -> oo`` limit of that exponent, :func:`amutheory.stats.extrapolate_in_width` (a line
  in ``1/n``; two widths: Richardson), with its CI, and whether the derived exponent lies inside;

and, over all configs, the mean offset of the measured exponent from the derived one at each
width and in the limit (:func:`pooled_offsets`), which shows a bias common to every convention.

A miss that closes as ``n`` grows, and whose limit holds the derived exponent, is finite width.
With two widths the ``1/n`` form of the correction is assumed, not tested.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from amutheory import stats
from amutheory.campaign.common import LEVEL, N_BOOT, STATISTICS
from amutheory.campaign.presets import CampaignConfig
from amutheory.campaign.results import load_measurement, read_results
from amutheory.spec import ArchSpec

#: depths of the fit: the deepest three of a config, as the campaign's "deepest" fit
DEEPEST = 3


def _load_run(folder) -> dict:
    """``{"dir", "summary" (by config name), "configs" (CampaignConfig by name), "blocks"}`` of a
    finished campaign folder; ValueError naming the file that is missing or unreadable."""
    path = Path(folder)
    run = {"dir": str(path)}
    for name in ("campaign.json", "summary.json", "results.csv"):
        if not (path / name).is_file():
            raise ValueError(f"{path} is not a finished campaign folder: no {name} (run `amutheory validate` "
                             f"with --out {path} first)")
    try:
        meta = json.loads((path / "campaign.json").read_text())
        summary = json.loads((path / "summary.json").read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: unreadable JSON ({exc})") from None
    run["summary"] = {c["name"]: c for c in summary.get("configs", [])}
    run["configs"] = {name: CampaignConfig(name, ArchSpec(**c["spec"]), tuple(c["depths"]),
                                           tuple(c["calibration_depths"]), tuple(c["seeds"]))
                      for name, c in meta.get("configs", {}).items()}
    run["blocks"] = read_results(path / "results.csv")[0]
    return run


def _same_but_width(a: CampaignConfig, b: CampaignConfig) -> bool:
    return a.spec.with_(width=1) == b.spec.with_(width=1) and a.depths == b.depths


def _width_row(cfg: CampaignConfig, res: dict, statistic: str, derived: float) -> dict:
    deep = (res.get("fitted_exponents", {}).get(statistic) or {}).get("deepest") or {}
    ci = deep.get("ci")
    return {"width": cfg.spec.width, "K_over_n": [d / cfg.spec.width for d in cfg.depths[-DEEPEST:]],
            "exponent": deep.get("exponent"), "ci": ci,
            "derived_inside_ci": None if not ci or None in ci else bool(ci[0] <= derived <= ci[1]),
            "passed": res.get("passed"), "passed_joint": res.get("passed_joint"),
            "max_rel_error": res.get("max_rel_error"), "max_rel_error_geo": res.get("max_rel_error_geo")}


def compare_config(name: str, runs: list, statistic: str = "mean", n_boot: int = N_BOOT) -> dict:
    """The comparison of config ``name`` across ``runs`` (:func:`_load_run` dicts, one per width)."""
    return _compare_config(name, runs, statistic, n_boot)[0]


def _compare_config(name: str, runs: list, statistic: str, n_boot: int):
    """``(comparison dict, (WidthExtrapolation, seed lists per width) or None)``."""
    cfgs = [r["configs"][name] for r in runs]
    results = [r["summary"][name] for r in runs]
    derived = results[0].get("derived_exponent_value")
    out = {"name": name, "derived_exponent": results[0].get("derived_exponent"), "derived_exponent_value": derived,
           "depths": list(cfgs[0].depths[-DEEPEST:]), "per_width": [], "extrapolated": None}
    if derived is None:
        out["reason"] = "no derived law (forward-unstable convention)"
        return out, None
    order = np.argsort([c.spec.width for c in cfgs])
    depths = out["depths"]
    values = []
    for i in order:
        out["per_width"].append(_width_row(cfgs[i], results[i], statistic, derived))
        meas = load_measurement(Path(runs[i]["dir"]) / "results.csv", cfgs[i], blocks=runs[i]["blocks"])
        values.append(np.stack([meas.s_bar(d) for d in depths], axis=1))
    ext = stats.extrapolate_in_width([cfgs[i].spec.width for i in order], depths, values, level=LEVEL,
                                     n_boot=n_boot, statistic=statistic)
    lo, hi = -ext.limit_ci[1] / 2, -ext.limit_ci[0] / 2  # eta* = sqrt(C / s_bar): exponent -slope/2
    out["extrapolated"] = {"exponent": -ext.limit / 2, "ci": [lo, hi], "coefficient": -ext.coefficient / 2,
                           "derived_inside_ci": bool(lo <= derived <= hi)}
    return out, (ext, tuple(tuple(cfgs[i].seed_list) for i in order))


def _offset(point: float, replicates: np.ndarray) -> dict:
    lo, hi = np.quantile(replicates, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"offset": float(point), "ci": [float(lo), float(hi)], "zero_inside_ci": bool(lo <= 0.0 <= hi)}


def pooled_offsets(configs: list, extrapolations: list) -> dict | None:
    """Mean over configs of (measured exponent - derived exponent), at each width and in the
    ``n -> oo`` limit, with a 95% CI; ``extrapolations[i]`` is ``(WidthExtrapolation, seeds)`` of
    ``configs[i]`` (``None`` without a law).

    The configs of one campaign are *not* independent: seed ``s`` draws the same standard normals
    for every config of a branch type (the init conventions only rescale them), and their
    ``ln s_bar`` correlate strongly across conventions (:mod:`amutheory.campaign.draws` measures it:
    the report's "Shared draws" section; docs/findings/residual_networks.md, "How many independent outcomes
    these counts are").  So the CI is a paired bootstrap: every
    config's replicates were drawn by :func:`amutheory.stats.extrapolate_in_width` with the same
    bootstrap seed and the same seed count, hence the same resampled seed indices, and replicate
    ``b`` of the mean is the mean of the configs' replicates ``b``.  Only configs with the first
    one's widths and seed lists are pooled (the pairing needs them).  A bias common to every
    convention (a finite-width shift, say) shows here even when each config's CI holds its
    derived exponent."""
    pairs = [(c, e) for c, e in zip(configs, extrapolations) if e is not None]
    if not pairs:
        return None
    key = (pairs[0][1][0].widths, pairs[0][1][1])
    pairs = [(c, e) for c, (e, seeds) in pairs if (e.widths, seeds) == key]
    derived = np.array([c["derived_exponent_value"] for c, _ in pairs])
    slopes = np.array([[r["exponent"] for r in c["per_width"]] for c, _ in pairs])       # [C, W]
    reps = np.stack([-e.slope_replicates / 2 for _, e in pairs])                         # [C, B, W]
    limits = np.array([c["extrapolated"]["exponent"] for c, _ in pairs])
    limit_reps = np.stack([-e.limit_replicates / 2 for _, e in pairs])                   # [C, B]
    per_width = []
    for w, width in enumerate(key[0]):
        per_width.append({"width": int(width), **_offset((slopes[:, w] - derived).mean(),
                                                         (reps[:, :, w] - derived[:, None]).mean(axis=0))})
    return {"configs": len(pairs), "per_width": per_width,
            "extrapolated": _offset((limits - derived).mean(), (limit_reps - derived[:, None]).mean(axis=0))}


def compare_widths(folders, statistic: str = "mean", n_boot: int = N_BOOT) -> dict:
    """Compare the configs that every campaign folder of ``folders`` (two or more, at distinct
    widths per config) holds; see the module docstring.  Returns ``{"runs", "statistic",
    "configs", "counts", "pooled", "skipped"}``; ``counts["derived_inside_width_i"]`` counts the
    configs whose CI at their ``i``-th narrowest width holds the derived exponent."""
    if isinstance(folders, (str, Path)) or len(folders) < 2:
        raise ValueError("folders must list at least two campaign folders")
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    runs = [_load_run(f) for f in folders]
    names = [n for n in runs[0]["summary"] if all(n in r["summary"] and n in r["configs"] for r in runs)]
    configs, extrapolations, skipped = [], [], []
    for name in names:
        cfgs = [r["configs"][name] for r in runs]
        widths = [c.spec.width for c in cfgs]
        if len(set(widths)) != len(widths):
            skipped.append({"name": name, "reason": f"two folders measured it at the same width ({widths})"})
        elif not all(_same_but_width(cfgs[0], c) for c in cfgs[1:]):
            skipped.append({"name": name, "reason": "the folders measured it with another spec or other depths"})
        else:
            comparison, ext = _compare_config(name, runs, statistic, n_boot)
            configs.append(comparison)
            extrapolations.append(ext)
    if not configs:
        raise ValueError(f"the folders {', '.join(map(str, folders))} share no config measured at distinct widths")
    with_law = [c for c in configs if c["extrapolated"]]
    counts = {"configs": len(with_law),
              "derived_inside_extrapolated": sum(c["extrapolated"]["derived_inside_ci"] for c in with_law)}
    for i in range(len(runs)):
        counts[f"derived_inside_width_{i}"] = sum(bool(c["per_width"][i]["derived_inside_ci"]) for c in with_law)
    return {"runs": [r["dir"] for r in runs], "statistic": statistic, "configs": configs, "counts": counts,
            "pooled": pooled_offsets(configs, extrapolations),
            "skipped": skipped + [{"name": c["name"], "reason": c["reason"]} for c in configs if "reason" in c]}


def _cell(x, ci) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci and None not in ci else f"{x:+.3f}"


def _yes(flag) -> str:
    return "n/a" if flag is None else ("yes" if flag else "**no**")


def markdown(comparison: dict) -> str:
    """The comparison as a markdown section (one table row per config)."""
    rows = [c for c in comparison["configs"] if c["extrapolated"]]
    if not rows:
        return "No config with a derived law to compare.\n"
    widths = [r["width"] for r in rows[0]["per_width"]]
    head = ["config", "derived"] + [f"n = {w}" for w in widths] + ["n -> oo (1/n)", "derived inside (per n; oo)",
                                                                    "held out passed (per n)"]
    lines = [f"Exponent of eta*(K) over the deepest {DEEPEST} K ({comparison['statistic']} over seeds, 95% CI), "
             f"from {', '.join(comparison['runs'])}; the last exponent column is the line in 1/n through the widths "
             "(two widths: Richardson; the 1/n form is assumed, not tested).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in rows:
        per = c["per_width"]
        ext = c["extrapolated"]
        inside = "/".join(_yes(r["derived_inside_ci"]) for r in per) + "; " + _yes(ext["derived_inside_ci"])
        held = "/".join(_yes(r["passed"]) for r in per)
        lines.append("| " + " | ".join([c["name"], c["derived_exponent"]] + [_cell(r["exponent"], r["ci"]) for r in per]
                                       + [_cell(ext["exponent"], ext["ci"]), inside, held]) + " |")
    k = comparison["counts"]
    per_n = ", ".join(f"n = {w}: {k[f'derived_inside_width_{i}']}" for i, w in enumerate(widths))
    lines += ["", f"Derived exponent inside the CI: {per_n}; extrapolated n -> oo: "
                  f"{k['derived_inside_extrapolated']} of {k['configs']}."]
    pooled = comparison.get("pooled")
    if pooled:
        cells = [f"n = {r['width']}: {r['offset']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]"
                 for r in pooled["per_width"]]
        ex = pooled["extrapolated"]
        cells.append(f"n -> oo: {ex['offset']:+.3f} [{ex['ci'][0]:+.3f}, {ex['ci'][1]:+.3f}]")
        k_conf = pooled["configs"]
        lines += ["", f"Mean over the {k_conf} config{'s' if k_conf != 1 else ''} of (measured - derived exponent), "
                      "95% CI (paired seed bootstrap): "
                      + "; ".join(cells) + "."]
    for s in comparison["skipped"]:
        lines.append(f"* skipped {s['name']}: {s['reason']}")
    return "\n".join(lines) + "\n"


__all__ = ["compare_widths", "compare_config", "pooled_offsets", "markdown", "DEEPEST"]
