"""``report.md`` of a sweep, written from its summary (nothing typed by hand)."""

from __future__ import annotations

from amutheory.families import module_family, result_family


def _g(v, fmt=".4g") -> str:
    return "n/a" if v is None else format(v, fmt)


def _ci(c) -> str:
    return "n/a" if not c else f"[{c[0]:.4g}, {c[1]:.4g}]"


def markdown(summary: dict, figures: list[str]) -> str:
    t = summary["template"]
    family = module_family(t["model"]) if t.get("model") else result_family(t["spec"])
    lines = ["# Learning-rate sweep", "",
             f"{family.net_label(t['spec'])}, optimizer {optimizer_label(t)}, "
             f"dataset {t['dataset']}, {t['steps']} steps of batch {t['batch_size']}, score: "
             f"{'mean training loss over the run' if summary['score'] == 'mean' else 'mean loss over the last tenth'}; "
             f"seeds {summary['seeds']}; {summary['cells']} cells, {summary['forward_passes']} forward passes, "
             f"{summary['train_seconds']:.1f} s of training.", "",
             *_chance_lines(summary),
             "| depth | width | eta*_train | 95% CI | eta*_grid | test accuracy there | final loss there / chance "
             "| learns | diverged rates | flags |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["runs"]:
        lines.append(f"| {r['depth']} | {r['width']} | {_g(r['eta_star_train'])} | {_ci(r['eta_star_train_ci'])} | "
                     f"{_g(r['eta_star_grid'])} | {_g(r.get('test_accuracy_at_grid_optimum'), '.3f')} | "
                     f"{_g(r.get('final_loss_at_optimum'), '.3g')} / {_g(r.get('chance_loss'), '.3g')} | "
                     f"{_learns(r.get('learns'))} | {sum(d > 0 for d in r['diverged'])} of {len(r['lrs'])} | "
                     f"{', '.join(r['flags']) or '-'} |")
    lines += _unresolved_lines(summary["runs"])
    lines += _not_learning_lines(summary)
    lines += _overlay_lines(summary.get("transfer_from"))
    for axis, key, other in (("depth", "depth_fit", "width"), ("width", "width_fit", "depth")):
        for fit in summary.get(key) or []:
            if "exponent" in fit:
                lines += ["", f"eta*_train against {axis} ({other} {fit[other]}): exponent "
                          f"{fit['exponent']:.3f}, 95% CI {_ci(fit['exponent_ci'])}, prefactor "
                          f"{fit['prefactor']:.4g}, {fit['points']} points"
                          + (f"; flagged optima at {axis} {fit['flagged']}" if fit["flagged"] else "") + "."]
    horizons = [h for h in summary.get("horizons") or [] if h.get("depth_fit")]
    if horizons:
        lines += ["", "The depth law at shorter horizons (score: the mean loss over the first T steps of the same runs):",
                  "", "| T (steps) | width | exponent | 95% CI |", "|---|---|---|---|"]
        for h in horizons:
            for fit in h["depth_fit"]:
                if "exponent" in fit:
                    lines.append(f"| {h['steps']} | {fit['width']} | {fit['exponent']:.3f} | {_ci(fit['exponent_ci'])} |")
    lines += [""] + [f"![{name}]({name})" for name in figures]
    return "\n".join(lines) + "\n"


def optimizer_label(template: dict) -> str:
    """The whole optimizer: ``sgd (momentum 0.9, weight decay 0.0001)``."""
    parts = [f"momentum {template.get('momentum', 0.0):g}"] if template.get("optimizer") == "sgd" else []
    parts.append(f"weight decay {template.get('weight_decay', 0.0):g}")
    return f"{template['optimizer']} ({', '.join(parts)})"


def _learns(v) -> str:
    return "n/a" if v is None else ("yes" if v else "**no**")


def _chance_lines(summary: dict) -> list[str]:
    if summary.get("chance_loss") is None:
        return []
    return [f"Chance level: loss ln(classes) = {summary['chance_loss']:.4g}.  A run *does not learn* when its "
            f"final training loss (last tenth of the steps) at the grid optimum is above "
            f"{summary['does_not_learn_threshold']:g} x the chance loss (amutheory.train.learning.DOES_NOT_LEARN, "
            "the protocol's threshold too).", ""]


def _not_learning_lines(summary: dict) -> list[str]:
    weak = [f"depth {r['depth']}, width {r['width']}" for r in summary["runs"] if r.get("learns") is False]
    if not weak:
        return []
    return ["", f"- **Does not learn** ({'; '.join(weak)}): at its best rate the final training loss stays above "
            f"{summary['does_not_learn_threshold']:g} x the chance loss; eta*_train there is the fastest rate a "
            "non-learning net tolerates, not the optimum of a net that learns (more steps, another rate range "
            "or another model)."]


def _overlay_lines(o: dict | None) -> list[str]:
    if not o:
        return []
    rows = o["rows"]
    head = "| rule | median penalty | " + " | ".join(f"L={r['depth']}, n={r['width']}" for r in rows) + " |"
    lines = ["", f"Transfer rules from lr {o['lr']:g} at depth {o['from_depth']} (amutheory.transfer), scored on "
             f"this sweep: the rule's rate and its loss penalty ({o['penalty']}; off grid: n/a).", "", head,
             "|" + "---|" * (2 + len(rows))]
    for rule, agg in o["rules"].items():
        cells = []
        for r in rows:
            x = r["rules"][rule]
            pen = "diverges" if x["diverges"] else ("off grid" if not x["on_grid"] else f"{x['penalty']:+.3g}")
            cells.append(f"{x['lr']:.3g}: {pen}")
        lines.append(f"| {rule} | {_g(agg['median_penalty'], '+.3g')} | " + " | ".join(cells) + " |")
    return lines


def unresolved_note(row: dict) -> str | None:
    """One plain sentence when a run's grid does not resolve its optimum (``resolved`` false), else ``None``."""
    if row.get("resolved", True):
        return None
    why = {"edge": "the best rate is at the grid's edge (the optimum may lie beyond it: widen the grid)",
           "tie": "several rates share the best score (the score does not tell them apart: more steps or seeds)",
           "all-diverged": "every rate diverged (lower the rates)"}
    reasons = "; ".join(why[f] for f in row["flags"] if f in why)
    return f"depth {row['depth']}, width {row['width']}: optimum NOT resolved: {reasons}"


def _unresolved_lines(runs) -> list[str]:
    notes = [n for n in map(unresolved_note, runs) if n]
    return ["", *(f"- {n}." for n in notes)] if notes else []
