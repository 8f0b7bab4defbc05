"""Per-parameter learning rates for a user's ``nn.Module``, relative to a base model whose rate was tuned.

``param_groups(model, lr, base_model, rule, optimizer, example_input)`` returns ``torch.optim`` parameter
groups (one per parameter, with its ``name``, ``role`` and ``multiplier = group lr / lr``).  ``lr`` is
the rate tuned on ``base_model``; the multipliers move it to ``model`` (another depth, another width):

SGD (``optimizer="sgd"``)
    Every parameter but the readout's gets exactly the rate :func:`amutheory.transfer.transfer_lr`
    gives for ``reference=base_model, target=model`` under ``rule`` (depth factor x the derived width
    factor; what ``amutheory transfer`` prints for the same two models).  The readout's weight gets
    ``F_out,base / F_out,model`` (its fan-in ratio: the output moves by ``lr |h|^2``, ``|h|^2 ~ F_out``;
    the "fan-in" width rule applied to the readout's own fan-in) and no depth factor (its own update
    does not compound through the depth); the readout's bias gets 1.

Adam (``optimizer="adam"`` or ``"adamw"``)
    Adam's update is invariant to the scale of each parameter's gradient, so the SGD rules (derived
    from how the gradient's size moves with depth and width) do not carry over.  Nothing is derived
    for Adam here.  Width: muP's Adam table (Tensor Programs V, not derived here): hidden weights
    (matrices of the hidden, branch and branch-last roles) ``x F_base / F_model`` (the median hidden
    fan-in ratio, transfer's ``width_rules["fan-in"]``), the readout weight ``x`` its fan-in ratio, input
    weights, biases and norm parameters ``x 1``.  Depth: the rule's depth factor on every parameter
    but the readout's, with a note: the only evidence is the registered protocols' Adam claim on 1D
    conv chains (is the depth exponent of the tuned rate the same under Adam as under SGD? the Adam
    row of docs/findings/protocol.md and of protocol_2026_11.md); nothing is measured for residual
    nets under Adam.

With no ``base_model`` (or one of the same depth and width) every multiplier is 1.
"""

from __future__ import annotations

from torch import nn

from amutheory.parametrization.branches import _example, buffers_kept, find_residual_branches

OPTIMIZERS = ("sgd", "adam", "adamw")
HIDDEN_MATRIX_ROLES = ("hidden", "branch", "branch-last")
ADAM_NOTE = ("adam: nothing derived; depth: the rule's SGD depth factor (its only evidence: the registered "
             "protocols' Adam claim on 1D conv chains, docs/findings/protocol.md); width: muP's Adam table "
             "(1/fan-in for hidden and readout weights)")


class ParamGroups(list):
    """A list of ``torch.optim`` parameter groups (pass it to ``torch.optim.SGD``/``Adam``) that also
    keeps how it was made: ``lr``, ``rule``, ``optimizer``, ``transfer`` (the
    :class:`~amutheory.transfer.TransferResult`, ``None`` without a base) and ``notes``."""

    def __init__(self, groups, lr, rule, optimizer, transfer=None, notes=()):
        super().__init__(groups)
        self.lr, self.rule, self.optimizer, self.transfer, self.notes = lr, rule, optimizer, transfer, list(notes)

    def table(self) -> str:
        return param_table(self)

    def __str__(self) -> str:
        return self.table()


def param_table(groups) -> str:
    """A printable table of every group's parameter, role, shape, multiplier and rate."""
    rows = [(g.get("name", "?"), g.get("role", "?"), str(tuple(g["params"][0].shape)) if g["params"] else "()",
             g.get("multiplier", float("nan")), g["lr"]) for g in groups]
    width = max([len("parameter")] + [len(r[0]) for r in rows])
    head = []
    if isinstance(groups, ParamGroups):
        head.append(f"rule {groups.rule}, optimizer {groups.optimizer}, base lr {groups.lr:g}")
    head += [f"{'parameter':<{width}}  {'role':<11}  {'shape':<16}  {'multiplier':>12}  {'lr':>12}",
             f"{'-' * width}  {'-' * 11}  {'-' * 16}  {'-' * 12}  {'-' * 12}"]
    lines = head + [f"{n:<{width}}  {r:<11}  {s:<16}  {m:12.6g}  {lr:12.6g}" for n, r, s, m, lr in rows]
    if isinstance(groups, ParamGroups):
        lines += [f"note: {n}" for n in groups.notes]
    return "\n".join(lines)


def _readout_fan_in(model: nn.Module, readout: str | None) -> float | None:
    if readout is None:
        return None
    return float(model.get_submodule(readout).weight[0].numel())


def param_groups(model: nn.Module, lr, base_model: nn.Module | None = None, rule: str = "am-mup",
                 optimizer: str = "sgd", example_input=None, base_input=None) -> ParamGroups:
    """``torch.optim`` parameter groups for ``model`` from ``lr`` tuned on ``base_model`` (module
    docstring).  ``example_input``: a tensor or an input shape (``base_input``: the base's, default the
    same)."""
    from amutheory.transfer import RULES, _check_lr, transfer_lr

    lr = _check_lr(lr)
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}; got {rule!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {optimizer!r}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if base_model is not None and not isinstance(base_model, nn.Module):
        raise TypeError(f"base_model must be a torch.nn.Module or None, got {type(base_model).__name__}")
    if example_input is None:
        raise ValueError("example_input is required (a tensor or an input shape): the roles are read off the "
                         "traced graph")
    found = find_residual_branches(model, example_input)
    params = dict(model.named_parameters())
    if base_model is None:
        groups = [_group(p, n, found.roles[n], lr, lr) for n, p in params.items()]
        return ParamGroups(groups, lr, rule, optimizer, None, ["no base_model: every multiplier is 1"])
    base_in = base_input if base_input is not None else example_input
    shape = tuple(_example(model, example_input).shape)
    base_shape = tuple(_example(base_model, base_in).shape)
    with buffers_kept(model, base_model):  # transfer runs both models once (BatchNorm statistics kept)
        result = transfer_lr(lr, base_model, model, rule=rule, input_shape=base_shape, target_input_shape=shape)
    base_found = find_residual_branches(base_model, base_in)
    f_out_base, f_out = _readout_fan_in(base_model, base_found.readout), _readout_fan_in(model, found.readout)
    readout_weight = lr * (f_out_base / f_out) if f_out else lr
    notes = list(result.notes)
    adam = optimizer != "sgd"
    if adam:
        notes.append(ADAM_NOTE)
    groups = []
    for name, p in params.items():
        role = found.roles[name]
        if role == "readout":
            rate = readout_weight if p.dim() > 1 else lr
        elif not adam:
            rate = result.lr
        else:
            width = result.width_rules["fan-in"] if (role in HIDDEN_MATRIX_ROLES and p.dim() > 1) else 1.0
            rate = lr * result.depth_factors[rule] * width
        groups.append(_group(p, name, role, rate, lr))
    return ParamGroups(groups, lr, rule, optimizer, result, notes)


def _group(p, name: str, role: str, rate: float, lr: float) -> dict:
    return {"params": [p], "lr": rate, "name": name, "role": role, "multiplier": rate / lr}
