"""Trace a ``torch.nn.Module`` with ``torch.fx`` into a node-weighted DAG.

The depth law ``eta* ~ depth^(-3/2)`` of a multi-path (non-recurrent) network uses an *effective
depth*: the minimal length of a path from the input to the output of the computation graph,
where a path's length is the sum of the weights of the nodes on it.  The weights are:

* ``layer`` (default 1): a ``call_module`` node whose module owns parameters (``Conv*``,
  ``Linear``, an ``nn.MultiheadAttention`` ...), or a functional op that multiplies the data by
  a parameter fetched with ``get_attr`` (``F.linear``, ``F.conv*``, ``x @ self.weight``,
  ``torch.matmul/mm/bmm/einsum``).  A bias or scale applied with ``+``/``*`` counts 0.
* ``norm`` (default 0): normalisation modules (``BatchNorm*``, ``InstanceNorm*``, ``LayerNorm``,
  ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm``) and ``F.layer_norm/batch_norm/group_norm``.
  They have parameters but do not carry an update that compounds like a layer's.
* ``residual`` (default 1): an addition (``operator.add``/``iadd``, ``torch.add``,
  ``Tensor.add``/``add_``) of two *different* tensors that both depend on the graph input
  through data (not shape) edges.  ``x + x`` or ``x + self.bias`` are not residual additions.
* 0: everything else (activations, pooling, ``cat``, reshapes, softmax, attention's
  ``q @ k^T`` between two activations ...).

Modules are traced through unless ``torch.fx`` treats them as leaves: every module defined in
``torch.nn`` is a leaf, so ``nn.MultiheadAttention`` is ONE parameterised layer (weight
``layer``) and its q/k/v/out projections are not counted separately.  To count an attention's
projections, build it from ``nn.Linear`` layers (tests/zoo.py does).  More leaves can be named
with ``leaf_modules`` (module class names, classes, or qualified names like ``"blocks.3"``);
``module_weights`` overrides the weight of any leaf module (by qualified name or class name).
That is the fallback for modules ``torch.fx`` cannot trace (data-dependent control flow): make
them leaves and give them the weight they should count for.

*Data vs shape edges.*  ``x.view(x.size(0), -1)`` reads the input's shape; such metadata edges
must not create short cuts.  With ``input_shape`` the traced graph is run once on a zero tensor
and a node counts as data only when its value contains a tensor; without it, ``size``/``shape``/
``dim``... and arithmetic on them are recognised by name.  ``zeros_like``/``new_zeros``/... take
only the shape of their argument and start no data path either.
"""

from __future__ import annotations

import builtins
import operator
import os
import traceback
from dataclasses import dataclass, field

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

#: weight kinds a node can have
KINDS = ("input", "output", "layer", "norm", "residual", "other")

DEFAULT_WEIGHTS = {"layer": 1, "residual": 1, "norm": 0}

_NORM_TYPES = tuple(t for t in (
    getattr(nn.modules.batchnorm, "_NormBase", None), nn.LayerNorm, nn.GroupNorm,
    getattr(nn, "RMSNorm", None), nn.LocalResponseNorm, nn.CrossMapLRN2d,
) if t is not None)
_NORM_FUNCS = {F.layer_norm, F.batch_norm, F.group_norm, F.instance_norm, getattr(F, "rms_norm", None)} - {None}
_LAYER_FUNCS = {F.linear, F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d,
                F.conv_transpose3d, F.bilinear, torch.matmul, torch.mm, torch.bmm, torch.einsum,
                operator.matmul, torch.addmm, F.embedding}
_LAYER_METHODS = {"matmul", "mm", "bmm", "__matmul__"}
_ADD_FUNCS = {operator.add, operator.iadd, torch.add}
_ADD_METHODS = {"add", "add_", "__add__", "__radd__", "__iadd__"}
_META_METHODS = {"size", "dim", "numel", "nelement", "ndimension", "stride", "get_device", "element_size"}
_META_ATTRS = {"shape", "ndim", "dtype", "device", "is_cuda", "layout", "requires_grad"}
_SHAPE_ONLY_FUNCS = {torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like, torch.rand_like,
                     torch.randn_like, torch.randint_like}
