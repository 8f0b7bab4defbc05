# %% [markdown]
# # Zero padding: the boundary operator and the correction to the depth law
#
# Run with `python derivations/02_zero_padding_boundary.py` (or open it as a notebook with
# jupytext).  Every number is computed; the script ends by asserting that what it derived
# agrees with `amutheory.symbolic.chain.boundary`.
#
# **Setting.**  The conv chain of derivation 01, now with zero ("same") padding.  At criticality
# the second moment of the pre-activation at position `p` of layer `l + 1` is the average of
# the second moments in its k-window, and the positions outside the grid contribute zero:
#
# `q_{l+1}(p) = (1/k) sum_{|s| <= r} q_l(p + s) 1[0 <= p + s < N]`,   `r = (k - 1)/2`.
#
# In vector form `q_{l+1} = A q_l`.  This script studies `A` (spectrum, the deficit it builds
# up with depth), then the leading-order model of how it changes the one-step moment `s_l`, and
# finally when the correction is a harmless constant and when it bends the depth law.

# %%
import math

import numpy as np
import sympy as sp
from scipy.optimize import brentq

from amutheory.course import check, section, show
from amutheory.symbolic.chain import boundary

from amutheory.symbolic.primitives import expansion
from amutheory.symbolic.chain.boundary import N_sym, k_sym, l_sym, s_sym, theta

np.set_printoptions(linewidth=110, precision=4, suppress=True)


# lambdified library expressions (one source of truth: the SymPy expressions)
lam2 = sp.lambdify((k_sym, N_sym), boundary.top_eigenvalue_asymptotic(2), "numpy")
lam4 = sp.lambdify((k_sym, N_sym), boundary.top_eigenvalue_asymptotic(4), "numpy")
early = sp.lambdify((l_sym, k_sym, N_sym), boundary.early_deficit_asymptotic(), "numpy")
step_var = sp.lambdify(k_sym, boundary.step_variance(), "numpy")

# %% [markdown]
# ## 1. The averaging operator is a killed random walk
#
# Row `p` of `A` puts weight `1/k` on each of the `k` positions `p - r .. p + r`: it is the
# transition matrix of a walk that jumps by a uniform step in `{-r..r}`.  With circular
# padding the step wraps around and every row sums to 1 (`A 1 = 1`).  With zero padding the
# steps that would leave the grid are simply missing: the walk is **killed** there, the rows
# at the edges sum to less than 1, and `(A^l 1)(p)` is the probability that a walk started at
# `p` survives `l` steps.

# %%
section("1. the averaging operator A (N = 6, k = 3)")
A6 = boundary.averaging_operator(6, 3)
print("k * A (zero padding):\n", np.round(3 * A6).astype(int))
print("A 1, zero padding    :", A6 @ np.ones(6))
print("A 1, circular padding:", boundary.averaging_operator(6, 3, "circular") @ np.ones(6))
print("A is symmetric, so the backward pass (A^T) sees the same operator:", np.array_equal(A6, A6.T))

# Monte Carlo of the killed walk: start at the edge p = 0, 3 steps, uniform in {-1, 0, 1}.
rng = np.random.default_rng(0)
walks = 200_000
positions = np.zeros(walks, dtype=int)
alive = np.ones(walks, dtype=bool)
for _ in range(3):
    positions += rng.integers(-1, 2, size=walks)
    alive &= (positions >= 0) & (positions < 6)
survival_mc = alive.mean()
survival_exact = (np.linalg.matrix_power(A6, 3) @ np.ones(6))[0]
print(f"survival of 3 steps from p = 0: Monte Carlo {survival_mc:.4f}, (A^3 1)(0) = {survival_exact:.4f}")
# binomial standard error sqrt(p(1-p)/n) ~ 1.1e-3 at n = 2e5: 5 standard errors
check('abs(survival_mc - survival_exact) < 5 * math.sqrt(survival_exact * (1...', abs(survival_mc - survival_exact) < 5 * math.sqrt(survival_exact * (1 - survival_exact) / walks))

