# %% [markdown]
# # Residual nets II: the coherent depth law and the Depth-muP equivalence
#
# Run with `python derivations/06_residual_coherent_law.py` (or open it as a notebook: `jupytext --to notebook
# derivations/06_residual_coherent_law.py`).  It teaches the one-step update of a residual net at coherent leading order (power counting per convention), why Depth-muP is a reparametrisation, and what a small real measurement shows.
#
# **Assumes:** part 05 (which conventions are forward-stable); part 01's one-step moment.
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

from amutheory import api
from amutheory.measure.resnet import ResidualConvNet
from amutheory.spec import BRANCHES, INITS, ArchSpec
from amutheory.symbolic.resnet import coherent as resnet
from amutheory.symbolic.resnet.init import BRANCH_LAYERS, K, branch_multiplier, layer_variance_factors
from amutheory.symbolic.primitives.symbols import L
from amutheory.course import check, section, show

warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated")
torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and immune to oversubscription
np.set_printoptions(linewidth=110, precision=4, suppress=True)
T0 = time.perf_counter()
ACTS = ("relu", "linear")


def spec_of(branch, init, activation="relu", **kw):
    return ArchSpec(family="resnet", branch=branch, init=init, activation=activation, **kw)



# ## 3. The one-step update at coherent leading order
#
# Train one SGD step from the init.  For a forward-stable convention the stream Jacobian
# `prod (I + alpha J_branch)` stays bounded, so (to leading order) the loss gradient at the
# stream, `g_x`, is the same at every block, and every weight update moves the stream *along*
# `g_x`.  In units of `eta |x|^2 g_x`:
#
# * **coherent stream change, `alpha^2 C` per block.**  Block j's output is `alpha y_j`; its
#   weights get gradient `alpha (...) g_x`, and the update moves `alpha y_j` by `alpha^2` times
#   the product of the *other* layers' variance factors (they carry the update to the branch
#   output): `C = sum_i prod_{j != i} v_j` (`conv`: 1; two layers: `v_1 + v_2`).  Blocks add up:
#   `Delta x_{i-1} = e0 + alpha^2 C (i - 1)`, e0 from the stem.
# * **read-out by the first layer.**  Block i's first pre-activation `h_i = W_1 x_{i-1}` sees
#   `W_1 Delta x_{i-1}`, of second moment `v_1 |Delta x_{i-1}|^2`.
# * **own update.**  `W_1`'s own step moves `h_i` by `eta |x|^2 g_h`; `g_h` reaches `h_i` through
#   the later branch layers and `alpha`: `alpha^2 prod_{j > 1} v_j`.
# * `preact` nets also feed the stream itself into `phi`: one more pre-activation per block,
#   `|Delta x_{i-1}|^2` (no `v_1`).
#
# So `s_i = A alpha^2 prod_{j>1} v_j + B v_1 (e0 + alpha^2 C (i-1))^2 [+ B (e0 + alpha^2 C (i-1))^2]`
# with constants A, B, e0 (calibrated), and `s_bar(K)` is the mean over the pre-activations.
# We build `s_i` from generic symbols, sum it in SymPy and compare with the library.
#
# **What e0 really is.**  Summed over blocks, the stream term is a polynomial in K; `e0` only
# enters its *second* power, at relative order `1/K`.  The coherent order leaves out terms of the
# same relative order (the spectral spread of `prod (I + alpha J_branch)`: variance `O(1/K)` per
# block, `O(1)` over the whole stack; the branch reading its own weights back through `g_x`; the
# stem and block displacements not being parallel), whose signs this derivation does not fix.  So
# calibrations fit `e0` with either sign: the effective first finite-K correction.  The exponent,
# read off the leading power, does not depend on it (section 6 checks it for e0 = -1, 0, 2).

# %%
section("3. one-step update: the coherent sum s_bar(K)")
A, B, e0, i = resnet.A_res, resnet.B_res, resnet.e0, resnet.i_blk
v1, v2, alpha, C_sym = sp.symbols("v1 v2 alpha C", positive=True)
own_generic = {1: alpha**2, 2: alpha**2 * v2}
C_generic = {1: sp.Integer(1), 2: v1 + v2}


