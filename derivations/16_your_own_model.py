# %% [markdown]
# # Your own model: probe, coord check, init, learning-rate groups and transfer on a plain nn.Module
#
# Run with `python derivations/16_your_own_model.py` (or open it as a notebook:
# `jupytext --to notebook derivations/16_your_own_model.py`).
#
# **What this part teaches.**  Parts 01-15 work on the networks the toolkit builds.  A practitioner
# has their own `nn.Module`.  Here we write one -- a residual MLP with PyTorch's default init, as most
# code has it -- as a factory `make(depth=, width=)` and take it through the path of
# [docs/your_model.md](../docs/your_model.md): trace it, probe its one-step update at a few depths
# (`amutheory.measure` on the factory), run a coord check (`amutheory.coord_check`), apply the
# residual-aware init and per-parameter rates (`amutheory.parametrize`, `amutheory.param_groups`),
# and transfer a rate to a deeper model with its interval and the rules' assumptions it breaks.
# Each step is checked against something computed by hand.
#
# **Assumes:** part 01 (the one-step update `s_l`, `eta* = sqrt(C / s_bar)`), part 05 (the residual
# init conventions, `k-last`), part 11 (effective depth of a traced graph), part 15 (a tuned rate).
#
# **What it does not show.**  Whether the transferred rate is right for this model: that needs a
# sweep at the deeper depth (`amutheory sweep --model ... --transfer-from L:LR`); a measured example
# is [docs/findings/user_model_transfer.md](../docs/findings/user_model_transfer.md).

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from torch import nn

import amutheory
from amutheory.course import check, fast, section, show
from amutheory.graph import effective_depth
from amutheory.transfer import transfer_with_interval

torch.set_num_threads(1)
T0 = time.perf_counter()
FAST = fast()
DEPTHS = (2, 4, 8)
WIDTH = 16 if FAST else 64
SEEDS = 3 if FAST else 8
SHAPE = (8, 1, 8, 8)  # batch first: 8x8 one-channel images
print(f"depths {DEPTHS}, width {WIDTH}, {SEEDS} seeds, input {SHAPE}")

# %% [markdown]
# ## 0. The model: a factory `make(depth=, width=)`
#
# Every tool calls the factory after `torch.manual_seed(seed)`, so the factory draws from torch's
# global generator and sets no seed itself.  PyTorch's default `Linear` init is kept.


# %%
class Block(nn.Module):
    """x + W2 relu(W1 x): one residual branch"""

    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class ResMLP(nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        self.inp = nn.Sequential(nn.Flatten(), nn.Linear(64, width))
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(torch.relu(self.inp(x))))


def make(depth=4, width=64):
    return ResMLP(depth, width)


# %% [markdown]
# ## 1. Look at it: the traced graph
#
# `amutheory depth` (here `amutheory.graph.effective_depth`) traces the model with `torch.fx`.  By
# hand: the shortest input -> output path runs through the input layer, then along the skip of every
# block (one residual addition each), then the readout: `L_eff = 1 + L + 1`.  The longest path goes
# through both layers of every branch: `1 + 3 L + 1` (two layers and the addition per block).

# %%
section("1. the traced graph")
reports = {L: effective_depth(make(depth=L, width=WIDTH), SHAPE) for L in DEPTHS}
for L, rep in reports.items():
    print(f"L = {L}: effective depth {rep.effective_depth}, longest path {rep.longest_path}, "
          f"residual additions {rep.residual_additions}")

# %% [markdown]
# ## 2. Probe it: the one-step update of every counted layer
#
# For the loss `mean <r, f(x)>` and one SGD step `theta -> theta - eta g`, every counted
# pre-activation moves by `Delta h_l = -eta J_l g + O(eta^2)`; the probe reports
# `s_l = mean[(J_l g)^2]` and `eta* = sqrt(C / s_bar)`, `s_bar` the layer average.  Counted by
# default: every `Linear` output but the readout's.

# %%
section("2. the probe")
s_l, eta_sym, C_sym, Lsym = sp.symbols("s_l eta C L", positive=True)
show("s_bar", sp.Sum(sp.Indexed("s", sp.Symbol("l")), (sp.Symbol("l"), 1, Lsym)) / Lsym)
show("eta_star", sp.sqrt(C_sym / sp.Symbol("s_bar")))
m = amutheory.measure(make, DEPTHS, SEEDS, input_shape=SHAPE, width=WIDTH)
summary = m.summary()
for L, eta in zip(DEPTHS, summary["eta_star_mean"]):
    print(f"L = {L}: {m.profiles[L].shape[1]} counted layers, eta*(mean) {eta:.4g}")