# %% [markdown]
# ## 2. The symbol, the step variance and the top eigenvalue
#
# Far from the edges `A` acts on a Fourier mode `exp(i theta p)` by multiplication with its
# *symbol* `sigma(theta) = (1/k) sum_s cos(s theta) = sin(k theta/2) / (k sin(theta/2))`.
# Expanding the cosines, the Taylor coefficients are the even moments of the step:
# `sigma = 1 - mu_2 theta^2/2 + mu_4 theta^4/24 - ...`, `mu_j = (1/k) sum_s s^j`.
# We derive mu_2 and mu_4 by symbolic summation and compare with the library's series.

# %%
section("2. symbol, step variance, top eigenvalue")
r = (k_sym - 1) / 2
mu2 = sp.factor(sp.summation(s_sym**2, (s_sym, -r, r)) / k_sym)
mu4 = sp.factor(sp.summation(s_sym**4, (s_sym, -r, r)) / k_sym)
series = boundary.symbol_series(4)
show("mu_2", boundary.step_variance())
print("   (the library's step variance; by summation:", mu2, ")")
show("mu_4", mu4)
show("symbol_series", sp.collect(series, theta))
moment_series = 1 - mu2 * theta**2 / 2 + mu4 * theta**4 / 24
print("1 - mu_2 th^2/2 + mu_4 th^4/24 - series =", sp.expand(moment_series - series))
# boundary.operator_symbol() sums the Fourier series itself (a Piecewise: theta = 0 apart);
# its generic branch agrees with the closed form the series is expanded from
fourier_sum = boundary.operator_symbol().args[-1][0]
for kk in (3, 5, 7):
    gap = max(abs(float(fourier_sum.subs({k_sym: kk, theta: x}))
                  - math.sin(kk * x / 2) / (kk * math.sin(x / 2))) for x in (0.3, 1.1, 2.5))
    print(f"  k = {kk}: |operator_symbol - sin(k th/2)/(k sin(th/2))| = {gap:.1e}")
    check('gap < 1e-12', gap < 1e-12)

# %% [markdown]
# The lowest Dirichlet mode of a box of length `N` is `sin(pi x / N)`: `theta = pi / N`.  So
#
# `lambda_max = sigma(pi/N) = 1 - pi^2 (k^2 - 1) / (24 N^2) + O(N^-3)`.
#
# The `O(N^-3)` is not from the series (it has only even powers) but from the box: the walk
# is killed one or more sites *beyond* the last grid point, so the effective length is
# `N + delta_k`, and `1/(N + delta)^2 = 1/N^2 - 2 delta/N^3 + ...`.  For `k = 3` the
# eigenvectors are exactly `sin(pi (p + 1)/(N + 1))` (walls at -1 and N): `delta_3 = 1` and
# `lambda_max = (1 + 2 cos(pi/(N + 1)))/3` exactly.

# %%
show("lambda_max_2", boundary.top_eigenvalue_asymptotic(2))
show("lambda_max_4", boundary.top_eigenvalue_asymptotic(4))
N10 = 10
v = np.sin(np.pi * (np.arange(N10) + 1) / (N10 + 1))
lam_k3 = (1 + 2 * math.cos(math.pi / (N10 + 1))) / 3
print(f"k = 3, N = 10: |A v - lambda v| for v = sin(pi (p+1)/(N+1)): "
      f"{np.abs(boundary.averaging_operator(N10, 3) @ v - lam_k3 * v).max():.1e}")


def symbol(x, kk):
    return math.sin(kk * x / 2) / (kk * math.sin(x / 2))


def effective_extra_length(N, kk):
    """delta with sigma(pi / (N + delta)) = exact lambda_max."""
    theta_star = brentq(lambda x: symbol(x, kk) - boundary.top_eigenvalue(N, kk), 1e-9, 0.999 * 2 * math.pi / kk)
    return math.pi / theta_star - N


