# %% [markdown]
# # Where the seed spread of ln s_bar comes from
#
# Run with `python derivations/09_seed_spread.py` (or open it as a notebook with jupytext).  Every
# number is computed; the script ends by asserting that what it derived agrees with
# `amutheory.symbolic.primitives.spread` and `amutheory.measure.loss_form`.
#
# The depth laws are laws of the *mean* of `s_bar` over seeds.  The campaign also reports the
# *typical* value (geometric mean), which sits `exp(E ln s_bar - ln E s_bar)` below it, and so far
# modelled that gap with a calibrated line `Var[ln s_bar] = sigma2_0 + kappa L^p` read as finite
# width.  Part of the spread is not finite width at all: a seed draws the loss directions `r`
# too, and the probe's `s_bar` is a quadratic form in them.  This script derives that part.

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from amutheory.course import check, show
from amutheory.measure.loss_form import measure_loss_form, spread_decomposition
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import spread as S

# %% [markdown]
# ## 1. s_bar is a quadratic form in the loss directions
#
# The loss is `mean_b <r_b, f(x_b)>`, so its gradient, and with it every first-order change
# `Delta h_l`, is linear in `r`.  Hence `s_bar(r) = vec(r)^T M vec(r)` with `M` fixed by the seed's
# weights and inputs.  Diagonalise `M` (eigenvalues `lambda_i`): `Q = s_bar = sum_i lambda_i z_i^2`
# with i.i.d. standard normal `z_i`, and `E[exp(-t Q)] = prod_i (1 + 2 lambda_i t)^(-1/2) = phi(t)`.
#
# ## 2. The law of ln Q from its Mellin transform
#
# `E[Q^(-s)] = (1/Gamma(s)) int_0^oo t^(s-1) phi(t) dt`.  The integral diverges at `t -> 0` as
# `s -> 0` (`phi(0) = 1`); subtracting 1 below `t = 1` gives
# `E[Q^(-s)] = (1 + s I(s)) / Gamma(1 + s)`, `I(s) = int_0^1 t^(s-1)(phi - 1) dt + int_1^oo t^(s-1) phi dt`,
# analytic at 0.  Expand in `s`:

# %%
s_, I0, I1 = sp.symbols("s I_0 I_1")
mellin = (1 + s_ * (I0 + I1 * s_)) / sp.gamma(1 + s_)
ser = sp.series(mellin, s_, 0, 3).removeO()
mean_log = sp.simplify(-ser.coeff(s_, 1))
var_log = sp.expand(sp.simplify(2 * ser.coeff(s_, 2) - mean_log**2))
show("E_lnQ", mean_log)  # E[ln Q]
show("Var_lnQ", var_log)  # Var[ln Q]

# %% [markdown]
# Two one-dimensional integrals per spectrum.  For `nu` equal eigenvalues `Q` is a scaled
# chi-square; integrating its density against `Q^s` gives the closed form directly:

# %%
q, nu = sp.symbols("q nu", positive=True)
sp_pos = sp.Symbol("s", positive=True)
density = q ** (nu / 2 - 1) * sp.exp(-q / 2) / (2 ** (nu / 2) * sp.gamma(nu / 2))
moment = sp.simplify(sp.integrate(q**sp_pos * density, (q, 0, sp.oo), conds="none")) / nu**sp_pos
gap = sp.simplify(sp.expand_func(sp.diff(moment, sp_pos).subs(sp_pos, 0)))
var = sp.simplify(sp.expand_func(sp.diff(moment, sp_pos, 2).subs(sp_pos, 0)
                                 - sp.diff(moment, sp_pos).subs(sp_pos, 0) ** 2))
show("M_chi", moment)  # E[(chi2_nu/nu)^s]
show("gap_chi", gap)  # E[ln Q] - ln E[Q]
show("Var_chi", var)  # Var[ln Q]
for dof in (10, 80):
    print(f"  nu = {dof:>2}: gap {float(gap.subs(nu, dof)):+.4f}, Var {float(var.subs(nu, dof)):.4f}")
nus = np.arange(1, 101)
gap_f, var_f = sp.lambdify(nu, gap, "scipy"), sp.lambdify(nu, var, "scipy")
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(nus, var_f(nus.astype(float)), label="Var[ln Q]")
ax.loglog(nus, -gap_f(nus.astype(float)), label="-(E[ln Q] - ln E[Q])")
ax.axvspan(10, 80, color="gray", alpha=0.15, label="probe: m = 10 to B m = 80")
ax.set(xlabel="directions nu (equal eigenvalues)", ylabel="spread of ln Q",
       title="the spread of a chi-square quadratic form")
