"""Argument checks shared by the laws and the API's operations: one ``ValueError``/``TypeError`` naming the argument."""

from __future__ import annotations

import math
import numbers

from amutheory.spec import ArchSpec

DEFAULT_CALIBRATION_DEPTHS = (2, 3, 4, 6)


def _check_spec(spec):
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")


def check_depths(depths) -> list[int]:
    """``depths`` as a sorted list of distinct positive integers (ValueError otherwise)."""
    if isinstance(depths, (str, bytes)) or not hasattr(depths, "__iter__"):
        raise TypeError(f"depths must be a list of integers, got {depths!r}")
    out = []
    for d in depths:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"depths must be integers, got {d!r}")
        if d < 1:
            raise ValueError(f"depths must be >= 1, got {d}")
        out.append(int(d))
    if not out:
        raise ValueError("depths must not be empty")
    if len(set(out)) != len(out):
        raise ValueError(f"depths must be distinct, got {out}")
    return sorted(out)


#: calibration depths a calibrated law needs: one per constant it fits (a, b, e; the depth-mean
#: target of :func:`amutheory.calibrate.calibrate` counts depths, not layers)
MIN_CALIBRATION_DEPTHS = 3


def check_calibration_depths(depths, name: str = "calibration_depths") -> list[int]:
    """``depths`` (:func:`check_depths`, each within the depth bound) with at least
    :data:`MIN_CALIBRATION_DEPTHS` of them: what ``predict`` and ``laws`` both refuse up front,
    before a probe is measured."""
    from amutheory.spec import check_depth_list

    check_depth_list(name, depths)
    try:
        out = check_depths(depths)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    if len(out) < MIN_CALIBRATION_DEPTHS:
        raise ValueError(f"{name} must give at least {MIN_CALIBRATION_DEPTHS} distinct depths (one per fitted "
                         f"constant a, b, e), got {out}")
    return out


def _check_C(C):
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not math.isfinite(C) or C <= 0:
        raise ValueError(f"C must be a positive number, got {C!r}")
    return float(C)
