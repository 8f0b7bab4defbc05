"""Every depth law behind one contract (:mod:`amutheory.laws.contract`) and one registry
(:mod:`amutheory.laws.registry`): what each covers, how exact it is, what it costs, its values.

    from amutheory.laws import REGISTRY, best_law
    best_law(spec, [4, 8, 16]).law.name      # e.g. 'chain-spectral'
"""

from amutheory.laws.contract import EXACTNESS, OPTIONS, Coverage, Cost, Law, LawValues, call_evaluate
from amutheory.laws.registry import (DEFAULT_BUDGET_S, REGISTRY, Choice, best_law, covering, get_law, laws_of,
                                     not_default_reason, register)
from amutheory.laws.resolve import OLD_NAMES, resolve_law

# what the laws implement for every family, registered with amutheory.families (a family never imports
# the laws: Family.laws() and the am-mup rule's chain factor find these)
from amutheory.families import provide as _provide
from amutheory.laws.chain_values import chain_depth_factor as _chain_depth_factor

_provide("laws", laws_of)
_provide("chain_depth_factor", _chain_depth_factor)

__all__ = ["EXACTNESS", "OPTIONS", "Coverage", "Cost", "Law", "LawValues", "DEFAULT_BUDGET_S", "REGISTRY", "Choice",
           "best_law", "call_evaluate", "covering", "get_law", "laws_of", "not_default_reason", "register", "resolve_law", "OLD_NAMES"]