Ns = (8, 16, 32, 64, 128)
delta = {kk: effective_extra_length(128, kk) for kk in (3, 5, 7)}
print("\n  k    N    exact          order 2        N^3|exact - ord2|  N^3|exact - ord4|")
scaled_error = {}
for kk in (3, 5, 7):
    for N in Ns:
        exact = boundary.top_eigenvalue(N, kk)
        scaled_error[kk, N] = N**3 * abs(exact - lam2(kk, N))
        print(f"  {kk}  {N:4d}   {exact:.10f}   {lam2(kk, N):.10f}   {scaled_error[kk, N]:9.3f}"
              f"          {N**3 * abs(exact - lam4(kk, N)):9.3f}")
    predicted = 2 * math.pi**2 * (kk**2 - 1) / 24 * delta[kk]
    print(f"     effective box N + delta_k: delta_{kk} = {delta[kk]:.4f}"
          f"  ->  N^3 error tends to pi^2 (k^2-1) delta_k / 12 = {predicted:.3f}")
print("N^3 |error| converges to a constant: the order-2 form is accurate to O(N^-3), as stated;")
print(f"delta_k ({delta[3]:.2f}, {delta[5]:.2f}, {delta[7]:.2f} for k = 3, 5, 7) is computed here numerically, "
      "not derived in closed form: it stays below k,")
print("so N^3 |error| <= pi^2 k (k^2 - 1)/12 is a safe bound (used in the checks below).")
for N in Ns:
    check('abs(boundary.top_eigenvalue(N, 3) - (1 + 2 * math.cos(math.pi / (N + ...', abs(boundary.top_eigenvalue(N, 3) - (1 + 2 * math.cos(math.pi / (N + 1))) / 3) < 1e-12)

# %% [markdown]
# ## 3. The forward deficit: diffusion first, then the top eigenvalue
#
# `1 - <A^l 1>` (`<.>` = mean over positions) is the fraction of walks killed after `l` steps.
# While the walk has not felt the far wall (`l (k^2-1) << N^2`), each wall is a half-line
# problem for a diffusion with variance `mu_2` per step: a walk started at distance `x`
# survives with probability `erf(x / sqrt(2 mu_2 l))`, and integrating the loss over `x`
# gives `sqrt(2 mu_2 l / pi)` per wall, so `1 - <A^l 1> ~ (2/N) sqrt(2 mu_2 l / pi)`.

# %%
section("3. forward deficit vs the diffusion asymptotics (N = 2048)")
show("d_early", boundary.early_deficit_asymptotic())
N_big, ls = 2048, np.array([16, 32, 64, 128, 256])
deficit_ratio = {}
for kk in (3, 5, 7):
    d = boundary.mean_deficit(N_big, kk, int(ls[-1]))[ls]
    deficit_ratio[kk] = d / early(ls, kk, N_big)
    offset = (early(ls, kk, N_big) - d) * N_big / 2
    limit = delta[kk] / 2 * math.sqrt(math.pi / (2 * step_var(kk)))
    print(f"k = {kk}: l = {ls}")
    print(f"   exact / asymptotic       = {deficit_ratio[kk]}")
    print(f"   (1 - ratio) sqrt(l)      = {(1 - deficit_ratio[kk]) * np.sqrt(ls)}"
          f"   -> (delta_k/2) sqrt(pi/(2 mu_2)) = {limit:.4f}")
    print(f"   walls' offset (positions)= {offset}   -> delta_k/2 = {delta[kk] / 2:.4f}")

# %% [markdown]
# **How it converges (computed above, stated honestly).**  The ratio tends to 1, but slowly: like
# `1 - c_k / sqrt(l)`.  The exact deficit is the diffusion value minus a constant number of
# positions per wall, `(2/N) [sqrt(2 mu_2 l / pi) - delta_k / 2]`: the discrete walk is killed
# beyond the last grid point, and the offset matches the same `delta_k` that shifts the top
# eigenvalue (to about 2-3 % at l = 256, closing like `l^-1/2`).  So
# `1 - ratio ~ (delta_k / 2) sqrt(pi / (2 mu_2 l))`: about 0.83 at l = 16, 0.95 at l = 256, and
# 1 % accuracy would need several thousand layers.  The asymptotic form *over*-states the deficit
# at every depth we looked at, which makes it a convenient upper bound.
#
# Once `l (k^2-1) ~ N^2` the two walls talk to each other, the profile settles into the top
# eigenvector `u` and `<A^l 1> -> c_0 lambda_max^l` with `c_0 = (u . 1)^2 / N`.

