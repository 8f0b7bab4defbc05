"""The exact infinite-width one-step law of a *linear spatial* residual net, mode by mode.

The dense law (:mod:`amutheory.symbolic.resnet.dense`) is exact for ``kernel = spatial = batch =
1``.  For a linear net with circular padding the spatial and batch structure can be carried
exactly too: a circular conv is diagonal in the spatial Fourier basis, the GAP head's gradient
lives in the zero mode alone, and every one-step source of the stream is the same raw-input Gram
times an operator.  Nothing is fitted.

**Modes.**  With ``x_hat(q) = sum_p x(p) e^{-i w_q . p}`` a conv layer is ``W_hat(q) = sum_t
e^{i w_q . t} W_t`` at mode ``q``.  Its taps are independent, so ``tau(W_hat(q)^* W_hat(q)) = s``
(``s = c v``, the layer's gain) at every mode and the zero mode pairs with mode ``q`` as
``tau(W_hat(0)^T W_hat(q)) = rho_q s``, ``rho_q = D_q / k^d``, ``D_q = prod_d sin(k w/2) /
sin(w/2)`` the Dirichlet kernel of the taps (``rho = D = 1`` for a 1x1 conv).

**Backward.**  ``f = V mean_p x_K``, so ``g_K(b) = V^T r_b / (B P)`` at every position, and
``g_{i-1} = (I + J_i(0))^T g_i``: only ``J(0)`` (the zero mode) is ever read backwards.  Every tap
of a layer gets the same update, ``Delta W_t = -eta sum_b delta(b) x_hat(b, 0)^T``, so at mode
``q`` the layer moves by ``D_q`` times it.

**The sources share one input Gram.**  The stem's inputs give ``x_hat_0(b,0)^T x_hat_0(b',q) / n =
(rho_q / c_in) xi(b, b', q)``, ``xi = x_hat_in(b, 0)^T x_hat_in(b', q)`` the raw inputs' cross-mode
Gram, and each block multiplies it by ``1 + rho_J eps^2`` (``rho_J = tau(J(0)^T J(q)) / eps^2``:
``rho_q`` for ``conv`` and ``conv-mlp``, ``rho_q^2`` for ``preact``, whose two layers are both
``k``-tap convs).  So, per unit ``-eta``, ``Delta x_hat_i(b', q) = sum_b xi(b, b', q) M_i(q) g_i(b)``
with ``M_0 = D_q I`` (the stem's own update) and

    M_i(q) = (I + J_i(q)) M_{i-1}(q) (I + J_i(0))^T + Src_i(q),

``Src_i = alpha^2 beta_i (...)`` with ``beta_i = n t_{i-1}(q) rho_q / c_in`` the Gram factor of the
block's input (``t`` the product of the ``1 + rho_J eps^2``).  As in the dense law the blocks are
free, and two traces ``m1 = tau(M)``, ``m2 = tau(M M^*)`` close the recursion:

    m1' = (1 + rho_J eps^2) m1 + src,
    m2' = (1 + eps^2)^2 m2 + lambda_q m1^2 + 2 (src (1 + rho_J eps^2) + src_cov) m1 + src^2 + src_var,

``lambda_q = tau(S_0 S_q) - tau(S_0) tau(S_q)`` (``S_q = (I + J(q))^* (I + J(q))``).  Every moment of
the Gaussian layers here (``eps^2``, ``rho_J``, ``lambda_q``, the sources' trace, spread and
covariance with the block's Jacobians) is counted by the planar pairings of
:mod:`amutheory.symbolic.primitives.planar`, where a pairing of ``W_hat(0)`` with ``W_hat(q)`` costs ``rho_q``
(e.g. ``lambda_q = 2 rho eps^2 + rho^2 eps^4`` for ``conv``, ``2 rho eps^2 + 2 rho^2 eps^4`` for
``conv-mlp``); the free products around ``M`` are the dense law's.  Every formula is the dense law's
at ``rho = D = 1`` (tested, in SymPy) and every count agrees with random conv matrices (tested).

**The read.**  The first branch layer's pre-activation ``h = W_1 x`` (``W_1 x`` also for linear
``preact``, whose stream is a pre-activation too, ``s_x = G_{i-1} m2_{i-1}``) moves by ``W_1(q)
Delta x_hat + Delta W_1(q) x_hat``; its own update and the read-back of its weights through
``g_{i-1} = g_i + J_i(0)^T g_i`` add coherently, as in the dense law:

    s_h(q) = G_i [ s1 m2 + own ( (D_q beta + s1 rho_q m1)^2 + s1^2 m2 ) ],

``own = alpha^2`` (``conv``) or ``alpha^2 s2`` (the error signal at ``h`` is ``alpha W_2(0)^T g``).

**The mode sum and the inputs.**  The loss directions of different samples are independent, so the
samples' terms add, and for Gaussian inputs ``sum_{b,b'} E|xi(b,b',q)|^2 = c_in v^2 P^2 B (B + (c_in
+ 1) [q = 0])`` exactly.  Parseval turns the probe's mean over positions into the mean over modes:

    s_l = outputs * readout_var * c_in v^2 / (B^2 P^2) * sum_q (B + (c_in + 1) [q = 0]) G_i s_l(q),

``G_i = prod_{j > i} (1 + eps_j^2)``.  At ``kernel = spatial = batch = 1`` this is the dense law
exactly (tested).

**Scope.**  Linear branches (``conv``, ``conv-mlp``, ``preact``), circular padding, identity
shortcuts, every forward-stable init; any kernel, spatial size, dimension and batch.  ReLU is
refused: its masks are not diagonal in the modes (the position-local kernels of a ReLU stream
need the P-point law, not built).  Zero padding is refused: its convs are not diagonal in the
modes.  Left out, as in the dense law: the ``O(1/n)`` finite-width terms (only the stem's own
source ``M_0``, an exact ``1/n`` relative to the blocks', is kept).

**The seed law** (:func:`seed_table`, :func:`seed_law`): given the inputs, ``s_bar`` at infinite width
is a quadratic form in the loss directions, so the whole law of ``ln s_bar`` over seeds (its gap
to ``ln E s_bar``, its variance) is a Monte Carlo over joint draws of inputs and loss directions;
at ``kernel = spatial = batch = 1`` it is the dense closed form of :mod:`amutheory.symbolic.primitives.spread`.

**Measured**: the residual campaign holds this law, nothing fitted, against its three linear
configs at every K for the mean and the typical value (``amutheory validate``: the report's
``exact_law``), and ``tests/test_resnet_spectral.py`` against real nets; docs/findings/residual_networks.md
("The exact law of *linear* spatial residual nets") reports both.  What the law leaves out shows
there as an ``O(1/n)`` excess of the measured ``s`` and of its spread (``Var ln s_bar``) over the
law's, shrinking as the width grows (``validate/studies/resnet_width_law.py`` measures it across
widths).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import planar as P
from amutheory.symbolic.resnet.dense import branch_constants, check_residual_spec
from amutheory.symbolic.chain.spectral import dirichlet, input_gram_moments

m1, m2 = sp.symbols("m1 m2", real=True)
alpha, s1, s2 = sp.symbols("alpha s1 s2", positive=True)
#: ``rho_q`` (zero mode against mode q, per k-tap layer), ``D_q`` (the Dirichlet kernel), ``beta``
#: (the block input's Gram factor)
rho, Dq, beta = sp.symbols("rho D_q beta", real=True)

BRANCHES = ("conv", "conv-mlp", "preact")


def _layers(branch: str, mode) -> tuple:
    """``(W_1 at mode, W_2 at mode or None)`` of ``branch`` as planar letters; ``conv-mlp``'s ``W_2`` is
    1x1 (no modes)."""
    w1 = P.letter("W1", mode)
    if branch == "conv":
        return w1, None
    return w1, P.letter("W2", None if branch == "conv-mlp" else mode)


@functools.lru_cache(maxsize=None)
def mode_block_recursion(branch: str) -> dict:
    """The per-block SymPy expressions of a linear ``branch`` at one mode, in the symbols ``m1, m2,
    alpha, s1, s2, rho, D_q, beta`` (module docstring): ``eps2`` (the block Jacobian's gain
    ``tau(J(0)^T J(0))``), ``rho_J``, ``lam`` (``lambda_q``), ``src``, ``src_var``, ``src_cov``,
    ``gain``, ``m1_next``, ``m2_next`` and the first layer's ``s_read``, ``s_own`` (in units of
    ``G_i``).  Every Gaussian moment is a planar count (:mod:`amutheory.symbolic.primitives.planar`); the free
    products around ``M`` are the dense law's."""
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {', '.join(BRANCHES)}; got {branch!r}")
    gains = {"W1": s1, "W2": s2}

    def tau(op):
        return P.tau(op, gains, rho)

    (w1_0, w2_0), (w1_q, w2_q) = _layers(branch, 0), _layers(branch, "q")
    one = P.scalar(1)
    if w2_0 is None:
        j0, jq, delta = P.scale(w1_0, alpha), P.scale(w1_q, alpha), P.scalar(alpha)  # delta: error at W_1's output
    else:
        j0, jq = P.scale(P.mul(w2_0, w1_0), alpha), P.scale(P.mul(w2_q, w1_q), alpha)
        delta = P.scale(P.adjoint(w2_0), alpha)
    d2 = Dq if branch == "preact" else 1  # W_2's Dirichlet kernel (1 for a 1x1 layer)
    h_cross = tau(P.mul(P.adjoint(w1_0), w1_q))  # h(b, 0)^T h(b', q) / x(b, 0)^T x(b', q): W_2's update reads it
    # the block's sources per unit xi(b, b', q) g(b): W_1's update (D_q times one tap's, through W_2(q)) and W_2's
    w1_update = P.scale(P.mul(w2_q, P.adjoint(w2_0)) if w2_0 is not None else one, alpha**2 * Dq * beta)
    src_op = P.add(w1_update, P.scalar(alpha**2 * d2 * beta * h_cross) if w2_0 is not None else {})
    eps2 = tau(P.mul(P.adjoint(j0), j0))
    cross = tau(P.mul(P.adjoint(j0), jq))  # rho_J eps^2
    s_0 = P.mul(P.adjoint(P.add(one, j0)), P.add(one, j0))
    s_q = P.mul(P.adjoint(P.add(one, jq)), P.add(one, jq))
    lam = sp.expand(tau(P.mul(s_0, s_q)) - tau(s_0) * tau(s_q))
    src = tau(src_op)
    src_var = sp.expand(tau(P.mul(src_op, P.adjoint(src_op))) - src**2)
    gain = 1 + cross
    src_cov = sp.expand(tau(P.mul(P.adjoint(P.add(one, j0)), P.adjoint(src_op), P.add(one, jq))) - src * gain)
    # the first layer's read: W_1(q) M (I + J(0)^T) g plus its own update D_q beta delta g
    own = tau(P.mul(P.adjoint(delta), delta))
    s_read = tau(P.mul(P.adjoint(w1_q), w1_q)) * m2
    s_own = own * ((Dq * beta + h_cross * m1) ** 2 + tau(P.mul(P.adjoint(w1_0), w1_0)) * s_read)
    return {"eps2": eps2, "rho_J": sp.simplify(cross / eps2), "lam": lam, "src": src, "src_var": src_var,
            "src_cov": src_cov, "gain": gain, "m1_next": gain * m1 + src,
            "m2_next": ((1 + eps2) ** 2 * m2 + lam * m1**2 + 2 * (src * gain + src_cov) * m1 + src**2 + src_var),
            "s_read": s_read, "s_own": s_own, "s_first": s_read + s_own}


