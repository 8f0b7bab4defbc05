"""One vocabulary of law names: the registry's.  :func:`resolve_law` maps the older ways of asking
``predict`` for a law -- ``constants="calibrate" | "derive" | "mlp-limit"`` or a fitted
:class:`~amutheory.calibrate.Calibration`, and the older law names of :data:`amutheory.api.LAWS`
(``coherent``, ``effective-depth``, ``dense-shape``, ``selected``, ``limit-shape``) -- to the
registered law that answers them.  ``docs/laws_and_constants.md`` holds the same table.
"""

from __future__ import annotations

from amutheory.laws.contract import call_law
from amutheory.laws.registry import REGISTRY

#: ``predict(law=..., constants=...)``'s default: the best law (:func:`amutheory.laws.best_law`)
AUTO = "auto"
#: ``constants=`` strings besides a Calibration
CONSTANTS_CHOICES = ("auto", "calibrate", "derive", "mlp-limit")

#: ``(older law name, constants) -> registered laws`` tried in this order; the first of ``spec``'s family
#: that covers ``spec`` answers.  ``constants="auto"`` and a Calibration read as ``"calibrate"``;
#: ``law="auto"`` with a ``constants`` other than ``"auto"`` reads as ``"coherent"``.  A family added
#: later adds its laws to the rows its older names answer to.
OLD_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("coherent", "calibrate"): ("chain-coherent", "resnet-coherent", "transformer-coherent", "mlp-coherent"),
    ("coherent", "derive"): ("chain-finite-width", "chain-spectral", "chain-operator", "chain-kernel", "resnet-dense",
                             "resnet-modes", "resnet-points", "mlp-finite-width", "mlp-spectral", "mlp-kernel-finite",
                             "mlp-kernel"),
    ("coherent", "mlp-limit"): ("chain-mlp-limit",),
    ("effective-depth", "calibrate"): ("transformer-effective-depth",),
    ("dense-shape", "calibrate"): ("resnet-dense-shape",),
    ("selected", "calibrate"): ("resnet-selected",),
    ("limit-shape", "calibrate"): ("resnet-limit-shape",),
}