def hand_block_moment(branch, init):
    n = BRANCH_LAYERS[branch]
    stream = (e0 + alpha**2 * C_generic[n] * (i - 1)) ** 2
    s_i = A * own_generic[n] + B * v1 * stream + (B * stream if branch == "preact" else 0)
    v = layer_variance_factors(init, branch)
    subs = {alpha: branch_multiplier(init), v1: v[0]}
    if n == 2:
        subs[v2] = v[1]
    return sp.expand(s_i.subs(subs))


def hand_mean_moment(branch, init):
    per = 2 if branch == "preact" else 1
    return sp.simplify(sp.summation(hand_block_moment(branch, init), (i, 1, K)) / (per * K))


print("generic block moment (two-layer branch):")
show("s_i", A * own_generic[2] + B * v1 * (e0 + alpha**2 * C_generic[2] * (i - 1)) ** 2)
for branch, init in (("conv-mlp", "k-last"), ("conv-mlp", "k-all"), ("preact", "k-all")):
    print(f"  s_bar(K), {branch}/{init}:")
    show("sbar_" + branch.replace("-", "") + "_" + init.replace("-", ""), sp.factor(hand_mean_moment(branch, init)))

# %% [markdown]
# **Power counting.**  Write `D = alpha^2 C K` (the whole coherent stream change).  The mean of
# `(e0 + D i/K)^2` over the blocks is `~ D^2/3` when `D` grows and `O(1)` when it does not, so
#
# `s_bar ~ max( alpha^2 prod_{j>1} v_j ,  v_1 max(D, 1)^2 ,  [preact] max(D, 1)^2 )`,
#
# i.e. `s_bar ~ v_1 alpha^4 C^2 K^2` when the coherent read-out wins, and `eta* = sqrt(C/s_bar)`
# has exponent `-(1/2)` times the power of K.  By hand, convention by convention (ReLU and linear
# give the same law; the activation only decides stability):
#
# | branch   | init            | own            | alpha^2 C | D     | v_1   | s_bar            | exponent |
# |----------|-----------------|----------------|-----------|-------|-------|------------------|----------|
# | conv-mlp | k-last          | 1/K            | 1 + 1/K   | K     | 1     | K^2              | -1       |
# | conv-mlp | k-all           | 1/K            | 2/K       | 2     | 1/K   | 1/K              | +1/2     |
# | conv-mlp | k-squared       | 1/K^2          | 1 + 1/K^2 | K     | 1     | K^2              | -1       |
# | conv-mlp | sqrt-multiplier | 1/K            | 2/K       | 2     | 1     | 1                | 0        |
# | conv-mlp | none            | 1              | 2         | 2K    | 1     | K^2              | -1       |
# | preact   | k-last          | 1/K            | 1 + 1/K   | K     | 1     | K^2 (both)       | -1       |
# | preact   | k-all           | 1/K            | 2/K       | 2     | 1/K   | 1 (stream term)  | 0        |
# | preact   | k-squared       | 1/K^2          | 1 + 1/K^2 | K     | 1     | K^2              | -1       |
# | preact   | sqrt-multiplier | 1/K            | 2/K       | 2     | 1     | 1                | 0        |
# | preact   | none            | 1              | 2         | 2K    | 1     | K^2              | -1       |
# | conv     | k-last, k-all   | 1              | 1         | K     | 1/K   | K                | -1/2     |
# | conv     | k-squared       | 1              | 1         | K     | 1/K^2 | 1 (own term)     | 0        |
# | conv     | sqrt-multiplier | 1/K            | 1/K       | 1     | 1     | 1                | 0        |
# | conv     | none            | 1              | 1         | K     | 1     | K^2              | -1       |

