"""The multi-fidelity guided search at one target depth: the prior narrows the range, short horizons
sort the rates, and only contenders are trained to the end.

``T`` is the template's steps and ``eta`` the reduction factor (:class:`Fidelity`).  From the prior
rate ``p`` and the half-width ``H`` of its interval in ``ln(rate)`` (the transfer interval: the
tuned rate's CI and the rule's recorded held-out error, so a rule that has been accurate on this kind
of net gets a narrow range):

1. **Range.**  ``points`` rates ``p exp(k d)``, ``k = -(points // 2) .. points // 2``, with step
   ``d = H / (points // 2)`` held within ``[min_step, max_step]``.
2. **Rung 0.**  Every rate for ``T / eta^2`` steps on one seed (cells with ``stop``: the first steps
   of the whole run, their state saved, :mod:`amutheory.train.checkpoint`).  A rung ranks rates by
   their *level*: the mean loss over the second half of the rung's steps (where the run is, not the
   mean from step 0 that every rate's first steps dominate).  Where the best level is
   the range's lowest rate (or every rate diverged) ``points // 2`` more rates below it; where it is
   the highest and none above diverged, as many above; at most ``moves`` times.
3. **Rung 1.**  The ``survivors`` best rates of rung 0 go on to ``T / eta`` steps (from their saved
   state: no step is trained twice).  **Nothing learns:** if the best of them has not moved its loss
   below ``NO_PROGRESS`` x the chance loss ``ln(classes)`` over its last tenth of steps, the search
   stops (``stop: nothing-learns``) and answers with the prior, labelled.
4. **Final rung.**  The best rate of rung 1 and its two neighbours in the range go on to ``T``.  While
   the best at ``T`` is the lowest or highest of the rates at ``T``, its next neighbour goes on too (a
   rate never tried is trained from step 0); **next to divergence**, where the best rate's upper
   neighbour diverged at ``T``, the rate halfway (in ``ln``) between them is trained.  At most
   ``max_final`` rates reach ``T``.
5. **Fit.**  The optimum is the vertex of the parabola in ``ln(rate)`` through the seed-mean scores at
   ``T`` (:func:`amutheory.tuning.fit.vertex`: it never leaves the half-steps around the best rate
   tried, so a cliff next to it cannot pull it away).  If the best final loss at ``T`` does not learn
   (:func:`amutheory.train.learning.learns`), the answer is the prior (``stop: nothing-learns``); the
   vertex is still reported as ``eta_star_fit``, for what it is worth.
6. **Seeds only at contenders.**  With ``confirm_seeds = c >= 2`` the best rate at ``T`` and its two
   neighbours are trained on ``c - 1`` more seeds and the 95% CI is the seed bootstrap of the vertex
   (:func:`amutheory.tuning.fit.vertex_interval`); with one seed (the default: the search's cost is
   then about four runs) there is no seed interval and ``ci_reason`` says so.

Every decision is a function of the finished records, so a search replayed on its table (after an
interrupt, even ``kill -9``) asks for the same cells in the same order and trains only what is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from amutheory.tuning.fit import vertex, vertex_interval
from amutheory.tuning.guided import score_of

#: rung 1's best must have brought its loss below this fraction of the chance loss, else nothing learns
NO_PROGRESS = 0.95
#: the half-width of the range where the prior has no interval (ln units: a factor e^0.7 = 2 each way)
DEFAULT_HALF_WIDTH = 0.7
STOPS = ("converged", "budget", "nothing-learns")


@dataclass(frozen=True)
class Fidelity:
    """The multi-fidelity search's settings (module docstring)."""

    points: int = 9
    eta: int = 3
    survivors: int = 3
    min_step: float = 0.15
    max_step: float = 0.6
    moves: int = 3
    max_final: int = 5
    confirm_seeds: int = 1

    def __post_init__(self):
        for name, lo in (("points", 3), ("eta", 2), ("survivors", 1), ("moves", 0), ("max_final", 3),
                         ("confirm_seeds", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        for name in ("min_step", "max_step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        if self.min_step > self.max_step:
            raise ValueError(f"min_step ({self.min_step}) must be at most max_step ({self.max_step})")
        if self.survivors > self.points:
            raise ValueError(f"survivors ({self.survivors}) must be at most points ({self.points})")

    def rungs(self, steps: int) -> list[int]:
        """The horizons read: ``T / eta^2``, ``T / eta``, ``T`` (rounded; at least 1 step; distinct)."""
        out = []
        for e in (2, 1, 0):
            r = max(1, round(steps / self.eta ** e))
            if not out or r > out[-1]:
                out.append(r)
        return out

    def to_dict(self) -> dict:
        return {"method": "fidelity", "points": self.points, "eta": self.eta, "survivors": self.survivors,
                "min_step": self.min_step, "max_step": self.max_step, "moves": self.moves,
                "max_final": self.max_final, "confirm_seeds": self.confirm_seeds, "no_progress": NO_PROGRESS}


def step_of(prior: float, interval, settings: Fidelity) -> tuple[float, float]:
    """``(d, H)``: the range's step in ``ln(rate)`` and the half-width it came from (the prior's
    interval ``[lo, hi]`` read as the larger distance from ``prior``; :data:`DEFAULT_HALF_WIDTH` without one)."""
    h = DEFAULT_HALF_WIDTH
    if interval is not None:
        lo, hi = (float(v) for v in interval)
        if 0 < lo <= prior <= hi and math.isfinite(hi):
            h = max(math.log(hi / prior), math.log(prior / lo), 1e-12)
    d = min(max(h / (settings.points // 2), settings.min_step), settings.max_step)
    return d, h


def _level(rec: dict) -> float:
    """What a rung ranks by: the mean training loss over the second half of the steps the record
    trained (where the run *is* at that horizon; the score from step 0 is dominated by the first
    steps, which every rate shares); ``+inf`` where it diverged."""
    if rec.get("diverged"):
        return math.inf
    steps, losses = rec["curve"]["step"], rec["curve"]["loss"]
    n = int(rec["backward_passes"])
    v = [x for t, x in zip(steps, losses) if t >= n // 2 and x is not None]
    return float(np.mean(v)) if v else math.inf


def _final(rec: dict) -> float:
    v = rec.get("final_loss")
    return math.inf if v is None else float(v)


class _Search:
    def __init__(self, prior, d, settings, seeds, steps, run):
        self.prior, self.d, self.seeds, self.run_fn = prior, d, seeds, run
        self.horizons = settings.rungs(steps)
        self.records: dict[tuple, dict] = {}  # (k, seed, horizon) -> record
        self.trials: list[dict] = []
        self.rounds = 0

    def rate(self, k: float) -> float:
        return self.prior * math.exp(k * self.d)

    def ask(self, requests: list[tuple]) -> None:
        """Train ``(k, seed, horizon)`` requests not read yet (one round)."""
        todo = [q for q in dict.fromkeys(requests) if q not in self.records]
        if not todo:
            return
        recs = self.run_fn([(self.rate(k), s, None if h == self.horizons[-1] else h) for k, s, h in todo])
        for q, rec in zip(todo, recs):
            self.records[q] = rec
            self.trials.append({"round": self.rounds, "k": q[0], "lr": self.rate(q[0]), "seed": q[1],
                                "horizon": q[2], "record": rec})
        self.rounds += 1

    def scores(self, horizon: int, seed: int) -> dict[float, float]:
        """The scores (mean loss from step 0) of the records at ``horizon`` on ``seed``, by ``k``."""
        return {k: score_of(r) for (k, s, h), r in self.records.items() if h == horizon and s == seed}

    def levels(self, horizon: int, seed: int) -> dict[float, float]:
        """:func:`_level` of the records at ``horizon`` on ``seed``, by ``k``: what a rung ranks by."""
        return {k: _level(r) for (k, s, h), r in self.records.items() if h == horizon and s == seed}


def search(prior: float, settings: Fidelity, seeds: list[int], steps: int, classes: int, run,
           interval=None) -> dict:
    """The multi-fidelity search from ``prior`` (module docstring).  ``run(requests)`` trains the
    ``(rate, seed, stop)`` triples asked (``stop=None``: the whole ``steps``) and returns their records
    in order.  The result has ``guided.search``'s keys (``eta_star_train``, its CI, ``stop``,
    ``flags``, ``rates``, ``trials``) and ``rungs``, ``step_ln``, ``answer``, ``reason``."""
    from amutheory.train.learning import DOES_NOT_LEARN, chance_loss, learns

    if not isinstance(settings, Fidelity):
        raise TypeError(f"settings must be a Fidelity, got {type(settings).__name__}")
    if len(seeds) < settings.confirm_seeds:
        raise ValueError(f"seeds must give at least confirm_seeds = {settings.confirm_seeds} seeds, got {len(seeds)}")
    d, h = step_of(prior, interval, settings)
    st = _Search(prior, d, settings, list(seeds), steps, run)
    s0 = st.seeds[0]
    r0, T = st.horizons[0], st.horizons[-1]
    r1 = st.horizons[1] if len(st.horizons) > 2 else None
    half = settings.points // 2
    ks = [float(k) for k in range(-half, settings.points - half)]
    st.ask([(k, s0, r0) for k in ks])
    flags: list[str] = []
    # ---- rung 0, moved where the best is at the range's end
    for _ in range(settings.moves):
        sc = st.levels(r0, s0)
        tried = sorted(sc)
        finite = [k for k in tried if math.isfinite(sc[k])]
        if not finite or min(finite, key=lambda k: (sc[k], k)) == tried[0]:
            new = [tried[0] - j for j in range(1, half + 1)]
        elif min(finite, key=lambda k: (sc[k], k)) == tried[-1]:
            new = [tried[-1] + j for j in range(1, half + 1)]
        else:
            break
        st.ask([(k, s0, r0) for k in new])
    sc0 = st.levels(r0, s0)
    ranked = sorted((k for k in sc0 if math.isfinite(sc0[k])), key=lambda k: (sc0[k], k))
    if not ranked:
        return _answer(st, "budget", flags + ["all-diverged"], None, None, None, h,
                       "every rate diverged within the first rung, after every move down")
    # ---- rung 1: the survivors, from their saved state
    if r1 is not None:
        st.ask([(k, s0, r1) for k in ranked[:settings.survivors]])
        sc1 = st.levels(r1, s0)
        fin1 = {k: _final(st.records[(k, s0, r1)]) for k in sc1}
        ranked = sorted((k for k in sc1 if math.isfinite(sc1[k])), key=lambda k: (sc1[k], k)) or ranked
        best1 = min(fin1.values(), default=math.inf)
        if not best1 < NO_PROGRESS * chance_loss(classes):
            return _answer(st, "nothing-learns", flags + ["does-not-learn"], None, None, None, h,
                           f"after {r1} of {T} steps the best rate's loss over its last tenth of steps "
                           f"({best1:.3g}) is not below {NO_PROGRESS:g} x the chance loss ln {classes} = "
                           f"{chance_loss(classes):.3g}: nothing is being learned; the answer is the prior")
    # ---- final rung: the best and its neighbours in the range, then along the side the best is at
    grid = sorted(sc0)
    kb = ranked[0]
    i = grid.index(kb)
    st.ask([(k, s0, T) for k in grid[max(0, i - 1):i + 2]])
    refined = False
    while True:
        scT = st.scores(T, s0)
        at = sorted(scT)
        if len(at) >= settings.max_final:
            break
        finite = [k for k in at if math.isfinite(scT[k])]
        if not finite:
            nxt = _beyond(grid, at[0], -1)
        else:
            b = min(finite, key=lambda k: (scT[k], k))
            up = [k for k in at if k > b]
            if b == at[0]:
                nxt = _beyond(grid, b, -1)
            elif b == at[-1]:
                nxt = _beyond(grid, b, +1)
            elif not refined and up and not math.isfinite(scT[up[0]]):
                nxt, refined = (b + up[0]) / 2, True  # next to divergence: halve the step towards it
            else:
                break
        st.ask([(nxt, s0, T)])
    scT = st.scores(T, s0)
    at = sorted(scT)
    x = np.array([math.log(st.rate(k)) for k in at])
    y = np.array([scT[k] for k in at])
    x_star, fit_flags = vertex(x, y)
    flags += fit_flags
    if not np.isfinite(y).any():
        return _answer(st, "budget", flags, None, None, None, h, "every rate trained to the end diverged")
    kb = at[int(np.argmin(y))]
    final = _final(st.records[(kb, s0, T)])
    if not learns(final, classes):
        return _answer(st, "nothing-learns", flags + ["does-not-learn"], x_star, None, final, h,
                       f"the best rate's final loss {final:.3g} at {T} steps is above {DOES_NOT_LEARN:g} x the "
                       f"chance loss ln {classes}: the net does not learn at any rate tried; the answer is the prior")
    stop = "budget" if {"edge", "all-diverged"} & set(fit_flags) else "converged"
    if stop == "budget":
        flags.append("unbracketed")
    # ---- seeds only at the contenders: the best at T and its neighbours
    ci, ci_reason = None, (f"one seed per rate: no seed interval (confirm_seeds = {settings.confirm_seeds}; "
                        f"2 or more train the best rate and its neighbours on more seeds)")
    if settings.confirm_seeds > 1:
        j = at.index(kb)
        near = at[max(0, j - 1):j + 2]
        st.ask([(k, s, T) for k in near for s in st.seeds[1:settings.confirm_seeds]])
        per = [[score_of(st.records[(k, s, T)]) for s in st.seeds[:settings.confirm_seeds]
                if (k, s, T) in st.records] for k in at]
        means = np.array([np.mean(p) for p in per])
        x_star, fit_flags = vertex(x, means)
        ci = vertex_interval(x, per)
        ci_reason = None if ci is not None else "the seed bootstrap did not resolve the vertex"
    reason = ("the vertex of the parabola through the scores at the final horizon" if stop == "converged" else
              "the optimum is at the end of the rates trained to the final horizon (max_final reached)")
    return _answer(st, stop, flags, x_star, ci, final, h, reason, ci_reason, fit=True)


def _beyond(grid: list[float], k: float, direction: int) -> float:
    """The next rate of the range beyond ``k`` (one step past the range's end where it has none)."""
    side = [g for g in grid if (g - k) * direction > 0]
    if side:
        return min(side, key=lambda g: abs(g - k))
    return k + direction


def _answer(st: _Search, stop, flags, x_star, ci, final, h, reason, ci_reason=None, fit: bool = False) -> dict:
    ok = fit and x_star is not None and math.isfinite(x_star)
    fitted = math.exp(x_star) if x_star is not None and math.isfinite(x_star) else None
    if stop == "nothing-learns":
        lr, answer = st.prior, "prior"
    else:
        lr, answer = (math.exp(x_star), "fit") if ok else (None, "none")
    T = st.horizons[-1]
    rates = []
    for k in sorted({k for k, _, _ in st.records}):
        per_h = {}
        for hz in st.horizons:
            v = [(score_of(r), s) for (kk, s, hh), r in st.records.items() if kk == k and hh == hz]
            if v:
                per_h[str(hz)] = [None if not math.isfinite(a) else a for a, _ in v]
        at_T = [a for a in (per_h.get(str(T)) or [])]
        means = None if not at_T or any(a is None for a in at_T) else float(np.mean(at_T))
        rates.append({"lr": st.rate(k), "k": k, "loss_mean": means,
                      "seeds": sorted(s for (kk, s, hh) in st.records if kk == k and hh == T),
                      "scores": at_T, "scores_by_horizon": per_h})
    return {"eta_star_train": lr, "eta_star_train_ci": None if not ok or ci is None else
            [math.exp(ci[0]), math.exp(ci[1])], "answer": answer, "stop": stop, "flags": list(dict.fromkeys(flags)),
            "eta_star_fit": fitted, "reason": reason, "ci_reason": None if ci is not None else ci_reason or "no fitted optimum", "rounds": st.rounds, "runs": len(st.records),
            "rungs": st.horizons, "step_ln": st.d, "half_width_ln": h, "final_loss_at_best": final,
            "rates": rates, "trials": st.trials}
