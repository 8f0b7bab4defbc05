"""amutheory: derive, predict and measure how the maximal-update learning rate scales with depth.

Public API (symbolic side imports no torch; measurement imports it lazily):

    from amutheory import ArchSpec, ProbeProtocol, derive, predict, measure, coord_check
    from amutheory import parametrize, param_groups   # your own nn.Module (imports torch when used)
    from amutheory import tune                         # eta*_train at new depths: a rule's prior, confirmed
"""

import sys
import types

from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.api import Measurement, Prediction, derive, measure, predict
from amutheory.coord import coord_check

__all__ = ["ArchSpec", "ProbeProtocol", "derive", "predict", "measure", "Measurement", "Prediction",
           "coord_check", "parametrize", "param_groups", "param_table", "find_residual_branches", "tune"]
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


#: names served by :func:`__getattr__` from the module that defines them (they import torch, so
#: ``import amutheory`` stays torch-free until one of them is used)
_LAZY = {"parametrize": "amutheory.parametrization", "param_groups": "amutheory.parametrization",
         "param_table": "amutheory.parametrization", "find_residual_branches": "amutheory.parametrization",
         "tune": "amutheory.tuning.pipeline"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


sys.modules[__name__].__class__ = _Package