# %%
N_small, k_small = 48, 3
u = np.linalg.eigh(boundary.averaging_operator(N_small, k_small))[1][:, -1]
c0 = u.sum() ** 2 / N_small
lam = boundary.top_eigenvalue(N_small, k_small)
d_small = boundary.mean_deficit(N_small, k_small, 4096)
print(f"\ncrossover, N = {N_small}, k = {k_small}: lambda_max = {lam:.6f}, c_0 = {c0:.4f}")
print("     l   l(k^2-1)/N^2   deficit   exact/diffusion   <A^l 1>/(c_0 lambda^l)")
for ll in (4, 16, 64, 128, 256, 512, 1024, 2048, 4096):
    print(f"  {ll:5d}   {ll * (k_small**2 - 1) / N_small**2:8.3f}     {d_small[ll]:.4f}      "
          f"{d_small[ll] / early(ll, k_small, N_small):.3f}            {(1 - d_small[ll]) / (c0 * lam**ll):.5f}")
print("the diffusion form holds (ratio rising towards 1) until l (k^2-1)/N^2 ~ 1; beyond ~2 the")
print("eigenvalue form takes over and the diffusion form (growing like sqrt(l)) becomes useless.")

# %%
import matplotlib.pyplot as plt  # noqa: E402

l_axis = np.arange(1, 4097)
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(l_axis * (k_small**2 - 1) / N_small**2, d_small[l_axis], "-", label="exact 1 - <A^l 1>")
ax.loglog(l_axis * (k_small**2 - 1) / N_small**2, early(l_axis, k_small, N_small), "--",
          label="diffusion (2/N) sqrt(2 mu_2 l / pi)")
ax.loglog(l_axis * (k_small**2 - 1) / N_small**2, 1 - c0 * lam**l_axis, ":", label="eigenvalue 1 - c_0 lambda_max^l")
ax.set_ylim(1e-3, 1.5)
ax.set_xlabel("l (k^2 - 1) / N^2")
ax.set_ylabel("forward deficit 1 - <A^l 1>")
ax.set_title(f"zero padding, N = {N_small}, k = {k_small}: diffusion, then the top eigenvalue")
ax.legend()
fig.tight_layout()

# %% [markdown]
# ## 4. The model of the one-step moment
#
# Derivation 01 gave every pair of updated layers `(j, j')`, `m = max(j, j')`, the weight
# `w_j w_j' (a + b (l - m))`.  With a boundary (leading order, position-local mean field):
#
# * the update of layer `l` scales like (patch Gram) x (gradient) at each position, squared:
#   a factor `beta_l = < q_l^2 G_l >`, with `q_l = A^l 1` (forward) and `G_l = A^(L-l) 1`
#   (backward, the pooled head feeds every position equally);
# * a fluctuation injected `t` layers below `l` arrives attenuated by `omega_t = < A^t 1 >`,
#   so `b (l - m)` becomes `b sum_{i=m+1}^{l} omega_{l-i}`.
#
# Circular padding has `A 1 = 1`: `beta = omega = 1`, and the homogeneous law must come back.
#
# **A bound for free.**  Every profile lies in [0, 1], so pointwise
# `1 - q^2 G = (1 - q^2) + q^2 (1 - G) <= 2 (1 - q) + (1 - G)`; the deficit `d(t) = 1 - <A^t 1>`
# grows with `t`, hence `beta_l >= 1 - 3 d(L)` and `omega_t >= 1 - d(L)`.  Every term of `s_l`
# is non-negative, so `1 >= ratio >= (1 - 3 d(L)) (1 - d(L)) >= 1 - 4 d(L)`, and with section 3
# (`d` stays below the diffusion form) `1 - ratio <= (8/N) sqrt(L (k^2-1) / (6 pi))`.

