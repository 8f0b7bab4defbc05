"""Zero-padding boundary model (amutheory.symbolic.chain.boundary): exact identities, asymptotics vs
exact finite-N numerics, and properties of the predicted zero/circular ratio.

Kinds of evidence: exact symbolic identities (no tolerance); float identities that hold up to
rounding (1e-12); asymptotic statements checked against exact eigenvalues / operator powers with
bounds derived in ``derivations/03_zero_padding_boundary.py`` (each stated where used).
"""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from amutheory.symbolic.chain import boundary

from amutheory.symbolic.primitives import expansion
from amutheory.symbolic.chain.boundary import N_sym, k_sym, l_sym

kernels = st.sampled_from([3, 5, 7])
a_b = st.floats(min_value=0.1, max_value=10.0, allow_nan=False)
# exactly 0 or >= 1e-6: a subnormal eps squares to 0.0 in floating point, so s_bar(1) would be
# 0/0 although eps > 0 (Hypothesis found eps = 2.2e-311)
e_values = st.one_of(st.just(0.0), st.floats(min_value=1e-6, max_value=5.0, allow_nan=False))
eps_values = st.one_of(st.just(0.0), st.floats(min_value=1e-6, max_value=1.0, allow_nan=False))

lam2 = sp.lambdify((k_sym, N_sym), boundary.top_eigenvalue_asymptotic(2), "numpy")
lam4 = sp.lambdify((k_sym, N_sym), boundary.top_eigenvalue_asymptotic(4), "numpy")
early = sp.lambdify((l_sym, k_sym, N_sym), boundary.early_deficit_asymptotic(), "numpy")


def first_defined_depth(e, eps):
    """With e = eps = 0, s_1 = 0 for both paddings and the L = 1 ratio is 0/0 (boundary_ratio raises there)."""
    return 1 if (e > 0 or eps > 0) else 2


# --------------------------------------------------------------------------- exact symbolic
def test_step_variance_and_series_are_the_step_moments():
    """sigma(theta) = 1 - mu_2 theta^2/2 + mu_4 theta^4/24, mu_j = (1/k) sum_s s^j (exact)."""
    s, r = boundary.s_sym, (k_sym - 1) / 2
    mu2 = sp.summation(s**2, (s, -r, r)) / k_sym
    mu4 = sp.summation(s**4, (s, -r, r)) / k_sym
    assert sp.expand(boundary.step_variance() - (k_sym**2 - 1) / 12) == 0
    assert sp.expand(boundary.symbol_series(4) - (1 - mu2 * boundary.theta**2 / 2 + mu4 * boundary.theta**4 / 24)) == 0
    assert sp.expand(boundary.top_eigenvalue_asymptotic(2) - (1 - sp.pi**2 * (k_sym**2 - 1) / (24 * N_sym**2))) == 0
    assert sp.expand(boundary.regime_exponent() - l_sym * sp.pi**2 * (k_sym**2 - 1) / (24 * N_sym**2)) == 0


# --------------------------------------------------------------------------- ratio -> 1 with N
@settings(max_examples=10, deadline=None)
@given(depth=st.integers(1, 24), kernel=kernels, a=a_b, b=a_b, e=e_values, eps=eps_values)
def test_ratio_tends_to_one_as_spatial_grows(depth, kernel, a, b, e, eps):
    assume(depth >= first_defined_depth(e, eps))
    r_half, r_full = boundary.boundary_ratio(a, b, e, eps, 2048, kernel, [depth])[0], \
        boundary.boundary_ratio(a, b, e, eps, 4096, kernel, [depth])[0]
    # derived bound: 1 - q^2 G <= 2(1-q) + (1-G) pointwise gives ratio >= 1 - 4 d(L), and the
    # deficit d stays below the diffusion form (test below): 1 - ratio <= 4 x early asymptotic
    assert 0.0 <= 1 - r_full <= 4 * early(depth, kernel, 4096)
    # while L k^2 << N^2 the boundary layers do not interact: 1 - ratio ~ 1/N (measured factor ~2)
    assert 1 - r_full < 1 - r_half


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 40), kernel=kernels, extra=st.integers(0, 60), a=a_b, b=a_b, e=e_values,
       eps=eps_values)
def test_ratio_at_most_one_and_non_increasing_in_depth(depth, kernel, extra, a, b, e, eps):
    spatial = kernel + extra
    start = first_defined_depth(e, eps)
    depths = list(range(start, start + depth))
    ratios = boundary.boundary_ratio(a, b, e, eps, spatial, kernel, depths)
    # 1e-12: rounding of sums of O(L^3) terms; beta, omega <= 1 make ratio <= 1 exactly in reals
    assert np.all(ratios <= 1 + 1e-12)
    assert np.all(np.diff(ratios) <= 1e-12)
    # the exact lower bound 1 - 4 d(L) (d = mean_deficit, no asymptotics involved)
    deficit = boundary.mean_deficit(spatial, kernel, depths[-1])[depths]
    assert np.all(1 - ratios <= 4 * deficit + 1e-12)


