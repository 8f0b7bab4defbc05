# %% [markdown]
# # Residual nets IV: `preact` with ReLU, the stream's masks persist
#
# Run with `python derivations/08_residual_preact_masks.py` (or open it as a notebook: `jupytext --to notebook
# derivations/08_residual_preact_masks.py`).  It teaches where the free law of part 07 fails: a `preact` block's ReLU masks sit on the stream itself, so they are correlated across blocks (the orthant probability of a random walk).
#
# **Assumes:** part 07 (the free law and `amutheory.symbolic.resnet.dense`).
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

from amutheory.spec import INITS, ArchSpec
from amutheory.symbolic.resnet import coherent as resnet
from amutheory.course import check, section, show

warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated")
torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and immune to oversubscription
np.set_printoptions(linewidth=110, precision=4, suppress=True)
T0 = time.perf_counter()
ACTS = ("relu", "linear")


def spec_of(branch, init, activation="relu", **kw):
    return ArchSpec(family="resnet", branch=branch, init=init, activation=activation, **kw)



from amutheory.symbolic.resnet import dense as rd  # noqa: E402

# ## 5e. `preact` with ReLU: the stream's masks persist
#
# A `preact` block reads the stream through its own ReLU, `W_1 phi(x_{j-1})`, and the backward
# pass leaves the same mask on the stream gradient, `g_{j-1} = g_j + D_j e_j` with
# `D_j = diag phi'(x_{j-1})` and `e_j = W_1^T delta_j`.  The stream moves by `O(K^(-1/2))` per block,
# so a coordinate's sign at block `p` is still correlated with its sign at block `j`, at order one,
# across the whole depth.  The free law of part 07 (section 5c) takes `D_j` free of what came before; that
# holds for every other branch (their masks sit on fresh hidden vectors) but not here.
#
# **Follow one coordinate** (a tensor-program computation; `amutheory.symbolic.resnet.preact`).  At
# infinite width each coordinate of a vector is a sum of independent Gaussian *sources* (the head's
# gradient `g_K` and each block's `e_p`) times coefficients and masks of that coordinate.  The
# update of the stream before block `j` is `sum_l kappa_l g_l + alpha sum_l Z_l`, coherent
# multiples of the stream gradients plus fresh Gaussians; so the source `e_p` sits in it as
# `C_{min(p,j)} D_p e_p`.  Block `j` reads it through `D_j`, and the second moment of that read
# holds `E[D_j^2 D_p^2]`: the **mask pair**.
#
# The stream coordinate is a Gaussian random walk (each block adds an independent Gaussian), so
# `Cov(x_a, x_b) = q_min(a,b)`, the correlation is `sqrt(q_lo / q_hi)`, and the pair is the orthant
# probability `1/4 + asin(rho) / (2 pi)` (the ReLU pair kernel of `amutheory.symbolic.chain.kernel_law`,
# integrated in polar coordinates).  Put the independent value `1/4` in its place and the
# coordinate law is the free law, to rounding: two derivations of one law, which differ only in
# the persistence.

# %%
section("5e. preact with ReLU: persistent stream masks (the coordinate law)")
from amutheory.symbolic.resnet import preact as rp  # noqa: E402

pair_expr = rp.mask_pair("relu")
show("P_mask_pair", pair_expr)
print("   (= E[relu'(u)^2 relu'(v)^2] at correlation rho)")
rng = np.random.default_rng(3)
walk_spec = spec_of("preact", "k-last", depth=8, width=64, kernel=1, spatial=1, batch=1)
walk_q = np.asarray(resnet._stream_path(walk_spec, 8, 1.0))[:8]
walk = np.cumsum(rng.normal(size=(200_000, 8)) * np.sqrt(np.diff(np.concatenate([[0.0], walk_q]))), axis=1)
walk_pairs = (walk > 0).astype(float).T @ (walk > 0).astype(float) / len(walk)
law_pairs = rp.stream_mask_pairs("relu", walk_q)
walk_gap = float(np.max(np.abs(walk_pairs - law_pairs)[~np.eye(8, dtype=bool)]))
print(f"k-last, K = 8: mask pair of blocks 1 and 8 = {law_pairs[0, 7]:.3f} (independent: 0.25); a simulated "
      f"random walk of the stream's q path (200000 coordinates) matches every pair to {walk_gap:.4f}")
free_gap = 0.0
for init_ in INITS[:4]:
    for k_ in (1, 3, 17):
        s_ = spec_of("preact", init_, depth=k_, width=64, kernel=1, spatial=1, batch=1)
        free_gap = max(free_gap, float(np.max(np.abs(rp.layer_moments(s_, masks="independent")
                                                      / rd.free_layer_moments(s_) - 1))))
print(f"coordinate law with independent masks vs the free law: max relative gap {free_gap:.1e}")
print(f"\n{'init':16s} " + "  ".join(f"{'K=' + str(k_):>7s}" for k_ in (8, 32, 128))
      + "   (persistent / free, s_bar; first layers only in brackets)")
