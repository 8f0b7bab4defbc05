"""The residual branches of a user's ``nn.Module``, read off its traced graph, and the role of every
parameter (input, hidden, branch, branch-last, readout, norm, other).

A *residual addition* is a node of kind ``residual`` of :func:`amutheory.graph.trace_dag` (an addition
of two different tensors that both carry data from the input).  Of its two inputs, the *skip* is the
one that is an ancestor of the other (``x + f(x)``); when neither is (a projection shortcut,
``S(x) + f(x)``), the *branch* is the side with more parameterised layers since the two sides parted
(a tie is reported as ambiguous and the later side is taken).  The branch's *last layer* is the
parameterised layer met first walking back from the addition on the branch side; when a
normalisation is met first (``conv2 -> bn2 -> add``) the branch is *norm-followed*: rescaling its last
layer changes nothing the norm lets through, so it is reported and left alone.

``K``: two counts, both reported.

* ``branches``: the number of residual additions (the issue's count: a pre-LN Transformer block
  contributes two, attention and MLP).
* ``blocks``: the number of modules whose ``forward`` runs residual additions (an addition run by the
  model's own ``forward`` is a block of its own).  This is the built-in models' ``K``:
  :mod:`amutheory.measure.resnet` has one branch per block, :mod:`amutheory.measure.transformer`
  two per block with both scaled by ``1/K``, ``K`` = blocks.  A user's pre-LN Transformer whose
  ``Block.forward`` runs ``x = x + attn(...)`` and ``x = x + mlp(...)`` has ``blocks = branches / 2``,
  as the built-in one.  :func:`amutheory.parametrize` uses ``blocks``; a ratio ``K / K_base`` is the
  same under either count when model and base have the same branches per block.

Roles.  A *layer's* role (the layer a traced ``layer`` node's parameters belong to; the first that
applies): ``readout`` (the last ``Linear``/``Conv`` the forward pass runs, as :mod:`amutheory.transfer`
reads it), ``input`` (a layer reached from the input through no other layer), ``branch-last``,
``branch`` (another layer on a branch side), ``hidden`` (any other parameterised layer).  An
``nn.MultiheadAttention`` on a branch is its ``out_proj`` for the branch roles (the built-in
Transformer scales only ``W_O`` in the attention branch); its ``in_proj`` is ``hidden``.

Every *parameter's* role (:data:`ROLES`; what ``ResidualBranches.roles`` holds), by its owner module
(the module its qualified name ends in) and, for a parameter owned by no layer, the traced graph:

* owner the readout: its ``weight`` -> ``readout``, any other parameter -> ``readout-bias``;
* owner a normalisation (BatchNorm, LayerNorm, GroupNorm, RMSNorm, ...): ``norm`` (gains and biases);
* owner an ``nn.Embedding``/``nn.EmbeddingBag``: ``embedding``;
* owner a ``Linear``/``Bilinear``/``Conv``/``ConvTranspose``/``MultiheadAttention``: a parameter with
  ``bias`` in its name -> ``bias``; its weights -> the layer's role (``input``, ``hidden``, ``branch``,
  ``branch-last``);
* a parameter of any other module (a free ``nn.Parameter``), first that applies: a weight of a
  functional layer (``F.linear(x, self.w)``, ``x @ self.w``) -> the layer's role (``F.embedding``:
  ``embedding``), a 1-D parameter such a call also takes -> ``bias``; an affine parameter of a functional
  norm -> ``norm``; a multiplication by it on a branch side between the branch's last layer and the
  residual addition (``x + self.gamma * f(x)``) -> ``layer-scale``; added to activations or
  concatenated with them (``x + self.pos_embed``, ``torch.cat([self.cls_token.expand(...), x])``) ->
  ``position`` (a 1-D parameter added -> ``bias``); then, where the graph shows none of these (the model
  did not trace its use), by name and shape: a name token ``gamma``/``ls``/``scale``/``layer_scale`` with
  at most one dimension above 1 -> ``layer-scale``; ``pos`` in the name or a ``cls`` token, or at least
  two dimensions with the first 1 -> ``position``;
* anything else: ``other``.
"""

from __future__ import annotations

import contextlib
import operator
from dataclasses import dataclass, field

import torch
from torch import nn

from amutheory.graph.forward import forward_with_hooks

#: layer modules whose last call is the readout (as :func:`amutheory.transfer._readout_strength`)
READOUT_TYPES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
#: every parameter role (module docstring); the first seven are the layer-level names used since issue 39
ROLES = ("input", "hidden", "branch", "branch-last", "readout", "norm", "other", "readout-bias", "bias",
         "embedding", "position", "layer-scale")
