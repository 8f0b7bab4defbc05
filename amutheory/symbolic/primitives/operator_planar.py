"""Planar pairings with position operators: expectations over the channels, valued in kernels.

:mod:`amutheory.symbolic.primitives.planar` counts normalised traces of words in Gaussian matrices when every
operator is diagonal in the Fourier modes (circular padding), so that each mode is a scalar
problem.  A zero-padded conv is not diagonal in any basis the layers share, so the positions have
to be carried as matrices: a conv layer acts on a field over ``P`` points (sample, position) with
``n`` channels as ``W = sum_t S_t (x) W_t``, ``S_t`` the padded shift by tap ``t`` and ``W_t`` the
tap's ``n x n`` Gaussian matrix (entries of variance ``s / (n k^d)``, ``s`` the layer's gain).

**The rule.**  Averaging over the channels maps a word to a ``P x P`` kernel (the channel-normalised
partial trace, ``E_n``).  At infinite width this is the sum over *non-crossing* pairings of its
letters (``W`` with ``W^T``; ``W`` with ``W`` is of lower order), exactly as for scalars, except that
a pair no longer contributes a number: it maps what it encloses, ``E_n[W X W^T] = s T(X)`` and
``E_n[W^T X W] = s T*(X)``, with ``T(X) = k^-d sum_t S_t X S_t^T`` the map of the chain laws
(:mod:`amutheory.symbolic.chain.operator_law`; a 1x1 layer's ``T`` is the identity).  This is
operator-valued free probability over the kernels: a conv layer is a circular element with
covariance map ``s T``.

**Free blocks.**  A word may also hold an operator ``M`` built from *other* layers (free of these over
the kernels), through its mean ``m = E_n[M]`` and its second moment ``Phi(X) = E_n[M^T X M]``.  A pair
that encloses one of ``M^T, M`` but not the other separates them, and then only their means enter
(their joint cumulant would cross the pair); with no letter between them they give ``Phi`` of what
lies between.  Atoms (named kernels, ``(x) I_n``) are deterministic.

Operators are :mod:`amutheory.symbolic.primitives.planar`'s ``{word: coefficient}`` dictionaries, with the
letter's second field saying what the letter is: ``"conv"`` (a k-tap layer), ``"1x1"``, ``"atom"``
(a named kernel) or ``"M"``.  :func:`expectation` returns the sum over pairings as SymPy
coefficients (products of the gains and the operator's own coefficients) of expression trees, which
:func:`evaluate` computes on numpy kernels.  At ``P = 1`` every map is the identity and the rule is
:mod:`amutheory.symbolic.primitives.planar`'s (tested).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.symbolic.primitives import planar as P
LAYER_KINDS = ("conv", "1x1")


def layer(name: str, kind: str, star: bool = False) -> dict:
    """A Gaussian layer ``name`` (``kind`` ``"conv"``: k taps, ``"1x1"``: one) as an operator."""
    if kind not in LAYER_KINDS:
        raise ValueError(f"kind must be one of {', '.join(LAYER_KINDS)}, got {kind!r}")
    return P.letter(name, kind, star)


def atom(name: str) -> dict:
    """A named deterministic kernel (symmetric: its transpose is itself)."""
    return P.letter(name, "atom", False)


def mask(name: str) -> dict:
    """An activation-derivative mask ``D = phi'(h)``: diagonal in the points and the channels, its
    channels independent draws of the points' joint law (the gradient-independence assumption of
    infinite-width analyses: free of the weights beside it).  Masks never pair; those left in one
    channel loop average to a multi-point function of ``h`` (:class:`Kernels`' ``masks``)."""
    return P.letter(name, "mask", False)


def free(star: bool = False) -> dict:
    """The free operator ``M`` (``star``: ``M^T``)."""
    return P.letter("M", "M", star)


def adjoint(op: dict) -> dict:
    """The transpose, atoms and masks being symmetric."""
    return {tuple((n, k, s and k not in ("atom", "mask")) for n, k, s in w): c for w, c in P.adjoint(op).items()}


def _is_layer(item) -> bool:
    return item[1] in LAYER_KINDS


def _close(word: tuple):
    """The expression of a word with no layer letters left: a product of factors, ``M^T ... M`` with
    only kernels between them becoming ``Phi`` of that product."""
    free_at = [i for i, it in enumerate(word) if it[1] == "M"]
    if len(free_at) == 2:
        i, j = free_at
        if not word[i][2] or word[j][2]:
            raise ValueError("a word's free pair must read M^T ... M")
        inner = ("prod", tuple(_factor(it) for it in word[i + 1:j]))
        return ("prod", tuple(_factor(it) for it in word[:i]) + (("phi", inner),)
                + tuple(_factor(it) for it in word[j + 1:]))
    return ("prod", tuple(_factor(it) for it in word))


def _factor(item):
    name, kind, star = item[:3]
    if kind == "atom":
        return ("atom", name)
    if kind == "mask":
        return ("mask", name)
    if kind in ("M", "mean"):
        return ("mean", bool(star))
    if kind == "pair":
        return item[3]
    raise ValueError(f"unexpected item {item!r}")


@functools.lru_cache(maxsize=None)
def _expect_word(word: tuple) -> tuple:
    """``((coefficient, expression), ...)``: the non-crossing pairings of ``word``'s layer letters."""
    letters = [i for i, it in enumerate(word) if _is_layer(it)]
    if not letters:
        return ((sp.Integer(1), _close(word)),)
    i = letters[0]
    name, kind, star = word[i]
    out = []
    for j in letters[1:]:
        if word[j][0] != name or word[j][2] == star:
            continue
        before, inner, after = word[:i], word[i + 1:j], word[j + 1:]
        inside = [it for it in inner if it[1] == "M"]
        outside = [it for it in before + after if it[1] == "M"]
        if inside and outside:  # the pair separates M^T from M: only their means enter
            mean = lambda w: tuple((n, "mean", s) if k == "M" else (n, k, s, *rest) for n, k, s, *rest in w)
            before, inner, after = mean(before), mean(inner), mean(after)
        gain = sp.Symbol(f"s_{name}", positive=True)
        for c_in, e_in in _expect_word(inner):
            pair = (name, "pair", star, ("pair", kind, bool(star), e_in))
            for c_out, e_out in _expect_word(before + (pair,) + after):
                out.append((gain * c_in * c_out, e_out))
    return tuple(out)


def expectation(op: dict) -> dict:
    """``E_n[op]`` at infinite width: ``{expression: coefficient}``, the coefficients in the operator's
    own symbols and the gains ``s_<name>`` of its layers (identical expressions merged)."""
    out: dict = {}
    for word, coef in op.items():
        for c, e in _expect_word(tuple(word)):
            out[e] = sp.expand(out.get(e, 0) + coef * c)
    return {e: c for e, c in out.items() if c != 0}


def gain(name: str) -> sp.Symbol:
    """The gain symbol a pair of layer ``name`` contributes."""
    return sp.Symbol(f"s_{name}", positive=True)


def format_expression(expr) -> str:
    """An expression tree of :func:`expectation` in the notation of the docs: ``T(.)``, ``T*(.)``
    (a k-tap pair), ``Phi(.)``, ``m``, ``m^T``, the atoms' names, ``I`` for the empty product (a
    1x1 pair is the identity map and shows its inside alone)."""
    tag = expr[0]
    if tag == "prod":
        return " ".join(format_expression(f) for f in expr[1]) or "I"
    if tag in ("atom", "mask"):
        return expr[1]
    if tag == "mean":
        return "m^T" if expr[1] else "m"
    if tag == "phi":
        return f"Phi({format_expression(expr[1])})"
    if tag == "pair":
        inner = format_expression(expr[3])
        if expr[1] == "1x1":
            return inner if " " not in inner else f"({inner})"
        return f"{'T*' if expr[2] else 'T'}({inner})"
    raise ValueError(f"unknown expression {tag!r}")


# --------------------------------------------------------------------------- numeric evaluation
class Kernels:
    """What :func:`evaluate` needs: ``size`` (``P``), ``probe`` (the name of an atom that stands for
    the stack of point projectors ``E_c``, ``c = 1..P``: a product ``A E_c B`` is then the outer
    product ``A[:, c] B[c, :]``, never a stack of matrix products), ``atoms`` (name -> ``(P, P)`` array, or a stack ``(S, P, P)``),
    ``T`` (the k-tap pair map on ``(..., P, P)``; ``T* = T`` for the symmetric taps of a 'same'
    conv, either padding), ``mean`` (``m``) and ``phi_table`` (``(P, P, P)``: ``Phi(E_c)`` for every
    point ``c``; ``Phi`` is only ever applied to diagonal kernels, because what lies between ``M^T``
    and ``M`` is the probe's diagonal or a pair map of it) and ``masks`` (name -> ``(two, three)``:
    ``E[phi'_a phi'_b]`` ``(P, P)`` and ``E[phi'_a phi'_b phi'_c]`` ``(P, P, P)`` of the mask's
    pre-activation, for ``phi'^2 = phi'`` (ReLU, linear): a loop's masks at one point merge)."""

    def __init__(self, size: int, atoms: dict, T, mean=None, phi_table=None, probe: str | None = None,
                 masks: dict | None = None):
        self.size, self.atoms, self.T, self.mean, self.phi_table = size, atoms, T, mean, phi_table
        self.probe, self.masks = probe, masks or {}


def _diagonal(X: np.ndarray) -> np.ndarray:
    """The diagonals of ``X[..., :, :]``; ``ValueError`` unless ``X`` is diagonal (to ``1e-9`` of its largest entry)."""
    if not _is_diagonal(X, 1e-9):
        raise ValueError("Phi is applied to a kernel that is not diagonal (outside the law's derivation)")
    return np.diagonal(X, axis1=-2, axis2=-1)


def evaluate(expr, k: Kernels, cache: dict | None = None):
    """The kernel of one expression tree of :func:`expectation` (``cache`` shares sub-expressions)."""
    cache = {} if cache is None else cache
    if expr in cache:
        return cache[expr]
    tag = expr[0]
    if tag == "prod" and any(f[0] == "mask" for f in expr[1]):
        out = _mask_loop(expr[1], k, cache)
        cache[expr] = out
        return out
    split = _probe_split(expr, k, cache)
    if split is not None:  # A E_c B: the outer products A[:, c] B[c, :]
        cache[expr] = out = np.einsum("ic,cj->cij", *split)
        return out
    if tag == "atom" and expr[1] == k.probe:
        out = np.eye(k.size)[:, None, :] * np.eye(k.size)[:, :, None]
    elif tag == "prod":
        out = None
        for f in expr[1]:
            v = evaluate(f, k, cache)
            out = v if out is None else out @ v
        if out is None:  # the empty word: the identity kernel
            out = np.eye(k.size)
    elif tag == "atom":
        out = k.atoms[expr[1]]
    elif tag == "mean":
        out = np.swapaxes(k.mean, -1, -2) if expr[1] else k.mean
    elif tag == "pair":
        inner = evaluate(expr[3], k, cache)
        out = inner if expr[1] == "1x1" else k.T(inner)
    elif tag == "phi" and expr[1] == ("prod", (("atom", k.probe),)):
        out = k.phi_table  # Phi(E_c), the table itself
    elif tag == "phi":
        d = np.ascontiguousarray(_diagonal(evaluate(expr[1], k, cache)))
        table = k.phi_table.reshape(k.size, -1)
        out = (d.reshape(-1, k.size) @ table).reshape(d.shape[:-1] + k.phi_table.shape[1:])
    else:
        raise ValueError(f"unknown expression {tag!r}")
    cache[expr] = out
    return out


def _off_diagonal(X: np.ndarray) -> np.ndarray:
    """Every off-diagonal entry of the square matrices ``X[..., :, :]`` (one copy, no temporaries of
    ``X``'s size): row-major, the entries between two diagonal ones are ``P`` apart."""
    p = X.shape[-1]
    if p < 2:
        return np.zeros(X.shape[:-2] + (0,))
    flat = X.reshape(X.shape[:-2] + (p * p,))[..., :-1]
    return flat.reshape(X.shape[:-2] + (p - 1, p + 1))[..., 1:]


def _is_diagonal(X: np.ndarray, tolerance: float = 1e-12) -> bool:
    """Whether every off-diagonal entry of ``X[..., :, :]`` is within ``tolerance`` of its largest diagonal one (the
    first rows' off-diagonal entries are read first: a stack that is not diagonal is told apart without a copy)."""
    d = np.diagonal(X, axis1=-2, axis2=-1)
    scale = tolerance * max(np.abs(d).max(initial=0.0), 1e-300)
    if X.shape[-1] > 1 and np.abs(X[..., 0, 1:]).max(initial=0.0) > scale:
        return False
    off = _off_diagonal(X)
    return bool(max(off.max(initial=0.0), -off.min(initial=0.0)) <= scale)


class _Rows:
    """The stack ``E_c R`` (``c = 1..P``: row ``c`` of ``R`` at row ``c``, zeros elsewhere) held as ``R`` alone: what
    the probe ``E_c`` becomes inside a channel loop (``D E_c D = D E_c``, merged with what follows it), so that its
    products cost ``P^3``, not the stack's ``P^4``."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def stack(self) -> np.ndarray:
        p = self.rows.shape[-1]
        out = np.zeros((p, p, p))
        out[np.arange(p), np.arange(p), :] = self.rows
        return out


def _times(a, b):
    """``a @ b`` with ``None`` the identity (an empty segment of a channel loop) and :class:`_Rows` on the right of
    a kernel or the identity."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, _Rows):
        if isinstance(b, np.ndarray) and b.ndim == 2:
            return _Rows(a.rows @ b)
        a = a.stack()
    if isinstance(b, _Rows):
        if a.ndim == 2:  # (A E_c R)[c] = A[:, c] R[c, :]
            return np.einsum("ic,cj->cij", a, b.rows)
        b = b.stack()
    return a @ b


def _dense(v, size: int):
    """A loop value as an array: the identity for ``None``, the stack for :class:`_Rows`."""
    if v is None:
        return np.eye(size)
    return v.stack() if isinstance(v, _Rows) else v


def _is_probe(segment: list, probe: str | None) -> bool:
    """Whether a loop's segment is the probe ``E_c`` alone (bare, or inside a 1x1 pair, whose map is the identity)."""
    if probe is None or len(segment) != 1:
        return False
    f = segment[0]
    return f == ("atom", probe) or (f[0] == "pair" and f[1] == "1x1" and f[3] == ("prod", (("atom", probe),)))


def _mask_loop(factors: tuple, k: Kernels, cache: dict):
    """``E_n`` of a product with masks in one channel loop: ``S_0 D S_1 D ... D S_r`` (the ``S_j``
    products of kernels).  With ``phi'^2 = phi'`` two masks around a diagonal ``S_j`` (or none) sit
    at the same points and merge, so at most three distinct points are left in the loops these laws
    meet: ``S_0 (S_1 o E2) S_2`` for two masks, the 3-point function contracted for three.  A loop
    with more is refused (no closed form for four ReLU orthants).  An empty ``S_j`` is the identity and
    multiplies nothing; the probe ``E_c`` (``k.probe``) alone between two masks is held as its rows
    (:class:`_Rows`), so a loop around it costs ``P^3`` per term, not a stack of matrix products."""
    segments, names = [[]], []
    for f in factors:
        if f[0] == "mask":
            names.append(f[1])
            segments.append([])
        else:
            segments[-1].append(f)
    if len(set(names)) != 1:
        raise ValueError("masks of different layers in one channel loop: not derived")
    values = [None if not seg else _Rows(np.eye(k.size)) if _is_probe(seg, k.probe)
              else evaluate(("prod", tuple(seg)), k, cache) for seg in segments]
    j = 1
    while j < len(values) - 1:  # D S_j D with S_j diagonal: both masks at the same points, D S_j D = D S_j
        v = values[j]
        if v is None or (isinstance(v, _Rows) and _is_diagonal(v.rows)) or (not isinstance(v, _Rows)
                                                                            and _is_diagonal(v)):
            values[j] = _times(v, values.pop(j + 1))
        else:
            j += 1
    two, three = k.masks[names[0]]
    r = len(values) - 1
    if r == 1:  # one point: D S with E[D] = diag(two), rows scaled
        scale = np.diagonal(two)[:, None]
        middle = values[1]
        if middle is None:
            middle = np.diag(np.diagonal(two))
        elif isinstance(middle, _Rows):
            middle = _Rows(scale * middle.rows)
        else:
            middle = scale * middle
        return _dense(_times(values[0], middle), k.size)
    if r == 2:
        middle = two if values[1] is None else _dense(values[1], k.size) * two
        return _dense(_times(_times(values[0], middle), values[2]), k.size)
    if r == 3:
        a, b = values[1], values[2]
        if isinstance(b, _Rows) and not isinstance(a, _Rows):  # out[c][p, q] = a[p, c] R[c, q] three[p, c, q]
            middle = np.einsum("pc,cq,pcq->cpq", _dense(a, k.size), b.rows, three)
        else:
            middle = _three_point(_dense(a, k.size), _dense(b, k.size), three)
        return _dense(_times(_times(values[0], middle), values[3]), k.size)
    raise ValueError(f"a channel loop with {r} masks at distinct points: not derived (no closed form)")


def _three_point(a: np.ndarray, b: np.ndarray, three: np.ndarray) -> np.ndarray:
    """``out[..., p, q] = sum_c a[..., p, c] b[..., c, q] three[p, c, q]``: the middle of a loop with
    three masks at distinct points.  ``O(P^4)`` on a stack either way; where one factor is a single
    kernel it is folded into ``three`` and the rest is a stack of matrix products (BLAS: faster than
    the plain ``einsum``, which stays for two stacks and is the tests' reference;
    ``validate/benchmark_resnet_points.py --activation relu`` times both)."""
    if a.ndim == 2 and b.ndim == 3:  # fold a: out[s, :, q] = b[s, :, q] . (a o three)[:, :, q]^T
        folded = a[:, :, None] * three  # (p, c, q)
        return np.matmul(b.transpose(2, 0, 1), folded.transpose(2, 1, 0)).transpose(1, 2, 0)
    if a.ndim == 3 and b.ndim == 2:  # fold b: out[s, p, :] = a[s, p, :] @ (b o three)[p]
        folded = b[None, :, :] * three  # (p, c, q)
        return np.matmul(a.transpose(1, 0, 2), folded).transpose(1, 0, 2)
    return three_point_einsum(a, b, three)


def three_point_einsum(a: np.ndarray, b: np.ndarray, three: np.ndarray) -> np.ndarray:
    """:func:`_three_point` as one plain ``einsum`` (the reference, and the naive way the benchmark times)."""
    return np.einsum("...pc,...cq,pcq->...pq", a, b, three)


def _probe_split(expr, k: Kernels, cache: dict):
    """``(A, B)`` where ``expr`` is a product ``A E_c B`` around the probe with ``A`` and ``B`` single kernels (no mask
    at its top level), else ``None``: :func:`evaluate` forms such a term as outer products, and
    :func:`compile_expectation` sums all of an expectation's in one contraction."""
    if k.probe is None or expr[0] != "prod" or ("atom", k.probe) not in expr[1] \
            or any(f[0] == "mask" for f in expr[1]):
        return None
    j = expr[1].index(("atom", k.probe))
    left = evaluate(("prod", expr[1][:j]), k, cache)
    right = evaluate(("prod", expr[1][j + 1:]), k, cache)
    return (left, right) if left.ndim == 2 and right.ndim == 2 else None


def _accumulate(total, term):
    """``total + term``, in place where the shapes allow (``total`` is never a cached kernel)."""
    if total is None:
        return term
    if np.ndim(term) > np.ndim(total):
        return total + term
    total += term
    return total


def compile_expectation(op: dict, symbols: tuple):
    """``E_n[op]`` as a numeric function: ``f(values, kernels)`` with ``values`` the numbers of
    ``symbols`` (which must hold every free symbol of the coefficients)."""
    terms = expectation(op)
    free_syms = set().union(*(c.free_symbols for c in terms.values())) if terms else set()
    missing = free_syms - set(symbols)
    if missing:
        raise ValueError(f"symbols: the coefficients also hold {sorted(map(str, missing))}")
    coefs = [(e, sp.lambdify(symbols, c, "math")) for e, c in terms.items()]

    def f(values, kernels: Kernels, cache: dict | None = None):
        cache = {} if cache is None else cache
        total, outer = None, []
        for e, c in coefs:
            split = _probe_split(e, kernels, cache)
            if split is not None:  # A E_c B: summed with the other such terms in one contraction below
                outer.append((c(*values), *split))
                continue
            term = c(*values) * evaluate(e, kernels, cache)
            total = _accumulate(total, term)
        if outer:  # sum_t c_t A_t[:, c] B_t[c, :], one batched product over the terms
            left = np.stack([coef * a for coef, a, _ in outer])
            right = np.stack([b for _, _, b in outer])
            # out[c, i, j] = sum_t left[t, i, c] right[t, c, j]: (c, i, t) @ (c, t, j), a batched BLAS product over c
            total = _accumulate(total, np.matmul(left.transpose(2, 1, 0), right.transpose(1, 0, 2)))
        return 0.0 if total is None else total

    f.terms = terms
    return f
