# %% [markdown]
# # Residual nets III: the stream Jacobian's spread and the exact dense law
#
# Run with `python derivations/07_residual_dense_law.py` (or open it as a notebook: `jupytext --to notebook
# derivations/07_residual_dense_law.py`).  It teaches why keeping the stream Jacobian (free probability, two traces) changes `s` at order one, the continuum solution, and what carries over to spatial and batched nets.
#
# **Assumes:** part 06 (the coherent order this corrects).
#
# **Setting** (docs/theory.md section 7, `amutheory.measure.resnet`).  A stem conv (no activation),
# then K residual blocks `x <- x + alpha(K) * branch(x)`, global average pooling and a linear
# head.  Three branch types:
#
# * `conv`:     `phi(W * x)`              (the AM-muP authors' block; one weight layer)
# * `conv-mlp`: `W2 phi(W1 * x)`, W2 1x1  (two weight layers, ends in a linear layer)
# * `preact`:   `W2 * phi(W1 * phi(x))`   (two weight layers; the stream itself enters phi)
#
# Layer i of a branch is drawn with `Var = c v_i(K) / fan_in` (c = the activation's critical He
# constant: 2 for ReLU, 1 for linear) and the branch is multiplied by `alpha(K)`.

# %%
import math
import time
import warnings

import numpy as np
import sympy as sp
import torch

from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import coherent as resnet
from amutheory.symbolic.resnet.init import K
from amutheory.course import check, section, show

warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated")
torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and immune to oversubscription
np.set_printoptions(linewidth=110, precision=4, suppress=True)
T0 = time.perf_counter()
ACTS = ("relu", "linear")


def spec_of(branch, init, activation="relu", **kw):
    return ArchSpec(family="resnet", branch=branch, init=init, activation=activation, **kw)



# ## 5c. The stream Jacobian's spread, derived: the exact law of a dense residual net
#
# The coherent order takes the stream Jacobian `P = prod (I + J_j)` to be the identity.  Keep it.
# In a *dense* net (kernel, spatial and batch 1) block `j`'s weight updates move the stream at its
# output along the stream gradient `g_j` there, so the stream's update before block `i + 1` is
# `u_i = M_i g_i` with `M_i = (I + J_i) M_{i-1} (I + J_i)^T + src_i I`.  At infinite width the blocks'
# weights are *free* (free probability), so two traces close the recursion:
# `m1 = tau(M)`, `m2 = tau(M^2)`, `|u_i|^2 / n = G_i m2_i`
# (`amutheory.symbolic.resnet.dense.block_recursion`):
#
#     m1' = (1 + eps^2) m1 + src,
#     m2' = (1 + eps^2)^2 m2 + lambda m1^2 + 2 (src (1 + eps^2) + src_cov) m1 + src^2 + src_var,
#
# with `lambda = tau(S^2) - tau(S)^2`, `S = (I + J)^T (I + J)`.  `src_cov` is the covariance of the
# block's source operator with its own `J J^T` (the first layer's update reaches the stream through
# `W_2 D^2 W_2^T`, which `J J^T` holds too); it is `O(1/K^2)` per block.  The coherent order is
# `lambda = 0`,
# which keeps `m2 = m1^2`.  But `lambda = 2 eps^2 + O(eps^4)` is of order `1/K` per block and
# multiplies `m1^2 ~ K^2`, over K blocks: an order-one change of `s`.  In the continuum `t = i/K`
# (`mu1 = m1/K`, `mu2 = m2/K^2`, `gamma = lim K eps^2`, `kappa(t) = lim src`) SymPy solves it.

# %%
section("5c. the spread in the continuum: conv-mlp / k-last / ReLU")
from amutheory.symbolic.resnet import dense as rd  # noqa: E402

t, gam = sp.symbols("t gamma", positive=True)
rec = rd.block_recursion("conv-mlp")
relu_moments = {rd.D2h: sp.Rational(1, 2), rd.D4h: sp.Rational(1, 2), rd.Mh: rd.c * rd.v1 * rd.q / 2}
kl = {rd.alpha: 1, rd.v1: 1, rd.v2: 1 / K, rd.c: 2}
gamma_kl = sp.limit(K * rec["eps2"].subs(relu_moments).subs(kl), K, sp.oo)
kappa_over_q = sp.limit(rec["src"].subs(relu_moments).subs(kl) / rd.q, K, sp.oo)
show("gamma", gamma_kl)
show("kappa", kappa_over_q * rd.q)
print("   (gamma = lim K eps^2, kappa = lim src;  the stream q(t) = q_0 e^(gamma t))")
mu1, mu2 = sp.Function("mu1"), sp.Function("mu2")
kappa = sp.exp(gam * t)  # src at block t K: q(t) / q_0
sol1 = sp.dsolve(sp.Eq(mu1(t).diff(t), gam * mu1(t) + kappa), ics={mu1(0): 0}).rhs
sol2 = sp.dsolve(sp.Eq(mu2(t).diff(t), 2 * gam * mu2(t) + 2 * gam * sol1**2 + 2 * kappa * sol1),
                 ics={mu2(0): 0}).rhs
