"""The exact infinite-width one-step law of a dense *pre-activation* residual net, coordinate by
coordinate: the stream masks persist from block to block.

The free law of :mod:`amutheory.symbolic.resnet.dense` takes each block's stream mask
``D_j = diag phi'(x_{j-1})`` free of everything before it.  For ``preact`` with ReLU that is false:
the stream moves by ``O(K^{-1/2})`` per block, so ``x_{j-1}`` and ``x_{p-1}`` of one coordinate stay
correlated over the whole depth, and the free law falls below the measured ``s`` as K grows where
the stream grows (docs/findings/residual_networks.md, "The spread, derived, for dense nets", reports the
ratios; ``tests/test_resnet_preact.py`` checks both laws against real nets).  This module
follows one stream coordinate instead (a tensor-program computation): at infinite width every
vector's coordinates are i.i.d., and each is a sum of independent Gaussian *sources* times
coefficients and masks of that coordinate.

**Sources.**  The head's gradient ``g_K`` (variance ``G_K``, set to 1 and restored in the scale) and,
for each block ``p``, ``e_p = W_1p^T delta_p`` (``delta_p = alpha D_h W_2p^T g_p``), a fresh Gaussian of
variance ``E_p = alpha^2 s1 s2 D2h G_p`` (``s_i = c v_i``), free of the stream ``x``.  The backward
pass is ``g_{p-1} = g_p + D_p e_p``, so ``G_{p-1} = (1 + eps^2) G_p`` and ``g_l`` holds ``D_p e_p`` for
every ``p > l``.  Nothing in the backward pass reads back a forward weight at initialisation
(``phi''`` of ReLU has zero mean against the zero-mean signals), so these sources are free.

**The update** (in units of ``eta n``) of the stream before block ``j`` is

    Delta x_{j-1} = sum_{l < j} kappa_l g_l + alpha sum_{l < j} Z_l,

with coherent coefficients ``kappa_l`` (the stem's ``f q_0 / n``; a block's own ``W_2`` update,
``alpha^2 E phi(h)^2``, and the read-back of ``W_2^T`` in its forward matmul) and fresh Gaussians
``Z_l = W_2l (D_h Delta h_l)`` (their hat parts: new Gaussians, free of every mask, of variance
``s2 E[(D_h Delta h_l)^2]``).  So the coefficient of ``D_p e_p`` in ``Delta x_{j-1}`` is
``C_{min(p, j)}``, ``C_m = sum_{l < m} kappa_l``.  Block ``j`` reads ``D_j Delta x_{j-1}``; the second
moment of that read, per source, is (:func:`block_expressions`, ``read``)

    P_jp coef_p^2 E_p + D2x F_p,

``F_p`` the fresh variance of source ``p`` so far, and ``P_jp = E[phi'(x_{j-1})^2 phi'(x_{p-1})^2]``
the **mask pair** of the stream's two blocks.  The stream coordinate is a Gaussian random walk
(independent increments: ``Cov(x_a, x_b) = q_{min(a, b)}``), so ``P_jp`` is the Gaussian orthant
probability at correlation ``sqrt(q_lo / q_hi)`` (:func:`mask_pair`, from the ReLU pair kernel of
:mod:`amutheory.symbolic.chain.kernel_law`), ``E phi'^4`` on the diagonal.  With ``P_jp`` set to its
independent value ``D2x^2`` (``masks="independent"``) this law equals the free law to rounding, for
ReLU and linear alike (tested): the free law is this law without the persistence.

**The first layer.**  ``Delta h_j = delta_j c_j + Zhat``, ``c_j = base + s1 D2x C_j`` (its own update
``|phi(x)|^2 / n`` and the read-back of ``W_1^T`` in ``e_j``), ``Zhat`` fresh of variance
``s1 E[read]``.  Its ``s`` splits by source: ``own`` holds ``delta_j``'s term and the read of ``e_j``
(the layer's own backward signal, brought back through the stream), ``stream`` the read of every
other source.  The stream itself is a pre-activation, ``s_x = E[(Delta x_{j-1})^2]`` (all ``stream``).

**Scope.**  Dense (``kernel = spatial = batch = 1``), ``preact``, linear or ReLU, identity shortcuts,
forward-stable inits: what :func:`amutheory.symbolic.resnet.block._check` admits for ``preact``.
Left out, as in the free law: ``O(1/n)``.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import block as rd
from amutheory.symbolic.resnet.block import PARTS, _check, branch_constants, stem_fan_in, stem_moment
from amutheory.symbolic.resnet.coherent import _stream_path

#: per-source symbols: coefficient, source variance, fresh variance so far, mask pair with the read,
#: the source's share of ``|g_j|^2 / n``, and the source's mask factor in the unread stream
coef, E_src, F_src, P_pair, G_src, mask_src = sp.symbols("coef E F P G_src mask", nonnegative=True)
#: per-block scalars: the coherent sum ``C_j``, ``G_j``, the stream's ``q`` and the weights
C_j, G_j, q_x = sp.symbols("C_j G_j q", nonnegative=True)
alpha, s1, s2 = sp.symbols("alpha s1 s2", positive=True)
rho = sp.Symbol("rho", real=True)
#: one source's read (the ``read`` expression's value), an input of ``fresh``
read_src = sp.Symbol("read_src", nonnegative=True)

#: how the stream masks of two blocks are taken: the exact Gaussian orthant probability, or free
#: (the free law's assumption, for comparison)
MASKS = ("persistent", "independent")


@functools.lru_cache(maxsize=None)
def mask_pair(activation: str) -> sp.Expr:
    """``E[phi'(u)^2 phi'(v)^2]`` of two unit Gaussians at correlation ``rho``: 1 (linear);
    ``(pi - acos rho) / (2 pi) = 1/4 + asin(rho) / (2 pi)`` (ReLU, the orthant probability, SymPy
    integral in polar coordinates, :func:`amutheory.symbolic.chain.kernel_law.relu_pair_kernels`)."""
    if activation == "linear":
        return sp.Integer(1)
    if activation == "relu":
        from amutheory.symbolic.chain.kernel_law import relu_pair_kernels, theta

        return sp.expand(relu_pair_kernels()["mask"].subs(theta, sp.acos(rho)).rewrite(sp.asin))
    raise ValueError(f"activation: the coordinate law needs linear or relu, got {activation!r}")


@functools.lru_cache(maxsize=None)
def block_expressions(activation: str) -> dict:
    """One block's SymPy expressions, activation moments put in (``D2 = E phi'^2``, ``D4 = E phi'^4``,
    ``E phi^2 = mom q``, the same at the stream and at ``h``).  What the coordinate law shares with
    the free law is taken from :func:`amutheory.symbolic.resnet.block.block_recursion` (``preact``),
    with its trace ``m1`` read as the coherent sum ``C_j``; what is new is the per-source read:

    * ``c``: the first layer's coherent factor ``base + mean_read = base + s1 D2 C_j``;
    * ``read``: the second moment of one source's part of ``D_j Delta x_{j-1}``;
    * ``own_direct``: ``E[(delta_j c_j)^2] = own G_j c^2``;
    * ``fresh``: one source's new fresh variance ``alpha^2 Var(Z_j)`` (``read`` and ``G_src`` per source);
    * ``C_next``: ``C_{j+1}``, the free law's ``m1_next`` (the block's coherent coefficient
      ``kappa_j = src + eps^2 C_j`` added); ``eps2``: the backward gain;
    * ``e_var``: ``E_j`` per unit ``G_j`` (``s1 own``); ``unread``: one source's part of ``E[(Delta x)^2]``."""
    from amutheory.activations import _q, get_activation
    act = get_activation(activation)
    d2, d4 = act.exact_moment("dphi2"), act.exact_moment("dphi4")
    mom = sp.simplify(act.exact_moment("phi2") / _q)
    base = mom * q_x  # |phi(x)|^2 / n, the input of W_1
    subs = {rd.D2h: d2, rd.D4h: d4, rd.D2x: d2, rd.D4x: d4, rd.Mx: base, rd.Mh: mom * s1 * base, rd.c: 1,
            rd.v1: s1, rd.v2: s2, rd.alpha: alpha, rd.q: q_x, rd.m1: C_j}
    free = {k: sp.expand(e.subs(subs)) for k, e in rd.block_recursion("preact").items()}
    c = free["base"] + free["mean_read"]
    return {
        "c": c,
        "read": P_pair * coef**2 * E_src + d2 * F_src,
        "own_direct": free["own"] * G_j * c**2,
        "fresh": alpha**2 * s2 * (c**2 * alpha**2 * d4 * s2 * G_src + d2 * s1 * read_src),
        "C_next": free["m1_next"],
        "eps2": free["eps2"],
        "e_var": s1 * free["own"],
        "unread": mask_src * coef**2 * E_src + F_src,
        "d2": d2, "d4": d4,
    }


