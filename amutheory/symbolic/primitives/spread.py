"""How ``ln s_bar`` spreads over the probe's loss directions, derived.

The probe's ``s_bar`` is a quadratic form ``Q = vec(r)^T M vec(r)`` in its Gaussian loss
directions ``r`` (``B m`` of them; :mod:`amutheory.measure.loss_form` measures ``M``).  With
``lambda_i`` the eigenvalues of ``M``, ``Q = sum_i lambda_i z_i^2`` (``z_i`` i.i.d. standard
normal), whose Laplace transform is ``phi(t) = E[exp(-t Q)] = prod_i (1 + 2 lambda_i t)^(-1/2)``.
Everything below follows from ``phi``:

* **Mellin moments.**  ``E[Q^(-s)] = (1/Gamma(s)) int_0^oo t^(s-1) phi(t) dt``.  Split at
  ``t = 1`` and subtract ``phi(0) = 1`` below it:
  ``E[Q^(-s)] = (1 + s I(s)) / Gamma(1 + s)`` with
  ``I(s) = int_0^1 t^(s-1) (phi(t) - 1) dt + int_1^oo t^(s-1) phi(t) dt``, analytic at ``s = 0``.
  SymPy expands it in ``s`` (:func:`log_moments`): ``E[ln Q] = -(gamma_E + I_0)`` and
  ``Var[ln Q] = 2 I_1 - I_0^2 - pi^2/6`` with ``I_0 = I(0)``, ``I_1 = I'(0)`` -- two
  one-dimensional integrals per spectrum (:func:`log_moments_of_spectrum`, quadrature).
* **Equal eigenvalues.**  ``nu`` equal eigenvalues make ``Q`` a scaled chi-square with ``nu``
  degrees of freedom.  SymPy integrates its density against ``Q^s`` (:func:`chi_square_log_moments`):
  ``E[ln Q] - ln E[Q] = psi(nu/2) - ln(nu/2)`` and ``Var[ln Q] = psi'(nu/2)``.
* **The head makes the form isotropic in the outputs.**  No pre-activation lies after the linear
  head, so ``Delta h_l = sum_b' Theta_l(., b') W_head^T r_b'`` with ``Theta`` independent of
  ``W_head``; at infinite width ``W_head G W_head^T -> (tr G / n) I_m`` and ``M -> C (x) I_m``,
  ``C`` a ``B x B`` coupling of the samples.  ``nu`` runs from ``m`` (every sample coupled, ``C``
  of rank one) to ``B m`` (``C ~ I``).  So even at infinite width the loss-direction draw alone
  spreads ``ln s_bar`` by ``psi'(nu/2)`` -- ``psi'(5) = 0.221`` for the probe's ``m = 10``
  coupled outputs (derived: :func:`chi_square_var` ``(10)``) -- and puts the typical value
  ``exp(psi(nu/2) - ln(nu/2))`` below the mean:
  a spread that does not shrink with width.

The participation ratio ``(tr M)^2 / tr(M^2)`` equals ``nu`` for equal eigenvalues; it is the
effective number of directions the form spreads over.

* **Dense single-sample nets, exactly** (:func:`dense_spread`).  With one sample at one position
  (``kernel = spatial = batch = 1``) ``C`` is a number, so ``Q = C chi^2_m``.  The net is bias-free
  and positively homogeneous (linear, ReLU), so ``s_bar`` is homogeneous of degree 4 in the input;
  at infinite width the net's law given ``x`` depends on ``|x|`` alone (the stem's ``W_0 x`` is
  Gaussian with variance ``|x|^2``), and the stem's variance is ``chi^2_f / f`` (``f = c_in``).  So
  ``ln s_bar = const + ln(chi^2_m / m) + 2 ln(chi^2_f / f)`` with independent terms, and, nothing
  fitted,

      Var[ln s_bar] = psi'(m/2) + 4 psi'(f/2),
      E[ln s_bar] - ln E[s_bar] = [psi(m/2) - ln(m/2)] + 2 [psi(f/2) - ln(f/2)] - ln(1 + 2/f),

  the last term being ``ln E[(chi^2_f/f)^2]`` from the same Mellin moment at ``s = 2``.  For the
  probe's ``m = 10``, ``c_in = 3`` they are 3.96 and -1.35 (derived: :func:`dense_spread` ``(10, 3)``;
  ``tests/test_spread.py`` holds these figures to it) -- the typical value of a dense net is a
  quarter of its mean, at any width.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp
from scipy import integrate

s, t, q = sp.symbols("s t q", positive=True)
nu = sp.Symbol("nu", positive=True)
I0, I1 = sp.symbols("I_0 I_1", real=True)


@functools.lru_cache(maxsize=None)
def log_moments() -> dict[str, sp.Expr]:
    """``E[ln Q]`` and ``Var[ln Q]`` in terms of ``I_0 = I(0)`` and ``I_1 = I'(0)``.

    ``E[Q^(-s)] = (1 + s I(s)) / Gamma(1 + s)``; with ``I(s) = I_0 + I_1 s + O(s^2)``,
    ``E[ln Q] = -d/ds E[Q^(-s)]`` and ``E[ln^2 Q] = d^2/ds^2 E[Q^(-s)]`` at ``s = 0``."""
    mellin = (1 + s * (I0 + I1 * s)) / sp.gamma(1 + s)
    series = sp.series(mellin, s, 0, 3).removeO()
    first = series.coeff(s, 1)
    second = 2 * series.coeff(s, 2)
    mean = sp.simplify(-first)
    var = sp.expand(sp.simplify(second - mean**2))
    return {"mean_log": mean, "var_log": var}


@functools.lru_cache(maxsize=None)
def chi_square_log_moments() -> dict[str, sp.Expr]:
    """``Q = chi^2_nu / nu`` (unit mean): ``E[ln Q]`` (the typical-to-mean log gap) and ``Var[ln Q]``,
    from the Mellin moment ``E[Q^s]`` SymPy integrates from the chi-square density."""
    density = q ** (nu / 2 - 1) * sp.exp(-q / 2) / (2 ** (nu / 2) * sp.gamma(nu / 2))
    moment = sp.simplify(sp.integrate(q**s * density, (q, 0, sp.oo), conds="none")) / nu**s
    d1 = sp.diff(moment, s).subs(s, 0)
    d2 = sp.diff(moment, s, 2).subs(s, 0)
    gap = sp.simplify(sp.expand_func(d1))
    var = sp.simplify(sp.expand_func(d2 - d1**2))
    return {"gap_log": gap, "var_log": var, "mellin": moment}


#: the outputs ``m`` and the stem fan-in ``f`` of :func:`dense_spread_expressions`
outputs_m, fan_in_f = sp.symbols("m f", positive=True)


@functools.lru_cache(maxsize=None)
def dense_spread_expressions() -> dict[str, sp.Expr]:
    """``Var[ln s_bar]`` and ``E[ln s_bar] - ln E[s_bar]`` of a dense single-sample net at infinite
    width (module docstring), built from :func:`chi_square_log_moments`: the loss directions'
    chi-square with ``m`` degrees of freedom and the squared stem variance ``(chi^2_f / f)^2``."""
    chi = chi_square_log_moments()
    stem_second_moment = sp.simplify(sp.expand_func(chi["mellin"].subs({s: 2, nu: fan_in_f})))
    var = chi["var_log"].subs(nu, outputs_m) + 4 * chi["var_log"].subs(nu, fan_in_f)
    gap = chi["gap_log"].subs(nu, outputs_m) + 2 * chi["gap_log"].subs(nu, fan_in_f) - sp.log(stem_second_moment)
    return {"var_log": var, "gap_log": gap, "stem_second_moment": stem_second_moment}


@functools.lru_cache(maxsize=None)
def _dense_numeric():
    exprs = dense_spread_expressions()
    return (sp.lambdify((outputs_m, fan_in_f), exprs["var_log"], modules="scipy"),
            sp.lambdify((outputs_m, fan_in_f), exprs["gap_log"], modules="scipy"))


def dense_spread(outputs, stem_fan_in) -> tuple[float, float]:
    """``(Var[ln s_bar], E[ln s_bar] - ln E[s_bar])`` of a dense single-sample net at infinite width
    (exact; :func:`dense_spread_expressions`)."""
    for name, v in (("outputs", outputs), ("stem_fan_in", stem_fan_in)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    var_fn, gap_fn = _dense_numeric()
    return float(var_fn(int(outputs), int(stem_fan_in))), float(gap_fn(int(outputs), int(stem_fan_in)))


@functools.lru_cache(maxsize=None)
def _chi_square_numeric():
    exprs = chi_square_log_moments()
    return (sp.lambdify(nu, exprs["gap_log"], modules="scipy"),
            sp.lambdify(nu, exprs["var_log"], modules="scipy"))


def _check_dof(dof) -> float:
    if isinstance(dof, bool) or not isinstance(dof, (int, float, np.integer, np.floating)):
        raise TypeError(f"dof must be a positive number, got {type(dof).__name__} {dof!r}")
    if not (dof > 0 and math.isfinite(dof)):
        raise ValueError(f"dof must be a positive finite number, got {dof!r}")
    return float(dof)


def chi_square_gap(dof) -> float:
    """``E[ln Q] - ln E[Q]`` of ``dof`` equal eigenvalues: ``psi(dof/2) - ln(dof/2)`` (< 0)."""
    return float(_chi_square_numeric()[0](_check_dof(dof)))


def chi_square_var(dof) -> float:
    """``Var[ln Q]`` of ``dof`` equal eigenvalues: ``psi'(dof/2)``."""
    return float(_chi_square_numeric()[1](_check_dof(dof)))


