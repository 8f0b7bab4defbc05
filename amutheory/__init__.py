"""amutheory: derive, predict and measure how the maximal-update learning rate scales with depth.

Public API (``import amutheory`` itself loads nothing heavy: each name below is imported from the
module that defines it on first use, so the symbolic side never imports torch and a command that
only parses its flags never imports SymPy or SciPy):

    from amutheory import ArchSpec, ProbeProtocol, derive, predict, measure, coord_check
    from amutheory import size_biased_probe            # E[s_bar] at narrow width with a lighter tail (linear or
                                                       # ReLU chains and MLPs; imports torch when used)
    from amutheory import parametrize, param_groups   # your own nn.Module (imports torch when used)
    from amutheory import tune                         # eta*_train at new depths: a rule's prior, confirmed
                                                       # (method='fidelity' default, or 'bracket')
    amutheory.optim.SGD(model, lr, base_model=...)     # torch.optim over param_groups (imports torch when used)
"""

import importlib
import sys
import types

#: every public name, served by :func:`__getattr__` from the module that defines it
_LAZY = {
    "ArchSpec": "amutheory.spec", "ProbeProtocol": "amutheory.spec",
    "derive": "amutheory.api.derivation", "predict": "amutheory.api.selection",
    "measure": "amutheory.api.measurement", "Measurement": "amutheory.api.measurement",
    "Prediction": "amutheory.api.prediction", "coord_check": "amutheory.coord.check",
    "parametrize": "amutheory.parametrization", "param_groups": "amutheory.parametrization",
    "param_table": "amutheory.parametrization", "find_residual_branches": "amutheory.parametrization",
    "tune": "amutheory.tuning.pipeline", "size_biased_probe": "amutheory.measure.size_biased",
}
#: sub-modules served the same way (``amutheory.optim`` imports torch only when first used)
_SUBMODULES = frozenset({"optim"})
__all__ = list(_LAZY) + sorted(_SUBMODULES)
__version__ = "0.1.0"

#: the API functions whose names are also sub-packages (``amutheory.measure`` holds the probe)
_FUNCTIONS = frozenset({"measure"})


class _Package(types.ModuleType):
    """``amutheory`` itself.  Importing a sub-package sets it as an attribute of its parent, so
    ``import amutheory.measure.probe`` would replace the function ``amutheory.measure`` by the
    package ``amutheory.measure`` -- and ``amutheory.measure(...)`` would fail after any prediction
    that measured.  This keeps the function (served by :func:`__getattr__`); the package's modules import by their full names (``from amutheory.measure.probe
    import probe``)."""

    def __setattr__(self, name, value):
        if name in _FUNCTIONS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        if name in _FUNCTIONS:  # cache it: the sub-package of the same name never replaces it
            types.ModuleType.__setattr__(sys.modules[__name__], name, value)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


sys.modules[__name__].__class__ = _Package
