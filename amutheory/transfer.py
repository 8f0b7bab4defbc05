"""Learning-rate transfer across depth (and width): one tuned learning rate, many rules.

``transfer_lr(lr, reference, target)`` returns the learning rate for ``target`` from ``lr`` tuned
on ``reference``.  Both are an :class:`~amutheory.spec.ArchSpec` (the model is built, seed 0) or a
``torch.nn.Module`` (with ``input_shape``); the depth measures come from the traced computation
graph (:mod:`amutheory.graph`).  Every rule is ``lr_t = lr * depth_factor * width_factor``:

=================  ==========================================================================
rule               depth factor ``lr_t / lr`` at equal width
=================  ==========================================================================
``am-mup``         the derived AM-muP law with its finite-depth corrections: conv chains
                   ``sqrt(s_bar(L_r) / s_bar(L_t))`` of :func:`amutheory.symbolic.chain.conv.conv_law`
                   with the derived MLP-limit constants (zero padding: times the boundary
                   factor); residual nets and transformers: the derived leading power of ``K``
                   (their constants are not derived; no corrections); ``nn.Module``\\ s and
                   transformers with ``init="none"``: the chain law in the effective depth
                   (the second paper's claim), MLP-limit ReLU constants.
``power``          ``(L_eff,t / L_eff,r)^(-3/2)``, ``L_eff`` the effective depth.
``chen``           ``(P_t / P_r)^(-1/2)``, ``P = sum_p L_p^3`` over all paths (Chen et al. 2024).
``depth-mup``      Depth-muP (branch multiplier ``1/sqrt(K)``, SGD learning rate constant in its
                   own parametrisation), mapped to this net's: ``eta alpha^2 ~ K^(-1)``, so
                   ``(K_t / K_r)^(-1) alpha_r^2 / alpha_t^2`` (``K`` = blocks, ``alpha`` = the
                   net's branch multiplier).  For SGD a multiplier ``alpha`` is the same as
                   learning rate ``alpha^2 eta`` on the unmultiplied weights.
``completep``      CompleteP (multiplier ``1/K``), mapped the same way: ``eta alpha^2 ~ K^(-2)``.
                   Our reading for SGD (the paper states its rules for Adam).
``per-layer-mup``  per-layer muP binds on ``max_l s_l`` instead of the mean: the chain
                   expansion's last layer, ``sqrt(s_L(L_r) / s_L(L_t))`` in the effective depth,
                   MLP-limit constants.
``probe``          measured, not assumed: the model's own one-step ratio ``r1`` (the probe of
                   ``measure --model`` at both ends) times ``rho^beta``, the bridge to training
                   measured on recorded models (:mod:`amutheory.transfer_probe`; width included
                   in ``r1``).  Only where asked (``rule="probe"``/``"auto"``, ``probe=True``).
``auto``           not a rule: picks the one with the smallest recorded typical held-out error
                   for the net's kind, the probe competing where it ran.
=================  ==========================================================================

Width (every rule): derived from the expansion (:mod:`amutheory.symbolic.primitives.width`).  The one-step
moment of a hidden pre-activation is ``s ~ F^2 R``: squared Gram of its inputs (``F`` = fan-in)
times the backward variance the readout sends down (``R = n_out v_out``, ``v_out`` the readout
weight variance).  So ``width_factor = (F_r / F_t) sqrt(R_r / R_t)``; with this library's readout
(``Var 1/n``) that is ``sqrt(n_r / n_t)`` at fixed kernel, with a muP readout (``Var 1/n^2``) it is 1.
``F`` is the median hidden fan-in (``n k^d`` for convolutions, ``n`` for transformers); ``R`` is
``outputs * readout_variance`` for a spec and, for an ``nn.Module``, ``|W|^2 / in_features`` of the last
parameterised layer its forward pass runs (the readout, as initialised; two readouts of the same
shape are taken to share their init, so their ratio is 1 and sampling noise does not enter).  A kernel change moves
a width-free spatial-coherence factor too, which is not derived (a note says so).  The
``1/fan_in`` rule often quoted for SGD in the standard parametrisation (the output's stability
limit) is reported beside it as ``width_rules["fan-in"]``; the ``transfer`` campaign measures both.

Which rule to use is a question of evidence, not of this module: the campaign's ``transfer``
section measures each rule's error at held-out depths (``report.md``).  How far to trust one
transferred rate is :func:`transfer_with_interval`'s answer (:mod:`amutheory.transfer_interval`):
an interval from the tuned rate's own CI widened by the rule's measured held-out error for this
kind of net under training, and the rules' assumptions the model and its optimizer break.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import asdict, dataclass, field

import numpy as np

# a spec's depth report builds its family's model and reads its branch multiplier: the measure and
# symbolic layers register them with the families (both imports are light)
import amutheory.measure  # noqa: F401
import amutheory.symbolic  # noqa: F401
from amutheory.names import AUTO_RULE, DEFAULT_RULE, MEASURED_RULES, RULE_CHOICES, RUN_RULE
from amutheory.names import TRANSFER_RULES as RULES
from amutheory.spec import ArchSpec


@dataclass
class DepthMeasures:
    """What the rules read from one network."""

    effective_depth: float
    blocks: int
    path_sum_cubed: float
    fan_in: float
    alpha: float = 1.0
    spec: dict | None = None
    source: str = "module"
    readout: float = float("nan")
    readout_shape: tuple | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TransferResult:
    """``lr`` by the chosen rule, ``rules`` = every rule's learning rate, and what they read."""

    lr: float
    rule: str
    rules: dict
    depth_factors: dict
    width_factor: float
    reference: DepthMeasures
    target: DepthMeasures
    lr_reference: float
    notes: list = field(default_factory=list)
    width_rules: dict = field(default_factory=dict)
    #: ``[lo, hi]`` for the chosen rule and what it rests on (:func:`transfer_with_interval`; else None)
    lr_interval: list | None = None
    confidence: dict | None = None
    #: the ``probe`` rule's record (:mod:`amutheory.transfer_probe`): the one-step ratio, the bridge,
    #: the factor and its interval factors, or ``{"skipped": True, "reason"}``; None where not asked
    probe: dict | None = None
    #: why ``rule`` is the rule (``auto``: the probe, or why not)
    rule_reason: str = "given"
    #: the ``probe-run`` rule's record (:mod:`amutheory.transfer_run`): both depths' short-run optima, the
    #: bridge, the factor, its interval factors and its cost; None where not asked
    probe_run: dict | None = None

    def to_dict(self) -> dict:
        d = {"lr": self.lr, "rule": self.rule, "rule_reason": self.rule_reason, "rules": dict(self.rules),
             "probe": self.probe, "probe_run": self.probe_run, "lr_reference": self.lr_reference,
             "depth_factors": dict(self.depth_factors), "width_factor": self.width_factor,
             "width_rules": dict(self.width_rules),
             "reference": self.reference.to_dict(), "target": self.target.to_dict(), "notes": list(self.notes)}
        if self.confidence is not None:
            d["lr_interval"], d["confidence"] = list(self.lr_interval), self.confidence
        return d


