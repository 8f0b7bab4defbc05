"""The linear MLP's finite-width law split into its forward and backward widths, and the backward
width of a ReLU net at which its backward steps fluctuate as a linear net's.

**The split.**  The exact law of :mod:`amutheory.symbolic.chain.finite_width` is
``S(z) = (v_r m / B^3) U(z) [K(z) + 2 z W(z) K_beta(z)]``: the forward Gram moments ``K``, ``K_beta``
come from the layers below each update, the moments ``u_p``, ``w_p`` (series ``U``, ``W``) from the
products of layers *above* it (the backward side: what the readout sees of an update).  Giving the two
sides their own widths, ``S(z; n, n_b)`` (forward at ``n``, backward moments at ``n_b``), is the same
law at ``n_b = n`` (a test checks it symbolically), and at ``n_b -> oo`` it is the *forward-only* law:
the forward at width ``n``, the backward at infinite width given the forward pass -- what
:mod:`amutheory.symbolic.chain.kernel_law_finite` computes by Monte Carlo (a test compares them).  So the
backward side's share of the finite-width excess is, exactly for the linear MLP,

    b(L; n, n_b) = s_bar(L; n, n_b) / s_bar(L; n, oo),

a ratio of two generated recurrences, evaluated at any real ``n_b`` (the law is rational in it).

**The equal-variance width.**  One backward step multiplies a squared norm by
``F = (c/n) sum_i D_i g_i^2`` (``g_i`` unit Gaussians, ``D_i`` the units' masks, on with probability
``p``, ``c p = 1`` at criticality): ``E F = 1`` and ``Var F = (3 - p) / (n p)``, derived in
:func:`backward_step_variance`: ``2/n`` for a linear layer, ``5/n`` for ReLU.  A ReLU layer of width ``n``
fluctuates as a linear one of width ``n_b = 2 p n / (3 - p) = 2n/5`` (:func:`equal_variance_width`).

**What is assumed** (not derived): that the ReLU net's left-out backward excess is the linear one's at
that width, ``b(L; n, 2n/5)``.  Measured first (run F of ``validate/plans/FINITE_WIDTH.md``, against the
linear backward excess at ``round(2n/5)``: consistent at 8 of 9 ReLU MLPs), then tested as planned
(run G).  The masks' correlations across samples, the ReLU forward-backward coupling and any term of
order ``(L/n)^2`` that the mapping does not carry are what it can miss.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.cache import compile_lambda, derivation
from amutheory.symbolic.chain import finite_width as fw

n_b = sp.Symbol("n_b", positive=True)
"""The backward side's width."""
p_on = sp.Symbol("p", positive=True)
"""The probability that a unit is on (its mask ``D = phi'``; 1 for a linear layer, 1/2 for ReLU)."""

#: the probability that a unit is on, by activation (linear: always; ReLU: half the time, by symmetry)
ON_PROBABILITY = {"linear": sp.Integer(1), "relu": sp.Rational(1, 2)}


mu_2, mu_4 = sp.symbols("mu_2 mu_4", positive=True)
"""``E[phi'(h)^2]`` and ``E[phi'(h)^4]`` at the layer's pre-activation variance: the moments of one unit's
backward weight ``D = phi'(h)^2``."""


@functools.lru_cache(maxsize=None)
def backward_step_variance_of_moments() -> sp.Expr:
    """``Var F / (E F)^2`` of ``F = (c/n) sum_i D_i g_i^2`` for any activation: ``D_i = phi'(h_i)^2`` i.i.d. with
    ``E D = mu_2``, ``E D^2 = mu_4``, independent of the unit Gaussians ``g_i`` (``E[g^2] = 1``, ``E[g^4] = 3``);
    the answer is ``(3 mu_4 / mu_2^2 - 1) / n``."""
    c = sp.Symbol("c", positive=True)
    mean = c / fw.n * fw.n * mu_2
    second = (c / fw.n) ** 2 * (fw.n * mu_4 * 3 + fw.n * (fw.n - 1) * mu_2**2)
    return sp.simplify(second / mean**2 - 1)


