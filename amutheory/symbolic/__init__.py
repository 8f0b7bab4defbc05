"""The symbolic side of amutheory (SymPy and NumPy only; no torch).

Layout, one sub-package per family over shared primitives::

    primitives/   symbols, expansion (the one-step moments), planar and operator_planar (pairings),
                  spread (seed spread), law (ScalingLaw), width (width rules)
    chain/        conv (closed form), spectral, operator_law, kernel_law, boundary
    resnet/       coherent, dense, preact, spectral, operator, init
    transformer/  coherent (coherent and effective-depth laws)
    family_theory each built-in family's theory, registered with amutheory.families on import

The modules' former flat names (``amutheory.symbolic.resnet_dense``, ``amutheory.symbolic.spectral``,
...) still import: :class:`_FormerNames` maps each to its new place, so code written against the
flat layout keeps working.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: former flat module name -> its place in the family layout
FORMER_NAMES = {
    "symbols": "primitives.symbols", "expansion": "primitives.expansion", "planar": "primitives.planar",
    "operator_planar": "primitives.operator_planar", "spread": "primitives.spread", "law": "primitives.law",
    "width": "primitives.width",
    "conv": "chain.conv", "boundary": "chain.boundary", "kernel_law": "chain.kernel_law",
    "operator_law": "chain.operator_law", "spectral": "chain.spectral",
    "resnet_dense": "resnet.dense", "resnet_init": "resnet.init", "resnet_operator": "resnet.operator",
    "resnet_preact": "resnet.preact", "resnet_spectral": "resnet.spectral",
}


class _FormerNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``amutheory.symbolic.<former name>`` as the module at its new place (the same object)."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, leaf = fullname.rpartition(".")
        if prefix == __name__ and leaf in FORMER_NAMES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(f"{__name__}.{FORMER_NAMES[spec.name.rpartition('.')[2]]}")
        spec.loader_state = module.__spec__  # the import system now sets the former name's spec on it
        return module

    def exec_module(self, module):  # already executed at its new place: give it back its own spec
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(f, _FormerNames) for f in sys.meta_path):
    sys.meta_path.append(_FormerNames())

# the built-in families' theory (derived laws, forward stability, branch multipliers), registered with
# amutheory.families: a family never imports this package, it finds what this module registers
from amutheory.symbolic import family_theory  # noqa: E402,F401