# --------------------------------------------------------------------------- depth measures
def _hidden_fan_in(model) -> float:
    from torch import nn

    fans = []
    for mod in model.modules():
        if isinstance(mod, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            fans.append(mod.weight[0].numel())  # in_features, or in_channels/groups * prod(kernel)
    if not fans:
        raise ValueError("the model has no Linear or Conv layer: no fan-in for the width rule")
    return float(np.median(fans))


def _readout_strength(model, input_shape) -> tuple[float, tuple]:
    """``(R, shape)``: ``R = |W|^2 / in_features`` of the last Linear/Conv layer the forward pass runs
    (the readout, as initialised) and that layer's weight shape."""
    import torch
    from torch import nn

    order = []
    hooks = [mod.register_forward_hook(lambda m, i, o: order.append(m)) for mod in model.modules()
             if isinstance(mod, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))]
    try:
        p = next(model.parameters())
        with torch.no_grad():
            model(torch.zeros(tuple(input_shape), dtype=p.dtype, device=p.device))
    except Exception as exc:  # noqa: BLE001 - any failure of the user's forward pass
        raise ValueError(f"could not run the model's forward pass on input_shape {tuple(input_shape)} to find "
                         f"its readout: {type(exc).__name__}: {exc}") from None
    finally:
        for h in hooks:
            h.remove()
    if not order:
        raise ValueError("the model's forward pass runs no Linear or Conv layer: no readout for the width rule")
    w = order[-1].weight.detach()
    return float((w.double() ** 2).sum() / w.shape[1]), tuple(w.shape)