def resolve_law(family: str, law="auto", constants="auto", spec=None) -> str | None:
    """The registry name of the law that ``predict(spec, law=law, constants=constants)`` runs for a net
    of ``family`` (``spec``: the net, for the rows with several candidates), or ``None`` for the default
    (``law="auto"``, ``constants="auto"``: the best law, :func:`~amutheory.laws.best_law`).

    ======================  ===============================  =====================================================
    ``law``                 ``constants``                    registered law
    ======================  ===============================  =====================================================
    ``auto``                ``auto``                         ``None``: the best covering law within the budget
    a registered name       ``auto`` (anything else refused)  that law
    ``auto``/``coherent``   ``calibrate``/``auto``/Calibr.   ``chain-coherent`` | ``resnet-coherent`` |
                                                             ``transformer-coherent`` | ``mlp-coherent``
    ``auto``/``coherent``   ``derive``                       the exact law that covers the net: ``chain-spectral``,
                                                             ``chain-operator``, ``chain-kernel``; ``resnet-dense``,
                                                             ``resnet-modes``, ``resnet-points``; ``mlp-finite-width``, ``mlp-spectral``,
                                                             ``mlp-kernel-finite``, ``mlp-kernel``
    ``auto``/``coherent``   ``mlp-limit``                    ``chain-mlp-limit``
    ``effective-depth``     ``calibrate``/``auto``/Calibr.   ``transformer-effective-depth``
    ``dense-shape``         ``calibrate``/``auto``/Calibr.   ``resnet-dense-shape``
    ``selected``            ``calibrate``/``auto``           ``resnet-selected``
    ``limit-shape``         ``calibrate``/``auto``/Calibr.   ``resnet-limit-shape``
    ======================  ===============================  =====================================================

    A family outside the table (added later, or from outside the package) answers ``constants=
    "calibrate"`` / ``"derive"`` with its first calibrated / exact law that covers ``spec``.
    ``ValueError`` naming the argument for a combination the table does not hold (with each candidate's
    reason where none covers ``spec``); ``TypeError`` for a ``law`` that is not a string."""
    from amutheory.calibrate import Calibration

    if not isinstance(law, str):
        raise TypeError(f"law must be a string, got {type(law).__name__}")
    fitted = isinstance(constants, Calibration)
    if not fitted and not (isinstance(constants, str) and constants in CONSTANTS_CHOICES):
        raise ValueError(f"constants must be 'calibrate', 'derive', 'mlp-limit' or a Calibration, got {constants!r}")
    if law == AUTO and constants == AUTO:
        return None
    if law in REGISTRY:
        if fitted or constants != AUTO:
            raise ValueError(f"constants: law={law!r} sets its own constants; leave constants='auto'")
        return law
    old = "coherent" if law == AUTO else law
    kind = "calibrate" if fitted or constants == AUTO else constants
    rows = {key: [n for n in names if n in REGISTRY and REGISTRY[n].family == family]
            for key, names in OLD_NAMES.items()}
    olds = list(dict.fromkeys(o for (o, _), names in rows.items() if names))
    if old not in olds:
        if not olds and law == AUTO:  # a family added later, outside the older names: by exactness
            return _by_exactness(family, kind, spec)
        if not olds:
            raise ValueError(f"law: no law called {law!r}; registered: {', '.join(REGISTRY)}")
        raise ValueError(f"law: family {family!r} has the laws {', '.join(olds)} (or a registered name); got {law!r}")
    candidates = rows.get((old, kind)) or []
    if not candidates:
        kinds = [k for (o, k), names in rows.items() if o == old and names]
        raise ValueError(f"constants: law {old!r} of family {family!r} takes constants {', '.join(kinds)} (or a "
                         f"Calibration); got {constants!r}")
    if spec is None or len(candidates) == 1:
        return candidates[0]
    reasons: dict[str, list] = {}
    for name in candidates:
        coverage = call_law(REGISTRY[name], "covers", spec)
        if coverage:
            return name
        reasons.setdefault(coverage.reason, []).append(name)
    why = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in reasons.items())
    raise ValueError(f"constants={kind!r}: no law covers this net ({why})")


#: what an older ``constants`` asks of a family without older law names: the exactness of the law
CONSTANTS_EXACTNESS = {"calibrate": "calibrated", "derive": "exact"}


def _by_exactness(family: str, kind: str, spec=None) -> str:
    """``constants="calibrate"`` (or a Calibration) / ``"derive"`` for a family outside the table (one
    added later, or from outside the package): its first calibrated / exact law (priority, then registry
    order) that covers ``spec``.  ``ValueError`` naming the family's laws where it has none."""
    from amutheory.laws.registry import ranked

    laws = ranked(family)
    if kind not in CONSTANTS_EXACTNESS:
        raise ValueError(f"constants: {kind!r} (the chain's MLP-limit constants) is for the conv family; family "
                         f"{family!r} takes constants 'auto' (or 'calibrate', 'derive' for its calibrated or exact law)")
    wanted = CONSTANTS_EXACTNESS[kind]
    candidates = [law for law in laws if law.exactness == wanted]
    if not candidates:
        have = ", ".join(f"{law.name} ({law.exactness})" for law in laws) or "none registered"
        raise ValueError(f"constants={kind!r}: family {family!r} has no {wanted} law (its laws: {have}); leave "
                         "constants='auto' or name a law with law=")
    if spec is None:
        return candidates[0].name
    reasons = []
    for law in candidates:
        coverage = call_law(law, "covers", spec)
        if coverage:
            return law.name
        reasons.append(f"{law.name}: {coverage.reason}")
    raise ValueError(f"constants={kind!r}: no {wanted} law of family {family!r} covers this net ({'; '.join(reasons)})")
