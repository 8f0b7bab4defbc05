"""Seed statistics for probe measurements: bootstrap intervals and log-log slopes.

Pure numpy/scipy (no torch).  Every random choice is drawn from
``numpy.random.default_rng(seed)`` (the resampled seed indices by
:func:`amutheory.bootstrap.seed_draws`), so each result is a deterministic function of its inputs
and ``seed``.

Notation: ``x_1 .. x_n`` are i.i.d. per-seed values, ``T`` a statistic, ``B = n_boot`` the number
of bootstrap replicates, ``alpha = 1 - level``.

* :func:`bootstrap_ci` -- percentile bootstrap
  ``[q_{alpha/2}, q_{1-alpha/2}]`` of ``{T(x*_b)}_{b=1..B}``, ``x*_b`` drawn from the
  ``x_i`` with replacement;
* :func:`arith_mean_ci` -- ``mean = (1/n) sum_i x_i`` and its interval (the percentile bootstrap; BCa, the
  bootstrap-t or Cox's log-normal interval on request: :data:`MEAN_CI_METHODS`);
* :func:`geo_mean_ci` -- ``G = exp((1/n) sum_i ln x_i)`` and ``exp`` of the bootstrap
  interval of the mean of ``ln x``;
* :func:`fit_loglog_slope` -- least-squares slope of ``ln T_j`` against ``ln L_j`` over depths
  ``L_j`` (``T_j`` the mean or geometric mean over seeds at depth ``L_j``), with a bootstrap
  interval from resampling seeds;
* :func:`extrapolate_in_width` -- that slope at several widths, extrapolated to ``n -> oo``
  in ``1/n``, with a bootstrap interval;
* :func:`local_slopes` -- finite-difference ``d ln v / d ln L`` at every depth;
* :func:`held_out_test` -- joint chi-square and Bonferroni check of predictions at several
  independent depths (the per-depth 95% intervals alone miss ~5% of the time each, so a right
  prediction checked at k depths misses somewhere with probability ~1 - 0.95^k).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from amutheory.bootstrap import percentile_interval, resample, seed_draws

__all__ = [
    "SlopeFit",
    "bootstrap_ci",
    "arith_mean_ci",
    "MEAN_CI_METHODS",
    "geo_mean_ci",
    "fit_loglog_slope",
    "WidthExtrapolation",
    "extrapolate_in_width",
    "local_slopes",
    "eta_slope_between",
    "integer_neighbours",
    "central_eta_slope",
    "HeldOutTest",
    "held_out_test",
]


# --------------------------------------------------------------------------- validation


def _as_1d_finite(name: str, values, min_len: int = 2) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers ({exc})") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size < min_len:
        raise ValueError(f"{name} must hold at least {min_len} values, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(arr)))} "
                         f"non-finite value(s)")
    return arr


def _check_positive(name: str, arr: np.ndarray) -> np.ndarray:
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got minimum {arr.min()!r}")
    return arr


def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, numbers.Real):
        raise TypeError(f"level must be a real number, got {type(level).__name__} {level!r}")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return level


def _check_n_boot(n_boot) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral):
        raise TypeError(f"n_boot must be an integer, got {type(n_boot).__name__} {n_boot!r}")
    if n_boot < 10:
        raise ValueError(f"n_boot must be >= 10, got {n_boot}")
    return int(n_boot)


def _quantiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = percentile_interval(boot, level, axis=None)
    return float(lo), float(hi)


# --------------------------------------------------------------------------- bootstrap

_MAX_BLOCK = 2_000_000  # resampled values held at once by the vectorised path


def _boot_stats(arr: np.ndarray, statistic, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``T(x*_b)`` for ``b = 1..n_boot``; ``statistic(sample, axis=-1)`` is used when the
    statistic accepts it (numpy reductions), a plain loop otherwise."""
    n = arr.size
    idx = seed_draws(n, n_boot, rng)
    out = np.empty(n_boot)
    block = max(1, _MAX_BLOCK // n)
    try:
        for start in range(0, n_boot, block):
            res = np.asarray(statistic(arr[idx[start:start + block]], axis=-1), dtype=float)
            if res.shape != (min(block, n_boot - start),):
                raise TypeError("statistic did not reduce along axis=-1")
            out[start:start + block] = res
    except TypeError:
        out = np.array([float(statistic(arr[i])) for i in idx])
    return out


def bootstrap_ci(samples, statistic=np.mean, level: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``statistic(samples)``.

    Draw ``B = n_boot`` resamples ``x*_b`` of size ``n`` from ``samples`` with replacement
    (indices from ``numpy.random.default_rng(seed)``), evaluate ``T_b = statistic(x*_b)`` and
    return the empirical quantiles

        lo = q_{alpha/2}({T_b}),   hi = q_{1 - alpha/2}({T_b}),   alpha = 1 - level.

    Parameters
    ----------
    samples : 1-D array-like of at least 2 finite values.
    statistic : callable mapping a 1-D array to a scalar; if it accepts ``axis=-1`` (numpy
        reductions such as ``np.mean``, ``np.median``) the replicates are computed vectorised.
    level : coverage in (0, 1).
    n_boot : number of replicates (>= 10).
    seed : seed of the resampling generator; the result is deterministic given it.

    Raises
    ------
    ValueError naming ``samples``, ``level`` or ``n_boot`` for bad input.
    """
    arr = _as_1d_finite("samples", samples)
    level = _check_level(level)
    n_boot = _check_n_boot(n_boot)
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    rng = np.random.default_rng(seed)
    return _quantiles(_boot_stats(arr, statistic, n_boot, rng), level)


def joint_bootstrap_ci(columns: dict, statistics, level: float = 0.95, n_boot: int = 1000,
                       seed: int = 0) -> dict[str, tuple[float, float]]:
    """Percentile-bootstrap intervals of several statistics of per-seed ``columns`` (equal-length
    arrays) resampled *jointly*: each replicate draws one set of seed indices and
    ``statistics(**resampled_columns)`` returns a dict of scalars; the result maps each key to
    its interval (the resampling generator seeded with ``seed``)."""
    level = _check_level(level)
    n_boot = _check_n_boot(n_boot)
    cols = {k: np.asarray(v) for k, v in columns.items()}
    sizes = {v.shape for v in cols.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1 or next(iter(sizes))[0] < 2:
        raise ValueError("columns must be 1-d arrays of one common length >= 2")
    size = next(iter(sizes))[0]
    draws = seed_draws(size, n_boot, seed)
    boot = [statistics(**{k: resample(i, v) for k, v in cols.items()}) for i in draws]  # paired by seed
    return {key: _quantiles(np.array([b[key] for b in boot], dtype=float), level) for key in boot[0]}


#: the intervals :func:`arith_mean_ci` computes for a mean (study P2 of ``validate/plans/FINITE_WIDTH.md``
#: measured their coverage on heavy-tailed seed means)
MEAN_CI_METHODS = ("percentile", "bca", "studentized", "cox")


def arith_mean_ci(x, level: float = 0.95, n_boot: int = 2000,
                  seed: int = 0, method: str = "percentile") -> tuple[float, float, float]:
    """``(mean, lo, hi)``: ``mean = (1/n) sum_i x_i`` and its interval at ``level`` by ``method``:

    * ``"percentile"`` -- the percentile bootstrap (:func:`bootstrap_ci` with ``statistic=np.mean``);
    * ``"bca"`` -- the bias-corrected and accelerated bootstrap: the percentile levels moved to
      ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``, ``z0 = Phi^-1(share of replicates below the mean)`` and the
      acceleration ``a = sum d^3 / (6 (sum d^2)^(3/2))`` from the jackknife means' deviations ``d``;
    * ``"studentized"`` -- the bootstrap-t: ``mean - t*_(1-alpha/2) se``, ``mean - t*_(alpha/2) se`` with
      ``t* = (mean* - mean) / se*`` over the replicates and ``se = sd / sqrt(n)``;
    * ``"cox"`` -- Cox's log-normal interval from the mean ``m`` and variance ``v`` of ``ln x`` (positive ``x``
      only): ``exp(m + v/2 -+ z sqrt(v/n + v^2 / (2 (n - 1))))``, ``z`` the normal quantile (no resampling).

    Raises ``ValueError`` naming ``x``, ``level``, ``n_boot`` or ``method`` for bad input."""
    arr = _as_1d_finite("x", x)
    if not isinstance(method, str) or method not in MEAN_CI_METHODS:
        raise ValueError(f"method must be one of {', '.join(MEAN_CI_METHODS)}, got {method!r}")
    if method == "percentile":
        return (float(arr.mean()),) + bootstrap_ci(arr, np.mean, level=level, n_boot=n_boot, seed=seed)
    level = _check_level(level)
    if method == "cox":
        return (float(arr.mean()),) + _cox_interval(_check_positive("x", arr), level)
    boot = {"bca": _bca_interval, "studentized": _studentized_interval}[method]
    return (float(arr.mean()),) + boot(arr, level, _check_n_boot(n_boot), np.random.default_rng(seed))


def _cox_interval(arr: np.ndarray, level: float) -> tuple[float, float]:
    """Cox's log-normal interval of the mean of positive ``arr`` (:func:`arith_mean_ci`)."""
    from scipy.stats import norm

    logs = np.log(arr)
    m, v, n = logs.mean(), logs.var(ddof=1), logs.size
    half = norm.ppf(0.5 + level / 2) * np.sqrt(v / n + v**2 / (2 * (n - 1)))
    return float(np.exp(m + v / 2 - half)), float(np.exp(m + v / 2 + half))


def _bca_interval(arr: np.ndarray, level: float, n_boot: int, rng) -> tuple[float, float]:
    """The BCa interval of the mean of ``arr`` on the percentile interval's replicates (:func:`arith_mean_ci`)."""
    from scipy.stats import norm

    n, mean = arr.size, arr.mean()
    boot = _boot_stats(arr, np.mean, n_boot, rng)
    share = (np.sum(boot < mean) + 0.5 * np.sum(boot == mean)) / boot.size
    z0 = norm.ppf(np.clip(share, 1.0 / (2 * boot.size), 1.0 - 1.0 / (2 * boot.size)))
    d = (arr.sum() - arr) / (n - 1)            # the jackknife means
    d = d.mean() - d
    denom = 6.0 * np.sum(d**2) ** 1.5
    a = float(np.sum(d**3) / denom) if denom > 0 else 0.0
    z = norm.ppf([(1 - level) / 2, (1 + level) / 2])
    lo, hi = np.quantile(boot, norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))
    return float(lo), float(hi)