# %%
HAND_EXPONENT = {  # the table above, typed from the power counting (not from the library)
    ("conv-mlp", "k-last"): sp.Rational(-1), ("conv-mlp", "k-all"): sp.Rational(1, 2),
    ("conv-mlp", "k-squared"): sp.Rational(-1), ("conv-mlp", "sqrt-multiplier"): sp.Integer(0),
    ("conv-mlp", "none"): sp.Rational(-1),
    ("preact", "k-last"): sp.Rational(-1), ("preact", "k-all"): sp.Integer(0),
    ("preact", "k-squared"): sp.Rational(-1), ("preact", "sqrt-multiplier"): sp.Integer(0),
    ("preact", "none"): sp.Rational(-1),
    ("conv", "k-last"): sp.Rational(-1, 2), ("conv", "k-all"): sp.Rational(-1, 2),
    ("conv", "k-squared"): sp.Integer(0), ("conv", "sqrt-multiplier"): sp.Integer(0),
    ("conv", "none"): sp.Rational(-1),
}


def power(expr):
    """Leading power of K of a positive expression."""
    return sp.limit(sp.log(expr) / sp.log(K), K, sp.oo)


def power_count_exponent(branch, init):
    """The same table, by the power-counting rule applied to the resnet_init formulas."""
    co = resnet.branch_coefficients(branch, init)
    p_own = power(co["own"])
    p_read_stream = 2 * sp.Max(power(co["alpha"] ** 2 * co["C"] * K), 0)
    candidates = [p_own, power(co["v"][0]) + p_read_stream] + ([p_read_stream] if branch == "preact" else [])
    return -sp.Max(*candidates) / 2


def limit_exponent(expr):
    return sp.nsimplify(-sp.limit(sp.cancel(L * sp.diff(expr, L) / expr), L, sp.oo) / 2)


print(f"\n{'branch':8s} {'init':16s} {'own':>8s} {'alpha^2 C':>10s} {'v_1':>6s} {'hand':>6s} "
      f"{'counted':>8s} {'library':>8s}   relu       linear")
for branch in BRANCHES:
    for init in INITS:
        co = resnet.branch_coefficients(branch, init)
        lib = limit_exponent(resnet.mean_moment(branch, init))
        stab = ["stable" if resnet.forward_analysis(spec_of(branch, init, act))["forward_stable"] else "UNSTABLE"
                for act in ACTS]
        print(f"{branch:8s} {init:16s} {sp.sstr(co['own']):>8s} {sp.sstr(sp.simplify(co['alpha']**2 * co['C'])):>10s} "
              f"{sp.sstr(co['v'][0]):>6s} {sp.sstr(HAND_EXPONENT[branch, init]):>6s} "
              f"{sp.sstr(power_count_exponent(branch, init)):>8s} {sp.sstr(lib):>8s}   {stab[0]:10s} {stab[1]}")

# %% [markdown]
# **No stable convention gives -3/2.**  The stable exponents are -1, -1/2, 0 and +1/2:
#
# * ReLU: `conv-mlp` and `preact` give -1 (`k-last`, `k-squared`), 0 (`sqrt-multiplier`;
#   `preact`/`k-all`) and +1/2 (`conv-mlp`/`k-all`); the ReLU `conv` branch is stable only with
#   `k-squared`, exponent 0.
# * linear: the same for `conv-mlp`/`preact`; the linear `conv` branch is stable with `k-last`
#   and `k-all` too, exponent -1/2.
#
# Why not -3/2: `eta* ~ K^(-3/2)` needs `s_bar ~ K^3`.  In a conv chain that `L^3` comes from the
# *fluctuation* of the Jacobian product `J J^T`, whose variance grows with the number of layers
# two paths share (weight `b (l - m)`).  Here the largest term is the coherent one,
# `v_1 alpha^4 C^2 K^2`, and in all five conventions `v_j <= 1` and `alpha <= 1`, so
# `alpha^2 C = O(1)` per block, `D = O(K)` and `s_bar = O(K^2)`: eta* can fall at most like 1/K.
# The Jacobian fluctuations are left out at this order (the library's assumption): for a stable
# convention each block perturbs `I` by `O(1/sqrt(K))` in variance terms, so the whole product's
# spread stays bounded and cannot add a power of K.  The residual stream turns the chain's `L^3`
# into at most `K^2`.  (The power counting is only as good as the coherent picture; an exotic
# init with some `v_j` growing in K would need its own check.)