_SHAPE_ONLY_METHODS = {"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "size", "dim", "numel"}
_SCALAR_FUNCS = {operator.getitem, operator.mul, operator.floordiv, operator.truediv, operator.add,
                 operator.sub, operator.mod, operator.pow, operator.neg, builtins.len, builtins.int,
                 builtins.getattr}


@dataclass
class WeightedDAG:
    """A node-weighted DAG: ``nodes`` in topological order, ``preds[name]`` its data predecessors."""

    nodes: list[str]
    preds: dict[str, list[str]]
    weight: dict[str, float]
    kind: dict[str, str]
    source: str
    sink: str
    target: dict[str, str] = field(default_factory=dict)
    weights_used: dict[str, float] = field(default_factory=dict)

    def succs(self) -> dict[str, list[str]]:
        out = {n: [] for n in self.nodes}
        for v in self.nodes:
            for u in self.preds[v]:
                out[u].append(v)
        return out

    def edges(self) -> list[tuple[str, str]]:
        return [(u, v) for v in self.nodes for u in self.preds[v]]


def _resolve_weights(weights) -> dict[str, float]:
    w = dict(DEFAULT_WEIGHTS)
    if weights is None:
        return w
    if not isinstance(weights, dict):
        weights = {k: getattr(weights, k) for k in DEFAULT_WEIGHTS if hasattr(weights, k)}
    unknown = set(weights) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ValueError(f"unknown weight kind(s) {sorted(unknown)}; expected {sorted(DEFAULT_WEIGHTS)}")
    for k, v in weights.items():
        v = float(v)
        if not (v >= 0) or v == float("inf"):
            raise ValueError(f"weight {k!r} must be a finite number >= 0, got {v}")
        w[k] = int(v) if v == int(v) else v
    return w


class _Tracer(torch.fx.Tracer):
    def __init__(self, leaf_modules=()):
        super().__init__()
        self._extra_leaves = list(leaf_modules)
        self._stack: list[str] = []
        self.failed_in: str | None = None

    def _is_extra_leaf(self, m, qualname):
        for leaf in self._extra_leaves:
            if isinstance(leaf, type) and isinstance(m, leaf):
                return True
            if isinstance(leaf, str) and (leaf == qualname or leaf == type(m).__name__):
                return True
        return False

    def is_leaf_module(self, m, module_qualified_name):
        return self._is_extra_leaf(m, module_qualified_name) or super().is_leaf_module(m, module_qualified_name)

    def call_module(self, m, forward, args, kwargs):
        try:
            name = self.path_of_module(m)
        except Exception:  # noqa: BLE001 - only for the error message
            name = type(m).__name__
        self._stack.append(name)
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            if self.failed_in is None:
                self.failed_in = name
            raise
        finally:
            self._stack.pop()


def _user_frame(exc: BaseException) -> str:
    """``file:line `code``` of the innermost frame outside torch, for the error message."""
    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(__file__)
    best = None
    for fs in traceback.extract_tb(exc.__traceback__):
        if not fs.filename.startswith(torch_dir) and not fs.filename.startswith(here):
            best = fs
    if best is None:
        return ""
    return f" at {os.path.basename(best.filename)}:{best.lineno} `{(best.line or '').strip()}`"


def symbolic_trace(model: nn.Module, leaf_modules=()) -> torch.fx.GraphModule:
    """``torch.fx`` trace; a failure becomes a one-line ``ValueError`` naming module and reason."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"expected a torch.nn.Module, got {type(model).__name__}")
    names = {q for q, _ in model.named_modules()} | {type(m).__name__ for m in model.modules()}
    unknown = [leaf for leaf in leaf_modules if isinstance(leaf, str) and leaf not in names]
    if unknown:
        raise ValueError(f"leaf_modules: {unknown[0]!r} names no submodule and no module class of "
                         f"{type(model).__name__}")
    tracer = _Tracer(leaf_modules)
    try:
        graph = tracer.trace(model)
    except Exception as exc:  # noqa: BLE001 - fx raises TraceError, TypeError, RuntimeError ...
        where = tracer.failed_in
        mod = model.get_submodule(where) if where else model
        reason = " ".join(str(exc).split()) or type(exc).__name__
        name = f"module {where!r} ({type(mod).__name__})" if where else f"module {type(model).__name__}"
        raise ValueError(
            f"torch.fx cannot trace {name}{_user_frame(exc)}: {type(exc).__name__}: {reason[:300]}; "
            f"fallback: pass leaf_modules=[{type(mod).__name__!r}] (it then counts as one layer) and set its "
            f"weight with module_weights={{{(where or type(mod).__name__)!r}: w}}") from None
    return torch.fx.GraphModule(tracer.root, graph)


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.has_tensor: dict[str, bool] = {}

    def run_node(self, n):
        result = super().run_node(n)
        found = []
        torch.fx.node.map_aggregate(result, lambda v: found.append(isinstance(v, torch.Tensor)))
        self.has_tensor[n.name] = any(found)
        return result


def _run_shapes(gm: torch.fx.GraphModule, input_shape, input_dtype=None) -> dict[str, bool]:
    shape = tuple(int(s) for s in input_shape)
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"input shape must be positive integers, got {input_shape!r}")
    params = list(gm.parameters())
    dtype = params[0].dtype if params and params[0].is_floating_point() else torch.get_default_dtype()
    if input_dtype == "long":  # token ids (an nn.Embedding first): zeros are token 0
        dtype = torch.long
    device = params[0].device if params else "cpu"
    rec = _Recorder(gm)
    try:
        with torch.no_grad():
            rec.run(torch.zeros(shape, dtype=dtype, device=device))
    except Exception as exc:  # noqa: BLE001
        msg = " ".join(str(exc).split()).split(" While executing")[0]
        raise ValueError(f"running the traced model on an input of shape {shape} failed: "
                         f"{type(exc).__name__}: {msg[:300]}") from None
    return rec.has_tensor


def _is_param_attr(gm, node) -> bool:
    if node.op != "get_attr":
        return False
    try:
        obj = gm.get_parameter(node.target)
    except AttributeError:
        try:
            obj = getattr(gm, node.target) if "." not in node.target else gm.get_buffer(node.target)
        except AttributeError:
            return False
    return isinstance(obj, torch.Tensor) and obj.requires_grad


def trace_dag(model: nn.Module, input_shape=None, weights=None, *, leaf_modules=(),
              module_weights=None, input_dtype=None) -> WeightedDAG:
    """Trace ``model`` into a :class:`WeightedDAG` from its first input to its output.

    ``weights``: dict (or object with attributes) ``layer``/``residual``/``norm``, defaults
    ``{layer: 1, residual: 1, norm: 0}``.  ``input_shape``: e.g. ``(1, 3, 32, 32)``; when given the
    graph is run once to tell tensors from shape metadata (recommended).
    """
    w = _resolve_weights(weights)
    module_weights = dict(module_weights or {})
    gm = symbolic_trace(model, leaf_modules)
    graph_nodes = list(gm.graph.nodes)
    placeholders = [n for n in graph_nodes if n.op == "placeholder"]
    if not placeholders:
        raise ValueError("the model's forward takes no input")
    source = placeholders[0]
    has_tensor = _run_shapes(gm, input_shape, input_dtype) if input_shape is not None else None
    builder = _DagBuilder(gm, source, has_tensor, w, module_weights)
    for n in graph_nodes:
        builder.add(n)
    return builder.finish()


def _is_meta_by_name(n, data: set, meta: dict) -> bool:
    """Whether ``n`` carries shape/scalar metadata, judged by its op's name (no recorded run)."""
    if n.op == "call_method" and n.target in _META_METHODS:
        return True
    if n.op == "call_function" and n.target is builtins.getattr and len(n.args) > 1 and n.args[1] in _META_ATTRS:
        return True
    if n.op == "call_function" and n.target in _SCALAR_FUNCS:
        ins = [a for a in n.all_input_nodes if a.name in data]
        return bool(ins) and all(meta.get(a.name, False) for a in ins)
    return False


def _is_shape_only(n) -> bool:
    """Whether ``n`` takes only the shape of its arguments (``zeros_like``, ``new_zeros``, ...)."""
    return ((n.op == "call_function" and n.target in _SHAPE_ONLY_FUNCS)
            or (n.op == "call_method" and n.target in _SHAPE_ONLY_METHODS))


def _function_kind(gm, n, ins: list) -> str:
    """The weight kind of a ``call_function``/``call_method`` node: ``norm``, ``layer``, ``residual`` or ``other``."""
    params = any(_is_param_attr(gm, a) for a in n.all_input_nodes)
    is_add = (n.op == "call_function" and n.target in _ADD_FUNCS) or (
        n.op == "call_method" and n.target in _ADD_METHODS)
    if n.op == "call_function" and n.target in _NORM_FUNCS:  # with or without affine parameters
        return "norm"
    if params and ((n.op == "call_function" and n.target in _LAYER_FUNCS)
                   or (n.op == "call_method" and n.target in _LAYER_METHODS)):
        return "layer"
    if is_add and len(ins) >= 2:
        return "residual"
    return "other"


def _node_kind(gm, n, ins: list) -> str:
    """The weight kind of a data node (one of :data:`KINDS` but ``input``); ``ins``: its data inputs."""
    if n.op == "output":
        return "output"
    if n.op == "call_module":
        mod = gm.get_submodule(n.target)
        if isinstance(mod, _NORM_TYPES):
            return "norm"
        if any(True for _ in mod.parameters()):
            return "layer"
        return "other"
    if n.op in ("call_function", "call_method"):
        return _function_kind(gm, n, ins)
    return "other"


def _node_weight(gm, n, k: str, w: dict, module_weights: dict) -> float:
    """The weight of node ``n`` of kind ``k``: ``w``'s for its kind, or a ``module_weights`` override."""
    wt = {"layer": w["layer"], "norm": w["norm"], "residual": w["residual"]}.get(k, 0)
    if n.op == "call_module":
        mod = gm.get_submodule(n.target)
        for key in (n.target, type(mod).__name__):
            if key in module_weights:
                wt = module_weights[key]
                break
    return wt


def _target_name(n) -> str:
    """A node's target as a string (a function's ``__name__``)."""
    return n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))