def _spec_fan_in(spec: ArchSpec) -> float:
    """The hidden fan-in of ``spec``'s family (``n k^d`` for convolutions, ``n`` for transformers)."""
    return spec.family_object.hidden_fan_in(spec)


def _spec_input_shape(spec: ArchSpec) -> tuple:
    return tuple(spec.family_object.input_shape(spec))


def depth_measures(net, input_shape=None) -> DepthMeasures:
    """The :class:`DepthMeasures` of an ``ArchSpec`` or an ``nn.Module`` (traced with ``input_shape``)."""
    from torch import nn

    if isinstance(net, ArchSpec):
        family = net.family_object
        rep = family.depth_report(net)
        return DepthMeasures(rep.effective_depth, rep.blocks, float(rep.path_sum_cubed), _spec_fan_in(net),
                             family.branch_multiplier(net), net.to_dict(), "spec",
                             net.outputs * net.readout_variance, (net.outputs, net.width))
    if isinstance(net, nn.Module):
        from amutheory.families import get_family

        family = get_family("module")  # a user's module: its traced graph, its own layers
        rep = family.depth_report(net, input_shape)
        return DepthMeasures(rep.effective_depth, rep.blocks, float(rep.path_sum_cubed), _hidden_fan_in(net),
                             family.branch_multiplier(net), None, "module", *_readout_strength(net, input_shape))
    raise TypeError(f"reference/target must be an ArchSpec or a torch.nn.Module, got {type(net).__name__}")


# --------------------------------------------------------------------------- rules
def _chain_constants(activation: str = "relu", width: int = 64) -> dict:
    from amutheory.api import mlp_limit_constants

    return mlp_limit_constants(ArchSpec(activation=activation, width=width))


def _chain_values(depths, constants: dict, quantity: str) -> np.ndarray:
    """The chain law's ``s_bar`` (``quantity="mean"``) or last-layer ``s_L`` (``"max"``) at
    (possibly non-integer) ``depths``."""
    from amutheory.symbolic.chain.conv import conv_law

    vals = {k: constants[k].value for k in ("a", "b", "e", "epsilon")}
    if quantity == "mean":
        return conv_law(None).predictor("s_bar")(np.asarray(depths, float), **vals)
    return _last_layer_fn()(np.asarray(depths, float), *vals.values()) * np.ones(np.shape(depths))


@functools.lru_cache(maxsize=None)
def _last_layer_fn():
    """Lambdified ``s_l`` of the chain law at ``l = L`` (the largest layer moment)."""
    import sympy as sp

    from amutheory.symbolic.chain.conv import conv_law
    from amutheory.symbolic.primitives.symbols import L, a, b, e, epsilon, l

    return sp.lambdify((L, a, b, e, epsilon), conv_law(None).s_layer.subs(l, L), "numpy")


