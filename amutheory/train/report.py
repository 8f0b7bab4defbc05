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
             f"{family.net_label(t['spec'])}, optimizer {t['optimizer']}, "
             f"dataset {t['dataset']}, {t['steps']} steps of batch {t['batch_size']}, score: "
             f"{'mean training loss over the run' if summary['score'] == 'mean' else 'mean loss over the last tenth'}; "
             f"seeds {summary['seeds']}; {summary['cells']} cells, {summary['forward_passes']} forward passes, "
             f"{summary['train_seconds']:.1f} s of training.", "",
             "| depth | width | eta*_train | 95% CI | eta*_grid | test accuracy there | diverged rates | flags |",
             "|---|---|---|---|---|---|---|---|"]
    for r in summary["runs"]:
        lines.append(f"| {r['depth']} | {r['width']} | {_g(r['eta_star_train'])} | {_ci(r['eta_star_train_ci'])} | "
                     f"{_g(r['eta_star_grid'])} | {_g(r.get('test_accuracy_at_grid_optimum'), '.3f')} | {sum(d > 0 for d in r['diverged'])} of {len(r['lrs'])} | "
                     f"{', '.join(r['flags']) or '-'} |")
    lines += _unresolved_lines(summary["runs"])
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
