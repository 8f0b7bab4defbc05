"""Exact one-sample law of bias-free ReLU (and linear) MLPs at width ``n``.

With one sample the forward-backward coupling that the finite-width kernel laws leave out is explicit
(:func:`amutheory.symbolic.chain.backward_width.one_sample_split`): conditioning layer ``l + 1``'s weights on
its input ``x_l`` leaves ``W_(l+1) = h_(l+1) x_l^T / |x_l|^2 + G P_l``, ``G`` a fresh Gaussian independent of
``h_(l+1)`` and of everything below.  This module carries that split through the update itself and gets
``E[s_l]`` exactly, nothing fitted.

**The update.**  One sample, ``loss = r . f``: the first-order change of ``h_l`` is ``Delta h_l = M_l delta_l``
with ``delta_l = d(r . f)/d h_l`` and ``M_l = sum_(j <= l) |x_(j-1)|^2 J_lj J_lj^T`` (``J_lj = d h_l / d h_j``),
so ``M_1 = |x_0|^2 I`` and ``M_(l+1) = A M_l A^T + b_l I`` with ``A = W_(l+1) D_l``, ``b_l = |x_l|^2``;
``s_l = |Delta h_l|^2 / n``.

**Below layer l: eight invariants.**  Split layer ``l``'s units into ``x_l``'s direction ``x^``, the other
active units ``Pi`` (``K - 1`` of them, ``K`` the active count) and the inactive ones ``Omega``, and write
``mu = x^T M x^``, ``v = Pi M x^``, ``N = Pi M Pi``.  Since ``D_l x_l = x_l`` and ``Pi h_l = 0``, one layer
maps ``(b, mu, v, N)`` to

    b' = beta b,  mu' = beta mu + 2 sqrt(beta) g.v + g^T N g + b,  v' = H (sqrt(beta) v + N g),  N' = H N H^T + b I,

with ``g = G^T x^'`` and ``H = Pi' G`` independent Gaussians (variance ``c / n``) and ``beta = b' / b =
(c/n) chi^2_K'`` independent of them given ``K'``.  The quadratic invariants ``mu^2, mu tr N, (tr N)^2,
tr N^2, |v|^2, b mu, b tr N, b^2`` (:data:`INVARIANTS`) go through a linear map whose coefficients are
polynomials in ``K'`` (Wick's theorem on ``g`` and ``H``, :func:`update_transfer`), averaged over ``K' ~
Bin(n, p)``; ``v^T N v`` and higher traces never enter.

**Above layer l: two weights.**  Given the layers below, ``delta_l = alpha x_l + g_l`` with ``alpha = (r .
f) / b_l`` (Euler's identity: ``h_(l+1) . delta_(l+1) = r . f``) and ``g_l`` isotropic on ``Pi``, so

    E[s_l] = (1/n) [w_x E(x^T M_l^2 x^) + w_perp E tr(Pi M_l^2)],

``w_x = m v_r (c p)^(L - l)`` and ``w_perp = (c / n) E|delta_(l+1)|^2`` (``m v_r`` at ``l = L``), a scalar
recursion (:func:`upper_constants`).  The two traces take the ``Omega`` blocks of ``M_l`` too, from the
negative part of ``h_l`` (:func:`update_outputs`).

**Exactness.**  A layer with no active unit (``K = 0``, chance ``(1 - p)^n``) sets every ``s_l`` of the seed
to zero; the law drops those events from every layer's average, so it is exact, not only up to ``2^-n``.
ReLU has ``p = 1/2``; a linear net is ``p = 1`` (every unit active, no ``Omega``), where the law *is*
:mod:`amutheory.symbolic.chain.finite_width` at batch 1 (checked symbolically in the tests).  Everything is
the mean over seeds: weights, the input ``x_0 ~ N(0, v I)`` and the loss direction ``r ~ N(0, I)``.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.cache import compile_lambda, derivation, lambda_source
from amutheory.symbolic.chain.backward_width import ON_PROBABILITY
from amutheory.symbolic.chain.finite_width import layer_transfer

n, C_0, m, v, v_r, c = sp.symbols("n C_0 m v v_r c", positive=True)
"""Width, input features, outputs, input variance, readout variance, the init's ``c`` (``Var W = c / fan_in``)."""
p = sp.Symbol("p", positive=True)
"""The chance that a unit is active: 1/2 for ReLU, 1 for a linear net."""
K = sp.Symbol("K", integer=True, nonnegative=True)
"""The active units of the new layer."""

#: the quadratic invariants of ``(b, M)`` that the recursion carries, in this order
INVARIANTS = ("mu^2", "mu trN", "(trN)^2", "trN^2", "|v|^2", "b mu", "b trN", "b^2")