@functools.lru_cache(maxsize=None)
def _numeric(activation: str) -> dict:
    ex = block_expressions(activation)
    weights = (alpha, s1, s2)
    fns = {
        "read": sp.lambdify((P_pair, coef, E_src, F_src), ex["read"], "numpy"),
        "own_direct": sp.lambdify((alpha, s2, G_j, q_x, C_j, s1), ex["own_direct"], "numpy"),
        "fresh": sp.lambdify((alpha, s2, s1, q_x, C_j, G_src, read_src), ex["fresh"], "numpy"),
        "C_next": sp.lambdify((alpha, s2, s1, q_x, C_j), ex["C_next"], "math"),
        "unread": sp.lambdify((mask_src, coef, E_src, F_src), ex["unread"], "numpy"),
        "pair": sp.lambdify(rho, mask_pair(activation), "numpy"),
        "eps2": sp.lambdify(weights, ex["eps2"], "math"),
        "e_var": sp.lambdify(weights, ex["e_var"], "math"),
    }
    return {**fns, "d2": float(ex["d2"]), "d4": float(ex["d4"])}


def _check_masks(masks: str) -> None:
    if masks not in MASKS:
        raise ValueError(f"masks must be one of {', '.join(MASKS)}, got {masks!r}")


def _pair_row(fns: dict, qs: np.ndarray, j: int, masks: str) -> np.ndarray:
    """Row ``j - 1`` of :func:`stream_mask_pairs` (one block's pairs with every block: O(K) memory)."""
    if masks == "persistent":
        row = np.broadcast_to(fns["pair"](np.sqrt(np.minimum(qs, qs[j - 1]) / np.maximum(qs, qs[j - 1]))),
                              qs.shape).astype(float)
    else:
        row = np.full(qs.shape, fns["d2"] ** 2)
    row[j - 1] = fns["d4"]
    return row