persist_ratio = {}
for init_ in ("k-last", "k-all", "k-squared", "sqrt-multiplier"):
    cells = []
    for k_ in (8, 32, 128):
        s_ = spec_of("preact", init_, depth=k_, width=64, kernel=1, spatial=1, batch=1)
        law_, free_ = rd.layer_moments(s_), rd.free_layer_moments(s_)
        persist_ratio[init_, k_] = law_.mean() / free_.mean()
        cells.append(f"{persist_ratio[init_, k_]:.3f} ({law_[1::2].mean() / free_[1::2].mean():.2f})")
    print(f"{init_:16s} " + "  ".join(cells))
big_preact = [rd.layer_moments(spec_of("preact", "k-last", depth=k_, width=64, kernel=1, spatial=1,
                                       batch=1)).mean() for k_ in (1024, 2048)]
preact_slope = -0.5 * math.log(big_preact[1] / big_preact[0]) / math.log(2)
import matplotlib.pyplot as plt  # noqa: E402

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.plot(np.arange(2, 9), law_pairs[0, 1:], "o-", label="coordinate law (orthant probability)")
ax0.plot(np.arange(2, 9), walk_pairs[0, 1:], "x", ms=9, label="simulated random walk (200000 coordinates)")
ax0.axhline(0.25, color="k", ls="--", label="independent masks (free law)")
ax0.set(xlabel="block j", ylabel="P(mask on at block 1 and at block j)",
        title="preact / k-last / ReLU, K = 8: the mask pair")
ax0.legend(fontsize=8)
for init_ in ("k-last", "k-all", "k-squared", "sqrt-multiplier"):
    ax1.semilogx((8, 32, 128), [persist_ratio[init_, k_] for k_ in (8, 32, 128)], "o-", label=init_)
ax1.axhline(1.0, color="k", ls="--")
ax1.set(xlabel="blocks K", ylabel="s_bar persistent / s_bar free", title="preact / ReLU: persistence against the free law")
ax1.legend(fontsize=8)
fig.tight_layout()
print(f"preact/k-last/ReLU coordinate law: local slope of eta* at K = 1024..2048 = {preact_slope:.4f} "
      f"(derived exponent {resnet.resnet_law(spec_of('preact', 'k-last')).exponent})")

# %% [markdown]
# The persistence matters where the stream grows: `k-last` and `sqrt-multiplier` (the stream's q
# grows by `e` along the net, so the first and last blocks' signs stay correlated at
# `sqrt(1/e) = 0.61` as K grows, derived; the pair printed above at K = 8), where the table above
# (the two laws, n = 64) puts the persistent law well above the free one in `s_bar` and more so on
# the first layers, which read the stream through the masks.  Under `k-all` and `k-squared` the
# stream barely grows past its first blocks and the two laws nearly agree.  The exponent is
# unchanged: the pair probabilities are functions of `i/K`, so they move the `O(1)` and `O(1/K)`
# coefficients only.
#
# Measured on real dense preact/ReLU nets (conditioned per seed on the stem's `q_0` and the head's
# `G_K`, as in part 07 (section 5c); `tests/test_resnet_preact.py` checks it), measured/law is 1 within the
# seeds' error for the coordinate law at K = 8, with what is left at K = 32 of the size of the
# `O(1/n)` terms seen on the other branches, while the free law is low at both.  README "Residual
# networks", "The spread, derived, for dense nets", reports the ratios.
# With the coordinate law in place, the dense-shape law of part 07 (section 5d) covers `preact`/ReLU too: its
# twin's parts split by source (`own`: what the layer's own `e_j` brings).  For the linear `preact`
# nets, where both laws exist, that split differs from the free law's (their sum does not): the
# free law assigns `M`'s fluctuation acting on `J^T g` as if `M` were free of it.

# %% [markdown]

# %% [markdown]
# ## Checks: the mask pair against a simulated random walk, and the free law as its limit

# %%
section("checks")
# the mask pair is the orthant probability (exact, SymPy); a simulated random walk with
# 200000 coordinates matches every pair (a frequency's sd is <= 0.5/sqrt(200000) = 0.0011; 0.005 is
# ~4.5 sd); with independent masks the coordinate law is the free law (rounding); persistence
# raises s where the stream grows (k-last, sqrt-multiplier: > 10% at K = 32) and barely elsewhere
# (< 3%); the local slope at K ~ 1500 is within 0.02 of the derived exponent
check("mask pair = orthant probability", sp.simplify(pair_expr - (sp.Rational(1, 4) + sp.asin(rp.rho) / (2 * sp.pi))) == 0)
check("random walk matches every pair", walk_gap < 0.005 and free_gap < 1e-10, f"walk gap {walk_gap:.4f}, free gap {free_gap:.1e}")
check("persistence raises s where the stream grows",
      persist_ratio["k-last", 32] > 1.1 and persist_ratio["sqrt-multiplier", 32] > 1.1
      and all(1 <= persist_ratio[i_, k_] < 1.03 for i_ in ("k-all", "k-squared") for k_ in (8, 32, 128)))
check("preact local slope -> derived exponent",
      abs(preact_slope - float(resnet.resnet_law(spec_of("preact", "k-last")).exponent)) < 0.02, f"{preact_slope:.4f}")
print(f"(ran in {time.perf_counter() - T0:.1f} s)")
print("all derivation checks passed")
