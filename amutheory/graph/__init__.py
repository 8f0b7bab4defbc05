"""Effective depth of multi-path networks (computation-graph paths; issue 5, first slice).

``effective_depth(model, input_shape)`` traces a module with ``torch.fx``, weights its nodes
(parameterised layer / residual addition / normalisation) and returns a :class:`DepthReport`:
the minimal input -> output path length (the depth in ``eta* ~ depth^(-3/2)``), the longest,
the number of sequential blocks and ``sum_p L_p^3`` over all paths.  See :mod:`.trace`,
:mod:`.depth` and :mod:`.pathsum` (the closed form ``sum_k C(n,k) k^3 = 2^(n-3) n^2 (n+3)``).
"""

from amutheory.graph.depth import (DepthReport, effective_depth, enumerate_paths, longest_path, path_moments, plot_dag,
                                   report, shortest_path)
from amutheory.graph.trace import DEFAULT_WEIGHTS, WeightedDAG, symbolic_trace, trace_dag

__all__ = ["DEFAULT_WEIGHTS", "DepthReport", "WeightedDAG", "effective_depth", "enumerate_paths", "longest_path",
           "path_moments", "plot_dag", "path_sum_brute_force", "path_sum_closed_form", "report", "shortest_path",
           "symbolic_trace", "trace_dag"]


def __getattr__(name):
    """The path-sum closed forms (SymPy) load on first use: tracing a model needs torch only."""
    if name in ("path_sum_brute_force", "path_sum_closed_form"):
        from amutheory.graph import pathsum

        return getattr(pathsum, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