@functools.lru_cache(maxsize=None)
def backward_step_variance() -> sp.Expr:
    """``Var F / (E F)^2`` of one backward step's factor ``F = (c/n) sum_i D_i g_i^2`` (module docstring) with
    masks, ``D_i`` on with probability ``p`` (``E[D_i] = E[D_i^2] = p``): :func:`backward_step_variance_of_moments`
    at ``mu_2 = mu_4 = p``, ``(3 - p) / (n p)``."""
    return sp.simplify(backward_step_variance_of_moments().subs({mu_2: p_on, mu_4: p_on}))


def step_variance_factor(activation: str) -> tuple[float, str]:
    """``n Var F / (E F)^2`` of one backward step of ``activation`` at unit pre-activation variance (the critical
    ``c`` keeps it at every layer), and where the number comes from: exact for linear (2) and ReLU (5), by
    quadrature for GELU and tanh (``3 (1 + v_D) - 1``, ``v_D`` the activation's
    :meth:`~amutheory.activations.Activation.spectral_variance`)."""
    if activation in ON_PROBABILITY:
        return float(backward_step_variance().subs(p_on, ON_PROBABILITY[activation]) * fw.n), "exact"
    from amutheory.activations import get_activation

    act = get_activation(activation)  # ValueError naming the activation when it is not one
    m2, m4 = act.moment("dphi2", 1.0).value, act.moment("dphi4", 1.0).value
    return float((backward_step_variance_of_moments() * fw.n).subs({mu_2: m2, mu_4: m4})), "quadrature"


def equal_variance_width(width: float, activation: str) -> float:
    """The linear width whose backward step has the variance of one of ``activation`` at ``width``:
    ``n * 2 / (n Var)`` = ``2 p n / (3 - p)`` for a mask (``2n/5`` for ReLU, ``n`` for linear), and
    ``2n / (3 mu_4 / mu_2^2 - 1)`` for GELU and tanh at their critical ``c`` (:func:`step_variance_factor`)."""
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a string, got {type(activation).__name__}")
    linear, _ = step_variance_factor("linear")
    factor, _ = step_variance_factor(activation)
    return linear / factor * float(width)


# --------------------------------------------------------------------------- one masked layer's Wick transfer
q_on = sp.Symbol("q", positive=True)
"""The probability that a unit is on for both samples of a pair (``p`` for a sample with itself, ``p^2`` for two
samples whose pre-activations are independent; ReLU: ``(pi - theta) / (2 pi)`` at their angle ``theta``)."""


@functools.lru_cache(maxsize=None)
def masked_pair_transfer() -> sp.Matrix:
    """One masked layer's Wick transfer of a *pair* of samples' backward products.  For ``A = U_a U_b^T`` (the
    products of samples ``a`` and ``b``, each with its own masks) one more layer gives ``A' = D_a W A W^T D_b``;
    the invariants ``(alpha, beta, gamma) = (tau(A A^T), tau(A)^2, tau(A^2))`` (``tau = tr / n``) go through this
    ``3 x 3`` map, exactly in the mean over ``W`` with the masks independent of ``W`` and across units, each on
    with probability ``p`` and both on with probability ``q``.  Isserlis on the rows ``w_i`` of ``W`` (variance ``c/n``,
    ``c p = 1``): ``E (w_i^T A w_k)^2 = s^4 tr A A^T``, ``E (w_i^T A w_k)(w_k^T A w_i) = s^4 tr A^2`` (``i != k``) and
    ``E (w^T A w)^2 = s^4 (tr(A)^2 + tr A A^T + tr A^2)``; the masks weigh ``i != k`` by ``p^2`` (alpha) or ``q^2``
    (beta, gamma) and ``i = k`` by ``q``.  At infinite width ``alpha' = alpha + (q / p^2) beta``, ``beta`` decays by
    ``(q / p)^2`` (the mask kernel squared) and ``gamma' = (q / p)^2 gamma + (q / p^2) beta``; at ``q = p`` (one
    sample, ``alpha = gamma``) it is one sample's layer, :func:`masked_hidden_transfer`."""
    al, be, ga = sp.symbols("alpha beta gamma", positive=True)
    n, p, q = fw.n, p_on, q_on
    s4 = 1 / (n * p) ** 2
    same = n * q * s4 * (n**2 * be + n * al + n * ga)          # the i = k terms, with tr = n tau
    pairs = n * (n - 1) * s4
    new = sp.Matrix([(pairs * p**2 * n * al + same) / n,           # tau(A' A'^T)
                     (pairs * q**2 * n**2 * be + same) / n**2,     # tau(A')^2 (the i != k product of two traces)
                     (pairs * q**2 * n * ga + same) / n])          # tau(A'^2)
    return sp.simplify(new.jacobian([al, be, ga]))


