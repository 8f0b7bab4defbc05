"""The prior of a guided search: a depth rule's rate at the target depth, and why that rule.

From a rate ``from_lr`` tuned at ``from_depth`` (the user's: not charged), every transfer rule of
:func:`amutheory.transfer.transfer_lr` gives a rate at the target depth.  The search centres its
bracket on one of them:

* ``rule`` given: that rule;
* otherwise the rule with the smallest measured median held-out ``|ln error|`` for this kind of net
  (chain, residual, transformer: read off the model as ``transfer`` reads it) in the held-out error
  file (:mod:`amutheory.transfer_interval`); with no record of this kind, the smallest over the
  recorded kinds (said); with no record at all, :data:`amutheory.transfer.DEFAULT_RULE` (said).

The prior carries ``transfer``'s interval for that rule (``lr_interval``: the tuned rate's CI and the
rule's held-out error) and its ``confidence`` record, so a reader sees what the bracket starts from.
"""

from __future__ import annotations


def default_rule(kind: str, errors=None) -> tuple[str, str]:
    """``(rule, reason)``: the rule with the smallest recorded held-out error for ``kind``."""
    from amutheory.transfer import DEFAULT_RULE, RULES
    from amutheory.transfer_interval import load_errors

    runs = load_errors(errors)

    def best(records):
        scored = [(e, rule, fp) for fp, r in records for rule, e in (r.get("rules") or {}).items()
                  if e is not None and rule in RULES]
        return min(scored) if scored else None

    own = best([(fp, r) for fp, r in sorted(runs.items()) if r.get("kind") == kind])
    if own is not None:
        e, rule, fp = own
        return rule, f"smallest median held-out |ln error| ({e:.3g}) for a {kind} net in protocol run {fp}"
    other = best(sorted(runs.items()))
    if other is not None:
        e, rule, fp = other
        return rule, (f"no protocol run of a {kind} net is recorded; smallest median held-out |ln error| ({e:.3g}) "
                      f"of any recorded kind (protocol run {fp}, a {runs[fp].get('kind')} net)")
    return DEFAULT_RULE, "no protocol run is recorded (validate/transfer_errors.py writes one): the default rule"


def prior(template, from_depth: int, from_lr: float, depth: int, width: int, rule: str | None = None,
          from_lr_ci=None, errors=None) -> dict:
    """The prior at ``(depth, width)`` (module docstring): ``lr``, ``rule``, ``rule_reason``, every
    rule's rate (``rules``), ``lr_interval``, ``confidence``."""
    from amutheory.train.transfer_overlay import _net
    from amutheory.transfer import transfer_with_interval

    ref, shape = _net(template, from_depth, width)
    tgt, _ = _net(template, depth, width)
    opts = dict(input_shape=shape, lr_ci=from_lr_ci, optimizer=template.optimizer,
                momentum=template.momentum, errors=errors)
    res = transfer_with_interval(from_lr, ref, tgt, **opts)
    reason = "given (--rule)"
    if rule is None:
        rule, reason = default_rule(res.confidence["resolved_as"], errors)
    if rule != res.rule:
        res = transfer_with_interval(from_lr, ref, tgt, rule=rule, **opts)
    return {"depth": depth, "width": width, "lr": res.lr, "rule": rule, "rule_reason": reason,
            "rules": dict(res.rules), "lr_interval": list(res.lr_interval), "confidence": res.confidence}