@functools.lru_cache(maxsize=None)
def _log_moments_numeric():
    exprs = log_moments()
    return (sp.lambdify((I0, I1), exprs["mean_log"], modules="numpy"),
            sp.lambdify((I0, I1), exprs["var_log"], modules="numpy"))


def _check_spectrum(eigenvalues) -> np.ndarray:
    lam = np.asarray(eigenvalues, dtype=float)
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"eigenvalues must be a non-empty 1-d array, got shape {lam.shape}")
    if not np.all(np.isfinite(lam)) or np.any(lam < 0) or not np.any(lam > 0):
        raise ValueError("eigenvalues must be finite, non-negative and not all zero")
    return lam


def log_moments_of_spectrum(eigenvalues) -> tuple[float, float]:
    """``(E[ln Q] - ln E[Q], Var[ln Q])`` of ``Q = sum_i lambda_i z_i^2`` by quadrature of ``I_0, I_1``.

    The spectrum is scaled to unit trace first (``ln Q`` only shifts); quadrature error is below
    1e-8 on both (``scipy.integrate.quad`` tolerances; tested against the chi-square closed form)."""
    lam = _check_spectrum(eigenvalues)
    lam = lam[lam > 0] / lam.sum()

    def phi(u):
        return float(np.exp(-0.5 * np.sum(np.log1p(2.0 * lam * u))))

    opts = dict(epsabs=1e-11, epsrel=1e-10, limit=400)
    i0 = (integrate.quad(lambda u: (phi(u) - 1.0) / u, 0.0, 1.0, **opts)[0]
          + integrate.quad(lambda u: phi(u) / u, 1.0, np.inf, **opts)[0])
    i1 = (integrate.quad(lambda u: np.log(u) * (phi(u) - 1.0) / u, 0.0, 1.0, **opts)[0]
          + integrate.quad(lambda u: np.log(u) * phi(u) / u, 1.0, np.inf, **opts)[0])
    mean_log, var_log = _log_moments_numeric()
    return float(mean_log(i0, i1)), float(var_log(i0, i1))


