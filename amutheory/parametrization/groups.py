"""Per-parameter learning rates for a user's ``nn.Module``, relative to a base model whose rate was tuned.

``param_groups(model, lr, base_model, rule, optimizer, example_input)`` returns ``torch.optim`` parameter
groups (one per parameter, with its ``name``, ``role``, ``multiplier = group lr / lr`` and ``why``).
``lr`` is the rate tuned on ``base_model``; the multipliers move it to ``model`` (another depth, another
width).  Every parameter's role is read off the model (:func:`amutheory.find_residual_branches`:
``input``, ``hidden``, ``branch``, ``branch-last`` weights, ``readout``, ``readout-bias``, ``norm``,
``bias``, ``embedding``, ``position``, ``layer-scale``, ``other``), and each role's multiplier comes from
one stated rule (:meth:`ParamGroups.by_role` prints them):

SGD (``optimizer="sgd"``)
    The weights of the ``input``, ``hidden``, ``branch`` and ``branch-last`` roles get exactly the rate
    :func:`amutheory.transfer.transfer_lr` gives for ``reference=base_model, target=model`` under
    ``rule`` (its depth factor x the derived width factor; what ``amutheory transfer`` prints for the
    same two models).  The readout's weight gets ``F_out,base / F_out,model`` (its fan-in ratio: the
    output moves by ``lr |h|^2``, ``|h|^2 ~ F_out``; the "fan-in" width rule applied to the readout's own
    fan-in) and no depth factor (its own update does not compound through the depth).  Every other
    role -- ``readout-bias``, ``norm`` (gains and biases), ``bias``, ``embedding``, ``position``,
    ``layer-scale``, ``other`` -- is *kept at the base rate* (multiplier 1): nothing is derived for them.

Adam (``optimizer="adam"`` or ``"adamw"``)
    Adam's update is invariant to the scale of each parameter's gradient, so the SGD rules (derived
    from how the gradient's size moves with depth and width) do not carry over.  Nothing is derived
    for Adam here; ``depth_convention`` names the convention applied:

    * ``"none"`` (default): width only, muP's Adam table (Tensor Programs V, not derived here): hidden
      matrices (the ``hidden``, ``branch`` and ``branch-last`` roles) ``x F_base / F_model`` (the
      median hidden fan-in ratio, transfer's ``width_rules["fan-in"]``), the readout weight ``x`` its
      fan-in ratio, every other parameter (input weights included) ``x 1``; no depth factor.
    * ``"depth-mup"``: as ``"none"``, and the hidden matrices also ``x (K / K_base)^(-1/2)``: Depth-muP's
      Adam convention (Yang et al. 2023, Tensor Programs VI), named, not derived here.
    * ``"completep"``: as ``"none"``, and the hidden matrices also ``x (K / K_base)^(-1)``: CompleteP's
      Adam convention (Dey et al. 2025), named, not derived here.
    * ``"sgd-rule"``: the default before issue 47: the rule's SGD depth factor on every parameter but
      the readout's, times the muP width table (:data:`ADAM_NOTE`: its only evidence is the registered
      protocols' Adam claim on 1D conv chains; nothing is measured for residual nets under Adam).

    ``K`` is the number of residual blocks (:attr:`~amutheory.parametrization.branches.ResidualBranches.blocks`)
    of the model and of the base; ``depth-mup`` and ``completep`` are conventions for residual nets and
    are refused (``ValueError``) for a model or base with no residual branch.

With no ``base_model`` (or one of the same depth and width) every multiplier is 1.  ``notes`` keeps the
transfer notes that apply to the rates given (the ``am-mup`` note names the activation read off the
model); ``mismatches`` the rules' assumptions the model breaks, the list ``amutheory transfer`` prints
(:func:`amutheory.transfer_interval.confidence`), less the entries about the rule's depth law where an
Adam convention applies no rule.
"""

from __future__ import annotations

from torch import nn

from amutheory.parametrization.branches import ROLES, WEIGHT_ROLES, _example, buffers_kept, find_residual_branches

