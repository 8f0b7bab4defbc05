"""Exact finite-width law of the *linear circular* conv chain, mode by mode.

The infinite-width law (:mod:`amutheory.symbolic.chain.spectral`) propagates every Fourier mode
``q`` on its own; the finite-width law of the linear MLP (:mod:`amutheory.symbolic.chain.finite_width`)
is that chain's zero mode alone at width ``n``.  This module does every mode at width ``n``, exactly
(in the mean over seeds: weights, inputs and loss directions), nothing fitted.

**The term of a mode.**  With the spectral module's notation (``A_j = F_lj(q) F_lj(0)^T``, ``Gamma_j =
X_j(0)^T X_j(q)`` the ``B x B`` cross-mode Gram of the layer-``j`` channel vectors, ``D_q`` the
Dirichlet kernel, ``rho_q = D_q / k^d``, ``r = rho_q^2``), Parseval and the exact reduction of the
layers above ``l`` (``E[u_b u_b'^T] = delta m v_r / (B P)^2 I``: ``s_l`` does not depend on ``L``) give

    E[s_l] = (m v_r / (B^3 P^4)) sum_q D_q^2 sum_(j, j' <= l) E[tr(A_j A_j'^*) tr(Gamma_(j-1) Gamma_(j'-1)^*)] / n.

Each layer acts on mode ``q`` by ``W_q = sum_t e^(i w_q t) W_t``, jointly Gaussian with ``M = W_0``;
entrywise ``E[M M] = 1/n``, ``E[M W_q] = E[M conj(W_q)] = rho_q / n`` and ``E[W_q conj(W_q)] = 1/n``
(hidden layers; ``1/C_0`` for the input layer).  In every term a layer appears once as ``W_q`` and
once as ``conj(W_q)`` (or not at all at mode ``q``), so the non-conjugate ``E[W_q W_q] = D_(2q) /
(n k^d)`` never enters.  Three exact facts, each Wick's theorem on one layer's four occurrences
(three pairings), close the computation:

* **Forward** (:func:`cross_transfer`): ``(E ||Gamma'||^2, E tr K_q' tr K_0')`` is
  ``layer_transfer(R, sigma^2) diag(r, 1)`` of ``(||Gamma||^2, tr K_q tr K_0)`` -- the MLP's Wishart
  map with the pairings that cross the two modes weighted by ``r``.  The second column is the noise
  ``tr K_q tr K_0 / n`` each layer injects into the cross-mode Gram: at infinite width
  ``||Gamma_j||^2`` decays like ``r^j``; at width ``n`` it does not decay to zero.
* **Backward** (:func:`backward_transfer`): with ``Z = F(q) F(0)^T`` a product of ``p`` hidden layers
  the invariants ``(|tau Z|^2, tau(Z Z^*), tau(Z conj Z))`` go through a 3 x 3 linear map per layer;
  ``f_p = E tau(Z Z^*)`` (the backward moment, ``sum_i r^i`` at infinite width) and ``w_p =
  E |tau Z|^2`` (the coupling between two updated layers, ``r^p`` at infinite width).
* **The pairs factor.**  Right and left rotation invariance of the pair ``(M, W_q)`` (a common real
  orthogonal ``O`` on either side) splits the pair ``j < j'`` exactly into
  ``r beta_j n f_(l-j') w_(j'-j-1) kappa_(j-1)``, ``kappa_j = E ||Gamma_j||^2``, ``beta_j = n sigma_j^2``
  (``n / C_0`` for the input layer, 1 for a hidden one); ``j = j'`` gives ``n f_(l-j) kappa_(j-1)``.

So for each mode, with ``F, W, K, K_beta`` the generating functions of ``f_p, w_p, kappa_(j-1) z^j,
beta_j kappa_(j-1) z^j``,

    S_q(z) = sum_l E[s_l(q)] z^l = (m v_r D_q^2 / (B^3 P^4)) F(z) [K(z) + 2 r z W(z) K_beta(z)],

the MLP's generating function with the rate ``r`` (:func:`mode_generating_function`; at ``r = 1``
and coupled inputs it *is* :func:`amutheory.symbolic.chain.finite_width.layer_generating_function`,
checked symbolically).  The inputs of mode ``q != 0`` are independent of the zero mode's
(``r_in = 0`` in :func:`input_cross_moments`); of the zero mode, the same vector (``r_in = 1``).  The
predictors run the lambdified transfer maps and convolve the sequences (:func:`mode_layer_moments`).
As ``n -> oo`` the law is :mod:`amutheory.symbolic.chain.spectral` (tests: symbolic per mode, and
numeric at large ``n``).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.cache import compile_lambda, derivation, lambda_source
from amutheory.symbolic.chain.finite_width import B, C_0, layer_transfer, m, n, v, v_r, z

r = sp.Symbol("r", nonnegative=True)
"""``rho_q^2`` of the mode."""
r_in = sp.Symbol("r_in", nonnegative=True)
"""The input coupling of the mode to the zero mode: 1 for the zero mode itself, 0 for the others."""
R_rows, sigma2 = sp.symbols("R sigma2", positive=True)


def cross_transfer(rows=R_rows, variance=sigma2, rate=r) -> sp.Matrix:
    """``(E ||Gamma'||^2, E tr K_q' tr K_0')`` from ``(||Gamma||^2, tr K_q tr K_0)`` through one layer of
    ``rows`` outputs and variance ``variance`` per entry of ``M`` (and of ``W_q``): of the three Wick
    pairings of ``tr(W_q K_q W_q^* M K_0 M^T)`` the one pairing ``W_q`` with ``W_q^*`` gives
    ``tr K_q tr K_0``, the two pairing ``W_q`` with ``M`` give ``rho^2`` times ``R^2`` or ``R`` times
    ``tr(K_q K_0)``; likewise for ``tr(W_q K_q W_q^*) tr(M K_0 M^T)``.  ``layer_transfer diag(rate, 1)``."""
    return layer_transfer(rows, variance) * sp.diag(rate, 1)


def backward_transfer(rate=r) -> sp.Matrix:
    """One hidden layer on top of ``Z = F(q) F(0)^T`` (``Z' = W_q Z M^T``), on the normalised invariants
    ``(w, f, g) = (|tr Z|^2 / n^2, tr(Z Z^*) / n, tr(Z conj Z) / n)``.  Wick's theorem on each
    ``(W_q, M, conj W_q, M)``, pairings (``E[W_q conj W_q] = 1``, ``E[W_q M] = rho``, ``/n``):

    * ``|tr Z'|^2 = r |tr Z|^2 + tr(Z Z^*) / n + r tr(Z conj Z) / n``;
    * ``tr(Z' Z'^*) = r |tr Z|^2 / n + tr(Z Z^*) + r tr(Z conj Z) / n``;
    * ``tr(Z' conj Z') = r |tr Z|^2 / n + tr(Z Z^*) / n + r tr(Z conj Z)``.
    """
    raw = sp.Matrix([[rate, 1 / n, rate / n], [rate / n, 1, rate / n], [rate / n, 1 / n, rate]])
    scale = sp.diag(1 / n**2, 1 / n, 1 / n)
    return sp.simplify(scale * raw * scale.inv())


def backward_eigenvalues(rate=r) -> list:
    """The eigenvalues of :func:`backward_transfer` (at ``r = 1``: ``1 + 2/n``, ``1 - 1/n`` and ``1 - 1/n``)."""
    return list(backward_transfer(rate).eigenvals())


def input_cross_moments(coupling=r_in) -> sp.Matrix:
    """``(E ||Gamma_0||^2, E tr K_q tr K_0)`` of the raw inputs at a mode: ``C_0`` i.i.d. channels of
    variance ``v`` (``P`` times the input variance for the DFT), the modes coupled by ``coupling``
    (``x_hat(0)`` itself, 1; an independent mode, 0): :func:`cross_transfer` of ``C_0`` rows on the
    identity Gram, ``(B, B^2)``."""
    return cross_transfer(C_0, v, coupling) * sp.Matrix([B, B**2])


def _series(T: sp.Matrix, start: sp.Matrix) -> sp.Matrix:
    """``sum_p T^p start z^p = (I - z T)^(-1) start``."""
    return (sp.eye(T.shape[0]) - z * T).LUsolve(start)


@derivation
def mode_generating_function() -> sp.Expr:
    """``S(z) = sum_l E[s_l] z^l`` of one mode (rate ``r``, input coupling ``r_in``, input variance
    ``v``) without its factor ``D_q^2 / P^4``: ``(v_r m / B^3) F(z) [K(z) + 2 r z W(z) K_beta(z)]``
    (module docstring)."""
    back = _series(backward_transfer(r), sp.Matrix([1, 1, 1]))
    W, F = back[0], back[1]
    g = input_cross_moments(r_in)
    first = cross_transfer(n, 1 / C_0, r) * g  # the input layer: n rows, variance 1/C_0
    hidden = _series(cross_transfer(n, 1 / n, r), first)[0]  # kappa_1, kappa_2, ... at z^0, z^1, ...
    forward = g[0] * z + z**2 * hidden
    weighted = (n / C_0) * g[0] * z + z**2 * hidden
    return v_r * m / B**3 * F * (forward + 2 * r * z * W * weighted)


def zero_mode_is_mlp() -> bool:
    """At ``r = r_in = 1`` the mode's generating function is the linear MLP's (the zero mode)."""
    from amutheory.symbolic.chain.finite_width import layer_generating_function

    diff = mode_generating_function().subs({r: 1, r_in: 1}) - layer_generating_function()
    return sp.simplify(sp.together(diff)) == 0


def taylor_coefficients(expr: sp.Expr, count: int) -> list:
    """The coefficients of ``z^0 .. z^(count-1)`` of a rational function of ``z``, by the power-series
    division of its numerator by its denominator (much faster than ``sp.series`` on these)."""
    num, den = sp.fraction(sp.together(expr))
    num = sp.Poly(sp.expand(num), z).all_coeffs()[::-1]
    den = sp.Poly(sp.expand(den), z).all_coeffs()[::-1]
    out = []
    for k in range(count):
        acc = (num[k] if k < len(num) else 0) - sum(den[i] * out[k - i] for i in range(1, min(k, len(den) - 1) + 1))
        out.append(sp.cancel(acc / den[0]))
    return out


def infinite_width_mode_coefficients(count: int, values: dict) -> list:
    """``lim_(n -> oo)`` of the Taylor coefficients (``l = 0 .. count-1``) of a non-zero mode's generating
    function over ``n^2`` (the weight's ``(n / C_0)^2`` scale) at the numbers ``values`` for the input
    symbols, symbolic in ``r``: the spectral law's ``weight_q Q_l(r)`` per unit ``D_q^2 / P^4`` (tests)."""
    coeffs = taylor_coefficients(mode_generating_function().subs(r_in, 0).subs(values) / n**2, count)
    return [sp.limit(c, n, sp.oo) for c in coeffs]


# --------------------------------------------------------------------------- the generated predictors
_ARGS = (n, r)


@derivation
def _transfer_sources() -> dict:
    """Printed sources of the transfer maps and input moments (functions of ``(n, r)``, resp.
    ``(n, r, C_0, B, v)``), kept as a derivation."""
    back_inf = backward_transfer(r).applyfunc(lambda e: sp.limit(e, n, sp.oo))
    return {"back": lambda_source(_ARGS, backward_transfer(r), "numpy"),
            "back_inf": lambda_source((r,), back_inf, "numpy"),
            "first": lambda_source((n, r, C_0), cross_transfer(n, 1 / C_0, r), "numpy"),
            "hidden": lambda_source(_ARGS, cross_transfer(n, 1 / n, r), "numpy"),
            "input": lambda_source((r_in, C_0, B, v), input_cross_moments(r_in), "numpy")}


@functools.lru_cache(maxsize=None)
def _transfers() -> dict:
    return {k: compile_lambda(src, "numpy") for k, src in _transfer_sources().items()}


def check_finite_width_modes_spec(spec: ArchSpec) -> None:
    """The law is derived for linear, circular-padding conv chains at the critical ``c = 1``."""
    from amutheory.symbolic.chain.spectral import check_spectral_spec

    check_spectral_spec(spec)


def mode_sequences(width: int, rate: float, coupling: float, input_channels: int, batch: int, input_var: float,
                   count: int, backward_width: float | None = None) -> dict:
    """The sequences of one mode up to ``count`` layers: ``f_p, w_p`` (``p = 0 .. count``) and
    ``kappa_j`` (``j = 0 .. count``), from the lambdified transfer maps.  ``backward_width``: the width of
    the backward transfer (``f_p, w_p``; ``None``: the net's ``width``; ``math.inf``: the forward-only law of
    :mod:`amutheory.symbolic.chain.backward_width`)."""
    fns = _transfers()
    if backward_width is not None and np.isinf(backward_width):
        T = np.asarray(fns["back_inf"](float(rate)), float)
    else:
        T = np.asarray(fns["back"](float(width if backward_width is None else backward_width), float(rate)), float)
    state, f, w = np.ones(3), np.empty(count + 1), np.empty(count + 1)
    for p in range(count + 1):
        w[p], f[p] = state[0], state[1]
        state = T @ state
    g = np.asarray(fns["input"](float(coupling), float(input_channels), float(batch), float(input_var)), float).ravel()
    kappa = np.empty(count + 1)
    kappa[0] = g[0]
    cur = np.asarray(fns["first"](float(width), float(rate), float(input_channels)), float) @ g
    H = np.asarray(fns["hidden"](float(width), float(rate)), float)
    for j in range(1, count + 1):
        kappa[j] = cur[0]
        cur = H @ cur
    return {"f": f, "w": w, "kappa": kappa}


def mode_layer_moments(width: int, rate: float, coupling: float, input_channels: int, batch: int,
                       input_var: float, count: int, backward_width: float | None = None) -> np.ndarray:
    """``sum_(j, j' <= l)`` of the mode's pair terms for ``l = 1 .. count`` (the coefficients of
    ``F(z) [K(z) + 2 r z W(z) K_beta(z)]``, i.e. :func:`mode_generating_function` without
    ``v_r m / B^3``), by convolving the sequences of :func:`mode_sequences`."""
    seq = mode_sequences(width, rate, coupling, input_channels, batch, input_var, count, backward_width)
    K = np.concatenate([[0.0], seq["kappa"][:count]])  # kappa_(j-1) at z^j
    beta = np.ones(count + 1)
    beta[1] = width / input_channels
    Kb = K * beta
    W = np.concatenate([[0.0], seq["w"][:count]])  # z W(z)
    inner = K + 2 * rate * np.convolve(W, Kb)[:count + 1]
    return np.convolve(seq["f"], inner)[1:count + 1]


def modes(spec: ArchSpec, input_var: float = 1.0) -> tuple:
    """``(r_q, D_q^2, coupling_q)`` for every mode with ``D_q != 0`` (the zero mode first)."""
    from amutheory.symbolic.chain.spectral import dirichlet

    d = dirichlet(spec)
    keep = np.abs(d) > 1e-12
    rho = d / spec.kernel**spec.dim
    coupling = np.zeros_like(d)
    coupling[0] = 1.0
    return (rho**2)[keep], (d**2)[keep], coupling[keep]


def finite_width_mode_table(spec: ArchSpec, count: int, input_var: float = 1.0,
                            backward_width: float | None = None) -> np.ndarray:
    """``E[s_l]`` per mode, rows the modes of :func:`modes`, columns ``l = 1 .. count`` (``backward_width``:
    :func:`mode_sequences`)."""
    check_finite_width_modes_spec(spec)
    P = spec.spatial**spec.dim
    rates, d2, coupling = modes(spec, input_var)
    pref = spec.outputs * spec.readout_variance / (spec.batch**3 * P**4)
    return np.array([pref * w * mode_layer_moments(spec.width, x, c, spec.input_channels, spec.batch, P * input_var,
                                                   count, backward_width)
                     for x, w, c in zip(rates, d2, coupling)])


def finite_width_chain_layer_moments(spec: ArchSpec, layers, input_var: float = 1.0) -> np.ndarray:
    """``E[s_l]`` of the linear circular chain at its width for ``layers`` (independent of its depth)."""
    layers = np.asarray(layers, int)
    return finite_width_mode_table(spec, int(layers.max()), input_var).sum(axis=0)[layers - 1]


def finite_width_chain_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``E[s_bar(L)] = (1/L) sum_(l <= L) E[s_l]`` at the spec's width, nothing fitted."""
    depths = np.asarray(depths, int)
    cum = np.cumsum(finite_width_mode_table(spec, int(depths.max()), input_var).sum(axis=0))
    return cum[depths - 1] / depths
