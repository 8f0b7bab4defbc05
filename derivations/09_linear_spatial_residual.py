# %% [markdown]
# # The exact law of linear spatial residual nets, mode by mode
#
# Run with `python derivations/09_linear_spatial_residual.py` (or open it as a notebook with
# jupytext).  Every number is computed; the script ends by asserting that what it derived agrees
# with `amutheory.symbolic.resnet.spectral`.
#
# The dense law (derivations/07_residual_dense_law.py, section 5c) is exact for `kernel = spatial = batch = 1` and was
# refused for the campaign's nets (kernel 3, 8 positions, batch 8), whose finite-K terms were
# therefore calibrated.  For *linear* branches with circular padding the positions and the batch
# can be carried exactly.  Four facts do it.

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch

from amutheory.course import check, show
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import planar as P
from amutheory.symbolic.resnet import dense as rd
from amutheory.symbolic.resnet import spectral as rs
torch.manual_seed(0)

# %% [markdown]
# ## 1. A circular conv is diagonal in the spatial Fourier modes
#
# With `x_hat(q) = sum_p x(p) e^{-i w_q p}`, a conv with taps `W_t` (t = -1, 0, 1; torch computes
# `y(p) = sum_t W_t x(p + t)`) is `y_hat(q) = W_hat(q) x_hat(q)`, `W_hat(q) = sum_t e^{i w_q t} W_t`.

# %%
n, N, k = 5, 8, 3
conv = torch.nn.Conv1d(n, n, k, padding=1, padding_mode="circular", bias=False, dtype=torch.float64)
x = torch.randn(1, n, N, dtype=torch.float64)
y_hat = np.fft.fft(conv(x).detach().numpy()[0], axis=-1)
taps = conv.weight.detach().numpy()  # (out, in, k): tap t = index - 1
omega = 2 * np.pi * np.arange(N) / N
W_hat = np.einsum("qt,oit->qoi", np.exp(1j * np.outer(omega, np.arange(k) - 1)), taps)
x_hat = np.fft.fft(x.numpy()[0], axis=-1)
print("max |y_hat - W_hat x_hat| =", np.abs(y_hat - np.einsum("qoi,iq->oq", W_hat, x_hat)).max())

# %% [markdown]
# The taps are independent, so every mode has the layer's gain, and mode `q` meets the zero mode
# with the taps' Dirichlet kernel over their number: `tau(W_hat(0)^T W_hat(q)) = rho_q s`,
# `rho_q = D_q / k`, `D_q = sum_t e^{i w t}`:

# %%
w = sp.Symbol("omega", real=True)
D3 = sp.simplify(sum(sp.exp(sp.I * w * t) for t in (-1, 0, 1)).rewrite(sp.cos))
show("D_3", D3)  # D(omega) for k = 3
print("rho over the 8 modes:", np.round(rs.modes(ArchSpec(
    family="resnet", spatial=8, kernel=3, activation="linear"))["rho"], 3))

# %% [markdown]
# ## 2. The head's gradient lives in the zero mode
#
# `f = V mean_p x_K`, so `dloss/dx_K(b, p) = V^T r_b / (B P)` at every position, and a circular
# conv's transpose keeps a constant signal constant: every backward signal is one vector per
# sample, read through `J(0)` alone.  Every tap of a layer then gets the same update
# `-eta sum_b delta(b) x_hat(b, 0)^T`, which at mode `q` moves the layer by `D_q` times it.  Checked
# on a real net:

# %%
spec = ArchSpec(family="resnet", dim=1, depth=3, width=16, kernel=3, spatial=8, batch=2,
                activation="linear", branch="conv-mlp", init="k-last")
from amutheory.measure.probe import draw_seed  # noqa: E402

model, xin, r = draw_seed(spec, 0)
stream = []


def keep(module, inputs, output):
    output.retain_grad()
    stream.append(output)


model.stem.register_forward_hook(keep)
((model(xin) * r).sum(-1).mean()).backward()
g = stream[0].grad
print("spread of the stem's output gradient over positions:", float((g - g.mean(-1, keepdim=True)).abs().max()))

