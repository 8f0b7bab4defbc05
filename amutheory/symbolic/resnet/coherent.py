"""Residual conv nets: forward stability and the depth law of the one-step update, per init.

Net (:mod:`amutheory.measure.resnet`): stem, ``K`` blocks ``x <- x + alpha y``, ``y`` the branch
output, GAP head.  Branch weight layer ``i`` has ``Var = c v_i(K) / fan_in`` and the branch is
multiplied by ``alpha(K)`` (:mod:`amutheory.symbolic.resnet.init`).

**Forward pass (mean-field recursion, exact at infinite width).**  Per stream coordinate, mean
``mu`` and second moment ``q``.  A ``conv`` branch ``y = phi(W x)`` has ``E[y] = m(c v q)``,
``E[y^2] = M(c v q)`` (``m, M`` the activation's first and second Gaussian moments: ReLU's
``m(s) = sqrt(s / 2 pi)`` is not zero), so ``mu' = mu + alpha m`` and
``q' = q + alpha^2 M + 2 alpha mu m``.  ``conv-mlp`` and ``preact`` branches end in a zero-mean
linear layer: ``mu`` stays 0 and ``q' = q + alpha^2 c v_2 M(c v_1 q)`` (``M(c v_1 M(q))`` for
``preact``).  :func:`forward_analysis` runs this recursion and classifies its growth.  For ReLU
with ``v = 1/K`` on a single-layer branch the mean feeds itself, ``d mu / d(k/K) ~ sqrt(K/pi) mu``,
so ``q_K ~ exp(2 sqrt(K/pi))``: not bounded, not a power of K.

**One-step update (coherent leading order, derived by symbolic summation).**  With the stream
Jacobian ``prod (I + alpha J_branch)`` bounded (forward-stable conventions), the stream gradient
``g_x`` is the same at every block, and the update of every branch layer moves the stream along
``g_x`` coherently: block ``i`` adds ``alpha^2 C`` to ``Delta x`` (units ``eta |x|^2 g_x``), with
``C = sum_i prod_{j != i} v_j`` (the other layers of the branch carry the update to its output;
1 for a one-layer branch), and the stem adds ``e0``.  So ``Delta x_{i-1} ~ e0 + alpha^2 C (i - 1)``.
A pre-activation read from the stream by a first branch layer of variance ``v_1`` gets

    s_i = A alpha^2 prod_{j > 1} v_j    (its own layer's update; gradient through later layers)
        + B v_1 (e0 + alpha^2 C (i - 1))^2,

and ``preact`` nets also count the stream itself (it enters ``phi``): ``B (e0 + alpha^2 C (i-1))^2``.
``s_bar(K)`` is the mean over all pre-activations, summed in SymPy, with ``v_j(K)`` and
``alpha(K)`` substituted; the exponent is ``-(1/2) lim K s_bar'/s_bar``.  ``A, B, e0`` are
calibrated.  Left out: the spectral fluctuations of the stream Jacobian (bounded when the
forward pass is) and the growth of ``q`` (bounded factors for stable conventions).

**Finite K.**  Summed over blocks, the stream term is a polynomial in K whose leading power sets
the exponent; its next power, relative order ``1/K``, has the coefficient ``2 B e0 alpha^2 C``.
Physically ``e0`` is the stem's displacement of the stream (non-negative), but the terms the
coherent order leaves out are of the same relative order ``1/K``: the spectral spread of
``prod (I + alpha J_branch)`` (its variance per block is of order ``1/K``, summed over K blocks
it is of order one and builds up over the first blocks), the branch reading its own weights
back through the stream gradient, the stem and block displacements not being parallel.  Their
signs are not fixed by this derivation, so calibrations fit ``e0`` with either sign
(:data:`amutheory.api.RESNET_SIGNED`): it is then the *effective* coefficient of the first
finite-K correction, not the stem's displacement.  The leading power, and so the exponent, does
not depend on it.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp

from amutheory.activations import get_activation
# how many pre-activations a block has is the family's (its sizes); re-exported here
from amutheory.families.resnet import preactivations_per_block
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives.law import ScalingLaw
from amutheory.symbolic.resnet.init import K, branch_multiplier, layer_variance_factors
from amutheory.symbolic.primitives.symbols import L

A_res = sp.Symbol("A", positive=True)
B_res = sp.Symbol("B", positive=True)
e0 = sp.Symbol("e0", real=True)  # any sign once calibrated (module docstring, Finite K)
i_blk = sp.Symbol("i", positive=True, integer=True)
CONSTANTS = (A_res, B_res, e0)

#: growth of ln(q_K) between K = 2^13 and 2^14 below which the stream counts as bounded
_BOUNDED_STEP = 0.05
_K_PROBE = (2**12, 2**13, 2**14)


def _check_resnet(spec):
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "resnet":
        raise ValueError(f"spec.family must be 'resnet', got {spec.family!r}")


# --------------------------------------------------------------------------- symbolic law
def branch_coefficients(branch: str, init: str) -> dict:
    """``v_j(K)``, ``alpha(K)``, ``own = alpha^2 prod_{j>1} v_j``, ``C = sum_i prod_{j != i} v_j``."""
    v = layer_variance_factors(init, branch)
    alpha = branch_multiplier(init)
    own = alpha**2 * sp.Mul(*v[1:])
    coherent = sp.Add(*[sp.Mul(*(v[:i] + v[i + 1:])) for i in range(len(v))])
    return {"v": v, "alpha": alpha, "own": sp.simplify(own), "C": sp.simplify(coherent)}


def _stream_term(branch: str, init: str) -> sp.Expr:
    """``(e0 + alpha^2 C (i - 1))^2``: the stream's displacement before block ``i``, squared."""
    co = branch_coefficients(branch, init)
    return (e0 + co["alpha"] ** 2 * co["C"] * (i_blk - 1)) ** 2