OPTIMIZERS = ("sgd", "adam", "adamw")
DEPTH_CONVENTIONS = ("none", "depth-mup", "completep", "sgd-rule")
HIDDEN_MATRIX_ROLES = ("hidden", "branch", "branch-last")
#: the order :meth:`ParamGroups.by_role` lists the roles in
ROLE_ORDER = ("input", "hidden", "branch", "branch-last", "readout", "readout-bias", "norm", "bias", "embedding",
              "position", "layer-scale", "other")
#: the named Adam depth conventions: ``(exponent of K / K_base, name, who states it)``; neither is derived here
ADAM_DEPTH = {"depth-mup": (-0.5, "Depth-muP", "Depth-muP's Adam convention (Yang et al. 2023, Tensor Programs VI)"),
              "completep": (-1.0, "CompleteP", "CompleteP's Adam convention (Dey et al. 2025)")}
ADAM_NOTE = ("adam: nothing derived; depth: the rule's SGD depth factor (its only evidence: the registered "
             "protocols' Adam claim on 1D conv chains, docs/findings/protocol*.md); width: muP's Adam table "
             "(1/fan-in for hidden and readout weights)")
ADAM_NONE_NOTE = ("adam: nothing derived for Adam here; width: muP's Adam table (Tensor Programs V, not derived "
                  "here); no depth factor (depth_convention='none')")
#: what a role kept at the base rate is, in words
_KEPT = {"readout-bias": "the readout's bias", "norm": "norm gains and biases", "bias": "layer biases",
         "embedding": "token embeddings", "position": "position embeddings and cls tokens",
         "layer-scale": "layer-scale gains", "other": "a parameter of no role read off"}
#: mismatches about the rule's depth law (not shown where an Adam convention applies no rule)
_RULE_MISMATCHES = ("law", "measured depth factor")


class ParamGroups(list):
    """A list of ``torch.optim`` parameter groups (pass it to ``torch.optim.SGD``/``Adam``) that also
    keeps how it was made: ``lr``, ``rule``, ``optimizer``, ``depth_convention``, ``transfer`` (the
    :class:`~amutheory.transfer.TransferResult`, ``None`` without a base), ``notes``, ``mismatches``
    (``transfer``'s) and ``rules`` (``{role: {"multiplier", "why", "short"}}``, every role's rule)."""

    def __init__(self, groups, lr, rule, optimizer, transfer=None, notes=(), depth_convention="none",
                 mismatches=(), rules=None):
        super().__init__(groups)
        self.lr, self.rule, self.optimizer, self.transfer, self.notes = lr, rule, optimizer, transfer, list(notes)
        self.depth_convention, self.mismatches, self.rules = depth_convention, list(mismatches), dict(rules or {})

    def by_role(self) -> dict:
        """``{role: {"multiplier", "why", "count"}}`` for the roles present, in :data:`ROLE_ORDER`."""
        counts: dict = {}
        for g in self:
            counts[g.get("role", "other")] = counts.get(g.get("role", "other"), 0) + 1
        out = {}
        for role in sorted(counts, key=lambda r: ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER)):
            rule = self.rules.get(role) or {}
            mult = {g["multiplier"] for g in self if g.get("role") == role}
            out[role] = {"multiplier": rule.get("multiplier", next(iter(mult)) if len(mult) == 1 else float("nan")),
                         "why": rule.get("why", "?"), "count": counts[role]}
        return out

    def table(self) -> str:
        return param_table(self)

    def __str__(self) -> str:
        return self.table()