ax.legend()

# %% [markdown]
# ## 3. How many directions does the form spread over?
#
# No pre-activation lies after the linear head, so `Delta h_l = sum_b' Theta_l(., b') W_head^T r_b'`
# with `Theta` independent of `W_head`; at infinite width `W_head G W_head^T -> (tr G / n) I_m` and
# `M -> C (x) I_m`, `C` the `B x B` coupling of the samples.  So `nu` runs from `m` (every sample
# coupled: `C` of rank one) to `B m` (`C ~ I`): for the probe's `m = 10`, `B = 8`, between
# `psi'(5) = 0.221` and `psi'(40) = 0.025` of spread that no width removes.  Which one?  ReLU
# features share a positive mean, so after global pooling different samples' features are strongly
# correlated; a linear net's pooled output sees only the 3-channel spatial mean of its input.  Both
# push `C` towards low rank.  Measure it on a real residual net:

# %%
spec = ArchSpec(family="resnet", branch="conv-mlp", init="k-squared", activation="relu", width=32,
                depth=4, kernel=3, spatial=8, batch=8, outputs=10)
seeds = list(range(16))
res = measure_loss_form(spec, seeds, chunk=40)
per = res.per_seed()
print(f"r^T M r reproduces the probe: max rel. diff "
      f"{np.max(np.abs(res.s_bar / probe(spec, seeds).s_bar - 1)):.1e}")
print(f"participation ratio nu_eff = {per['nu_eff'].mean():.2f} (m = 10, B m = 80); "
      f"head anisotropy {per['anisotropy'].mean():.2f} at n = 32")

# %% [markdown]
# ## 4. The law of total variance, split at r
#
# `Var[ln s_bar] = E_net[Var_r] + Var_net[E_r ln s_bar]` and
# `E[ln s_bar] - ln E[s_bar] = E_net[gap_r] + (E ln tr M - ln E tr M)`; the `_r` parts are section
# 2's law at each seed's spectrum, the left sides are the probe's own draws.

# %%
d = spread_decomposition(per, n_boot=400)
for key in ("var_total", "var_r", "var_net", "gap_total", "gap_r", "gap_net"):
    v = d[key]
    print(f"{key:>10} = {v['value']:+.3f}  [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}]")
share = d["var_r"]["value"] / (d["var_r"]["value"] + d["var_net"]["value"])
print(f"share of the spread from the loss directions: {share:.0%}")
fig, ax = plt.subplots(figsize=(6, 4))
keys = ("var_total", "var_r", "var_net", "gap_total", "gap_r", "gap_net")
vals = [d[k_]["value"] for k_ in keys]
errs = np.array([[d[k_]["value"] - d[k_]["ci"][0], d[k_]["ci"][1] - d[k_]["value"]] for k_ in keys]).T
ax.bar(keys, vals, yerr=errs, capsize=3, label="bootstrap 95% CI")
ax.axhline(0, color="k", lw=0.5)
ax.set(ylabel="value", title="law of total variance, split at the loss directions r")
ax.legend()

# %% [markdown]
# ## 5. A dense single-sample net: the whole spread, exactly
#
# With one sample at one position (`kernel = spatial = batch = 1`) the coupling `C` is a number, so
# `Q = C chi^2_m`.  The net is bias-free and positively homogeneous, so `s_bar` is homogeneous of
# degree 4 in the input, and at infinite width the net's law given `x` depends on `|x|` only: the
# stem's `W_0 x` is Gaussian with variance `|x|^2 c / f`, i.e. the stream variance is
# `chi^2_f / f` (`f = c_in`).  So `ln s_bar = const + ln(chi^2_m / m) + 2 ln(chi^2_f / f)`, two
# independent chi-squares, and section 2's closed form gives the whole spread with nothing fitted:

# %%
m_, f_ = sp.symbols("m f", positive=True)
stem2 = sp.simplify(sp.expand_func(moment.subs({sp_pos: 2, nu: f_})))  # E[(chi2_f/f)^2]
dense_var = var.subs(nu, m_) + 4 * var.subs(nu, f_)
dense_gap = gap.subs(nu, m_) + 2 * gap.subs(nu, f_) - sp.log(stem2)
show("M_2", stem2)  # E[(chi2_f/f)^2]
show("Var_dense", dense_var)  # Var[ln s_bar]
show("gap_dense", sp.simplify(dense_gap))  # E ln s_bar - ln E s_bar
v_dense, g_dense = (float(e.subs({m_: 10, f_: 3})) for e in (dense_var, dense_gap))
print(f"probe's m = 10, c_in = 3: Var = {v_dense:.3f}, gap = {g_dense:.3f} "
      f"(the typical value is {np.exp(g_dense):.2f} of the mean, at any width)")
