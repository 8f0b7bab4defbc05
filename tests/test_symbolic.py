"""Exact symbolic identities (no tolerance) and predictor-vs-evalf checks of the derived law."""

import functools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import derive
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import expansion
from amutheory.symbolic.primitives.law import ScalingLaw
from amutheory.symbolic.primitives.symbols import L, a, b, e, epsilon, j, jp, l, lambda_

positive = st.floats(min_value=1e-3, max_value=10.0, allow_nan=False)
small = st.floats(min_value=1e-3, max_value=0.5, allow_nan=False)  # e = epsilon = 0 gives s_1 = 0


def test_core_reduces_to_theory_form_without_input_layer():
    """epsilon = 0: s_l = a (l-1)^2 + b T_{l-1}, T_k = k(k-1)(2k-1)/6 (docs/theory.md section 4, shifted)."""
    core = expansion.layer_moment_core().subs(epsilon, 0)
    k = l - 1
    assert sp.expand(core - (a * k**2 + b * k * (k - 1) * (2 * k - 1) / 6)) == 0


@pytest.mark.parametrize("layer", [1, 2, 3, 5, 8])
def test_core_equals_symbolic_double_sum(layer):
    """The closed form equals the double sum of the pair kernel, symbol by symbol."""
    total = sum(expansion.pair_kernel(layer, jj, kk) for jj in range(1, layer + 1) for kk in range(1, layer + 1))
    assert sp.expand(sp.piecewise_fold(total) - expansion.layer_moment_core().subs(l, layer)) == 0


@pytest.mark.parametrize("finite_width", [False, True])
def test_exponent_is_exact_minus_three_halves(finite_width):
    """-3/2 exactly at infinite width.  The finite-width law carries ``lambda^l``: its exponent is
    -3/2 in the ``n -> oo`` limit ``lambda = 1`` only; at fixed width (``lambda = 1.01``) the decay
    of eta* between L = 1000 and 2000 is far steeper (exponential, not a power law)."""
    law = derive(ArchSpec(), finite_width=finite_width)
    assert (lambda_ in law.constants) == finite_width
    if finite_width:
        s_bar = law.predictor("s_bar")
        values = {"a": 1.0, "b": 2.0, "e": 0.1, "epsilon": 0.1}
        for lam, slope_range in ((1.0, (-1.51, -1.49)), (1.01, (-np.inf, -5.0))):
            s = s_bar(np.array([1000.0, 2000.0]), **values, **{"lambda": lam})
            slope = -0.5 * math.log(s[1] / s[0]) / math.log(2)
            assert slope_range[0] < slope < slope_range[1], (lam, slope)
        law = law.substitute({"lambda": 1})
    assert law.exponent == sp.Rational(-3, 2)
    assert isinstance(law.exponent, sp.Rational)


def test_infinite_width_mean_is_cubic_with_b_over_12():
    s = expansion.mean_moment(False)
    assert sp.Poly(s, L).degree() == 3
    assert sp.Poly(s, L).LC() == b / 12


def test_corrections_match_local_slope_first_order():
    """d ln eta*/d ln L = -3/2 - c_1/L + O(L^-2) follows from eta* = eta_0 L^-3/2 (1 + c_1/L)."""
    law = derive()
    c1 = law.corrections(1)[0]
    slope = law.local_slope_series(1)
    assert slope[0] == sp.Rational(-3, 2)
    assert sp.simplify(slope[1] + c1) == 0


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 60), av=positive, bv=positive, ev=small, epsv=small)
def test_mean_moment_equals_brute_force(depth, av, bv, ev, epsv):
    vals = dict(a=av, b=bv, e=ev, epsilon=epsv)
    closed = float(expansion.mean_moment(False).subs({L: depth, a: av, b: bv, e: ev, epsilon: epsv}))
    assert closed == pytest.approx(expansion.brute_force_mean_moment(depth, vals), rel=1e-12)


@functools.lru_cache(maxsize=None)
def _finite_width_s_bar():
    """The lambda^L closed form's 50-digit predictor, made once (lambdifying it is the slow part)."""
    return ScalingLaw(expansion.mean_moment(True), (a, b, e, epsilon, lambda_), high_precision=True).predictor("s_bar")


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 48), av=positive, bv=positive, ev=small, epsv=small,
       gamma_over_n=st.floats(min_value=1e-6, max_value=0.2))