slope, ci = m.fitted_exponent()
print(f"fitted exponent of eta* in depth: {slope:.3f}  95% CI [{ci[0]:.3f}, {ci[1]:.3f}]")
print("counted at the deepest:", ", ".join(m.layers[DEPTHS[-1]]))

# %% [markdown]
# **By hand.**  Redo seed 0 at the shallowest depth with plain autograd: the same draws (the seeding
# rule: `manual_seed(0)`, the model, then `x`, then `r`, float64), the gradient, and the change of
# each counted `Linear` output under a step of `+-eta` along `-g`, by central differences:
# `(h(theta - eta g) - h(theta + eta g)) / (2 eta) = J_l (-g) + O(eta^2)`.


# %%
def by_hand_s(depth, seed, eta=1e-5):
    torch.manual_seed(seed)
    model = make(depth=depth, width=WIDTH).double()
    x = torch.randn(SHAPE, dtype=torch.float64)
    r = torch.randn(model(x).shape, dtype=torch.float64)
    params = list(model.parameters())
    g = torch.autograd.grad((model(x) * r).sum(-1).mean(), params)
    counted = [mod for mod in model.modules() if isinstance(mod, nn.Linear) and mod is not model.head]

    def outputs(sign):
        hs = []
        hooks = [mod.register_forward_hook(lambda _m, _i, out: hs.append(out.detach().clone())) for mod in counted]
        with torch.no_grad():
            for p, gp in zip(params, g):
                p.sub_(sign * eta * gp)
            model(x)
            for p, gp in zip(params, g):
                p.add_(sign * eta * gp)
        for h in hooks:
            h.remove()
        return hs

    plus, minus = outputs(+1), outputs(-1)
    return np.array([((a - b) / (2 * eta)).pow(2).mean().item() for a, b in zip(plus, minus)])


hand = by_hand_s(DEPTHS[0], 0)
probe0 = m.profiles[DEPTHS[0]][0]
print("s_l by hand:  ", np.round(hand, 6).tolist())
print("s_l the probe:", np.round(probe0, 6).tolist())

# %% [markdown]
# ## 3. A coord check: train a few steps at one rate at every depth
#
# `amutheory.coord_check` trains every depth at the *same* rate and records each module's update
# size `|h_t - h_0|` (root mean square) per step.  Under a fixed rate the theory expects the
# residual blocks' update to **grow** with depth (every branch adds its change to the stream all
# later blocks read; part 06).  The reading fits the slope of `ln(update)` against `ln(depth)`, per
# module group; we refit one group's slope by hand with `numpy.polyfit`.

# %%
section("3. the coord check")
coord = amutheory.coord_check(make, input_shape=(16, 1, 8, 8), depths=DEPTHS, widths=[WIDTH], steps=2,
                              lr=0.05, seeds=SEEDS)
reading = coord["reading"]
print(f"read as: {reading['kind']}; expected: {reading['expectation']}")
last = max(g["step"] for g in reading["groups"])
for g in reading["groups"]:
    if g["step"] == last:
        print(f"  {g['group']:14s} step {g['step']}: slope {g['depth_slope']:+.3f}  CI "
              f"[{g['depth_slope_ci'][0]:+.3f}, {g['depth_slope_ci'][1]:+.3f}]  {g['depth_trend']:8s} "
              f"expected {g['expected_depth_trend']}")


def group_update(records, group, step):
    """Seed-mean ln of the group's layer-averaged update (RMS over its modules), per depth."""
    out = {}
    for L in DEPTHS:
        per_seed = []
        for seed in range(SEEDS):
            u = [r["update_rms"] ** 2 for r in records
                 if r["group"] == group and r["step"] == step and r["depth"] == L and r["seed"] == seed]
            per_seed.append(math.log(math.sqrt(sum(u) / len(u))))
        out[L] = float(np.mean(per_seed))
    return out