spread_factor = sp.simplify(sol2 / sol1**2)
show("mu_1", sp.simplify(sol1))
show("mu_2", sp.simplify(sol2))
show("R_spread", spread_factor)
print("   (R_spread = mu_2 / mu_1^2; the coherent order: 1)")
# the first layer reads sigma_1 G_i m2: G_i ~ e^(gamma (1 - t)); the profile s(t)/s(1)
profile_expr = sp.simplify(sol2 * sp.exp(-gam * t) / (sol2 * sp.exp(-gam * t)).subs(t, 1))
coherent_expr = sp.simplify(sol1**2 * sp.exp(-gam * t) / (sol1**2 * sp.exp(-gam * t)).subs(t, 1))
xs_c = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
prof_cont = np.array([float(profile_expr.subs({gam: gamma_kl, t: x})) for x in xs_c])
prof_coh = np.array([float(coherent_expr.subs({gam: gamma_kl, t: x})) for x in xs_c])
K_big = 4096
lib_prof = rd.layer_moments(spec_of("conv-mlp", "k-last", depth=K_big, width=256, kernel=1, spatial=1, batch=1))
lib_prof = lib_prof[(xs_c * K_big).astype(int) - 1] / lib_prof[-1]
print(f"profile s_i/s_K at i/K = {xs_c}:")
print(f"  continuum, with spread : {np.round(prof_cont, 4)}")
print(f"  library, K = {K_big}      : {np.round(lib_prof, 4)}")
print(f"  coherent order         : {np.round(prof_coh, 4)}")

# %%
import matplotlib.pyplot as plt  # noqa: E402

x_fine = np.linspace(0.01, 1.0, 100)
f_cont = sp.lambdify(t, profile_expr.subs(gam, gamma_kl), "numpy")
f_coh = sp.lambdify(t, coherent_expr.subs(gam, gamma_kl), "numpy")
lib_full = rd.layer_moments(spec_of("conv-mlp", "k-last", depth=K_big, width=256, kernel=1, spatial=1, batch=1))
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(np.arange(1, K_big + 1) / K_big, lib_full / lib_full[-1], "-", lw=3, alpha=0.5,
        label=f"library recursion, K = {K_big}")
ax.plot(x_fine, f_cont(x_fine), "--", label="continuum with the spread")
ax.plot(x_fine, f_coh(x_fine), ":", label="coherent order")
ax.set(xlabel="block position t = i / K", ylabel="s_i / s_K",
       title="dense conv-mlp / k-last / ReLU: the spread steepens the profile")
ax.legend()

# %% [markdown]
# So `mu2 = mu1^2 (1 + 2 gamma t / 3)`: the spread multiplies the stream term by
# `1 + 2 gamma t / 3` (`gamma = 2` here: 2.33 at the last block), a function of `t = i/K` alone.
# It steepens the profile and leaves the exponent alone.  The discrete recursion of the library
# adds the first branch layer reading its own weights back through `g_{i-1} = g_i + J_i^T g_i`,
# the `O(eps^4)` part of `lambda` (`rho4`, the free-product rule) and the sources' spread and
# covariance.  Those are `O(1/K)`, but they are 82% of `s` at K = 2 and 39% at K = 8
# (1 - s_bar of the leading terms alone / s_bar, conv-mlp/k-last/ReLU).
#
# Measured on real dense nets (`amutheory measure` against `amutheory predict --constants derive`,
# `kernel = spatial = batch = 1`; `tests/test_resnet_dense.py` checks it), nothing is fitted.
# Conditioned on each seed's stem variance and head gradient, measured/law is 1 within the seeds'
# error and the `O(1/n)` terms the law leaves out, for every branch and convention it covers, while
# the coherent order misses the deepest quarter of the blocks by a large factor.  README
# "Residual networks", "The spread, derived, for dense nets", reports the measured ratios.
#
# Not covered by this free law:
# * `preact` with ReLU: its stream masks `phi'(x)` persist from block to block, so `M` is not free
#   of them.  The free law comes out low where the stream grows (README, same bullet); part 08
#   derives the law that carries the persistence.
# * Spatial nets: the campaign's `kernel = 3, spatial = 8` profile is steeper still.  The stream's
#   position-position correlation grows along depth (ReLU means), and the position sums of the
#   sources grow with it.
# * Batches: with `c_in k = 3` input features the samples' streams are correlated at order one, so
#   each sample's update moves the others through the shared weights (measured: `B^2 s` is well
#   above the single-sample law for linear conv-mlp at B = 8, not equal to it; README, same
#   bullet).  The profile's shape does not change.