def participation_ratio(eigenvalues) -> float:
    """``(sum lambda)^2 / sum lambda^2``: ``nu`` for ``nu`` equal eigenvalues."""
    lam = _check_spectrum(eigenvalues)
    return float(lam.sum() ** 2 / np.sum(lam**2))


# --------------------------------------------------------------------------- the linear MLP at infinite width
#: seed of :func:`linear_mlp_spread`'s own draws (independent of every probe's seeds)
LINEAR_MLP_SPREAD_SEED = 20261129


def linear_mlp_gram_form(x, r) -> np.ndarray:
    """``Q = tr(K R K)`` with ``K = x x^T``, ``R = r r^T`` (``x``: ``(..., B, C_0)`` inputs, ``r``: ``(..., B, m)`` loss
    directions; one value per leading index): ``||x x^T r||_F^2``.

    At infinite width a linear MLP's ``s_bar`` given its seed's ``x`` and ``r`` is ``c_L Q`` with ``c_L`` a number
    of the depth alone: every layer's Gram of the samples is a fixed multiple of ``K`` (each critical layer keeps
    ``E|W h|^2 = |h|^2``, and at infinite width the Gram is its mean), and what the readout sees of an update,
    ``V~ S_lj S_lj' V~^T``, concentrates to a multiple of ``I_m``; the update of layer ``j`` seen at layer ``l`` is
    then ``Delta h_l`` proportional to ``r^T K``, so ``|Delta h_l|^2`` is proportional to ``tr(K r r^T K)``.  (At
    ``B = 1`` this is ``|x|^4 |r|^2``, the dense single-sample case of :func:`dense_spread`.)"""
    x, r = np.asarray(x, dtype=float), np.asarray(r, dtype=float)
    if x.ndim < 2 or r.ndim < 2 or x.shape[:-1] != r.shape[:-1]:
        raise ValueError(f"x (..., B, C_0) and r (..., B, m) must share their leading shape, got {x.shape}, {r.shape}")
    kr = x @ (np.swapaxes(x, -1, -2) @ r)
    return np.sum(kr * kr, axis=(-2, -1))


