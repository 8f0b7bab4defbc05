# %% [markdown]
# # Residual nets over their points: zero padding, and ReLU masks in the loops
#
# Run with `python derivations/10_zero_padded_residual.py` (or open it as a notebook with
# jupytext).  Every number is computed; the script ends by asserting that what it derived agrees
# with `amutheory.symbolic.resnet.operator`.
#
# Derivation 10 carried a linear residual net mode by mode, which needs circular padding: there
# every conv is diagonal in the Fourier modes (and a ReLU mask would mix them anyway).  A zero-padded conv is not diagonal in any basis the
# layers share.  So this derivation keeps the positions (and the samples) as they are: a field
# over `P = B N` points with `n` channels, and every average over the channels becomes a `P x P`
# kernel instead of a number.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from amutheory.course import check
from amutheory.measure.probe import draw_seed, probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import operator_law
from amutheory.symbolic.primitives import operator_planar as O
from amutheory.symbolic.primitives import planar as P
from amutheory.symbolic.resnet import operator as ro
from amutheory.symbolic.resnet import spectral as rs
torch.manual_seed(0)

# %% [markdown]
# ## 1. A zero-padded conv is a sum of shifted channel matrices
#
# torch computes `y(p) = sum_t W_t x(p + t)` with `x = 0` outside the grid.  With `S_t` the padded
# shift (`(S_t x)(p) = x(p + t)` inside, 0 outside) the layer is `W = sum_t S_t (x) W_t` on the
# point-major index (position, channel):

# %%
n, N, k = 4, 6, 3
conv = torch.nn.Conv1d(n, n, k, padding=1, bias=False, dtype=torch.float64)
x = torch.randn(1, n, N, dtype=torch.float64)
shifts = []
for t in (-1, 0, 1):
    S = np.zeros((N, N))
    for p in range(N):
        if 0 <= p + t < N:
            S[p, p + t] = 1.0
    shifts.append(S)
taps = conv.weight.detach().numpy()  # (out, in, k): tap t = index - 1
W = sum(np.kron(S, taps[:, :, j]) for j, S in enumerate(shifts))
y = W @ x.numpy()[0].T.ravel()
print("max |W x - conv(x)| =", np.abs(y - conv(x).detach().numpy()[0].T.ravel()).max())

# %% [markdown]
# ## 2. A pair of weights maps what it encloses by `T`
#
# With independent taps of variance `s / (n k)`, the channel average of `W X W^T` (`X` a kernel
# over positions, `(x) I_n`) keeps only `t = t'`:
#
#     E_n[W X W^T] = s k^-1 sum_t S_t X S_t^T = s T(X),
#
# the map of the chain laws (derivation 04).  A longer word is the sum over its *non-crossing*
# pairings, each pair mapping what lies between its letters: operator-valued free probability
# over the kernels, which at one point is the scalar planar count of derivation 09.  Against random
# matrices (n = 300):

# %%
rng = np.random.default_rng(1)
nn_, s = 300, 1.4
Wr = sum(np.kron(S, rng.normal(0, np.sqrt(s / (nn_ * k)), (nn_, nn_))) for S in shifts)
X = np.diag(rng.uniform(0.5, 2.0, N))
Xn = np.kron(X, np.eye(nn_))


def partial(A):
    return np.einsum("aibi->ab", A.reshape(N, nn_, N, nn_)) / nn_


T = lambda Y: sum(S @ Y @ S.T for S in shifts) / k  # noqa: E731
w = O.layer("W", "conv")
word = P.mul(w, O.atom("X"), O.adjoint(w), w, O.atom("X"), O.adjoint(w))
terms = O.expectation(word)
for expr, coef in terms.items():
    print(f"  {coef} * {O.format_expression(expr)}")
planar_value = O.compile_expectation(word, (O.gain("W"),))((s,), O.Kernels(N, {"X": X}, T))
direct = partial(Wr @ Xn @ Wr.T @ Wr @ Xn @ Wr.T)
pair_error = np.abs(planar_value - direct).max() / np.abs(direct).max()
print(f"E_n[W X W^T W X W^T]: planar vs random matrices, max error {pair_error:.3f} of the largest entry")
# the one-point count is the scalar one: tau((W W^T)^2) = 2 s^2
one = O.compile_expectation(P.mul(w, O.adjoint(w), w, O.adjoint(w)), (O.gain("W"),))((s,), O.Kernels(1, {}, lambda v: v))
print("one point:", float(np.sum(one)), "= 2 s^2 =", 2 * s**2)

