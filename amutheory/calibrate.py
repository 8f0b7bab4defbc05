"""Calibration of the constants the theory cannot (yet) derive for conv chains.

The derived per-layer law (:func:`amutheory.symbolic.primitives.expansion.layer_moment`, finite width)

    s_l = lambda^l (e + a (l-1+eps)^2-part + b T-part),   lambda = 1 + gamma / n,

has ``epsilon`` derived exactly and ``a, b, e, gamma`` free.  They are fitted by least squares
on logs to the statistic (arithmetic or geometric mean over seeds) of nets at the *calibration
depths*, with one of two targets:

* ``target="s_bar"`` (default): ``s_bar(L) = (1/L) sum_l s_l`` of each calibration net -- the
  quantity ``eta*`` is made of.  The constants are then *effective*: they also absorb what the
  homogeneous expansion leaves out, chiefly the readout boundary (layers next to the head get
  a spatially coherent gradient and a larger update, an enhancement that fades with depth; in
  ReLU nets it makes the fitted ``gamma`` negative).
* ``target="layers"``: every ``s_l`` of every calibration net, assuming ``s_l`` does not
  depend on the net's depth -- a diagnostic of that assumption (it fails near the readout for
  ReLU, see docs/findings/conv_chains.md).  Every number coming out of here is labelled
``"calibrated"`` with the depths it saw; agreement checks use other depths only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from amutheory.bootstrap import resample, seed_draws
from amutheory.constants import Constant
from amutheory.symbolic.cache import compile_lambda, derivation, lambda_source
from amutheory.symbolic.primitives.expansion import layer_moment, log_spread, lognormal_mean_factor
from amutheory.symbolic.primitives.symbols import a, b, e, epsilon, l, lambda_

STATISTICS = ("mean", "geo")


@derivation
def _layer_source() -> str:
    """The printed source of :func:`_layer` (a derivation: read back, not printed again)."""
    return lambda_source((l, a, b, e, epsilon, lambda_), layer_moment(True), "numpy")


@functools.lru_cache(maxsize=None)
def _layer():
    """``s_l(l, a, b, e, epsilon, lambda)`` of the derived law, lambdified (made on first use)."""
    return compile_lambda(_layer_source(), "numpy")


def layer_prediction(layers, a_, b_, e_, eps_, gamma_, width) -> np.ndarray:
    """Per-layer ``s_l`` of the derived law (lambdified), ``lambda = 1 + gamma/width``."""
    layers = np.asarray(layers, dtype=float)
    return _layer()(layers, a_, b_, e_, eps_, 1.0 + gamma_ / width) * np.ones_like(layers)


@dataclass
class Calibration:
    """Fitted constants and where they came from."""

    constants: dict
    depths: list
    statistic: str
    width: int
    residual_rms: float
    notes: list = field(default_factory=list)
    #: the constants of every seed-bootstrap refit (``{name: value}``; empty where the calibration
    #: keeps none): a prediction made with each gives the prediction's own sampling spread
    draws: list = field(default_factory=list)
    #: residual degrees of freedom of the law's fit (calibration depths minus fitted law constants;
    #: ``None`` where not recorded)
    dof: int | None = None

    def values(self) -> dict:
        return {k: c.value for k, c in self.constants.items()}

    def to_dict(self) -> dict:
        return {"depths": list(self.depths), "statistic": self.statistic, "width": self.width,
                "residual_rms_log": self.residual_rms, "residual_dof": self.dof,
                "residual_se_log": residual_se(self.residual_rms, len(self.depths), self.dof),
                "constants": {k: c.to_dict() for k, c in self.constants.items()}, "notes": list(self.notes),
                "bootstrap_refits": len(self.draws)}


def residual_se(rms: float | None, points: int, dof: int | None) -> float | None:
    """The residual standard error ``sqrt(RSS / dof)`` of a least-squares fit from its rms residual
    ``sqrt(RSS / points)``: the estimate of the noise about the law that does not favour the law
    with more constants (an rms over ``points`` does); ``None`` without a positive ``dof``."""
    if rms is None or not dof or dof <= 0:
        return None
    return float(rms * np.sqrt(points / dof))


def per_layer_statistic(s: np.ndarray, statistic: str) -> np.ndarray:
    """Arithmetic (``mean``) or geometric (``geo``) mean over seeds (axis 0) of ``s[seed, l]``."""
    if statistic == "mean":
        return s.mean(axis=0)
    if statistic == "geo":
        return np.exp(np.log(s).mean(axis=0))
    raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")


TARGETS = ("s_bar", "layers")
MODELS = ("lognormal", "free-gamma")


def spread_text(power: float) -> str:
    """The spread model at ``power`` as the notes print it, ``sigma2_0 + kappa L^power`` written by
    SymPy from :func:`~amutheory.symbolic.primitives.expansion.log_spread` (not typed)."""
    return sp.sstr(log_spread(power))


def lognormal_notes(power: float) -> list:
    """The notes of a lognormal-model calibration at spread power ``power``: the model, with the
    typical value's factor written by SymPy from
    :func:`~amutheory.symbolic.primitives.expansion.lognormal_mean_factor`."""
    return [f"model lognormal (law = mean, typical = law * {sp.sstr(1 / lognormal_mean_factor(power))})"]


def calibrate(profiles: dict, epsilon_value: float, width: int, statistic: str = "mean",
              fit_gamma: bool = True, target: str = "s_bar", n_boot: int = 100, seed: int = 0,
              model: str = "lognormal") -> Calibration:
    """Calibrate the constants of the derived law on ``profiles = {depth: s[seed, l]}``.

    ``model="lognormal"`` (default, docs/theory.md section 8): the expansion computes an
    *expectation* over the weights, so the infinite-width law (``a, b, e``; ``gamma = 0``) is the
    law of the *mean* over seeds.  Per-seed ``s_bar`` is lognormal with a spread
    ``sigma^2(L) = Var[ln s_bar] = sigma2_0 + kappa L`` that grows linearly in ``L`` (a straight
    line fitted on the calibration depths), so the *typical* value (geometric mean) lies
    ``exp(-sigma^2(L)/2)`` below the mean.  ``a, b, e`` are fitted to the log of the geometric
    mean with that factor (the low-noise statistic; the sample mean of a lognormal is dominated
    by a few seeds); whichever ``statistic`` is asked for, the same constants describe both:
    ``mean = law``, ``typical = law * exp(-sigma^2/2)`` (:func:`amutheory.api.law_values`).
    Nothing here can trade a cubic for an exponential, which the four-constant fit below does.
    ``model="free-gamma"``: :func:`calibrate_free_gamma` (``a, b, e, gamma`` on one statistic)."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if model == "free-gamma":
        return calibrate_free_gamma(profiles, epsilon_value, width, statistic, fit_gamma, target, n_boot, seed)
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if target != "s_bar":
        raise ValueError("the lognormal model calibrates on s_bar only (target='s_bar')")
    _check_profiles(profiles)
    line = _variance_line(profiles)
    fit, _, _, dof = _fit(profiles, epsilon_value, width, "geo", False, "s_bar", shrink=line)

    def refit(resampled):
        bline = _variance_line(resampled)
        return _fit(resampled, epsilon_value, width, "geo", False, "s_bar", fit.x, shrink=bline)[0].x, bline

    se, se_line = _bootstrap_sd(profiles, refit, (3, 2), n_boot, seed)
    note = (f"law of the mean: least squares on log of the geometric mean of s_bar(L) times "
            f"{sp.sstr(lognormal_mean_factor(1))}, depths {sorted(profiles)}"
            + (f"; error = sd over {n_boot} seed-bootstrap refits" if n_boot else ""))
    vals = np.exp(fit.x)
    consts = {k: Constant(k, float(v), "calibrated", float(v * e), note=note)
              for k, v, e in zip(("a", "b", "e"), vals, se)}
    consts["epsilon"] = Constant("epsilon", epsilon_value, "exact")
    consts["gamma"] = Constant("gamma", 0.0, "convention", note="law of the mean: infinite-width law")
    lnote = f"Var[ln s_bar] over seeds = {spread_text(1)} (least squares), depths {sorted(profiles)}"
    consts["sigma2_0"] = Constant("sigma2_0", float(line[0]), "calibrated", float(se_line[0]), note=lnote)
    consts["kappa"] = Constant("kappa", float(line[1]), "calibrated", float(se_line[1]), note=lnote)
    rss = float(np.sum(fit.fun**2))
    return Calibration(consts, sorted(profiles), statistic, int(width), float(np.sqrt(rss / len(fit.fun))),
                       lognormal_notes(1) + [f"{dof} residual degrees of freedom in the fit of the law"])


