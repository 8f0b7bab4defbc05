"""The argument checks the API shares (they live in :mod:`amutheory.checks`, below the laws)."""

from amutheory.checks import (DEFAULT_CALIBRATION_DEPTHS, MIN_CALIBRATION_DEPTHS, _check_C, _check_spec,
                              check_calibration_depths, check_depths)

__all__ = ["DEFAULT_CALIBRATION_DEPTHS", "MIN_CALIBRATION_DEPTHS", "_check_C", "_check_spec",
           "check_calibration_depths", "check_depths"]