# %% [markdown]
# ## 3. The one-step update of a residual net over its points
#
# A layer with input field `z` and error field `delta` moves its own output, per unit `-eta`, by
# `C_z delta`, with `C_z(a, a') = sum_t (S_t z)(a) . (S_t z)(a')` the patch Gram of its input.  So
# with `x <- x + J x` the stream's update before block `i + 1` is `u_i = M_i g_i`:
#
#     M_i = (I + J_i) M_{i-1} (I + J_i)^T + Src_i,     M_0 = C_in (the stem's own update),
#
# `Src = alpha^2 (W_2 C_x W_2^T + C_h)` (`alpha^2 C_x` for `conv`).  The blocks are free, so
# `M_{i-1}` enters block `i` only through its mean `m = E_n[M]` and `Phi(X) = E_n[M^T X M]`, and
# `Phi` only ever meets diagonal kernels.  The recursion is one pairing count per quantity: for
# the single-layer `conv` block, `Phi'(X)` is these twelve terms (`T*` = `T` for the symmetric taps
# of a 'same' conv, either padding):

# %%
law = ro.block_law("conv")
for expr, coef in law["phi"].terms.items():
    print(f"  {coef} * {O.format_expression(expr)}")

# %% [markdown]
# ## 4. Circular padding: the mode law, draw by draw
#
# With circular padding `T` commutes with the shifts and the whole recursion is diagonal in the
# modes.  Given the same inputs, the law over the points must give the mode law of derivation 09,
# which was derived with scalar counts in Fourier space:

# %%
spec = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="linear", width=128, depth=6,
                kernel=3, spatial=8, batch=3, input_channels=3)
x_in = np.random.default_rng(2).normal(size=(3, 3, 8))
xh = np.fft.fft(x_in, axis=-1)
xi = np.einsum("bc,dcq->bdq", xh[..., 0].real, xh)
mode = rs.mode_coefficients(spec) @ ((np.abs(xi) ** 2).sum(axis=(0, 1)) / (3 * 64 * 3))
points = ro.draw_layer_moments(spec, x_in).mean()
print(f"circular: over the points {points:.10f}, mode by mode {mode:.10f}")

# %% [markdown]
# ## 5. Zero padding against real nets
#
# The law given each seed's inputs and loss directions against the one-step probe of real
# zero-padded nets (n = 256, 48 seeds, K = 4; the same seeds with circular padding for the paired
# ratio):

# %%
real = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="linear", width=256, depth=4,
                kernel=3, spatial=6, batch=2, input_channels=16, outputs=8)
seeds = range(48)
measured, predicted, ratio_se = {}, {}, {}


def mean_ratio_se(m, p):
    """Standard error of ``mean(m) / mean(p)`` over paired seeds (delta method)."""
    resid = (m - m.mean() / p.mean() * p) / p.mean()
    return float(resid.std(ddof=1) / np.sqrt(len(m)))


for pad in ("zero", "circular"):
    sp_ = real.with_(padding=pad)
    measured[pad] = probe(sp_, seeds).s_bar
    predicted[pad] = np.array([ro.draw_layer_moments(sp_, *(v.numpy() for v in draw_seed(sp_, sd)[1:])).mean()
                               for sd in seeds])
    ratio_se[pad] = mean_ratio_se(measured[pad], predicted[pad])
    print(f"{pad:>8}: measured / law = {measured[pad].mean() / predicted[pad].mean():.3f} +- {ratio_se[pad]:.3f}")
meas_ratio = measured["zero"].mean() / measured["circular"].mean()
law_ratio = predicted["zero"].mean() / predicted["circular"].mean()
print(f"zero / circular: measured {meas_ratio:.3f}, law {law_ratio:.3f}")
fig, ax = plt.subplots(figsize=(5.5, 5))
for pad, marker in (("zero", "o"), ("circular", "s")):
    ax.loglog(predicted[pad], measured[pad], marker, ms=4, alpha=0.7, label=f"{pad} padding (one point per seed)")
lims = [min(min(predicted[p_].min(), measured[p_].min()) for p_ in predicted),
        max(max(predicted[p_].max(), measured[p_].max()) for p_ in predicted)]
ax.loglog(lims, lims, "k--", label="measured = law")
ax.set(xlabel="s_bar, law given the seed's inputs", ylabel="s_bar, one-step probe (n = 256)",
       title="zero-padded residual nets: law against real nets")
ax.legend()