def _bootstrap_refits(profiles: dict, refit, n_boot: int, seed: int) -> list:
    """``refit(resampled)`` for ``n_boot`` resamplings of the seeds with replacement (per depth,
    ``numpy.random.default_rng(seed)``); a refit that raises ``ValueError`` is skipped."""
    outs = []
    rng = np.random.default_rng(seed)
    for _ in range(n_boot or 0):
        resampled = {d: resample(seed_draws(len(s), rng=rng), s) for d, s in profiles.items()}
        try:
            outs.append(refit(resampled))
        except ValueError:
            continue
    return outs


def _refit_sd(outs: list, sizes: tuple) -> tuple:
    """Standard deviation of each quantity of :func:`_bootstrap_refits`' outputs (one array per
    quantity, ``sizes`` their lengths); NaN when fewer than two refits succeeded."""
    return tuple(np.std(np.asarray([o[i] for o in outs]), axis=0, ddof=1) if len(outs) >= 2 else np.full(n, np.nan)
                 for i, n in enumerate(sizes))


def _bootstrap_sd(profiles: dict, refit, sizes: tuple, n_boot: int, seed: int) -> tuple:
    """Standard deviations over ``n_boot`` refits on seeds resampled with replacement (per depth,
    ``numpy.random.default_rng(seed)``).  ``refit(resampled)`` returns one array per quantity
    (``sizes`` their lengths); a refit that raises ``ValueError`` is skipped; NaN when fewer than
    two refits succeed or ``n_boot`` is 0."""
    return _refit_sd(_bootstrap_refits(profiles, refit, n_boot, seed), sizes)