def stream_mask_pairs(activation: str, qs, masks: str = "persistent") -> np.ndarray:
    """``P[j-1, p-1] = E[phi'(x_{j-1})^2 phi'(x_{p-1})^2]`` for blocks ``j, p = 1..K``, from the
    stream's ``q`` before each block (``qs[0..K-1]``): :func:`mask_pair` at ``sqrt(q_lo / q_hi)``,
    ``E phi'^4`` on the diagonal; ``masks="independent"`` puts ``(E phi'^2)^2`` off the diagonal."""
    _check_masks(masks)
    fns, qs = _numeric(activation), np.asarray(qs, float)
    return np.array([_pair_row(fns, qs, j, masks) for j in range(1, len(qs) + 1)])


def layer_moments(spec: ArchSpec, input_var: float = 1.0, part: str = "all",
                  masks: str = "persistent") -> np.ndarray:
    """Expected ``s`` of every pre-activation of the dense ``preact`` net ``spec`` (per block: the
    stream, then the first layer), in the units and order of
    :func:`amutheory.symbolic.resnet.dense.layer_moments`, which calls this for ``preact`` with ReLU.
    ``part``: ``"stream"`` or ``"own"`` keeps one of the two source groups (they add up to
    ``"all"``; the stream entries are all ``stream``).  ``masks="independent"``: the free law."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    _check(spec)
    if spec.branch != "preact":
        raise ValueError(f"branch: the coordinate law is for preact nets, got {spec.branch!r}")
    if not float(input_var) > 0:
        raise ValueError(f"input_var must be > 0, got {input_var!r}")
    _check_masks(masks)
    fns = _numeric(spec.activation)
    blocks, n = spec.depth, spec.width
    a, v1, v2 = branch_constants(spec)
    w1, w2 = spec.c * v1, spec.c * v2
    qs = np.asarray(_stream_path(spec, blocks, 1.0), float)  # degree 1 in q_0: at q_0 = 1, scaled below
    q_before = qs[:blocks]

    G = (1 + fns["eps2"](a, w1, w2)) ** np.arange(blocks, -1, -1.0)  # G_i / G_K, i = 0..K
    # sources: index 0 is g_K, index p = 1..K is e_p
    e_var = np.concatenate([[1.0], fns["e_var"](a, w1, w2) * G[1:]])
    mask_of = np.concatenate([[1.0], np.full(blocks, fns["d2"])])  # g_K is unmasked, e_p carries D_p
    p_idx = np.arange(1, blocks + 1)
    C = np.zeros(blocks + 2)
    C[1] = stem_fan_in(spec) / n  # the stem: Delta x_0 = (|x_in|^2 / n) g_0
    F = np.zeros(blocks + 1)
    out = []
    for j in range(1, blocks + 1):
        cj = C[j]
        coefs = np.concatenate([[cj], np.where(p_idx < j, C[np.minimum(p_idx, j)], cj)])
        pair_row = np.concatenate([[fns["d2"]], _pair_row(fns, q_before, j, masks)])
        read = fns["read"](pair_row, coefs, e_var, F)
        g_share = np.concatenate([[1.0], np.where(p_idx > j, mask_of[1:] * e_var[1:], 0.0)])
        own = fns["own_direct"](a, w2, G[j], qs[j - 1], cj, w1) + w1 * read[j]
        stream = w1 * (read.sum() - read[j])
        out.append(float(np.sum(fns["unread"](mask_of, coefs, e_var, F))) if part != "own" else 0.0)
        out.append({"all": own + stream, "stream": stream, "own": own}[part])
        F = F + fns["fresh"](a, w2, w1, qs[j - 1], cj, g_share, read)
        C[j + 1] = fns["C_next"](a, w2, w1, qs[j - 1], cj)
    scale = n**2 * spec.outputs * spec.readout_variance * float(input_var) ** 2 * stem_moment(spec)
    return scale * np.asarray(out)