#: the roles of a layer's weights (matrices and kernels)
WEIGHT_ROLES = ("input", "hidden", "branch", "branch-last")
#: modules whose ``bias`` parameters are layer biases (role ``bias``) and whose weights take the layer's role
LAYER_TYPES = (nn.Linear, nn.Bilinear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
               nn.ConvTranspose3d, nn.MultiheadAttention)
EMBEDDING_TYPES = (nn.Embedding, nn.EmbeddingBag)
#: name tokens of a free parameter read as a layer scale when the graph shows nothing
LAYER_SCALE_TOKENS = ("gamma", "ls", "scale", "layer_scale", "layerscale")


@dataclass(frozen=True)
class Branch:
    """One residual addition: the graph node, the block (module) running it, and its branch side's
    layers (qualified names of the layers' parameter owners)."""

    addition: str
    block: str
    last_layers: tuple
    layers: tuple
    norm_after: str | None = None
    ambiguous: bool = False

    @property
    def rescalable(self) -> bool:
        return self.norm_after is None and bool(self.last_layers)


@dataclass
class ResidualBranches:
    """What :func:`find_residual_branches` found: every branch, ``K`` both ways, every parameter's role."""

    branches: list
    blocks: int
    roles: dict = field(default_factory=dict)
    readout: str | None = None

    @property
    def K(self) -> int:
        """The ``K`` of the init rules: :attr:`blocks` (the built-in convention; module docstring)."""
        return self.blocks

    @property
    def n_branches(self) -> int:
        return len(self.branches)

    @property
    def norm_followed(self) -> list:
        return [b for b in self.branches if b.norm_after is not None]


def _example(model: nn.Module, example_input) -> torch.Tensor:
    """``example_input`` as a tensor: a tensor as given, a shape as zeros of the model's dtype."""
    if isinstance(example_input, torch.Tensor):
        return example_input
    if isinstance(example_input, (tuple, list, torch.Size)) and example_input and all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in example_input):
        p = next(model.parameters(), None)
        dtype = p.dtype if p is not None and p.is_floating_point() else torch.get_default_dtype()
        return torch.zeros(tuple(example_input), dtype=dtype)
    raise TypeError(f"example_input must be a tensor or a shape of positive ints, got {example_input!r}")


