"""Init conventions of residual branches, as formulas in the number of blocks ``K``.

A branch is a list of weight layers (``conv``: ``[W]``; ``conv-mlp``: ``[W1, W2]``; ``preact``:
``[W1, W2]``).  Layer ``i`` is drawn with ``Var[W_i] = c * v_i(K) / fan_in`` (``c`` the
activation's critical He constant) and the branch output is multiplied by ``alpha(K)``:

==================  ============================================  ================
convention           ``v_i(K)``                                    ``alpha(K)``
==================  ============================================  ================
``k-last``           ``1/K`` on the last branch layer, 1 else      1
``k-all``            ``1/K`` on every branch layer                 1
``k-squared``        ``1/K^2`` on the last branch layer, 1 else    1
``sqrt-multiplier``  1                                             ``1/sqrt(K)``
``none``             1                                             1
==================  ============================================  ================

``k-last`` is the AM-muP paper's residual-aware init ``Var = c/(K fan_in)``; ``k-squared`` is
what one of the authors' scripts does (weight std divided by K); ``sqrt-multiplier`` is the
Depth-muP parametrisation.  The torch models (:mod:`amutheory.measure.resnet`) evaluate these
SymPy expressions; the derivation (:mod:`amutheory.symbolic.resnet.coherent`) uses them symbolically.
"""

from __future__ import annotations

import sympy as sp

K = sp.Symbol("K", positive=True, integer=True)

#: number of weight layers of each branch type
BRANCH_LAYERS = {"conv": 1, "conv-mlp": 2, "preact": 2}


def layer_variance_factors(init: str, branch: str) -> list[sp.Expr]:
    """``[v_1(K), ..., v_last(K)]`` of ``init`` for a ``branch`` (see the module table)."""
    from amutheory.spec import BRANCHES, INITS

    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {', '.join(BRANCHES)}; got {branch!r}")
    n = BRANCH_LAYERS[branch]
    ones = [sp.Integer(1)] * n
    if init == "k-last":
        return ones[:-1] + [1 / K]
    if init == "k-all":
        return [1 / K] * n
    if init == "k-squared":
        return ones[:-1] + [1 / K**2]
    return ones


def branch_multiplier(init: str) -> sp.Expr:
    """``alpha(K)``: ``1/sqrt(K)`` for ``sqrt-multiplier``, 1 otherwise."""
    from amutheory.spec import INITS

    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {init!r}")
    return 1 / sp.sqrt(K) if init == "sqrt-multiplier" else sp.Integer(1)


def numeric(expr: sp.Expr, blocks: int) -> float:
    """``expr`` at ``K = blocks``."""
    return float(expr.subs(K, blocks))
