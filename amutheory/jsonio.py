"""Plain JSON values from numbers: numpy scalars made plain, non-finite floats ``None``.

Every ``summary.json`` the toolkit writes goes through :func:`json_safe`, so a file never holds
``NaN`` or ``Infinity`` (which strict JSON readers refuse).
"""

from __future__ import annotations

import math

import numpy as np


def finite(x):
    """A JSON-safe float (``None`` for NaN/inf)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def json_safe(obj):
    """``obj`` with every non-finite float replaced by None and numpy scalars and arrays made plain."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return finite(obj)
    return obj