def _check_profiles(profiles):
    if not isinstance(profiles, dict) or not profiles:
        raise ValueError("profiles must be a non-empty dict {depth: array[seeds, depth]}")
    for depth, s in profiles.items():
        s = np.asarray(s, dtype=float)
        if s.ndim != 2 or s.shape[1] != depth or s.shape[0] < 2:
            raise ValueError(f"profiles[{depth}] must have shape (seeds >= 2, {depth}), got {s.shape}")
        if np.any(s <= 0) or not np.all(np.isfinite(s)):
            raise ValueError("profiles must be positive and finite")


def _variance_line(profiles, power: float = 1.0) -> np.ndarray:
    """``(sigma2_0, kappa)``: least-squares line of ``Var[ln s_bar]`` (over seeds) against ``L^power``."""
    depths = sorted(profiles)
    if len(depths) < 2:
        raise ValueError("the variance line needs at least 2 calibration depths")
    var = [np.var(np.log(np.asarray(profiles[d]).mean(axis=1)), ddof=1) for d in depths]
    slope, intercept = np.polyfit(np.asarray(depths, float) ** power, var, 1)
    return np.array([intercept, slope])


#: ``Var[ln s_bar] = sigma2_0 + kappa L^p`` of each spread model (:func:`calibrate_law`)
SPREAD_POWERS = {"linear": 1.0, "bounded": -1.0}