@functools.lru_cache(maxsize=None)
def pair_excess_rate() -> sp.Expr:
    """``n`` times the ``1/n`` part of ``alpha' / alpha`` for a pair whose ``A`` has ``tau(A^2) = tau(A A^T)``
    (:func:`masked_pair_transfer`'s first row): ``2 q / p^2 - 1`` -- ``3`` for one ReLU sample (``q = p = 1/2``), ``1``
    for a linear layer (``p = q = 1``) and for two ReLU samples whose masks are independent (``q = p^2``)."""
    T = masked_pair_transfer()
    rate = sp.limit(fw.n * (T[0, 0] + T[0, 2] - sp.limit(T[0, 0] + T[0, 2], fw.n, sp.oo)), fw.n, sp.oo)
    return sp.simplify(rate)


@functools.lru_cache(maxsize=None)
def pair_coupling() -> sp.Expr:
    """A pair of samples' same-unit forward-backward coupling under a mask activation (``phi' in {0, 1}``,
    ``phi = h phi'``: linear, ReLU): ``E[phi_a phi_b D_a D_b] / (E[phi_a phi_b] E[D_a D_b]) - 1`` with ``D = phi'``.
    Since ``phi D = phi``, the numerator is ``E[phi_a phi_b]``, so the coupling is ``1/q - 1`` (``q = E[D_a D_b]``,
    the probability that the unit is on for both): ``1/p - 1`` for one sample (1 for ReLU:
    :meth:`~amutheory.activations.Activation.forward_backward_coupling`), larger for a pair whose masks agree less
    (ReLU: ``(pi + theta) / (pi - theta)`` at the samples' angle ``theta``, :func:`relu_pair_coupling`)."""
    return sp.simplify(1 / q_on - 1)


@functools.lru_cache(maxsize=None)
def relu_pair_coupling() -> sp.Expr:
    """:func:`pair_coupling` for ReLU at the pair's angle ``theta``, its ``q`` the wedge's probability
    (:func:`~amutheory.symbolic.chain.kernel_law.relu_pair_kernels`' mask): ``(pi + theta) / (pi - theta)``."""
    from amutheory.symbolic.chain.kernel_law import relu_pair_kernels

    return sp.simplify(pair_coupling().subs(q_on, relu_pair_kernels()["mask"]))


@functools.lru_cache(maxsize=None)
def masked_hidden_transfer() -> sp.Matrix:
    """One sample's masked layer, :func:`masked_pair_transfer` at ``q = p`` (``A = U U^T`` is symmetric, so
    ``gamma = alpha`` and the ``alpha`` and ``gamma`` columns add), in the coordinates of
    :func:`~amutheory.symbolic.chain.finite_width.hidden_transfer`, ``(tau(A^2), tau(A)^2)`` (``tau = tr / n``):
    ``[[1 - 1/n + 2/(n p), 1/p], [2/(n^2 p), 1 - 1/n + 1/(n p)]]``; at ``p = 1`` the linear one."""
    T = masked_pair_transfer().subs(q_on, p_on)
    return sp.simplify(sp.Matrix([[T[0, 0] + T[0, 2], T[0, 1]], [T[1, 0] + T[1, 2], T[1, 1]]]))


@functools.lru_cache(maxsize=None)
def masked_layer_transfer() -> sp.Matrix:
    """:func:`masked_hidden_transfer` on the traces themselves: ``(E tr A'^2, E (tr A')^2)`` from ``(tr A^2,
    (tr A)^2)`` for ``A' = D W A W^T D`` (``W`` an ``n x n`` Gaussian layer of variance ``c / n`` at the critical
    ``c p = 1``, ``D`` the masks, each unit on with probability ``p`` independently of the weights and of each
    other)."""
    scale = sp.diag(1 / fw.n, 1 / fw.n**2)
    return sp.simplify(scale.inv() * masked_hidden_transfer() * scale)