@settings(max_examples=30, deadline=None)
@given(kernel=st.sampled_from([3, 5, 7, 9]), extra=st.integers(0, 150), steps=st.integers(1, 300))
def test_deficit_stays_below_diffusion_asymptotics(kernel, extra, steps):
    """The discrete walk dies delta_k/2 > 0 positions per wall later than the diffusion: the
    exact deficit is below (2/N) sqrt(2 mu_2 l / pi) at every l (measured max ratio 0.97)."""
    spatial = kernel + extra
    deficit = boundary.mean_deficit(spatial, kernel, steps)[1:]
    assert np.all(deficit < early(np.arange(1, steps + 1), kernel, spatial))


# --------------------------------------------------------------------------- top eigenvalue
# C(k) = pi^2 k (k^2 - 1)/12.  Why: lambda_max = sigma(pi/(N + delta_k)) with an effective box
# N + delta_k, so N^3 |exact - order 2| -> pi^2 (k^2 - 1) delta_k / 12, approached from below.
# Measured (N <= 512): delta_k = 1, 1.553, 2.131 and sup N^3|diff| = 6.57, 30.6, 83.8 for
# k = 3, 5, 7; taking delta_k <= k gives the bound 19.7, 98.7, 276 (margin ~3).  A wrong N^-2
# coefficient would make N^3 |diff| grow like N (see also the convergence test below).
def eigen_constant(kernel):
    return math.pi**2 * kernel * (kernel**2 - 1) / 12


@settings(max_examples=30, deadline=None)
@given(kernel=kernels, extra=st.integers(0, 150))
def test_top_eigenvalue_asymptotics_error_is_order_N_cubed(kernel, extra):
    spatial = kernel + extra
    exact = boundary.top_eigenvalue(spatial, kernel)
    err2 = abs(exact - lam2(kernel, spatial))
    err4 = abs(exact - lam4(kernel, spatial))
    assert err2 * spatial**3 <= eigen_constant(kernel)
    assert err4 <= err2  # the N^-4 term has the sign of the O(N^-3) error: no worse (N >= k checked)


@pytest.mark.parametrize("kernel", [3, 5, 7])
def test_scaled_eigenvalue_error_converges(kernel):
    """N^3 |diff| at N = 64 and 128 differ by 0.9 %, 1.1 %, 1.5 % (k = 3, 5, 7; next order is
    O(k/N)); 3 % allows that and still fails for an N^-2 error (which would double it)."""
    scaled = [n**3 * abs(boundary.top_eigenvalue(n, kernel) - lam2(kernel, n)) for n in (64, 128)]
    assert abs(scaled[1] / scaled[0] - 1) < 0.03


@settings(max_examples=30, deadline=None)
@given(spatial=st.integers(3, 160))
def test_k3_top_eigenvalue_closed_form(spatial):
    # 1e-12: eigvalsh is backward stable, eigenvalue error ~ N eps_mach ||A|| ~ 1e-14
    assert boundary.top_eigenvalue(spatial, 3) == pytest.approx((1 + 2 * math.cos(math.pi / (spatial + 1))) / 3,
                                                                abs=1e-12)