# %% [markdown]
# ## 4. The Depth-muP equivalence (ReLU is positively homogeneous)
#
# For `conv` with the `sqrt-multiplier`: `alpha phi(w x) = phi(w x / sqrt(K))` for ReLU, so it is
# the *same function* as `k-last`'s `phi(W x)` with `W = w / sqrt(K)` -- and the two inits draw
# the same distribution.  For SGD, `W = w/sqrt(K)` gives `grad_w = grad_W / sqrt(K)`, so
# `W_1 = W_0 - eta grad_W` is `w_1 = w_0 - (eta K) grad_w`: k-last's branch weights at learning
# rate `eta` are the sqrt-multiplier's branch weights at `eta K` (stem and head unchanged, at
# `eta`).  What differs is what the AM-muP probe looks at: k-last's pre-activation
# `W x = (w x)/sqrt(K)` is `sqrt(K)` times smaller.  Checked on the torch model (width 16, K = 3):

# %%
section("4. Depth-muP: conv/sqrt-multiplier == conv/k-last, lr eta*K on the branch")
blocks, eta = 3, 1e-2  # K = 3: sqrt(K) is not a power of two, so the rescaling really rounds
sp_sm = spec_of("conv", "sqrt-multiplier", width=16, spatial=6, batch=4, depth=blocks)
sp_kl = sp_sm.with_(init="k-last")
gen = torch.Generator().manual_seed(3)
net_sm = ResidualConvNet(sp_sm, generator=gen)
net_kl = ResidualConvNet(sp_kl, generator=gen)
with torch.no_grad():  # same underlying w: W = w / sqrt(K) on the branch, stem and head shared
    net_kl.stem.weight.copy_(net_sm.stem.weight)
    net_kl.head.weight.copy_(net_sm.head.weight)
    for f_kl, f_sm in zip(net_kl.first, net_sm.first):
        f_kl.weight.copy_(f_sm.weight / math.sqrt(blocks))
x = torch.randn((sp_sm.batch, sp_sm.input_channels, sp_sm.spatial), generator=gen, dtype=torch.float64)
r = torch.randn((sp_sm.batch, sp_sm.outputs), generator=gen, dtype=torch.float64)


def preacts_and_out(net):
    with torch.no_grad():
        hs, out = net.preactivations(x)
    return hs, out


def sgd_step(net, branch_lr, other_lr):
    loss = (net(x) * r).sum(-1).mean()
    net.zero_grad()
    loss.backward()
    branch = list(net.first.parameters())
    others = [p for n_, p in net.named_parameters() if not n_.startswith("first.")]
    torch.optim.SGD([{"params": branch, "lr": branch_lr}, {"params": others, "lr": other_lr}]).step()


hs_sm, out_sm = preacts_and_out(net_sm)
hs_kl, out_kl = preacts_and_out(net_kl)
out_gap0 = (out_sm - out_kl).abs().max().item()
ratio0 = [(a_.norm() / b_.norm()).item() for a_, b_ in zip(hs_sm, hs_kl)]
print(f"init: max |f_sqrt - f_klast| = {out_gap0:.1e};  h_sqrt / h_klast per block = {np.round(ratio0, 12)}"
      f"  (sqrt(K) = {math.sqrt(blocks)})")
naive = ResidualConvNet(sp_sm, generator=torch.Generator().manual_seed(0))
naive.load_state_dict(net_sm.state_dict())
sgd_step(net_kl, eta, eta)                   # k-last, lr eta everywhere
sgd_step(net_sm, eta * blocks, eta)          # sqrt-multiplier, lr eta K on the branch
sgd_step(naive, eta, eta)                    # sqrt-multiplier, lr eta everywhere (not equivalent)
hs_sm1, out_sm1 = preacts_and_out(net_sm)
hs_kl1, out_kl1 = preacts_and_out(net_kl)
_, out_naive = preacts_and_out(naive)
out_gap1 = (out_sm1 - out_kl1).abs().max().item()
dh_ratio = [((a1 - a0).norm() / (b1 - b0).norm()).item() for a0, a1, b0, b1 in zip(hs_sm, hs_sm1, hs_kl, hs_kl1)]
print(f"after one step: max |f_sqrt(eta K on branch) - f_klast(eta)| = {out_gap1:.1e};  "
      f"with eta everywhere instead: {(out_naive - out_kl1).abs().max().item():.1e}")