def _am_mup_factor(ref: DepthMeasures, tgt: DepthMeasures, rs, ts, notes: list) -> float:
    """The default rule's depth factor (see the module table)."""
    import amutheory.laws  # noqa: F401  (registers the chain law's factor a family's rule reads)

    if rs is not None and ts is not None and rs.family == ts.family:
        factor = rs.family_object.am_mup_depth_factor(rs, ts, notes)
        if factor is not None:
            return factor
    elif rs is None or ts is None:
        notes.append("am-mup: nn.Module -> the chain law in the effective depth, MLP-limit ReLU constants")
    act = rs.activation if rs is not None else "relu"
    const = _chain_constants(act)
    s = _chain_values([ref.effective_depth, tgt.effective_depth], const, "mean")
    return float(np.sqrt(s[0] / s[1]))


def depth_factors(ref: DepthMeasures, tgt: DepthMeasures, ref_spec=None, tgt_spec=None,
                  notes: list | None = None) -> dict:
    """``{rule: lr_t / lr_r at equal width}`` for every rule of :data:`RULES`."""
    notes = [] if notes is None else notes
    act = ref_spec.activation if ref_spec is not None else "relu"
    chain = _chain_constants(act)
    s_max = _chain_values([ref.effective_depth, tgt.effective_depth], chain, "max")
    depth_mup = (tgt.blocks / ref.blocks) ** -1 * (ref.alpha**2 / tgt.alpha**2)
    return {
        "am-mup": _am_mup_factor(ref, tgt, ref_spec, tgt_spec, notes),
        "power": float((tgt.effective_depth / ref.effective_depth) ** -1.5),
        "chen": float(np.sqrt(ref.path_sum_cubed / tgt.path_sum_cubed)),
        "depth-mup": float(depth_mup),
        "completep": float((tgt.blocks / ref.blocks) ** -2 * (ref.alpha**2 / tgt.alpha**2)),
        "per-layer-mup": float(np.sqrt(s_max[0] / s_max[1])),
    }


WIDTH_RULES = ("derived", "fan-in")


def width_factors(ref: DepthMeasures, tgt: DepthMeasures, ref_spec=None, tgt_spec=None,
                  notes: list | None = None) -> dict:
    """``{"derived": (F_r/F_t) sqrt(R_r/R_t), "fan-in": F_r/F_t}`` (module docstring); notes a width change."""
    from amutheory.symbolic.primitives.width import width_factor_fn

    notes = [] if notes is None else notes
    # equal readout shapes: the same init is assumed, so the realised |W|^2 of two draws (which
    # differ by O(1/sqrt(size)) noise) must not move the learning rate
    r_t = ref.readout if ref.readout_shape is not None and ref.readout_shape == tgt.readout_shape else tgt.readout
    out = {"derived": float(width_factor_fn()(ref.fan_in, ref.readout, tgt.fan_in, r_t)),
           "fan-in": ref.fan_in / tgt.fan_in}
    if ref.fan_in != tgt.fan_in or ref.readout != r_t:
        notes.append(f"width: derived rule lr ~ 1/(F sqrt(R)) (amutheory.symbolic.primitives.width): hidden fan-in F "
                     f"{ref.fan_in:g} -> {tgt.fan_in:g}, readout R {ref.readout:.4g} -> {r_t:.4g}; "
                     f"'fan-in' rule (1/F) gives {out['fan-in']:.4g} instead of {out['derived']:.4g}")
    if ref_spec is not None and tgt_spec is not None and (ref_spec.kernel, ref_spec.dim) != (tgt_spec.kernel,
                                                                                           tgt_spec.dim):
        notes.append("width: the kernel changes; only its fan-in part k^d is derived, the spatial-coherence "
                     "factor it also moves is not")
    return out


def _check_lr(lr) -> float:
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    from amutheory.spec import check_rate

    return check_rate("lr", lr)


def _check_transferred(lr: float, rules: dict) -> None:
    """Every rule's rate is a normal positive float: a rate that overflows to inf or underflows
    to 0 (or a subnormal) is refused rather than printed (it would be ``Infinity`` in JSON)."""
    import sys

    bad = {k: v for k, v in rules.items() if not (np.isfinite(v) and v >= sys.float_info.min)}
    if bad:
        rule, value = next(iter(bad.items()))
        what = "overflows" if not np.isfinite(value) or value > 1 else "underflows"
        raise ValueError(f"lr {lr:g}: the transferred rate {what} a float64 (rule {rule} gives {value:g}); "
                         "give a rate nearer the target's scale")


