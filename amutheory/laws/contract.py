"""The contract every depth law keeps.

A :class:`Law` says

* **what it covers**: :meth:`Law.covers` returns a :class:`Coverage` (true, or false with the reason,
  one line naming the field that rules it out);
* **how exact it is**: :attr:`Law.exactness`, one of :data:`EXACTNESS` -- ``exact`` (closed form or
  exact finite sums at infinite width), ``monte-carlo`` (exact given the draws the theory makes itself;
  a standard error comes with the value), ``approximate`` (fitted to nothing, but resting on a stated
  assumption that is tested, not derived: :attr:`Law.leaves_out` names it), ``calibrated`` (constants
  fitted to probe measurements at other depths) -- and what it leaves out (:attr:`Law.leaves_out`);
* **what it costs** for a spec and depths: :meth:`Law.cost`, a :class:`Cost` with an estimate in
  seconds on one core and its cost class;
* **its values**: :meth:`Law.evaluate` returns one :class:`LawValues` -- ``s_bar`` at the depths, its
  standard error where the law is a Monte Carlo, the per-layer ``s_l`` where the law has them, and
  every constant it used as a :class:`~amutheory.constants.Constant` labelled with its source.

``eta* = sqrt(C / s_bar)`` follows from ``s_bar`` alone; :func:`amutheory.api.predict` calls the chosen
law's ``evaluate`` once and turns its values into a :class:`~amutheory.api.Prediction` (the typical
value, ``statistic="geo"``, is converted there, not in the laws).  The registry of every law, and the choice of the
best one for a spec, is :mod:`amutheory.laws.registry`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from amutheory.spec import ArchSpec, ProbeProtocol

#: how exact a law is, most exact first (the default prediction takes the first that covers a spec)
EXACTNESS = ("exact", "monte-carlo", "approximate", "calibrated")
#: what a cost estimate counts: closed-form expressions, finite sums over modes or positions, a
#: Monte Carlo over input draws, or real networks measured by the probe (the calibration nets)
COST_CLASSES = ("closed-form", "finite-sum", "monte-carlo", "probe")


@dataclass(frozen=True)
class Coverage:
    """Whether a law covers a spec; ``reason`` says why not (one line naming the field), or how it does."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Cost:
    """A law's cost for one spec and its depths: ``seconds`` (estimate on one core of a 2-core EPYC,
    from the law's cost model) and the ``cost_class`` (:data:`COST_CLASSES`); ``how`` says what the
    estimate counts."""

    seconds: float
    cost_class: str
    how: str = ""
    #: a Monte Carlo law's draws behind the estimate (``None``: the law's own count, or no draws): fewer than its
    #: full count where it took what the budget allows (:func:`amutheory.laws.costs.draws_within`)
    draws: int | None = None
    #: the law's own full count of draws (``None``: not a Monte Carlo law, or it does not say)
    full_draws: int | None = None

    def __post_init__(self):
        if self.cost_class not in COST_CLASSES:
            raise ValueError(f"cost_class must be one of {COST_CLASSES}, got {self.cost_class!r}")

    def to_dict(self) -> dict:
        d = {"seconds": float(self.seconds), "cost_class": self.cost_class, "how": self.how}
        if self.draws is not None:
            d["draws"] = int(self.draws)
        if self.full_draws is not None:
            d["full_draws"] = int(self.full_draws)
        return d