print(f"|Delta h_sqrt| / |Delta h_klast| per block = {np.round(dh_ratio, 10)}")

# %% [markdown]
# So the AM-muP moment of k-last at learning rate `eta` is `1/K` times the sqrt-multiplier's at
# branch learning rate `eta K`: `eta^2 s_kl(K) = (eta K)^2 s_sm(K) / K`, hence
# `eta*_kl = eta*_sm / sqrt(K)` with the absolute AM-muP criterion, and `eta*_kl = eta*_sm / K` if
# one instead fixed the *relative* change `Delta h / h` (Depth-muP's criterion: the k-last
# pre-activations are `sqrt(K)` smaller).  Both are visible in the table: the linear `conv`
# branch has exponent 0 with the sqrt-multiplier and `0 - 1/2 = -1/2` with k-last.  docs/theory.md's
# "Depth-muP suggests 1/K" is the relative criterion; AM-muP's absolute one gives `K^(-1/2)`
# here.  (For ReLU this `conv` pair is forward-unstable, so neither has a power law, but the
# equivalence itself holds exactly.)  For two-layer branches no homogeneity is needed:
# `alpha W_2 phi(W_1 x) = (W_2/sqrt(K)) phi(W_1 x)`, i.e. sqrt-multiplier = k-last with only `W_2`
# rescaled -- which is why `conv-mlp` k-last (-1) and sqrt-multiplier (0) differ by a whole power:
# k-last at lr `eta` is the sqrt-multiplier with `W_2` at `eta K`, and `W_2`'s update is what
# moves the stream.

# %% [markdown]
# ## 5. A small measurement
#
# `api.measure` (the exact first-order probe) at width 32, spatial 6, K = 2, 4, 8, 16, 12 seeds,
# for the two conventions whose derived exponents have opposite signs: `conv-mlp`/`k-all`
# (+1/2) and `preact`/`k-squared` (-1).  Local slopes `d ln eta*/d ln K` between neighbouring K:

# %%
section("5. measured eta*(K): width 32, spatial 6, 12 seeds")
measured = {}
for branch, init in (("conv-mlp", "k-all"), ("preact", "k-squared")):
    t_start = time.perf_counter()
    meas = api.measure(spec_of(branch, init, width=32, spatial=6, depth=2), [2, 4, 8, 16], 12)
    summ = meas.summary()
    eta_mean = np.array(summ["eta_star_mean"])
    ks = np.array(meas.depths, dtype=float)
    slopes = np.diff(np.log(eta_mean)) / np.diff(np.log(ks))
    fit, (lo, hi) = meas.fitted_exponent("mean")
    measured[branch, init] = (eta_mean, slopes, fit, lo, hi)
    print(f"{branch}/{init}: eta* (mean over seeds) = {np.round(eta_mean, 4)}")
    print(f"   local slopes (K 2-4, 4-8, 8-16) = {np.round(slopes, 2)};  fit {fit:+.2f} [{lo:+.2f}, {hi:+.2f}];  "
          f"derived exponent {HAND_EXPONENT[branch, init]}   ({time.perf_counter() - t_start:.1f} s)")

# %% [markdown]
# What to read off (at this small size): the sign of the trend, as derived -- eta* *grows* with K
# for `conv-mlp`/`k-all` and falls for `preact`/`k-squared` (the checks assert only that).  The
# magnitudes printed above are not the asymptotic exponents: with 12 seeds the local slopes scatter
# from one pair of K to the next, and the fits over K = 2..16 carry the finite-K corrections of the
# law (the `1/K` terms of `s_bar`) and of the stream profile, which are still large at K <= 16.
# This is a sign check, not a measurement of the exponents (the residual campaign measures them:
# `amutheory validate --preset resnet-wide`, README "Residual networks").