def _studentized_interval(arr: np.ndarray, level: float, n_boot: int, rng) -> tuple[float, float]:
    """The bootstrap-t interval of the mean of ``arr`` (:func:`arith_mean_ci`): each replicate's ``t*`` through
    :func:`_boot_stats`, on the percentile interval's resamples."""
    n, mean = arr.size, arr.mean()
    se = arr.std(ddof=1) / np.sqrt(n)

    def t_star(sample, axis=-1):
        return (sample.mean(axis=axis) - mean) / (sample.std(axis=axis, ddof=1) / np.sqrt(n))

    with np.errstate(divide="ignore", invalid="ignore"):
        t = _boot_stats(arr, t_star, n_boot, rng)
    t = t[np.isfinite(t)]                          # a resample of one repeated value has se* = 0
    t_lo, t_hi = np.quantile(t, [(1 - level) / 2, (1 + level) / 2])
    return float(mean - t_hi * se), float(mean - t_lo * se)


def geo_mean_ci(x, level: float = 0.95, n_boot: int = 2000,
                seed: int = 0) -> tuple[float, float, float]:
    """``(G, lo, hi)`` for the geometric mean ``G = exp((1/n) sum_i ln x_i)`` of positive ``x``.

    The interval is the percentile-bootstrap interval of the mean of ``ln x``, exponentiated:
    ``(exp(lo_ln), exp(hi_ln))`` (``exp`` is monotone, so this is also the percentile interval of
    the bootstrapped geometric means).  Raises ``ValueError`` naming ``x`` unless every value is
    finite and > 0.
    """
    arr = _check_positive("x", _as_1d_finite("x", x))
    logs = np.log(arr)
    lo, hi = bootstrap_ci(logs, np.mean, level=level, n_boot=n_boot, seed=seed)
    return float(np.exp(logs.mean())), float(np.exp(lo)), float(np.exp(hi))


