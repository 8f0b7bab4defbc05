"""The residual stream at finite width: why a forward-stable residual net has no ``K/n`` term.

A chain's finite-width excess grows with ``L/n`` because every layer multiplies the squared norm of
the signal by an independent ``chi^2_n / n``: ``E|h_L|^4 / (E|h_L|^2)^2 = (1 + 2/n)^L``
(:mod:`amutheory.symbolic.chain.finite_width`).  A residual block multiplies it by something much
closer to one.  For a dense block with a linear branch, ``x' = x + alpha B x`` (``B = W`` for ``conv``,
``W_2 W_1`` for ``conv-mlp`` and ``preact``), ``B`` is invariant under rotations, so the ratio
``R = |x'|^2 / |x|^2`` has one law whatever ``x`` is, and the blocks' ratios are independent: given the
stem's output ``x_0``,

    |x_K|^2 = |x_0|^2 R_1 ... R_K,     E|x_K|^4 / (E|x_K|^2)^2 = (E[R^2] / E[R]^2)^K     (exactly).

Split the branch's output ``g = alpha B x / |x|`` along ``x`` and across it: ``g = u (z e_x + w) / sqrt(n)``
with ``u^2 = |g|^2 n / chi^2_n`` its scale, ``z ~ N(0, 1)`` and ``|w|^2 ~ chi^2_(n-1)`` independent of each
other and of ``u`` (given the scale, ``g`` is an isotropic Gaussian).  Then

    R = (1 + u z / sqrt(n))^2 + u^2 Q / n,     Q ~ chi^2_(n-1),

with ``E u^2 = eps^2`` (the block's gain ``tau(J J^T)``: ``alpha^2 prod v_i(K)`` for linear branches) and
``E u^4 = m eps^4`` (``m = 1`` for one layer, ``1 + 2/n`` for two: the inner ``|W_1 x|^2`` is a ``chi^2_n / n``).
:func:`block_ratio_moments` derives ``E R = 1 + eps^2`` and
``Var R = 4 eps^2 / n + eps^4 (m (1 + 2/n) - 1)``; :func:`stream_moment_ratio` is the ``K``-th power.

**Forward-stable inits.**  When ``K eps^2 -> a`` (``k-last``, ``sqrt-multiplier``: ``a = 1``; ``k-all`` and
``k-squared`` on ``conv-mlp``: ``a -> 0``), the ratio tends to ``exp(4 a / n)``
(:func:`forward_stable_limit`, checked symbolically in the tests): an ``O(1/n)`` excess that does not grow with
``K``, where a chain's grows like ``exp(2 L / n)``.  So the residual laws' ``K``-dependence holds to ``O(1/n)``:
the finite-width terms move ``eta*`` by a depth-independent factor at that order, the exponent and the
ratios of ``eta*`` across ``K`` not at all -- as measured on spatial ReLU nets (docs/findings/residual_networks.md:
measured over law ``1 + c/n``, ``c`` 3 to 6 at every ``K``).  Without a depth scaling (``none``: ``eps^2 = 1``) the
per-block excess is ``O(1/n)`` and the ``K/n`` term is back, as in a chain.

**Scope.**  Exact for dense linear branches (rotation invariance); ReLU masks and convolutions break it.  The
order statement carries over (the first-order term ``2 u z / sqrt(n)`` has variance ``4 eps^2 / n`` for any
branch whose output direction is isotropic), its constant does not.  What is not derived: the one-step ``s``
at finite width (the backward products and the sources carry their own ``O(1/n)`` factors, by the same
argument also flat in ``K``), so the residual laws remain infinite-width laws with this stated order.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.symbolic.cache import derivation

n = sp.Symbol("n", positive=True)
"""Width."""
eps2, m, a = sp.symbols("epsilon2 m a", positive=True)
"""The block's gain ``E u^2``, the relative fourth moment ``E u^4 / (E u^2)^2``, and ``a = lim K eps^2``."""
K = sp.Symbol("K", positive=True, integer=True)
z, Q, u = sp.symbols("z Q u", real=True)


def _expect(poly: sp.Expr) -> sp.Expr:
    """``E`` of a polynomial in independent ``z ~ N(0, 1)``, ``Q ~ chi^2_(n-1)`` and ``u`` (``E u^2 = eps2``,
    ``E u^4 = m eps2^2``; odd powers of ``z`` or ``u`` vanish)."""
    z_moment = {0: 1, 2: 1, 4: 3}
    q_moment = {0: 1, 1: n - 1, 2: (n - 1) * (n + 1)}
    u_moment = {0: 1, 2: eps2, 4: m * eps2**2}
    total = sp.Integer(0)
    for (pz, pq, pu), coeff in sp.Poly(sp.expand(poly), z, Q, u).terms():
        if pz % 2 or pu % 2:
            continue
        total += coeff * z_moment[pz] * q_moment[pq] * u_moment[pu]
    return sp.simplify(total)