def transfer_lr(lr, reference, target, rule: str = DEFAULT_RULE, input_shape=None,
                target_input_shape=None, *, probe=None, probe_seeds=None, probe_budget=None, builds=None,
                bridge_file=None, errors=None, run_template=None, run_to_depth=None, run_bridge_file=None,
                run_executor=None) -> TransferResult:
    """The learning rate for ``target`` from ``lr`` tuned at ``reference`` (module docstring).

    ``reference``/``target``: :class:`ArchSpec` or ``nn.Module``; ``input_shape`` (and
    ``target_input_shape``, default the same) are needed for modules.  ``rule`` picks ``lr``: a fixed
    rule, ``"probe"`` (the model's own probe and the measured bridge, :mod:`amutheory.transfer_probe`)
    or ``"auto"`` (the rule with the smallest recorded typical held-out error for this kind of net, the
    probe a candidate where affordable: :func:`amutheory.transfer_interval.choose_rule`, reading the
    held-out error file ``errors``); ``rules`` holds every rule's value.  ``probe``: run the probe
    (True: whenever affordable, to check the fixed rules against it; False: never; None: when ``rule``
    asks for it); ``probe_seeds`` (default 8),
    ``probe_budget`` (seconds, default 60), ``builds`` (``(ref_build, tgt_build)``: callables drawing
    each net from torch's global generator, e.g. a factory at its depth; default: a spec's built-in
    net, a module's copy) and ``bridge_file`` set how.  ``rule="probe-run"`` (and ``"auto"`` when
    ``run_template`` is given) trains the net briefly at both depths (:mod:`amutheory.transfer_run`):
    ``run_template`` is the training
    :class:`~amutheory.train.cell.Cell` of the user's run at the reference depth (model, data,
    optimizer, steps), ``run_to_depth`` the depth it is trained at for the target (a spec target: its
    depth), ``run_bridge_file`` its bridge record, ``run_executor`` how its cells train (default in
    this process)."""
    lr = _check_lr(lr)
    if rule not in RULE_CHOICES:
        raise ValueError(f"rule must be one of {', '.join(RULE_CHOICES)}; got {rule!r}")
    if rule == RUN_RULE or (rule == AUTO_RULE and run_template is not None):
        run_to_depth = _check_run_template(run_template, run_to_depth, reference, target)
    elif run_template is not None:
        raise ValueError(f"run_template is read by rule {RUN_RULE!r} (or auto) only (rule is {rule!r})")
    if probe is not None and not isinstance(probe, bool):
        raise TypeError(f"probe must be True, False or None, got {probe!r}")
    if probe is False and rule in MEASURED_RULES:
        raise ValueError(f"rule {rule!r} needs the probe: probe=False contradicts it")
    if probe_seeds is not None or probe_budget is not None:  # refused before any work
        from amutheory.transfer_probe import check_budget, check_seeds

        probe_seeds = None if probe_seeds is None else check_seeds(probe_seeds)
        probe_budget = None if probe_budget is None else check_budget(probe_budget)
    ref = depth_measures(reference, input_shape)
    tgt = depth_measures(target, target_input_shape if target_input_shape is not None else input_shape)
    for name, m in (("reference", ref), ("target", tgt)):
        if m.effective_depth <= 0 or m.blocks <= 0 or m.path_sum_cubed <= 0:
            raise ValueError(f"{name} has no parameterised layer on its input -> output paths")
    notes: list[str] = []
    rs = reference if isinstance(reference, ArchSpec) else None
    ts = target if isinstance(target, ArchSpec) else None
    factors = depth_factors(ref, tgt, rs, ts, notes)
    widths = width_factors(ref, tgt, rs, ts, notes)
    width = widths["derived"]
    rules = {k: lr * f * width for k, f in factors.items()}
    probed = None
    if probe or (probe is None and rule in MEASURED_RULES + (AUTO_RULE,)):
        probed = _probe_rule(reference, target, ref, tgt, input_shape, target_input_shape, probe_seeds,
                             probe_budget, builds, bridge_file, notes)
        if "factor" in probed:
            rules["probe"] = lr * probed["factor"]
            factors["probe"] = probed["factor"] / width
    ran, run_failed = None, None
    if run_template is not None:
        try:
            ran = _run_rule(run_template, run_to_depth, ref, tgt, lr, factors.get(DEFAULT_RULE, 1.0), target,
                            target_input_shape or input_shape, run_bridge_file, run_executor, notes)
        except ValueError as exc:
            if rule == RUN_RULE:
                raise
            run_failed = str(exc)  # auto goes on without it, and says why
        if ran is not None:
            rules[RUN_RULE] = lr * ran["factor"]
            factors[RUN_RULE] = ran["factor"] / width
    chosen, reason = rule, "given"
    if rule == AUTO_RULE and ran is not None:
        chosen, reason = RUN_RULE, ("auto: your run was given (run_template): the model's own short runs, the rule "
                                    "with the smallest held-out error on the recorded user models "
                                    "(docs/findings/transfer_probe_2.md)")
    elif rule == AUTO_RULE:
        from amutheory.transfer_interval import choose_rule

        kind = probed["kind"] if probed else _kind(target, target_input_shape or input_shape)
        chosen, why = choose_rule(kind, errors, RULES + (("probe",) if "probe" in rules else ()))
        reason = f"auto: {why}" + ("" if "probe" in rules else f" (the probe is not available: {probed['reason']})"
                                   if probed else " (the probe was not run)")
        if run_failed is not None:
            reason += f" (the short runs gave no rate: {run_failed})"
    elif rule == "probe" and "probe" not in rules:
        raise ValueError(f"rule probe: {probed['reason']}")
    _check_transferred(lr, rules)
    return TransferResult(rules[chosen], chosen, rules, factors, width, ref, tgt, lr, notes, widths,
                          probe=probed, rule_reason=reason, probe_run=ran)