@functools.lru_cache(maxsize=None)
def read_moment(branch: str, init: str) -> sp.Expr:
    """``s`` of the first branch layer's pre-activation in block ``i`` (of ``K``), at leading order:
    ``A alpha^2 prod_{j>1} v_j + B v_1 (e0 + alpha^2 C (i - 1))^2``."""
    co = branch_coefficients(branch, init)
    return sp.expand(A_res * co["own"] + B_res * co["v"][0] * _stream_term(branch, init))


@functools.lru_cache(maxsize=None)
def block_moment(branch: str, init: str) -> sp.Expr:
    """Sum of ``s`` over the pre-activations of block ``i`` (of ``K``), at leading order: the first
    layer's (:func:`read_moment`), plus the stream's own for ``preact``."""
    per_block = read_moment(branch, init)
    if branch == "preact":
        per_block = per_block + B_res * _stream_term(branch, init)
    return sp.expand(per_block)


@functools.lru_cache(maxsize=None)
def mean_moment(branch: str, init: str) -> sp.Expr:
    """``s_bar(L)`` (``L`` = K blocks) of the coherent leading-order expansion (module docstring),
    summed over blocks by SymPy."""
    total = sp.summation(block_moment(branch, init), (i_blk, 1, K))
    return sp.simplify(sp.expand(total / (preactivations_per_block(branch) * K))).subs(K, L)


def forward_analysis(spec: ArchSpec, input_var: float = 1.0) -> dict:
    """Mean-field forward recursion of the stream: ``q_stream`` (``q`` after the stem and every
    block of ``spec``), ``forward_stable``, ``growth`` (words), ``growth_rate`` (the increase of
    ``ln q_K`` per doubling of K at K ~ 10^4) and ``mechanism`` (one line)."""
    _check_resnet(spec)
    stable, growth, rate = _classify(spec.branch, spec.init, spec.activation, spec.c, float(input_var))
    return {"forward_stable": stable, "growth": growth, "growth_rate": rate,
            "q_stream": _stream_path(spec, spec.depth, input_var),
            "mechanism": _mechanism(spec, stable, growth)}


def is_forward_stable(spec: ArchSpec, input_var: float = 1.0) -> bool:
    """``forward_analysis(spec)["forward_stable"]`` without the law and the stream path (cheap:
    the cached growth classification only)."""
    _check_resnet(spec)
    return _classify(spec.branch, spec.init, spec.activation, spec.c, float(input_var))[0]


