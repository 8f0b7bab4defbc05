"""The learning-rate search over a sweep's records: the seed-mean score per rate, its optimum,
the optimum's seed bootstrap, and the power law of the optimum across depth (or width).

* ``loss_mean[i]``: the mean over seeds of the score at rate ``lrs[i]``; a diverged run scores
  ``+inf`` (never dropped), so a rate where any seed diverged has ``loss_mean = +inf`` (``null``
  in JSON) and ``diverged[i]`` says which fraction did.  Where the caller scores a diverged run
  with a finite value instead (the chance loss, registration 2026-11-28: a run that diverged learned
  nothing) and passes ``diverged_runs``, the seed mean stays finite and ``diverged`` comes from it.
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

**The smooth optimum** (``window`` given; the training protocol registered on 2026-11-27b): the
three-point vertex above is an argmin followed by a local fit, so it jumps when a replicate's
argmin moves to another rate -- not a smooth function of the seed means, and the delete-one
jackknife is not consistent for it.  With ``window = w`` (in ``ln lr``) the fit's points are fixed
once, from the full seed mean: every finite rate within ``w`` of its argmin, up to the first
diverged rate on each side.  A least-squares parabola through the seed means at those rates gives
``ln eta* = -b / 2a``; every replicate (leave-one-seed-out means, bootstrap means) refits the same
parabola on the same rates, so each replicate is a smooth (rational) function of the seed means.
The vertex is held inside the window's rates (flag ``outside`` where the full fit leaves them: then
it has no CI, its replicates are not finite);
under three rates in the window, or a parabola that does not open upward, the argmin is kept and
flagged (``few-points`` / ``no-curvature``) and its replicates are not finite (no CI).  ``interval =
"jackknife"`` makes ``eta_star_train_ci`` the delete-one-seed jackknife on ``ln eta*`` with a
``t_{n-1}`` quantile (:func:`amutheory.bootstrap.jackknife_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from amutheory.bootstrap import jackknife_interval, leave_one_out, resample, seed_draws
from amutheory.names import SCORES

#: bootstrap resamples of the seeds
BOOTSTRAP = 2000
#: the bootstrap's own seed (fixed: the same records give the same CI)
BOOTSTRAP_SEED = 20_251_125
#: flags under which the grid does not resolve the optimum: every rate diverged, the best rate is
#: at the grid's edge (the optimum may lie beyond it), or several rates share the best score (a tie)
UNRESOLVED = ("all-diverged", "edge", "tie")
#: optimum methods: the three-point vertex around the argmin (registrations up to 2026-11-27), or the
#: smooth window fit (module docstring)
OPTIMA = ("vertex", "smooth", "per-seed")


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


def smooth_window(x: np.ndarray, y: np.ndarray, window: float) -> tuple[int, np.ndarray]:
    """``(argmin, indices)``: the finite rates within ``window`` of the seed-mean argmin in ``x = ln lr``,
    contiguous (stopping at the first non-finite rate on each side); ``(-1, [])`` if none is finite."""
    finite = np.isfinite(y)
    if not finite.any():
        return -1, np.array([], int)
    i = int(np.argmin(np.where(finite, y, np.inf)))
    tol = window * (1 + 1e-9)
    lo = i
    while lo > 0 and finite[lo - 1] and x[i] - x[lo - 1] <= tol:
        lo -= 1
    hi = i
    while hi < len(x) - 1 and finite[hi + 1] and x[hi + 1] - x[i] <= tol:
        hi += 1
    return i, np.arange(lo, hi + 1)


def smooth_vertices(x: np.ndarray, rows: np.ndarray, idx: np.ndarray, centre: float, clip: bool = True) -> np.ndarray:
    """``ln eta*`` of the least-squares parabola through ``rows[:, idx]`` at ``x[idx]`` for every row
    (one design matrix for all), held inside ``x[idx]`` (``clip``; replicates are not held, so that a
    clipped point cannot fake a zero-width CI); ``nan`` where the parabola does not open upward."""
    u = x[idx] - centre
    design = np.stack([u ** 2, u, np.ones_like(u)], 1)
    coef = np.linalg.lstsq(design, np.asarray(rows, float)[:, idx].T, rcond=None)[0]
    a, b = coef[0], coef[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        v = centre - b / (2 * a)
        if clip:
            v = np.clip(v, x[idx[0]], x[idx[-1]])
    return np.where(a > 0, v, np.nan)


#: flags of a seed's own optimum: its vertex held at its window's end because the next rate is its own
#: divergence (``seed-at-divergence``), beyond the grid (``seed-at-edge``) or outside the window
#: (``seed-outside``); or its best rate kept (``seed-few-points``, ``seed-no-curvature``)
SEED_FLAGS = ("seed-at-divergence", "seed-at-edge", "seed-outside", "seed-few-points", "seed-no-curvature")


def seed_optimum(x: np.ndarray, y: np.ndarray, window: float) -> tuple[float, str | None]:
    """``(ln eta*_s, flag)``: one seed's smooth optimum: the least-squares parabola through its finite
    scores within ``window`` of its own argmin (stopping at its first diverged rate on each side), its
    vertex held inside them.  A vertex held at the window's end, fewer than three rates or a parabola
    that does not open upward keep the best rate at hand (flag of :data:`SEED_FLAGS`); ``nan`` if every
    rate diverged."""
    i, idx = smooth_window(x, y, window)
    if i < 0:
        return math.nan, None
    if len(idx) < 3:
        return float(x[i]), "seed-few-points"
    v = smooth_vertices(x, y[None], idx, x[i])[0]
    if not np.isfinite(v):
        return float(x[i]), "seed-no-curvature"
    if v == x[idx[-1]] or v == x[idx[0]]:
        end = idx[-1] if v == x[idx[-1]] else idx[0]
        beyond = end + 1 if end == idx[-1] else end - 1
        if not 0 <= beyond < len(x):
            return float(v), "seed-at-edge"
        return float(v), "seed-at-divergence" if not np.isfinite(y[beyond]) else "seed-outside"
    return float(v), None


@dataclass
class LrSearch:
    """The search at one depth and width: ``scores[i, s]`` of rate ``lrs[i]`` and seed ``seeds[s]``."""

    lrs: np.ndarray
    seeds: list
    scores: np.ndarray
    depth: int | None = None
    width: int | None = None
    boot: np.ndarray = field(default=None, repr=False)
    #: ``ln lr`` half-width of the smooth optimum's window (``None``: the three-point vertex)
    window: float | None = None
    #: how ``eta_star_train_ci`` is made: ``"bootstrap"`` (percentile) or ``"jackknife"``
    interval: str = "bootstrap"
    #: which runs diverged, where ``scores`` give them a finite score (the chance loss: the registration of
    #: 2026-11-28); ``None``: a diverged run is a non-finite score
    diverged_runs: np.ndarray | None = field(default=None, repr=False)
    #: the optimum of each seed's own scores, averaged in ``ln`` over seeds (module docstring, the registration
    #: of 2026-11-28); needs ``window``
    per_seed: bool = False

    def __post_init__(self):
        order = np.argsort(self.lrs)
        self.lrs = np.asarray(self.lrs, float)[order]
        self.scores = np.asarray(self.scores, float)[order]
        x = np.log(self.lrs)
        self.loss_mean = self.scores.mean(1)
        self.seed_optima = None  # each seed's own optimum (the per-seed method only)
        if self.diverged_runs is None:
            self.diverged = (~np.isfinite(self.scores)).mean(1)
        else:
            dead = np.asarray(self.diverged_runs, bool)
            if dead.shape != self.scores.shape:
                raise ValueError(f"diverged_runs must have the shape of scores {self.scores.shape}, got {dead.shape}")
            self._dead = dead[order]
            self.diverged = self._dead.mean(1)
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
        if self.per_seed:
            self._per_seed(x, draws)
        elif self.window is not None:
            self._smooth(x, draws)
        with np.errstate(invalid="ignore"):  # a rate with a diverged seed has no finite spread
            se = self.scores.std(1, ddof=1) / math.sqrt(n) if n > 1 else np.full(len(x), np.nan)
        self.loss_ci = [(m - 1.96 * s, m + 1.96 * s) if np.isfinite(m) and np.isfinite(s) else None
                        for m, s in zip(self.loss_mean, se)]

    def _smooth(self, x: np.ndarray, draws: np.ndarray) -> None:
        """The smooth optimum (module docstring) in place of the three-point vertex, with its
        leave-one-seed-out (``jack``) and bootstrap (``boot``) replicates on the same window."""
        if not (isinstance(self.window, (int, float)) and math.isfinite(self.window) and self.window > 0):
            raise ValueError(f"window must be a finite ln-rate half-width > 0, got {self.window!r}")
        i, idx = smooth_window(x, self.loss_mean, float(self.window))
        self.window_rates = np.exp(x[idx]).tolist()
        n = self.scores.shape[1]
        nan = np.full(n, np.nan)
        if i < 0:
            self.flags, self.eta_star_train, self.jack, self.boot = ["all-diverged"], math.nan, nan, None
            return
        flags = []
        if i in (0, len(x) - 1):
            flags.append("edge")
        elif self.diverged[i - 1] > 0 or self.diverged[i + 1] > 0:
            flags.append("next-to-divergence")
        if np.count_nonzero(self.loss_mean[np.isfinite(self.loss_mean)] == self.loss_mean[i]) > 1:
            flags.append("tie")
        if len(idx) < 3:
            self.flags, self.eta_star_train, self.jack = flags + ["few-points"], float(self.lrs[i]), nan
            self.boot = None
            return
        point = smooth_vertices(x, self.loss_mean[None], idx, x[i])[0]
        if not np.isfinite(point):
            self.flags, self.eta_star_train, self.jack = flags + ["no-curvature"], float(self.lrs[i]), nan
            self.boot = None
            return
        self.flags, self.eta_star_train = flags, math.exp(point)
        if point in (x[idx[0]], x[idx[-1]]):  # held at the window's end: an optimum not resolved, no CI
            self.flags, self.jack, self.boot = flags + ["outside"], nan, None
            return
        self.jack = np.exp(smooth_vertices(x, leave_one_out(self.scores, axis=1), idx, x[i], clip=False)) \
            if n > 2 else None
        self.boot = np.exp(smooth_vertices(x, resample(draws, self.scores, axis=1).mean(2).T, idx, x[i], clip=False)) \
            if n > 1 else None

    def _per_seed(self, x: np.ndarray, draws: np.ndarray) -> None:
        """The per-seed optimum (module docstring): each seed's smooth optimum on its own finite scores,
        ``ln eta* = mean_s ln eta*_s``; its replicates are means of the same per-seed values."""
        if not (isinstance(self.window, (int, float)) and math.isfinite(self.window) and self.window > 0):
            raise ValueError(f"window must be a finite ln-rate half-width > 0 for the per-seed optimum, got "
                             f"{self.window!r}")
        n = self.scores.shape[1]
        own, counts = np.full(n, np.nan), {}
        for j in range(n):
            col = self.scores[:, j]
            if self.diverged_runs is not None:  # a seed's own divergence ends its window, whatever it scored
                col = np.where(self._dead[:, j], np.inf, col)
            own[j], flag = seed_optimum(x, col, float(self.window))
            if flag:
                counts[flag] = counts.get(flag, 0) + 1
        self.seed_optima = np.exp(own).tolist()
        self.flags = [f"{flag}: {k} of {n} seeds" for flag, k in sorted(counts.items())]
        if not np.isfinite(own).all():
            self.eta_star_train, self.jack, self.boot = math.nan, np.full(n, np.nan), None
            self.flags.append("all-diverged")
            return
        self.eta_star_train = math.exp(own.mean())
        self.jack = np.exp(leave_one_out(own)) if n > 2 else None
        self.boot = np.exp(resample(draws, own).mean(1)) if n > 1 else None

    @property
    def eta_star_train_ci(self):
        if self.interval == "jackknife":
            if self.jack is None or not np.isfinite(self.eta_star_train):
                return None
            c = jackknife_interval(math.log(self.eta_star_train), np.log(self.jack))
            return None if c is None else [math.exp(c[0]), math.exp(c[1])]
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
