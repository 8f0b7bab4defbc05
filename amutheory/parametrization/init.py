"""Apply a residual init convention to a user's ``nn.Module`` in place, relative to a base model.

The conventions are :mod:`amutheory.symbolic.resnet.init`'s, as functions of ``K``: the last layer of
a branch has variance factor ``v_last(K)``, its other layers ``v_inner(K)`` (``k-last``: ``1/K`` and 1;
``k-all``: ``1/K`` and ``1/K``; ``k-squared``: ``1/K^2`` and 1; ``sqrt-multiplier``, ``none``: 1), and
the branch output is multiplied by ``alpha(K)`` (``1/sqrt(K)`` for ``sqrt-multiplier``).

The user's model keeps its own init (PyTorch's default or whatever the factory drew); what changes
is the *depth dependence*.  With ``K`` the model's blocks and ``K_base`` the base model's (1 when no
base is given: the convention's absolute form, ``Var = v(K) x`` the model's own variance):

* every parameter of a branch's last layer (weight and bias) is multiplied by
  ``sqrt(v_last(K) / v_last(K_base))``, every parameter of its other branch layers by
  ``sqrt(v_inner(K) / v_inner(K_base))``: the variances are divided by ``K / K_base`` (``k-last``), so
  at the base depth nothing changes (identity at the base);
* ``sqrt-multiplier`` changes no weight: a forward hook multiplies the branch's last layer's output by
  ``alpha(K) / alpha(K_base)``, and ``model.alpha`` (what :mod:`amutheory.transfer` reads as the branch
  multiplier of a module) is multiplied by the same number.

``K`` counts blocks as the built-in models do (:mod:`amutheory.parametrization.branches`).  A branch
whose last layer is followed by a normalisation before the addition is left alone and reported.
Apply once to a freshly built model: a second call rescales again.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import torch
from torch import nn

from amutheory.parametrization.branches import find_residual_branches, owned_parameters


@dataclass
class ParamRow:
    """One parameter: its role and the variance factor applied to it (1: untouched)."""

    name: str
    role: str
    shape: tuple
    variance_factor: float


@dataclass
class ParametrizationReport:
    """What :func:`parametrize` did; ``str()`` is a table."""

    init: str
    K: int
    K_base: int
    branches: int
    rows: list
    skipped: list
    alpha: float = 1.0
    notes: list = field(default_factory=list)

    def table(self) -> str:
        head = (f"init {self.init}: K = {self.K} blocks ({self.branches} residual branches), K_base = {self.K_base}; "
                f"branch multiplier x{self.alpha:.6g}")
        width = max([len("parameter")] + [len(r.name) for r in self.rows])
        lines = [head, f"{'parameter':<{width}}  {'role':<11}  {'shape':<16}  variance factor",
                 f"{'-' * width}  {'-' * 11}  {'-' * 16}  {'-' * 15}"]
        lines += [f"{r.name:<{width}}  {r.role:<11}  {str(tuple(r.shape)):<16}  {r.variance_factor:.6g}"
                  for r in self.rows]
        for b in self.skipped:
            lines.append(f"skipped: branch into {b.addition} ({', '.join(b.last_layers) or 'no layer'} -> "
                         f"{b.norm_after} -> add): a normalisation follows its last layer, rescaling it changes nothing")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    __str__ = table


INITS = ("k-last", "k-all", "k-squared", "sqrt-multiplier", "none")


def relative_factors(init: str, K: int, K_base: int) -> tuple[float, float, float]:
    """``(inner, last, alpha)``: the variance factors of a branch's inner and last layers and its
    multiplier at ``K`` relative to ``K_base`` (each exactly 1 when ``K == K_base``)."""
    from amutheory.symbolic.resnet.init import branch_multiplier, layer_variance_factors, numeric

    v_inner, v_last = layer_variance_factors(init, "conv-mlp")
    alpha = branch_multiplier(init)
    return tuple(numeric(v, K) / numeric(v, K_base) for v in (v_inner, v_last, alpha))


def _check_init(init) -> str:
    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
    return init


def _hook_target(model: nn.Module, owner: str):
    """The module whose output is the branch's last layer's output (an attention for its out_proj)."""
    parent, _, leaf = owner.rpartition(".")
    if leaf == "out_proj" and isinstance(model.get_submodule(parent) if parent else model, nn.MultiheadAttention):
        return model.get_submodule(parent) if parent else model
    try:
        return model.get_submodule(owner)
    except AttributeError:
        raise ValueError(f"init sqrt-multiplier: the branch's last layer {owner!r} is not a module call; "
                         "a multiplier needs a module to hook") from None


def _multiply_output(alpha: float):
    def hook(_module, _inputs, output):
        if isinstance(output, tuple):
            return (output[0] * alpha,) + tuple(output[1:])
        return output * alpha
    return hook


def parametrize(model: nn.Module, init: str = "k-last", example_input=None, base_model: nn.Module | None = None,
                base_input=None) -> ParametrizationReport:
    """Re-initialise ``model``'s residual branches in place by ``init`` relative to ``base_model``
    (module docstring) and return the report.  ``example_input``: a tensor or an input shape
    (``base_input``: the base's, default the same)."""
    _check_init(init)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if example_input is None:
        raise ValueError("example_input is required (a tensor or an input shape): the branches are read off the "
                         "traced graph")
    if base_model is not None and not isinstance(base_model, nn.Module):
        raise TypeError(f"base_model must be a torch.nn.Module or None, got {type(base_model).__name__}")
    found = find_residual_branches(model, example_input)
    notes: list = []
    if base_model is None:
        K_base = 1
        notes.append("no base_model: K_base = 1, the convention's absolute form times the model's own init")
    else:
        base = find_residual_branches(base_model, base_input if base_input is not None else example_input)
        K_base = base.K
        if base.K and found.K and base.n_branches * found.K != found.n_branches * base.K:
            notes.append(f"model and base have different branches per block ({found.n_branches}/{found.K} vs "
                         f"{base.n_branches}/{base.K}): K counts blocks")
    for b in found.branches:
        if b.ambiguous:
            notes.append(f"the addition {b.addition}: neither side is the skip and both have as many layers; "
                         f"took {', '.join(b.last_layers) or 'no layer'} as the branch's end")
    if found.K == 0 or K_base == 0:
        notes.append("no residual addition in the model or the base: nothing to rescale")
        inner = last = alpha = 1.0
    else:
        inner, last, alpha = relative_factors(init, found.K, K_base)
    factor = {}
    for b in found.branches:
        if not b.rescalable:
            continue
        for owner in b.layers:
            if owner not in b.last_layers:
                for p in owned_parameters(model, owner):
                    factor.setdefault(p, inner)
        for owner in b.last_layers:
            for p in owned_parameters(model, owner):
                factor[p] = last
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, f in factor.items():
            if f != 1.0:
                params[name].mul_(math.sqrt(f))
    if alpha != 1.0:
        hooked = set()
        for b in found.branches:
            for owner in (b.last_layers if b.rescalable else ()):
                target = _hook_target(model, owner)
                if id(target) not in hooked:
                    hooked.add(id(target))
                    target.register_forward_hook(_multiply_output(alpha))
        old = getattr(model, "alpha", 1.0)
        if isinstance(old, numbers.Real) and not isinstance(old, bool):
            model.alpha = float(old) * alpha
        else:
            notes.append("model.alpha is not a number: left as is (transfer reads the multiplier from it)")
    rows = [ParamRow(n, found.roles[n], tuple(p.shape), factor.get(n, 1.0)) for n, p in params.items()]
    return ParametrizationReport(init, found.K, K_base, found.n_branches, rows, found.norm_followed, alpha, notes)
