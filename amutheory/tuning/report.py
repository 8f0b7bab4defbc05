"""``tune.md``: the guided search's answer per target depth, how it got there, and what it cost."""

from __future__ import annotations


def _num(v, fmt=".4g") -> str:
    return "n/a" if v is None else format(v, fmt)


def markdown(summary: dict, figures: list[str]) -> str:
    f = summary["from"]
    t0 = summary["template"]
    model = t0.get("model") or f"{t0['spec']['family']} ({t0['spec']['activation']})"
    opt = t0["optimizer"] + (f", momentum {t0['momentum']:g}" if t0.get("momentum") else "") + \
        (f", weight decay {t0['weight_decay']:g}" if t0.get("weight_decay") else "")
    lines = ["# Guided learning-rate search", "",
             f"Model {model}, width {summary['width']}, {t0['dataset']}, {t0['steps']} steps of {opt}, "
             f"batch {t0['batch_size']}.  Source: lr {f['lr']:g} tuned at depth {f['depth']}"
             + (f" (CI [{f['lr_ci'][0]:g}, {f['lr_ci'][1]:g}])" if f["lr_ci"] else "") + ".", "",
             "| depth | rule | prior | eta*_train | 95% CI | stop | runs | learns |",
             "|---|---|---|---|---|---|---|---|"]
    for t in summary["targets"]:
        ci = t["eta_star_train_ci"]
        lines.append(f"| {t['depth']} | {t['prior']['rule']} | {t['prior']['lr']:.4g} | {_num(t['eta_star_train'])} | "
                     f"{'n/a' if not ci else f'[{ci[0]:.4g}, {ci[1]:.4g}]'} | {t['stop']}"
                     f"{' (' + ', '.join(t['flags']) + ')' if t['flags'] else ''} | {t['runs']} | "
                     f"{'n/a' if t['learns'] is None else ('yes' if t['learns'] else 'no')} |")
    c = summary["cost"]
    lines += ["", f"Rule choice: {summary['targets'][0]['prior']['rule_reason']}.", ""]
    for t in summary["targets"]:
        pr = t["prior"]
        probe = pr.get("probe")
        if probe and "factor" in probe:
            one = probe["one_step"]
            lines.append(f"Depth {t['depth']}: the model's own probe x{probe['factor']:.3g} "
                         f"[{probe['low']:.3g}, {probe['high']:.3g}] (one-step ratio {one['ratio']:.3g}, "
                         f"{len(one['seeds'])} seeds, {one['seconds']:.2g} s; bridge beta {probe['bridge']['beta']:+.3g}).")
        elif probe:
            lines.append(f"Depth {t['depth']}: probe not run ({probe['reason']}).")
        lines += [f"Depth {t['depth']} mismatch: {m['assumption']}: {m['model']}; {m['rules']}."
                  for m in pr["confidence"]["mismatches"]]
    lines += ["",
              f"Cost: {c['cells']} cells, {c['steps']} steps, {c['forward_passes']} forward passes, "
              f"{c['core_seconds']:.1f} core-seconds ({c['charged']}).", "",
              stopping_rule(summary)]
    for t in summary["targets"]:
        if t.get("stop") == "nothing-learns":
            lines.append(f"\nDepth {t['depth']}: {t['reason']}.")
        elif t.get("ci_reason") and t.get("eta_star_train") is not None:
            lines.append(f"\nDepth {t['depth']}: no 95% CI: {t['ci_reason']}.")
    lines += [f"\n![{n}]({n})" for n in figures]
    return "\n".join(lines) + "\n"


def stopping_rule(summary: dict) -> str:
    """How the search of ``summary`` decided (the multi-fidelity search or the bracket)."""
    if summary.get("search", "bracket") == "fidelity":
        f = summary["fidelity"]
        return (f"Search: multi-fidelity (docs/tuning.md): {f['points']} rates around the prior judged at "
                f"T/{f['eta'] ** 2}, the best {f['survivors']} at T/{f['eta']}, the best of those and its neighbours "
                f"to T (at most {f['max_final']} rates), each rung going on from the last one's saved state; "
                f"the optimum is the parabola's vertex at T; {f['confirm_seeds']} seed(s) at the contenders.")
    b = summary["bracket"]
    return ("Stopping rule: the 95% CI of ln(eta*) within +-" + f"{b['tolerance']:g}"
            " once the best rate has " + f"{b['seeds_to_stop']}"
            " seeds, and the fitted loss rising less than one seed-mean's noise across that CI; otherwise a "
            "seed more where two rates are too close to call, up to the seed cap and the run budget.")