# %% [markdown]
# ## 6. The boundary in K: a residual net settles, a chain does not
#
# A chain carries every update through all the layers above it, each of which loses the
# boundary again: its zero/circular ratio falls like `lambda_max^L` (derivation 04).  A residual
# net with a forward-stable init moves its stream by `O(1/K)` per block; the stream Jacobian stays
# `O(1)` away from the identity however deep the net, so the boundary's reach, and the ratio,
# settle as K grows.  The ratio is not 1 (at N = 8 the patch deficit of the edges is large), but
# its effect on the *exponent* vanishes: the slope shift `-1/2 d ln ratio / d ln K` goes to 0.

# %%
net = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="linear", width=128, depth=4,
               kernel=3, spatial=8, batch=1, input_channels=3)
ks = [1, 2, 4, 8, 16, 32, 64]
res = ro.boundary_ratio(net, ks, draws=8, seed=0)["ratio"]
chain = ArchSpec(family="conv", activation="linear", width=128, depth=4, kernel=3, spatial=8, batch=1)
chain_ratio = operator_law.operator_boundary_ratio(chain, ks)
print(f"{'depth':>6} {'resnet ratio':>13} {'chain ratio':>12}")
for kk, a, b in zip(ks, res, chain_ratio):
    print(f"{kk:>6} {a:>13.4f} {b:>12.4g}")
shift = -0.5 * np.diff(np.log(res)) / np.diff(np.log(ks))
print("resnet slope shift between consecutive K:", np.round(shift, 4))
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(ks, res, "o-", label="residual net (conv-mlp / k-last)")
ax.loglog(ks, chain_ratio, "s-", label="conv chain")
ax.set(xlabel="depth (blocks K / layers L)", ylabel="s_bar zero / s_bar circular",
       title="the boundary's reach: a residual net settles, a chain does not")
ax.legend()

# %% [markdown]
# ## 7. ReLU conv-mlp: masks in the loops
#
# With ReLU the block is `x + alpha W_2 D W_1 x`, `D = relu'(h)`.  A mask never pairs; masks left
# in one channel loop average to a multi-point function of `h`'s Gaussian kernel (orthant
# probabilities), and `D S D = D S` for a diagonal `S` because `relu'^2 = relu'`.  A loop with
# three masks at distinct points, against 200 000 channels drawn from the points' law:

# %%
from amutheory.symbolic.resnet import dense as rd  # noqa: E402
from amutheory.symbolic.chain.kernel_law import mask_kernel, mask_kernel3  # noqa: E402

pts = 4
A = rng.normal(size=(pts, 6))
Kh = A @ A.T / 6
masks_mc = (rng.multivariate_normal(np.zeros(pts), Kh, size=200000) > 0).astype(float)
Xa, Za = rng.normal(size=(pts, pts)), rng.normal(size=(pts, pts))
loop = P.mul(O.mask("D"), O.atom("X"), O.mask("D"), O.atom("Z"), O.mask("D"))
loop_law = O.compile_expectation(loop, ())((), O.Kernels(pts, {"X": Xa, "Z": Za}, lambda v: v,
                                                         masks={"D": (mask_kernel(Kh, "relu"),
                                                                      mask_kernel3(Kh, "relu"))}))
loop_mc = np.einsum("ia,ab,ib,bc,ic->ac", masks_mc, Xa, masks_mc, Za, masks_mc) / len(masks_mc)
loop_error = np.abs(loop_law - loop_mc).max() / np.abs(loop_mc).max()
print(f"E_n[D X D Z D]: orthant law vs 200 000 channels, max error {loop_error:.4f} of the largest entry")

# %% [markdown]
# At one point (kernel = spatial = batch = 1) the ReLU law is the dense free law of derivations/07_residual_dense_law.py,
# section 5c, which real dense nets confirm:

# %%
dense = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu", width=128, depth=6,
                 kernel=1, spatial=1, batch=1, input_channels=5)
x_one = np.random.default_rng(4).normal(size=(1, 5, 1))
one_point = ro.draw_layer_moments(dense, x_one)
free_law = rd.free_layer_moments(dense) / rd.stem_moment(dense) * ((x_one**2).sum() / 5) ** 2
print("ReLU at one point / dense free law:", np.round(one_point / free_law, 9))

