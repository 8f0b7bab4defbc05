"""The path-sum identity of a chain of residual blocks, derived in SymPy.

A stack of ``n`` residual blocks, each either skipped or traversed with one layer, has
``C(n, k)`` paths with ``k`` layers.  The cubed path sum that enters the depth law is

    ``sum_k C(n, k) k^3 = 2^(n-3) n^2 (n + 3)``.

Derivation: ``G(x) = sum_k C(n, k) x^k = (1 + x)^n``; applying ``(x d/dx)`` three times turns
``x^k`` into ``k^3 x^k``; evaluate at ``x = 1``.

The authors' script (docs/theory.md section 2) used
``n (n + 1) (n + 2) 2^(n-3)`` instead.  That is wrong: written as ``2^(n-3)`` times a cubic, the
correct one is ``n^3 + 3 n^2`` and theirs ``n^3 + 3 n^2 + 2 n``; they agree in the two leading
orders (so the asymptotic exponent is unaffected) but theirs is too large by exactly
``n 2^(n-2)`` for every ``n >= 1`` (relative error ``2 / (n (n + 3))``: 50% at n = 1, 20% at
n = 2, 11% at n = 3).  Both vanish at ``n = 0``.  Their polynomial is the *rising* factorial
``n^(3, rising)``; the falling-factorial moment is ``sum_k C(n,k) k (k-1) (k-2) = n (n-1) (n-2) 2^(n-3)``,
and ``k^3 = k(k-1)(k-2) + 3 k(k-1) + k`` is what gives the right answer.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import sympy as sp

n = sp.Symbol("n", integer=True, nonnegative=True)
k = sp.Symbol("k", integer=True, nonnegative=True)
x = sp.Symbol("x", positive=True)


def derive_path_sum(power: int = 3) -> sp.Expr:
    """``sum_k C(n, k) k^power`` from the generating function ``(1 + x)^n``, factored."""
    G = (1 + x) ** n
    for _ in range(power):
        G = sp.expand(x * sp.diff(G, x))
    return sp.factor(sp.simplify(sp.powsimp(G.subs(x, 1), force=True)))


def path_sum_closed_form() -> sp.Expr:
    """``2^(n-3) n^2 (n + 3)`` (checked against :func:`derive_path_sum`)."""
    return 2 ** (n - 3) * n ** 2 * (n + 3)


def authors_closed_form() -> sp.Expr:
    """The authors' (wrong) ``n (n + 1) (n + 2) 2^(n-3)``."""
    return n * (n + 1) * (n + 2) * 2 ** (n - 3)


def authors_error() -> sp.Expr:
    """``authors - correct`` simplified: ``n 2^(n-2)``."""
    return sp.simplify(sp.powsimp(sp.expand(authors_closed_form() - path_sum_closed_form()), force=True))


def path_sum_brute_force(n_blocks: int, power: int = 3) -> int:
    """Enumerate the ``2^n`` subsets of traversed blocks: ``sum |S|^power``."""
    return sum(len(s) ** power for r in range(n_blocks + 1) for s in combinations(range(n_blocks), r))


def path_sum_binomial(n_blocks: int, power: int = 3) -> int:
    """``sum_k C(n, k) k^power`` term by term."""
    return sum(comb(n_blocks, j) * j ** power for j in range(n_blocks + 1))


def evaluate(expr: sp.Expr, n_blocks: int) -> sp.Rational:
    """Exact value of a closed form at ``n = n_blocks`` (a Rational: ``2^(n-3)`` at n < 3)."""
    return sp.nsimplify(expr.subs(n, n_blocks))
