"""One block of the exact dense residual law: its SymPy recursion and the checks and constants the
law's two forms share.

:mod:`amutheory.symbolic.resnet.dense` (the free law, every block's operators free of what came
before) and :mod:`amutheory.symbolic.resnet.preact` (the coordinate law of ``preact`` nets with
ReLU, whose stream masks persist) are both built on the pieces here: the symbols of one block and
:func:`block_recursion` (derived in :mod:`~amutheory.symbolic.resnet.dense`'s docstring), the net
check :func:`check_residual_spec`, the branch constants and the stem's moment.  They live in this
module so that ``dense`` may hand ``preact`` nets to ``preact`` and ``preact`` may read the block
recursion without the two importing each other.
"""

from __future__ import annotations

import functools

import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives.spread import dense_spread_expressions, fan_in_f
from amutheory.symbolic.resnet.init import K, branch_multiplier, layer_variance_factors

# symbols of one block: stream and trace moments before it, weights, activation moments
q, m1, m2 = sp.symbols("q m1 m2", nonnegative=True)
alpha, v1, v2, c = sp.symbols("alpha v1 v2 c", positive=True)
#: moments at the branch pre-activation h: E phi'(h)^2, E phi'(h)^4, E phi(h)^2; and at the stream
#: x (preact): E phi'(x)^2, E phi'(x)^4, E phi(x)^2
D2h, D4h, Mh, D2x, D4x, Mx = sp.symbols("D2_h D4_h M_h D2_x D4_x M_x", positive=True)
#: the stem's input channels, kernel and spatial dimension: its fan-in is ``f = c_in k^d``
c_in, k_stem, d_stem = sp.symbols("c_in k d", positive=True, integer=True)

#: homogeneous activations with exact Gaussian moments (``E phi'^2, E phi'^4`` constant, ``E phi^2``
#: linear in the variance): the law's expectation over the stem's draw is exact for them
ACTIVATIONS = ("linear", "relu")


def fourth_moment_ratio(r_factors) -> sp.Expr:
    """``tau((J J^T)^2) / tau(J J^T)^2`` of ``J`` = a product of free factors with ratios
    ``r_f = tau(F^2) / tau(F)^2`` (``F`` the factor's ``A A^T`` or squared mask):
    ``1 + sum_f (r_f - 1)`` (the free-product rule, exact for two factors and by induction)."""
    return sp.simplify(1 + sum(r - 1 for r in r_factors))


@functools.lru_cache(maxsize=None)
def block_recursion(branch: str) -> dict:
    """The per-block SymPy expressions of one ``branch``: ``eps2``, ``rho4``, ``lam``, ``src``,
    ``src_var``, ``src_cov``, ``m1_next``, ``m2_next``, the first layer's coherent pieces ``own``
    (``|delta|^2 / (n G_i)``), ``base`` and ``mean_read``, and ``s_first`` (the first branch layer's
    ``s`` in units of ``G_i``), split as ``s_first = s_read + s_own``: the stream's update read
    through ``W_1`` and the layer's own update (with its read-back of the stream).  The stream's
    own ``s`` (``preact``) is ``G_{i-1} m2``; the stream's ``q`` path is the mean-field recursion of :mod:`amutheory.symbolic.resnet.coherent` (it carries the ReLU branch mean)."""
    if branch not in ("conv", "conv-mlp", "preact"):
        raise ValueError(f"branch must be conv, conv-mlp or preact; got {branch!r}")
    s1, s2 = c * v1, c * v2
    r_gauss, r_h, r_x = 2, D4h / D2h**2, D4x / D2x**2
    if branch == "conv":  # x + alpha phi(W x)
        eps2 = alpha**2 * s1 * D2h
        rho4 = fourth_moment_ratio([r_gauss, r_h])
        src = alpha**2 * q * D2h  # alpha D (Delta W) x = alpha^2 |x|^2 D^2 g
        src_var = (alpha**2 * q) ** 2 * (D4h - D2h**2)  # the mask's spread, a new direction per block
        # Src = alpha^2 q D^2 and J J^T = alpha^2 D W W^T D share the mask: tau(Src J J^T) = alpha^4 q s1 D4,
        # eps^2 src = alpha^4 q s1 D2^2
        src_cov = alpha**4 * q * s1 * (D4h - D2h**2)
        own, base, mean_read, var_read = alpha**2 * D2h, q, s1 * m1, s1**2 * m2
        s_read = s1 * m2
    else:
        x_mask = D2x if branch == "preact" else 1
        base = Mx if branch == "preact" else q  # |input of W_1|^2 / n
        eps2 = alpha**2 * s2 * D2h * s1 * x_mask
        factors = [r_gauss, r_h, r_gauss] + ([r_x] if branch == "preact" else [])
        rho4 = fourth_moment_ratio(factors)
        w1_src = alpha**2 * base * s2 * D2h  # W_1's update through W_2 D^2 W_2^T
        src = alpha**2 * Mh + w1_src  # + W_2's update, alpha^2 |phi(h)|^2 g
        src_var = w1_src**2 * D4h / D2h**2  # W_2 D^2 W_2^T's spread (free Poisson)
        # W_1's source alpha^2 base W_2 D^2 W_2^T and J J^T ~ alpha^2 s1 x_mask W_2 D^2 W_2^T share W_2 and
        # the mask: tau(Src J J^T) - eps^2 src = alpha^4 base s1 x_mask s2^2 D4 (free Poisson second moment)
        src_cov = alpha**4 * base * s1 * x_mask * s2**2 * D4h
        own = alpha**2 * s2 * D2h
        if branch == "preact":
            mean_read = s1 * D2x * m1
            var_read = s1**2 * (D4x * m1**2 + D2x**2 * (m2 - m1**2))
            s_read = s1 * D2x * m2
        else:
            mean_read, var_read, s_read = s1 * m1, s1**2 * m2, s1 * m2
    lam = 2 * eps2 + (rho4 - 1) * eps2**2
    s_own = own * ((base + mean_read) ** 2 + var_read)
    return {"eps2": eps2, "rho4": rho4, "lam": lam, "src": src, "src_var": src_var, "src_cov": src_cov,
            "m1_next": (1 + eps2) * m1 + src,
            "m2_next": ((1 + eps2) ** 2 * m2 + lam * m1**2 + 2 * (src * (1 + eps2) + src_cov) * m1
                        + src**2 + src_var),
            "s_first": s_read + s_own, "s_read": s_read, "s_own": s_own,
            "own": own, "base": base, "mean_read": mean_read}


