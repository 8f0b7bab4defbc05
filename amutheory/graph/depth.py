"""Effective depth of a multi-path network: path lengths on the node-weighted DAG.

A path runs from the graph input (placeholder) to the output node; its length ``L_p`` is the sum
of the weights of its nodes (see :mod:`amutheory.graph.trace`: parameterised layer 1, residual
addition 1, normalisation 0, anything else 0, by default).

* ``effective_depth`` = ``min_p L_p`` (the depth in ``eta* ~ depth^(-3/2)``), ``critical_path`` =
  the node names of one shortest path (input ... output; ties broken by graph order).
* ``longest_path`` = ``max_p L_p``.
* ``blocks`` = the number of *sequential update-bearing units*: the largest number of residual
  additions on any one input -> output path when the graph has residual additions (each residual
  block is one unit, however many layers its branch holds); for a graph without residual
  additions (plain chain, concat-only graphs) the largest number of parameterised layers
  (kind ``layer``) on one path.  Counted by kind, independent of the configured weights.
* ``path_sum_cubed`` = ``sum_p L_p^3`` over all input -> output paths with multiplicity, by
  dynamic programming over the moments ``(#paths, sum L, sum L^2, sum L^3)`` of each node (a
  node of weight ``w`` shifts ``L -> L + w``: binomial expansion); no enumeration.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from math import comb

from amutheory.graph.trace import WeightedDAG, trace_dag


@dataclass
class DepthReport:
    effective_depth: float
    longest_path: float
    blocks: int
    path_sum_cubed: float
    critical_path: list[str]
    num_paths: int = 0
    mean_path_length: float = 0.0
    residual_additions: int = 0
    parameterised_layers: int = 0
    norm_layers: int = 0
    nodes: int = 0
    edges: int = 0
    longest_critical_path: list[str] = field(default_factory=list)
    weights: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _extreme_path(dag: WeightedDAG, weight: dict, pick) -> tuple[float, list[str]]:
    best: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for v in dag.nodes:
        ps = dag.preds[v]
        if not ps:
            best[v], via[v] = weight[v], None
            continue
        u = ps[0]
        for p in ps[1:]:
            if pick(best[p], best[u]):
                u = p
        best[v], via[v] = best[u] + weight[v], u
    path, v = [], dag.sink
    while v is not None:
        path.append(v)
        v = via[v]
    return best[dag.sink], path[::-1]


def shortest_path(dag: WeightedDAG) -> tuple[float, list[str]]:
    """``(length, node names)`` of a minimal input -> output path."""
    return _extreme_path(dag, dag.weight, lambda a, b: a < b)


def longest_path(dag: WeightedDAG) -> tuple[float, list[str]]:
    """``(length, node names)`` of a maximal input -> output path."""
    return _extreme_path(dag, dag.weight, lambda a, b: a > b)


def path_moments(dag: WeightedDAG, order: int = 3) -> list:
    """``[#paths, sum L, ..., sum L^order]`` over all input -> output paths (exact for integer weights)."""
    mom: dict[str, list] = {}
    for v in dag.nodes:
        ps = dag.preds[v]
        if not ps:
            acc = [1] + [0] * order
        else:
            acc = [0] * (order + 1)
            for p in ps:
                for j in range(order + 1):
                    acc[j] += mom[p][j]
        w = dag.weight[v]
        if w:  # sum (L + w)^j = sum_i C(j, i) w^(j-i) sum L^i
            acc = [sum(comb(j, i) * w ** (j - i) * acc[i] for i in range(j + 1)) for j in range(order + 1)]
        mom[v] = acc
    return mom[dag.sink]


def enumerate_paths(dag: WeightedDAG, limit: int = 100_000) -> list[list[str]]:
    """All input -> output paths, by depth-first search (for checks on small graphs only)."""
    succ = dag.succs()
    out: list[list[str]] = []

    def walk(v, path):
        if len(out) > limit:
            raise ValueError(f"more than {limit} paths; use path_moments")
        if v == dag.sink:
            out.append(path)
            return
        for s in succ[v]:
            walk(s, path + [s])

    walk(dag.source, [dag.source])
    return out


def report(dag: WeightedDAG) -> DepthReport:
    """All depth statistics of a traced DAG."""
    eff, crit = shortest_path(dag)
    lon, lpath = longest_path(dag)
    counts = {k: sum(1 for v in dag.nodes if dag.kind[v] == k) for k in ("residual", "layer", "norm")}
    unit = "residual" if counts["residual"] else "layer"
    blocks, _ = _extreme_path(dag, {v: int(dag.kind[v] == unit) for v in dag.nodes}, lambda a, b: a > b)
    n, s1, _, s3 = path_moments(dag, 3)
    return DepthReport(effective_depth=eff, longest_path=lon, blocks=int(blocks), path_sum_cubed=s3,
                       critical_path=crit, num_paths=n, mean_path_length=s1 / n,
                       residual_additions=counts["residual"], parameterised_layers=counts["layer"],
                       norm_layers=counts["norm"], nodes=len(dag.nodes), edges=len(dag.edges()),
                       longest_critical_path=lpath, weights=dict(dag.weights_used))


def effective_depth(model, input_shape=None, weights=None, *, leaf_modules=(), module_weights=None,
                    input_dtype=None) -> DepthReport:
    """Trace ``model`` (``torch.fx``) and return its :class:`DepthReport`.

    ``weights``: ``{"layer": 1, "residual": 1, "norm": 0}`` by default (any subset overrides);
    ``input_shape`` e.g. ``(1, 3, 32, 32)``: the model is run once on zeros to tell data edges from
    shape metadata (``input_dtype="long"``: integer zeros, for a model that takes token ids).
    ``leaf_modules``/``module_weights``: see :func:`amutheory.graph.trace.trace_dag`.  Raises ``ValueError`` (one line) when tracing or running fails.
    """
    dag = trace_dag(model, input_shape, weights, leaf_modules=leaf_modules, module_weights=module_weights,
                    input_dtype=input_dtype)
    return report(dag)


def plot_dag(dag: WeightedDAG, path: str, critical: list[str] | None = None) -> None:
    """Draw the DAG (columns = topological level) with the critical path (``critical``, default one
    minimal-length input -> output path: its length is the effective depth) in red and a legend of
    the node colours; writes ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = dag_figure(dag, critical)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def dag_figure(dag: WeightedDAG, critical: list[str] | None = None):
    """The figure :func:`plot_dag` writes (a matplotlib ``Figure``; the caller closes it)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    crit = critical if critical is not None else shortest_path(dag)[1]
    on = set(zip(crit, crit[1:]))
    level: dict[str, int] = {}
    for v in dag.nodes:
        level[v] = 1 + max((level[u] for u in dag.preds[v]), default=-1)
    rows: dict[int, int] = {}
    pos = {}
    crit_set = set(crit)
    for v in dag.nodes:  # the critical path on row 0, the other nodes above it
        if v in crit_set:
            pos[v] = (level[v], 0)
            rows.setdefault(level[v], 1)
        else:
            rows[level[v]] = rows.get(level[v], 1) + 1
            pos[v] = (level[v], rows[level[v]] - 1)
    colour = {"layer": "tab:blue", "residual": "tab:green", "norm": "tab:orange"}
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows)), max(3, 0.8 * max(rows.values()))))
    for u, v in dag.edges():
        red = (u, v) in on
        ax.plot([pos[u][0], pos[v][0]], [pos[u][1], pos[v][1]], color="red" if red else "0.7",
                lw=2.5 if red else 0.8, zorder=1)
    for v in dag.nodes:
        ax.scatter(*pos[v], s=60, color=colour.get(dag.kind[v], "0.4"), zorder=2,
                   edgecolors="red" if v in crit else "none")
        ax.annotate(f"{v} ({dag.weight[v]:g})", pos[v], fontsize=6, rotation=30, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_axis_off()
    crit_len = sum(dag.weight[v] for v in crit)
    kinds = {"layer": "parameterised layer", "residual": "residual addition", "norm": "normalisation"}
    handles = [Line2D([], [], ls="none", marker="o", color=colour[k], label=label) for k, label in kinds.items()]
    handles.append(Line2D([], [], ls="none", marker="o", color="0.4", label="other node"))
    handles.append(Line2D([], [], color="red", lw=2.5,
                          label=f"critical path (minimal input -> output length = effective depth {crit_len:g})"))
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, frameon=False)
    ax.set_title("computation graph (columns: topological level; node label: name (weight))", pad=40)
    fig.tight_layout()
    return fig