# %% [markdown]
# ## 3. Every source of the stream carries the same input Gram
#
# At infinite width `x_hat_0(b, 0)^T x_hat_0(b', q) / n = (rho_q / c_in) xi(b, b', q)`,
# `xi = x_hat_in(b, 0)^T x_hat_in(b', q)` (the raw inputs), and each block multiplies it by
# `1 + rho_J eps^2`.  So `Delta x_hat_i(b', q) = sum_b xi(b, b', q) M_i(q) g_i(b)` with `M_0 = D_q I`
# and `M_i(q) = (I + J_i(q)) M_{i-1}(q) (I + J_i(0))^T + Src_i(q)`: the dense recursion, with the
# two modes `0` and `q` of each layer in it.  For Gaussian inputs
# `sum_{b,b'} E|xi|^2 = c_in v^2 P^2 B (B + (c_in + 1)[q = 0])`.
#
# ## 4. The moments of the block: planar pairings with a cost per mode crossing
#
# At infinite width the blocks are free, and each Gaussian moment is a sum over non-crossing
# pairings of `W` with `W^T`; a pair that joins mode 0 with mode q costs `rho_q`.  The fourth
# moment of `conv` (`tau(A^T A B^* B)`, `A = W(0)`, `B = W(q)`) has two such pairings: the adjacent
# one (`s^2`) and the nested one (`rho^2 s^2`):

# %%
s, rho = sp.symbols("s rho", positive=True)
A, B = P.letter("W", 0), P.letter("W", "q")
fourth = P.tau(P.mul(P.adjoint(A), A, P.adjoint(B), B), {"W": s}, rho)
show("tau_4", sp.factor(fourth))  # tau(W(0)^T W(0) W(q)^* W(q))
for branch in rs.BRANCHES:
    rec = rs.mode_block_recursion(branch)
    print(f"{branch}:")
    show(f"lambda_q_{branch}", sp.factor(rec["lam"]))
    show(f"rho_J_{branch}", rec["rho_J"])
    show(f"src_{branch}", sp.factor(rec["src"]))

# %% [markdown]
# At `rho = D = 1` (a 1x1 conv, one mode) every expression is the dense law's, and every count
# agrees with random conv matrices (`tests/test_resnet_spectral.py`).  A check of `lambda_q` for
# conv-mlp at n = 400:

# %%
rng = np.random.default_rng(0)
nn_, om = 400, 2 * np.pi / 8
tp = [rng.normal(0, np.sqrt(0.6 / (nn_ * 3)), (nn_, nn_)) for _ in range(3)]
w10, w1q = sum(tp), sum(np.exp(1j * om * t) * m for t, m in zip((-1, 0, 1), tp))
w2 = rng.normal(0, np.sqrt(0.7 / nn_), (nn_, nn_))
eye = np.eye(nn_)
j0, jq = w2 @ w10, w2 @ w1q
s0, sq = (eye + j0).T @ (eye + j0), (eye + jq).conj().T @ (eye + jq)
tr = lambda m_: np.trace(m_).real / nn_  # noqa: E731
lam_rm = tr(s0 @ sq) - tr(s0) * tr(sq)
rho1 = (1 + 2 * np.cos(om)) / 3
lam_law = float(rs.mode_block_recursion("conv-mlp")["lam"].subs({rs.alpha: 1, rs.s1: 0.6, rs.s2: 0.7, rs.rho: rho1}))
print(f"lambda_q (conv-mlp, mode 1 of 8): random matrices {lam_rm:.4f}, planar count {lam_law:.4f}")

# %% [markdown]
# ## 5. The law, the exponent and the modes
#
# The zero mode is the dense law (`rho = 1`).  In a chain every other mode dies out exponentially
# with depth (derivation 02).  Not here: a residual block's gain is `1 + O(1/K)`, so every mode
# keeps `prod (1 + rho_J eps^2) = O(1)` and accumulates the blocks' sources at the same power of K as
# the zero mode.  The zero mode keeps a fixed share of `s_bar`, the exponent is the dense one, and
# the other modes set the prefactor and the finite-K terms, which is what the calibrated laws had to
# fit.