# %%
section("4. the boundary model: beta_l, omega_t, s_l")
f16 = boundary.boundary_factors(16, 3, 8)
print("N = 16, k = 3, L = 8:  beta_l  =", f16["beta"])
print("                      omega_t =", f16["omega"])
fc = boundary.boundary_factors(16, 3, 8, padding="circular")
print("circular padding:     beta_l  =", fc["beta"], "  omega_t =", fc["omega"])

circular_gap = 0.0
for a_v, b_v, e_v, eps_v, depth in ((1.0, 2.0, 0.0, 0.0, 10), (0.7, 1.3, 0.4, 0.25, 12), (2.5, 0.2, 1.0, 1.0, 7)):
    s_circ = boundary.layer_moments(a_v, b_v, e_v, eps_v, 16, 3, depth, padding="circular")
    brute = np.array([expansion.brute_force_layer_moment(
        ll, dict(a=a_v, b=b_v, e=e_v, epsilon=eps_v)) for ll in range(1, depth + 1)])
    # relative gap; s_1 = 0 when e = eps = 0, so the scale is floored at 1
    gap = np.max(np.abs(s_circ - brute) / np.maximum(np.abs(brute), 1.0))
    circular_gap = max(circular_gap, gap)
    print(f"a={a_v}, b={b_v}, e={e_v}, eps={eps_v}: circular s_l = {s_circ[:5]}...  "
          f"max rel. gap to brute_force_layer_moment = {gap:.1e}")

print("\nzero/circular ratio of s_bar (ReLU MLP-limit constants a=1, b=2, e=0, eps=0.1):")
print("   N   k    L=4     L=8     L=16    L=32    L=64")
for N, kk in ((16, 3), (32, 3), (64, 3), (32, 5), (64, 7), (256, 3)):
    ratios = boundary.boundary_ratio(1.0, 2.0, 0.0, 0.1, N, kk, [4, 8, 16, 32, 64])
    print(f"  {N:3d}  {kk}   " + "  ".join(f"{x:.4f}" for x in ratios))
print("the ratio is below 1, falls with depth and rises towards 1 with N (checked at the end).")

# %%
fig, ax = plt.subplots(figsize=(6, 4))
L_axis = np.array([4, 8, 16, 32, 64])
for N, kk in ((16, 3), (32, 3), (64, 3), (32, 5), (64, 7), (256, 3)):
    ax.semilogx(L_axis, boundary.boundary_ratio(1.0, 2.0, 0.0, 0.1, N, kk, L_axis), "o-", label=f"N = {N}, k = {kk}")
ax.set_xlabel("depth L")
ax.set_ylabel("s_bar(zero) / s_bar(circular)")
ax.set_title("boundary model: zero/circular ratio of s_bar")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 5. Two dimensions: a tensor product
#
# A k x k window at `(p1, p2)` is the product of two 1D windows, and the grid is a product of
# two intervals, so the 2D operator is `A (x) A` (Kronecker product) and `A^l 1` in 2D is
# `(A^l 1) (x) (A^l 1)`.  Position averages of products of such profiles factorise, so every
# 2D factor is the square of the 1D one -- exactly.  We check it with an explicit 2D operator.