def _check_run_template(template, to_depth, reference, target) -> int:
    """``probe-run`` trains ``template``'s net at both depths: a Cell, and one net at two depths; the
    target depth it trains at."""
    from amutheory.spec import check_int
    from amutheory.train.cell import Cell

    if template is None:
        raise ValueError(f"rule {RUN_RULE!r} trains the model briefly at both depths: give run_template, the "
                         "training Cell of your run (model, data, optimizer, steps)")
    if not isinstance(template, Cell):
        raise TypeError(f"run_template must be a training Cell, got {type(template).__name__}")
    if isinstance(reference, ArchSpec) and isinstance(target, ArchSpec) and reference.width != target.width:
        raise ValueError(f"rule {RUN_RULE!r} carries a depth change at one width; the widths differ "
                         f"({reference.width} -> {target.width})")
    if to_depth is None:
        if not isinstance(target, ArchSpec):
            raise ValueError(f"rule {RUN_RULE!r} on a module: give run_to_depth, the depth the template's model "
                             "is built at for the target")
        to_depth = target.depth
    return check_int("run_to_depth", to_depth, 1)


def _run_rule(template, to_depth: int, ref: DepthMeasures, tgt: DepthMeasures, lr: float, guess: float, target,
              input_shape, bridge_file, executor, notes: list) -> dict:
    """The ``probe-run`` rule's record (:func:`amutheory.transfer_run.run_factor` plus what it read)."""
    from amutheory import transfer_run as trun

    kind = _kind(target, input_shape)
    settings = trun.ShortRun()
    b = trun.bridge(kind, settings, bridge_file)
    if b is None:
        raise ValueError(f"rule {RUN_RULE}: no bridge is recorded for its settings "
                         f"({trun.bridge_path(bridge_file)}: validate/transfer_run_findings.py dev writes it)")
    r = trun.run_ratio(template, template.spec.depth, to_depth, lr, guess, settings, run=executor)
    for opt in (r.reference, r.target):
        if opt.flags:
            notes.append(f"probe-run: the short-run optimum at depth {opt.depth}: {', '.join(opt.flags)}")
    out = trun.run_factor(r, b, tgt.effective_depth / ref.effective_depth)
    out.update({"kind": kind, "short_run": r.to_dict(), "bridge": b.to_dict(),
                "setup_differences": trun.setup_differences(template, b.fingerprint, bridge_file)})
    return out