# %% [markdown]
# ## 7b. The loss directions enter through one `B x B` matrix
#
# Given the inputs, the head's backward kernel is `G_K = v_r (r r^T) (x) 1 / (B P_s)^2` and every later
# kernel is linear in it, so `s_bar(x, r) = sum_o r_o^T A r_o` with `r_o` the `B` directions of output `o`.
# The sum over the layers of `tr(G_i X_i)` is `<G_K, W_K>` with `W_i = read_i + B_i^*(W_(i-1))` (the
# backward step's adjoint), so one recursion gives `A` (`ro.head_couplings`): every direction's
# `s_bar` and their exact mean `outputs tr A`.  `ln s_bar` given the inputs is the log of a quadratic
# form in Gaussians, whose moments are the Mellin integrals of derivation 14 over `A`'s eigenvalues (each
# taken `outputs` times).  So the law's Monte Carlo is over the inputs alone.

# %%
relu_net = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu", width=64, depth=3,
                    kernel=3, spatial=4, batch=3, input_channels=3, outputs=4, padding="zero")
x_draw = np.random.default_rng(11).normal(size=(3, 3, 4))
A = ro.head_couplings(relu_net, x_draw)
directions = np.random.default_rng(12).normal(size=(4000, 3, 4))
drawn_s = np.einsum("nbo,nco,bc->n", directions, directions, A)
one_r = ro.draw_layer_moments(relu_net, x_draw, directions[0]).mean()
print(f"one direction: backward chain {one_r:.6f}, from A {drawn_s[0]:.6f}")
print(f"mean over 4000 directions {drawn_s.mean():.4f} (se {drawn_s.std() / np.sqrt(4000):.4f}), exact "
      f"outputs tr A = {4 * np.trace(A):.4f}")
from amutheory.symbolic.primitives.spread import log_moments_of_spectrum  # noqa: E402

gap_x, var_x = log_moments_of_spectrum(np.repeat(np.linalg.eigvalsh(A).clip(0), 4))
print(f"E[ln s | x] - ln E[s | x]: drawn {np.log(drawn_s).mean() - np.log(drawn_s.mean()):.4f}, Mellin {gap_x:.4f}; "
      f"Var[ln s | x]: drawn {np.log(drawn_s).var():.4f}, Mellin {var_x:.4f}")

# %% [markdown]
# ## 8. Checks against the library

# %%
check('np.abs(y - conv(x).detach().numpy()[0].T.ravel()).max() < 1e-12', np.abs(y - conv(x).detach().numpy()[0].T.ravel()).max() < 1e-12)
check('pair_error < 0.05', pair_error < 0.05)  # one draw at n = 300: O(1/n) fluctuations and non-planar terms
check('abs(float(np.sum(one)) - 2 * s ** 2) < 1e-12', abs(float(np.sum(one)) - 2 * s**2) < 1e-12)
check("len(law['phi'].terms) == 12", len(law["phi"].terms) == 12)
check('abs(points / mode - 1) < 1e-10', abs(points / mode - 1) < 1e-10)
for pad in ("zero", "circular"):
    # 4 standard errors of the seed mean, plus 5% for the O(1/n) terms the law leaves out
    check('abs(measured[pad].mean() / predicted[pad].mean() - 1) < 4 * ratio_se[...', abs(measured[pad].mean() / predicted[pad].mean() - 1) < 4 * ratio_se[pad] + 0.05, str(pad))
check('abs(meas_ratio / law_ratio - 1) < 0.08', abs(meas_ratio / law_ratio - 1) < 0.08)
check('res[0] > res[-1] > 0.5 and abs(shift[-1]) < 0.01 and (abs(shift[-1]) ...', res[0] > res[-1] > 0.5 and abs(shift[-1]) < 0.01 and abs(shift[-1]) < abs(shift[0]) / 4)
check('chain_ratio[-1] < 0.01', chain_ratio[-1] < 0.01)  # the chain's boundary keeps eating the update
check('loop_error < 0.02', loop_error < 0.02)  # 200 000 channels: a Monte-Carlo error of order 200000^(-1/2) ~ 0.002 per entry
check('np.allclose(one_point, free_law, rtol=1e-07)', np.allclose(one_point, free_law, rtol=1e-7))
check('abs(one_r / drawn_s[0] - 1) < 1e-10', abs(one_r / drawn_s[0] - 1) < 1e-10)
# 4000 directions: the drawn mean within 4 of its standard errors of the exact one, the log gap within 0.03
check('abs(drawn_s.mean() - 4 * np.trace(A)) < 4 * drawn_s.std() / np.sqrt(4000)', abs(drawn_s.mean() - 4 * np.trace(A)) < 4 * drawn_s.std() / np.sqrt(4000))
check('abs(np.log(drawn_s).mean() - np.log(4 * np.trace(A)) - gap_x) < 0.03', abs(np.log(drawn_s).mean() - np.log(4 * np.trace(A)) - gap_x) < 0.03)
print("all derivation checks passed")
