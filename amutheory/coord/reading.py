"""The coord check's reading: per module group and step, is the update size flat, growing or shrinking
across depth (and across width)?

A group's update size at one size and seed is the root mean square of its modules' ``update_rms``
(the *layer-averaged* update, the quantity AM-muP holds fixed).  For each step ``t > 0`` the model
``ln u = a + b ln L (+ c ln n)`` is fitted by least squares to the seed mean of ``ln u`` at every size
(the width term only with several widths); the slopes' 95% intervals come from the seed bootstrap
(:mod:`amutheory.bootstrap`: seeds resampled with replacement, paired across sizes).

Rule (:data:`RULE`): *growing* when the interval lies above 0, *shrinking* when it lies below 0, *flat*
when it contains 0.  Flat therefore means "no trend resolved at these seeds", not "proved constant".

Pure numpy (no torch).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.bootstrap import percentile_interval, resample, seed_draws
from amutheory.coord.expectation import expectation_text, expected_trends, expected_why, group_roles
from amutheory.coord.hints import hint

RULE = ("slope of ln(update_rms) against ln(depth) (and ln(width)), fitted by least squares to the seed mean of "
        "the logs; 95% seed-bootstrap interval; growing if the interval lies above 0, shrinking if below 0, flat "
        "if it contains 0")
#: bootstrap replicates of the slopes
N_BOOT = 2000
LEVEL = 0.95


def group_updates(records, step: int) -> dict:
    """``{group: {(depth, width, seed): layer-averaged update}}`` at ``step``."""
    squares: dict = {}
    for r in records:
        if r["step"] == step:
            key = (r["depth"], r["width"], r["seed"])
            squares.setdefault(r["group"], {}).setdefault(key, []).append(r["update_rms"] ** 2)
    return {g: {k: math.sqrt(sum(v) / len(v)) for k, v in d.items()} for g, d in squares.items()}


def trend(ci) -> str | None:
    if ci is None:
        return None
    lo, hi = ci
    return "growing" if lo > 0 else "shrinking" if hi < 0 else "flat"


def fit_slopes(values: dict, seeds: list, rng=0) -> dict:
    """Depth and width slopes of ``ln u`` with bootstrap intervals; ``values``: ``{(L, n, seed): u}``.
    A slope that cannot be fitted is ``None`` with ``why``."""
    sizes = sorted({(L, n) for L, n, _ in values}, key=lambda s: (s[0], -1 if s[1] is None else s[1]))
    out = {"depth_slope": None, "depth_slope_ci": None, "width_slope": None, "width_slope_ci": None, "why": None}
    try:
        Y = np.array([[values[(L, n, s)] for (L, n) in sizes] for s in seeds], dtype=float)
    except KeyError:
        out["why"] = "not every seed has every size"
        return out
    if not np.all(np.isfinite(Y)) or np.any(Y <= 0):
        out["why"] = "an update size is zero or not finite (no change, or a diverged step)"
        return out
    depths = sorted({L for L, _ in sizes})
    widths = sorted({n for _, n in sizes if n is not None})
    columns = [np.ones(len(sizes))]
    names = []
    if len(depths) > 1:
        columns.append(np.log([L for L, _ in sizes]))
        names.append("depth")
    if len(widths) > 1:
        columns.append(np.log([n for _, n in sizes]))
        names.append("width")
    if not names:
        out["why"] = "one depth and one width: nothing to fit"
        return out
    X = np.stack(columns, axis=1)
    logs = np.log(Y)
    coef = np.linalg.lstsq(X, logs.mean(axis=0), rcond=None)[0]
    draws = seed_draws(len(seeds), N_BOOT, rng)
    boot = resample(draws, logs, axis=0).mean(axis=1)  # [B, sizes]
    boot_coef = np.linalg.lstsq(X, boot.T, rcond=None)[0]  # [k, B]
    for i, name in enumerate(names, start=1):
        out[f"{name}_slope"] = float(coef[i])
        out[f"{name}_slope_ci"] = [float(v) for v in percentile_interval(boot_coef[i], LEVEL)]
    return out


def read(records, seeds: list, kind: str, readout: str, rng=0, optimizer: str = "sgd", facts=None) -> dict:
    """The reading: ``rule``, ``kind``, ``expectation`` (words), ``stem_expectation`` (words, or None
    without a stem), ``facts`` (:func:`amutheory.coord.hints.model_facts`) and per group and step ``> 0``
    the slopes, their intervals, the trends, the group's ``role`` (stem, repeated, readout, single), what
    the theory allows (``expected_depth_trend``) and why (``expected_why``), whether the depth trend is
    one it allows (``agrees``, ``None`` where nothing is expected or nothing was fitted) and a ``hint``
    (:func:`amutheory.coord.hints.hint`: why the reading differs, or None)."""
    steps = sorted({r["step"] for r in records if r["step"] > 0})
    roles = group_roles(dict.fromkeys(r["group"] for r in records), readout)
    rows = []
    gen = np.random.default_rng(rng)
    for step in steps:
        for group, values in group_updates(records, step).items():
            fit = fit_slopes(values, seeds, gen)
            depth_trend = trend(fit["depth_slope_ci"])
            allowed = expected_trends(kind, group, readout, roles[group], optimizer, step)
            why = expected_why(kind, roles[group], optimizer, step)
            row = {"group": group, "step": step, **fit, "depth_trend": depth_trend,
                   "width_trend": trend(fit["width_slope_ci"]),
                   "expected_depth_trend": list(allowed) or None,
                   "agrees": None if not allowed or depth_trend is None else depth_trend in allowed,
                   "role": roles[group], "expected_why": why}
            row["hint"] = hint(row, roles[group], why, facts, optimizer)
            rows.append(row)
    stem = "stem" in roles.values()
    return {"rule": RULE, "kind": kind, "expectation": expectation_text(kind),
            "stem_expectation": expected_why(kind, "stem", optimizer) if stem else None,  # its first step
            "facts": facts, "groups": rows}