@functools.lru_cache(maxsize=None)
def masked_transfer_eigenvalues() -> list:
    """The eigenvalues of :func:`masked_hidden_transfer`: ``1 + (3 - p)/(n p)`` -- one plus the step variance of
    :func:`backward_step_variance`, the one fact the equal-variance width matches -- and ``1 - 1/n``, the linear
    layer's (the equal-variance width would make it ``1 - (3 - p)/(2 n p)``)."""
    return sorted((sp.simplify(e) for e in masked_hidden_transfer().eigenvals()), key=sp.default_sort_key)


def masked_product_excess(width: float, activation: str, steps) -> np.ndarray:
    """``u_p(n) / u_p(oo)`` for products of ``p`` masked layers (:func:`masked_hidden_transfer` on ``(1, 1)``;
    ``u_p = E tau((U U^T)^2)``) at ``steps``: the backward products' finite-width excess under masks independent of
    the weights, to set beside the linear layer's at the equal-variance width (:func:`linear_product_excess`)."""
    on = float(ON_PROBABILITY[activation]) if activation in ON_PROBABILITY else None
    if on is None:
        raise ValueError(f"activation: the masked transfer is derived for masks (linear, relu), got {activation!r}")
    return _excess(masked_hidden_transfer().subs(p_on, on), width, steps)


def linear_product_excess(width: float, steps) -> np.ndarray:
    """``u_p(n) / u_p(oo)`` for products of ``p`` linear layers of ``width`` (:func:`~amutheory.symbolic.chain.
    finite_width.hidden_transfer`; any real width, e.g. the equal-variance ``2n/5``)."""
    return _excess(fw.hidden_transfer(), width, steps)


def _excess(transfer: sp.Matrix, width: float, steps) -> np.ndarray:
    """``u_p(n) / u_p(oo)`` at ``steps`` for the transfer ``transfer(n)`` at ``width`` against its ``n -> oo`` limit."""
    T = np.asarray(transfer.subs(fw.n, float(width)), float)
    T_oo = np.asarray(transfer.applyfunc(lambda e: sp.limit(e, fw.n, sp.oo)), float)
    steps = np.asarray(steps, int)
    out, state, state_oo = [], np.ones(2), np.ones(2)
    for k in range(int(steps.max()) + 1):
        out.append(state[0] / state_oo[0])
        state, state_oo = T @ state, T_oo @ state_oo
    return np.asarray(out)[steps]


def _split(backward_infinite: bool, masked: bool = False) -> sp.Expr:
    """The exact law's generating function with its backward series at width ``n_b`` (or its limit), carried by
    the linear layer's transfer or, ``masked``, by one sample's masked one (:func:`masked_hidden_transfer`)."""
    T_b = (masked_hidden_transfer() if masked else fw.hidden_transfer()).subs(fw.n, n_b)
    uw = sp.simplify((sp.eye(2) - fw.z * T_b).inv() * sp.Matrix([1, 1]))
    if backward_infinite:
        uw = sp.Matrix([sp.limit(e, n_b, sp.oo) for e in uw])
    return fw.generating_function_with(uw)


@derivation
def split_generating_function() -> sp.Expr:
    """``S(z; n, n_b)``: :func:`~amutheory.symbolic.chain.finite_width.layer_generating_function` with the
    backward moments ``u_p``, ``w_p`` at width ``n_b`` and the forward ones at ``n``."""
    return _split(False)


@derivation
def forward_only_generating_function() -> sp.Expr:
    """``S(z; n, oo)``: the backward moments at infinite width (``u_p = p + 1``, ``w_p = 1``), the forward
    at ``n``."""
    return _split(True)


_ARGS = (fw.n, n_b, fw.C_0, fw.B, fw.m, fw.v, fw.v_r)


@derivation
def _recurrence_sources(masked: bool = False) -> dict:
    """Numerator and denominator coefficients in ``z`` of both generating functions (split and forward-only;
    ``masked``: their masked forms), as printed sources of functions of ``(n, n_b, C_0, B, m, v, v_r)`` (and ``p``
    when masked; the forward-only one ignores ``n_b``)."""
    pair = ((masked_split_generating_function(), masked_forward_only_generating_function()) if masked
            else (split_generating_function(), forward_only_generating_function()))
    out = {}
    for name, gf in zip(("split", "forward"), pair):
        for part, src in fw.recurrence_sources(gf, _ARGS + ((p_on,) if masked else ())).items():
            out[f"{name}-{part}"] = src
    return out