@dataclass
class LawValues:
    """One law's values at ``depths``: ``s_bar`` (mean over seeds of the layer-averaged one-step
    moment), ``s_bar_se`` (its standard error: Monte-Carlo draws, or the calibration's seed-bootstrap
    spread; zeros where exact), ``s_l`` (``{depth: per-layer s_l}`` where the law gives them, else
    ``None``), ``constants`` (every number used, labelled by source) and ``notes``."""

    law: str
    depths: list
    s_bar: np.ndarray
    s_bar_se: np.ndarray
    constants: dict
    exactness: str
    s_l: dict | None = None
    notes: list = field(default_factory=list)
    #: ``d ln eta*/d ln L`` of ``s_bar`` at the depths where the law gives it (``predict`` reads a secant
    #: through the depths asked where it is ``None``)
    local_slope: np.ndarray | None = None
    #: the name the prediction carries (e.g. the derived law's own name); the registry name when empty
    label: str = ""
    #: the law's own account of its seed spread, asked for with ``statistic="geo"``: ``ln(typical / mean)``
    #: at the depths and what it adds to the local slope.  ``None``: the spread is the lognormal line of
    #: the constants (``sigma2_0, kappa``), or, without one, ``predict`` calibrates that line
    log_gap: np.ndarray | None = None
    log_gap_slope: np.ndarray | None = None
    #: the :class:`~amutheory.calibrate.Calibration` a calibrated law fitted (``None`` elsewhere)
    calibration: object = None
    #: a law that picks between laws says which and why (e.g. ``resnet-selected``)
    selection: dict | None = None

    def eta_star(self, C: float = 1.0) -> np.ndarray:
        return np.sqrt(C / np.asarray(self.s_bar, float))

    def to_dict(self) -> dict:
        d = {"law": self.law, "exactness": self.exactness, "depths": list(self.depths),
             "s_bar": np.asarray(self.s_bar, float).tolist(), "s_bar_se": np.asarray(self.s_bar_se, float).tolist(),
             "constants": {k: c.to_dict() for k, c in self.constants.items()}, "notes": list(self.notes)}
        if self.s_l is not None:
            d["s_l"] = {str(k): np.asarray(v, float).tolist() for k, v in self.s_l.items()}
        return d


class Law:
    """Base of every law.  A subclass sets the class attributes and implements :meth:`_covers`,
    :meth:`cost` and :meth:`evaluate`; :meth:`covers` wraps ``_covers`` so that a ``ValueError``
    raised by the symbolic module's own spec check becomes the reason."""

    #: registry name (also a value of ``predict(law=...)`` and ``--law``)
    name: str = ""
    #: the name of the architecture family it is a law of (:func:`amutheory.families.get_family`)
    family: str = ""
    #: :data:`EXACTNESS`
    exactness: str = ""
    #: one line: what the law is
    summary: str = ""
    #: one line: what it leaves out (e.g. the O(1/n) finite-width terms)
    leaves_out: str = ""
    #: the module that derives it
    source: str = ""
    #: whether :func:`~amutheory.laws.registry.best_law` may choose it (False: only on request, with
    #: :attr:`not_default_because` saying why)
    default_candidate: bool = True
    not_default_because: str = ""
    #: the rank :func:`~amutheory.laws.registry.best_law` gives it before exactness: higher first (a
    #: finite number; every built-in law has 0, so an outside law with priority 1 that covers a net and
    #: fits the budget is its default, and the choice's reason says so)
    priority: float = 0

    def not_default_for(self, spec: ArchSpec) -> str | None:
        """Why this default candidate is not the default for ``spec`` although it covers it (``None``:
        it may be): a law whose planned check decided its default per case (e.g. per activation) says
        so here.  Only asked of laws with :attr:`default_candidate`."""
        return None

    def covers(self, spec: ArchSpec) -> Coverage:
        if not isinstance(spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
        if spec.family != self.family:
            return Coverage(False, f"family: the {self.name} law is for family {self.family}, got {spec.family!r}")
        try:
            return self._covers(spec)
        except ValueError as exc:
            return Coverage(False, str(exc))

    def _covers(self, spec: ArchSpec) -> Coverage:
        raise NotImplementedError

    def cost(self, spec: ArchSpec, depths) -> Cost:
        raise NotImplementedError

    def evaluate(self, spec: ArchSpec, depths, protocol: ProbeProtocol = ProbeProtocol(), calibration=None,
                 progress=None, **options) -> LawValues:
        """Values of the *mean* over seeds at ``depths``.  ``calibration``: a
        :class:`~amutheory.measure.measurement.Measurement` (or a fitted
        :class:`~amutheory.calibrate.Calibration`) for the calibrated laws (measured here at the
        calibration depths when ``None``); ignored by the others.  ``options`` (:data:`OPTIONS`) a law
        may take or ignore: ``predict`` passes a law only those its signature names (:func:`call_evaluate`),
        so the plain signature without them keeps working."""
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name, "family": self.family, "exactness": self.exactness, "summary": self.summary,
                "leaves_out": self.leaves_out, "source": self.source, "default_candidate": self.default_candidate,
                "not_default_because": self.not_default_because or None, "priority": self.priority}


