"""amutheory: derive, predict and measure how the maximal-update learning rate scales with depth.

Public API (symbolic side imports no torch; measurement imports it lazily):

    from amutheory import ArchSpec, ProbeProtocol, derive, predict, measure, coord_check
"""

import sys
import types

from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.api import Measurement, Prediction, derive, measure, predict
from amutheory.coord import coord_check

__all__ = ["ArchSpec", "ProbeProtocol", "derive", "predict", "measure", "Measurement", "Prediction", "coord_check"]
__version__ = "0.1.0"

#: the API functions whose names are also sub-packages (``amutheory.measure`` holds the probe)
_FUNCTIONS = frozenset({"measure"})


class _Package(types.ModuleType):
    """``amutheory`` itself.  Importing a sub-package sets it as an attribute of its parent, so
    ``import amutheory.measure.probe`` would replace the function ``amutheory.measure`` by the
    package ``amutheory.measure`` -- and ``amutheory.measure(...)`` would fail after any prediction
    that measured.  This keeps the function; the package's modules import by their full names
    (``from amutheory.measure.probe import probe``)."""

    def __setattr__(self, name, value):
        if name in _FUNCTIONS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