_mu, _T, _T2, _V, _b = sp.symbols("mu T T_2 V b")
_beta, _beta_neg = sp.symbols("beta beta_neg", nonnegative=True)


def _gaussian_moments():
    """Wick's theorem for ``g ~ N(0, s2 I)`` on the forms of one layer: ``E g.v = 0``, ``E (g.v)^2 = s2 |v|^2``,
    ``E g^T N g = s2 tr N``, ``E (g^T N g)^2`` (:func:`~amutheory.symbolic.chain.finite_width.layer_transfer` of
    one row on ``N``), ``E (g.v)(g^T N g) = 0``, ``E |N g|^2 = s2 tr N^2``."""
    s2 = c / n
    return {"gv2": s2 * _V, "gNg": s2 * _T, "gNg2": (layer_transfer(1, s2) * sp.Matrix([_T2, _T**2]))[1],
            "Ng2": s2 * _T2}


def _wishart_moments(rows):
    """The same for ``H`` with ``rows`` i.i.d. rows ``N(0, s2 I)``: ``E tr H N H^T = rows s2 tr N``, and
    ``(E tr (H N H^T)^2, E (tr H N H^T)^2)`` is :func:`~amutheory.symbolic.chain.finite_width.layer_transfer`
    on ``(tr N^2, (tr N)^2)`` (``H N H^T`` has the traces of ``Y^T Y``, ``Y = H N^(1/2)``); ``E |H w|^2 = rows s2
    |w|^2`` (``Hw2`` is the factor ``rows s2``)."""
    s2 = c / n
    second = layer_transfer(rows, s2) * sp.Matrix([_T2, _T**2])
    return {"trHNH": rows * s2 * _T, "trHNH2": second[0], "trHNH_sq": second[1], "Hw2": rows * s2}


def _new_invariants() -> dict:
    """``E[invariant' | (b, M), K', beta, beta_neg]`` for each of :data:`INVARIANTS` and the two traces of
    ``s``, in the state's symbols: the module docstring's layer map under :func:`_gaussian_moments` and
    :func:`_wishart_moments` (``K' - 1`` rows for ``Pi'``, ``n - K'`` for ``Omega'``)."""
    g, rows, rows_off = _gaussian_moments(), K - 1, n - K
    H, Q = _wishart_moments(rows), _wishart_moments(rows_off)
    mean_mu = _beta * _mu + g["gNg"] + _b                       # E mu' (g.v has mean 0)
    mu2 = (_beta * _mu + _b)**2 + 2 * (_beta * _mu + _b) * g["gNg"] + g["gNg2"] + 4 * _beta * g["gv2"]
    trN = H["trHNH"] + _b * rows                                # E tr N' = E tr(H N H^T) + b (K' - 1)
    w2 = _beta * _V + g["Ng2"]                                  # E |sqrt(beta) v + N g|^2
    out = {
        "mu^2": mu2,
        "mu trN": mean_mu * trN,                                # mu' takes g, tr N' takes H: independent
        "(trN)^2": H["trHNH_sq"] + 2 * _b * rows * H["trHNH"] + _b**2 * rows**2,
        "trN^2": H["trHNH2"] + 2 * _b * H["trHNH"] + _b**2 * rows,
        "|v|^2": H["Hw2"] * w2,
        "b mu": _beta * _b * mean_mu,
        "b trN": _beta * _b * trN,
        "b^2": _beta**2 * _b**2,
    }
    # the Omega' blocks: Omega' M' x^' = (h^- / sqrt(b)) (mu sqrt(beta) + g.v) + Q (sqrt(beta) v + N g) and
    # Pi' M' Omega' = H v h^-T / sqrt(b) + H N Q^T, Q = Omega' G; |h^-|^2 / b = beta_neg
    omega_x = _beta_neg * (_beta * _mu**2 + g["gv2"]) + Q["Hw2"] * w2
    omega_pi = _beta_neg * H["Hw2"] * _V + (c / n)**2 * rows * rows_off * _T2
    out["x M^2 x"] = out["mu^2"] + out["|v|^2"] + omega_x
    out["tr Pi M^2"] = out["|v|^2"] + out["trN^2"] + omega_pi
    return out