def param_table(groups) -> str:
    """A printable table: for :class:`ParamGroups`, the rule of every role first (``by role``), then
    every group's parameter, role, shape, multiplier, rate and why, the notes and the mismatches."""
    rows = [(g.get("name", "?"), g.get("role", "?"), str(tuple(g["params"][0].shape)) if g["params"] else "()",
             g.get("multiplier", float("nan")), g["lr"], g.get("short", g.get("why", ""))) for g in groups]
    width = max([len("parameter")] + [len(r[0]) for r in rows])
    rw = max([len("role")] + [len(r[1]) for r in rows])
    head = []
    if isinstance(groups, ParamGroups):
        conv = "" if groups.optimizer == "sgd" else f", depth_convention {groups.depth_convention}"
        head.append(f"rule {groups.rule}, optimizer {groups.optimizer}{conv}, base lr {groups.lr:g}")
        head += ["by role:", f"  {'role':<{rw}}  {'count':>5}  {'multiplier':>12}  why"]
        head += [f"  {role:<{rw}}  {r['count']:>5}  {r['multiplier']:12.6g}  {r['why']}"
                 for role, r in groups.by_role().items()]
        head.append("")
    head += [f"{'parameter':<{width}}  {'role':<{rw}}  {'shape':<16}  {'multiplier':>12}  {'lr':>12}  why",
             f"{'-' * width}  {'-' * rw}  {'-' * 16}  {'-' * 12}  {'-' * 12}  {'-' * 3}"]
    lines = head + [f"{n:<{width}}  {r:<{rw}}  {s:<16}  {m:12.6g}  {lr:12.6g}  {why}".rstrip()
                    for n, r, s, m, lr, why in rows]
    if isinstance(groups, ParamGroups):
        lines += [f"note: {n}" for n in groups.notes]
        lines += [f"mismatch: {m['assumption']}: {m['model']}; {m['rules']}" for m in groups.mismatches]
    return "\n".join(lines)


def _readout_fan_in(model: nn.Module, readout: str | None) -> float | None:
    if readout is None:
        return None
    return float(model.get_submodule(readout).weight[0].numel())


def _rule_names():
    """The rule names ``param_groups`` accepts: :data:`amutheory.transfer.RULES` and any further choice
    ``transfer_lr`` takes (read at call time, so a new rule needs no change here)."""
    import amutheory.transfer as transfer

    return tuple(dict.fromkeys(tuple(transfer.RULES) + tuple(getattr(transfer, "RULE_CHOICES", ()))))


def check_arguments(model, lr, base_model, rule, optimizer, depth_convention, example_input) -> float:
    """The checks of :func:`param_groups` (also the constructors' of :mod:`amutheory.optim`): the
    checked ``lr``; ``TypeError``/``ValueError`` naming the argument."""
    from amutheory.transfer import _check_lr

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if base_model is not None and not isinstance(base_model, nn.Module):
        raise TypeError(f"base_model must be a torch.nn.Module or None, got {type(base_model).__name__}")
    lr = _check_lr(lr)
    rules = _rule_names()
    if not isinstance(rule, str) or rule not in rules:
        raise ValueError(f"rule must be one of {', '.join(rules)}; got {rule!r}")
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {optimizer!r}")
    if not isinstance(depth_convention, str) or depth_convention not in DEPTH_CONVENTIONS:
        raise ValueError(f"depth_convention must be one of {', '.join(DEPTH_CONVENTIONS)}; got {depth_convention!r}")
    if optimizer == "sgd" and depth_convention != "none":
        raise ValueError(f"depth_convention {depth_convention!r} is an Adam convention (optimizer='adam' or "
                         "'adamw'); under SGD the depth factor is the rule's")
    if example_input is None:
        raise ValueError("example_input is required (a tensor or an input shape): the roles are read off the "
                         "traced graph")
    return lr