@functools.lru_cache(maxsize=None)
def _recurrences(masked: bool = False) -> dict:
    return {k: compile_lambda(v, "numpy") for k, v in _recurrence_sources(masked).items()}


def _series(which: str, args: tuple, count: int, masked: bool = False) -> np.ndarray:
    """``E[s_l]``, ``l = 1..count``: the Taylor coefficients of one generating function (its recurrence)."""
    fns = _recurrences(masked)
    return fw.rational_series(fns[f"{which}-num"](*args), fns[f"{which}-den"](*args), count)


def _check(spec: ArchSpec, depths, backward_width) -> np.ndarray:
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family not in ("mlp", "conv"):
        raise ValueError(f"family: the split law is derived for MLPs and linear circular conv chains, got {spec.family!r}")
    depths = np.asarray(depths, int)
    if depths.size == 0 or depths.min() < 1:
        raise ValueError(f"depths must be integers >= 1, got {depths.tolist()}")
    if isinstance(backward_width, bool) or not isinstance(backward_width, (int, float)) or not backward_width > 0:
        raise ValueError(f"backward_width must be a number > 0 (math.inf: the forward-only law), got {backward_width!r}")
    return depths


def split_s_bar(spec: ArchSpec, depths, backward_width: float, input_var: float = 1.0) -> np.ndarray:
    """The linear net's ``E[s_bar(L)]`` with the forward at the spec's width and the backward moments at
    ``backward_width`` (any real ``> 0``; ``math.inf``: the forward-only law).  An MLP (``c = 1``) through
    the split generating function; a linear circular conv chain through its modes
    (:func:`amutheory.symbolic.chain.finite_width_modes.finite_width_mode_table`, each mode's backward
    transfer at ``backward_width``)."""
    depths = _check(spec, depths, backward_width)
    if spec.family == "conv":
        from amutheory.symbolic.chain.finite_width_modes import check_finite_width_modes_spec, finite_width_mode_table

        check_finite_width_modes_spec(spec)
        s = finite_width_mode_table(spec, int(depths.max()), input_var, float(backward_width)).sum(axis=0)
    else:
        fw.check_finite_width_spec(spec)
        n, C0, B, m, v, vr = fw._arguments(spec, input_var)
        infinite = np.isinf(backward_width)
        args = (n, 1.0 if infinite else float(backward_width), C0, B, m, v, vr)
        s = _series("forward" if infinite else "split", args, int(depths.max()))
    return np.cumsum(s)[depths - 1] / depths


def backward_factor(spec: ArchSpec, depths, backward_width: float, input_var: float = 1.0) -> np.ndarray:
    """``b(L; n, n_b)``: the linear net's ``s_bar`` with the backward moments at ``backward_width`` over
    its forward-only ``s_bar`` (module docstring); 1 as ``backward_width -> oo``."""
    return split_s_bar(spec, depths, backward_width, input_var) / split_s_bar(spec, depths, math.inf, input_var)


# --------------------------------------------------------------------------- the split law under one sample's masks
@derivation
def masked_split_generating_function() -> sp.Expr:
    """``S(z; n, n_b, p)``: the linear MLP's forward moments at ``n`` and backward moments ``u_p, w_p`` of products
    of masked layers at ``n_b`` (each unit on with probability ``p``, independently of the weights); at ``p = 1`` it
    is :func:`split_generating_function` (a test checks it symbolically)."""
    return _split(False, masked=True)


@derivation
def masked_forward_only_generating_function() -> sp.Expr:
    """:func:`masked_split_generating_function` with the masked backward moments at infinite width."""
    return _split(True, masked=True)