# %%
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(6, 4))
for (branch, init), (eta_mean, _slopes, _fit, _lo, _hi) in measured.items():
    ax.loglog([2, 4, 8, 16], eta_mean, "o-", label=f"{branch}/{init} (derived K^{HAND_EXPONENT[branch, init]})")
ax.set(xlabel="blocks K", ylabel="eta* (mean over seeds)", title="measured eta*(K): the sign of the trend")
ax.legend()

# %% [markdown]
# ## 5b. Block by block: the profile behind s_bar
#
# `s_bar` is a mean over blocks.  The law's term for block `i` (the first branch layer's
# pre-activation, `resnet.read_moment`) is `A alpha^2 prod_{j>1} v_j + B v_1 (e0 + alpha^2 C (i-1))^2`.
# Once K is large it depends on `i` only through `x = i/K`, times a power of K.  The *power* is
# what power counting reads off (sections 3, 4).  The *shape* `F(x) = s_i / s_K` is what the
# law's finite-K terms stand on.  `resnet.read_profile` evaluates it, mean-field stream weights
# included.

# %%
section("5b. per-block profile s_i / s_K of the law at i/K = 0.2 .. 1 (A = 0, B = 1, e0 = 0)")
xs = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
law_shape = {}
for branch, init in (("conv-mlp", "k-squared"), ("conv-mlp", "k-last"), ("conv-mlp", "sqrt-multiplier")):
    for kb in (64, 256, 1024):
        prof = resnet.read_profile(spec_of(branch, init, depth=kb), kb, 0.0, 1.0, 0.0)
        law_shape[branch, init, kb] = prof[(xs * kb).astype(int) - 1] / prof[-1]
    print(f"{branch}/{init}: " + "   ".join(f"K = {kb}: {np.round(law_shape[branch, init, kb], 4)}"
                                           for kb in (64, 256, 1024)))

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for branch, init in (("conv-mlp", "k-squared"), ("conv-mlp", "k-last"), ("conv-mlp", "sqrt-multiplier")):
    for kb, style in ((64, ":"), (1024, "-")):
        ax.plot(xs, law_shape[branch, init, kb], "o" + style, label=f"{init}, K = {kb}")
ax.plot(xs, xs**2, "k--", label="x^2")
ax.set(xlabel="block position x = i / K", ylabel="s_i / s_K", title="conv-mlp / ReLU: the law's per-block profile")
ax.legend(fontsize=8)

# %% [markdown]
# With `A = e0 = 0` the law's shape is `((i - 1)/(K - 1))^2` times the stream weights.  For
# `k-squared` the weights are flat (the stream stays at `q_0`), so it is `x^2`.  For `k-last` and
# `sqrt-multiplier` the ReLU stream grows by `e^2` along the net (section 1), which steepens
# it.  As K grows the shape settles to a function of `i/K`; the `(i - 1)/(K - 1)` grid moves
# it by `O(1/(x K))` (28% at x = 0.2, K = 64; about 3% from K = 256 to 1024).
#
# What the measurement says (`amutheory validate --preset resnet-wide`: the report's
# `block_profile`, whose figures README "Residual networks" quotes under "the per-block profile"):
# * The measured shape is also a function of `i/K` alone (the deepest K agree).  That is why the
#   derived exponents hold.
# * For `k-squared` two-layer branches it follows the calibrated law.
# * For `k-last` and `sqrt-multiplier` with ReLU it is steeper than the law (a larger local
#   power).  There each block's branch Jacobian has variance `1/K`, so the stream Jacobian
#   `prod (I + alpha J)` has an O(1) spread that the coherent order leaves out.  Under
#   `k-squared` the variance is `1/K^2` and the spread vanishes.  Deriving it is the open step
#   toward an exact residual law.

# %% [markdown]

# %% [markdown]
# ## Checks: hand power counting against the library's law, Depth-muP in float64, and a real probe

