"""Exact infinite-width law of the *linear* conv chain for either padding: the operator form.

The spectral law (:mod:`amutheory.symbolic.chain.spectral`) needs a Fourier-diagonal convolution.  Its
derivation does not: every step is a planar Wick pairing of the weights, and a pairing of the two
copies of ``W_{i,t}`` forces the same tap ``t``, so the spatial part of each pairing is one of two
maps on ``P x P`` kernels (``P = N^d`` positions, ``S_t`` the padded shift by tap ``t``):

    T(X)  = k^-d sum_t S_t X S_t^T      (a kernel carried one layer up: forward),
    T*(X) = k^-d sum_t S_t^T X S_t      (one layer down: backward).

With symmetric taps both act on ``vec X`` as ``k^-d sum_t S_t (x) S_t``, a symmetric matrix that
moves along the diagonals ``a - beta = delta`` of a kernel: in 1D it is the direct sum over
``delta`` of the averaging operator of :mod:`amutheory.symbolic.chain.boundary` on a segment of
``N - |delta|`` sites (zero padding) or on the ring of ``N`` sites (circular padding), so
``T = T*`` and every power is one eigendecomposition per diagonal.

Ordering the pairings as in the spectral derivation (the ``m`` top layers of the four-fold word
pair across, the rest pair locally) gives, for the cut at layer ``u`` (``s = l - u`` crossing
layers above it),

    E[s_l] = K sum_{u=1}^{l} W(u)^2 E[ tr( G_u T^u(Gamma) Z_s T^u(Gamma)^T ) ],
    W(u) = sum_{j <= u} w_j = epsilon + u - 1,   G_u = T^(L-u)(1 1^T),   Z_s = T^s(I),

``Gamma`` the input Gram of two samples and ``K = n^2 o v_r k^(2d) / (B^3 P^3 C_0^2)`` (``o``
outputs, ``v_r`` the head variance).  ``W(u)^2`` is the depth sum of
:func:`amutheory.symbolic.primitives.expansion.pairs_with_max` (checked in SymPy).  For Gaussian inputs the
input average is three Wick terms, each a sum over the kernel's diagonals:

    (A) B^2 C_0 s^4  sum_{a,beta}  G_u[a,a] Z_s[beta] T^{2u}[(a,beta),(a,beta)],
    (B) B C_0^2 s^4  sum_a         G_u[a,a] Z_s[a] (T^u(I)[a,a])^2,
    (C) B C_0 s^4    sum_{a,beta}  G_u[a,2beta-a] Z_s[beta] T^{2u}[(a,beta),(beta,2beta-a)].

Circular padding: ``G = 1 1^T``, ``Z = I`` and the modes of ``T`` are the Fourier pairs, which
gives back the spectral law term by term (tests).  Zero padding: ``G_u`` is the backward profile
of the boundary, ``Z_s`` the masked local gain, and ``T^{2u}`` the boundary-killed random walk of a
*pair* of positions -- the cross-position correlations the position-local boundary model
(:mod:`amutheory.symbolic.chain.boundary`) leaves out.  In 2D every operator is a tensor product of two
1D ones and each Wick term factorises, so the 2D term is the square of the 1D one (exact).
Everything here is the mean over seeds at infinite width; finite width adds relative ``O(l/n)``.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.stats import central_eta_slope, integer_neighbours
from amutheory.symbolic.primitives.expansion import pairs_with_max
from amutheory.symbolic.primitives.symbols import epsilon, j, m

u_sym = sp.Symbol("u", integer=True, positive=True)


@functools.lru_cache(maxsize=None)
def cut_weight() -> sp.Expr:
    """``sum_{m <= u} P(m)`` (``P`` = :func:`~amutheory.symbolic.primitives.expansion.pairs_with_max`, ``P(1) =
    epsilon^2``): the Gram weight of every updated pair below a cut at layer ``u``, summed in SymPy;
    it equals ``W(u)^2 = (epsilon + u - 1)^2`` (:func:`cut_weight_is_square`)."""
    total = epsilon**2 + sp.summation(pairs_with_max(m), (m, 2, u_sym))
    return sp.factor(sp.expand(total))


def cumulative_gram_weight() -> sp.Expr:
    """``W(u) = sum_{j <= u} w_j = epsilon + sum_{j=2}^{u} 1`` (summed in SymPy)."""
    return epsilon + sp.summation(sp.Integer(1), (j, 2, u_sym))


def cut_weight_is_square() -> bool:
    """``sum_{m <= u} P(m) == W(u)^2`` (symbolic check)."""
    return sp.simplify(cut_weight() - cumulative_gram_weight() ** 2) == 0


# --------------------------------------------------------------------------- the pair operator
def check_linear_chain(spec: ArchSpec, law: str = "operator law", why: str = "") -> None:
    """``ValueError`` naming the field unless ``spec`` is a linear conv chain at the critical
    ``c = 1`` (what the operator law, and the spectral law, are derived for)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "conv":
        raise ValueError(f"family: the {law} is derived for conv chains, got {spec.family!r}")
    if spec.activation != "linear":
        raise ValueError(f"activation: the {law} is derived for linear chains{why}, got {spec.activation!r}")
    if abs(spec.c - 1.0) > 1e-12:
        raise ValueError(f"c: the {law} is derived at the critical init c = 1 of a linear chain, got {spec.c}")


