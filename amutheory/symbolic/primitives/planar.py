"""Normalised traces of words in independent Gaussian matrices at infinite width: planar pairings.

A letter is ``(name, mode, star)``: the matrix ``name`` (a layer's weights), at a Fourier ``mode``
(``0`` or ``"q"``; ``None`` for a 1x1 layer, which has no modes), transposed (adjoint) when
``star``.  At infinite width the normalised trace ``tau`` of a word is the sum over its
*non-crossing* pairings (on the cycle of the trace) of the product of the pairs' covariances,
where a pair joins a letter with a starred letter of the same name (``W`` with ``W^T``: a pairing
of ``W`` with ``W`` is of lower order in the width).  The covariance of a pair is the layer's gain
``s`` times ``rho`` when the two letters sit at different modes (``tau(W(0)^T W(q)) = rho s``:
the taps' Dirichlet kernel over their number) and ``s`` otherwise.

Operators are linear combinations of words, ``{word: coefficient}``, with products by
concatenation; :func:`tau` is linear.  This is what :mod:`amutheory.symbolic.resnet.spectral`
builds its block recursion from: every moment there is one call here, none typed by hand.
"""

from __future__ import annotations

import functools

import sympy as sp

Letter = tuple  # (name, mode, star)


def letter(name: str, mode=None, star: bool = False) -> dict:
    """The operator that is one letter."""
    return {((name, mode, bool(star)),): sp.Integer(1)}


def scalar(value) -> dict:
    """``value`` times the identity (the empty word)."""
    return {(): sp.sympify(value)}


def add(*ops: dict) -> dict:
    out: dict = {}
    for op in ops:
        for word, coef in op.items():
            out[word] = out.get(word, 0) + coef
    return {w: c for w, c in out.items() if c != 0}


def scale(op: dict, value) -> dict:
    return {w: c * value for w, c in op.items()}


def mul(*ops: dict) -> dict:
    """The product, left to right."""
    out = scalar(1)
    for op in ops:
        nxt: dict = {}
        for w1, c1 in out.items():
            for w2, c2 in op.items():
                nxt[w1 + w2] = nxt.get(w1 + w2, 0) + c1 * c2
        out = nxt
    return out


def adjoint(op: dict) -> dict:
    """The transpose / adjoint: every word reversed, every letter's star toggled (coefficients
    are real here)."""
    return {tuple((n, m, not s) for n, m, s in reversed(w)): c for w, c in op.items()}


@functools.lru_cache(maxsize=None)
def _word_tau(word: tuple, gains: tuple, rho) -> sp.Expr:
    gain = dict(gains)

    def pair(a, b):
        (na, ma, sa), (nb, mb, sb) = a, b
        if na != nb or sa == sb:
            return None
        return gain[na] * (1 if ma is None or mb is None or ma == mb else rho)

    @functools.lru_cache(maxsize=None)
    def matchings(lo: int, hi: int) -> sp.Expr:
        """Sum over non-crossing pairings of ``word[lo:hi]``: the first letter pairs with a letter
        ``j`` that leaves an even stretch inside; inside and outside are matched on their own."""
        if lo >= hi:
            return sp.Integer(1)
        total = sp.Integer(0)
        for j in range(lo + 1, hi, 2):
            w = pair(word[lo], word[j])
            if w is not None:
                total += w * matchings(lo + 1, j) * matchings(j + 1, hi)
        return total

    return sp.expand(matchings(0, len(word))) if len(word) % 2 == 0 else sp.Integer(0)


def tau(op: dict, gains: dict, rho) -> sp.Expr:
    """``tau(op)`` at infinite width: ``gains`` maps each name to its layer gain ``s``; ``rho`` is the
    covariance factor of two letters at different modes."""
    key = tuple(sorted(gains.items(), key=lambda kv: kv[0]))
    return sp.expand(sum((c * _word_tau(w, key, rho) for w, c in op.items()), sp.Integer(0)))