def calibrate_free_gamma(profiles: dict, epsilon_value: float, width: int, statistic: str = "mean",
                         fit_gamma: bool = True, target: str = "s_bar", n_boot: int = 100,
                         seed: int = 0) -> Calibration:
    """Fit ``a, b, e, gamma`` to ``profiles = {depth: s[seed, l]}`` (the probe's arrays).

    ``target``: ``s_bar`` (one point per calibration depth; needs as many depths as free
    constants) or ``layers`` (every layer of every calibration net).  The errors are the
    standard deviations of the constants over ``n_boot`` refits on seeds resampled with
    replacement (fixed ``seed``); ``n_boot=0`` skips them."""
    fit, ys, n_free, dof = _fit(profiles, epsilon_value, width, statistic, fit_gamma, target)
    (se,) = _bootstrap_sd(profiles, lambda r: (_fit(r, epsilon_value, width, statistic, fit_gamma, target,
                                                    fit.x)[0].x,), (n_free,), n_boot, seed)
    rss = float(np.sum(fit.fun**2))
    quantity = "s_l of every layer" if target == "layers" else "s_bar(L)"
    note = f"least squares on log {quantity} ({statistic} over seeds), depths {sorted(profiles)}"
    if n_boot:
        note += f"; error = sd over {n_boot} seed-bootstrap refits"
    vals = [np.exp(fit.x[0]), np.exp(fit.x[1]), np.exp(fit.x[2])]
    consts = {
        "a": Constant("a", vals[0], "calibrated", vals[0] * se[0], note=note),
        "b": Constant("b", vals[1], "calibrated", vals[1] * se[1], note=note),
        "e": Constant("e", vals[2], "calibrated", vals[2] * se[2], note=note),
        "epsilon": Constant("epsilon", epsilon_value, "exact"),
    }
    if fit_gamma:
        consts["gamma"] = Constant("gamma", float(fit.x[3]), "calibrated", float(se[3]), note=note)
    else:
        consts["gamma"] = Constant("gamma", 0.0, "convention", note="infinite-width law (not fitted)")
    return Calibration(consts, sorted(profiles), statistic, int(width), float(np.sqrt(rss / len(ys))),
                       [f"target {target}", f"{dof} residual degrees of freedom"])


def _fit(profiles, epsilon_value, width, statistic, fit_gamma, target, start=None, shrink=None):
    """Least-squares fit on logs; returns ``(fit, ys, n_free, dof)``.  ``shrink = (sigma2_0,
    kappa)``: the model is multiplied by ``exp(-(sigma2_0 + kappa L)/2)`` (law of the mean fitted
    to the typical value)."""
    if not isinstance(profiles, dict) or not profiles:
        raise ValueError("profiles must be a non-empty dict {depth: array[seeds, depth]}")
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    ls, ys, depths = [], [], []
    for depth, s in sorted(profiles.items()):
        s = np.asarray(s, dtype=float)
        if s.ndim != 2 or s.shape[1] != depth:
            raise ValueError(f"profiles[{depth}] must have shape (seeds, {depth}), got {s.shape}")
        if target == "layers":
            ls.extend(range(1, depth + 1))
            ys.extend(per_layer_statistic(s, statistic))
        else:
            depths.append(depth)
            ys.append(per_layer_statistic(s.mean(axis=1, keepdims=True), statistic)[0])
    ls, ys = np.asarray(ls, float), np.asarray(ys, float)
    if np.any(ys <= 0) or not np.all(np.isfinite(ys)):
        raise ValueError("profiles must be positive and finite")
    n_free = 4 if fit_gamma else 3
    n_points = len(set(ls)) if target == "layers" else len(depths)
    if n_points < n_free:
        raise ValueError(f"need at least {n_free} distinct {'layers' if target == 'layers' else 'depths'} "
                         f"to calibrate {n_free} constants, got {n_points}")

    def model(p):
        ga = p[3] if fit_gamma else 0.0
        av, bv, ev = np.exp(np.clip(p[:3], -700, 700))
        if target == "layers":
            return layer_prediction(ls, av, bv, ev, epsilon_value, ga, width)
        return np.array([np.mean(layer_prediction(np.arange(1, d + 1), av, bv, ev, epsilon_value, ga, width))
                         for d in depths])

    log_shrink = 0.0
    if shrink is not None:
        if target != "s_bar":
            raise ValueError("shrink applies to target='s_bar' only")
        log_shrink = -(shrink[0] + shrink[1] * np.asarray(depths, float)) / 2

    def resid(p):
        return np.log(np.maximum(model(p), 1e-300)) + log_shrink - np.log(ys)

    scale = float(np.median(ys / np.maximum(ls if target == "layers" else np.asarray(depths, float), 1) ** 2))
    p0 = [np.log(scale), np.log(scale / 2), np.log(scale / 10 + 1e-300)] + ([0.0] if fit_gamma else [])
    lo = [-np.inf, -np.inf, np.log(scale) - 30] + ([-0.5 * width] if fit_gamma else [])
    hi = [np.inf, np.inf, np.inf] + ([5.0 * width] if fit_gamma else [])
    if start is not None:
        p0 = np.clip(start, np.asarray(lo) + 1e-9, np.asarray(hi) - 1e-9)
    from scipy.optimize import least_squares  # SciPy's optimizers load only when a fit runs

    fit = least_squares(resid, p0, bounds=(lo, hi), x_scale="jac")
    dof = len(ys) - n_free
    return fit, ys, n_free, dof