def check_operator_spec(spec: ArchSpec) -> None:
    """The operator law is derived for linear conv chains at the critical ``c = 1`` (either padding)."""
    check_linear_chain(spec, "operator law")


def passes(check, spec: ArchSpec) -> bool:
    """Whether ``check(spec)`` passes (raises no ``ValueError``)."""
    try:
        check(spec)
    except ValueError:
        return False
    return True


def operator_applies(spec: ArchSpec) -> bool:
    """Whether :func:`check_operator_spec` passes for ``spec``."""
    return passes(check_operator_spec, spec)


def _segment_operator(length: int, kernel: int, ring: bool) -> np.ndarray:
    """Averaging operator ``1/k`` over the taps on ``length`` sites, killed at the ends or on a ring."""
    r = kernel // 2
    A = np.zeros((length, length))
    for p in range(length):
        for t in range(-r, r + 1):
            q = p + t
            if ring:
                A[p, q % length] += 1.0 / kernel
            elif 0 <= q < length:
                A[p, q] = 1.0 / kernel
    return A


class PairOperator:
    """``T`` on 1D kernels (``N x N``) of one padding, diagonal by diagonal.

    ``diagonals()`` yields ``(delta, a, beta, U, lam)``: the kernel entries ``(a[i], beta[i])`` of one
    diagonal (``a - beta = delta``, modulo ``N`` on the ring) and ``T`` restricted to it,
    ``U diag(lam) U^T`` (symmetric)."""

    def __init__(self, spatial: int, kernel: int, padding: str):
        if padding not in ("zero", "circular"):
            raise ValueError(f"padding must be 'zero' or 'circular', got {padding!r}")
        self.N, self.k, self.padding = int(spatial), int(kernel), padding
        self._blocks = []
        N = self.N
        if padding == "circular":
            lam, U = np.linalg.eigh(_segment_operator(N, self.k, ring=True))
            idx = np.arange(N)
            for delta in range(N):
                self._blocks.append((delta, (idx + delta) % N, idx, U, lam))
        else:
            cache = {}
            for delta in range(-(N - 1), N):
                M = N - abs(delta)
                if M not in cache:
                    cache[M] = np.linalg.eigh(_segment_operator(M, self.k, ring=False))
                lam, U = cache[M]
                i = np.arange(M)
                self._blocks.append((delta, i + max(delta, 0), i + max(-delta, 0), U, lam))

    def diagonals(self):
        return iter(self._blocks)

    def power_applied_to_ones(self, powers) -> np.ndarray:
        """``T^t (1 1^T)`` as ``N x N`` kernels, one per ``t`` in ``powers``: ``(len(powers), N, N)``."""
        powers = np.asarray(powers)
        out = np.zeros((len(powers), self.N, self.N))
        for _, a, beta, U, lam in self._blocks:
            coef = U.T @ np.ones(len(a))                    # (M,)
            vals = (U * coef) @ (lam[:, None] ** powers[None, :])  # (M, len(powers))
            out[:, a, beta] = vals.T
        return out

    def identity_powers(self, powers) -> np.ndarray:
        """``diag T^t(I)`` (the zero diagonal carried ``t`` layers): ``(len(powers), N)``."""
        powers = np.asarray(powers)
        for delta, a, _, U, lam in self._blocks:
            if delta == 0:
                return ((U * (U.T @ np.ones(len(a)))) @ (lam[:, None] ** powers[None, :])).T[:, np.argsort(a)]
        raise AssertionError("no zero diagonal")  # pragma: no cover