# %%
campaign = ArchSpec(family="resnet", dim=1, depth=2, width=128, kernel=3, spatial=8, batch=8,
                    activation="linear", branch="conv-mlp", init="k-last")
Ks = [2, 8, 32, 128, 512, 2048]
zero_share = []
for K_ in Ks:
    per_mode = rs.mode_layer_moments(campaign.with_(depth=K_)).mean(axis=0)
    zero_share.append(per_mode[0] / per_mode.sum())
    print(f"K = {K_:5d}: share of the zero mode {zero_share[-1]:.3f}")
s_law = rs.s_bar(campaign, Ks)
local = -0.5 * np.diff(np.log(s_law)) / np.diff(np.log(Ks))
print("local slopes of eta*:", np.round(local, 3))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
eta_law = np.asarray(s_law) ** -0.5
ax1.loglog(Ks, eta_law, "o-", label="eta* = s_bar^(-1/2) (mode law)")
ax1.loglog(Ks, eta_law[-1] * (np.asarray(Ks, float) / Ks[-1]) ** -1.0, "--", label="K^(-1) (dense exponent)")
ax1.set(xlabel="blocks K", ylabel="eta* (units of sqrt(C))", title="conv-mlp / k-last, circular: eta*(K)")
ax1.legend()
ax2.semilogx(Ks, zero_share, "o-", label="zero mode's share of s_bar")
ax2.set(xlabel="blocks K", ylabel="share", ylim=(0, 1), title="every mode grows like the zero mode")
ax2.legend()
fig.tight_layout()

# %% [markdown]
# The modes also change the shallow end.  A `k`-tap conv's own update is `k^d` times the dense
# one in the zero mode (every tap gets the whole position-summed gradient).  Under `k-squared` it
# falls like `1/K^2` with `W_2`'s variance while the stream's part grows like `K^2`, so `s_bar`
# first *falls*, until about `K = k^d`, and eta* rises there (the tests measure it on real nets):

# %%
squared = campaign.with_(init="k-squared", width=64)
dip = rs.s_bar(squared, [1, 2, 3, 4, 6, 8])
print("conv-mlp / k-squared s_bar at K = 1, 2, 3, 4, 6, 8:", np.round(dip, 2))
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot([1, 2, 3, 4, 6, 8], dip, "o-", label="s_bar (mode law), conv-mlp / k-squared")
ax.axvline(3, ls=":", color="gray", label="K = k^d = 3")
ax.set(xlabel="blocks K", ylabel="s_bar", title="the shallow dip: s_bar falls first, then grows")
ax.legend()

# %% [markdown]
# ## 6. Against real nets, nothing fitted
#
# n = 128, K = 4, kernel 3, N = 8, B = 8, 128 seeds, 16 input channels (so that the inputs' Gram
# concentrates and the seed mean's standard error, printed with it, is small; a few seconds).
# `tests/test_resnet_spectral.py` uses more seeds and n = 256, where the O(1/n) excess the law
# leaves out is smaller; README "Residual networks" ("The exact law of *linear* spatial residual
# nets") reports the measured ratios at n = 64, 128 and 256:

# %%
real = campaign.with_(depth=4, input_channels=16)
ratio = probe(real, range(128)).s.mean(1) / rs.layer_moments(real).mean()
print(f"measured / law: {ratio.mean():.3f} +- {ratio.std(ddof=1) / np.sqrt(len(ratio)):.3f}")

# %% [markdown]
# ## 7. The typical value: the seed law at infinite width
#
# Given the inputs the infinite-width net is deterministic, and `s_bar` is a quadratic form in the
# loss directions, `sum_{b1,b2} C(b1, b2) r_{b1} . r_{b2}` with `C = sum_q c_q A_q(x)` (`A_q` the
# samples' cross-mode Grams).  A Monte Carlo over joint draws of inputs and loss directions gives
# the whole law of `ln s_bar`; only `c_q` depends on K, so one table of draws serves every K.  For
# a dense net it must give back the digamma closed forms of derivation 14:

# %%
from amutheory.symbolic.primitives import spread  # noqa: E402

dense_net = campaign.with_(kernel=1, spatial=1, batch=1, depth=8)
dense_law = rs.seed_law(dense_net, rs.seed_table(dense_net, 40000, seed=1))
closed_var, closed_gap = spread.dense_spread(dense_net.outputs, dense_net.input_channels)
print(f"dense: gap {dense_law['gap']:.3f} +- {dense_law['gap_se']:.3f} (closed form {closed_gap:.3f}), "
      f"variance {dense_law['var']:.3f} +- {dense_law['var_se']:.3f} (closed form {closed_var:.3f})")
table = rs.seed_table(campaign, 20000)
seed_Ks, seed_var, seed_gap = (2, 32, 256), [], []
for K_ in seed_Ks:
    law_k = rs.seed_law(campaign.with_(depth=K_), table)
    seed_var.append(law_k["var"])
    seed_gap.append(law_k["gap"])
    print(f"campaign net, K = {K_:3d}: Var[ln s_bar] = {law_k['var']:.3f}, gap = {law_k['gap']:.3f}")
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(seed_Ks, seed_var, "o-", label="Var[ln s_bar]")
ax.semilogx(seed_Ks, seed_gap, "s-", label="gap E ln s_bar - ln E s_bar")
ax.set(xlabel="blocks K", ylabel="value", title="seed law at infinite width (campaign net)")
ax.legend()

# %% [markdown]
# ## 8. Checks against the library

# %%
check("np.abs(y_hat - np.einsum('qoi,iq->oq', W_hat, x_hat)).max() < 1e-10", np.abs(y_hat - np.einsum("qoi,iq->oq", W_hat, x_hat)).max() < 1e-10)
check('sp.simplify(D3 - (1 + 2 * sp.cos(w))) == 0', sp.simplify(D3 - (1 + 2 * sp.cos(w))) == 0)
check('float((g - g.mean(-1, keepdim=True)).abs().max()) < 1e-12', float((g - g.mean(-1, keepdim=True)).abs().max()) < 1e-12)
check('sp.simplify(fourth - s ** 2 * (1 + rho ** 2)) == 0', sp.simplify(fourth - s**2 * (1 + rho**2)) == 0)
check('abs(lam_rm - lam_law) < 0.03', abs(lam_rm - lam_law) < 0.03)
dense = campaign.with_(kernel=1, spatial=1, batch=1, depth=8)
check('np.allclose(rs.layer_moments(dense), rd.layer_moments(dense), rtol=1e...', np.allclose(rs.layer_moments(dense), rd.layer_moments(dense), rtol=1e-10))
check('abs(local[-1] + 1) < 0.01', abs(local[-1] + 1) < 0.01)  # conv-mlp / k-last: derived exponent -1
shares = [m_[0] / m_.sum() for m_ in (rs.mode_layer_moments(campaign.with_(depth=K_)).mean(axis=0) for K_ in (512, 2048))]
check('0.2 < shares[1] < 0.95 and abs(shares[1] - shares[0]) < 0.01', 0.2 < shares[1] < 0.95 and abs(shares[1] - shares[0]) < 0.01)  # every mode grows like the zero mode
check('abs(ratio.mean() - 1) < 4 * ratio.std(ddof=1) / np.sqrt(len(ratio)) +...', abs(ratio.mean() - 1) < 4 * ratio.std(ddof=1) / np.sqrt(len(ratio)) + 0.06)  # + the O(1/n) excess at n = 128
check('dip[1] < dip[0] and np.all(np.diff(dip[2:]) > 0)', dip[1] < dip[0] and np.all(np.diff(dip[2:]) > 0))  # falls first, then grows (k^d = 3 here)
check("abs(dense_law['gap'] - closed_gap) < 4 * dense_law['gap_se']", abs(dense_law["gap"] - closed_gap) < 4 * dense_law["gap_se"])
check("abs(dense_law['var'] - closed_var) < 4 * dense_law['var_se']", abs(dense_law["var"] - closed_var) < 4 * dense_law["var_se"])
print("all derivation checks passed")
