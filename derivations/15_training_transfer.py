# %% [markdown]
# # Training-loss transfer: does the derived depth rule carry a tuned rate to another depth?
#
# Run with `python derivations/15_training_transfer.py` (or open it as a notebook:
# `jupytext --to notebook derivations/15_training_transfer.py`).
#
# **What this part teaches.**  Parts 01-14 derive `eta*`, the rate at which the *one-step* update
# has a fixed size, `eta^2 s_bar(L) = C`.  The question a user brings is different: the rate
# `eta*_train` that minimises the training loss of a real run.  Here we train tiny conv chains over
# a learning-rate grid at two depths with `amutheory.train`, find `eta*_train` at each depth, and
# compare the AM-muP depth rule's transferred rate (`amutheory.transfer.transfer_lr`) with the
# measured optimum at the other depth.
#
# **Assumes:** part 01 (the conv-chain law `s_bar(L)` and `eta* ~ s_bar^(-1/2)`), part 02 (its
# finite-depth corrections), `docs/training.md` (what a training cell and its score are).
#
# **What it does not show.**  At this size (width 8, a handful of steps, two seeds) the optimum is
# located only to within a grid step and the seed noise is of the same order as the depth effect,
# so this is a demonstration of the procedure, not evidence for or against the rule: that is what
# `amutheory sweep` and the `transfer` campaign measure at real sizes (`docs/training.md`).

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch

from amutheory.course import check, fast, show
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.conv import conv_law
from amutheory.symbolic.primitives.symbols import L
from amutheory.train import Cell, LrSearch
from amutheory.train.run import train
from amutheory.train.sweep import grid
from amutheory.transfer import transfer_lr

torch.set_num_threads(1)
T0 = time.perf_counter()
FAST = fast()
DEPTHS = (2, 8) if FAST else (2, 4, 8, 16)
SEEDS = (0, 1) if FAST else (0, 1, 2, 3)
STEPS = 30 if FAST else 200
LRS = grid(0.03, 3.0, 5 if FAST else 9)
SPEC = ArchSpec(dim=1, depth=2, width=8, kernel=3, spatial=8, input_channels=3, outputs=10)
print(f"depths {DEPTHS}, seeds {SEEDS}, {STEPS} SGD steps, rates {np.round(LRS, 4).tolist()}")

# %% [markdown]
# ## 1. The rule to test: the derived depth factor
#
# The AM-muP rule keeps `eta^2 s_bar(L)` fixed, so a rate tuned at depth `L_r` moves to depth
# `L_t` by the factor `sqrt(s_bar(L_r) / s_bar(L_t))`, with the conv-chain law of part 01
# (finite-depth terms included; constants from the MLP limit).  At large depth the factor tends
# to `(L_t / L_r)^(-3/2)`.

# %%
law = conv_law(None)
show("s_bar", law.s_bar)
L_r, L_t = sp.symbols("L_r L_t", positive=True)
factor = sp.sqrt(law.s_bar.subs(L, L_r) / law.s_bar.subs(L, L_t))
show("eta_ratio", factor)
show("eta_ratio_leading", (L_t / L_r) ** law.exponent)
show("exponent", law.exponent)

# %% [markdown]
# ## 2. Train: every rate, every seed, every depth
#
# One cell is one seeded SGD run (cross-entropy on Gaussian inputs labelled by a random teacher
# net: the `synthetic` dataset); its score is the mean training loss over the run (the papers'
# choice).  The rates of one (depth, seed) train side by side in one vectorised pass.  A run
# diverges when its loss exceeds 10x its first loss and then scores +inf.