def _wick_terms(op: PairOperator, depth: int) -> np.ndarray:
    """The three Wick terms ``(A, B, C)`` of the 1D operator, for every cut ``u`` and crossing count
    ``s`` of a net of depth ``L``: an array ``(3, L + 1, L + 1)`` indexed ``[term, u, s]`` (``u >= 1``,
    ``u + s <= L``; other entries zero)."""
    L, N = depth, op.N
    us = np.arange(L + 1)
    G = op.power_applied_to_ones(L - us)            # G[u] = T^(L-u)(1 1^T)
    Z = op.identity_powers(us)                      # Z[s] = diag T^s(I)
    out = np.zeros((3, L + 1, L + 1))
    gdiag = np.einsum("uaa->ua", G)                 # (L+1, N)
    for delta, a, beta, U, lam in op.diagonals():
        lam2u = lam[None, :] ** (2 * us[:, None])   # (L+1, M)
        diag2u = lam2u @ (U**2).T                   # diag of T^{2u} on this diagonal: (L+1, M)
        # (A): sum_i G_u[a_i, a_i] Z_s[beta_i] T^{2u}_{ii}
        out[0] += np.einsum("ui,si->us", gdiag[:, a] * diag2u, Z[:, beta])
        # (C): partner (beta_i, 2 beta_i - a_i) on the same diagonal, index i - delta
        if op.padding == "circular":
            shift = delta % N
            partner = (np.arange(len(a)) - shift) % N
            ok = np.ones(len(a), bool)
            a2 = (2 * beta - a) % N
        else:
            partner = np.arange(len(a)) - delta
            ok = (partner >= 0) & (partner < len(a))
            a2 = 2 * beta - a
        if np.any(ok):
            i_ok, p_ok = np.nonzero(ok)[0], partner[ok]
            # T^{2u}[i, i'] = sum_j U_ij U_i'j lam_j^{2u}
            cross = lam2u @ (U[i_ok] * U[p_ok]).T   # (L+1, n_ok)
            g = G[:, a[i_ok], a2[i_ok]]             # (L+1, n_ok)
            out[2] += np.einsum("ui,si->us", g * cross, Z[:, beta[i_ok]])
    # (B): sum_a G_u[a,a] Z_s[a] (T^u(I)[a,a])^2; T^u(I) is diagonal, its diagonal is Z[u]
    out[1] = np.einsum("ua,sa->us", gdiag * Z**2, Z)
    # only u >= 1 and u + s <= L are cuts of some layer l = u + s
    mask = (us[:, None] >= 1) & (us[:, None] + us[None, :] <= L)
    return out * mask[None]


@functools.lru_cache(maxsize=None)
def _cut_weight_fn():
    return sp.lambdify((u_sym, epsilon), cut_weight(), "numpy")


def _prefactor(spec: ArchSpec, input_var: float) -> tuple[float, np.ndarray]:
    """``K s^4`` and the Wick multiplicities ``(B^2 C_0, B C_0^2, B C_0)``."""
    B, C0, P, n = spec.batch, spec.input_channels, spec.positions, spec.width
    K = n**2 * spec.outputs * spec.readout_variance * spec.kernel ** (2 * spec.dim) / (B**3 * P**3 * C0**2)
    return K * input_var**2, np.array([B**2 * C0, B * C0**2, B * C0], dtype=float)


def operator_layer_moments(spec: ArchSpec, depth: int | None = None, input_var: float = 1.0) -> np.ndarray:
    """``E[s_l]``, ``l = 1..L``, of a linear chain of depth ``L`` (``spec.depth`` unless given) at
    infinite width.  With zero padding ``s_l`` depends on ``L`` (the backward profile ``G``)."""
    check_operator_spec(spec)
    L = spec.depth if depth is None else int(depth)
    if L < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    op = _pair_operator(spec.spatial, spec.kernel, spec.padding)
    terms = _wick_terms(op, L) ** spec.dim           # 2D: each Wick term is the square of the 1D one
    pref, mult = _prefactor(spec, input_var)
    per_cut = np.tensordot(mult, terms, axes=1)      # (L+1, L+1) [u, s]
    us = np.arange(L + 1)
    w = _cut_weight_fn()(us.astype(float), spec.input_channels / spec.width)
    s = np.array([np.sum(w[1:l + 1] * per_cut[np.arange(1, l + 1), l - np.arange(1, l + 1)])
                  for l in range(1, L + 1)])
    return pref * s


