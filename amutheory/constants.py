"""Labelled constants: every number the theory uses says where it comes from.

``source`` is one of

* ``"exact"``       derived in closed form by SymPy (``expr`` holds the expression);
* ``"quadrature"``  deterministic numerical integration (``error`` is the quadrature's bound);
* ``"monte-carlo"`` an average over random draws the theory makes itself (e.g. the kernel law's
                    input average; ``error`` is its standard error, ``note`` the draws);
* ``"calibrated"``  fitted to measurements (``error`` is the standard error of the fit and
                    ``note`` names the data it was fitted on);
* ``"convention"``  a choice of the protocol (e.g. the target second moment ``C``).
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCES = ("exact", "quadrature", "calibrated", "convention", "monte-carlo")


@dataclass(frozen=True)
class Constant:
    """A named number with its provenance."""

    name: str
    value: float
    source: str
    error: float = 0.0
    expr: str | None = None
    note: str = ""

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {self.source!r}")

    def to_dict(self) -> dict:
        err = float(self.error)
        d = {"value": float(self.value), "source": self.source, "error": err if err == err else None}
        if self.expr is not None:
            d["expr"] = self.expr
        if self.note:
            d["note"] = self.note
        return d
