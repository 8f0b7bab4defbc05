"""The guided search at one target depth: predict, then confirm with a short bracket.

Start from the prior rate ``p`` (:mod:`amutheory.tuning.prior`) and :class:`Bracket`'s settings:

1. **Bracket.**  ``points`` rates ``p * factor^k`` (``k = -(points // 2) .. points // 2``; default
   five at factors of sqrt 2), each trained on the first ``min_seeds`` seeds.
2. **Move.**  Where the best seed-mean score is the lowest rate tried, two more rates below it (same
   spacing); where it is the highest and finite, two above; where every rate diverged, ``points``
   rates below the lowest.  Repeated (each move is charged) until the best rate has a neighbour on
   each side, or the budget runs out.
   The rates around the best are then brought to ``min_seeds`` seeds (not a rate that has diverged:
   its seed-mean is ``+inf`` whatever its other seeds give, and no decision reads it).
3. **Fit.**  The optimum from a parabola in ``ln(rate)`` through the finite points around the best
   one and its seed-bootstrap CI (:mod:`amutheory.tuning.fit`: the optimum never leaves the half-steps
   around the best rate tried, and a cliff next to it is dropped from the fit and flagged ``cliff``).
4. **Stop** when both hold (``converged``):

   * the CI's half-width is at most ``tolerance`` (in ``ln(rate)``), read only once the best rate has
     at least ``seeds_to_stop`` seeds (a bootstrap over two seeds says little);
   * the regret criterion: the parabola rises from the optimum to either end of its CI by less than
     the noise of one seed-mean (the pooled seed standard deviation of the bracket / sqrt(seeds)
     at the best rate): anywhere in the CI costs less loss than the seeds' own noise.

   Otherwise, **next to divergence** (the best rate's neighbour on a side has a diverged seed), the
   rate at the geometric midpoint between the best rate and that neighbour, on the first seed (the
   next round brings it to ``min_seeds`` unless it diverged); on each side at most :data:`REFINE`
   times, so the step towards the divergence edge is halved at most twice (the midpoint that becomes
   the best, or the diverged neighbour, is the next one's end).  Rates are ``p * factor^k`` with ``k``
   an integer, or where refined a multiple of a half or a quarter (kept exact: a dyadic ``float``).

   Otherwise **add a seed** (the next of ``seeds``) where two rates are too close to call: at the best
   rate and at every rate whose seed-mean is within ``Z`` pooled standard errors of the best's
   (at least the better of its two neighbours).  Stop with ``seed-cap`` when none of those can take
   another seed, and with ``budget`` when the next round would pass ``max_runs`` runs.

Every decision is a function of the finished records only, so a search replayed on its own table
(after an interrupt) asks for the same cells in the same order and trains only the missing ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from amutheory.names import BRACKET_DEFAULTS
from amutheory.tuning.fit import WINDOW, fitted_loss, vertex, vertex_interval

#: two seed-means closer than Z pooled standard errors (of their difference) are too close to call
Z = 1.96
STOPS = ("converged", "seed-cap", "budget")
#: the step towards a diverged neighbour of the best rate is halved at most this many times per side
REFINE = 2
#: neighbouring rates of a bracket are at most a decade apart (a wider search is a sweep's)
MAX_BRACKET_FACTOR = 10.0


@dataclass(frozen=True)
class Bracket:
    """The guided search's settings (module docstring)."""

    points: int = BRACKET_DEFAULTS["points"]
    factor: float = BRACKET_DEFAULTS["factor"]
    min_seeds: int = BRACKET_DEFAULTS["min_seeds"]
    seeds_to_stop: int = BRACKET_DEFAULTS["seeds_to_stop"]
    tolerance: float = BRACKET_DEFAULTS["tolerance"]
    max_runs: int = BRACKET_DEFAULTS["max_runs"]

    def __post_init__(self):
        for name, lo in (("points", 3), ("min_seeds", 2), ("seeds_to_stop", 2), ("max_runs", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        for name in ("factor", "tolerance"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        if not 1 < self.factor <= MAX_BRACKET_FACTOR:
            raise ValueError(f"factor must be > 1 and at most {MAX_BRACKET_FACTOR:g}, got {self.factor}")
        if self.max_runs < self.points * self.min_seeds:
            raise ValueError(f"max_runs ({self.max_runs}) must cover the first bracket: points x min_seeds = "
                             f"{self.points * self.min_seeds}")

    def to_dict(self) -> dict:
        return {"points": self.points, "factor": self.factor, "min_seeds": self.min_seeds,
                "seeds_to_stop": self.seeds_to_stop, "tolerance": self.tolerance, "max_runs": self.max_runs,
                "too_close_z": Z}


def score_of(record: dict) -> float:
    """The run's score (mean training loss over the run; ``+inf`` where it diverged)."""
    v = record.get("score")
    return math.inf if v is None else float(v)


def _k(v: float) -> int | float:
    """A rate's exponent: an ``int`` where whole, else the (dyadic, so exact) ``float`` of a refinement."""
    v = float(v)
    return int(v) if v.is_integer() else v


class State:
    """The bracket so far: ``seeds_at[k]`` = the seeds run at rate ``p * factor^k`` (``k`` an ``int``,
    or a ``float`` half or quarter step between two of them where refined next to divergence)."""

    def __init__(self, prior: float, bracket: Bracket, seeds: list[int]):
        self.prior, self.b, self.seeds = prior, bracket, seeds
        half = bracket.points // 2
        self.seeds_at: dict[int, list[int]] = {k: list(seeds[:bracket.min_seeds])
                                               for k in range(-half, bracket.points - half)}

        self.moves: list[int] = []  # the direction of every move so far (-1 down, +1 up)
        self.refined: list[int] = []  # the side of every refinement towards divergence so far

    def gallop(self, direction: int, edge: int) -> list[int]:
        """Two new rates beyond ``edge``: ``g`` and ``2 g`` steps out, ``g`` doubling with each move
        in a row the same way (1, 2, 4, ...)."""
        g = 1
        for d in reversed(self.moves):
            if d != direction:
                break
            g *= 2
        return [edge + direction * g, edge + direction * 2 * g]

    def rate(self, k: int | float) -> float:
        return self.prior * self.b.factor ** k

    def runs(self) -> int:
        return sum(len(v) for v in self.seeds_at.values())

    def table(self, scores: dict) -> tuple[np.ndarray, list, np.ndarray, list[int]]:
        """``(x, per-rate seed scores, seed-means, ks)`` over the rates tried, by rate."""
        ks = sorted(self.seeds_at)
        per = [[scores[(k, s)] for s in self.seeds_at[k]] for k in ks]
        means = np.array([np.mean(v) if all(math.isfinite(t) for t in v) else math.inf for v in per])
        return np.log([self.rate(k) for k in ks]), per, means, ks


def pooled_sd(per: list) -> float | None:
    """The seed standard deviation pooled over the finite rates (``None`` without two seeds anywhere)."""
    ss, df = 0.0, 0
    for v in per:
        v = np.asarray(v, float)
        if len(v) > 1 and np.isfinite(v).all():
            ss += float(((v - v.mean()) ** 2).sum())
            df += len(v) - 1
    return math.sqrt(ss / df) if df else None


def next_cells(state: State, scores: dict) -> tuple[list[tuple[int, int]], dict]:
    """``(requests, status)``: the ``(k, seed)`` pairs to run next (empty: stop) and the search's state
    (``x_star``, ``ci``, flags, ``stop``)."""
    b = state.b
    x, per, means, ks = state.table(scores)
    finite = np.isfinite(means)
    n0 = b.min_seeds
    # ---- move: the best rate must have a tried neighbour on each side (one seed per new rate;
    # consecutive moves the same way gallop: 2, then 4, 8 ... steps, so a prior far off costs little)
    add: list[int] = []
    if not finite.any():
        add = state.gallop(-1, ks[0])
    else:
        i = int(np.argmin(np.where(finite, means, np.inf)))
        if i == 0:
            add = state.gallop(-1, ks[0])
        elif i == len(ks) - 1:
            add = state.gallop(+1, ks[-1])
    if add:
        req = [(k, state.seeds[0]) for k in add]
        if state.runs() + len(req) > b.max_runs:
            x_best, flags = vertex(x, means)
            return [], _status(state, x, per, means, "budget", flags + ["unbracketed"], x_best)
        state.moves.append(-1 if add[0] < ks[0] else +1)
        return req, {"move": add}
    # ---- fill: every rate in the fit's window has min_seeds seeds before the fit is read
    i = int(np.argmin(np.where(finite, means, np.inf)))
    fill = [(ks[j], s) for j in range(max(0, i - WINDOW), min(len(ks), i + WINDOW + 1)) if finite[j]
            for s in state.seeds[:n0] if s not in state.seeds_at[ks[j]]]
    if fill:
        if state.runs() + len(fill) > b.max_runs:
            fill = fill[:b.max_runs - state.runs()]
            if not fill:
                x_best, flags = vertex(x, means)
                return [], _status(state, x, per, means, "budget", flags, x_best, vertex_interval(x, per),
                                   pooled_sd(per))
        return fill, {"fill": fill}
    # ---- fit and decide
    x_star, flags = vertex(x, means)
    ci = vertex_interval(x, per)
    i = int(np.argmin(np.where(finite, means, np.inf)))
    sd = pooled_sd(per)
    n_best = len(per[i])
    status = _status(state, x, per, means, None, flags, x_star, ci, sd)
    enough = n_best >= b.seeds_to_stop and ci is not None
    if enough and (ci[1] - ci[0]) / 2 <= b.tolerance and status["regret_bound"] is not None \
            and sd is not None and status["regret_bound"] <= sd / math.sqrt(n_best):
        status["stop"] = "converged"
        return [], status
    # ---- refine next to divergence: the midpoint between the best rate and a diverged neighbour
    ref = [(d, _k((ks[i] + ks[i + d]) / 2)) for d in (-1, +1)
           if 0 <= i + d < len(ks) and not finite[i + d] and state.refined.count(d) < REFINE]
    ref = ref[:max(0, b.max_runs - state.runs())]
    if ref:
        state.refined += [d for d, _ in ref]
        return [(k, state.seeds[0]) for _, k in ref], {**status, "refine": [k for _, k in ref]}
    # ---- add a seed where two rates are too close to call
    close = [i]
    if sd is not None:
        for j in range(len(ks)):
            if j != i and finite[j]:
                se = sd * math.sqrt(1 / len(per[j]) + 1 / n_best)
                if means[j] - means[i] <= Z * se:
                    close.append(j)
    if len(close) == 1:  # nothing within the noise: the better neighbour still sets the curvature
        nb = [j for j in (i - 1, i + 1) if 0 <= j < len(ks) and finite[j]]
        if nb:
            close.append(min(nb, key=lambda j: means[j]))
    req = []  # the best rate first, then the contenders by seed-mean (a cut budget keeps the closest)
    for j in sorted(set(close), key=lambda j: (j != i, means[j])):
        have = state.seeds_at[ks[j]]
        nxt = [s for s in state.seeds if s not in have]
        if nxt:
            req.append((ks[j], nxt[0]))
    if not req:
        status["stop"] = "seed-cap"
        return [], status
    if state.runs() + len(req) > b.max_runs:
        req = req[:b.max_runs - state.runs()]
        if not req:
            status["stop"] = "budget"
            return [], status
    return req, status


def _status(state, x, per, means, stop, flags, x_star=None, ci=None, sd=None) -> dict:
    regret = None
    if x_star is not None and ci is not None and math.isfinite(x_star):
        at = fitted_loss(x, means, x_star)
        ends = [fitted_loss(x, means, v) for v in ci]
        if at is not None and all(e is not None for e in ends):
            regret = max(ends) - at
    return {"x_star": x_star, "ci": ci, "flags": list(flags), "stop": stop, "pooled_sd": sd,
            "regret_bound": regret}


def search(prior: float, bracket: Bracket, seeds: list[int], run) -> dict:
    """The guided search from ``prior``; ``run(requests)`` trains the ``(rate, seed)`` pairs asked
    and returns their records (in order).  The result: ``eta_star_train`` and its CI, the stop, the
    rates tried with their seed-means, and ``trials`` (every record asked, in order)."""
    if len(seeds) < bracket.min_seeds:
        raise ValueError(f"seeds must give at least min_seeds = {bracket.min_seeds} seeds, got {len(seeds)}")
    state = State(prior, bracket, list(seeds))
    scores: dict = {}
    trials: list[dict] = []
    rounds = 0
    requests = [(k, s) for k in sorted(state.seeds_at) for s in state.seeds_at[k]]
    while True:
        records = run([(state.rate(k), s) for k, s in requests])
        for (k, s), rec in zip(requests, records):
            scores[(k, s)] = score_of(rec)
            if s not in state.seeds_at.setdefault(k, []):
                state.seeds_at[k].append(s)
            trials.append({"round": rounds, "k": k, "lr": state.rate(k), "seed": s, "record": rec})
        rounds += 1
        requests, status = next_cells(state, scores)
        if not requests:
            break
    x, per, means, ks = state.table(scores)
    x_star = status.get("x_star")
    ci = status.get("ci")
    ok = x_star is not None and math.isfinite(x_star)
    return {"eta_star_train": math.exp(x_star) if ok else None,
            "eta_star_train_ci": None if not ok or ci is None else [math.exp(ci[0]), math.exp(ci[1])],
            "stop": status["stop"], "flags": status["flags"], "rounds": rounds, "runs": state.runs(),
            "regret_bound": status.get("regret_bound"), "pooled_sd": status.get("pooled_sd"),
            "rates": [{"lr": state.rate(k), "k": k, "seeds": list(state.seeds_at[k]),
                       "loss_mean": float(m) if math.isfinite(m) else None,
                       "scores": [v if math.isfinite(v) else None for v in p]}
                      for k, p, m in zip(ks, per, means)],
            "trials": trials}
