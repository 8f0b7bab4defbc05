"""The learning-rate search over a sweep's records: the seed-mean score per rate, its optimum,
the optimum's seed bootstrap, and the power law of the optimum across depth (or width).

* ``loss_mean[i]``: the mean over seeds of the score at rate ``lrs[i]``; a diverged run scores
  ``+inf`` (never dropped), so a rate where any seed diverged has ``loss_mean = +inf`` (``null``
  in JSON) and ``diverged[i]`` says which fraction did.
* ``eta_star_grid``: the grid's argmin.  ``eta_star_train``: the vertex of the parabola through
  the argmin and its two neighbours in ``ln lr`` (a sub-grid optimum), kept inside them; where a
  neighbour is missing (the grid's edge), infinite (next to divergence) or the three points bend
  the wrong way, the grid's argmin, and ``flags`` say why.  ``resolved`` is false when the grid does
  not bracket one best rate (every rate diverged, the best at the grid's edge, or a tie).
* ``eta_star_train_ci``: the 2.5 and 97.5 percentiles of ``eta_star_train`` over
  :data:`BOOTSTRAP` resamples of the seeds (a resampled seed brings its runs at every rate: the
  rates share inits and minibatches).
* :func:`fit_power`: least squares of ``ln eta*`` on ``ln L``; its CI from the same bootstrap
  draws: every search draws the same seed indices (one fixed bootstrap seed), so the points
  are resampled paired by seed index (their seeds share minibatch orders).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from amutheory.bootstrap import resample, seed_draws
from amutheory.names import SCORES

#: bootstrap resamples of the seeds
BOOTSTRAP = 2000
#: the bootstrap's own seed (fixed: the same records give the same CI)
BOOTSTRAP_SEED = 20_251_125
#: flags under which the grid does not resolve the optimum: every rate diverged, the best rate is
#: at the grid's edge (the optimum may lie beyond it), or several rates share the best score (a tie)
UNRESOLVED = ("all-diverged", "edge", "tie")


def _vertex(x: np.ndarray, y: np.ndarray) -> tuple[float, list[str]]:
    """``(ln eta*, flags)`` from the seed-mean scores ``y`` at ``x = ln lr`` (sorted)."""
    finite = np.isfinite(y)
    if not finite.any():
        return math.nan, ["all-diverged"]
    i = int(np.argmin(np.where(finite, y, np.inf)))
    if np.count_nonzero(y[finite] == y[i]) > 1:
        return float(x[i]), ["tie"]
    if i == 0 or i == len(x) - 1:
        return float(x[i]), ["edge"]
    if not (finite[i - 1] and finite[i + 1]):
        return float(x[i]), ["next-to-divergence"]
    xs, ys = x[i - 1:i + 2], y[i - 1:i + 2]
    a, b, _ = np.polyfit(xs - x[i], ys, 2)
    if not a > 0:
        return float(x[i]), ["no-curvature"]
    return float(np.clip(x[i] - b / (2 * a), xs[0], xs[-1])), []


def _vertices(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """:func:`_vertex`'s ``ln eta*`` for every row of ``y`` (``draws x rates``) at once: the
    parabola through three points in closed form (what ``polyfit`` of degree 2 solves)."""
    finite = np.isfinite(y)
    rows = np.arange(len(y))
    i = np.argmin(np.where(finite, y, np.inf), axis=1)
    out = x[i].astype(float)
    out[~finite.any(1)] = np.nan
    inner = (i > 0) & (i < len(x) - 1)
    j = np.where(inner, i, 1)
    inner &= finite[rows, j - 1] & finite[rows, np.minimum(j + 1, len(x) - 1)]
    r, j = rows[inner], j[inner]
    h1, h2 = x[j] - x[j - 1], x[j + 1] - x[j]
    y0, y1, y2 = y[r, j - 1], y[r, j], y[r, j + 1]
    with np.errstate(invalid="ignore"):
        a = ((y0 - y1) / h1 + (y2 - y1) / h2) / (h1 + h2)
        b = (y2 - y1) / h2 - a * h2
        vertex = np.clip(x[j] - b / (2 * a), x[j - 1], x[j + 1])
    out[r] = np.where(a > 0, vertex, x[j])
    return out


@dataclass
class LrSearch:
    """The search at one depth and width: ``scores[i, s]`` of rate ``lrs[i]`` and seed ``seeds[s]``."""

    lrs: np.ndarray
    seeds: list
    scores: np.ndarray
    depth: int | None = None
    width: int | None = None
    boot: np.ndarray = field(default=None, repr=False)

    def __post_init__(self):
        order = np.argsort(self.lrs)
        self.lrs = np.asarray(self.lrs, float)[order]
        self.scores = np.asarray(self.scores, float)[order]
        x = np.log(self.lrs)
        self.loss_mean = self.scores.mean(1)
        self.diverged = (~np.isfinite(self.scores)).mean(1)
        log_eta, self.flags = _vertex(x, self.loss_mean)
        self.eta_star_train = math.exp(log_eta) if math.isfinite(log_eta) else math.nan
        finite = np.isfinite(self.loss_mean)
        self.eta_star_grid = float(self.lrs[np.argmin(np.where(finite, self.loss_mean, np.inf))]) if finite.any() \
            else math.nan
        n = self.scores.shape[1]
        draws = seed_draws(n, BOOTSTRAP, BOOTSTRAP_SEED)  # the same indices at every depth: paired
        self.boot = np.exp(_vertices(x, resample(draws, self.scores, axis=1).mean(2).T)) if n > 1 else None
        # delete-one-seed replicates (row j leaves seed j out), for the jackknife intervals of the protocol
        keep = ~np.eye(n, dtype=bool)
        self.jack = np.exp(_vertices(x, np.stack([self.scores[:, k].mean(1) for k in keep]))) if n > 2 else None
        with np.errstate(invalid="ignore"):  # a rate with a diverged seed has no finite spread
            se = self.scores.std(1, ddof=1) / math.sqrt(n) if n > 1 else np.full(len(x), np.nan)
        self.loss_ci = [(m - 1.96 * s, m + 1.96 * s) if np.isfinite(m) and np.isfinite(s) else None
                        for m, s in zip(self.loss_mean, se)]

    @property
    def eta_star_train_ci(self):
        if self.boot is None or not np.isfinite(self.boot).any():
            return None
        return [float(np.nanpercentile(self.boot, 2.5)), float(np.nanpercentile(self.boot, 97.5))]

    def to_dict(self) -> dict:
        def num(v):
            return float(v) if np.isfinite(v) else None

        return {"depth": self.depth, "width": self.width, "lrs": self.lrs.tolist(), "seeds": list(self.seeds),
                "loss_mean": [num(v) for v in self.loss_mean],
                "loss_ci": [None if c is None else [float(c[0]), float(c[1])] for c in self.loss_ci],
                "diverged": self.diverged.tolist(), "eta_star_train": num(self.eta_star_train),
                "eta_star_train_ci": self.eta_star_train_ci, "eta_star_grid": num(self.eta_star_grid),
                "flags": self.flags, "resolved": self.resolved}

    @property
    def resolved(self) -> bool:
        """Whether the grid brackets a single best rate (no flag of :data:`UNRESOLVED`): only then is
        ``eta_star_train`` an optimum rather than the grid's best point."""
        return not any(f in UNRESOLVED for f in self.flags)


