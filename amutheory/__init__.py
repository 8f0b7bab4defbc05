"""amutheory: derive, predict and measure how the maximal-update learning rate scales with depth.

Public API (symbolic side imports no torch; measurement imports it lazily):

    from amutheory import ArchSpec, ProbeProtocol, derive, predict, measure
"""

from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.api import Measurement, Prediction, derive, measure, predict

__all__ = ["ArchSpec", "ProbeProtocol", "derive", "predict", "measure", "Measurement", "Prediction"]
__version__ = "0.1.0"