@contextlib.contextmanager
def buffers_kept(*models):
    """Run the block and put every buffer of ``models`` back as it was: the forward passes that trace
    a model and find its readout run it in training mode, where a BatchNorm would move its running
    statistics."""
    saved = [(b, b.detach().clone()) for m in models if m is not None for b in m.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, value in saved:
                b.copy_(value)


def _ancestors(preds: dict, nodes: list) -> dict:
    """``{node: set of its strict ancestors}`` (``nodes`` in topological order)."""
    anc: dict = {}
    for v in nodes:
        s = set()
        for u in preds[v]:
            s.add(u)
            s |= anc[u]
        anc[v] = s
    return anc


def _layer_owner(gm, dag, node: str) -> str | None:
    """The qualified name of the module whose parameters a layer node uses (``None`` when they are
    parameters fetched by a functional op: then the name of the first such parameter)."""
    target = dag.target[node]
    try:
        gm.get_submodule(target)
        return target
    except AttributeError:
        pass
    fx_node = next(n for n in gm.graph.nodes if n.name == node)
    for a in fx_node.all_input_nodes:
        if a.op == "get_attr":
            return a.target
    return None


def _block_of(fx_nodes: dict, node: str) -> str:
    """The innermost module whose forward ran ``node`` (the model itself: ``""``)."""
    stack = fx_nodes[node].meta.get("nn_module_stack") or {}
    return list(stack.keys())[-1] if stack else ""


def _side(dag, anc: dict, add: str) -> tuple[str, str, bool]:
    """``(branch input, skip input, ambiguous)`` of residual addition ``add`` (module docstring)."""
    a, b = dag.preds[add][0], dag.preds[add][1]
    if a in anc[b]:
        return b, a, False
    if b in anc[a]:
        return a, b, False
    common = anc[a] & anc[b]
    count = {x: sum(1 for v in (anc[x] | {x}) - common if dag.kind[v] == "layer") for x in (a, b)}
    if count[a] != count[b]:
        return (a, b, False) if count[a] > count[b] else (b, a, False)
    return b, a, True


def _walk_back(dag, anc: dict, start: str, skip: str) -> tuple[list, list, list]:
    """From ``start`` back over the branch side (nodes not on the skip's side): the first layers met
    (through any normalisation), the normalisations met before them, and every layer on the side."""
    outside = anc[skip] | {skip}
    side = (anc[start] | {start}) - outside
    first_layers, first_norms, seen, todo = [], [], set(), [start]
    while todo:
        v = todo.pop()
        if v in seen or v not in side:
            continue
        seen.add(v)
        if dag.kind[v] == "layer":
            first_layers.append(v)
            continue
        if dag.kind[v] == "norm":
            first_norms.append(v)
        todo.extend(dag.preds[v])
    all_layers = [v for v in dag.nodes if v in side and dag.kind[v] == "layer"]
    return first_layers, first_norms, all_layers


def _branch_name(model: nn.Module, owner: str) -> str:
    """The owner a branch role applies to: an attention's ``out_proj`` stands for the attention."""
    mod = _get(model, owner)
    if isinstance(mod, nn.MultiheadAttention):
        return f"{owner}.out_proj"
    return owner


def _get(model: nn.Module, name: str):
    try:
        return model.get_submodule(name)
    except AttributeError:
        return None


def readout_module(model: nn.Module, example) -> str | None:
    """The qualified name of the last ``Linear``/``Conv`` module the forward pass runs."""
    names = {m: n for n, m in model.named_modules()}
    order: list = []
    forward_with_hooks(model, example, [m for m in model.modules() if isinstance(m, READOUT_TYPES)],
                       lambda mod, i, o: order.append(names[mod]))
    return order[-1] if order else None


def owned_parameters(model: nn.Module, owner: str) -> list:
    """Qualified names of the parameters an owner stands for (a module's, or one parameter's own name)."""
    mod = _get(model, owner)
    if mod is None:
        return [owner] if owner in dict(model.named_parameters()) else []
    return [f"{owner}.{n}" if owner else n for n, _ in mod.named_parameters()]


def find_residual_branches(model: nn.Module, example_input) -> ResidualBranches:
    """Every residual addition of ``model`` traced on ``example_input`` (a tensor or a shape), its
    branch side's last parameterised layer(s), the blocks, and every parameter's role (module
    docstring).  A branch with a normalisation between its last layer and the addition is returned
    with ``norm_after`` set (rescaling its last layer changes nothing).  ``ValueError`` (one line) when
    tracing fails."""
    from amutheory.graph.trace import symbolic_trace, trace_dag

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    example = _example(model, example_input)
    with buffers_kept(model):
        return _find(model, example, trace_dag, symbolic_trace)


def _find(model, example, trace_dag, symbolic_trace) -> ResidualBranches:
    """:func:`find_residual_branches` once the input is a tensor (the forward passes run here)."""
    dag = trace_dag(model, tuple(example.shape))
    gm = symbolic_trace(model)
    fx_nodes = {n.name: n for n in gm.graph.nodes}
    anc = _ancestors(dag.preds, dag.nodes)
    branches = []
    for add in (v for v in dag.nodes if dag.kind[v] == "residual"):
        start, skip, ambiguous = _side(dag, anc, add)
        first, norms, layers = _walk_back(dag, anc, start, skip)
        owners = lambda vs: tuple(_branch_name(model, o) for o in (_layer_owner(gm, dag, v) for v in vs) if o)
        branches.append(Branch(add, _block_of(fx_nodes, add), owners(first), owners(layers),
                               dag.target[norms[0]] if norms else None, ambiguous))
    blocks = len({b.block for b in branches if b.block}) + sum(1 for b in branches if not b.block)
    readout = readout_module(model, example)
    layer_owners = [o for o in (_layer_owner(gm, dag, v) for v in dag.nodes if dag.kind[v] == "layer") if o]
    inputs = [o for v, o in ((v, _layer_owner(gm, dag, v)) for v in dag.nodes if dag.kind[v] == "layer")
              if o and not any(dag.kind[u] == "layer" for u in anc[v])]
    norms = [dag.target[v] for v in dag.nodes if dag.kind[v] == "norm"]
    layer_roles = _roles(model, readout, inputs, branches, norms, layer_owners)
    roles = _param_roles(model, readout, layer_roles, _graph_uses(gm, dag, anc, fx_nodes))
    return ResidualBranches(branches, blocks, roles, readout)


_MUL_FUNCS = {operator.mul, operator.imul, torch.mul}
_MUL_METHODS = {"mul", "mul_", "__mul__", "__rmul__", "__imul__"}
_CAT_FUNCS = {f for f in (torch.cat, getattr(torch, "concat", None), getattr(torch, "concatenate", None)) if f}


def _is(fx_node, funcs, methods=()) -> bool:
    return ((fx_node.op == "call_function" and fx_node.target in funcs)
            or (fx_node.op == "call_method" and fx_node.target in methods))


def _param_sources(fx_node, data: set, params: dict) -> set:
    """The parameters ``fx_node`` reads through ``get_attr`` nodes and the non-data ops on them (a
    ``view``, an ``expand``, a slice), not through its data inputs (``data``: the traced DAG's nodes)."""
    found, seen, todo = set(), set(), list(fx_node.all_input_nodes)
    while todo:
        a = todo.pop()
        if a.name in seen or a.name in data or a.op in ("placeholder", "call_module"):
            continue
        seen.add(a.name)
        if a.op == "get_attr":
            if a.target in params:
                found.add(a.target)
            continue
        todo.extend(a.all_input_nodes)
    return found


def _graph_uses(gm, dag, anc, fx_nodes) -> dict:
    """How the traced graph uses parameters fetched by ``get_attr`` (free ``nn.Parameter``\\ s):
    ``{"layer": {name: fx target}, "norm", "scale", "added", "concatenated": sets of names}`` (module
    docstring)."""
    from amutheory.graph.trace import _ADD_FUNCS, _ADD_METHODS

    params = dict(gm.named_parameters())
    data = set(dag.nodes)
    uses = {"layer": {}, "norm": set(), "scale": set(), "added": set(), "concatenated": set()}
    for v in dag.nodes:
        n = fx_nodes.get(v)
        if n is None or n.op not in ("call_function", "call_method"):
            continue
        src = _param_sources(n, data, params)
        if dag.kind[v] == "layer":
            uses["layer"].update(dict.fromkeys(src, getattr(n.target, "__name__", str(n.target))))
        elif dag.kind[v] == "norm":
            uses["norm"] |= src
        elif _is(n, _ADD_FUNCS, _ADD_METHODS):
            uses["added"] |= src
        elif _is(n, _CAT_FUNCS):
            uses["concatenated"] |= src
    for add in (v for v in dag.nodes if dag.kind[v] == "residual"):  # a multiplication between the
        start, skip, _ = _side(dag, anc, add)                        # branch's last layer and the addition
        side = (anc[start] | {start}) - (anc[skip] | {skip})
        seen, todo = set(), [start]
        while todo:
            v = todo.pop()
            if v in seen or v not in side or dag.kind[v] == "layer":
                continue
            seen.add(v)
            if v in fx_nodes and _is(fx_nodes[v], _MUL_FUNCS, _MUL_METHODS):
                uses["scale"] |= _param_sources(fx_nodes[v], data, params)
            todo.extend(dag.preds[v])
    return uses


def _tokens(name: str) -> list:
    return [t for t in name.rsplit(".", 1)[-1].lower().split("_") if t]


def _free_role(name: str, p, layer_role: str, uses: dict) -> str:
    """The role of a parameter owned by no layer, norm or embedding module (module docstring)."""
    leaf = name.rsplit(".", 1)[-1].lower()
    if name in uses["layer"]:
        if uses["layer"][name] == "embedding":
            return "embedding"
        if layer_role in WEIGHT_ROLES and p.dim() >= 2:
            return layer_role
        return "bias" if p.dim() <= 1 else layer_role
    if name in uses["norm"]:
        return "norm"
    if name in uses["scale"]:
        return "layer-scale"
    if name in uses["concatenated"]:
        return "position"
    if name in uses["added"]:
        return "bias" if p.dim() <= 1 else "position"
    if layer_role != "other":
        return layer_role
    tokens = _tokens(name)
    if (any(t in LAYER_SCALE_TOKENS for t in tokens) or leaf in LAYER_SCALE_TOKENS) and \
            sum(1 for d in p.shape if d > 1) <= 1:
        return "layer-scale"
    if "pos" in leaf or "cls" in tokens or (p.dim() >= 2 and p.shape[0] == 1):
        return "position"
    return "other"


def _param_roles(model, readout, layer_roles: dict, uses: dict) -> dict:
    """``{parameter name: role}`` of every parameter (module docstring)."""
    from amutheory.graph.trace import _NORM_TYPES

    roles = {}
    for name, p in model.named_parameters():
        owner_name, _, leaf = name.rpartition(".")
        owner = _get(model, owner_name)
        if readout is not None and owner_name == readout:
            roles[name] = "readout" if leaf == "weight" else "readout-bias"
        elif isinstance(owner, _NORM_TYPES):
            roles[name] = "norm"
        elif isinstance(owner, EMBEDDING_TYPES):
            roles[name] = "embedding"
        elif isinstance(owner, LAYER_TYPES):
            roles[name] = "bias" if "bias" in leaf else layer_roles[name]
        else:
            roles[name] = _free_role(name, p, layer_roles[name], uses)
    return roles


def _roles(model, readout, inputs, branches, norms, layer_owners) -> dict:
    """``{parameter name: layer role}`` by the priority of the module docstring (a layer's parameters
    all take its role; norms ``norm``; the rest ``other``)."""
    ranked = [("readout", [readout] if readout else []), ("input", inputs),
              ("branch-last", [o for b in branches if b.rescalable for o in b.last_layers]),
              ("branch", [o for b in branches for o in b.layers]), ("norm", norms), ("hidden", layer_owners)]
    roles = {}
    for role, owners in ranked:
        for owner in owners:
            for p in owned_parameters(model, owner):
                roles.setdefault(p, role)
    for name, _ in model.named_parameters():
        roles.setdefault(name, "other")
    return {name: roles[name] for name, _ in model.named_parameters()}