# %%
section("5. 2D = tensor product of two 1D operators")
kron_gap = 0.0
for N, kk, depth in ((12, 3, 6), (10, 5, 5), (9, 7, 4)):
    A = boundary.averaging_operator(N, kk)
    A2 = np.kron(A, A)  # (N^2 x N^2): the 2D zero-padded k x k average, built by hand
    P2 = [np.ones(N * N)]
    for _ in range(depth):
        P2.append(A2 @ P2[-1])
    P2 = np.array(P2)
    beta2 = np.mean(P2[1:] ** 2 * P2[depth - 1::-1], axis=1)
    omega2 = P2[:depth].mean(axis=1)
    f2 = boundary.boundary_factors(N, kk, depth, dim=2)
    f1 = boundary.boundary_factors(N, kk, depth, dim=1)
    gaps = (np.abs(beta2 - f2["beta"]).max(), np.abs(omega2 - f2["omega"]).max(),
            np.abs(f1["beta"] ** 2 - f2["beta"]).max(), np.abs(f1["omega"] ** 2 - f2["omega"]).max(),
            np.abs((1 - P2[depth].mean()) - boundary.mean_deficit(N, kk, depth, dim=2)[depth]))
    kron_gap = max(kron_gap, *gaps)
    print(f"N = {N:2d}, k = {kk}, L = {depth}: 2D beta = {f2['beta']}  max gap to kron(A, A) "
          f"and to (1D)^2: {max(gaps):.1e}")

# %% [markdown]
# ## 6. The regime: when is the boundary a constant-level correction?
#
# Early on the deficit is `~ k sqrt(L) / N`, so `ln(ratio) ~ -c k sqrt(L)/N` and the local
# slope of `eta* ~ ratio^(-1/2)` shifts by `(c/4) k sqrt(L) / N = const * sqrt(L k^2 / N^2)`.
# `boundary.regime` computes the shift by a central difference of the model (ReLU constants
# `a=1, b=2, e=0, eps=0`).  Note: with these defaults `s_bar(1) = 0` for both paddings, so the
# difference at `L <= 2` would divide 0 by 0; we start at `L = 3`.

# %%
section("6. the regime: slope shift vs L k^2 / N^2")
print("   L   k    N    L k^2/N^2   slope shift   shift/sqrt(L k^2/N^2)   constant-level")
for depth, kk, N in ((4, 3, 64), (16, 3, 64), (64, 3, 64), (8, 5, 128), (32, 5, 128), (16, 7, 128),
                     (64, 7, 128), (32, 3, 16), (8, 7, 16)):
    reg = boundary.regime(depth, kk, N)
    print(f"  {depth:3d}  {kk}  {N:4d}   {reg['regime_parameter']:8.4f}     {reg['slope_shift']:+.4f}"
          f"            {reg['slope_shift'] / math.sqrt(reg['regime_parameter']):.3f}"
          f"                 {reg['constant_level']}")

fig, ax = plt.subplots(figsize=(6, 4))
for kk, N in ((3, 64), (5, 128), (7, 128), (3, 16)):
    L_grid = [L_ for L_ in (3, 4, 8, 16, 32, 64) if L_ * kk**2 / N**2 <= 1.5]
    regs = [boundary.regime(L_, kk, N) for L_ in L_grid]
    ax.loglog([r_["regime_parameter"] for r_ in regs], [abs(r_["slope_shift"]) for r_ in regs], "o-",
              label=f"k = {kk}, N = {N}")
ax.axhline(boundary.SLOPE_TOLERANCE, color="k", ls="--", label="SLOPE_TOLERANCE")
ax.set_xlabel("L k^2 / N^2")
ax.set_ylabel("|slope shift| of eta*")
ax.set_title("boundary model: slope shift against L k^2 / N^2")
ax.legend(fontsize=8)
fig.tight_layout()

print("\ncollapse: at fixed L k^2/N^2 the shift / sqrt(L k^2/N^2) settles as N grows")
collapse = {}
for x in (0.01, 0.04):
    for kk in (3, 5, 7):
        row = []
        for N in (64, 128, 256):
            depth = int(round(x * N * N / kk**2))
            if depth < 3:
                continue
            reg = boundary.regime(depth, kk, N)
            row.append(reg["slope_shift"] / math.sqrt(reg["regime_parameter"]))
        collapse[x, kk] = row
        print(f"  L k^2/N^2 = {x}, k = {kk}: " + "  ".join(f"{c:.3f}" for c in row))