def test_finite_width_mean_equals_brute_force(depth, av, bv, ev, epsv, gamma_over_n):
    """The lambda^L closed form (evaluated at 50 digits) equals the term-by-term sum."""
    vals = dict(a=av, b=bv, e=ev, epsilon=epsv, **{"lambda": 1 + gamma_over_n})
    got = _finite_width_s_bar()([depth], **vals)[0]
    assert got == pytest.approx(expansion.brute_force_mean_moment(depth, vals, True), rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 200), av=positive, bv=positive, ev=small, epsv=small,
       C=st.floats(min_value=1e-3, max_value=1e3))
def test_predictors_equal_evalf(depth, av, bv, ev, epsv, C):
    law = derive()
    subs = {L: depth, a: av, b: bv, e: ev, epsilon: epsv, sp.Symbol("C", positive=True): C}
    for q, expr in (("eta_star", law.eta_star), ("s_bar", law.s_bar), ("local_slope", law.local_slope)):
        got = law.predictor(q)([depth], a=av, b=bv, e=ev, epsilon=epsv, C=C)[0]
        want = float(expr.subs(subs).evalf(30))
        assert got == pytest.approx(want, rel=1e-10), q


@settings(max_examples=30, deadline=None)
@given(av=positive, bv=positive, ev=small, epsv=small, depth=st.integers(1, 400))
def test_eta_star_decreases_with_depth(av, bv, ev, epsv, depth):
    p = derive().predictor()
    eta = p([depth, depth + 1], a=av, b=bv, e=ev, epsilon=epsv, C=1.0)
    assert eta[1] < eta[0]


@settings(max_examples=25, deadline=None)
@given(width=st.integers(1, 4096), kernel=st.sampled_from([1, 3, 5, 7]), spatial=st.integers(7, 64),
       dim=st.sampled_from([1, 2]), act=st.sampled_from(["linear", "relu"]))
def test_leading_exponent_independent_of_n_k_N(width, kernel, spatial, dim, act):
    from amutheory.symbolic.chain.conv import derived_constants

    spec = ArchSpec(dim=dim, width=width, kernel=kernel, spatial=spatial, activation=act)
    law = derive(spec).substitute({"epsilon": derived_constants(spec)["epsilon"].value})
    assert law.exponent == sp.Rational(-3, 2)


def test_mlp_limit_ratio_is_derived_exactly():
    """v = 1 + v_D: 1 for linear, 2 for ReLU (free probability), from exact Gaussian integrals."""
    from amutheory.symbolic.chain.conv import derived_constants

    assert derived_constants(ArchSpec(activation="linear"))["v_mlp"].value == 1.0
    assert derived_constants(ArchSpec(activation="relu"))["v_mlp"].value == 2.0
    assert derived_constants(ArchSpec(activation="relu"))["v_mlp"].source == "exact"


@pytest.mark.parametrize("activation, closed", [
    ("linear", {"epsilon": "c_in/(c*n)", "chi": "c", "v_mlp": "1", "kappa_fwd": "2"}),
    ("relu", {"epsilon": "2*c_in/(c*n)", "chi": "c/2", "v_mlp": "2", "kappa_fwd": "5"}),
])
def test_derived_constants_come_from_their_expressions(activation, closed):
    """Each derived constant's ``expr`` is the ``sstr`` of its SymPy expression, its value that
    expression at the spec and the activation's moments; with the exact Gaussian moments put in,
    the expressions are the closed forms typed here."""
    from amutheory.activations import _q, get_activation
    from amutheory.symbolic.chain import conv

    act, exprs = get_activation(activation), conv.derived_expressions()
    q1 = conv.c_he * conv.input_var_sym
    moments = {sym: act.exact_moment(kind).subs(_q, q1) for sym, kind in
               ((conv.E_phi2, "phi2"), (conv.E_phi4, "phi4"), (conv.E_dphi2, "dphi2"), (conv.E_dphi4, "dphi4"))}
    for name, want in closed.items():
        assert sp.simplify(exprs[name].subs(moments) - sp.sympify(want, locals=dict(
            c_in=conv.c_in, c=conv.c_he, n=conv.n))) == 0, name
    spec = ArchSpec(activation=activation, width=48, input_channels=5, init_c=1.7)
    got = conv.derived_constants(spec, input_var=0.6)
    point = {conv.c_in: 5, conv.input_var_sym: 0.6, conv.n: 48, conv.c_he: 1.7}
    for name, expr in exprs.items():
        assert got[name].expr == sp.sstr(expr)
        assert got[name].value == pytest.approx(float(expr.subs(moments).subs(point)), rel=1e-12), name


