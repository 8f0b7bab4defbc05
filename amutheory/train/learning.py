"""Does a net learn at all?  One threshold, shared by the sweep's report and the protocol's caveats.

A classifier that predicts the class frequencies of balanced data has cross-entropy ``ln(classes)``
(the *chance loss*).  A net whose training loss over the last tenth of the steps, at its best
rate, stays above :data:`DOES_NOT_LEARN` times the chance loss has not learned the task: its
``eta*_train`` is then the fastest rate a non-learning net tolerates, not the optimum of one that
learns, and a depth law read off it says little about training.
"""

from __future__ import annotations

import math

#: a net does not learn when its final training loss at the optimum is above this fraction of ln(classes)
DOES_NOT_LEARN = 0.5


def chance_loss(classes: int) -> float:
    """``ln(classes)``: the cross-entropy of predicting the class frequencies of balanced data."""
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 2:
        raise ValueError(f"classes must be an integer >= 2, got {classes!r}")
    return math.log(classes)


def learns(final_loss: float | None, classes: int) -> bool | None:
    """``final_loss <= DOES_NOT_LEARN * ln(classes)`` (``None`` where there is no finite loss)."""
    if final_loss is None or not math.isfinite(final_loss):
        return None
    return bool(final_loss <= DOES_NOT_LEARN * chance_loss(classes))


def row_learns(row: dict) -> bool | None:
    """:func:`learns` for a stored summary row (its ``final_loss_at_optimum`` against its own ``chance_loss``;
    ``None`` where there is no finite loss)."""
    final = row.get("final_loss_at_optimum")
    if final is None or not math.isfinite(final):
        return None
    return bool(final <= DOES_NOT_LEARN * row["chance_loss"])
