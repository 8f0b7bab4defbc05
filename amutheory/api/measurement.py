"""``measure`` and :class:`Measurement` (they live in :mod:`amutheory.measure.measurement`, below the laws,
which measure their calibration nets with it)."""

from amutheory.measure.measurement import Measurement, _check_seeds, measure

__all__ = ["Measurement", "measure", "_check_seeds"]