def param_groups(model: nn.Module, lr, base_model: nn.Module | None = None, rule: str = "auto",
                 optimizer: str = "sgd", example_input=None, base_input=None, *, depth_convention: str = "none",
                 momentum: float = 0.0, probe: bool = True, run_template=None, run_to_depth=None) -> ParamGroups:
    """``torch.optim`` parameter groups for ``model`` from ``lr`` tuned on ``base_model`` (module
    docstring).  ``example_input``: a tensor or an input shape (``base_input``: the base's, default the
    same); ``depth_convention``: Adam's (module docstring); ``momentum``: how SGD will run (named as a
    mismatch, as ``transfer`` does).  ``rule``: as ``transfer``'s (default ``auto``: the best recorded
    rule for the model's kind, the probe competing); ``probe``: run the model's own probe (on the two
    modules as given, where affordable) to check the fixed rules, as ``transfer`` does.
    ``run_template``, ``run_to_depth``: the short-run probe (``rule="probe-run"``, or ``"auto"`` with
    them), as :func:`amutheory.transfer.transfer_lr` takes them: the training Cell of your run at the
    base depth and the depth ``model`` is built at."""
    lr = check_arguments(model, lr, base_model, rule, optimizer, depth_convention, example_input)
    found = find_residual_branches(model, example_input)
    params = dict(model.named_parameters())
    if depth_convention in ADAM_DEPTH and found.n_branches == 0:
        raise ValueError(f"depth_convention {depth_convention!r} is a convention for residual nets (K = residual "
                         "blocks); the model has no residual branch")
    if base_model is None:
        rules = {role: {"multiplier": 1.0, "why": "no base_model: the base rate", "short": "no base_model"}
                 for role in ROLES}
        groups = [_group(p, n, found.roles[n], lr, lr, rules) for n, p in params.items()]
        return ParamGroups(groups, lr, rule, optimizer, None, ["no base_model: every multiplier is 1"],
                           depth_convention, (), rules)
    base_in = base_input if base_input is not None else example_input
    shape = tuple(_example(model, example_input).shape)
    base_shape = tuple(_example(base_model, base_in).shape)
    base_found = find_residual_branches(base_model, base_in)
    if depth_convention in ADAM_DEPTH and base_found.n_branches == 0:
        raise ValueError(f"depth_convention {depth_convention!r} is a convention for residual nets (K = residual "
                         "blocks); the base model has no residual branch")
    from amutheory.transfer import transfer_lr
    from amutheory.transfer_interval import confidence

    with buffers_kept(model, base_model):  # transfer runs both models once (BatchNorm statistics kept)
        result = transfer_lr(lr, base_model, model, rule=rule, input_shape=base_shape, target_input_shape=shape,
                             probe=probe, run_template=run_template, run_to_depth=run_to_depth)
        _, conf = confidence(result, model, base_shape, shape, None, optimizer, momentum)
    fans = (_readout_fan_in(base_model, base_found.readout), _readout_fan_in(model, found.readout))
    uses_rule = optimizer == "sgd" or depth_convention == "sgd-rule"
    rules = _role_rules(result, optimizer, depth_convention, fans, (found.blocks, base_found.blocks))
    notes = _notes(result, model, optimizer, depth_convention, uses_rule)
    mismatches = [m for m in conf["mismatches"] if uses_rule or m["assumption"] not in _RULE_MISMATCHES]
    groups = [_group(p, n, found.roles[n], None, lr, rules) for n, p in params.items()]
    return ParamGroups(groups, lr, result.rule, optimizer, result, notes, depth_convention, mismatches, rules)


def _kept(role: str, short: str = "kept at the base rate") -> dict:
    return {"multiplier": 1.0, "why": f"kept at the base rate: nothing is derived for {_KEPT[role]}",
            "short": short}