@functools.lru_cache(maxsize=None)
def _numeric_block(branch: str):
    args = (m1, m2, alpha, s1, s2, rho, Dq, beta)
    rec = mode_block_recursion(branch)
    keys = ("eps2", "gain", "m1_next", "m2_next", "s_read", "s_own", "s_first")
    return {k: sp.lambdify(args, sp.expand(rec[k]), "numpy") for k in keys}


def modes(spec: ArchSpec) -> dict[str, np.ndarray]:
    """The ``P = N^d`` Fourier modes of ``spec`` (mode 0 first): ``D`` (the taps' Dirichlet kernel,
    :func:`amutheory.symbolic.chain.spectral.dirichlet`), ``rho = D / k^d`` and ``weight = B + (c_in + 1)
    [q = 0]``, the inputs' ``sum_{b,b'} E|xi|^2`` (:func:`amutheory.symbolic.chain.spectral.input_gram_moments`)
    over ``c_in v^2 P^2 B``."""
    d = dirichlet(spec)
    weight = input_gram_moments(spec) / (spec.input_channels * spec.spatial ** (2 * spec.dim) * spec.batch)
    return {"D": d, "rho": d / spec.kernel**spec.dim, "weight": weight}


def _check(spec: ArchSpec):
    check_residual_spec(spec, "the mode-by-mode residual law")
    if spec.activation != "linear":
        raise ValueError(f"activation: the mode-by-mode residual law is for linear nets (a ReLU mask mixes "
                         f"the modes); got {spec.activation!r}")
    if spec.padding != "circular":
        raise ValueError(f"padding: the mode-by-mode residual law needs circular padding (a zero-padded conv "
                         f"is not diagonal in the modes); got {spec.padding!r}")