def _kind(net, input_shape) -> str:
    """The kind of net (chain, residual, transformer) ``transfer`` reads ``net`` as."""
    from amutheory.transfer_interval import _residual_additions, model_of, model_traits, resolve_kind

    return resolve_kind(model_traits(model_of(net)), _residual_additions(net, input_shape))[0]


def _probe_rule(reference, target, ref: DepthMeasures, tgt: DepthMeasures, input_shape, target_input_shape,
                seeds, budget, builds, bridge_file, notes: list) -> dict:
    """The probe rule's record (:func:`amutheory.transfer_probe.probe_factor` plus what it read), or
    ``{"skipped": True, "reason"}``."""
    from amutheory import transfer_probe as tp

    kind = _kind(target, target_input_shape if target_input_shape is not None else input_shape)
    b = tp.bridge(kind, bridge_file)
    if b is None:
        return {**tp.ProbeSkipped(f"no bridge is recorded ({tp.bridge_path(bridge_file)}: "
                                  "validate/transfer_probe_findings.py writes it)").to_dict(), "kind": kind}
    r1 = tp.probe_ratio(reference, target, input_shape, target_input_shape,
                        tp.SEEDS if seeds is None else seeds, tp.BUDGET_S if budget is None else budget, builds)
    if isinstance(r1, tp.ProbeSkipped):
        return {**r1.to_dict(), "kind": kind}
    out = tp.probe_factor(r1, b, tgt.effective_depth / ref.effective_depth)
    out.update({"kind": kind, "one_step": r1.to_dict(), "bridge": b.to_dict()})
    if ref.fan_in != tgt.fan_in or ref.readout_shape != tgt.readout_shape:
        notes.append("probe: the bridge is measured across depth at fixed width; the width change is carried by "
                     "the one-step ratio alone")
    if not r1.redrawn:
        notes.append("probe: modules given directly keep their weights; the probe's seeds move its input and loss "
                     "direction only (give a factory to redraw the weights per seed)")
    return out


def transfer_with_interval(lr, reference, target, rule: str = AUTO_RULE, input_shape=None,
                           target_input_shape=None, lr_ci=None, optimizer: str = "sgd", momentum: float = 0.0,
                           errors=None, **probe_options) -> TransferResult:
    """:func:`transfer_lr` with ``lr_interval`` and ``confidence`` filled in
    (:mod:`amutheory.transfer_interval`): ``lr_ci = (lo, hi)`` is the tuned rate's own uncertainty,
    ``optimizer``/``momentum`` how the user trains, ``errors`` a held-out error file (default: the
    package's, or ``$AMUTHEORY_TRANSFER_ERRORS``).  ``rule`` defaults to ``auto`` (the best recorded rule
    for this kind of net, the model's own probe competing where affordable); ``probe_options``:
    :func:`transfer_lr`'s ``probe``, ``probe_seeds``, ``probe_budget``, ``builds``, ``bridge_file``."""
    from amutheory.transfer_interval import confidence

    res = transfer_lr(lr, reference, target, rule=rule, input_shape=input_shape,
                      target_input_shape=target_input_shape, errors=errors, **probe_options)
    res.lr_interval, res.confidence = confidence(res, target, input_shape, target_input_shape, lr_ci, optimizer,
                                                 momentum, errors)
    return res