def _in_invariants(expr: sp.Expr) -> list:
    """``expr``, a quadratic form of the state, as its coefficients on :data:`INVARIANTS`."""
    monomials = (_mu**2, _mu * _T, _T**2, _T2, _V, _b * _mu, _b * _T, _b**2)
    poly = sp.Poly(sp.expand(expr), _mu, _T, _T2, _V, _b)
    coeffs = [poly.coeff_monomial(mono) for mono in monomials]
    rest = sp.expand(expr - sum(co * mono for co, mono in zip(coeffs, monomials)))
    if rest != 0:
        raise AssertionError(f"the layer map left the invariants: {rest}")
    return coeffs


def _beta_moments(expr: sp.Expr) -> sp.Expr:
    """Average over ``beta = (c/n) chi^2_K'`` and ``beta_neg = (c/n) chi^2_(n - K')`` given ``K'`` (independent):
    ``E beta = (c/n) K'``, ``E beta^2 = (c/n)^2 K' (K' + 2)``, ``E beta_neg = (c/n) (n - K')`` (``beta_neg``
    enters the layer map at most linearly, ``beta`` at most squared)."""
    s2 = c / n
    poly = sp.Poly(sp.expand(expr), _beta, _beta_neg)
    mean = {0: sp.Integer(1), 1: s2 * K, 2: s2**2 * K * (K + 2)}
    mean_neg = {0: sp.Integer(1), 1: s2 * (n - K)}
    return sp.expand(sum(co * mean[i] * mean_neg[j] for (i, j), co in poly.terms()))


@derivation
def update_transfer() -> sp.Matrix:
    """The ``8 x 8`` map of :data:`INVARIANTS` through one hidden layer given its active count ``K``,
    polynomial in ``K`` (module docstring)."""
    new = _new_invariants()
    return sp.Matrix([[_beta_moments(co) for co in _in_invariants(new[name])] for name in INVARIANTS])


@derivation
def update_outputs() -> sp.Matrix:
    """The two rows (``E x^T M^2 x^``, ``E tr Pi M^2``) of the new layer's traces on the old layer's
    :data:`INVARIANTS`, given the new layer's active count ``K``."""
    new = _new_invariants()
    return sp.Matrix([[_beta_moments(co) for co in _in_invariants(new[name])] for name in ("x M^2 x", "tr Pi M^2")])


def first_layer() -> tuple:
    """Layer 1 given its active count ``K``: the invariants of ``M_1 = |x_0|^2 I`` and ``b_1`` (``b_1 =
    (c / C_0) |x_0|^2 chi^2_K``, ``E |x_0|^4 = v^2 C_0 (C_0 + 2)``), and its two traces."""
    b0sq, s0 = v**2 * C_0 * (C_0 + 2), c / C_0
    k = K - 1
    state = b0sq * sp.Matrix([1, k, k**2, k, 0, s0 * K, s0 * K * k, s0**2 * K * (K + 2)])
    return state, b0sq * sp.Matrix([1, k])


def binomial_mean(expr: sp.Expr) -> sp.Expr:
    """``E[expr(K) 1(K >= 1)]`` over ``K ~ Bin(n, p)`` for ``expr`` polynomial in ``K``: the binomial's raw
    moments less the ``K = 0`` term (a layer with no active unit ends the seed's ``s``)."""
    moments = {0: sp.Integer(1), 1: n * p, 2: n * p * (1 - p) + n**2 * p**2}
    poly = sp.Poly(sp.expand(expr), K)
    if poly.degree() > 2:
        raise AssertionError("the law's coefficients are at most quadratic in K")
    return sp.expand(sum(co * moments[i] for (i,), co in poly.terms()) - expr.subs(K, 0) * (1 - p)**n)


def _mean_matrix(matrix: sp.Matrix) -> sp.Matrix:
    return matrix.applyfunc(binomial_mean)


@derivation
def mean_transfer() -> sp.Matrix:
    """:func:`update_transfer` averaged over the layer's active count."""
    return _mean_matrix(update_transfer())


@derivation
def mean_outputs() -> sp.Matrix:
    """:func:`update_outputs` averaged over the layer's active count."""
    return _mean_matrix(update_outputs())


@derivation
def mean_first_layer() -> tuple:
    """:func:`first_layer` averaged over layer 1's active count."""
    state, traces = first_layer()
    return _mean_matrix(state), _mean_matrix(traces)


def upper_constants() -> dict:
    """The scalar recursion above each layer (module docstring), ``e_l = E|delta_l|^2``: ``e_L = top``,
    ``e_l = source rho^(L - l) + rate e_(l+1)``, with ``top = m v_r E K``, ``source = m v_r P(K >= 1)``,
    ``rate = (c / n) E[(K - 1) 1(K >= 1)]``, ``rho = c p`` (the forward norm's mean step) and ``readout = m v_r``
    (``w_x`` at ``l = L``, and ``w_perp`` there)."""
    on = 1 - (1 - p)**n
    return {"top": m * v_r * n * p, "source": m * v_r * on, "rate": (c / n) * (n * p - on), "rho": c * p,
            "readout": m * v_r, "step": c / n}