# %%
template = Cell(spec=SPEC, lr=LRS[0], dataset="synthetic", steps=STEPS, batch_size=16)
searches = {}
for depth in DEPTHS:
    scores = np.empty((len(LRS), len(SEEDS)))
    for j, seed in enumerate(SEEDS):
        group = [template.with_(spec=SPEC.with_(depth=depth), lr=lr, seed=seed) for lr in LRS]
        for i, rec in enumerate(train(group)):
            scores[i, j] = math.inf if rec["score"] is None else float(rec["score"])
    searches[depth] = LrSearch(np.array(LRS), list(SEEDS), scores, depth=depth, width=SPEC.width)
    s = searches[depth]
    print(f"L = {depth:2d}: mean loss {np.round(s.loss_mean, 3).tolist()}  eta*_grid {s.eta_star_grid:.4g}  "
          f"eta*_train {s.eta_star_train:.4g}  CI {s.eta_star_train_ci}  flags {s.flags}")

# %% [markdown]
# ## 3. The optimum, by hand
#
# `eta*_train` is the vertex of the parabola through the grid argmin of the seed-mean loss and its
# two neighbours, in `ln eta`.  Redo it here with `numpy.polyfit` (three points, exact fit).

# %%
by_hand = {}
for depth, s in searches.items():
    k = int(np.argmin(np.where(np.isfinite(s.loss_mean), s.loss_mean, np.inf)))
    if 0 < k < len(LRS) - 1 and np.all(np.isfinite(s.loss_mean[k - 1:k + 2])):
        c2, c1, _ = np.polyfit(np.log(s.lrs[k - 1:k + 2]), s.loss_mean[k - 1:k + 2], 2)
        by_hand[depth] = math.exp(-c1 / (2 * c2)) if c2 > 0 else math.nan
    else:
        by_hand[depth] = math.nan
    print(f"L = {depth:2d}: grid argmin index {k} of {len(LRS) - 1}; parabola vertex by hand {by_hand[depth]:.4g}")

# %% [markdown]
# ## 4. Transfer from the shallowest depth and compare
#
# Tune at `L_r` (the measured `eta*_train` there), transfer with the AM-muP rule, and set the
# transferred rate beside the optimum measured at `L_t`.  The log-ratio is the rule's error in
# units of `ln eta`; the grid spacing (`ln` of the step between rates) is the resolution.

# %%
ref = DEPTHS[0]
eta_ref = searches[ref].eta_star_train if math.isfinite(searches[ref].eta_star_train) else searches[ref].eta_star_grid
spacing = math.log(LRS[1] / LRS[0])
transferred = {}
for depth in DEPTHS[1:]:
    res = transfer_lr(eta_ref, SPEC.with_(depth=ref), SPEC.with_(depth=depth), rule="am-mup")
    transferred[depth] = res.lr
    measured = searches[depth].eta_star_train
    err = math.log(res.lr / measured) if math.isfinite(measured) else math.nan
    print(f"L {ref} -> {depth}: factor {res.depth_factors['am-mup']:.4g} (leading order "
          f"{(depth / ref) ** -1.5:.4g});  transferred {res.lr:.4g}  measured {measured:.4g}  "
          f"ln(transferred/measured) = {err:+.2f}  (grid step {spacing:.2f})")

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for depth, s in searches.items():
    line, = ax.plot(s.lrs, s.loss_mean, "o-", label=f"L = {depth}")
    if math.isfinite(s.eta_star_train):
        ax.axvline(s.eta_star_train, color=line.get_color(), ls=":", lw=1)
    if depth in transferred:
        ax.axvline(transferred[depth], color=line.get_color(), ls="--", lw=1)
ax.set(xscale="log", xlabel="learning rate", ylabel="mean training loss",
       title="training-loss transfer (dotted: measured optimum, dashed: AM-muP transfer)")
ax.legend()

# %% [markdown]
# ## Checks
#
# What can fail here, honestly at this size: (1) the measured optimum is bracketed by the grid at
# every depth (an edge optimum would make the comparison meaningless); (2) the library's vertex
# equals the parabola fitted by hand; (3) the transferred rate lies within the grid, where the
# measurement can speak to it; (4) the transfer factor is the derived `(L_t/L_r)^(-3/2)` law's
# direction: it lowers the rate with depth.  **Not** checked: that the transferred rate hits the
# measured optimum -- with two seeds and a 5-point grid the optimum's bootstrap interval spans
# about a grid step, so agreement or disagreement at this size is not evidence (the `transfer`
# campaign measures the rule's error at real sizes).