def linear_mlp_spread(batch, input_features, outputs, draws: int = 2**20,
                      seed: int = LINEAR_MLP_SPREAD_SEED) -> dict:
    """The seed spread of a linear MLP's ``ln s_bar`` at infinite width, ``Var ln Q`` of :func:`linear_mlp_gram_form`
    over Gaussian inputs (``batch x input_features``, unit variance: the scale cancels) and loss directions
    (``batch x outputs``), and the typical value's gap ``E ln Q - ln E Q``; the same at every depth.  A Monte Carlo of
    this finite-dimensional law (``draws`` draws): ``{"var_log", "var_log_se", "gap_log", "gap_log_se", "draws"}``,
    each standard error the delta method's over the draws."""
    for name, v in (("batch", batch), ("input_features", input_features), ("outputs", outputs), ("draws", draws)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__} {v!r}")
        if v < (2 if name == "draws" else 1):
            raise ValueError(f"{name} must be >= {2 if name == 'draws' else 1}, got {v}")
    rng = np.random.default_rng(seed)
    logs, step = [], 2**16
    for start in range(0, int(draws), step):
        k = min(step, int(draws) - start)
        x = rng.standard_normal((k, int(batch), int(input_features)))
        r = rng.standard_normal((k, int(batch), int(outputs)))
        logs.append(np.log(linear_mlp_gram_form(x, r)))
    y = np.concatenate(logs)
    centred = y - y.mean()
    var = float(np.mean(centred**2)) * len(y) / (len(y) - 1)
    var_se = float(np.sqrt(max(np.mean(centred**4) - var**2, 0.0) / len(y)))
    q = np.exp(y - y.max())                              # ln E Q, stably
    log_mean = float(np.log(q.mean()) + y.max())
    w = q / q.mean()                                     # delta method: d(ln E Q) = dE[Q] / E[Q]
    gap_se = float(np.sqrt(np.var(y - w, ddof=1) / len(y)))
    return {"var_log": var, "var_log_se": var_se, "gap_log": float(y.mean()) - log_mean, "gap_log_se": gap_se,
            "draws": int(draws)}