@functools.lru_cache(maxsize=None)
def _classify(branch: str, init: str, activation: str, c: float, input_var: float) -> tuple[bool, str, float]:
    """``(stable, growth words, increment of ln q_K per doubling at K = 2^14)``."""
    spec = ArchSpec(family="resnet", branch=branch, init=init, activation=activation, init_c=c, depth=2)
    logs = [math.log(_stream_path(spec, k, input_var)[-1] / input_var) for k in _K_PROBE]
    d1, d2 = logs[1] - logs[0], logs[2] - logs[1]
    # increments of ln q_K per doubling of K: ~0 bounded, constant for a power law, x sqrt(2) for
    # exp(c sqrt(K)), x 2 for exp(c K)
    if not all(math.isfinite(x) for x in logs) or (d1 > 0 and d2 / d1 > 1.7):
        return False, "exponential in K", float("inf") if not math.isfinite(d2) else d2
    if abs(d2) < _BOUNDED_STEP:
        return True, f"bounded (q_K/q_0 -> {math.exp(logs[-1]):.4g})", d2
    if d1 > 0 and d2 / d1 > 1.2:
        return False, "like exp(c sqrt(K)): faster than any power of K", d2
    return False, f"power law, q_K ~ K^{d2 / math.log(2):.3g}", d2


@functools.lru_cache(maxsize=None)
def _moment_fns(activation: str):
    """Fast ``m(s) = E[phi]``, ``M(s) = E[phi^2]`` at ``z ~ N(0, s)``: the lambdified exact
    moments (linear, ReLU), or quadrature at each ``s`` (GELU, tanh; cached)."""
    act = get_activation(activation)
    if act.exact:
        from amutheory.activations import _q

        fm = sp.lambdify(_q, act.exact_moment("phi1"), "math")
        fM = sp.lambdify(_q, act.exact_moment("phi2"), "math")
        return (lambda s: float(fm(s)) if s > 0 else 0.0), (lambda s: float(fM(s)) if s > 0 else 0.0)

    @functools.lru_cache(maxsize=4096)
    def quad(kind, s):
        return act.moment(kind, s).value

    return (lambda s: quad("phi1", round(s, 12)) if s > 0 else 0.0), (lambda s: quad("phi2", round(s, 12))
                                                                        if s > 0 else 0.0)


def _stream_path(spec, blocks: int, input_var: float) -> list[float]:
    c = spec.c
    co = branch_coefficients(spec.branch, spec.init)
    v = [float(x.subs(K, blocks)) for x in co["v"]]
    alpha = float(co["alpha"].subs(K, blocks))
    m, M = _moment_fns(spec.activation)
    mu, q, path = 0.0, float(input_var), [float(input_var)]
    for _ in range(blocks):
        if spec.branch == "conv":
            s = c * v[0] * q
            mean, second = m(s), M(s)
            q, mu = q + alpha**2 * second + 2 * alpha * mu * mean, mu + alpha * mean
        else:
            inner = M(q) if spec.branch == "preact" else q  # preact: phi(x) first (mu = 0 here)
            q = q + alpha**2 * c * v[1] * M(c * v[0] * inner)
        if not math.isfinite(q) or q > 1e300:
            return path + [math.inf]
        path.append(q)
    return path


def _mechanism(spec, stable: bool, growth: str) -> str:
    co = branch_coefficients(spec.branch, spec.init)
    if not stable:
        if spec.init == "none":
            return f"no depth scaling: every block adds O(1) variance, stream {growth}; no power law"
        if spec.branch == "conv" and spec.activation in ("relu", "gelu"):
            return (f"{spec.activation} branch output has a non-zero mean that accumulates on the identity "
                    f"stream and feeds back through W: stream {growth}; no power law")
        return f"stream {growth}; no power law"
    law = resnet_law(spec)
    return (f"stream bounded; each block moves the stream coherently by alpha^2 C = "
            f"{sp.sstr(sp.simplify(co['alpha'] ** 2 * co['C']))}, read by a first layer of variance factor "
            f"v_1 = {sp.sstr(co['v'][0])}; own update alpha^2 prod v = {sp.sstr(co['own'])}: "
            f"eta* ~ K^({law.exponent})")