def calibrate_law(profiles: dict, s_bar_fn, names: tuple, statistic: str = "mean", n_boot: int = 100,
                  seed: int = 0, note: str = "", signed: tuple = (), spread: str = "linear") -> Calibration:
    """Lognormal-model calibration (as :func:`calibrate`) of any law ``s_bar_fn(depths, *params)``
    with constants ``names``, positive except those in ``signed`` (any sign): the law is the mean
    over seeds, the typical value is ``law * exp(-sigma^2(L)/2)``, ``sigma^2 = sigma2_0 + kappa L``
    fitted on the same depths.  ``profiles = {depth: s[seed, preactivation]}`` (any number of
    pre-activations per net).  ``spread``: ``"linear"`` (``sigma^2 = sigma2_0 + kappa L``: chains,
    whose per-layer log-fluctuations add up) or ``"bounded"`` (``sigma2_0 + kappa / L``: forward-stable
    residual nets, K blocks of variance O(1/K) each); recorded as the constant ``spread_power``."""
    power, depths, is_signed = _check_law_inputs(profiles, names, statistic, signed, spread)
    best, line = _fit_law(profiles, s_bar_fn, depths, is_signed, power)

    def refit(resampled):
        """Constants and spread line of one seed-resampled refit, started from the best fit."""
        f, bl = _fit_law(resampled, s_bar_fn, depths, is_signed, power, best.x)
        return _law_values(f.x, is_signed), bl

    refits = _bootstrap_refits(profiles, refit, n_boot, seed)
    se, se_line = _refit_sd(refits, (len(names), 2))
    text = (note or "law of the mean") + (f": least squares on log geometric mean x "
                                         f"{sp.sstr(lognormal_mean_factor(power))}, depths "
                                         f"{sorted(profiles)}; error = sd over {n_boot} seed-bootstrap refits")
    consts = _law_constants(names, _law_values(best.x, is_signed), se, text, line, se_line, power, spread,
                            sorted(profiles))
    rms = float(np.sqrt(np.mean(best.fun**2)))
    draws = [{**dict(zip(names, map(float, v))), "sigma2_0": float(bl[0]), "kappa": float(bl[1])} for v, bl in refits]
    return Calibration(consts, sorted(profiles), statistic, 0, rms,
                       lognormal_notes(power)
                       + [f"{len(depths) - len(names)} residual degrees of freedom in the fit of the law"], draws,
                       dof=len(depths) - len(names))