# %% [markdown]
# ## 5d. Spatial and batched nets: what carries over from the dense law
#
# The campaign's nets have `kernel = 3`, 8 positions and a batch of 8.  Every operator of the dense
# law then acts on positions and samples too.  Two facts keep the bookkeeping small.
#
# * **The head's gradient is the zero mode.**  GAP gives every position of a sample the same
#   gradient, and the transpose of a *circular* conv keeps a constant-over-positions signal
#   constant (`W^T 1 = (sum_t W_t^T) 1`).  So for linear branches the stream gradient stays in the
#   zero mode at every block, where a k-tap conv acts like one dense matrix of the same variance.
# * **A conv averages the kernel along its offsets.**  With independent taps, the covariance of
#   `W * x` at positions `(p, p')` is `(1/k) sum_t K(p + t, p' + t)`: only entries at the same
#   offset `p - p'` enter (SymPy below).  No correlation is carried to a new offset, and the
#   offset sums that the sources read are scaled the same way at every block.
#
# What does not carry over is the *size* of the sums.  Each source `Delta W x` reads the kernel
# summed over positions and samples, `sum_b K(a, b) g_b`, and the two parts of the dense law --
# the stream's update as read by `W_1` (`part="stream"`) and the layer's own update
# (`part="own"`) -- read it differently.  Measured on linear conv-mlp / k-last nets, the per-block
# ratio spatial / dense falls from the first quarter of the blocks to the last, and its block
# average falls with K (README "Residual networks", the `dense-shape` bullet, reports the ratios).
# So one common factor does not hold; one per part may.
#
# The **dense-shape law** (`amutheory.symbolic.resnet.dense.shape_predictor`, `predict --law
# dense-shape`) takes each part's K-dependence from the dense law (spread, read-back, source
# covariance: derived) and one calibrated factor per part: two constants where the coherent order
# has three (`A, B, e0`).  That the factors are the same at every block is an assumption, not a
# result: the kernel's averaging and (ReLU) the branch means change them along the stream as
# functions of `i / K`.  That moves the `O(1/K)` terms, not the exponent, which is the dense
# law's and so the coherent order's.  The campaign's held-out depths are its test: calibrated on
# K = 2..64 and held out at 128 and 256, for the stable conventions the dense law covers; the
# campaign's `report.md` counts its passes beside the coherent order's, and README "Residual
# networks" (the `dense-shape` bullet) reports them at n = 64 and 128 -- both laws miss low where
# K/n is large (finite width).  Its one clear failure is the single-layer ReLU `conv` branch
# (k-squared), whose non-zero branch mean the spatial sums weight far more than the dense net does.

# %%
section("5d. spatial sums: the conv's covariance map keeps offsets; the zero mode survives W^T")
n_pos, taps = 6, 3
Kp = sp.Matrix(n_pos, n_pos, lambda a, b: sp.Symbol(f"K_{a}{b}"))
S_map = sp.Matrix(n_pos, n_pos, lambda a, b: sp.Rational(1, taps) * sum(
    Kp[(a + t_) % n_pos, (b + t_) % n_pos] for t_ in range(taps)))
offset_of = {Kp[a, b]: (a - b) % n_pos for a in range(n_pos) for b in range(n_pos)}
offsets_kept = all({offset_of[sym] for sym in S_map[a, b].free_symbols} == {(a - b) % n_pos}
                   for a in range(n_pos) for b in range(n_pos))
offset_sums_kept = all(sp.expand(sum(S_map[a, (a - d) % n_pos] - Kp[a, (a - d) % n_pos] for a in range(n_pos))) == 0
                       for d in range(n_pos))
print(f"every entry of S(K) at offset d holds only entries of K at offset d: {offsets_kept}")
print(f"the offset sums sum_a K(a, a - d) are unchanged by S: {offset_sums_kept}")
gen = torch.Generator().manual_seed(5)
w_conv = torch.randn(16, 16, taps, generator=gen, dtype=torch.float64)