def _unweighted_layer_moments(spec: ArchSpec, input_var: float = 1.0) -> np.ndarray:
    """``s_l(q)`` per unit input-Gram weight: every pre-activation (rows, in the probe's order) at
    every mode (columns), before the mode's ``weight`` (:func:`modes`) multiplies it."""
    _check(spec)
    if not float(input_var) > 0:
        raise ValueError(f"input_var must be > 0, got {input_var!r}")
    fns = _numeric_block(spec.branch)
    a, w1, w2 = branch_constants(spec)
    sg1, sg2 = spec.c * w1, spec.c * w2
    md = modes(spec)
    D, r = md["D"], md["rho"]
    n, blocks, cin = spec.width, spec.depth, spec.input_channels
    eps2 = float(fns["eps2"](0, 0, a, sg1, sg2, 1, 1, 1))
    G = (1 + eps2) ** np.arange(blocks, -1, -1)  # G_i / G_K, i = 0..K
    mm1, mm2 = D.copy(), D**2  # M_0 = D_q I, the stem's own update
    t = np.ones_like(D)
    out = []
    for i in range(1, blocks + 1):
        bt = n * t * r / cin
        args = (mm1, mm2, a, sg1, sg2, r, D, bt)
        if spec.branch == "preact":
            out.append(G[i - 1] * mm2)
        out.append(G[i] * fns["s_first"](*args))
        mm1, mm2 = fns["m1_next"](*args), fns["m2_next"](*args)
        t = t * fns["gain"](*args)
    P, B = spec.spatial**spec.dim, spec.batch
    scale = spec.outputs * spec.readout_variance * cin * float(input_var) ** 2 / (B**2 * P**2)
    return scale * np.asarray(out)