dense = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu", width=128, depth=4,
                 kernel=1, spatial=1, batch=1)
ls = np.log(probe(dense, range(256), chunk=128).s_bar)
fig, ax = plt.subplots(figsize=(6, 4))
ax.hist(ls - ls.mean(), bins=30, density=True, alpha=0.6, label="measured ln s_bar - mean (256 seeds)")
grid = np.linspace((ls - ls.mean()).min(), (ls - ls.mean()).max(), 200)
ax.plot(grid, np.exp(-grid**2 / (2 * v_dense)) / np.sqrt(2 * np.pi * v_dense), label=f"normal of the derived Var = {v_dense:.2f} (for scale)")
ax.set(xlabel="ln s_bar - E ln s_bar", ylabel="density", title="dense single-sample net: the spread, nothing fitted")
ax.legend()
print(f"measured (n = 128, K = 4, 256 seeds): Var = {ls.var(ddof=1):.3f}, "
      f"gap = {ls.mean() - np.log(np.exp(ls).mean()):.3f}")

# %% [markdown]
# `predict --family resnet --kernel 1 --spatial 1 --batch 1 --constants derive --statistic geo`
# uses exactly this: the exact dense law of the mean times `exp(gap)`.
#
# So a large, width-independent part of the spread, and of the typical-to-mean gap, is the loss
# directions': the typical value sits `exp(gap_r)` below the mean at any width.  What the line
# `sigma2_0 + kappa L^p` calibrates is this plus the net's part, and only the net's part can
# carry the `L/n` growth of docs/theory.md section 8 (`validate/studies/spread_decomposition.py` measures both
# across widths and depths).
#
# ## Checks against the library

# %%
lib = S.log_moments()
check("sp.simplify(lib['mean_log'] - mean_log.subs({I0: S.I0, I1: S.I1})) == 0", sp.simplify(lib["mean_log"] - mean_log.subs({I0: S.I0, I1: S.I1})) == 0)
check("sp.simplify(lib['var_log'] - var_log.subs({I0: S.I0, I1: S.I1})) == 0", sp.simplify(lib["var_log"] - var_log.subs({I0: S.I0, I1: S.I1})) == 0)
chi = S.chi_square_log_moments()
check("sp.simplify(chi['gap_log'] - gap.subs(nu, S.nu)) == 0", sp.simplify(chi["gap_log"] - gap.subs(nu, S.nu)) == 0)
check("sp.simplify(chi['var_log'] - var.subs(nu, S.nu)) == 0", sp.simplify(chi["var_log"] - var.subs(nu, S.nu)) == 0)
for dof in (1, 10, 80):  # the quadrature of section 2 against the closed form
    g, v = S.log_moments_of_spectrum(np.ones(dof))
    check('abs(g - float(gap.subs(nu, dof))) < 1e-08 and abs(v - float(var.subs(...', abs(g - float(gap.subs(nu, dof))) < 1e-8 and abs(v - float(var.subs(nu, dof))) < 1e-8)
check('np.allclose(res.s_bar, probe(spec, seeds).s_bar, rtol=1e-10)', np.allclose(res.s_bar, probe(spec, seeds).s_bar, rtol=1e-10))
check("S.chi_square_var(80) - 1e-09 <= d['var_r']['value'] <= S.chi_square_v...", S.chi_square_var(80) - 1e-9 <= d["var_r"]["value"] <= S.chi_square_var(1))
lo, hi = d["var_total"]["ci"]  # the two sides of the law of total variance agree within the CI
check("lo <= d['var_r']['value'] + d['var_net']['value'] <= hi", lo <= d["var_r"]["value"] + d["var_net"]["value"] <= hi)
lib_dense = S.dense_spread_expressions()
check("sp.simplify(lib_dense['var_log'] - dense_var.subs({m_: S.outputs_m, f...", sp.simplify(lib_dense["var_log"] - dense_var.subs({m_: S.outputs_m, f_: S.fan_in_f})) == 0)
check("sp.simplify(lib_dense['gap_log'] - dense_gap.subs({m_: S.outputs_m, f...", sp.simplify(lib_dense["gap_log"] - dense_gap.subs({m_: S.outputs_m, f_: S.fan_in_f})) == 0)
check('abs(S.dense_spread(10, 3)[0] - v_dense) < 1e-12 and abs(S.dense_sprea...', abs(S.dense_spread(10, 3)[0] - v_dense) < 1e-12 and abs(S.dense_spread(10, 3)[1] - g_dense) < 1e-12)
print("all derivation checks passed")
