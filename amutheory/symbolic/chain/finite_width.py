"""Exact finite-width law of the *linear* MLP (and of the zero mode of a linear circular chain).

At infinite width the one-step moment of the linear chain is the zero-mode cubic of
:mod:`amutheory.symbolic.chain.spectral`.  At width ``n`` every term of the expansion is a moment of
products of ``n x n`` Gaussian matrices, and three facts make each one exact:

* **Above layer l nothing changes.**  The readout sees ``h_l`` through ``V~ = V W_L ... W_(l+1)``,
  and ``W_(l+1) = W' O`` with ``O`` Haar and independent of everything below, so
  ``E[V~ X V~^T] = tau(X) E[V~ V~^T]`` exactly (``tau = tr / n``) and ``E[V~ V~^T] = n v_r I`` (each
  critical layer keeps ``E|W h|^2 = |h|^2``): ``s_l`` does not depend on the depth ``L`` above it.
* **Wishart moments.**  A Gaussian layer with ``R`` rows of variance ``sigma^2`` maps a Gram ``K`` to
  ``K' = Y^T Y`` with the rows of ``Y`` i.i.d. ``N(0, sigma^2 K)``; the pair ``(E tr K^2, E (tr K)^2)``
  goes through the linear map of :func:`layer_transfer` (Wick's theorem on four Gaussians).  The
  same map carries the moments of ``U^T U`` for a product ``U`` of ``p`` layers, ``u_p = E tau((U
  U^T)^2)`` and ``w_p = E tau(U U^T)^2``.  For hidden layers, in the coordinates ``(t_2, t_11 / n)``,
  it is the matrix ``T`` of :func:`hidden_transfer`, with eigenvalues ``1 + 2/n`` and ``1 - 1/n``.
* **The pairs factor.**  With ``S_j = F_lj F_lj^T`` (``F_lj = W_l ... W_(j+1)``) the pair of updated
  layers ``j <= j'`` contributes ``E[tau(S_j S_j') tr(K_(j-1) K_(j'-1))]``, which rotation invariance
  splits into ``u_(l-j) kappa_(j-1)`` (``j = j'``) and ``u_(l-j') beta_j w_(j'-j-1) kappa_(j-1)``
  (``j < j'``): ``kappa_j = E tr K_j^2`` the forward Gram's second moment, ``beta_j = n sigma_j^2``
  (``n / C_0`` for the input layer, 1 for a hidden one).

So, with ``v_r`` the readout variance, ``m`` outputs and ``B`` samples,

    E[s_l] = (v_r m / B^3) [ sum_j u_(l-j) kappa_(j-1) + 2 sum_(j < j') u_(l-j') beta_j w_(j'-j-1) kappa_(j-1) ],

a double convolution of sequences whose generating functions are rational in ``z`` (the powers of
``T``).  :func:`layer_generating_function` is ``S(z) = sum_l E[s_l] z^l`` derived in closed form;
its denominator ``(1 - (1 + 2/n) z)^3 (1 - (1 - 1/n) z)^3`` is a recurrence of order six that the
predictors run (:func:`finite_width_layer_moments`, :func:`finite_width_s_bar`), nothing fitted.  As
``n -> oo`` the eigenvalues merge at 1 and ``S(z)`` becomes the zero-mode cubic's generating
function (:func:`infinite_width_limit_holds`, checked symbolically in the tests).  At finite width
the forward Gram's second moment grows like ``(1 + 2/n)^j`` (and faster, through ``(tr K)^2 / n``,
when the ``B`` samples are many): the excess of relative order ``L / n`` the infinite-width law
leaves out.  Everything here is the mean over seeds (weights, inputs and loss directions).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.cache import compile_lambda, derivation, lambda_source

z = sp.Symbol("z")
"""The generating-function variable: ``S(z) = sum_l E[s_l] z^l``."""
n, C_0, B, m, v, v_r = sp.symbols("n C_0 B m v v_r", positive=True)
"""Width, input features, batch, outputs, input variance, readout variance."""
R_rows, sigma2 = sp.symbols("R sigma2", positive=True)
t2, t11 = sp.symbols("t_2 t_11", nonnegative=True)


def layer_transfer(rows=R_rows, variance=sigma2) -> sp.Matrix:
    """``(E tr K'^2, E (tr K')^2)`` from ``(tr K^2, (tr K)^2)`` for ``K' = Y^T Y``, ``Y`` of ``rows``
    i.i.d. rows ``N(0, variance K)``: with ``y_i`` the rows, ``E tr(y_i y_i^T y_k y_k^T)`` is ``tr K^2``
    for ``i != k`` and ``(tr K)^2 + 2 tr K^2`` for ``i = k`` (Isserlis), ``Var y^T y = 2 tr K^2``."""
    return variance**2 * sp.Matrix([[rows * (rows + 1), rows], [2 * rows, rows**2]])


def hidden_transfer() -> sp.Matrix:
    """:func:`layer_transfer` of a hidden layer (``n`` rows, variance ``1/n``) in the coordinates
    ``(t_2, t_11 / n)``: ``[[1 + 1/n, 1], [2/n^2, 1]]``."""
    scale = sp.diag(1, 1 / n)
    return sp.simplify(scale * layer_transfer(n, 1 / n) * scale.inv())


def transfer_eigenvalues() -> list:
    """The eigenvalues of :func:`hidden_transfer`: ``1 + 2/n`` (the norm's ``E (chi^2_n / n)^2``) and
    ``1 - 1/n``."""
    return sorted(hidden_transfer().eigenvals(), key=sp.default_sort_key)


def input_gram_moments() -> sp.Matrix:
    """``(E tr K_0^2, E (tr K_0)^2)`` of the inputs' ``B x B`` Gram, ``C_0`` i.i.d. Gaussian features of
    variance ``v`` per sample: :func:`layer_transfer` of ``C_0`` rows on the identity."""
    return layer_transfer(C_0, v) * sp.Matrix([B, B**2])


def _power_series(vector: sp.Matrix) -> sp.Matrix:
    """``sum_p T^p vector z^p = (I - z T)^(-1) vector``, ``T`` the hidden transfer."""
    return sp.simplify((sp.eye(2) - z * hidden_transfer()).inv() * vector)


@derivation
def layer_generating_function() -> sp.Expr:
    """``S(z) = sum_(l >= 1) E[s_l] z^l`` of the linear MLP at width ``n`` (module docstring), a
    rational function of ``z``: ``U(z) [K(z) + 2 z W(z) K_beta(z)]`` times ``v_r m / B^3``, with ``U``
    and ``W`` the series of ``u_p`` and ``w_p`` and ``K`` (``K_beta``) the forward moments
    ``kappa_(j-1)`` (weighted by ``beta_j``) at ``z^j``."""
    return generating_function_with(_power_series(sp.Matrix([1, 1])))


def generating_function_with(backward: sp.Matrix) -> sp.Expr:
    """``(v_r m / B^3) U(z) [K(z) + 2 z W(z) K_beta(z)]`` for the backward series ``backward = (U, W)``
    (the forward series ``K``, ``K_beta`` at width ``n``): :func:`layer_generating_function` with its own
    backward series, and the split law of :mod:`amutheory.symbolic.chain.backward_width` with others."""
    g2, g11 = input_gram_moments()
    first = layer_transfer(n, 1 / C_0) * sp.Matrix([g2, g11])  # the input layer: n rows, variance 1/C_0
    hidden = _power_series(sp.Matrix([first[0], first[1] / n]))[0]  # kappa_1, kappa_2, ... at z^0, z^1, ...
    forward = g2 * z + z**2 * hidden
    weighted = (n / C_0) * g2 * z + z**2 * hidden
    total = backward[0] * (forward + 2 * z * backward[1] * weighted)
    return sp.factor(sp.together(v_r * m / B**3 * total))


@derivation
def depth_generating_function() -> sp.Expr:
    """``sum_L (sum_(l <= L) E[s_l]) z^L = S(z) / (1 - z)``: ``L E[s_bar(L)]`` at ``z^L``."""
    return sp.factor(layer_generating_function() / (1 - z))


def infinite_width_generating_function() -> sp.Expr:
    """The zero-mode law of :mod:`amutheory.symbolic.chain.spectral` (``weight_0 Q_l(1)``, a cubic)
    as a series in ``z``, at the MLP's ``weight_0 = v_r m n^2 E tr K_0^2 / (B^3 C_0^2)`` and
    ``epsilon = C_0 / n``, from the pair kernel ``sum_(j, j' <= l) w_j w_j' (1 + l - max)``."""
    eps = C_0 / n
    weight0 = v_r * m * n**2 * input_gram_moments()[0] / (B**3 * C_0**2)
    # sum_l z^l sum_(j, j' <= l) w_j w_j' (l - max + 1): pairs by max M contribute P(M) z^M / (1 - z)^2
    pairs = eps**2 * z + sum_max_pairs(eps) * z**2
    return sp.factor(weight0 * pairs / (1 - z)**2)


def sum_max_pairs(eps) -> sp.Expr:
    """``P(M)`` for ``M >= 2`` summed as a series ``sum_(M >= 2) P(M) z^(M-2)`` (the formal power series,
    ``|z| < 1``): ``P(M)``, the weight of the pairs with ``max(j, j') = M``, is the expansion's
    :func:`~amutheory.symbolic.primitives.expansion.pairs_with_max` at ``epsilon = eps``
    (``1 + 2 epsilon + 2 (M - 2)``: one diagonal, two with ``j = 1``, ``2 (M - 2)`` hidden off-diagonal)."""
    from amutheory.symbolic.primitives.expansion import epsilon, pairs_with_max

    M = sp.Symbol("M", integer=True, positive=True)
    series = sp.summation(pairs_with_max(M).subs(epsilon, eps) * z ** (M - 2), (M, 2, sp.oo))
    return sp.factor(series.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[0][0]))


def infinite_width_limit_holds() -> bool:
    """``lim_(n -> oo) S(z) / S_oo(z) = 1`` symbolically: the finite-width law has the spectral zero
    mode as its infinite-width limit."""
    ratio = sp.cancel(layer_generating_function() / infinite_width_generating_function())
    return sp.simplify(sp.limit(ratio, n, sp.oo) - 1) == 0


# --------------------------------------------------------------------------- the generated predictor
_ARGS = (n, C_0, B, m, v, v_r)


@derivation
def _recurrence_sources() -> dict:
    """The numerator and denominator coefficients of :func:`layer_generating_function` in ``z``, as
    printed sources of functions of ``(n, C_0, B, m, v, v_r)``."""
    return recurrence_sources(layer_generating_function(), _ARGS)


def recurrence_sources(gf: sp.Expr, args: tuple) -> dict:
    """``{"num", "den"}``: the coefficients in ``z`` (lowest power first, normalised to ``den_0 = 1``) of
    the rational function ``gf``, as printed sources of functions of ``args`` (run by
    :func:`rational_series`)."""
    num, den = sp.fraction(sp.together(gf))
    num, den = sp.Poly(sp.expand(num), z), sp.Poly(sp.expand(den), z)
    lead = den.all_coeffs()[-1]  # the z^0 coefficient: normalise to 1
    coeffs = {"num": [sp.simplify(c / lead) for c in reversed(num.all_coeffs())],
              "den": [sp.simplify(c / lead) for c in reversed(den.all_coeffs())]}
    return {k: lambda_source(args, sp.Matrix([cs]), "numpy") for k, cs in coeffs.items()}


@functools.lru_cache(maxsize=None)
def _recurrence():
    src = _recurrence_sources()
    return compile_lambda(src["num"], "numpy"), compile_lambda(src["den"], "numpy")


def check_finite_width_spec(spec: ArchSpec) -> None:
    """The law is derived for bias-free linear MLPs at the critical ``c = 1`` (no norm, no dropout)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "mlp":
        raise ValueError(f"family: the finite-width law is derived for MLPs, got {spec.family!r}")
    if spec.activation != "linear":
        raise ValueError(f"activation: the finite-width law is exact for linear MLPs, got {spec.activation!r}")
    if spec.c != 1.0:
        raise ValueError(f"c: the finite-width law is derived at the critical c = 1, got {spec.c}")


def _arguments(spec: ArchSpec, input_var: float) -> tuple:
    return (float(spec.width), float(spec.input_channels), float(spec.batch), float(spec.outputs),
            float(input_var), float(spec.readout_variance))


def series_coefficients(spec: ArchSpec, count: int, input_var: float = 1.0) -> np.ndarray:
    """``E[s_l]`` for ``l = 1 .. count``: the Taylor coefficients of :func:`layer_generating_function`
    from its denominator's recurrence (``sum_k den_k s_(l-k) = num_l``)."""
    num_fn, den_fn = _recurrence()
    args = _arguments(spec, input_var)
    return rational_series(num_fn(*args), den_fn(*args), count)


def rational_series(num, den, count: int) -> np.ndarray:
    """The Taylor coefficients ``1 .. count`` of ``num(z) / den(z)`` (coefficient arrays, lowest power first)
    by the denominator's recurrence ``sum_k den_k s_(l-k) = num_l``."""
    num, den = np.asarray(num, float).ravel(), np.asarray(den, float).ravel()
    s = np.zeros(count + 1)
    for l in range(count + 1):
        acc = num[l] if l < len(num) else 0.0
        for k in range(1, min(l, len(den) - 1) + 1):
            acc -= den[k] * s[l - k]
        s[l] = acc / den[0]
    return s[1:]


def finite_width_layer_moments(spec: ArchSpec, layers, input_var: float = 1.0) -> np.ndarray:
    """``E[s_l]`` at the spec's width for ``layers`` (independent of the net's depth)."""
    check_finite_width_spec(spec)
    layers = np.asarray(layers, int)
    return series_coefficients(spec, int(layers.max()), input_var)[layers - 1]


def finite_width_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``E[s_bar(L)] = (1/L) sum_(l <= L) E[s_l]`` at the spec's width, nothing fitted."""
    check_finite_width_spec(spec)
    depths = np.asarray(depths, int)
    cum = np.cumsum(series_coefficients(spec, int(depths.max()), input_var))
    return cum[depths - 1] / depths


@functools.lru_cache(maxsize=None)
def _hidden_transfer_fn():
    return sp.lambdify(n, hidden_transfer(), "numpy")


def product_moments(spec: ArchSpec, count: int) -> np.ndarray:
    """``u_p = E tau((U U^T)^2)`` for products ``U`` of ``p = 0 .. count - 1`` hidden layers at the
    spec's width (the powers of :func:`hidden_transfer` on ``(1, 1)``; ``p + 1`` at infinite width)."""
    T = np.asarray(_hidden_transfer_fn()(float(spec.width)), float)
    out, state = np.empty(count), np.array([1.0, 1.0])
    for p in range(count):
        out[p], state = state[0], T @ state
    return out


def finite_width_slope(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """Local slope ``d ln eta*/d ln L = -(1/2) (L S'(L) / S(L) - 1)`` of the mean, ``S = L s_bar``, with
    ``S'`` the five-point difference of the exact ``S`` at ``L - 2 .. L + 2`` (exact on a quartic; the
    central one at ``L <= 2``, ``S(0) = 0``)."""
    check_finite_width_spec(spec)
    depths = np.asarray(depths, int)
    S = np.concatenate([[0.0], np.cumsum(series_coefficients(spec, int(depths.max()) + 2, input_var))])
    central = (S[depths + 1] - S[depths - 1]) / 2.0
    wide = np.where(depths >= 3, depths, 3)
    five = (-S[wide + 2] + 8 * S[wide + 1] - 8 * S[wide - 1] + S[wide - 2]) / 12.0
    grad = np.where(depths >= 3, five, central)
    return -0.5 * (depths * grad / S[depths] - 1.0)