def mode_layer_moments(spec: ArchSpec, input_var: float = 1.0) -> np.ndarray:
    """``s_l(q)`` of every pre-activation (rows, in the probe's order) at every mode (columns),
    each weighted by its share of the mode sum, so that the rows' sums are :func:`layer_moments`."""
    return _unweighted_layer_moments(spec, input_var) * modes(spec)["weight"]


def layer_moments(spec: ArchSpec, input_var: float = 1.0) -> np.ndarray:
    """Expected ``s`` (the probe's, per unit ``eta^2``) of every pre-activation of a linear circular
    residual net, in the probe's order (per block: the stream, then the first layer, for
    ``preact``), nothing fitted.  ``ValueError`` names the field outside the law's scope."""
    return mode_layer_moments(spec, input_var).sum(axis=1)


def s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``s_bar(K)``, the mean of :func:`layer_moments` over pre-activations, at each ``K`` in ``depths``."""
    _check(spec)
    return np.array([layer_moments(spec.with_(depth=int(d)), input_var).mean() for d in depths])



# --------------------------------------------------------------------------- the seed law: inputs and loss directions
def mode_coefficients(spec: ArchSpec, input_var: float = 1.0) -> np.ndarray:
    """``c_q``: ``E[s_bar | inputs] = sum_q c_q w_q(x)``, ``w_q(x) = sum_{b,b'} |xi(b, b', q)|^2 /
    (c_in v^2 P^2 B)`` the mode's input-Gram weight of one draw (its expectation is
    ``modes(spec)["weight"]``)."""
    return _unweighted_layer_moments(spec, input_var).mean(axis=0)


def seed_table(spec: ArchSpec, draws: int = 20000, seed: int = 0, input_var: float = 1.0) -> np.ndarray:
    """Joint draws of the inputs and the loss directions, one row each: ``S[j, q]`` with
    ``s_bar = S[j] @ c`` (:func:`mode_coefficients`) the infinite-width ``s_bar`` of draw ``j``.

    Given the inputs, the infinite-width net is deterministic and ``s_bar`` is the quadratic form
    ``sum_{b1,b2} C(b1, b2) r_{b1} . r_{b2}`` of the loss directions, ``C = sum_q c_q A_q``,
    ``A_q(b1, b2) = sum_{b'} xi(b1, b', q) conj(xi(b2, b', q)) / (c_in v^2 P^2 B m)``: the samples
    couple through their shared cross-mode Gram (``E_r`` gives back ``sum_q c_q w_q``).  The table
    does not depend on K (only ``c`` does), so one table serves every depth with common random
    numbers.  Draws are numpy's ``default_rng(seed)``."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    if not float(input_var) > 0:
        raise ValueError(f"input_var must be > 0, got {input_var!r}")
    rng = np.random.default_rng(seed)
    B, cin, m, P = spec.batch, spec.input_channels, spec.outputs, spec.spatial**spec.dim
    axes = tuple(range(-spec.dim, 0))
    rows = []
    for start in range(0, draws, 2000):  # chunks keep the complex Gram arrays small
        size = min(2000, draws - start)
        x = rng.normal(0.0, np.sqrt(float(input_var)), (size, B, cin) + (spec.spatial,) * spec.dim)
        r = rng.normal(size=(size, B, m))
        xh = np.fft.fftn(x, axes=axes).reshape(size, B, cin, P)
        xi = np.einsum("jbc,jdcq->jbdq", xh[..., 0].real, xh)  # xi(b, b', q) per draw
        rr = np.einsum("jam,jbm->jab", r, r)  # r_{b1} . r_{b2}
        s_q = np.einsum("jadq,jbdq,jab->jq", xi, xi.conj(), rr).real
        rows.append(s_q / (cin * float(input_var) ** 2 * P**2 * B * m))
    return np.concatenate(rows)


def seed_law(spec: ArchSpec, table: np.ndarray, input_var: float = 1.0) -> dict:
    """The infinite-width law of ``ln s_bar`` over seeds (inputs and loss directions) from a
    :func:`seed_table`: ``mean`` (exact, ``sum_q c_q weight_q``), ``gap = E ln s_bar - ln E s_bar``
    and ``var = Var[ln s_bar]``, each Monte Carlo with its standard error (``gap_se``, ``var_se``:
    sd over the draws / sqrt(draws); the variance's by the fourth central moment), and ``mc_mean``
    (the draws' mean of ``s_bar``, a check on the table: equal to ``mean`` within its error)."""
    c = mode_coefficients(spec, input_var)
    s = np.asarray(table, float) @ c
    if not np.all(s > 0):
        raise ValueError("table: every draw's s_bar must be positive (a table of this spec's geometry)")
    ln = np.log(s)
    mean = float(c @ modes(spec)["weight"])
    n = len(ln)
    dev = ln - ln.mean()
    var = float(dev.var(ddof=1))
    return {"mean": mean, "gap": float(ln.mean() - np.log(mean)), "gap_se": float(dev.std(ddof=1) / np.sqrt(n)),
            "var": var, "var_se": float(np.sqrt(max(np.mean(dev**4) - var**2, 0.0) / n)),
            "mc_mean": float(s.mean()), "mc_mean_se": float(s.std(ddof=1) / np.sqrt(n)), "draws": n}
