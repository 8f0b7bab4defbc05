# %% [markdown]
# # Effective depth of multi-path networks
#
# Run with `python derivations/04_effective_depth.py` (or open it as a notebook with jupytext).
# Every number is computed; the script ends by asserting that what it derived agrees with
# `amutheory.graph`.
#
# **Claim (second paper).**  For a non-recurrent network with several input -> output paths the
# depth in `eta* ~ depth^(-3/2)` is the *effective depth*: the minimal length of a path through
# the computation graph, counting parameterised layers and residual additions.  Paths that
# skip most of the network dominate the one-step update, so the shortest path sets the scale.

# %%
import pathlib
import sys

import matplotlib.pyplot as plt
import sympy as sp

from amutheory.course import check, show
from amutheory.graph import effective_depth, enumerate_paths, path_moments, shortest_path, longest_path, trace_dag
from amutheory.graph import pathsum

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import zoo  # noqa: E402

# %% [markdown]
# ## 1. The graph
#
# `torch.fx` traces the module into a DAG.  A node weighs 1 when it is a parameterised layer
# (conv, linear, attention projection) or a residual addition (an `add` of two tensors that both
# depend on the input), 0 otherwise (activations, pooling, concatenation, normalisations by
# default).  A path's length is the sum of its node weights.  A ResNet with K = 2 basic blocks:

# %%
dag = trace_dag(zoo.ResNet(K=2), zoo.IMG)
for v in dag.nodes:
    print(f"  {v:<22} kind={dag.kind[v]:<8} weight={dag.weight[v]}  <- {', '.join(dag.preds[v])}")

# %% [markdown]
# ## 2. Shortest vs longest path
#
# The shortest path takes every skip: stem, K additions, head = K + 2.  The longest traverses
# every branch: 1 + 3K + 1.  All 2^K paths, enumerated:

# %%
short, crit = shortest_path(dag)
long_, lpath = longest_path(dag)
print("shortest", short, ":", " -> ".join(crit))
print("longest ", long_, ":", " -> ".join(lpath))
paths = enumerate_paths(dag)
lengths = sorted(sum(dag.weight[v] for v in p) for p in paths)
print("all path lengths:", lengths)
moments = path_moments(dag, 3)
print("moment recursion (#paths, sum L, sum L^2, sum L^3):", moments)
check('(short, long_) == (2 + 2, 3 * 2 + 2)', (short, long_) == (2 + 2, 3 * 2 + 2))
check('moments == [len(lengths), sum(lengths), sum((L ** 2 for L in lengths)...', moments == [len(lengths), sum(lengths), sum(L ** 2 for L in lengths), sum(L ** 3 for L in lengths)])

# %% [markdown]
# ## 3. The path-sum identity
#
# n residual blocks, each skipped or traversed with one layer: `C(n, k)` paths of length k.
# The generating function `(1 + x)^n` under `(x d/dx)^3` at x = 1 gives the cubed sum.

# %%
derived = pathsum.derive_path_sum(3)
closed = pathsum.path_sum_closed_form()
authors = pathsum.authors_closed_form()
show("S_3", derived)  # S_3 = sum_k C(n,k) k^3, derived from (x d/dx)^3 (1 + x)^n at x = 1
show("S_closed", closed)  # the closed form
show("S_authors", authors)  # the authors' script
show("Delta_S", pathsum.authors_error())  # authors - correct
n = pathsum.n
show("cubic_correct", sp.expand(closed / 2 ** (n - 3)))  # the path sum as 2^(n-3) x cubic
show("cubic_authors", sp.expand(authors / 2 ** (n - 3)))
print(f"{'n':>3} {'brute force':>12} {'closed':>12} {'authors':>12} {'rel. error':>10}")
table_n, table_bf, table_a = [], [], []
for m in range(0, 13):
    bf = pathsum.path_sum_brute_force(m)
    c = pathsum.evaluate(closed, m)
    a = pathsum.evaluate(authors, m)
    rel = float((a - c) / c) if c else 0.0
    table_n.append(m)
    table_bf.append(float(bf))
    table_a.append(float(a))
    print(f"{m:>3} {bf:>12} {str(c):>12} {str(a):>12} {rel:>10.3f}")
    check('bf == c', bf == c)
    check('a - c == sp.Rational(m * 2 ** m, 4)', a - c == sp.Rational(m * 2 ** m, 4))