# --------------------------------------------------------------------------- log-log slopes


@dataclass(frozen=True)
class SlopeFit:
    """Result of :func:`fit_loglog_slope`: ``ln T(L) ~ intercept + slope * ln L``.

    ``ci = (lo, hi)`` is the percentile-bootstrap interval of ``slope`` at ``level``.
    """

    slope: float
    intercept: float
    ci: tuple[float, float]
    level: float = 0.95

    def predict(self, depths) -> np.ndarray:
        """``exp(intercept) * L**slope`` at ``depths``."""
        return np.exp(self.intercept) * np.asarray(depths, dtype=float) ** self.slope


def _ls_line(lx: np.ndarray, ly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares line of ``ly[..., j]`` against ``lx[j]`` (vectorised over leading axes):
    ``slope = sum_j (lx_j - mean lx)(ly_j - mean ly) / sum_j (lx_j - mean lx)^2``,
    ``intercept = mean ly - slope * mean lx``."""
    dx = lx - lx.mean()
    slope = (ly - ly.mean(axis=-1, keepdims=True)) @ dx / (dx @ dx)
    return slope, ly.mean(axis=-1) - slope * lx.mean()


def _seed_stat(values: np.ndarray, statistic: str) -> np.ndarray:
    """Mean (``"mean"``) or geometric mean (``"geo"``) over the seed axis (-2)."""
    if statistic == "mean":
        return values.mean(axis=-2)
    return np.exp(np.log(values).mean(axis=-2))


def lognormal_mean_coverage(var_ln: float, n: int, z: float, samples: int = 4000, seed: int = 0) -> float:
    """The share of ``samples`` log-normal samples of size ``n`` (``Var ln = var_ln``, fixed ``seed``) whose
    normal interval ``mean +- z se`` holds the true mean: what such an interval covers if the values averaged were
    log-normal with that spread (the model the findings pages set beside measured coverage)."""
    rng = np.random.default_rng(seed)
    v = np.exp(rng.normal(-var_ln / 2, np.sqrt(var_ln), (samples, n)))
    m, se = v.mean(axis=1), v.std(axis=1, ddof=1) / np.sqrt(n)
    return float(np.mean(np.abs(m - 1.0) <= z * se))


def fit_loglog_slope(depths, values_per_seed, level: float = 0.95, n_boot: int = 2000,
                     seed: int = 0, statistic: str = "mean",
                     resample: str = "seeds") -> SlopeFit:
    """Power-law exponent of a per-seed quantity against depth, with a seed-bootstrap interval.

    ``values_per_seed[i, j]`` is the value of seed ``i`` at depth ``L_j = depths[j]``.  With
    ``T_j`` the statistic over seeds at depth ``L_j``,

        T_j = (1/S) sum_i v_ij                       (statistic="mean")
        T_j = exp((1/S) sum_i ln v_ij)               (statistic="geo"),

    the fit is ordinary least squares of ``y_j = ln T_j`` on ``u_j = ln L_j``:

        slope = sum_j (u_j - u_bar)(y_j - y_bar) / sum_j (u_j - u_bar)^2,
        intercept = y_bar - slope * u_bar,

    so ``T(L) ~ exp(intercept) * L**slope``.

    Bootstrap (``n_boot`` replicates, ``numpy.random.default_rng(seed)``): the per-seed values are
    resampled, ``T_j`` recomputed and the slope refitted; ``ci`` holds the percentile interval.

    * ``resample="seeds"`` (default): whole rows are drawn, the same seed indices at every
      depth.  The networks at different depths are different nets, but one seed can share
      parts of its random draws across depths (e.g. the first layer's weights); drawing rows
      jointly keeps whatever correlation that induces, and is valid whether or not the depths
      are independent.  It needs the same seeds at every depth (the array's shape says so).
    * ``resample="independent"``: each depth's column is resampled on its own, valid when the
      columns are independent (distinct seeds per depth); usually a slightly wider interval
      when the columns are positively correlated.

    Parameters
    ----------
    depths : 1-D array-like of ``D >= 2`` positive finite depths with at least 2 distinct values.
    values_per_seed : array ``[n_seeds, D]`` (``n_seeds >= 2``) of finite values > 0.
    level, n_boot, seed : as in :func:`bootstrap_ci`.
    statistic : ``"mean"`` or ``"geo"``.
    resample : ``"seeds"`` or ``"independent"``.
    """
    lx, vals = _slope_input(depths, values_per_seed, statistic)
    if resample not in ("seeds", "independent"):
        raise ValueError(f"resample must be 'seeds' or 'independent', got {resample!r}")
    level = _check_level(level)
    n_boot = _check_n_boot(n_boot)

    slope, intercept = _ls_line(lx, np.log(_seed_stat(vals, statistic)))
    slopes = _boot_slopes(lx, vals, statistic, n_boot, np.random.default_rng(seed), resample)
    return SlopeFit(slope=float(slope), intercept=float(intercept),
                    ci=_quantiles(slopes, level), level=level)


def _slope_input(depths, values_per_seed, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """``(ln depths, values)`` of :func:`fit_loglog_slope`, checked (ValueError naming the argument)."""
    lx = np.log(_check_positive("depths", _as_1d_finite("depths", depths)))
    if np.ptp(lx) == 0:
        raise ValueError("depths must hold at least 2 distinct values")
    try:
        vals = np.asarray(values_per_seed, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values_per_seed must be an array of real numbers ({exc})") from None
    if vals.ndim != 2 or vals.shape[1] != lx.size:
        raise ValueError(f"values_per_seed must have shape [n_seeds, {lx.size}] (one column per "
                         f"depth), got {vals.shape}")
    if vals.shape[0] < 2:
        raise ValueError(f"values_per_seed must hold at least 2 seeds (rows), got {vals.shape[0]}")
    if not np.all(np.isfinite(vals)):
        raise ValueError("values_per_seed must be finite")
    _check_positive("values_per_seed", vals)
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    return lx, vals


def _boot_slopes(lx: np.ndarray, vals: np.ndarray, statistic: str, n_boot: int, rng: np.random.Generator,
                 resample: str = "seeds") -> np.ndarray:
    """The ``n_boot`` bootstrap replicates of :func:`fit_loglog_slope`'s slope."""
    n_seeds, n_depths = vals.shape
    cols = np.arange(n_depths)
    slopes = np.empty(n_boot)
    block = max(1, _MAX_BLOCK // vals.size)
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        if resample == "seeds":
            boot = vals[seed_draws(n_seeds, b, rng)]                # [b, S, D]
        else:
            rows = seed_draws(n_seeds, b, rng, columns=n_depths)
            boot = vals[rows, cols]                                # [b, S, D]
        slopes[start:start + b] = _ls_line(lx, np.log(_seed_stat(boot, statistic)))[0]
    return slopes


@dataclass(frozen=True)
class WidthExtrapolation:
    """Result of :func:`extrapolate_in_width`: the log-log slope at every width and its
    ``n -> oo`` limit under ``slope(n) = limit + coefficient / n``."""

    widths: tuple
    slopes: tuple
    slope_cis: tuple
    limit: float
    limit_ci: tuple[float, float]
    coefficient: float
    level: float = 0.95
    #: the bootstrap replicates: ``[n_boot, W]`` slopes and ``[n_boot]`` limits (for pooling
    #: several extrapolations; not in :meth:`to_dict`)
    slope_replicates: np.ndarray | None = field(default=None, repr=False, compare=False)
    limit_replicates: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"widths": list(self.widths), "slopes": list(self.slopes), "slope_cis": [list(c) for c in self.slope_cis],
                "limit": self.limit, "limit_ci": list(self.limit_ci), "coefficient": self.coefficient,
                "level": self.level}


def extrapolate_in_width(widths, depths, values_per_width, level: float = 0.95, n_boot: int = 2000,
                         seed: int = 0, statistic: str = "mean") -> WidthExtrapolation:
    """Log-log slope of a per-seed quantity against depth at several widths, extrapolated to
    infinite width.

    At each width ``n_w`` the slope ``p_w`` is :func:`fit_loglog_slope`'s over ``depths`` (the
    same depths at every width).  At fixed depths a finite-width net's seed statistic is a series
    in ``1/n`` about its infinite-width value, so ``p(n) = p_oo + a / n + O(1/n^2)``;
    ``limit = p_oo`` and ``coefficient = a`` are the least-squares line of ``p_w`` on ``1/n_w``
    (with two widths, ``p_oo = (n_2 p_2 - n_1 p_1) / (n_2 - n_1)``: Richardson extrapolation).
    With two widths the ``1/n`` form is assumed, not tested.

    CI (``slope_cis`` and ``limit_ci`` from the same replicates): each bootstrap replicate resamples the seeds of every width on its own (the nets of
    different widths are independent draws; within a width, a seed's row is kept whole as in
    ``resample="seeds"``), refits every ``p_w`` and the line; ``limit_ci`` is the percentile
    interval.  The extrapolation multiplies the noise (two widths, ``n_2 = 2 n_1``: the variance
    of ``p_oo`` is ``4 var p_2 + var p_1``), so its interval is wider than either width's.

    Parameters
    ----------
    widths : ``W >= 2`` distinct positive widths.
    depths : as in :func:`fit_loglog_slope`.
    values_per_width : ``W`` arrays ``[n_seeds_w, D]`` of finite values > 0, one per width.
    level, n_boot, seed, statistic : as in :func:`fit_loglog_slope`.
    """
    n = _check_positive("widths", _as_1d_finite("widths", widths))
    if np.unique(n).size != n.size:
        raise ValueError(f"widths must be distinct, got {list(widths)}")
    if len(values_per_width) != n.size:
        raise ValueError(f"values_per_width must hold {n.size} arrays (one per width), got {len(values_per_width)}")
    level, n_boot = _check_level(level), _check_n_boot(n_boot)
    checked = [_slope_input(depths, v, statistic) for v in values_per_width]
    lx = checked[0][0]
    slopes = np.array([_ls_line(lx, np.log(_seed_stat(v, statistic)))[0] for _, v in checked])
    rng = np.random.default_rng(seed)
    boot = np.stack([_boot_slopes(lx, v, statistic, n_boot, rng) for _, v in checked], axis=-1)  # [n_boot, W]
    inv = 1.0 / n
    coefficient, limit = _ls_line(inv, slopes)
    _, limits = _ls_line(inv, boot)
    return WidthExtrapolation(tuple(float(w) for w in n), tuple(float(p) for p in slopes),
                              tuple(_quantiles(boot[:, w], level) for w in range(n.size)), float(limit),
                              _quantiles(limits, level), float(coefficient), level, boot, limits)


def eta_slope_between(s_lo, s_hi, depth_lo, depth_hi):
    """Secant slope of ``eta* = sqrt(C / s_bar)`` in log-log: ``-(1/2) (ln s_hi - ln s_lo) /
    (ln L_hi - ln L_lo)`` (elementwise; ``C`` cancels)."""
    return -0.5 * (np.log(s_hi) - np.log(s_lo)) / (np.log(depth_hi) - np.log(depth_lo))


def integer_neighbours(depths) -> tuple[list[int], list[int]]:
    """``(L - 1, L + 1)`` for every integer depth ``L`` (``(1, 2)`` at ``L = 1``: one-sided)."""
    depths = [int(d) for d in depths]
    return [d - 1 if d > 1 else d for d in depths], [d + 1 for d in depths]


def central_eta_slope(values: dict, depths) -> np.ndarray:
    """:func:`eta_slope_between` over the :func:`integer_neighbours` of each depth, from
    ``values[L]`` (an ``s_bar`` or a ratio of them) at every depth and neighbour."""
    lo, hi = integer_neighbours(depths)
    return eta_slope_between(np.array([values[x] for x in lo]), np.array([values[x] for x in hi]),
                             np.array(lo, float), np.array(hi, float))


def local_slopes(depths, values) -> np.ndarray:
    """Local log-log slope ``d ln v / d ln L`` at every depth, aligned with ``depths``.

    With ``u_j = ln L_j`` (strictly increasing), ``y_j = ln v_j``, ``h_- = u_j - u_{j-1}`` and
    ``h_+ = u_{j+1} - u_j``:

    * interior points, centred (second-order on a non-uniform grid, the secant
      ``(y_{j+1} - y_{j-1}) / (u_{j+1} - u_{j-1})`` when ``h_- = h_+``):

          g_j = [h_-^2 y_{j+1} + (h_+^2 - h_-^2) y_j - h_+^2 y_{j-1}] / [h_- h_+ (h_- + h_+)];

    * ends, one-sided: ``g_0 = (y_1 - y_0) / (u_1 - u_0)``,
      ``g_{D-1} = (y_{D-1} - y_{D-2}) / (u_{D-1} - u_{D-2})``.

    Exact for a pure power law ``v = a L^p`` (every ``g_j = p``).  ``values`` may have leading
    axes (e.g. ``[n_seeds, D]``); the slope is taken along the last one.

    Parameters
    ----------
    depths : 1-D, ``D >= 2`` strictly increasing positive finite depths.
    values : array ``[..., D]`` of finite values > 0.
    """
    lx = np.log(_check_positive("depths", _as_1d_finite("depths", depths)))
    if np.any(np.diff(lx) <= 0):
        raise ValueError("depths must be strictly increasing")
    try:
        vals = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be an array of real numbers ({exc})") from None
    if vals.ndim == 0 or vals.shape[-1] != lx.size:
        raise ValueError(f"values must have last axis of length {lx.size} (one per depth), "
                         f"got shape {vals.shape}")
    if not np.all(np.isfinite(vals)):
        raise ValueError("values must be finite")
    ly = np.log(_check_positive("values", vals))

    g = np.empty_like(ly)
    g[..., 0] = (ly[..., 1] - ly[..., 0]) / (lx[1] - lx[0])
    g[..., -1] = (ly[..., -1] - ly[..., -2]) / (lx[-1] - lx[-2])
    if lx.size > 2:
        hm = lx[1:-1] - lx[:-2]
        hp = lx[2:] - lx[1:-1]
        g[..., 1:-1] = (hm**2 * ly[..., 2:] + (hp**2 - hm**2) * ly[..., 1:-1]
                        - hp**2 * ly[..., :-2]) / (hm * hp * (hm + hp))
    return g


# --------------------------------------------------------------------------- held-out checks


@dataclass(frozen=True)
class HeldOutTest:
    """Joint check of predictions at several independent depths (each depth a separate set of nets).

    Per depth ``i`` with ``n`` seeds, ``y = ln x`` (sample mean ``ybar``, sd ``s``), the lognormal
    model of the seeds gives a ``t``-statistic with ``n - 1`` degrees of freedom:

    * typical value (``geo``): ``t = (ln p - ybar) / (s / sqrt(n))`` -- exact for lognormal seeds;
    * mean (``mean``, Cox's method): ``t = (ln p - ybar - s^2/2) / sqrt(s^2/n + s^4 / (2(n-1)))``.

    ``z = Phi^-1(F_{t,n-1}(t))`` maps it to a standard normal; ``chi2 = sum z^2`` has ``k``
    degrees of freedom when the predictions are right; ``p_value = P(chi2_k >= chi2)``.
    ``bonferroni_inside[i]``: ``|t_i| <= t_{n-1}(1 - alpha/(2k))``, a family-wise level-``alpha``
    check.  (Percentile-bootstrap intervals of a lognormal mean under-cover at n = 32 -- a
    simulation in ``tests/test_stats.py`` shows it, the findings pages (docs/findings/) report the
    rate -- which is why this test is parametric.)  The prediction's own uncertainty (calibrated
    constants) is not included, so the test errs on the side of rejecting."""

    z: tuple
    chi2: float
    dof: int
    p_value: float
    bonferroni_level: float
    bonferroni_inside: tuple

    def to_dict(self) -> dict:
        return {"z": list(self.z), "chi2": self.chi2, "dof": self.dof, "p_value": self.p_value,
                "bonferroni_level": self.bonferroni_level, "bonferroni_inside": list(self.bonferroni_inside)}


def held_out_test(predictions, samples_per_depth, statistic: str = "mean", level: float = 0.95,
                  prediction_log_sd=None) -> HeldOutTest:
    """:class:`HeldOutTest` of positive ``predictions[i]`` against the per-seed values
    ``samples_per_depth[i]`` (one 1-D array of at least 3 positive values per depth), for the
    arithmetic (``mean``) or geometric (``geo``) mean over seeds.

    ``prediction_log_sd[i]`` (optional): the sd of ``ln predictions[i]`` from its own sampling
    error (e.g. over the calibration's bootstrap refits).  The prediction and the held-out nets are
    independent draws, so the standard error of ``ln p - centre`` is
    ``sqrt(se^2 + prediction_log_sd^2)``; the ``t`` reference keeps ``n - 1`` degrees of freedom.
    Without it the prediction is taken as exact (the test then errs on the side of rejecting)."""
    from scipy import stats as sst

    pred = _check_positive("predictions", _as_1d_finite("predictions", predictions, min_len=1))
    if len(samples_per_depth) != pred.size:
        raise ValueError(f"samples_per_depth must hold {pred.size} arrays, got {len(samples_per_depth)}")
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    level = _check_level(level)
    k = pred.size
    if prediction_log_sd is None:
        psd = np.zeros(k)
    else:
        psd = _as_1d_finite("prediction_log_sd", prediction_log_sd, min_len=1)
        if psd.size != k or np.any(psd < 0):
            raise ValueError(f"prediction_log_sd must hold {k} values >= 0, got {list(prediction_log_sd)}")
    bonf = 1.0 - (1.0 - level) / k
    zs, inside = [], []
    for p, x, sd_p in zip(pred, samples_per_depth, psd):
        y = np.log(_check_positive("samples_per_depth", _as_1d_finite("samples_per_depth", x, min_len=3)))
        n, ybar, var = y.size, float(y.mean()), float(y.var(ddof=1))
        if statistic == "geo":
            centre, se = ybar, np.sqrt(var / n)
        else:
            centre, se = ybar + var / 2, np.sqrt(var / n + var**2 / (2 * (n - 1)))
        se = np.sqrt(se**2 + sd_p**2)
        t = (np.log(p) - centre) / se if se > 0 else np.copysign(np.inf, np.log(p) - centre)
        zs.append(float(sst.norm.ppf(sst.t.cdf(t, n - 1))) if np.isfinite(t) else float(t))
        inside.append(bool(abs(t) <= sst.t.ppf(1 - (1 - bonf) / 2, n - 1)))
    chi2 = float(np.sum(np.square(zs)))
    return HeldOutTest(tuple(zs), chi2, k, float(sst.chi2.sf(chi2, k)), bonf, tuple(inside))