# %%
for depth, s in searches.items():
    k = int(np.argmin(np.where(np.isfinite(s.loss_mean), s.loss_mean, np.inf)))
    check(f"optimum bracketed at L = {depth}", 0 < k < len(LRS) - 1 and "edge" not in " ".join(s.flags),
          f"grid argmin {s.lrs[k]:.4g} in ({LRS[0]:.4g}, {LRS[-1]:.4g})")
    check(f"vertex by hand at L = {depth}", abs(by_hand[depth] / s.eta_star_train - 1) < 1e-9,
          f"{by_hand[depth]:.6g} vs {s.eta_star_train:.6g}")
for depth, lr in transferred.items():
    check(f"transferred rate within the grid at L = {depth}", LRS[0] <= lr <= LRS[-1], f"{lr:.4g}")
    check(f"the rule lowers the rate from L = {ref} to {depth}", lr < eta_ref, f"{lr:.4g} < {eta_ref:.4g}")

# %% [markdown]
# ## 5. At real size: what the registered protocol found
#
# The same procedure at the size where it is evidence is `amutheory validate --preset protocol-2026-11-27`
# (registered before it ran: `validate/plans/REGISTRATION_PROTOCOL_2026_11_27.md`; about 40 minutes
# on 2 cores).  Its summary and its replicate's on disjoint seeds are kept beside its findings page
# (`docs/findings/protocol_2026_11_27/`, written by `python validate/protocol_findings.py --registration
# 2026-11-27`); read them here.  (The later registration, `--preset protocol`, is docs/findings/protocol.md.)  A
# claim whose nets do not learn at their optimum (final training loss above half the chance loss) is
# `untestable`, whatever its exponent says.

# %%
import json  # noqa: E402
import pathlib  # noqa: E402

from amutheory.protocol.replicate import replicate_rows  # noqa: E402
from amutheory.protocol.report import learning_points  # noqa: E402

KEPT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "findings" / "protocol_2026_11_27"
summary = json.loads((KEPT / "summary.json").read_text())
replicate_file = KEPT / "replicate_summary.json"
rows = {r["claim"]: r for r in replicate_rows(summary, json.loads(replicate_file.read_text()))} \
    if replicate_file.is_file() else {}
print(f"protocol {summary['fingerprint']}: {summary['size_note']}")
for c in summary["claims"]:
    learning = learning_points(c)
    rep = rows.get(c["name"])
    where = "" if not rep or rep["second_inside_first"] is None else \
        ("; replicate inside the CI" if rep["second_inside_first"] else "; replicate OUTSIDE the CI")
    print(f"{c['name']:>22}: {c['verdict']:<12} learning at {learning}{where}")

# %% [markdown]
# What a reader checks before trusting a verdict: every claim that is not `untestable` rests on
# nets that learn at every point its fits use, and every `untestable` one names the largest size it
# tried and the verdict it would have had.

# %%
for c in summary["claims"]:
    pts = [ok for study in (c.get("learns") or {}).values() for ok in study.values()]
    if c["verdict"] == "untestable":
        largest = c.get("largest_size") or {}
        check(f"{c['name']} says what it rests on", largest and "verdict_if_tested" in c,
              "largest tried: " + "; ".join(f"{st} at {v.get('depth')}, final loss "
                                            f"{'diverged' if v.get('final_loss_at_optimum') is None else round(v['final_loss_at_optimum'], 2)}"
                                            for st, v in largest.items()))
    else:
        check(f"{c['name']} rests on nets that learn", pts and all(ok is True for ok in pts),
              f"{sum(ok is True for ok in pts)} of {len(pts)} points learn")
print(f"(ran in {time.perf_counter() - T0:.1f} s)")
print("all derivation checks passed")