check('sp.simplify(derived - closed) == 0', sp.simplify(derived - closed) == 0)
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogy(table_n[1:], table_bf[1:], "o", label="brute force sum_k C(n,k) k^3")
ax.semilogy(table_n[1:], [float(pathsum.evaluate(closed, m_)) for m_ in table_n[1:]], "-", label="closed form")
ax.semilogy(table_n[1:], table_a[1:], "--", label="authors' closed form")
ax.set(xlabel="residual blocks n", ylabel="sum over paths of L^3", title="the path-sum identity")
ax.legend()
# SymPy's own summation agrees (for n > 2 it returns the same polynomial times 2^n)
direct = sp.summation(sp.binomial(n, pathsum.k) * pathsum.k ** 3, (pathsum.k, 0, n))
direct = direct.args[0][0] if isinstance(direct, sp.Piecewise) else direct
check('sp.simplify(direct - closed) == 0', sp.simplify(direct - closed) == 0)

# %% [markdown]
# The two closed forms share the leading two orders (`n^3 + 3 n^2`), so the asymptotic
# exponent is unaffected, but the authors' overcounts by `n 2^(n-2)` at every n >= 1.
#
# The graph recursion reproduces the identity: a chain `x = x + lin_i(x)` with the residual
# additions weighted 0 has exactly these paths.

# %%
for m in (3, 6, 9):
    rep = effective_depth(zoo.SkipChain(m), (2, 3), {"residual": 0})
    print(f"SkipChain({m}): sum_p L_p^3 = {rep.path_sum_cubed}, closed form {pathsum.evaluate(closed, m)}")
    check('rep.path_sum_cubed == pathsum.evaluate(closed, m)', rep.path_sum_cubed == pathsum.evaluate(closed, m))

# %% [markdown]
# ## 4. The zoo
#
# Hand-built models (tests/zoo.py) whose shortest path is known by construction.

# %%
print(f"{'model':<18} {'eff. depth':>10} {'longest':>8} {'blocks':>7} {'paths':>6} {'sum L^3':>9}")
zoo_rows = []
for name, (factory, kw, shape, eff, lon, blocks, lens) in zoo.EXPECTED.items():
    rep = effective_depth(factory(**kw), shape)
    zoo_rows.append((name, rep.effective_depth, rep.longest_path))
    print(f"{name:<18} {rep.effective_depth:>10} {rep.longest_path:>8} {rep.blocks:>7} {rep.num_paths:>6} "
          f"{rep.path_sum_cubed:>9}")
    check('(rep.effective_depth, rep.longest_path, rep.blocks) == (eff, lon, blo...', (rep.effective_depth, rep.longest_path, rep.blocks) == (eff, lon, blocks))
    check('rep.path_sum_cubed == sum((L ** 3 for L in lens))', rep.path_sum_cubed == sum(L ** 3 for L in lens))

fig, ax = plt.subplots(figsize=(7, 4))
xs = range(len(zoo_rows))
ax.bar([x_ - 0.2 for x_ in xs], [r_[1] for r_ in zoo_rows], width=0.4, label="effective depth (shortest path)")
ax.bar([x_ + 0.2 for x_ in xs], [r_[2] for r_ in zoo_rows], width=0.4, label="longest path")
ax.set_xticks(list(xs), [r_[0] for r_ in zoo_rows], rotation=45, ha="right")
ax.set(ylabel="path length", title="the zoo: shortest vs longest path")
ax.legend()
fig.tight_layout()

print("all derivation checks passed")