# --------------------------------------------------------------------------- 2D = tensor product
@settings(max_examples=20, deadline=None)
@given(kernel=kernels, extra=st.integers(0, 8), depth=st.integers(1, 8))
def test_two_dimensional_factors_are_the_tensor_product(kernel, extra, depth):
    spatial = kernel + extra
    f1 = boundary.boundary_factors(spatial, kernel, depth, dim=1)
    f2 = boundary.boundary_factors(spatial, kernel, depth, dim=2)
    A = boundary.averaging_operator(spatial, kernel)
    A2 = np.kron(A, A)  # the k x k zero-padded window on an N x N grid, built explicitly
    P = [np.ones(spatial * spatial)]
    for _ in range(depth):
        P.append(A2 @ P[-1])
    P = np.array(P)
    beta2 = np.mean(P[1:] ** 2 * P[depth - 1::-1], axis=1)
    omega2 = P[:depth].mean(axis=1)
    # 1e-14: same products summed in a different order; all entries in [0, 1]
    np.testing.assert_allclose(f2["beta"], f1["beta"] ** 2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(f2["omega"], f1["omega"] ** 2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(f2["beta"], beta2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(f2["omega"], omega2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(boundary.mean_deficit(spatial, kernel, depth, dim=2)[-1], 1 - P[-1].mean(),
                               rtol=0, atol=1e-14)


# --------------------------------------------------------------------------- circular = homogeneous
@settings(max_examples=30, deadline=None)
@given(kernel=kernels, extra=st.integers(0, 30), depth=st.integers(1, 30), a=a_b, b=a_b, e=e_values,
       eps=eps_values)
def test_circular_padding_reproduces_the_homogeneous_law(kernel, extra, depth, a, b, e, eps):
    got = boundary.layer_moments(a, b, e, eps, kernel + extra, kernel, depth, padding="circular")
    want = [expansion.brute_force_layer_moment(li, dict(a=a, b=b, e=e, epsilon=eps)) for li in range(1, depth + 1)]
    # rel 1e-12: A 1 = 1 up to rounding (k additions of 1/k); abs 1e-12 for s_1 = 0 at e = eps = 0
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_zero_padding_beta_omega_below_one_and_circular_exactly_flat():
    f = boundary.boundary_factors(16, 3, 10)
    assert np.all(f["beta"] < 1) and np.all(f["omega"][1:] < 1) and f["omega"][0] == 1
    fc = boundary.boundary_factors(16, 3, 10, padding="circular")
    np.testing.assert_allclose(fc["beta"], 1, rtol=0, atol=1e-15)  # 1e-15: 1/3 summed three times
    np.testing.assert_allclose(fc["omega"], 1, rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- regime
def test_regime_strong_boundary_is_not_constant_level():
    reg = boundary.regime(32, 3, 16)
    assert not reg["constant_level"]
    assert reg["slope_shift"] > 0.3  # model value 0.37: the exponent is visibly flattened


def test_regime_large_grid_is_constant_level():
    """L = 2 at N = 256 with eps > 0 (s_bar(1) > 0), and L = 3 with the default constants."""
    reg = boundary.regime(2, 3, 256, constants=(1.0, 2.0, 0.0, 0.1))
    assert reg["constant_level"] and 0 < reg["slope_shift"] < 0.01  # model value 0.002
    assert boundary.regime(3, 3, 256)["constant_level"]


def test_regime_default_constants_at_depth_two_and_undefined_ratio():
    """With e = eps = 0, s_1 = 0: regime(L = 2) takes a one-sided difference (finite, constant
    level at N = 256) and boundary_ratio at L = 1 refuses the 0/0 with a ValueError."""
    reg = boundary.regime(2, 3, 256)
    assert reg["constant_level"] and np.isfinite(reg["slope_shift"])
    with pytest.raises(ValueError, match="s_bar"):
        boundary.boundary_ratio(1.0, 2.0, 0.0, 0.0, 16, 3, [1])


@settings(max_examples=15, deadline=None)
@given(depth=st.integers(3, 64), kernel=kernels, extra=st.integers(0, 100))
def test_regime_parameter_and_exponent(depth, kernel, extra):
    spatial = kernel + extra
    reg = boundary.regime(depth, kernel, spatial)
    # 1e-15: one float division each way
    assert reg["regime_parameter"] == pytest.approx(depth * kernel**2 / spatial**2, rel=1e-15)
    assert reg["regime_exponent"] == pytest.approx(depth * math.pi**2 * (kernel**2 - 1) / (24 * spatial**2),
                                                   rel=1e-12)  # lambdified vs hand formula
    assert reg["top_eigenvalue"] == boundary.top_eigenvalue(spatial, kernel)
    assert reg["constant_level"] == (abs(reg["slope_shift"]) <= boundary.SLOPE_TOLERANCE)
    assert reg["eta_ratio"] == pytest.approx(reg["s_bar_ratio"] ** -0.5, rel=1e-15)  # same float op


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("call, error, name", [
    (lambda: boundary.averaging_operator(16, 4), ValueError, "kernel"),
    (lambda: boundary.boundary_factors(5, 7, 3), ValueError, "kernel"),
    (lambda: boundary.boundary_factors(16, 3, 0), ValueError, "depth"),
    (lambda: boundary.layer_moments(1, 2, 0, 0.1, 16, 3, 0), ValueError, "depth"),
    (lambda: boundary.boundary_ratio(1, 2, 0, 0.1, 16, 3, [4, 0]), ValueError, "depth"),
    (lambda: boundary.regime(0, 3, 16), ValueError, "depth"),
    (lambda: boundary.boundary_factors(16, 3, 4, dim=3), ValueError, "dim"),
    (lambda: boundary.mean_deficit(16, 3, 4, dim=3), ValueError, "dim"),
    (lambda: boundary.regime(4, 3, 16, dim=3), ValueError, "dim"),
    (lambda: boundary.averaging_operator(16, 3, padding="reflect"), ValueError, "padding"),
    (lambda: boundary.layer_moments(1, 2, 0, 0.1, 16, 3, 4, padding="reflect"), ValueError, "padding"),
    (lambda: boundary.averaging_operator(16, 3.0), TypeError, "kernel"),
    (lambda: boundary.averaging_operator(True, 3), TypeError, "spatial"),
    (lambda: boundary.boundary_factors(16, 3, 2.5), TypeError, "depth"),
    (lambda: boundary.top_eigenvalue_asymptotic(3), ValueError, "order"),
])
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