fc1 = group_update(coord["records"], "blocks.*.fc1", last)
slope_by_hand = np.polyfit(np.log(DEPTHS), [fc1[L] for L in DEPTHS], 1)[0]
read_fc1 = next(g for g in reading["groups"] if g["group"] == "blocks.*.fc1" and g["step"] == last)
print(f"blocks.*.fc1 slope by hand {slope_by_hand:.6f}, the reading's {read_fc1['depth_slope']:.6f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(DEPTHS, [math.exp(fc1[L]) for L in DEPTHS], "o-", label=f"blocks.*.fc1, step {last}")
ax.set(xscale="log", yscale="log", xlabel="depth L", ylabel="update size |h_t - h_0| (rms)",
       title="coord check at a fixed rate")
ax.legend()

# %% [markdown]
# ## 4. The init and the learning-rate groups
#
# Tune at the base depth, build the deeper model, then `parametrize(model, init="k-last",
# base_model=base)` rescales the last layer of every residual branch to variance `x K_base / K`
# (`K` = blocks), and `param_groups(model, lr, base_model=base)` gives every parameter its rate.
# At the base itself both must be the identity.

# %%
section("4. parametrize and param_groups")
L0, L1, LR = DEPTHS[0], DEPTHS[-1], 0.1
x_example = torch.zeros(SHAPE)
torch.manual_seed(0)
base = make(depth=L0, width=WIDTH)
torch.manual_seed(0)
same = make(depth=L0, width=WIDTH)
before_same = {n: p.detach().clone() for n, p in same.named_parameters()}
amutheory.parametrize(same, init="k-last", example_input=x_example, base_model=base)
groups_same = amutheory.param_groups(same, LR, base_model=base, example_input=x_example)
unchanged = all(torch.equal(before_same[n], p) for n, p in same.named_parameters())
print(f"at the base: weights unchanged {unchanged}; multipliers {sorted({g['multiplier'] for g in groups_same})}")

torch.manual_seed(1)
deep = make(depth=L1, width=WIDTH)
before = {n: p.detach().clone() for n, p in deep.named_parameters()}
report = amutheory.parametrize(deep, init="k-last", example_input=x_example, base_model=base)
groups = amutheory.param_groups(deep, LR, base_model=base, example_input=x_example)
print(groups.table())
ratio = {n: (p.detach().pow(2).mean() / before[n].pow(2).mean()).item() for n, p in deep.named_parameters()}
fc2_ratios = [v for n, v in ratio.items() if n.endswith("fc2.weight")]
fc1_ratios = [v for n, v in ratio.items() if n.endswith("fc1.weight")]
show("r_var", sp.Symbol("K_base") / sp.Symbol("K"))
print(f"K_base / K = {L0}/{L1} here (one block per residual branch)")
print(f"fc2 (branch-last) variance ratios {np.round(fc2_ratios, 9).tolist()}")

# %% [markdown]
# ## 5. Transfer, with the interval and the rules' assumptions
#
# `transfer_with_interval` (what `amutheory transfer --from make --from-depth L0 --to-depth L1` runs)
# moves the tuned rate with every rule; `lr_interval` carries the tuned rate's CI through the rule's
# factor `f`, widened by the rule's recorded held-out error `e` for this kind of net where a protocol
# run recorded one: `[lo f e^-e, hi f e^e]`.  `confidence.mismatches` names what the rules assume and
# this model breaks: here the chain law used for a residual net, and PyTorch's default init
# (`Var[W] fan_in = 1/3`, against ReLU's critical `2`).  Re-drawn with He's init the `init` mismatch
# must go.

# %%
section("5. transfer")
LR_CI = (0.07, 0.14)
torch.manual_seed(1)
target = make(depth=L1, width=WIDTH)
res = transfer_with_interval(LR, base, target, input_shape=SHAPE, lr_ci=LR_CI)
conf = res.confidence
print(f"lr {LR} at L = {L0} -> {res.lr:.4g} at L = {L1} [{res.rule}]; interval "
      f"[{res.lr_interval[0]:.4g}, {res.lr_interval[1]:.4g}]; covers the rule's error: {conf['covers_rule_error']}")
for mm in conf["mismatches"]:
    print(f"  mismatch {mm['assumption']}: {mm['model']}; {mm['rules']}")

he = make(depth=L1, width=WIDTH)
for mod in he.modules():
    if isinstance(mod, nn.Linear):
        nn.init.kaiming_normal_(mod.weight, nonlinearity="relu")
he_mismatches = {mm["assumption"] for mm in transfer_with_interval(LR, base, he, input_shape=SHAPE).confidence[
    "mismatches"]}
print(f"He-init target: mismatches {sorted(he_mismatches)}")
f = res.lr / LR
e = 0.0 if conf["held_out_error"] is None else conf["held_out_error"]["median_abs_log_error"]
by_hand_interval = [LR_CI[0] * f * math.exp(-e), LR_CI[1] * f * math.exp(e)]
sgd_hidden = {g["lr"] for g in groups if g["role"] in ("input", "hidden", "branch", "branch-last")}
sgd_kept = {g["lr"] for g in groups if g["role"] in ("norm", "bias", "readout-bias")}

# %% [markdown]
# ## Checks
#
# (1) The traced effective depth is the hand count `L + 2` (and the longest path `3 L + 2`).  (2) Every
# `s_l` is positive and finite, and the probe equals the central-difference `s_l` done by hand with
# autograd (relative `1e-6`: the difference error is `O(eta^2)`).  (3) The coord check read the
# model as residual, its slope equals the one refitted by hand, and the blocks' update grows with
# depth as the theory expects under a fixed rate (this can fail: a shrinking or flat reading would).
# (4) At the base `parametrize` changes nothing and every multiplier is 1; at `L1` the branch-last
# variances shrink by exactly `L0 / L1` and the other branch layers keep theirs.  (5) The interval is
# `[lo f e^-e, hi f e^e]` by hand and holds the transferred rate; the SGD rate of every layer weight
# but the readout's equals `transfer`'s under the same rule (a consistency check, not evidence that the
# rule is right), biases are kept at the base rate; the
# default init is named as an `init` mismatch and a He init is not.

# %%
for L, rep in reports.items():
    check(f"effective depth at L = {L} is L + 2", rep.effective_depth == L + 2, f"{rep.effective_depth}")
    check(f"longest path at L = {L} is 3 L + 2", rep.longest_path == 3 * L + 2, f"{rep.longest_path}")
all_s = np.concatenate([m.profiles[L].ravel() for L in DEPTHS])
check("every s_l positive and finite", np.all(np.isfinite(all_s)) and np.all(all_s > 0),
      f"min {all_s.min():.3g}, {all_s.size} values")
check("probe = central differences by hand", len(hand) == len(probe0) and np.allclose(hand, probe0, rtol=1e-6),
      f"max rel diff {np.max(np.abs(hand / probe0 - 1)):.2e}")
check("coord check read the model as residual", reading["kind"] == "residual", reading["kind"])
check("coord slope refitted by hand", abs(slope_by_hand - read_fc1["depth_slope"]) < 1e-9,
      f"{slope_by_hand:.6f} vs {read_fc1['depth_slope']:.6f}")
check("blocks' update grows with depth at a fixed rate", read_fc1["depth_trend"] == "growing",
      f"CI {np.round(read_fc1['depth_slope_ci'], 3).tolist()}")
check("parametrize is the identity at the base", unchanged)
check("param_groups is the identity at the base", all(g["multiplier"] == 1 and g["lr"] == LR for g in groups_same))
check(f"branch-last variance x {L0}/{L1}", np.allclose(fc2_ratios, L0 / L1, rtol=1e-9),
      f"{min(fc2_ratios):.9f} .. {max(fc2_ratios):.9f}")
check("other branch layers unchanged", np.allclose(fc1_ratios, 1.0, rtol=1e-12))
check("interval by hand", np.allclose(res.lr_interval, by_hand_interval, rtol=1e-12),
      f"{np.round(res.lr_interval, 6).tolist()}")
check("interval holds the transferred rate", res.lr_interval[0] <= res.lr <= res.lr_interval[1])
check("param_groups' SGD rates = transfer's", all(math.isclose(v, groups.transfer.lr, rel_tol=1e-12)
                                                  for v in sgd_hidden)
      and math.isclose(groups.transfer.lr, res.rules[groups.rule], rel_tol=1e-12) and sgd_kept == {LR},
      f"{sorted(sgd_hidden)} vs {res.rules[groups.rule]:.6g} ({groups.rule}); biases {sorted(sgd_kept)}")
check("default init named as a mismatch", "init" in {mm["assumption"] for mm in conf["mismatches"]})
check("He init is not", "init" not in he_mismatches, f"{sorted(he_mismatches)}")
print(f"(ran in {time.perf_counter() - T0:.1f} s)")
print("all derivation checks passed")
