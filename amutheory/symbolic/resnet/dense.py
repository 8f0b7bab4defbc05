"""The exact infinite-width one-step law of a *dense* residual net, with the stream Jacobian's spread.

Dense means one position and one sample (``kernel = spatial = batch = 1``): every conv is a
matrix, and the law is the mean over seeds of ``s`` with nothing fitted.  It is the step past the
coherent order of :mod:`amutheory.symbolic.resnet.coherent` that the held-out misses of the campaign ask
for (docs/findings/residual_networks.md, "per-block profile"): there the stream Jacobian ``P = prod (I + J_j)`` was taken as
the identity.

**Set-up.**  ``g_i`` is the stream gradient after block ``i`` (``g_K`` = head weights times the loss
direction), ``G_i = |g_i|^2 / n``.  Block ``j``'s weight updates move the stream at its output along
``g_j`` (coherent source ``src_j``, per coordinate, in units of ``eta n``), so the stream's update
before block ``i+1`` is ``u_i = M_i g_i`` with

    M_i = (I + J_i) M_{i-1} (I + J_i)^T + src_i I,        M_0 = src_0 I (the stem).

At infinite width the weights of different blocks are free (free probability), so only the
normalised traces ``m1 = tau(M)``, ``m2 = tau(M^2)`` are needed, and ``|u_i|^2 / n = G_i m2_i``.
With ``S = (I + J)^T (I + J)``, ``tau(S) = 1 + eps^2`` and (freeness of ``S`` and ``M``)

    m1' = (1 + eps^2) m1 + src
    m2' = (1 + eps^2)^2 m2 + lambda m1^2 + 2 (src (1 + eps^2) + src_cov) m1 + src^2 + src_var,
    lambda = tau(S^2) - tau(S)^2 = 2 eps^2 + (rho4 - 1) eps^4,

``eps^2 = tau(J J^T)`` the per-block Jacobian gain and ``rho4 = tau((J J^T)^2) / eps^4`` its
singular values' normalised fourth moment.  ``J`` is a product of free factors (Gaussian
matrices, ``r = 2``; activation-derivative masks, ``r = E phi'^4 / (E phi'^2)^2``), and for such
products ``rho4 = 1 + sum_f (r_f - 1)`` (:func:`fourth_moment_ratio`).  The cross term is
``2 tau(M) tau(Src (I + J)(I + J)^T)``, and the block's source operator ``Src`` shares weights with its
Jacobian: the first layer's update reaches the stream through ``W_2 D^2 W_2^T`` (``D^2`` for ``conv``),
which is also in ``J J^T``.  So ``tau(Src J J^T) = eps^2 src + src_cov``, ``src_cov`` the covariance
(``alpha^4 base s1 s2^2 D4`` with Marchenko-Pastur's ``tau((W D^2 W^T)^2) = s^2 (D2^2 + D4)``;
``alpha^4 q s1 (D4 - D2^2)`` for ``conv``).  It is ``O(1/K^2)`` per block, so it matters at small K:
real nets at K = 4 resolve it (docs/findings/residual_networks.md, "The spread, derived, for dense nets",
gives measured/law with and without it).  The coherent order is ``lambda = 0``, which keeps
``m2 = m1^2``: the spread ``lambda m1^2`` is of order ``1/K`` per block, but it multiplies
``m1^2 ~ K^2`` and accumulates over ``K`` blocks, so it changes ``s`` at order one and steepens the
per-block profile (a function of ``i/K``; the exponent is unchanged).

**The first branch layer's pre-activation** ``h = W_1 x`` (``W_1 phi(x)`` for ``preact``) of block
``i`` reads the stream through ``g_{i-1} = g_i + J_i^T g_i``, whose second part holds its own
weights: ``W_1 M W_1^T delta`` (``delta`` the error signal at ``h``) adds to its own update
``delta |x|^2`` coherently.  So, per coordinate, with ``sigma_1 = c v_1``,

    s_h = sigma_1 G_i m2 + own G_i [ (base + sigma_1 m1)^2 + sigma_1^2 m2 ],

``own G_i = |delta|^2 / n``, ``base = |x|^2 / n`` (``|phi(x)|^2 / n`` for ``preact``, whose stream mask
also weights ``m1, m2`` there), and for ``preact`` the stream itself is a pre-activation,
``s_x = G_{i-1} m2_{i-1}``.  ``s = eta^2 n^2 G_K`` times these.

**Expectation over the draw.**  For homogeneous activations (linear, ReLU) every term is of degree
2 in the stem's ``q_0 = |x_in|^2 / fan_in``, which is ``input_var chi^2_f / f`` with
``f = c_in k``; so ``E[s]`` is the law at ``q_0 = input_var`` times ``E[q_0^2] / input_var^2 =
1 + 2/f``.  ``G_K = outputs * readout_variance``.

**Scope.**  Branches ``conv``, ``conv-mlp``, ``preact`` with linear or ReLU; every forward-stable
init.  ``preact`` with ReLU is not free: its stream masks ``phi'(x_j)`` persist from block to block
(``x`` moves by ``O(K^{-1/2})`` per block), so ``M`` is not free of the next mask, and the measured
``s`` exceeds this free law, increasingly with K where the stream grows (docs/findings/residual_networks.md,
"The spread, derived, for dense nets"; derivations/08_residual_preact_masks.py).  :func:`layer_moments` hands
that case to the coordinate law of :mod:`amutheory.symbolic.resnet.preact`, which carries the
masks' persistence exactly (and equals this law when the masks are made independent).  Spatial nets
(``kernel, spatial > 1``) are refused too: there the stream's position-position correlation grows
along depth and the position sums of the sources grow with it (measured: their profile is steeper
than the dense one), which this law does not carry.  Left out everywhere: the ``O(1/n)`` finite-width terms
(only the stem's source, ``f q_0 / n``, is kept, being exact) and ``O(K^{-2})`` non-free terms.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import preact
# one block's recursion, checks and constants (re-exported: ``dense.block_recursion`` etc. keep working)
from amutheory.symbolic.resnet.block import (  # noqa: F401
    ACTIVATIONS, PARTS, D2h, D2x, D4h, D4x, Mh, Mx, _check, alpha, block_recursion, branch_constants,
    c, c_in, check_residual_spec, d_stem, fourth_moment_ratio, k_stem, m1, m2, q, stem_fan_in, stem_moment,
    stem_moment_expression, v1, v2)
from amutheory.symbolic.resnet.coherent import _stream_path  # the mean-field q path (with the ReLU mean)


@functools.lru_cache(maxsize=None)
def _numeric_block(branch: str, activation: str, spread: bool = True):
    """The block expressions with the activation's moments put in, lambdified in
    ``(q, m1, m2, alpha, v1, v2, c)`` (``spread=False``: ``lambda = 0``, the coherent order)."""
    from amutheory.activations import _q, get_activation

    act = get_activation(activation)
    d2, d4 = act.exact_moment("dphi2"), act.exact_moment("dphi4")
    mom = sp.simplify(act.exact_moment("phi2") / _q)  # E phi^2 = mom * variance (homogeneous)
    rec = block_recursion(branch)
    var_h = c * v1 * (mom * q if branch == "preact" else q)  # E phi(x)^2 = mom q feeds W_1 (preact)
    subs = {D2h: d2, D4h: d4, D2x: d2, D4x: d4, Mh: mom * var_h, Mx: mom * q}
    args = (q, m1, m2, alpha, v1, v2, c)
    m2_next = rec["m2_next"] if spread else rec["m2_next"] - rec["lam"] * m1**2
    exprs = {k: rec[k] for k in ("eps2", "m1_next", "s_first", "s_read", "s_own")}
    exprs["m2_next"] = m2_next
    return {k: sp.lambdify(args, sp.expand(e.subs(subs)), "math") for k, e in exprs.items()}


def layer_moments(spec: ArchSpec, input_var: float = 1.0, spread: bool = True, part: str = "all") -> np.ndarray:
    """Expected ``s`` (the probe's, per unit ``eta^2``) of every pre-activation of ``spec``, in the
    probe's order (per block: the stream, then the first layer, for ``preact``), nothing fitted: the
    free law (:func:`free_layer_moments`), and for ``preact`` with ReLU, where its stream masks are
    not free, the coordinate law (:func:`amutheory.symbolic.resnet.preact.layer_moments`).
    ``spread=False`` is the coherent order (``lambda = 0``), for comparison.  ``part``
    (:data:`PARTS`): ``"stream"`` or ``"own"`` keeps one of the two terms (they add up to ``"all"``)."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    _check(spec)
    if spec.branch == "preact" and spec.activation != "linear":
        if not spread:
            raise ValueError("spread: the coherent order is not defined for preact with ReLU (its law is the "
                             "coordinate law of amutheory.symbolic.resnet.preact, which has no free spread term)")
        return preact.layer_moments(spec, input_var, part)
    return free_layer_moments(spec, input_var, spread, part)


def free_layer_moments(spec: ArchSpec, input_var: float = 1.0, spread: bool = True, part: str = "all") -> np.ndarray:
    """The free law's :func:`layer_moments` (every block's operators free of what came before), for
    every net :func:`_check` admits; for ``preact`` with ReLU it is not the law (its stream masks
    persist, and it falls below the measured ``s`` as K grows: derivations/08_residual_preact_masks.py) and is kept
    for comparison."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    _check(spec)
    if not float(input_var) > 0:
        raise ValueError(f"input_var must be > 0, got {input_var!r}")
    blocks, n, cc = spec.depth, spec.width, spec.c
    fns = _numeric_block(spec.branch, spec.activation, bool(spread))
    a, w1, w2 = branch_constants(spec)
    qs = _stream_path(spec, blocks, 1.0)  # homogeneous of degree 1 in q_0: at q_0 = 1, scaled below
    eps2 = [fns["eps2"](qs[i], 0.0, 0.0, a, w1, w2, cc) for i in range(blocks)]
    G = np.ones(blocks + 1)  # G_i / G_K, backward: G_{i-1} = (1 + eps_i^2) G_i
    for i in range(blocks, 0, -1):
        G[i - 1] = G[i] * (1 + eps2[i - 1])
    mm1 = stem_fan_in(spec) / n  # the stem: Delta x_0 = |x_in|^2 g_0, |x_in|^2 / n = f q_0 / n
    mm2 = mm1**2
    out = []
    for i in range(1, blocks + 1):
        args = (qs[i - 1], mm1, mm2, a, w1, w2, cc)
        if spec.branch == "preact":
            out.append(G[i - 1] * mm2 * (part != "own"))
        out.append(G[i] * fns[{"all": "s_first", "stream": "s_read", "own": "s_own"}[part]](*args))
        mm1, mm2 = fns["m1_next"](*args), fns["m2_next"](*args)
    scale = n**2 * spec.outputs * spec.readout_variance * float(input_var) ** 2 * stem_moment(spec)
    return scale * np.asarray(out)


def s_bar(spec: ArchSpec, depths, input_var: float = 1.0, spread: bool = True) -> np.ndarray:
    """``s_bar(K)``, the mean of :func:`layer_moments` over pre-activations, at each ``K`` in ``depths``."""
    _check(spec)
    return np.array([layer_moments(spec.with_(depth=int(d)), input_var, spread).mean() for d in depths])


# --------------------------------------------------------------------------- the dense shape of spatial nets
def dense_twin(spec: ArchSpec) -> ArchSpec:
    """The dense single-sample net with ``spec``'s channels, branch, init and activation:
    ``kernel = spatial = batch = 1`` (the net :func:`s_bar` is exact for)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    return spec.with_(kernel=1, spatial=1, batch=1)


@functools.lru_cache(maxsize=4096)
def _twin_parts(twin: ArchSpec, blocks: int, input_var: float) -> tuple[float, float]:
    """The block averages of the twin's stream and own parts at ``blocks`` blocks."""
    spec = twin.with_(depth=blocks)
    return (float(layer_moments(spec, input_var, part="stream").mean()),
            float(layer_moments(spec, input_var, part="own").mean()))


def shape_predictor(spec: ArchSpec, input_var: float = 1.0):
    """``s_bar(K; rho_stream, rho_own) = rho_stream * stream_twin(K) + rho_own * own_twin(K)``: the
    *dense-shape law* of a spatial or batched residual net.  ``stream_twin`` and ``own_twin`` are the
    block averages of the two parts of the exact dense law of :func:`dense_twin` (``part="stream"``:
    the stream's update as read, with the spread; ``part="own"``: the first layer's own update and
    its read-back of the stream; :func:`layer_moments`), nothing fitted in them; the two ``rho`` are
    calibrated.  At ``kernel = spatial = batch = 1`` and ``rho = 1`` it is the dense law itself.

    What it assumes.  In a spatial or batched net both parts are sums over positions and samples of
    the dense net's operators: the GAP head's gradient is the same at every position of a sample,
    a circular conv with independent taps maps the stream's position-sample kernel ``K(a, b)`` to its
    average along the offset ``a - b`` (no correlation reaches a new offset), and the samples couple
    through the shared weights.  The sums multiply the two parts by different factors (measured on
    linear conv-mlp nets: the per-block spatial/dense ratio falls from the own-dominated first
    blocks to the stream-dominated last ones, so one common factor does not hold).  This law takes
    each factor to be the same at every block and every K.  That is not derived: the kernel's
    averaging and, with ReLU, the branch means that add a growing correlation along the stream make
    the factors functions of ``i / K``, which changes the ``O(1/K)`` terms, not the exponent.  So it
    is a calibrated model with the dense law's K-dependence (spread, read-back, source covariance)
    and two constants in place of the coherent order's three; the held-out depths of the campaign
    test it (``derivations/07_residual_dense_law.py``, section 5d).  Its exponent is the dense law's,
    which is the coherent order's (section 5c).

    Covers what :func:`s_bar` covers (``ValueError`` naming the field otherwise); for ``preact``
    with ReLU the twin's parts are the coordinate law's (:mod:`amutheory.symbolic.resnet.preact`),
    split by source: ``own`` is what the layer's own backward signal ``e_j`` brings, which for the
    linear ``preact`` nets, where both laws exist, differs from the free law's split (their sum
    does not)."""
    twin = dense_twin(spec)
    _check(twin)
    if not float(input_var) > 0:
        raise ValueError(f"input_var must be > 0, got {input_var!r}")
    base = twin.with_(depth=1)
    iv = float(input_var)

    def predict(depths, rho_stream, rho_own):
        ks = np.ravel(np.asarray(depths, float))
        if np.any(ks != np.round(ks)) or np.any(ks < 1):
            raise ValueError(f"depths must be positive integers (block counts), got {depths!r}")
        parts = np.array([_twin_parts(base, int(k), iv) for k in ks])
        return (rho_stream * parts[:, 0] + rho_own * parts[:, 1]).reshape(np.shape(depths))

    return predict
