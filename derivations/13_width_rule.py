# %% [markdown]
# # How eta* scales with width: the width rule of learning-rate transfer
#
# Run with `python derivations/06_width_rule.py` (or open it as a notebook with jupytext).  Every
# number is computed; the script ends by asserting that what it derived agrees with
# `amutheory.symbolic.primitives.width`, `amutheory.transfer` and the torch models.
#
# The depth laws of derivations 01-12 fix `s_l` only up to an overall scale, the unit `a`.  Moving
# a tuned learning rate to a *wider* net needs that scale's width dependence.  Three steps:
# (1) read the width off the Jacobian-product expansion, (2) check the pieces on real nets,
# (3) see where the rule stops: the attention logits of a transformer.

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from amutheory.course import check, show
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.stats import fit_loglog_slope
from amutheory.symbolic.primitives import width as W
from amutheory.transfer import transfer_lr

# %% [markdown]
# ## 1. The width in the expansion
#
# One SGD step changes layer `l` by `sum_{j<=l} J_{l<-j} K_{j-1} J_{l<-j}^T g_l`
# (`amutheory.symbolic.primitives.expansion`).  Per factor:
#
# * `K_{j-1}`, the Gram of layer j's inputs: a same-position entry sums `F = n k^d` products
#   (the fan-in), each `E[phi^2]`: `K ~ F E[phi^2]`;
# * `g_l`, the loss gradient at layer l: the head sends `r` back as `W_out^T r`, entries of variance
#   `R = n_out v_out`; each activation derivative multiplies by `E[phi'^2]` and each weight by
#   `c / fan_in` summed over `fan_in` terms -- at criticality nothing changes down the chain;
# * `J J^T`: normalised traces `tau(...)`, width-free at leading order.
#
# `s_l` is the squared change averaged over `n` channels; `|K J J^T g|^2` sums `n` entries of g.

# %%
scale = W.update_scale()
show("s_l", scale)  # the scale of s_l
show("s_l_std", W.scale_in_width("standard"))  # in the width: F = n k^d, v_out = sigma^2 / n
for readout in W.READOUTS:
    print(f"readout {readout}: e_s = d ln s / d ln n, eta* ~ n^(e_eta)")
    show(f"e_s_{readout}", W.width_exponent(readout))
    show(f"e_eta_{readout}", W.eta_width_exponent(readout))

# %% [markdown]
# So with the standard fan-in head (`Var 1/n`) the update of a hidden pre-activation grows like `n`
# and `eta* ~ n^(-1/2)`; with a muP head (`Var 1/n^2`) it stops growing and `eta*` is width-free.
# The `1/fan_in` often quoted for SGD in the standard parametrisation is a different limit: the
# *output* moves by `eta n`; the hidden pre-activations the AM-muP probe averages do not.
#
# ## 2. The pieces on real nets
#
# (a) `s` is quadratic in `g` and `g` is linear in the head: a head drawn `x n^(-1/2)` (the muP head
# of the same seed) divides every `s_l` by exactly `n`.

# %%
spec = ArchSpec(depth=4, width=32, kernel=3, spatial=16, activation="relu", batch=4)
std = probe(spec, [0, 1, 2]).s
mup = probe(spec.with_(readout="mup"), [0, 1, 2]).s
print("max |s_mup n / s_std - 1| =", float(np.abs(mup * spec.width / std - 1).max()))
check('np.allclose(mup * spec.width, std, rtol=1e-10)', np.allclose(mup * spec.width, std, rtol=1e-10))

# %% [markdown]
# (b) The width itself: `eta*` of one ReLU conv chain at widths 32..128 (depth 4, so L/n <= 1/8).

# %%
widths = [32, 64, 128]
seeds = list(range(24))
s = np.stack([probe(spec.with_(width=n), seeds).s.mean(axis=1) for n in widths], axis=1)
fit = fit_loglog_slope(widths, s, statistic="geo")
eta_fit, eta_ci = -fit.slope / 2, (-fit.ci[1] / 2, -fit.ci[0] / 2)
print(f"eta* ~ n^{eta_fit:.3f}  95% CI [{eta_ci[0]:.3f}, {eta_ci[1]:.3f}]   derived -1/2")
fig, ax = plt.subplots(figsize=(6, 4))
eta_geo = np.exp(np.log(s).mean(axis=0)) ** -0.5  # eta* from the geometric mean of s_bar over seeds
ax.loglog(widths, eta_geo, "o", label="measured eta* ~ s_bar^(-1/2) (geo mean, 24 seeds)")
ax.loglog(widths, eta_geo[0] * (np.asarray(widths, float) / widths[0]) ** -0.5, "--", label="derived n^(-1/2)")
ax.set(xlabel="width n", ylabel="eta* (units of sqrt(C))", title="the width rule: ReLU conv chain, depth 4")
ax.legend()

# %% [markdown]
# ## 3. Where it stops: attention logits
#
# A transformer's MLP pre-activations also see the attention pattern, and one step changes the
# logits `q.k / s` as well; that path is not in the three factors above.  The `transfer` campaign
# measures it (`amutheory validate --preset transfer`, its width sweeps; README "Transformers and
# learning-rate transfer" reports the fitted width exponents with their CIs): with `s = sqrt(d_h)`
# the measured exponent lies below -1/2, outside its CI, and with muP's `s = d_h` -1/2 is inside.
# So the extra width growth comes with the logit scale; a derivation of its size is open.
# `amutheory.transfer` applies the derived rule to both, and the campaign's report shows the
# error it makes at the widest width under `sqrt(d_h)`.

# %% [markdown]
# ## Checks against the library

# %%
check('sp.simplify(scale - W.F ** 2 * W.q_phi ** 2 * W.chi_phi * W.R) == 0', sp.simplify(scale - W.F**2 * W.q_phi**2 * W.chi_phi * W.R) == 0)
check("W.eta_width_exponent('standard') == sp.Rational(-1, 2) and W.eta_widt...", W.eta_width_exponent("standard") == sp.Rational(-1, 2) and W.eta_width_exponent("mup") == 0)
check('eta_ci[0] <= -0.5 <= eta_ci[1]', eta_ci[0] <= -0.5 <= eta_ci[1], str((eta_fit, eta_ci)))
r = transfer_lr(0.1, spec, spec.with_(width=128))
check("abs(r.width_factor - 0.5) < 1e-12 and abs(r.width_rules['fan-in'] - 0...", abs(r.width_factor - 0.5) < 1e-12 and abs(r.width_rules["fan-in"] - 0.25) < 1e-12)
r = transfer_lr(0.1, spec.with_(readout="mup"), spec.with_(width=128, readout="mup"))
check('abs(r.width_factor - 1.0) < 1e-12', abs(r.width_factor - 1.0) < 1e-12)
print("all derivation checks passed")