def deepest_constant_level(kk, N):
    """Largest L with |slope shift| <= SLOPE_TOLERANCE (the shift grows with L: bisection)."""
    lo, hi = 3, 6
    while boundary.regime(hi, kk, N)["constant_level"]:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if boundary.regime(mid, kk, N)["constant_level"] else (lo, mid)
    return lo


print(f"\nthreshold: the deepest L with |shift| <= {boundary.SLOPE_TOLERANCE}")
thresholds = {}
for kk, N in ((3, 64), (3, 128), (5, 64), (5, 128), (7, 128)):
    L_star = deepest_constant_level(kk, N)
    thresholds[kk, N] = (L_star * kk**2 / N**2, L_star * (kk**2 - 1) / N**2)
    print(f"  k = {kk}, N = {N:3d}: L* = {L_star:4d}   L* k^2/N^2 = {thresholds[kk, N][0]:.4f}"
          f"   L* (k^2-1)/N^2 = {thresholds[kk, N][1]:.4f}")
lo_k2, hi_k2 = min(t[0] for t in thresholds.values()), max(t[0] for t in thresholds.values())
lo_k21, hi_k21 = min(t[1] for t in thresholds.values()), max(t[1] for t in thresholds.values())
print(f"so 'constant-level' (|shift| <= {boundary.SLOPE_TOLERANCE}) needs L k^2 / N^2 <~ {lo_k2:.3f}-{hi_k2:.3f}; "
      "the natural variable")
print(f"is L (k^2-1)/N^2, whose threshold is {lo_k21:.3f}-{hi_k21:.3f} for every k: e.g. N = 32, k = 3 allows "
      f"L <= {deepest_constant_level(3, 32)},")
print(f"and at N = 16, k = 3 already L = 4 shifts the slope by {boundary.regime(4, 3, 16)['slope_shift']:+.3f}, "
      "more than the tolerance.")

# %% [markdown]
# Deep in the crossover the layer-averaged ratio does *not* decay like `lambda_max^(2L)` (that
# is the top layer's own factor `beta_L = <q_L^2>`): the zero-padded `s_bar` is dominated by
# the shallow layers `l <~ 1/(1 - lambda_max)`, so `ratio ~ lambda_max^L L^-4`
# (`L^3` from the circular `s_bar`, one more `L` from the layer average).

# %%
N_deep, k_deep = 8, 3
lam_deep = boundary.top_eigenvalue(N_deep, k_deep)
print(f"\ndeep crossover, N = {N_deep}, k = {k_deep}, lambda_max = {lam_deep:.5f}:")
print("     L    beta_L/lambda^(2L)   ratio(L+1)/ratio(L)   lambda (1 - 4/L)")
deep_rows = []
for depth in (200, 400, 800):
    r0, r1 = boundary.boundary_ratio(1.0, 2.0, 0.0, 0.0, N_deep, k_deep, [depth, depth + 1])
    betaL = boundary.boundary_factors(N_deep, k_deep, depth)["beta"][-1]
    deep_rows.append((r1 / r0, lam_deep * (1 - 4 / depth)))
    print(f"  {depth:5d}      {betaL / lam_deep ** (2 * depth):.6f}            {r1 / r0:.6f}"
          f"             {lam_deep * (1 - 4 / depth):.6f}")

# %% [markdown]
# ## 7. Checks against the library

# %%
section("7. checks")
# (a) eigenvalue asymptotics: error O(N^-3) with a k-dependent constant below pi^2 k (k^2-1)/12
for kk in (3, 5, 7):
    bound = math.pi**2 * kk * (kk**2 - 1) / 12
    check('all((scaled_error[kk, N] <= bound for N in Ns))', all(scaled_error[kk, N] <= bound for N in Ns), str((kk, bound)))
    # N^3 |error| converges: the last two N differ by less than 2 % (it is not growing like N)
    check('abs(scaled_error[kk, 128] / scaled_error[kk, 64] - 1) < 0.02', abs(scaled_error[kk, 128] / scaled_error[kk, 64] - 1) < 0.02)
    for N in Ns:  # the order-4 form is no worse
        exact = boundary.top_eigenvalue(N, kk)
        check('abs(exact - lam4(kk, N)) <= abs(exact - lam2(kk, N))', abs(exact - lam4(kk, N)) <= abs(exact - lam2(kk, N)))
