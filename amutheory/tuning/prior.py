"""The prior of a guided search: a depth rule's rate at the target depth, and why that rule.

From a rate ``from_lr`` tuned at ``from_depth`` (the user's: not charged), every transfer rule of
:func:`amutheory.transfer.transfer_lr` gives a rate at the target depth.  The search centres its
bracket on one of them:

* ``rule`` given: that rule (``probe``: the model's own one-step probe and the measured bridge,
  :mod:`amutheory.transfer_probe`; ``probe-run``: the model's own short runs at both depths,
  :mod:`amutheory.transfer_run`, trained through the search's store and charged to the prior);
* otherwise (``rule=None`` or ``"auto"``) what ``transfer``'s ``auto`` picks
  (:func:`amutheory.transfer_interval.choose_rule`): the rule with the smallest recorded typical
  held-out ``|ln error|`` for this kind of net (chain, residual, transformer: read off the model as
  ``transfer`` reads it), the probe a candidate where affordable (its cost, timed on one seed, within
  ``probe_budget`` seconds); with no record of this kind, the smallest over the recorded kinds (said);
  with no record at all, the probe where affordable, else :data:`amutheory.transfer.DEFAULT_RULE`.

The prior carries ``transfer``'s interval for that rule (``lr_interval``: the tuned rate's CI and the
rule's held-out error) and its ``confidence`` record -- with the fixed rules the probe measures outside
its interval among the mismatches -- so a reader sees what the bracket starts from.  The probe costs
no training cell; its seconds are stated (``probe.one_step.seconds``).
"""

from __future__ import annotations


def default_rule(kind: str, errors=None) -> tuple[str, str]:
    """``(rule, reason)``: the fixed rule with the smallest recorded held-out error for ``kind``
    (:func:`amutheory.transfer_interval.choose_rule`)."""
    from amutheory.transfer_interval import choose_rule

    return choose_rule(kind, errors)


#: the probe's batch for a user's model (the sweep's input shape with this batch: BatchNorm needs more than one)
PROBE_BATCH = 32


def _builds(template, from_depth: int, depth: int, width: int):
    """The probe's per-seed builds of a user's factory at both depths (None for a built-in family: the
    probe builds its spec's net)."""
    family = template.family_object
    if family.has_spec:
        return None
    ref, tgt = (template.spec.with_(depth=d, width=width) for d in (from_depth, depth))
    return (lambda: family.build_model(ref, who="tune")), (lambda: family.build_model(tgt, who="tune"))


def prior(template, from_depth: int, from_lr: float, depth: int, width: int, rule: str | None = None,
          from_lr_ci=None, errors=None, probe: bool = True, probe_seeds=None, probe_budget=None,
          bridge_file=None, run_executor=None) -> dict:
    """The prior at ``(depth, width)`` (module docstring): ``lr``, ``rule``, ``rule_reason``, every
    rule's rate (``rules``), ``lr_interval``, ``confidence``, ``probe``.  ``probe=False``: no probe
    (the fixed rules only)."""
    from amutheory.train.transfer_overlay import _net
    from amutheory.transfer import transfer_with_interval

    ref, shape = _net(template, from_depth, width)
    tgt, _ = _net(template, depth, width)
    opts = dict(input_shape=None if shape is None else (PROBE_BATCH,) + tuple(shape[1:]), lr_ci=from_lr_ci,
                optimizer=template.optimizer, momentum=template.momentum, errors=errors, probe=probe,
                probe_seeds=probe_seeds, probe_budget=probe_budget, builds=_builds(template, from_depth, depth, width),
                bridge_file=bridge_file)
    from amutheory.names import RUN_RULE

    if rule == RUN_RULE:  # the short runs train the template's net at both depths, through run_executor
        opts.update(run_template=template.with_(spec=template.spec.with_(depth=from_depth, width=width)),
                    run_to_depth=depth, run_executor=run_executor)
    res = transfer_with_interval(from_lr, ref, tgt, rule="auto" if rule is None else rule, **opts)
    reason = res.rule_reason if rule in (None, "auto") else "given (--rule)"
    return {"depth": depth, "width": width, "lr": res.lr, "rule": res.rule, "rule_reason": reason,
            "rules": dict(res.rules), "lr_interval": list(res.lr_interval), "confidence": res.confidence,
            "probe": res.probe, "probe_run": res.probe_run}