def block_ratio() -> sp.Expr:
    """``R = |x'|^2 / |x|^2 = (1 + u z / sqrt(n))^2 + u^2 Q / n`` (module docstring)."""
    return (1 + u * z / sp.sqrt(n))**2 + u**2 * Q / n


@derivation
def block_ratio_moments() -> dict:
    """``{"mean": E R, "second": E R^2, "variance": Var R}`` of one dense linear block at width ``n``."""
    R = block_ratio()
    mean, second = _expect(R), _expect(sp.expand(R**2))
    return {"mean": mean, "second": second, "variance": sp.factor(sp.simplify(second - mean**2))}


def stream_moment_ratio() -> sp.Expr:
    """``E|x_K|^4 / (E|x_K|^2)^2 = (E R^2 / (E R)^2)^K`` given the stem's output, exact for a dense linear
    residual stream."""
    mom = block_ratio_moments()
    return (mom["second"] / mom["mean"]**2)**K


def forward_stable_limit() -> sp.Expr:
    """``lim_(K -> oo) stream_moment_ratio`` with ``eps^2 = a / K``: ``exp(4 a / n)`` (flat in ``K``)."""
    per_block = sp.simplify(block_ratio_moments()["second"] / block_ratio_moments()["mean"]**2 - 1)
    exponent = sp.limit(K * sp.log(1 + per_block.subs(eps2, a / K)), K, sp.oo)
    return sp.exp(sp.simplify(exponent))


def chain_moment_ratio() -> sp.Expr:
    """The chain's counterpart, ``(1 + 2/n)^L`` at ``L = K`` layers (each multiplies ``|h|^2`` by ``chi^2_n / n``)."""
    return (1 + 2 / n)**K


#: branches whose output, for a linear branch, is ``alpha B x`` with ``B`` rotation invariant: ``m`` of each
BRANCH_FOURTH_MOMENT = {"conv": sp.Integer(1), "conv-mlp": 1 + 2 / n, "preact": 1 + 2 / n}


def check_dense_linear_spec(spec) -> None:
    """The exact stream law covers dense (``kernel = spatial = batch = 1``) linear residual nets."""
    from amutheory.spec import ArchSpec

    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "resnet":
        raise ValueError(f"family: the residual stream law is for residual nets, got {spec.family!r}")
    if spec.activation != "linear":
        raise ValueError(f"activation: the residual stream law is exact for linear branches (rotation invariance), "
                         f"got {spec.activation!r}")
    for field in ("kernel", "spatial", "batch"):
        if getattr(spec, field) != 1:
            raise ValueError(f"{field}: the residual stream law is exact for dense nets (kernel = spatial = batch = 1), "
                             f"got {getattr(spec, field)}")


def block_gain(spec) -> sp.Expr:
    """``eps^2(K) = alpha(K)^2 prod_i v_i(K)`` of the spec's init and linear branch (``c = 1``)."""
    from amutheory.symbolic.resnet.init import K as K_init, branch_multiplier, layer_variance_factors

    gain = branch_multiplier(spec.init)**2 * sp.Mul(*layer_variance_factors(spec.init, spec.branch))
    return sp.simplify(gain.subs(K_init, K))


@functools.lru_cache(maxsize=None)
def _ratio_fn():
    return sp.lambdify((n, K, eps2, m), stream_moment_ratio(), "numpy")


def stream_excess(spec, blocks) -> np.ndarray:
    """``E|x_K|^4 / (E|x_K|^2)^2 - 1`` of the spec's dense linear residual stream at its width, for each ``K`` in
    ``blocks`` (exact; the chain's ``(1 + 2/n)^K - 1`` is its counterpart)."""
    check_dense_linear_spec(spec)
    ks = np.asarray([int(k) for k in blocks])
    if ks.size == 0 or ks.min() < 1:
        raise ValueError(f"blocks must be integers >= 1, got {list(blocks)}")
    gain = sp.lambdify(K, block_gain(spec), "numpy")
    fourth = float(BRANCH_FOURTH_MOMENT[spec.branch].subs(n, spec.width))
    return np.array([_ratio_fn()(float(spec.width), float(k), float(gain(float(k))), fourth) - 1.0 for k in ks])