def test_activations_docstring_quotes_the_computed_critical_constants():
    """The critical constants quoted in :mod:`amutheory.activations`' docstring are the computed
    ones (quadrature for GELU and tanh), to the digits quoted."""
    import amutheory.activations as A

    doc = " ".join(A.__doc__.split())
    for name in ("gelu", "tanh"):
        assert f"~{A.get_activation(name).critical_c():.3f} ({name.upper() if name == 'gelu' else name})" in doc


def test_correction_order_is_validated():
    with pytest.raises(ValueError, match="order"):
        derive().corrections(0)


@settings(max_examples=15, deadline=None)
@given(depth=st.integers(2, 40), av=positive, bv=positive, ev=small, epsv=small)
def test_finite_width_first_order_matches_brute_force_derivative(depth, av, bv, ev, epsv):
    """R(L) = d/d lambda of s_bar_fw / s_bar at lambda = 1, against a central difference of the
    term-by-term sum (h = 1e-6: truncation error ~ h^2 R'' << 1e-6 relative)."""
    vals = dict(a=av, b=bv, e=ev, epsilon=epsv)
    R = float(expansion.finite_width_relative_correction().subs({L: depth, a: av, b: bv, e: ev, epsilon: epsv}))
    h = 1e-6
    up = expansion.brute_force_mean_moment(depth, {**vals, "lambda": 1 + h}, True)
    down = expansion.brute_force_mean_moment(depth, {**vals, "lambda": 1 - h}, True)
    base = expansion.brute_force_mean_moment(depth, vals)
    assert R == pytest.approx((up - down) / (2 * h * base), rel=1e-6)


def test_finite_width_leading_term_is_four_fifths_L():
    R = expansion.finite_width_relative_correction()
    assert sp.limit(R / L, L, sp.oo) == sp.Rational(4, 5)


def test_lognormal_slope_shift_is_minus_kappa_L_over_4():
    """``-p kappa L^p / 4``: ``-kappa L / 4`` for chains (p = 1), ``+kappa / (4 L)`` for
    forward-stable residual nets (p = -1, the spread settles)."""
    from amutheory.symbolic.primitives.symbols import kappa, p

    shift = expansion.lognormal_slope_shift()
    assert sp.simplify(shift + p * kappa * L**p / 4) == 0
    assert sp.expand(shift.subs(p, 1) + kappa * L / 4) == 0
    assert sp.expand(shift.subs(p, -1) - kappa / (4 * L)) == 0


def test_the_forward_backward_coupling_is_exact_for_masks_and_matches_a_monte_carlo():
    """``rho = E[phi^2 phi'^2] / (E phi^2 E phi'^2) - 1``: 0 (linear) and 1 (ReLU) exactly at any variance; GELU and
    tanh by quadrature against 10^6 Gaussian draws (the ratio's Monte Carlo sd is below 0.01 for both)."""
    from amutheory.activations import get_activation

    assert get_activation("linear").forward_backward_coupling(0.7).value == 0.0
    relu = get_activation("relu").forward_backward_coupling(2.3)
    assert relu.value == 1.0 and relu.source == "exact"
    z = np.random.default_rng(1).standard_normal(10**6)
    for name, sign in (("gelu", 1), ("tanh", -1)):
        act = get_activation(name)
        got = act.forward_backward_coupling(1.0)
        f, b = act.phi(z) ** 2, act.dphi(z) ** 2
        assert got.source == "quadrature" and np.sign(got.value) == sign
        assert got.value == pytest.approx((f * b).mean() / (f.mean() * b.mean()) - 1, abs=0.03)