@functools.lru_cache(maxsize=64)
def _pair_operator(spatial: int, kernel: int, padding: str) -> PairOperator:
    return PairOperator(spatial, kernel, padding)


def operator_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``E[s_bar(L)]`` at infinite width for every ``L`` in ``depths`` (integers)."""
    return np.array([operator_layer_moments(spec, int(d), input_var).mean() for d in integer_depths(depths)])


def integer_depths(depths) -> list[int]:
    """``depths`` (one or many) as integers ``>= 1``; ``ValueError`` naming ``depths`` otherwise (the
    operator and kernel laws are finite sums over layers)."""
    arr = np.atleast_1d(np.asarray(depths, dtype=float))
    if arr.size == 0 or np.any(arr != np.round(arr)) or np.any(arr < 1):
        raise ValueError(f"depths must be integers >= 1 (the law is a finite sum over layers), "
                         f"got {list(np.atleast_1d(depths))}")
    return [int(d) for d in arr]


def operator_slope(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """Local slope ``d ln eta*/d ln L`` of the mean by central differences on integer depths
    (one-sided at ``L = 1``): ``-(1/2) d ln s_bar / d ln L``."""
    depths = integer_depths(depths)
    grid = sorted(set(depths).union(*integer_neighbours(depths)))
    return central_eta_slope(dict(zip(grid, operator_s_bar(spec, grid, input_var))), depths)


def operator_boundary_ratio(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``E[s_bar_zero(L)] / E[s_bar_circular(L)]`` of the same geometry (exact at infinite width)."""
    zero = operator_s_bar(spec.with_(padding="zero"), depths, input_var)
    circ = operator_s_bar(spec.with_(padding="circular"), depths, input_var)
    return zero / circ


# --------------------------------------------------------------------------- brute force (checks)
def _shift_matrices(spatial: int, kernel: int, padding: str) -> list[np.ndarray]:
    N, r = spatial, kernel // 2
    mats = []
    for t in range(-r, r + 1):
        S = np.zeros((N, N))
        for p in range(N):
            q = p + t
            if padding == "circular":
                S[p, q % N] = 1.0
            elif 0 <= q < N:
                S[p, q] = 1.0
        mats.append(S)
    return mats


def brute_force_layer_moment(spec: ArchSpec, layer: int, depth: int, input_var: float = 1.0) -> float:
    """``E[s_l]`` (1D) from the defining trace, with ``T`` as the dense ``N^2 x N^2`` matrix
    ``k^-1 sum_t S_t (x) S_t`` and the Wick average over explicit basis kernels: the check of the
    diagonal-by-diagonal sums.  Small ``N`` only."""
    check_operator_spec(spec)
    if spec.dim != 1:
        raise ValueError("dim: the brute force is 1D")
    N, k = spec.spatial, spec.kernel
    S = _shift_matrices(N, k, spec.padding)
    T = sum(np.kron(s, s) for s in S) / k               # acts on vec X (row-major)

    def Tpow(X, t):
        v = X.ravel()
        for _ in range(t):
            v = T @ v
        return v.reshape(N, N)

    eps = spec.input_channels / spec.width
    B, C0 = spec.batch, spec.input_channels
    total = 0.0
    for u in range(1, layer + 1):
        s = layer - u
        G = Tpow(np.ones((N, N)), depth - u)
        Z = Tpow(np.eye(N), s)
        acc = 0.0
        for p1 in range(N):
            for p2 in range(N):
                E12 = np.zeros((N, N))
                E12[p1, p2] = 1.0
                X = Tpow(E12, u)
                Xt = Tpow(E12.T, u)
                # (A): Gamma x Gamma' with delta_13 delta_24 -> tr(G X Z X^T); (C): delta_14 delta_23
                acc += B**2 * C0 * np.trace(G @ X @ Z @ X.T) + B * C0 * np.trace(G @ X @ Z @ Xt.T)
        TI = Tpow(np.eye(N), u)
        acc += B * C0**2 * np.trace(G @ TI @ Z @ TI.T)
        total += (eps + u - 1) ** 2 * acc
    pref, _ = _prefactor(spec, input_var)
    return pref * total
