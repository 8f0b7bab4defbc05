"""The contract every depth law keeps.

A :class:`Law` says

* **what it covers**: :meth:`Law.covers` returns a :class:`Coverage` (true, or false with the reason,
  one line naming the field that rules it out);
* **how exact it is**: :attr:`Law.exactness`, one of :data:`EXACTNESS` -- ``exact`` (closed form or
  exact finite sums at infinite width), ``monte-carlo`` (exact given the draws the theory makes itself;
  a standard error comes with the value), ``calibrated`` (constants fitted to probe measurements at
  other depths) -- and what it leaves out (:attr:`Law.leaves_out`);
* **what it costs** for a spec and depths: :meth:`Law.cost`, a :class:`Cost` with an estimate in
  seconds on one core and its cost class;
* **its values**: :meth:`Law.evaluate` returns one :class:`LawValues` -- ``s_bar`` at the depths, its
  standard error where the law is a Monte Carlo, the per-layer ``s_l`` where the law has them, and
  every constant it used as a :class:`~amutheory.constants.Constant` labelled with its source.

``eta* = sqrt(C / s_bar)`` follows from ``s_bar`` alone; :func:`amutheory.api.predict` turns a law's
values into a :class:`~amutheory.api.Prediction`.  The registry of every law, and the choice of the
best one for a spec, is :mod:`amutheory.laws.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from amutheory.spec import ArchSpec, ProbeProtocol

#: how exact a law is, most exact first (the default prediction takes the first that covers a spec)
EXACTNESS = ("exact", "monte-carlo", "calibrated")
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

    def __post_init__(self):
        if self.cost_class not in COST_CLASSES:
            raise ValueError(f"cost_class must be one of {COST_CLASSES}, got {self.cost_class!r}")

    def to_dict(self) -> dict:
        return {"seconds": float(self.seconds), "cost_class": self.cost_class, "how": self.how}


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
    #: the architecture family it is a law of: conv, resnet or transformer
    family: str = ""
    #: :data:`EXACTNESS`
    exactness: str = ""
    #: one line: what the law is
    summary: str = ""
    #: one line: what it leaves out (e.g. the O(1/n) finite-width terms)
    leaves_out: str = ""
    #: the module that derives it
    source: str = ""
    #: ``(constants, law)`` of the older ``predict`` arguments that select this law
    legacy: tuple = ()
    #: whether :func:`~amutheory.laws.registry.best_law` may choose it (False: only on request, with
    #: :attr:`not_default_because` saying why)
    default_candidate: bool = True
    not_default_because: str = ""

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
                 progress=None) -> LawValues:
        """Values at ``depths``.  ``calibration``: a :class:`~amutheory.api.Measurement` for the
        calibrated laws (measured here at the default calibration depths when ``None``); ignored by
        the others."""
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name, "family": self.family, "exactness": self.exactness, "summary": self.summary,
                "leaves_out": self.leaves_out, "source": self.source, "default_candidate": self.default_candidate,
                "not_default_because": self.not_default_because or None}


class PredictedLaw(Law):
    """A law whose values the prediction machinery of :mod:`amutheory.api` computes: :meth:`evaluate`
    runs it with :attr:`legacy` ``(constants, law)`` and reads a :class:`LawValues` off the prediction;
    :meth:`layer_moments` (per-layer ``s_l`` at one depth) where the law has them."""

    def evaluate(self, spec: ArchSpec, depths, protocol: ProbeProtocol = ProbeProtocol(), calibration=None,
                 progress=None) -> LawValues:
        from amutheory.api.selection import predict_with

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        constants, law = self.legacy
        pred = predict_with(spec, depths, constants, law, protocol=protocol, calibration_measurement=calibration,
                            progress=progress)
        return self.values_of(pred, spec, protocol.input_var)

    def values_of(self, pred, spec: ArchSpec, input_var: float) -> LawValues:
        """The :class:`LawValues` of a :class:`~amutheory.api.Prediction` made by this law."""
        s_bar = np.asarray(pred.s_bar, float)
        s_l = {d: self.layer_moments(spec.with_(depth=d), pred.constants, input_var) for d in pred.depths}
        return LawValues(self.name, list(pred.depths), s_bar, self.standard_error(pred, s_bar),
                         dict(pred.constants), self.exactness, None if any(v is None for v in s_l.values()) else s_l,
                         list(pred.notes))

    def standard_error(self, pred, s_bar: np.ndarray) -> np.ndarray:
        """Zero for an exact law; a calibrated law's seed-bootstrap spread of its prediction (its
        ``s_bar_log_sd`` times ``s_bar``); a Monte Carlo law overrides this."""
        if pred.s_bar_log_sd is not None:
            return s_bar * np.asarray(pred.s_bar_log_sd, float)
        return np.zeros_like(s_bar)

    def layer_moments(self, spec: ArchSpec, constants: dict, input_var: float):
        """Per-layer ``s_l`` of ``spec`` at its depth, or ``None`` where the law has no per-layer form."""
        return None


class ProbeCalibratedLaw(PredictedLaw):
    """A calibrated law whose cost is measuring its calibration nets with the probe."""

    exactness = "calibrated"

    def cost(self, spec: ArchSpec, depths, calibration_depths=(2, 3, 4, 6), calibration_seeds=32, **_) -> Cost:
        from amutheory.laws.costs import probe_seconds

        return Cost(probe_seconds(spec, calibration_depths, calibration_seeds), "probe",
                    f"{calibration_seeds} seeds at depths {list(calibration_depths)}")