def fit_power(xs, searches: list[LrSearch]) -> dict | None:
    """``eta*_train ~ prefactor * x^exponent`` over ``searches`` at ``xs`` (depths or widths):
    least squares in logs, CI from the searches' seed bootstraps (paired by seed index)."""
    xs = np.asarray(xs, float)
    eta = np.array([s.eta_star_train for s in searches])
    ok = np.isfinite(eta)
    if ok.sum() < 2:
        return None
    lx = np.log(xs[ok])
    slope, intercept = np.polyfit(lx, np.log(eta[ok]), 1)
    out = {"exponent": float(slope), "prefactor": float(math.exp(intercept)), "points": int(ok.sum()),
           "exponent_ci": None, "flagged": [float(x) for x, s in zip(xs, searches) if s.flags]}
    boots = [s.boot for s, k in zip(searches, ok) if k]
    if all(b is not None for b in boots):
        b = np.log(np.stack(boots, 1))
        good = np.isfinite(b).all(1)
        if good.sum() > 10:
            slopes = np.polyfit(lx, b[good].T, 1)[0]
            out["exponent_ci"] = [float(np.percentile(slopes, 2.5)), float(np.percentile(slopes, 97.5))]
    return out


def loss_at(search, lr: float) -> float | None:
    """The seed-mean loss at ``lr``, linear in ``ln lr`` between grid rates (``None`` off the grid;
    ``inf`` next to a diverged rate)."""
    x, y = np.log(search.lrs), search.loss_mean
    v = math.log(lr)
    if not (x[0] <= v <= x[-1]) or not math.isfinite(v):
        return None
    i = int(np.clip(np.searchsorted(x, v) - 1, 0, len(x) - 2))
    t = (v - x[i]) / (x[i + 1] - x[i])
    if not (np.isfinite(y[i]) and np.isfinite(y[i + 1])):
        return math.inf
    return float((1 - t) * y[i] + t * y[i + 1])