class ProbeCalibratedLaw(Law):
    """A calibrated law whose cost is measuring its calibration nets with the probe."""

    exactness = "calibrated"

    def cost(self, spec: ArchSpec, depths, calibration_depths=(2, 3, 4, 6), calibration_seeds=32, **_) -> Cost:
        from amutheory.laws.costs import probe_seconds

        return Cost(probe_seconds(spec, calibration_depths, calibration_seeds), "probe",
                    f"{calibration_seeds} seeds at depths {list(calibration_depths)}")


#: the keyword options ``predict`` offers every law's :meth:`Law.evaluate` (each law takes those it uses):
#: ``statistic`` (``mean`` or ``geo``: a law with its own account of the seed spread fills
#: :attr:`LawValues.log_gap` for ``geo``; the conversion itself is ``predict``'s), ``C`` (the target),
#: ``calibration_depths`` and ``calibration_seeds`` (where a calibrated law measures its nets), ``draws`` (a Monte
#: Carlo law's draws: ``None`` for its own count; :attr:`Cost.draws` of the default's choice within the budget)
OPTIONS = ("statistic", "C", "calibration_depths", "calibration_seeds", "draws")


def accepted_options(evaluate, options: dict) -> dict:
    """The subset of ``options`` that the callable ``evaluate`` accepts by name (all of them where it
    takes ``**options``)."""
    params = inspect.signature(evaluate).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(options)
    return {k: v for k, v in options.items() if k in params}


def outside(law) -> bool:
    """Whether ``law`` was written outside the package (an entry point's or a ``--plugin`` file's law)."""
    module = type(law).__module__
    return not (module == "amutheory" or module.startswith("amutheory."))


def origin(law) -> str:
    """Where an outside law's class was written: its source file, else its module's name."""
    import sys

    module = type(law).__module__
    return getattr(sys.modules.get(module), "__file__", None) or module


#: what each method of the contract returns (checked on every law's answer by :func:`call_law`)
RETURNS = {"covers": Coverage, "cost": Cost, "evaluate": LawValues}


def call_law(law: Law, method: str, *args, **kwargs):
    """``law.<method>(*args, **kwargs)`` where the registry calls a law (``covers``, ``cost``, ``evaluate``).
    An outside law's failure other than ``ValueError`` (a bug in the plugin, not a refusal of the net)
    becomes one ``ValueError`` naming the law, its file and the method; an answer of the wrong type is a
    ``TypeError`` naming the law and the method."""
    try:
        out = getattr(law, method)(*args, **kwargs)
    except (ValueError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - a plugin's bug: one line naming the law and the method
        if not outside(law):
            raise
        raise ValueError(f"law {law.name} (plugin {origin(law)}): its {method} failed: {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:300]}") from None
    kind = RETURNS.get(method)
    if kind is not None and not isinstance(out, kind):
        raise TypeError(f"law {law.name}: {method} must return a {kind.__name__}, got {type(out).__name__}")
    return out


def call_evaluate(law: Law, spec: ArchSpec, depths, protocol: ProbeProtocol = ProbeProtocol(), calibration=None,
                  progress=None, **options) -> LawValues:
    """``law.evaluate`` with the options its signature accepts (:func:`call_law`: an outside law's
    failure, or an answer that is not a :class:`LawValues`, named in one line)."""
    return call_law(law, "evaluate", spec, depths, protocol=protocol, calibration=calibration, progress=progress,
                    **accepted_options(law.evaluate, options))