def _check_law_inputs(profiles, names: tuple, statistic: str, signed: tuple, spread: str) -> tuple:
    """Check :func:`calibrate_law`'s arguments; returns ``(spread power, depths, which constants are signed)``."""
    if spread not in SPREAD_POWERS:
        raise ValueError(f"spread must be one of {', '.join(SPREAD_POWERS)}, got {spread!r}")
    power = SPREAD_POWERS[spread]
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if not isinstance(profiles, dict) or len(profiles) < len(names):
        raise ValueError(f"profiles must hold at least {len(names)} depths to calibrate {', '.join(names)}")
    for d, s in profiles.items():
        s = np.asarray(s, dtype=float)
        if s.ndim != 2 or s.shape[0] < 2 or np.any(s <= 0) or not np.all(np.isfinite(s)):
            raise ValueError(f"profiles[{d}] must be a positive finite array (seeds >= 2, preactivations)")
    depths = np.array(sorted(profiles), dtype=float)
    unknown = [k for k in signed if k not in names]
    if unknown:
        raise ValueError(f"signed names {unknown} are not among the constants {list(names)}")
    return power, depths, np.array([k in signed for k in names])


def _law_values(p, is_signed):
    """Fit parameters to constants: exp for the positive ones, identity for the signed."""
    return np.where(is_signed, p, np.exp(np.clip(p, -700, 700)))


def _fit_law(prof: dict, s_bar_fn, depths, is_signed, power: float, start=None) -> tuple:
    """``(least-squares fit, (sigma2_0, kappa))`` of the law of the mean to the geometric means of
    ``prof`` shrunk by the fitted spread; from ``start``, else from several starts (lowest cost kept)."""
    from scipy.optimize import least_squares

    line = _variance_line(prof, power)
    geo = np.array([np.exp(np.log(np.asarray(prof[int(d)]).mean(axis=1)).mean()) for d in depths])
    shrink = -(line[0] + line[1] * depths**power) / 2

    def resid(p):
        with np.errstate(over="ignore", invalid="ignore"):  # trial points far out overflow: huge residual
            model = np.asarray(s_bar_fn(depths, *_law_values(p, is_signed)), float)
        model = np.nan_to_num(model, nan=1e300, posinf=1e300)
        return np.log(np.maximum(model, 1e-300)) + shrink - np.log(geo)

    if start is not None:
        return least_squares(resid, start, x_scale="jac"), line
    # several starts: from a signed constant at 0 the fit can slide into a degenerate minimum (a
    # residual law with B -> 0 and |e0| -> oo, B e0^2 finite, and a worse fit); keep the lowest cost
    base = np.log(np.median(geo))
    starts = [np.where(is_signed, sign, base) for sign in ((0.0, -1.0, 1.0) if is_signed.any() else (0.0,))]
    return min((least_squares(resid, p0, x_scale="jac") for p0 in starts), key=lambda f: f.cost), line


def _law_constants(names: tuple, values, se, text: str, line, se_line, power: float, spread: str,
                   calibration_depths: list) -> dict:
    """The calibrated constants ``names`` (values, errors ``se``, note ``text``), the spread line
    ``sigma2_0, kappa`` (``line``, errors ``se_line``) and the convention ``spread_power``."""
    consts = {k: Constant(k, float(v), "calibrated", float(e_), note=text) for k, v, e_ in zip(names, values, se)}
    lnote = f"Var[ln s_bar] over seeds = {spread_text(power)} (least squares), depths {calibration_depths}"
    consts["sigma2_0"] = Constant("sigma2_0", float(line[0]), "calibrated", float(se_line[0]), note=lnote)
    consts["kappa"] = Constant("kappa", float(line[1]), "calibrated", float(se_line[1]), note=lnote)
    consts["spread_power"] = Constant("spread_power", power, "convention",
                                      note=f"spread model {spread!r}: Var[ln s_bar] = {spread_text(power)}")
    return consts
