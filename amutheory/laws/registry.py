"""The registry of every law and the choice of the best one for a spec.

Adding a law is one module (a :class:`~amutheory.laws.contract.Law` subclass) and one line here
(its instance in :data:`REGISTRY`'s tuple), or, from outside the package, :func:`register` (and the
plugin loader, :mod:`amutheory.plugins`, for the entry-point group ``amutheory.laws`` and
``--plugin FILE.py``: the registry's first read loads the installed ones); ``ARCHITECTURE.md`` shows
it step by step.

:func:`best_law` takes, among the laws that cover a spec and may be chosen by default, the first by
:attr:`~amutheory.laws.contract.Law.priority` (highest first; every built-in law has 0), then by
exactness (:data:`~amutheory.laws.contract.EXACTNESS`: exact, then Monte Carlo, then approximate, then calibrated),
then by registry order, whose cost estimate fits the budget; a calibrated law is always within
reach (it is what the default did before there was a choice).  The choice records which law, why
(its priority where that decided), and each law ranked above it that it passed over with the reason
(not covering, not a default, or its cost estimate); where the choice is a calibrated law, those of them
that are derived say why the net is calibrated (:attr:`Choice.calibrated_because`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import amutheory.laws.chain as chain
import amutheory.laws.mlp as mlp
import amutheory.laws.resnet as resnet
import amutheory.laws.transformer as transformer
from amutheory.laws.contract import EXACTNESS, Law, call_law
from amutheory.plugins import LazyRegistry, accept
from amutheory.spec import ArchSpec

#: every law, by name, in the order the choice breaks ties (the first read loads the installed
#: plugins' laws: :mod:`amutheory.plugins`)
REGISTRY: dict[str, Law] = LazyRegistry(
    {law.name: law for law in (*chain.LAWS, *resnet.LAWS, *transformer.LAWS, *mlp.LAWS)})
#: seconds a default prediction may spend on a more exact law (about a minute on 2 cores)
DEFAULT_BUDGET_S = 60.0


@dataclass
class Choice:
    """The law :func:`best_law` chose (``law``), the reason, and the laws passed over: ``skipped``
    (covering and more exact, but over the budget: name, estimate, reason), ``not_default`` (covering
    and more exact, but chosen only on request) and ``not_covering`` (name, reason)."""

    law: Law
    reason: str
    skipped: list = field(default_factory=list)
    not_default: list = field(default_factory=list)
    not_covering: list = field(default_factory=list)
    #: the chosen Monte Carlo law's draws within the budget (:attr:`~amutheory.laws.contract.Cost.draws`; ``None``:
    #: the law's own count): ``predict`` evaluates it with these
    draws: int | None = None

    @property
    def calibrated_because(self) -> str | None:
        """Where the chosen law is calibrated, why no derived law (exact or Monte Carlo) predicts this
        net: each more exact law of the family with the reason it was passed over; else ``None``."""
        if self.law.exactness != "calibrated":
            return None
        derived = {law.name for law in REGISTRY.values() if law.exactness != "calibrated"}
        passed = [d for d in self.not_covering + self.not_default + self.skipped if d["law"] in derived]
        if not passed:
            return f"the family {self.law.family!r} has no derived law"
        return "no derived law is taken for this net: " + "; ".join(f"{d['law']}: {d['reason']}" for d in passed)

    def to_dict(self) -> dict:
        return {"law": self.law.name, "exactness": self.law.exactness, "reason": self.reason,
                "skipped_for_cost": self.skipped, "not_default": self.not_default, "not_covering": self.not_covering,
                "calibrated_because": self.calibrated_because, "draws": self.draws}


def register(law) -> Law:
    """Add ``law`` (a :class:`Law` instance, or a subclass, which is instantiated) to :data:`REGISTRY`
    and return it.  ``TypeError`` for anything else; ``ValueError`` for a name already registered, an
    empty name, an exactness outside :data:`~amutheory.laws.contract.EXACTNESS`, or a priority that is
    not a finite number."""
    if isinstance(law, type) and issubclass(law, Law):
        law = law()
    if not isinstance(law, Law):
        raise TypeError(f"law must be an amutheory.laws.Law (instance or subclass), got {type(law).__name__}")
    if not isinstance(law.name, str) or not law.name:
        raise ValueError(f"law: a law needs a name, got {law.name!r}")
    if dict.__contains__(REGISTRY, law.name):  # registering loads no plugin
        raise ValueError(f"law: a law called {law.name!r} is already registered")
    if law.exactness not in EXACTNESS:
        raise ValueError(f"law {law.name}: exactness must be one of {', '.join(EXACTNESS)}, got {law.exactness!r}")
    if not isinstance(law.family, str) or not law.family:
        raise ValueError(f"law {law.name}: family must be the name of an architecture family, got {law.family!r}")
    priority = getattr(law, "priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, (int, float)) or priority != priority or abs(
            priority) == float("inf"):
        raise ValueError(f"law {law.name}: priority must be a finite number (0: the built-ins'), got {priority!r}")
    REGISTRY[law.name] = law
    return law


accept(Law, REGISTRY, register)  # plugin files' and entry points' laws are registered here


def get_law(name: str) -> Law:
    """The registered law called ``name`` (``ValueError`` listing the names otherwise)."""
    if name not in REGISTRY:
        raise ValueError(f"law: no law called {name!r}; registered: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def laws_of(family: str) -> list[Law]:
    """The registered laws of ``family``, most exact first (registry order within a class)."""
    return sorted((law for law in REGISTRY.values() if law.family == family), key=lambda law: EXACTNESS.index(
        law.exactness))


def ranked(family: str) -> list[Law]:
    """The registered laws of ``family`` in the order :func:`best_law` tries them: highest
    :attr:`~amutheory.laws.contract.Law.priority` first, then most exact, then registry order."""
    return sorted(laws_of(family), key=lambda law: -getattr(law, "priority", 0))  # stable: exactness, registry


def covering(spec: ArchSpec) -> list[tuple[Law, object]]:
    """``(law, coverage)`` of every law of ``spec``'s family, in :func:`ranked` order (most exact
    first among equal priorities)."""
    return [(law, call_law(law, "covers", spec)) for law in ranked(spec.family)]


def best_law(spec: ArchSpec, depths, budget_s: float = DEFAULT_BUDGET_S, **cost_args) -> Choice:
    """The first default law by priority, then exactness (:func:`ranked`), that covers ``spec`` within
    ``budget_s`` seconds (estimate): with every priority 0, the most exact.  ``cost_args``:
    ``calibration_depths``, ``calibration_seeds`` for the calibrated laws' estimates, ``draws`` for the Monte
    Carlo laws' (their own count by default).  A Monte Carlo law whose full draws do not fit may take fewer
    (its ``cost`` gets ``budget_s`` where its signature names it; :func:`~amutheory.laws.costs.draws_within`),
    and the choice records them (:attr:`Choice.draws`).  ``ValueError`` when no law of the family covers
    ``spec`` (with each law's reason, or that the family has none)."""
    if not budget_s > 0:
        raise ValueError(f"budget_s must be > 0, got {budget_s!r}")
    skipped, not_default, not_covering = [], [], []
    candidates = covering(spec)
    if not candidates:
        raise ValueError(f"no law covers this {spec.family} net by default (the family {spec.family!r} has no "
                         "registered law; amutheory.laws.register adds one, and measure needs none)")
    for law, coverage in candidates:
        if not coverage:
            not_covering.append({"law": law.name, "reason": coverage.reason})
            continue
        why_not = not_default_reason(law, spec)
        if why_not:
            not_default.append({"law": law.name, "reason": why_not})
            continue
        cost = law_cost(law, spec, depths, budget_s, **cost_args)
        if cost.seconds > budget_s and law.exactness != "calibrated":
            takes = budget_that_takes(law, spec, depths, budget_s, cost, **cost_args)
            skipped.append({"law": law.name, "estimate_s": round(cost.seconds, 1), "cost": cost.to_dict(),
                            "takes_budget_s": takes[0], "takes_draws": takes[1],
                            "reason": f"estimated {_duration(cost.seconds)} > budget {_duration(budget_s)}"
                                      + _takes_words(*takes)})
            continue
        outranked = [other.name for other, ok in candidates if ok and other.default_candidate
                     and not _not_default_here(other, spec) and _priority(
            other) < _priority(law) and EXACTNESS.index(other.exactness) < EXACTNESS.index(law.exactness)]
        return Choice(law, _reason(law, coverage, cost, skipped, budget_s, outranked), skipped, not_default,
                      not_covering, cost.draws)
    reasons = {}
    for d in not_covering + not_default + skipped:  # every law of the family is in one of the three
        reasons.setdefault(d["reason"], []).append(d["law"])
    why = "; ".join(f"{', '.join(laws)}: {reason}" for reason, laws in reasons.items())
    raise ValueError(f"no law covers this {spec.family} net by default ({why})")


def law_cost(law: Law, spec: ArchSpec, depths, budget_s: float | None = None, draws: int | None = None, **cost_args):
    """``law``'s :class:`~amutheory.laws.contract.Cost` for ``spec`` at ``depths``, with ``budget_s`` and ``draws``
    passed only to a ``cost`` whose signature takes them (an outside law's plain ``cost`` keeps working)."""
    from amutheory.laws.contract import accepted_options

    extra = accepted_options(law.cost, {k: v for k, v in (("budget_s", budget_s), ("draws", draws)) if v is not None})
    return call_law(law, "cost", spec, depths, **cost_args, **extra)


def budget_that_takes(law: Law, spec: ArchSpec, depths, budget_s: float, cost, **cost_args) -> tuple:
    """``(seconds, draws)``: the smallest budget (whole seconds) within which ``law``, over ``budget_s`` at ``cost``,
    would be taken, and the draws it would take there (``None`` for a law without draws).  A Monte Carlo law whose
    full draws are over a budget takes the most that fit, down to its floor (its ``cost`` with ``budget_s``), so
    the budget is found by bisection on whether the estimate at that budget fits it; other laws need their
    estimate."""
    if cost.draws is None:
        return math.ceil(cost.seconds), None

    def fits(b):
        return law_cost(law, spec, depths, float(b), **cost_args).seconds <= b

    lo, hi = math.floor(budget_s), math.ceil(cost.seconds)
    if not fits(hi):
        return hi, cost.draws
    while hi - lo > 1:                  # fits(hi) and not fits(lo): the estimate at a budget grows with it
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi, law_cost(law, spec, depths, float(hi), **cost_args).draws


def _takes_words(seconds: int, draws: int | None) -> str:
    return f" (a budget of {seconds} s takes it" + (f", at {draws} draws)" if draws else ")")


def not_default_reason(law: Law, spec: ArchSpec) -> str | None:
    """Why ``law``, which covers ``spec``, may not be ``predict``'s default for it (``None``: it may): not a default
    candidate at all (:attr:`~amutheory.laws.contract.Law.not_default_because`), or not for this net
    (:meth:`~amutheory.laws.contract.Law.not_default_for`)."""
    if not law.default_candidate:
        return law.not_default_because or "not a default candidate"
    return _not_default_here(law, spec)


def _not_default_here(law: Law, spec: ArchSpec) -> str | None:
    """:meth:`~amutheory.laws.contract.Law.not_default_for` (``None`` for a law without it)."""
    return call_law(law, "not_default_for", spec) if hasattr(law, "not_default_for") else None


def _priority(law: Law) -> float:
    return getattr(law, "priority", 0)


def _reason(law: Law, coverage, cost, skipped: list, budget_s: float, outranked: list = ()) -> str:
    """Why ``law``: the most exact (within the budget), or, where its priority decided, the first by
    priority (naming the more exact covering laws it ranks above)."""
    passed = [d["law"] for d in skipped]
    if _priority(law) or outranked:
        words = f"{law.name}: the first by priority (priority {_priority(law):g}) that covers this net"
        words += f"; more exact but of lower priority: {', '.join(outranked)}" if outranked else ""
    else:
        words = f"{law.name}: the most exact law that covers this net"
    if passed:
        words = words.replace(" that covers this net", f" within the {_duration(budget_s)} budget") + (
            f" ({', '.join(passed)} skipped for cost)")
    draws = f" at {cost.draws} draws" if cost.draws is not None else ""
    return f"{words} [{law.exactness}; {coverage.reason}; estimated {_duration(cost.seconds)}{draws}]"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