def _role_rules(result, optimizer: str, convention: str, fans, blocks) -> dict:
    """``{role: {"multiplier", "why", "short"}}`` for every role of :data:`ROLES` (module docstring)."""
    lr = result.lr_reference
    f_base, f_model = fans
    readout = f_base / f_model if f_model else 1.0
    fan_words = f"F_base/F_model = {f_base:g}/{f_model:g}" if f_model else "no readout found: x1"
    rules = {role: _kept(role) for role in _KEPT}
    if optimizer == "sgd":
        depth, width = result.depth_factors[result.rule], result.width_factor
        weights = {"multiplier": result.lr / lr, "rate": result.lr,
                   "why": f"rule {result.rule}: its depth factor x{depth:.4g} times the derived width factor "
                          f"x{width:.4g} (transfer's rate for base -> model)",
                   "short": f"{result.rule} depth x derived width"}
        rules.update(dict.fromkeys(WEIGHT_ROLES, weights))
        rules["readout"] = {"multiplier": readout,
                            "why": f"its fan-in ratio {fan_words} (the output moves by lr |h|^2, |h|^2 ~ its "
                                   "fan-in); no depth factor", "short": "readout fan-in ratio"}
        return rules
    width = result.width_rules["fan-in"]
    mup = f"muP's Adam width table x F_base/F_model = {width:.4g} (median hidden fan-in; Tensor Programs V, not " \
          "derived here)"
    readout_rule = {"multiplier": readout, "why": f"muP's Adam width table: x its fan-in ratio {fan_words} (not "
                                                  "derived here); no depth factor", "short": "muP Adam: fan-in ratio"}
    if convention == "sgd-rule":
        depth = result.depth_factors[result.rule]
        sgd = f"rule {result.rule}'s SGD depth factor x{depth:.4g} (not derived for Adam; depth_convention " \
              "'sgd-rule', the default before issue 47)"
        every = {"multiplier": depth, "why": sgd, "short": f"{result.rule} SGD depth factor (sgd-rule)"}
        rules = {role: dict(every) for role in ROLES}
        rules.update(dict.fromkeys(HIDDEN_MATRIX_ROLES, {"multiplier": depth * width, "why": f"{sgd}; {mup}",
                                                         "short": f"{result.rule} SGD depth x muP Adam width"}))
        rules["readout"], rules["readout-bias"] = readout_rule, _kept("readout-bias")
        return rules
    hidden = {"multiplier": width, "why": f"{mup}; no depth factor: nothing is derived for Adam",
              "short": "muP Adam width F_base/F_model"}
    if convention in ADAM_DEPTH:
        exponent, name, source = ADAM_DEPTH[convention]
        k, k_base = blocks
        factor = (k / k_base) ** exponent
        hidden = {"multiplier": width * factor,
                  "why": f"{source}, named, not derived here: x (K/K_base)^({exponent:g}) = ({k}/{k_base})^({exponent:g})"
                         f" (K = residual blocks); {mup}",
                  "short": f"{name} Adam (K/K_base)^{exponent:g} x muP width"}
    rules.update(dict.fromkeys(HIDDEN_MATRIX_ROLES, hidden))
    rules["input"] = {"multiplier": 1.0, "why": "muP's Adam width table: input weights x1 (not derived here); no "
                                                "depth factor", "short": "muP Adam: x1"}
    rules["readout"] = readout_rule
    return rules


def _notes(result, model, optimizer: str, convention: str, uses_rule: bool) -> list:
    """The transfer notes that apply to the rates given, and the Adam convention's."""
    from amutheory.transfer_interval import _SHOWN, model_traits

    other_rules = set(_rule_names()) - ({result.rule} if uses_rule else set())
    notes = []
    for n in result.notes:
        prefix = n.split(":", 1)[0]
        if prefix in other_rules:
            continue
        if prefix == "am-mup" and "MLP-limit ReLU constants" in n:
            acts = model_traits(model)["activations"]
            uses = (", ".join(_SHOWN.get(a, a.capitalize()) for a in acts)
                    if acts else "no activation read off")
            n = (n.replace(", MLP-limit ReLU constants", "").rstrip()
                 + f"; the chain law's constants are ReLU's (MLP limit); the model uses {uses}")
        notes.append(n)
    if optimizer != "sgd":
        notes.append(ADAM_NOTE if convention == "sgd-rule" else ADAM_NONE_NOTE if convention == "none" else
                     f"adam: nothing derived for Adam here; depth: {ADAM_DEPTH[convention][2]}, named, not derived "
                     "here, on the hidden and branch matrices; width: muP's Adam table (Tensor Programs V)")
    return notes


def _group(p, name: str, role: str, rate: float | None, lr: float, rules: dict) -> dict:
    """One parameter's group: ``rate`` given, else the role's (its ``rate``, else ``lr x`` its multiplier)."""
    rule = rules.get(role, {})
    if rate is None:
        rate = rule.get("rate", lr * rule.get("multiplier", 1.0))
    return {"params": [p], "lr": rate, "name": name, "role": role, "multiplier": rate / lr,
            "why": rule.get("why", ""), "short": rule.get("short", "")}
