"""Campaign-wide conventions and JSON-safe numbers.

The statistics every config is analysed with (arithmetic and geometric mean over seeds), the level
of every interval, the learning-rate convention ``C`` of ``eta* = sqrt(C / s_bar)``, the bootstrap
size, and the helpers that turn numpy scalars and non-finite floats into plain JSON values.
"""

from __future__ import annotations

import math

import numpy as np

STATISTICS = ("mean", "geo")
LEVEL = 0.95
C_TARGET = 1.0
N_BOOT = 2000


def _f(x):
    """A JSON-safe float (None for NaN/inf)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _json_safe(obj):
    """``obj`` with every non-finite float replaced by None and numpy scalars made plain."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _f(obj)
    return obj