check('sp.expand(moment_series - series) == 0', sp.expand(moment_series - series) == 0)
check('sp.expand(boundary.step_variance() - (k_sym ** 2 - 1) / 12) == 0', sp.expand(boundary.step_variance() - (k_sym**2 - 1) / 12) == 0)
check('abs(delta[3] - 1) < 1e-08', abs(delta[3] - 1) < 1e-8)
# (b) early deficit: ratio rises monotonically towards 1 and 1 - ratio ~ c_k / sqrt(l)
for kk in (3, 5, 7):
    check('np.all(np.diff(deficit_ratio[kk]) > 0) and np.all(deficit_ratio[kk] < 1)', np.all(np.diff(deficit_ratio[kk]) > 0) and np.all(deficit_ratio[kk] < 1))
    limit = delta[kk] / 2 * math.sqrt(math.pi / (2 * step_var(kk)))
    # the offset's approach to delta_k / 2 (section 3 prints it) closes like l^-1/2; 5% at l = 256
    check('abs((1 - deficit_ratio[kk][-1]) * math.sqrt(ls[-1]) / limit - 1) < 0.05', abs((1 - deficit_ratio[kk][-1]) * math.sqrt(ls[-1]) / limit - 1) < 0.05)
# (c) circular padding reproduces the homogeneous law exactly
check('circular_gap < 1e-12', circular_gap < 1e-12)
# (d) 2D = kron(A, A) = (1D)^2
check('kron_gap < 1e-12', kron_gap < 1e-12)
# (e) ratio <= 1, non-increasing in L, -> 1 as N grows (bounded by 4 x early deficit asymptotics)
for N, kk in ((16, 3), (32, 5), (64, 7)):
    ratios = boundary.boundary_ratio(0.7, 1.5, 0.2, 0.3, N, kk, range(1, 41))
    check('np.all(ratios <= 1 + 1e-12) and np.all(np.diff(ratios) <= 1e-12)', np.all(ratios <= 1 + 1e-12) and np.all(np.diff(ratios) <= 1e-12))
gaps = [1 - boundary.boundary_ratio(1.0, 2.0, 0.0, 0.1, N, 3, [16])[0] for N in (64, 128, 256, 512)]
check('all((g2 < g1 for g1, g2 in zip(gaps, gaps[1:])))', all(g2 < g1 for g1, g2 in zip(gaps, gaps[1:])))
check('all((g <= 4 * early(16, 3, N) for g, N in zip(gaps, (64, 128, 256, 51...', all(g <= 4 * early(16, 3, N) for g, N in zip(gaps, (64, 128, 256, 512))))
# (f) regime: the documented parameter, and the threshold of L (k^2-1)/N^2 near 0.05
reg = boundary.regime(32, 3, 16)
check("reg['regime_parameter'] == 32 * 9 / 256 and (not reg['constant_level'])", reg["regime_parameter"] == 32 * 9 / 256 and not reg["constant_level"])
check("boundary.regime(3, 3, 256)['constant_level']", boundary.regime(3, 3, 256)["constant_level"])
check('all((0.045 < t[1] < 0.06 for t in thresholds.values()))', all(0.045 < t[1] < 0.06 for t in thresholds.values()))
check('all((0.14 < c < 0.25 for row in collapse.values() for c in row))', all(0.14 < c < 0.25 for row in collapse.values() for c in row))
# (g) deep crossover: the s_bar ratio steps like lambda (1 - 4/L), not lambda^2
check('all((abs(step / pred - 1) < 0.002 for step, pred in deep_rows))', all(abs(step / pred - 1) < 2e-3 for step, pred in deep_rows))
print("all derivation checks passed")