def check_residual_spec(spec: ArchSpec, law: str = "the exact residual law") -> None:
    """What every exact residual law needs: an ``ArchSpec`` (``TypeError``) of the ``resnet`` family
    with identity shortcuts and a forward-stable init (``ValueError`` naming the field)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "resnet":
        raise ValueError(f"spec.family must be 'resnet', got {spec.family!r}")
    if spec.shortcut != "identity":
        raise ValueError(f"shortcut: {law} has identity shortcuts only; got {spec.shortcut!r}")
    if spec.init == "none":
        raise ValueError("init: 'none' is not forward-stable (every block adds O(1) variance); no law")


def _check(spec: ArchSpec):
    check_residual_spec(spec)
    spatial = "spatial nets: the stream's position correlations grow along depth"
    why = {"kernel": spatial, "spatial": spatial,
           "batch": "the samples' streams are correlated at order one through the few input features"}
    for name in ("kernel", "spatial", "batch"):
        if getattr(spec, name) != 1:
            raise ValueError(f"{name}: the exact residual law is for the dense single-sample net (kernel = "
                             f"spatial = batch = 1); got {name}={getattr(spec, name)} ({why[name]}; not derived)")
    if spec.activation not in ACTIVATIONS:
        raise ValueError(f"activation: the exact residual law needs a homogeneous activation "
                         f"({', '.join(ACTIVATIONS)}); got {spec.activation!r}")


def branch_constants(spec: ArchSpec) -> tuple[float, float, float]:
    """``(alpha, v_1, v_2)`` of ``spec``'s init at its depth: the branch multiplier and the first and
    last branch layers' variance factors (``v_2 = v_1`` for ``conv``, whose expressions hold no ``v_2``)."""
    vs = [float(v.subs(K, spec.depth)) for v in layer_variance_factors(spec.init, spec.branch)]
    return float(branch_multiplier(spec.init).subs(K, spec.depth)), vs[0], vs[-1]


def stem_fan_in(spec: ArchSpec) -> int:
    """``f = c_in k^d``, the stem's fan-in."""
    return spec.input_channels * spec.kernel**spec.dim


@functools.lru_cache(maxsize=None)
def stem_moment_expression() -> sp.Expr:
    """``E[q_0^2] / input_var^2`` in the symbols ``c_in, k, d`` (:data:`c_in`, :data:`k_stem`,
    :data:`d_stem`): the stem's per-coordinate variance is ``input_var chi^2_f / f`` at infinite width
    (``f = c_in k^d``, the stem's fan-in; the law's only average over the draw), so this is the
    chi-square Mellin moment ``E[(chi^2_f / f)^2]`` that SymPy integrates in
    :func:`amutheory.symbolic.primitives.spread.dense_spread_expressions`, at ``f = c_in k^d``:
    ``1 + 2/(c_in k^d)``."""
    moment = dense_spread_expressions()["stem_second_moment"]
    return sp.simplify(moment.subs(fan_in_f, c_in * k_stem**d_stem))


@functools.lru_cache(maxsize=None)
def _stem_moment_fn():
    return sp.lambdify((c_in, k_stem, d_stem), stem_moment_expression(), "math")


def stem_moment(spec: ArchSpec) -> float:
    """:func:`stem_moment_expression` at ``spec``'s input channels, kernel and dimension."""
    return float(_stem_moment_fn()(spec.input_channels, spec.kernel, spec.dim))


#: the parts of :func:`layer_moments`: everything, the stream's update as read (the ``preact``
#: stream itself and ``s_read``), the first layers' own updates (``s_own``)
PARTS = ("all", "stream", "own")
