"""Every transfer rule scored on the user's own sweep (``sweep --transfer-from L:LR``).

From a rate ``LR`` tuned at depth ``L`` (same width), :func:`amutheory.transfer.transfer_lr` gives
each rule's rate at every swept depth.  Its *loss penalty* there is the sweep's seed-mean loss at
that rate (interpolated linearly in ``ln(rate)`` between the swept rates,
:func:`amutheory.train.search.loss_at`) minus the best seed-mean loss of the grid: how much
training loss the user gives up by trusting the rule instead of sweeping.  A rate outside the
swept grid has no penalty (``null``, ``on_grid`` false); next to a diverged rate it is infinite
(``null`` in JSON, ``diverges`` true).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.train.search import loss_at


def parse(text: str) -> tuple[int, float]:
    """``"L:LR"`` -> ``(L, LR)`` (``ValueError`` of one line naming the flag)."""
    parts = str(text).split(":")
    try:
        depth, lr = int(parts[0]), float(parts[1])
        if len(parts) != 2:
            raise ValueError
    except (ValueError, IndexError):
        raise ValueError(f"--transfer-from takes DEPTH:RATE, e.g. 4:0.1; got {text!r}") from None
    if depth < 1 or not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"--transfer-from {text}: the depth must be >= 1 and the rate a finite number > 0")
    from amutheory.spec import check_depth, check_rate

    return check_depth(f"--transfer-from {text}: the depth", depth), check_rate(f"--transfer-from {text}: the rate", lr)


def check_rates(template, depths, widths, from_depth: int, lr: float) -> None:
    """Every rule's rate at every swept (depth, width) is a normal float (:func:`rule_rates`), checked
    before the sweep trains anything (a rate that overflows is otherwise found after every cell)."""
    for L in depths:
        for n in widths:
            try:
                rule_rates(template, from_depth, lr, L, n)
            except ValueError as exc:
                raise ValueError(f"--transfer-from {from_depth}:{lr:g} at depth {L}, width {n}: {exc}") from None


def _net(template, depth: int, width: int):
    """The net the rules read at ``(depth, width)``: the spec (built-in family) or the user's
    factory's module (seed 0), with the input shape of the sweep's data."""
    spec = template.spec.with_(depth=depth, width=width)
    family = template.family_object
    if family.has_spec:
        return spec, None
    from amutheory.train.run import cell_data

    x = cell_data(template.with_(spec=spec))[0]
    return family.build_seeded(spec, 0), (1,) + tuple(x.shape[1:])


def rule_rates(template, from_depth: int, lr: float, depth: int, width: int) -> dict:
    """``{rule: rate at depth}`` from ``lr`` tuned at ``from_depth`` (same width); computed once per
    process for each question (the check before the sweep and the overlay after it ask the same)."""
    key = (template.key(), from_depth, lr, depth, width)
    if key not in _RATES:
        from amutheory.transfer import transfer_lr

        ref, shape = _net(template, from_depth, width)
        tgt, _ = _net(template, depth, width)
        _RATES[key] = dict(transfer_lr(lr, ref, tgt, input_shape=shape).rules)
    return dict(_RATES[key])


#: :func:`rule_rates` already computed in this process (the rates read the traced nets: seconds each)
_RATES: dict = {}


def overlay(template, searches, from_depth: int, lr: float) -> dict:
    """The JSON of ``transfer_from``: per swept (depth, width) each rule's rate, the loss there and its
    penalty over the grid's best; per rule the median penalty over the runs where it is defined."""
    rows = []
    for s in searches:
        rates = rule_rates(template, from_depth, lr, s.depth, s.width)
        finite = np.isfinite(s.loss_mean)
        best = float(s.loss_mean[finite].min()) if finite.any() else None
        rules = {}
        for rule, rate in rates.items():
            at = loss_at(s, rate)
            rules[rule] = {"lr": rate, "on_grid": at is not None,
                           "diverges": at is not None and not math.isfinite(at),
                           "loss": at if at is not None and math.isfinite(at) else None,
                           "penalty": at - best if at is not None and math.isfinite(at) and best is not None
                           else None}
        rows.append({"depth": s.depth, "width": s.width, "best_loss": best, "rules": rules})
    summary = {}
    for rule in rows[0]["rules"] if rows else ():
        pens = [r["rules"][rule]["penalty"] for r in rows if r["rules"][rule]["penalty"] is not None]
        summary[rule] = {"median_penalty": float(np.median(pens)) if pens else None, "scored_runs": len(pens),
                         "off_grid": sum(not r["rules"][rule]["on_grid"] for r in rows),
                         "diverges": sum(r["rules"][rule]["diverges"] for r in rows)}
    return {"from_depth": from_depth, "lr": lr,
            "penalty": "seed-mean loss at the rule's rate (linear in ln rate on the swept grid) minus the grid's best",
            "rows": rows, "rules": summary}