def _weights(L: int, k: dict) -> list:
    """``(w_x, w_perp)`` for ``l = 1 .. L`` from :func:`upper_constants`' values ``k`` (SymPy or floats)."""
    e = {L: k["top"]}
    for l in range(L - 1, 0, -1):
        e[l] = k["source"] * k["rho"]**(L - l) + k["rate"] * e[l + 1]
    return [(k["readout"] * k["rho"]**(L - l), k["readout"] if l == L else k["step"] * e[l + 1])
            for l in range(1, L + 1)]


def _layer_moments(L: int, T, O, state, traces, k: dict, width) -> list:
    """``E[s_l]``, ``l = 1 .. L``: the invariants' recursion below each layer, the weights above it."""
    out = []
    for l, (w_x, w_perp) in enumerate(_weights(L, k), start=1):
        if l > 1:
            traces, state = O @ state, T @ state
        out.append((w_x * traces[0] + w_perp * traces[1]) / width)
    return out


def layer_moments_symbolic(L: int, at: dict | None = None) -> list:
    """``E[s_l]``, ``l = 1 .. L``, of a net of depth ``L`` as SymPy expressions, with the symbols in ``at``
    substituted first (e.g. ``{p: 1, c: 1}``, the linear net); small ``L``: the tests' symbolic checks (the
    predictor runs the same recursion on the lambdified coefficients)."""
    at = at or {}
    state, traces = (x.subs(at) for x in mean_first_layer())
    upper = {k: sp.sympify(e).subs(at) for k, e in upper_constants().items()}
    return [sp.simplify(s) for s in _layer_moments(L, mean_transfer().subs(at), mean_outputs().subs(at), state, traces,
                                                    upper, n.subs(at))]


# --------------------------------------------------------------------------- the generated predictor
_ARGS = (n, C_0, m, v, v_r, c, p)


@derivation
def _sources() -> dict:
    state, traces = mean_first_layer()
    upper = upper_constants()
    parts = (("T", mean_transfer()), ("O", mean_outputs()), ("state", state), ("traces", traces),
             ("upper", sp.Matrix([list(upper.values())])))
    return {name: lambda_source(_ARGS, expr, "numpy") for name, expr in parts}


@functools.lru_cache(maxsize=None)
def _compiled() -> dict:
    return {k: compile_lambda(src, "numpy") for k, src in _sources().items()}


def check_one_sample_spec(spec: ArchSpec) -> None:
    """The law is derived for bias-free ReLU or linear MLPs with one sample (any ``c``)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "mlp":
        raise ValueError(f"family: the one-sample law is derived for MLPs, got {spec.family!r}")
    if spec.activation not in ON_PROBABILITY:
        raise ValueError(f"activation: the one-sample law is exact for {' and '.join(ON_PROBABILITY)} MLPs (positively "
                         f"homogeneous, so Euler's identity holds), got {spec.activation!r}")
    if spec.batch != 1:
        raise ValueError(f"batch: the one-sample law is derived for a batch of one sample, got {spec.batch}")


def one_sample_layer_moments(spec: ArchSpec, input_var: float = 1.0) -> np.ndarray:
    """``E[s_l]`` for ``l = 1 .. spec.depth`` at the spec's width, nothing fitted."""
    check_one_sample_spec(spec)
    args = (float(spec.width), float(spec.input_channels), float(spec.outputs), float(input_var),
            float(spec.readout_variance), float(spec.c), float(ON_PROBABILITY[spec.activation]))
    fns = _compiled()
    T, O = (np.asarray(fns[k](*args), float) for k in ("T", "O"))
    state, traces = (np.asarray(fns[k](*args), float).ravel() for k in ("state", "traces"))
    k = dict(zip(upper_constants(), np.asarray(fns["upper"](*args), float).ravel()))
    return np.asarray(_layer_moments(spec.depth, T, O, state, traces, k, args[0]), float)


def one_sample_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``E[s_bar(L)] = (1/L) sum_(l <= L) E[s_l]`` at each depth (``s_l`` depends on ``L`` unless ``c p = 1``)."""
    check_one_sample_spec(spec)
    depths = [int(d) for d in depths]
    if not depths or min(depths) < 1:
        raise ValueError(f"depths must be integers >= 1, got {depths}")
    return np.array([one_sample_layer_moments(spec.with_(depth=d), input_var).mean() for d in depths])
