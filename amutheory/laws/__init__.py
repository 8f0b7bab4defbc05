"""Every depth law behind one contract (:mod:`amutheory.laws.contract`) and one registry
(:mod:`amutheory.laws.registry`): what each covers, how exact it is, what it costs, its values.

    from amutheory.laws import REGISTRY, best_law
    best_law(spec, [4, 8, 16]).law.name      # e.g. 'chain-spectral'
"""

from amutheory.laws.contract import EXACTNESS, OPTIONS, Coverage, Cost, Law, LawValues, call_evaluate
from amutheory.laws.registry import (DEFAULT_BUDGET_S, REGISTRY, Choice, best_law, covering, get_law, laws_of,
                                     register)
from amutheory.laws.resolve import OLD_NAMES, resolve_law

__all__ = ["EXACTNESS", "OPTIONS", "Coverage", "Cost", "Law", "LawValues", "DEFAULT_BUDGET_S", "REGISTRY", "Choice",
           "best_law", "call_evaluate", "covering", "get_law", "laws_of", "register", "resolve_law", "OLD_NAMES"]