# %%
section("checks")
for branch in BRANCHES:
    for init in INITS:
        lib = resnet.mean_moment(branch, init)
        # exponents: SymPy limit of the library's s_bar == hand table == power counting
        assert limit_exponent(lib) == HAND_EXPONENT[branch, init], (branch, init)
        assert power_count_exponent(branch, init) == HAND_EXPONENT[branch, init], (branch, init)
        # e0 (fitted with either sign) is a finite-K term: the exponent is the same for any e0
        assert all(limit_exponent(lib.subs(e0, v)) == HAND_EXPONENT[branch, init] for v in (-1, 0, 2)), (branch, init)
        # the library's s_bar(K) is the sum built here from the generic block moment
        assert sp.simplify(lib - hand_mean_moment(branch, init).subs(K, L)) == 0, (branch, init)
        # K = 1: one block, s_bar = block moment at i = 1, K = 1 over the pre-activation count
        one = resnet.block_moment(branch, init).subs({i: 1, K: 1}) / resnet.preactivations_per_block(branch)
        assert sp.simplify(lib.subs(L, 1) - one) == 0, (branch, init)
check("exponents: hand table = power counting = limit of the library's s_bar", True,
      f"{len(BRANCHES) * len(INITS)} (branch, init) pairs, any e0")
# the forward-stable conventions (derived by hand in part 05, checked there against the recursion)
stable = {(b, i_, act): resnet.forward_analysis(spec_of(b, i_, act, depth=3))["forward_stable"]
          for b in BRANCHES for i_ in INITS for act in ACTS}
for (branch, init, act), ok in stable.items():
    if ok:
        assert api.derive(spec_of(branch, init, act)).exponent == HAND_EXPONENT[branch, init]
# the stable exponents: no -3/2 anywhere
stable_exps = {HAND_EXPONENT[b, i_] for (b, i_, act), ok in stable.items() if ok}
check("stable exponents are -1, -1/2, 0, 1/2 (never the chain's -3/2)",
      stable_exps == {sp.Rational(-1), sp.Rational(-1, 2), sp.Integer(0), sp.Rational(1, 2)}
      and sp.Rational(-3, 2) not in stable_exps, str(sorted(stable_exps)))
# Depth-muP equivalence (float64: 1e-12 covers rounding of O(1) outputs through 3 blocks)
check("Depth-muP equivalence on real nets", out_gap0 < 1e-12 and out_gap1 < 1e-12
      and np.allclose(ratio0, math.sqrt(blocks), rtol=1e-12) and np.allclose(dh_ratio, math.sqrt(blocks), rtol=1e-9),
      f"output gaps {out_gap0:.1e}, {out_gap1:.1e}")
check("plain eta is not equivalent", (out_naive - out_kl1).abs().max().item() > 1e3 * max(out_gap1, 1e-15))
# section 5b: the law's per-block shape settles to a function of i/K (the grid's O(1/(x K)) shift
# is ~2.5% at x = 0.2 from K = 256 to 1024, so 4%), and is x^2 for k-squared, whose stream stays at
# q_0 (weights flat to O(1/K); (i-1)/(K-1) vs x at i = 0.2 K = 204: 1.5%), with e0 = A = 0
for key in {(b, i_) for b, i_, _ in law_shape}:
    assert np.allclose(law_shape[(*key, 256)], law_shape[(*key, 1024)], rtol=0.04), key
check("k-squared profile is x^2", np.allclose(law_shape["conv-mlp", "k-squared", 1024], xs**2, rtol=0.02), "rtol 0.02")
# measurement: only the sign of the trend (clearly supported: every local slope has it)
check("measured eta* rises with K for conv-mlp/k-all",
      np.all(measured["conv-mlp", "k-all"][1] > 0) and measured["conv-mlp", "k-all"][3] > 0,
      f"local slopes {np.round(measured['conv-mlp', 'k-all'][1], 2)}")
check("measured eta* falls with K for preact/k-squared",
      np.all(measured["preact", "k-squared"][1] < 0) and measured["preact", "k-squared"][4] < 0,
      f"local slopes {np.round(measured['preact', 'k-squared'][1], 2)}")
print(f"(ran in {time.perf_counter() - T0:.1f} s)")
print("all derivation checks passed")