def _on_a_path(order: list, preds: dict, sink: str) -> list:
    """The nodes of ``order`` on some input -> ``sink`` path, in order."""
    alive = {sink}
    for v in reversed(order):
        if v in alive:
            alive.update(preds[v])
    return [v for v in order if v in alive]


class _DagBuilder:
    """The walk of :func:`trace_dag` over the traced graph: which nodes carry data, their weights."""

    def __init__(self, gm, source, has_tensor, w: dict, module_weights: dict):
        """An empty walk of ``gm`` from input node ``source``; ``has_tensor``: :func:`_run_shapes`'s or ``None``."""
        self.gm, self.source, self.has_tensor = gm, source, has_tensor
        self.w, self.module_weights = w, module_weights
        self.data: set[str] = set()  # nodes whose value depends on the input through data edges
        self.meta: dict[str, bool] = {}
        self.preds: dict[str, list[str]] = {}
        self.kind: dict[str, str] = {}
        self.weight: dict[str, float] = {}
        self.target: dict[str, str] = {}
        self.order: list[str] = []
        self.sink = None

    def is_meta(self, n) -> bool:
        """Whether ``n`` carries shape/scalar metadata, not data."""
        if self.has_tensor is not None:
            return not self.has_tensor.get(n.name, False)
        return _is_meta_by_name(n, self.data, self.meta)

    def add(self, n) -> None:
        """Take the next graph node (topological order): record it when it carries data from the input."""
        if n is self.source:
            self.data.add(n.name)
            self.meta[n.name] = False
            self.preds[n.name], self.kind[n.name], self.weight[n.name], self.target[n.name] = [], "input", 0, n.name
            self.order.append(n.name)
            return
        if n.op in ("placeholder", "get_attr"):
            return
        ins = self._data_inputs(n)
        if n.op == "output":
            if not ins:
                raise ValueError("the model's output does not depend on its input through data edges")
            self.sink = n.name
        elif not ins:
            if any(a.name in self.data for a in n.all_input_nodes):
                self.data.add(n.name)  # depends on the input's shape only
                self.meta[n.name] = True
            return
        self.data.add(n.name)
        self.meta[n.name] = False if n.op == "output" else self.is_meta(n)
        if not self.meta[n.name]:
            self._record(n, ins)

    def _data_inputs(self, n) -> list:
        """The inputs of ``n`` that carry data from the input (none for a shape-only op)."""
        if _is_shape_only(n):
            return []
        return [a for a in n.all_input_nodes if a.name in self.data and not self.meta[a.name]]

    def _record(self, n, ins: list) -> None:
        """Put data node ``n`` (data inputs ``ins``) into the DAG with its kind and weight."""
        k = _node_kind(self.gm, n, ins)
        wt = _node_weight(self.gm, n, k, self.w, self.module_weights)
        self.preds[n.name], self.kind[n.name], self.weight[n.name] = [a.name for a in ins], k, wt
        self.target[n.name] = _target_name(n)
        self.order.append(n.name)

    def finish(self) -> WeightedDAG:
        """The :class:`WeightedDAG` of the nodes on some input -> output path."""
        if self.sink is None:
            raise ValueError("the traced graph has no output")
        order = _on_a_path(self.order, self.preds, self.sink)
        return WeightedDAG(nodes=order, preds={v: self.preds[v] for v in order},
                           weight={v: self.weight[v] for v in order}, kind={v: self.kind[v] for v in order},
                           source=self.source.name, sink=self.sink, target={v: self.target[v] for v in order},
                           weights_used=self.w)