def masked_backward_factor(spec: ArchSpec, depths, on_probability: float, backward_width: float | None = None,
                           input_var: float = 1.0) -> np.ndarray:
    """One sample's independent-mask model of the backward excess: the split law of the linear MLP ``spec`` with
    its backward moments those of products of masked layers (:func:`masked_hidden_transfer`, each unit on with
    probability ``on_probability``, 1/2 for ReLU) at ``backward_width`` (default: the spec's width), over the same
    with the masked moments at infinite width.  At ``on_probability = 1`` it is :func:`backward_factor`.  What it
    leaves out: the masks' correlations across samples (none with one sample) and the coupling of a unit's
    forward and backward weights (its masks are independent of the weights)."""
    depths = _check(spec, depths, spec.width if backward_width is None else backward_width)
    fw.check_finite_width_spec(spec)            # the linear MLP's law: a ValueError naming the family otherwise
    if isinstance(on_probability, bool) or not isinstance(on_probability, (int, float)) \
            or not 0.0 < on_probability <= 1.0:
        raise ValueError(f"on_probability must be a number in (0, 1], got {on_probability!r}")
    n, C0, B, m, v, vr = fw._arguments(spec, input_var)
    args = (n, n if backward_width is None else float(backward_width), C0, B, m, v, vr, float(on_probability))
    split, forward = (np.cumsum(_series(which, args, int(depths.max()), masked=True)) for which in ("split", "forward"))
    return split[depths - 1] / forward[depths - 1]


# --------------------------------------------------------------------------- one sample: the coupling made explicit
def one_sample_split(h: list, delta: list, x_prev: list) -> dict:
    """The exact one-sample structure of a bias-free ReLU MLP's backward pass, from one input's pre-activations
    ``h[i] = h_(i+1)`` (``W_(i+1) x_i``), backward vectors ``delta[i] = d(r . f) / d h_(i+1)`` and layer inputs
    ``x_prev[i] = x_i`` (``x_0`` the input), ``i = 0..L-1``.

    Condition layer ``i``'s weights on its forward input: ``W_i = h_i x_(i-1)^T / |x_(i-1)|^2 + W~_i P``, ``P`` the
    projector off ``x_(i-1)``, ``W~_i`` a fresh Gaussian independent of everything that ``h_i`` (and so every
    layer above) depends on.  Then ``delta_(i-1) = D_(i-1) W_i^T delta_i`` splits into

    * the **coupling** part ``x^_(i-1) (h_i . delta_i) / |x_(i-1)|`` (the masks keep ``x_(i-1)``'s direction), of
      squared norm ``(h_i . delta_i)^2 / |x_(i-1)|^2``, fixed by the forward pass; and
    * the **fresh** part ``D_(i-1) P W~_i^T delta_i``: a Gaussian on the ``K_(i-1) - 1`` active directions off
      ``x_(i-1)``, squared norm ``(c/n) |delta_i|^2 chi^2_(K_(i-1) - 1)``, ``K`` the active units;

    and ``h_i . delta_i`` is the same at every layer, ``r . f`` (Euler's identity for a positively homogeneous
    net).  The infinite-width laws give every backward step ``n`` fresh directions with the mean's weight; at width
    ``n`` one of them is the coupling part, set by the forward norms -- the forward-backward coupling that the
    finite-width laws leave out (diagnostic Z of ``docs/findings/finite_width.md``).  Returns per step ``i = 1..L-1``:
    ``euler`` (``h_i . delta_i``, every ``i = 1..L``), ``coupling``, ``fresh`` (``|delta_(i-1)|^2`` less the coupling),
    ``active`` (``K_(i-1)``) and ``top`` (``|delta_i|^2``)."""
    if not (isinstance(h, (list, tuple)) and isinstance(delta, (list, tuple)) and isinstance(x_prev, (list, tuple))):
        raise TypeError("h, delta and x_prev must be lists of per-layer vectors")
    if not len(h) == len(delta) == len(x_prev) or len(h) < 2:
        raise ValueError(f"h, delta and x_prev must hold one vector per layer (>= 2 layers), got "
                         f"{len(h)}, {len(delta)}, {len(x_prev)}")
    h, delta, x_prev = ([np.asarray(v, float).ravel() for v in vs] for vs in (h, delta, x_prev))
    euler = np.array([hi @ di for hi, di in zip(h, delta)])
    norms = np.array([x_prev[i] @ x_prev[i] for i in range(1, len(h))])   # 0 where every unit below is off: h_i = 0
    coupling = np.divide(euler[1:] ** 2, norms, out=np.zeros_like(norms), where=norms > 0)
    below = np.array([delta[i - 1] @ delta[i - 1] for i in range(1, len(h))])
    return {"euler": euler, "coupling": coupling, "fresh": below - coupling,
            "active": np.array([int(np.sum(x_prev[i] > 0)) for i in range(1, len(h))]),
            "top": np.array([delta[i] @ delta[i] for i in range(1, len(h))])}
