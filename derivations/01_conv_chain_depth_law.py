# %% [markdown]
# # The depth law of a conv chain, derived step by step
#
# Run with `python derivations/01_conv_chain_depth_law.py` (or open it as a notebook:
# `jupytext --to notebook derivations/01_conv_chain_depth_law.py`).  The first part of the course
# (`derivations/README.md`): it teaches where `eta* ~ L^(-3/2)` comes from and assumes only
# Gaussian random matrices and one SGD step.  Every step is computed, not typed; the script ends by asserting that what it
# derived equals what `amutheory` returns, and that the library's closed form is the brute-force
# sum of the pair kernel.
#
# **Setting.**  A chain of L convolutions `h_l = W_l * x_{l-1}`, `x_l = phi(h_l)`, He fan-in
# init `Var[W] = c / fan_in`, circular padding, a linear head.  One SGD step from the init
# changes every pre-activation by `Delta h_l = -eta J_theta h_l grad + O(eta^2)`.

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

import amutheory
from amutheory.course import check, show
from amutheory.activations import get_activation
from amutheory.symbolic.primitives import expansion
from amutheory.symbolic.primitives.symbols import L, a, b, e, epsilon, l, m

# %% [markdown]
# ## 1. The Jacobian-product expansion
#
# The SGD update of layer j is `Delta W_j = -eta g_j x_{j-1}^T` (for a convolution: summed over
# positions).  It moves `h_j` by `-eta K_{j-1} g_j` (`K` = Gram of the layer's input patches),
# and `h_l` by that times `J_{l<-j}`.  Since `g_j = J_{l<-j}^T g_l`:
#
# `J_theta h_l grad = sum_{j<=l} J_{l<-j} K_{j-1} J_{l<-j}^T g_l`.
#
# Squaring gives pairs (j, j').  With m = max(j, j'), free probability gives the pair its
# weight `a + b (l - m)`: `a` from `E[J J^T] = I` (coherent), `b (l - m)` from the variance of
# `J J^T` accumulated over the `l - m` layers both members share.

# %%
kappa = expansion.pair_kernel()
show("kappa", kappa)

# %% [markdown]
# ### Check the MLP-limit weight numerically
# In the MLP limit `b / a = v`, the per-layer variance of `J J^T`: 1 for each Gaussian matrix
# (Marchenko-Pastur) plus `v_D` for the ReLU mask.  A small Monte Carlo of
# `E || sum_j P_j P_j^T g ||^2` (linear, v = 1) shows the pattern 1, 5, 14, 30 of
# `(l-1)^2 + T_{l-1}`.

# %%
rng = np.random.default_rng(0)
n, depth, samples = 128, 5, 100
draws = np.zeros((samples, depth + 1))
for sample in range(samples):
    W = [rng.normal(0, 1 / np.sqrt(n), (n, n)) for _ in range(depth + 1)]
    g = rng.normal(size=n) / np.sqrt(n)
    for layer in range(2, depth + 1):
        total = np.zeros(n)
        for j in range(2, layer + 1):
            P = np.eye(n)
            for k in range(j + 1, layer + 1):
                P = W[k] @ P
            total += P @ (P.T @ g)
        draws[sample, layer] = total @ total
means = draws[:, 2:].mean(axis=0)
ratios = means / means[0]
# relative standard error of each ratio of sample means (the two errors added in quadrature; the
# first ratio is 1 by construction)
rel_se = draws[:, 2:].std(axis=0, ddof=1) / np.sqrt(samples) / means
ratio_se = np.hypot(rel_se, rel_se[0])
ratio_se[0] = 0.0
exact = [float(expansion.layer_moment_core().subs({a: 1, b: 1, epsilon: 0, l: k})) for k in range(2, depth + 1)]
print("Monte Carlo:", np.round(ratios, 2), "+-", np.round(ratios * ratio_se, 2), " derived:", exact)
check("Monte Carlo pattern 1, 5, 14, 30", np.all(np.abs(ratios / exact - 1) <= 4 * ratio_se + 1e-12),
      f"{samples} draws at n = {n}, within 4 standard errors")

# %% [markdown]
# ## 2. Summing the pairs
# Pairs with max m carry weight `W(m)^2 - W(m-1)^2`, `W(m) = epsilon + m - 1` (the input layer
# has Gram weight epsilon, tiny: its fan-in is only c_in k^d).  SymPy sums over m:

# %%
s_l = expansion.layer_moment_core()
show("s_l", sp.factor_terms(s_l))
show("s_l|epsilon=0", sp.factor(s_l.subs(epsilon, 0)))

# %% [markdown]
# ## 3. The layer average and eta*
# AM-muP fixes `eta^2 s_bar(L) = C`, `s_bar = (1/L) sum_l s_l`:

# %%
s_bar = expansion.mean_moment()
show("s_bar", sp.collect(s_bar, L))
law = amutheory.derive()
show("exponent", law.exponent)
show("eta_0", law.prefactor)
print("corrections c_1, c_2:", law.corrections(2))

# %% [markdown]
# The layer average at `a = b = 1`, `e = epsilon = 0` against its leading term `b L^2 / 12`, and the
# resulting `eta* ~ s_bar^(-1/2)` against `L^(-3/2)`: the finite-depth terms bend the curve at small L.

# %%
Ls = np.arange(2, 65)  # s_bar(1) = e = 0 at these constants
sb = sp.lambdify(L, s_bar.subs({a: 1, b: 1, e: 0, epsilon: 0}), "numpy")(Ls.astype(float))
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(Ls, sb ** -0.5, "o", ms=3, label="eta* = s_bar^(-1/2) (a = b = 1)")
ax.loglog(Ls, (Ls**2 / 12.0) ** -0.5, "-", label="leading order (L^2 / 12)^(-1/2)")
ax.set(xlabel="depth L", ylabel="eta* (units of sqrt(C))", title="the depth law of a conv chain")
ax.legend()

# %% [markdown]
# ## 4. Constants from the activation
# `v = 1 + v_D`, `v_D = c^2 E[phi'^4] / (c E[phi'^2])^2 - 1`, exact for linear and ReLU:

# %%
for name in ("linear", "relu", "gelu"):
    act = get_activation(name)
    c = act.critical_c()
    print(f"{name:7s} c* = {c:.4f}  chi(c*) = {act.chi(c):.4f}  v = {1 + act.spectral_variance(c).value:.4f}")

# %% [markdown]
# GELU at He c = 2 is sub-critical: the forward variance collapses.

# %%
from amutheory.activations import variance_map_trajectory  # noqa: E402

print("GELU, c = 2: q_10 =", variance_map_trajectory("gelu", 2.0, 1.0, 10)[-1])

# %% [markdown]
# ## 5. Checks against the library

# %%
# the library's s_bar(L) against the brute-force sum, layer by layer and pair by pair, of section 1's
# kernel (w_1 = epsilon, w_j = 1, weight a + b (l - max(j, j')) per pair, plus the local e per layer):
# L s_bar(L) is a polynomial of degree 4 in L, so agreement at L = 1..6 is agreement at every L,
# and the exponent -3/2 is its degree read off


def brute_force_s_bar(depth):
    w = lambda i: epsilon if i == 1 else 1  # noqa: E731
    layers = [e + sum(w(j1) * w(j2) * (a + b * (layer - max(j1, j2)))
                      for j1 in range(1, layer + 1) for j2 in range(1, layer + 1))
              for layer in range(1, depth + 1)]
    return sp.Add(*layers) / depth


for depth in range(1, 7):
    assert sp.expand(brute_force_s_bar(depth) - law.s_bar.subs(L, depth)) == 0, depth
check("s_bar = brute-force pair sum", True, "L = 1..6, symbol by symbol (degree 4: every L)")
check("exponent -3/2 read off the degree",
      law.exponent == sp.Rational(-3, 2) == -sp.Rational(sp.degree(sp.expand(L * law.s_bar), L) - 1, 2), str(law.exponent))
check("leading coefficient b/12", sp.Poly(s_bar, L).LC() == b / 12)
# the closed form of s_l is the double sum of the pair kernel (layer 6, symbol by symbol)
double = sum(expansion.pair_kernel(6, j, k) for j in range(1, 7) for k in range(1, 7))
check("s_l = double sum of the pair kernel", sp.expand(sp.piecewise_fold(double) - s_l.subs(l, 6)) == 0, "layer 6")
# first-order correction of eta* and of the local slope agree
check("eta* correction = local-slope correction",
      sp.simplify(law.local_slope_series(1)[1] + law.corrections(1)[0]) == 0)
check("ReLU v_D at c = 2 is 1", get_activation("relu").spectral_variance(2.0).value == 1.0)
print("all derivation checks passed")