def circular_conv(x):
    """The nets' circular k-tap conv (``amutheory.measure.resnet``): circular padding, then a valid conv."""
    return torch.nn.functional.conv1d(torch.nn.functional.pad(x, (1, 1), mode="circular"), w_conv)


x_any = torch.randn(1, 16, 12, generator=gen, dtype=torch.float64)
g_const = torch.randn(1, 16, 1, generator=gen, dtype=torch.float64).expand(1, 16, 12)  # one vector per position
back = torch.func.vjp(circular_conv, x_any)[1](g_const)[0]  # W^T g, the exact transpose (autograd)
zero_mode_gap = float((back - back.mean(-1, keepdim=True)).abs().max())
dense_gap = float((back[0, :, 0] - w_conv.sum(-1).T @ g_const[0, :, 0]).abs().max())
print(f"circular W^T of a constant-over-positions gradient: max deviation from constant = {zero_mode_gap:.1e}; "
      f"from (sum_t W_t)^T g = {dense_gap:.1e}")
twin_spec = spec_of("conv-mlp", "k-last", depth=32, width=64, kernel=1, spatial=1, batch=1)
part_stream = rd.layer_moments(twin_spec, part="stream")
part_own = rd.layer_moments(twin_spec, part="own")
print("dense twin, conv-mlp/k-last/ReLU, K = 32: share of the own part at blocks 1, 8, 16, 32:",
      np.round((part_own / (part_stream + part_own))[[0, 7, 15, 31]], 3))
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(np.arange(1, 33), part_own / (part_stream + part_own), "o-", label="own part / (own + stream)")
ax.set(xlabel="block i", ylabel="share of s_i", title="dense twin, conv-mlp / k-last / ReLU, K = 32: the own part")
ax.legend()
shape_fn = rd.shape_predictor(spec_of("conv-mlp", "k-last", width=64, kernel=3, spatial=8, batch=8))
big = shape_fn([4096, 8192], 1.0, 0.5)
shape_slope = -0.5 * math.log(big[1] / big[0]) / math.log(2)
print(f"dense-shape law (rho_stream = 1, rho_own = 1/2): local slope of eta* at K = 4096..8192 = {shape_slope:.4f} "
      f"(derived exponent {resnet.resnet_law(spec_of('conv-mlp', 'k-last')).exponent})")

# %% [markdown]

# %% [markdown]
# ## Checks: the continuum against the library's discrete recursion, and the parts against the whole

# %%
section("checks")
# section 5c: the continuum solution is mu1^2 (1 + 2 gamma t/3) (exact SymPy identity); gamma = 2
# for conv-mlp/k-last/ReLU at c = 2; the library's discrete recursion at K = 4096 approaches the
# continuum profile (own-term and grid corrections O(1/K) ~ 1e-3 at x = 0.2; 1% is loose on
# purpose; the coherent order's shape is 13% (x = 0.8) to 84% (x = 0.2) above it)
check("continuum solution", sp.simplify(spread_factor - (1 + 2 * gam * t / 3)) == 0 and gamma_kl == 2
      and kappa_over_q == 1, "mu1^2 (1 + 2 gamma t / 3), gamma = 2")
check("discrete recursion -> continuum", np.allclose(lib_prof, prof_cont, rtol=0.01), "rtol 0.01 at K = 4096")
check("coherent order overestimates the profile", np.all(prof_coh[:-1] > 1.1 * prof_cont[:-1]), "> 10%")
# section 5d: a k-tap covariance map keeps every offset and its sum (exact, SymPy); the circular
# transpose keeps the zero mode (float64 rounding of 48-term sums: 1e-12); the two parts add up to
# the dense law and the own part fades along the stream (90% of the first block's s, 8% of the
# last block's at K = 32); the dense-shape law's local slope at K ~ 6000 is within 0.02 of the
# derived exponent (the 1/K terms are ~1e-3 there)
check("offsets and the zero mode are kept", offsets_kept and offset_sums_kept and zero_mode_gap < 1e-12
      and dense_gap < 1e-12, f"gaps {zero_mode_gap:.1e}, {dense_gap:.1e}")
np.testing.assert_allclose(part_stream + part_own, rd.layer_moments(twin_spec), rtol=1e-12)
check("own part fades along the stream",
      part_own[0] / (part_stream[0] + part_own[0]) > 0.5 > part_own[-1] / (part_stream[-1] + part_own[-1]))
check("dense-shape local slope -> derived exponent",
      abs(shape_slope - float(resnet.resnet_law(spec_of("conv-mlp", "k-last")).exponent)) < 0.02,
      f"{shape_slope:.4f}")
print(f"(ran in {time.perf_counter() - T0:.1f} s)")
print("all derivation checks passed")