ASSUMPTIONS = [
    "residual stream x <- x + alpha(K) branch(x); stem conv without activation; GAP + linear head",
    "forward-stable convention: the stream second moment stays bounded as K grows (checked by the "
    "mean-field recursion, forward_analysis)",
    "coherent leading order: the stream gradient is the same at every block and every update moves "
    "the stream along it; spectral fluctuations of the stream Jacobian are left out (bounded when the "
    "forward pass is)",
    "AM over every tensor entering an activation function (preact: the stream too)",
]


def resnet_law(spec: ArchSpec) -> ScalingLaw:
    """The derived law of a forward-stable residual ``spec`` (ValueError when not stable)."""
    _check_resnet(spec)
    stable, growth, _ = _classify(spec.branch, spec.init, spec.activation, spec.c, 1.0)
    if not stable:
        raise ValueError(f"{spec.branch}/{spec.init} ({spec.activation}): forward pass not stable "
                         f"(stream {growth}); eta*(K) is not a power law")
    name = f"resnet{spec.dim}d-{spec.branch}-{spec.init}-{spec.activation}"
    return ScalingLaw(mean_moment(spec.branch, spec.init), CONSTANTS, list(ASSUMPTIONS), name)


@functools.lru_cache(maxsize=None)
def law_predictor(branch: str, init: str):
    """Vectorised ``s_bar(K; A, B, e0)`` (lambdified from :func:`mean_moment`)."""
    fn = sp.lambdify((L, A_res, B_res, e0), mean_moment(branch, init), "numpy")
    return lambda depths, A, B, e: np.asarray(fn(np.asarray(depths, float), A, B, e), float) * np.ones(
        np.shape(depths))


@functools.lru_cache(maxsize=None)
def _block_fn(branch: str, init: str, read_only: bool = False):
    expr = read_moment(branch, init) if read_only else block_moment(branch, init)
    return sp.lambdify((i_blk, K, A_res, B_res, e0), expr, "numpy")


def _stream_weights(spec: ArchSpec, blocks: int, input_var: float) -> np.ndarray:
    """``q_K q_{i-1} / q_0^2`` for ``i = 1 .. blocks`` (:func:`weighted_predictor`)."""
    q = np.asarray(_stream_path(spec.with_(depth=blocks), blocks, input_var)) / input_var
    return q[-1] * q[:-1]


def read_profile(spec: ArchSpec, blocks: int, A: float, B: float, e: float, input_var: float = 1.0) -> np.ndarray:
    """``s_i`` of the first branch layer's pre-activation in every block ``i = 1 .. blocks``: the
    lambdified :func:`read_moment` with the stream weights of :func:`weighted_predictor`.  Its
    shape in ``i / K`` is the coherent order's per-block profile (``(e0' + i/K)^2``-like once the
    own-update term is small), to set against the measured one."""
    _check_resnet(spec)
    i = np.arange(1, int(blocks) + 1, dtype=float)
    return _stream_weights(spec, int(blocks), input_var) * _block_fn(spec.branch, spec.init, True)(
        i, float(blocks), A, B, e) * np.ones_like(i)


def weighted_predictor(spec: ArchSpec, input_var: float = 1.0):
    """``s_bar(K; A, B, e0)`` with the mean-field stream profile put back in: block ``i`` of a
    ``K``-block net carries ``q_K q_{i-1} / q_0^2`` (the update reads ``|x_{i-1}|^2``; the stream
    gradient and the forward propagation of ``Delta x`` grow with the stream variance, together
    ``q_K / q_{i-1}`` times ``q_{i-1}^2``), times the lambdified :func:`block_moment`.  The leading
    exponent is that of :func:`mean_moment` (bounded ``q``); the weights only move the
    pre-asymptotic values.  Only for forward-stable conventions."""
    _check_resnet(spec)
    fn = _block_fn(spec.branch, spec.init)
    per = preactivations_per_block(spec.branch)

    @functools.lru_cache(maxsize=None)
    def weights(blocks: int) -> np.ndarray:
        return _stream_weights(spec, blocks, input_var)

    def predict(depths, A, B, e):
        out = []
        for d in np.ravel(np.asarray(depths, float)):
            kb = int(round(d))
            i = np.arange(1, kb + 1, dtype=float)
            out.append(float(np.sum(weights(kb) * fn(i, float(kb), A, B, e))) / (per * kb))
        return np.asarray(out).reshape(np.shape(depths))

    return predict
