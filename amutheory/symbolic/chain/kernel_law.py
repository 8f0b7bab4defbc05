"""Infinite-width law of linear and ReLU conv chains for either padding, one input draw at a time.

The operator law (:mod:`amutheory.symbolic.chain.operator_law`) averages a *linear* chain over its
Gaussian inputs exactly, because everything is bilinear in the input Gram.  A ReLU chain is not,
but for a *given* input the infinite-width chain is still a set of deterministic kernels over
(sample, position) pairs, and the same planar pairings of the weights give the mean over weights.
The derivation is the operator law's, with the derivative masks ``D_i = phi'(h_i)`` put into the
channel loops the pairings close.  Each level ``i`` between layers ``i`` and ``i+1`` carries

* two 2-point loops where both layers pair locally, ``E[phi'(h_i(b)) phi'(h_i(b'))]`` on the
  forward side of the update (the kernel ``X`` of the update is carried up as
  ``X <- c T(M_i (.) X)``, ``M`` the mask kernel of :func:`mask_kernel`);
* two 2-point loops where both pair across: the backward kernel ``G`` of the probe's gradient
  (``G <- M_i (.) c T*(G)``) and the diagonal ``Z`` (``E[phi'^2] = 1/2`` for ReLU);
* one 4-point loop at the cut ``u`` between the two, which for ReLU (``phi'^2 = phi'``) is the
  orthant probability of three Gaussians, :func:`orthant3` (derived from the pair probability).

So, per input draw, with ``K_j = n w_j kappa_j`` the layer inputs' patch Gram (``kappa_1 =
k^d T(Gamma)/C_0``, ``kappa_j = k^d T(V(Sigma_{j-1}))``, ``V`` the arc-cosine kernel),

    E[s_l] = n^2/(B P) sum_{b,b'} [ sum_{a,beta,d} G_l[a,d] X_l[a,beta] X_l[d,beta]
             + sum_{u<l} sum_{a,beta,d} Gcut_u[a,d] Z_{l-u}[beta] X_u[a,beta] X_u[d,beta]
               Q3_u(b a, b' beta, b d) ],
    X_u = c T(M_{u-1} (.) X_{u-1}) + w_u kappa_u,    Gcut_u = c T*(G_{u+1}),

``X`` the ``(b, b')`` block, ``G`` the ``(b, b)`` block.  For a linear chain every mask is 1 and
the input average of this expression is the operator law exactly (tests: the mean over draws
converges to it); for circular padding the operator law is the spectral law.  What the ReLU law
assumes beyond the linear one: that the masks may be averaged as if independent of the weights
they sit between (the gradient-independence assumption of infinite-width analyses) -- measured,
not proved, here (derivations/04, the campaign).  The input average is a Monte-Carlo mean over
draws, reported with its standard error.

Both sums are linear in the backward kernel, and only it depends on the depth ``L``: so the law sums
them in adjoint form, each cut's forward weights ``sum_(b') X_u[a,beta] X_u[d,beta] Q3_u`` once per layer
(``O(B^2 P^3)``) contracted with every depth's ``G`` and ``Gcut`` (``O(B P^3)`` each)
(:func:`layer_moments_at_depths`); :func:`layer_moments_by_depth` sums them in the order written above
(``O(B^2 P^3)`` per layer and depth), the reference the tests and ``validate/benchmark_law_costs.py
--adjoint`` compare it with.

GELU and tanh (``phi'^2 != phi'``): the 4-point loop is then ``E[phi'(h_u(b, a)) phi'(h_u(b, a'))
phi'(h_u(b', beta))^2]`` and ``Z`` a gain per sample and position carried down from layer ``l``
(:func:`_drawn_smooth_moments`); their Gaussian moments are the drawn rows' means at finite width
(:mod:`amutheory.symbolic.chain.kernel_law_finite`, chains and MLPs) or, on one position at infinite width,
2-D integrals by quadrature (:func:`pair_moments`).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import sympy as sp

from amutheory.activations import get_activation
# kernel entries held at once (a memory bound: amutheory.limits, which estimates this law's peak bytes)
from amutheory.limits import CHUNK_ENTRIES
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.operator_law import integer_depths, operator_applies, operator_s_bar

rho, rho12, rho13, rho23, phi_ang, rr = sp.symbols("rho rho12 rho13 rho23 varphi r", real=True)
theta = sp.Symbol("theta", positive=True)

KERNEL_ACTIVATIONS = ("linear", "relu")


# --------------------------------------------------------------------------- Gaussian kernels (SymPy)
@functools.lru_cache(maxsize=None)
def relu_pair_kernels() -> dict[str, sp.Expr]:
    """ReLU's kernels of two unit Gaussians at angle ``theta = arccos rho``, integrated in SymPy in
    polar coordinates (``u = r cos varphi``, ``v = r cos(varphi - theta)``; both positive on the
    wedge ``theta - pi/2 < varphi < pi/2``):

    * ``value``: ``E[relu(u) relu(v)] = (sin theta + (pi - theta) cos theta) / (2 pi)``;
    * ``mask``: ``P(u > 0, v > 0) = (pi - theta) / (2 pi)`` (``E[relu'(u) relu'(v)]``)."""
    density = rr * sp.exp(-rr**2 / 2) / (2 * sp.pi)
    wedge = (phi_ang, theta - sp.pi / 2, sp.pi / 2)
    radial2 = sp.integrate(rr**2 * density, (rr, 0, sp.oo))
    radial0 = sp.integrate(density, (rr, 0, sp.oo))
    value = sp.simplify(radial2 * sp.integrate(sp.expand_trig(sp.cos(phi_ang) * sp.cos(phi_ang - theta)), wedge))
    mask = sp.simplify(radial0 * sp.integrate(sp.Integer(1), wedge))
    return {"value": value, "mask": mask}


@functools.lru_cache(maxsize=None)
def orthant3() -> sp.Expr:
    """``P(u_1 > 0, u_2 > 0, u_3 > 0)`` of three unit Gaussians with correlations ``rho_ij``.

    By symmetry ``P(all > 0) = P(all < 0)``.  When the three signs are not all equal, exactly two
    of the three pairs ``(i, j)`` disagree, so the events ``sign_i != sign_j`` (each of probability
    ``1 - 2 P(u_i > 0, u_j > 0)``, the pair mask of :func:`relu_pair_kernels`) cover "not all
    equal" exactly twice.  Hence ``P = (1 - (1/2) sum_{i<j} P(sign_i != sign_j)) / 2
    = 1/8 + (asin rho_12 + asin rho_13 + asin rho_23) / (4 pi)``."""
    pair = relu_pair_kernels()["mask"].subs(theta, sp.acos(rho))
    differ = [1 - 2 * pair.subs(rho, x) for x in (rho12, rho13, rho23)]
    return sp.simplify((1 - sp.Rational(1, 2) * sum(differ)) / 2)


@functools.lru_cache(maxsize=None)
def orthant3_in_arcsines() -> tuple[sp.Expr, sp.Expr]:
    """:func:`orthant3` is linear in the arcsines of the correlations: ``(constant, coefficient)``
    with ``P = constant + coefficient (asin rho_12 + asin rho_13 + asin rho_23)`` (``1/8`` and
    ``1/(4 pi)``), read off in SymPy with ``rho_ij = sin t_ij``; raises if it were not linear."""
    t = sp.symbols("t12 t13 t23", real=True)
    form = sp.simplify(orthant3().subs({rho12: sp.sin(t[0]), rho13: sp.sin(t[1]), rho23: sp.sin(t[2])})
                       .rewrite(sp.asin).subs({sp.asin(sp.sin(x)): x for x in t}))
    coefs = [sp.simplify(sp.diff(form, x)) for x in t]
    if any(sp.diff(c_, x) != 0 for c_ in coefs for x in t) or len(set(coefs)) != 1:
        raise AssertionError("orthant3 is not a symmetric linear form in the arcsines")
    return sp.simplify(form.subs({x: 0 for x in t})), coefs[0]


@functools.lru_cache(maxsize=None)
def _kernel_fns():
    k = relu_pair_kernels()
    value = sp.lambdify(rho, k["value"].subs(theta, sp.acos(rho)), "numpy")
    mask = sp.lambdify(rho, k["mask"].subs(theta, sp.acos(rho)), "numpy")
    q3 = sp.lambdify((rho12, rho13, rho23), orthant3(), "numpy")
    return value, mask, q3


def _correlation(S: np.ndarray, scales: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """The correlations of the kernel ``S`` (0 where a point has no variance, clipped to ``[-1, 1]``) and the
    products of the standard deviations they were divided by (``None`` unless ``scales``)."""
    d = np.sqrt(np.clip(np.diagonal(S, axis1=-2, axis2=-1), 0.0, None))
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
    corr = S * inv[..., :, None]
    corr *= inv[..., None, :]
    np.clip(corr, -1.0, 1.0, out=corr)
    return corr, (d[..., :, None] * d[..., None, :] if scales else None)


def value_kernel(S: np.ndarray, activation: str) -> np.ndarray:
    """``E[phi(h) phi(h')]`` for the Gaussian kernel ``S`` of ``h``."""
    if activation == "linear":
        return S
    corr, denom = _correlation(S)
    return denom * _kernel_fns()[0](corr)


def mask_kernel(S: np.ndarray, activation: str) -> np.ndarray:
    """``E[phi'(h) phi'(h')]`` for the Gaussian kernel ``S`` (ReLU: the pair orthant probability)."""
    if activation == "linear":
        return np.ones_like(S)
    corr, _ = _correlation(S)
    return _kernel_fns()[1](corr)


def mask_kernel3(S: np.ndarray, activation: str) -> np.ndarray:
    """``E[phi'(h_a) phi'(h_b) phi'(h_c)]`` for every triple of points (an array ``(P, P, P)``) of the
    Gaussian kernel ``S`` ``(P, P)`` (ReLU: the orthant probability :func:`orthant3`; a repeated
    point gives the pair's, since ``relu'^2 = relu'``)."""
    if activation == "linear":
        return np.ones((S.shape[0],) * 3)
    corr, _ = _correlation(S)
    return _kernel_fns()[2](corr[:, :, None], corr[:, None, :], corr[None, :, :])


# --------------------------------------------------------------------------- the spatial map T
class ShiftMap:
    """``T(X) = k^-d sum_t S_t X S_t^T`` on kernels over ``(sample, position)``: arrays
    ``(..., P, P)`` with the positions of a ``d``-dimensional grid flattened (row-major).  Each tap
    shifts both positions by ``t``; zero padding drops what leaves the grid, circular padding wraps.
    With symmetric taps ``T* = T`` (``S_t^T = S_-t``)."""

    def __init__(self, spatial: int, kernel: int, dim: int, padding: str):
        r = kernel // 2
        self.N, self.dim, self.padding = spatial, dim, padding
        self.P = spatial**dim
        self.offsets = [tuple(t) for t in np.stack(np.meshgrid(*[np.arange(-r, r + 1)] * dim, indexing="ij"),
                                                   -1).reshape(-1, dim)]
        self.taps, self.radius = len(self.offsets), r

    def _shift(self, t: int) -> tuple[slice, slice]:
        """(destination, source) slices of one axis: ``out[p] = X[p + t]`` where both are inside."""
        N = self.N
        return slice(max(0, -t), N - max(0, t)), slice(max(0, t), N + min(0, t))

    def _blocks(self, t: int) -> list[tuple[slice, slice]]:
        """(destination, source) slices of one axis shifted by ``t`` (``out[p] = X[p + t]``): the part inside the
        grid (none where ``|t| >= N``, zero padding), and for circular padding (``t`` taken mod ``N``) the part
        that wraps around."""
        N = self.N
        if self.padding == "circular":
            t %= N
            return [self._shift(t)] + ([(slice(N - t, N), slice(0, t))] if t else [])
        return [self._shift(t)] if abs(t) < N else []

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """``T`` on the last two (flattened position) axes of ``X``, one grid axis at a time: ``T`` is the
        product over the ``d`` axes of ``T_j(X) = k^-1 sum_t`` (both positions shifted by ``t`` along axis
        ``j``), since a tap's shift is the product of its axes' shifts and zero padding drops a point outside
        the grid along any axis.  The sum's order differs from :meth:`in_tap_order`'s, so the two agree to
        rounding, not to the last bit."""
        lead, d, N = X.shape[:-2], self.dim, self.N
        nl, shape = len(lead), lead + (N,) * (2 * d)
        out = X.reshape(shape)
        for j in range(d):
            acc = out.copy()
            for t in range(-self.radius, self.radius + 1):
                if t:
                    self._add_shifted(acc, out, {nl + j: t, nl + d + j: t})
            out = acc
        out /= self.taps
        return out.reshape(X.shape)

    def in_tap_order(self, X: np.ndarray) -> np.ndarray:
        """``T(X)`` summed tap by tap in the taps' order, as the law's recorded draws were: where a draw depends
        on the kernel's last bits (a matrix square root's eigenvectors within a repeated eigenvalue), this keeps
        the Monte Carlo stream of the runs on record."""
        lead, d, N = X.shape[:-2], self.dim, self.N
        nl, shape = len(lead), lead + (N,) * (2 * d)
        Xr, out = X.reshape(shape), np.zeros(shape)
        for t in self.offsets:
            self._add_shifted(out, Xr, dict(zip(range(nl, nl + 2 * d), t * 2)))
        out /= self.taps
        return out.reshape(X.shape)

    def _add_shifted(self, out: np.ndarray, X: np.ndarray, shifts: dict) -> None:
        """``out += X`` shifted by ``shifts[axis]`` along each axis named (``out[p] += X[p + t]``), by slices:
        the part inside the grid, and for circular padding the parts that wrap around."""
        axes = list(shifts)
        for parts in itertools.product(*(self._blocks(shifts[a]) for a in axes)):
            dst, src = [slice(None)] * out.ndim, [slice(None)] * out.ndim
            for a, (d_, s_) in zip(axes, parts):
                dst[a], src[a] = d_, s_
            out[tuple(dst)] += X[tuple(src)]

    def shift_rows(self, F: np.ndarray) -> np.ndarray:
        """Every tap's shift of rows over the (flattened) positions, the last axis of ``F``: an array
        ``(taps,) + F.shape`` with ``out[t][..., p] = F[..., p + t]`` (zero outside the grid for zero
        padding, wrapped for circular), so that ``T(F^T F) = sum_t out[t]^T out[t] / taps`` -- a factor of
        ``T`` of a Gram, which draws rows of covariance ``T(F^T F)`` without a matrix square root."""
        lead, d, N = F.shape[:-1], self.dim, self.N
        Fr = F.reshape(lead + (N,) * d)
        nl = len(lead)
        out = np.zeros((self.taps,) + Fr.shape, dtype=Fr.dtype)
        for i, t in enumerate(self.offsets):       # by slices: inside the grid, and the parts that wrap (circular)
            for parts in itertools.product(*(self._blocks(x) for x in t)):
                dst, src = zip(*parts)
                out[(i, Ellipsis) + dst] = Fr[(Ellipsis,) + src]
        return out.reshape((self.taps,) + F.shape)


#: largest ``B P`` (samples x positions) the kernel law runs for: a cut costs ``O(B^2 P^3)`` and the
#: kernels take ``O(L B^2 P^2)`` memory (at the bound: 1D N = 128 or 2D N = 11 at B = 8; docs/findings/zero_padding.md "Zero
#: padding" times a run of ``amutheory boundary``, which reports each batch of draws as it goes)
KERNEL_MAX_BP = 1024


def check_kernel_spec(spec: ArchSpec) -> None:
    """The kernel law is derived for linear and ReLU conv chains (either padding) and computed for
    ``B N^d <=`` :data:`KERNEL_MAX_BP`."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "conv":
        raise ValueError(f"family: the kernel law is derived for conv chains, got {spec.family!r}")
    if spec.activation not in KERNEL_ACTIVATIONS:
        raise ValueError(f"activation: the kernel law needs phi'^2 = phi' up to a constant (linear or relu), "
                         f"got {spec.activation!r}")
    if spec.batch * spec.positions > KERNEL_MAX_BP:
        raise ValueError(f"spatial: the kernel law runs for batch x N^d <= {KERNEL_MAX_BP} (cost B^2 P^3 per cut), "
                         f"got {spec.batch} x {spec.positions}")


#: activations the kernel law takes when its forward kernels are *drawn* at finite width: every Gaussian
#: moment, the four-point loop at a cut included, is then the empirical mean over the drawn rows
#: (:mod:`amutheory.symbolic.chain.kernel_law_finite`), so ``phi'^2 = phi'`` is not needed
DRAWN_ACTIVATIONS = ("gelu", "tanh")
#: largest ``B^2 P^3`` the drawn law takes for them: its four-point loop over (sample, position) triples is
#: ``B^2 P^3`` entries per draw, formed at its cut one layer and draw at a time (:func:`_drawn_smooth_moments`), and
#: costs ``n B^2 P^3`` to form (2-D chains up to 8 x 8 at B = 8; before the loops were formed at their cut, every
#: layer's was held and the bound was 2^19, 1-D chains up to N = 20 at B = 8; ``predict``'s default follows the
#: planned checks, :data:`DRAWN_DEFAULT_MAX_B2P3`)
DRAWN_MAX_B2P3 = 2**24
#: largest ``B^2 P^3`` at which the drawn law of a smooth activation may be ``predict``'s default (where its cost fits
#: the budget), per activation: the sizes its planned checks covered -- runs K, T and U of validate/plans/FINITE_WIDTH.md
#: (1-D chains at spatial 8 and 16, 2^19) and run 2H (2-D chains on 8 x 8 at batch 8, 2^24: no worse than the
#: calibrated law at widths 32 and 64 for both; tanh within 2.2% and 1.6 z, GELU still 34-74% low); above it the law
#: runs on request
DRAWN_DEFAULT_MAX_B2P3 = {"gelu": 2**24, "tanh": 2**24}


def check_drawn_spec(spec: ArchSpec) -> None:
    """The kernel law with drawn forward kernels: :func:`check_kernel_spec`, and for a smooth activation of
    :data:`DRAWN_ACTIVATIONS` a chain with ``B^2 P^3 <=`` :data:`DRAWN_MAX_B2P3`."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.activation not in DRAWN_ACTIVATIONS:
        check_kernel_spec(spec)
        return
    check_kernel_spec(spec.with_(activation="relu", init_c=None))
    if spec.batch**2 * spec.positions**3 > DRAWN_MAX_B2P3:
        raise ValueError(f"spatial: the kernel law takes {spec.activation!r} for batch^2 x (N^d)^3 <= {DRAWN_MAX_B2P3} "
                         f"(its four-point loop over sample and position triples), got {spec.batch}^2 x "
                         f"{spec.positions}^3")


@functools.lru_cache(maxsize=32)
def _shift_map(spatial, kernel, dim, padding) -> ShiftMap:
    return ShiftMap(spatial, kernel, dim, padding)


def _blocks(S: np.ndarray, B: int, P: int) -> np.ndarray:
    """``(..., B P, B P)`` -> blocks ``(..., B, B, P, P)`` indexed ``[b, b', p, p']``."""
    lead = S.shape[:-2]
    k = len(lead)
    return S.reshape(lead + (B, P, B, P)).transpose(*range(k), k, k + 2, k + 1, k + 3)


def _flat(blocks: np.ndarray) -> np.ndarray:
    """Blocks ``(..., B, B, P, P)`` -> ``(..., B P, B P)``."""
    lead, (B, _, P, _) = blocks.shape[:-4], blocks.shape[-4:]
    k = len(lead)
    return blocks.transpose(*range(k), k, k + 2, k + 1, k + 3).reshape(lead + (B * P, B * P))


def layer_moments_given_input(spec: ArchSpec, x: np.ndarray, depth: int | None = None) -> np.ndarray:
    """``E[s_l | x]``, ``l = 1..L``, of ``spec`` (depth ``L``) at infinite width for one input
    ``x`` of shape ``(B, C_0, N[, N])``: the mean over the weights (module docstring)."""
    L = spec.depth if depth is None else int(depth)
    return layer_moments_at_depths(spec, np.asarray(x)[None], [L])[L][0]


def _forward(spec: ArchSpec, x: np.ndarray, L: int) -> dict:
    """Forward kernels of a stack of inputs ``x`` (``(D, B, C_0, P)``) up to depth ``L``, all blocks
    ``[draw, b, b', p, p']``: the update kernels ``X_u``, the masks ``M_u`` and, for ReLU, ``asin`` of
    the correlations of ``h_u``."""
    B, C0, P, n, c, act = spec.batch, spec.input_channels, spec.positions, spec.width, spec.c, spec.activation
    T = _shift_map(spec.spatial, spec.kernel, spec.dim, spec.padding)
    gamma = np.einsum("dbcp,decq->dbepq", x, x)
    kappa = T.taps * T(gamma) / C0                       # kappa_1 (times w_1 = epsilon)
    sigma = c * T(gamma) / C0                            # Sigma_1
    X, masks, asin = [(C0 / n) * kappa], [], []
    for u in range(1, L + 1):
        flat = _flat(sigma)
        masks.append(_blocks(mask_kernel(flat, act), B, P))
        if act == "relu":
            asin.append(np.arcsin(_blocks(_correlation(flat)[0], B, P)))
        if u == L:
            break
        vx = _blocks(value_kernel(flat, act), B, P)
        sigma = c * T(vx)                                # Sigma_{u+1}
        X.append(c * T(masks[-1] * X[-1]) + T.taps * T(vx))   # X_{u+1} = c T(M_u X_u) + kappa_{u+1}
    return {"X": X, "masks": masks, "asin": asin, "T": T}


#: :func:`pair_moments`'s rule: the trapezoid rule on ``[-PAIR_HALF_WIDTH, PAIR_HALF_WIDTH]`` against the
#: Gaussian density, spectrally accurate for an integrand analytic in a strip around the real axis, with
#: ``PAIR_NODES`` per axis per unit of ``PAIR_SD_UNIT`` in the largest standard deviation (tanh's poles at
#: ``i pi / (2 sd)`` narrow the strip as ``sd`` grows, and slow Gauss-Hermite down: 1e-3 at 48 nodes);
#: checked against 2-D adaptive quadrature (``scipy.integrate.dblquad``) in tests/test_kernel_law_finite.py
PAIR_NODES, PAIR_HALF_WIDTH, PAIR_SD_UNIT = 64, 8.5, 1.6
#: kernel entries (times nodes) one batch of :func:`pair_moments` holds at once
PAIR_CHUNK = 2**22


@functools.lru_cache(maxsize=None)
def _pair_grid(nodes: int = PAIR_NODES):
    z = np.linspace(-PAIR_HALF_WIDTH, PAIR_HALF_WIDTH, nodes)
    w = np.exp(-z * z / 2)
    w = w / w.sum()
    z1, z2 = (a.ravel() for a in np.meshgrid(z, z, indexing="ij"))
    return z1, z2, np.outer(w, w).ravel()


def pair_moments(S: np.ndarray, activation: str) -> dict[str, np.ndarray]:
    """The Gaussian moments the kernel law takes of a smooth activation, for every pair ``(b, b')`` of the
    kernel ``S`` (``(..., B, B)``; ``(h_b, h_b')`` Gaussian with covariance ``S[[b, b'], [b, b']]``), by a
    tensor trapezoid rule against the Gaussian density: ``value`` ``E[phi(h_b) phi(h_b')]``, ``mask`` ``E[phi'(h_b) phi'(h_b')]``, ``loop4`` ``E[phi'(h_b)^2
    phi'(h_b')^2]`` and ``dphi2`` ``E[phi'(h_b)^2]`` (``(..., B)``), each to 1e-6 relative or better
    (tanh's four-point loop is the slowest to converge; :data:`PAIR_NODES`)."""
    from amutheory.activations import get_activation

    act = get_activation(activation)
    S = np.asarray(S, float)
    sd_max = float(np.sqrt(max(np.max(np.diagonal(S, axis1=-2, axis2=-1)), 0.0)))
    nodes = PAIR_NODES * max(1, int(np.ceil(sd_max / PAIR_SD_UNIT)))
    z1, z2, w = _pair_grid(nodes)
    lead = S.shape[:-2]
    flat = S.reshape((-1,) + S.shape[-2:])
    step = max(1, PAIR_CHUNK // (flat.shape[-1] ** 2 * len(w)))
    parts = [_pair_moments_on(flat[i:i + step], act, z1, z2, w) for i in range(0, len(flat), step)]
    return {k: np.concatenate([p[k] for p in parts]).reshape(lead + parts[0][k].shape[1:]) for k in parts[0]}


def _pair_moments_on(S: np.ndarray, act, z1: np.ndarray, z2: np.ndarray, w: np.ndarray) -> dict:
    """:func:`pair_moments` of a stack of kernels ``(k, B, B)`` on the grid ``(z1, z2)`` with weights ``w``."""
    corr, _ = _correlation(S)
    sd = np.sqrt(np.clip(np.diagonal(S, axis1=-2, axis2=-1), 0.0, None))
    r = corr[..., None]
    u = sd[..., :, None, None] * z1
    v = sd[..., None, :, None] * (r * z1 + np.sqrt(np.clip(1.0 - r * r, 0.0, None)) * z2)
    du, dv = act.dphi(u), act.dphi(v)
    out = {"value": (act.phi(u) * act.phi(v)) @ w, "mask": (du * dv) @ w, "loop4": (du * du * dv * dv) @ w}
    out["dphi2"] = np.diagonal(out["mask"], axis1=-2, axis2=-1).copy()
    return out


def _forward_smooth(spec: ArchSpec, x: np.ndarray, L: int) -> dict:
    """:func:`_forward` of a smooth activation on one position (an MLP's chain) at infinite width: the
    kernels of :func:`pair_moments` in place of the drawn rows' means, for :func:`_drawn_smooth_moments`."""
    B, C0, n, c = spec.batch, spec.input_channels, spec.width, spec.c
    if spec.positions != 1:
        raise ValueError(f"spatial: at infinite width the kernel law takes {spec.activation!r} on one position (an "
                         f"MLP; its loops over three positions are not integrated), got {spec.positions} positions; "
                         "the finite-width law draws them (chain-kernel-finite)")
    T = _shift_map(spec.spatial, spec.kernel, spec.dim, spec.padding)
    gamma = np.einsum("dbcp,decq->dbepq", x, x)
    sigma = c * gamma[..., 0, 0] / C0                     # [draw, b, b']
    X, masks, loop3, dphi2 = [(C0 / n) * gamma / C0], [], [], []
    for u in range(1, L + 1):
        got = pair_moments(sigma, spec.activation)
        masks.append(got["mask"][..., None, None])
        loop3.append(got["loop4"][:, :, None, None, :, None])          # [draw, b, a, a', b', beta], one position
        dphi2.append(got["dphi2"][..., None])
        if u == L:
            break
        sigma = c * got["value"]
        X.append(c * masks[-1] * X[-1] + got["value"][..., None, None])
    return {"X": X, "masks": masks, "asin": [], "T": T, "loop3": loop3, "dphi2": dphi2}


def layer_moments_at_depths(spec: ArchSpec, x: np.ndarray, depths, forward=None) -> dict[int, np.ndarray]:
    """``{L: E[s_l | x] for l = 1..L}`` (an array ``(D, L)``) for nets of every depth in ``depths``
    on a stack of ``D`` inputs ``x`` (``(D, B, C_0, N[, N])``); the forward kernels are shared, only
    the backward kernel ``G`` depends on ``L``.  ``forward(spec, x, L)``: the forward kernels
    (:func:`_forward`'s dict; the finite-width law of :mod:`amutheory.symbolic.chain.kernel_law_finite`
    draws them at width ``n``).

    Each cut's sum is linear in ``G``, so it is taken in its adjoint form: the cut's forward weights
    (:func:`_cut_terms`, ``O(B^2 P^3)``) once per layer, then one ``O(B P^3)`` contraction per depth, where
    contracting every depth's ``G`` with the forward kernels (:func:`layer_moments_by_depth`, the same sums
    in the order the derivation writes them) costs ``O(B^2 P^3)`` per layer *and depth*."""
    depths, x, fw = _prepare(spec, x, depths, forward)
    if "loop3" in fw or "loop_rows" in fw:
        return _drawn_smooth_moments(spec, fw, depths)
    B, P, n, D = spec.batch, spec.positions, spec.width, x.shape[0]
    X, T = fw["X"], fw["T"]
    zdiag = _gain_diagonals(spec, T, depths[-1])          # [s, beta]
    s_out = {L: np.zeros((D, L)) for L in depths}
    for u, at, G, above, gcut in _backward_descent(spec, fw["masks"], T, depths):
        top, per_beta = _cut_terms(X[u - 1], fw["asin"][u - 1] if spec.activation == "relu" else None, G, gcut)
        for i, L in enumerate(at):
            s_out[L][:, u - 1] += top[i]                                    # the cut at the top
        for i, L in enumerate(above):
            s_out[L][:, u:L] += per_beta[i] @ zdiag[1:L - u + 1].T          # l = u + s, s = 1..L-u
    return {L: n**2 / (B * P) * s_out[L] for L in depths}


def _backward_descent(spec: ArchSpec, masks: list, T: "ShiftMap", depths: list[int]):
    """The backward kernels of every depth carried down together: for each layer ``u`` from the deepest depth down,
    ``(u, at, G, above, gcut)`` with ``at`` the depths ``>= u`` and ``G`` their ``G_u`` stacked (``[depth, draw, b,
    p, p']``), ``above`` the depths ``> u`` (whose backward chain crosses the cut at ``u``) and ``gcut`` their
    ``Gcut_u = c T*(G_(u+1))`` stacked (``None`` where there is none)."""
    B, P, c, diag = spec.batch, spec.positions, spec.c, np.arange(spec.batch)
    G = {}                                                # L -> G^(L)_(u+1), then G^(L)_u: [draw, b, p, p']
    for u in range(depths[-1], 0, -1):
        above = [L for L in depths if L > u]
        gcut = None
        if above:
            gcut = T(np.stack([G[L] for L in above]))
            gcut *= c
        for i, L in enumerate(above):
            G[L] = masks[u - 1][:, diag, diag] * gcut[i]
        if u in depths:
            G[u] = spec.outputs * spec.readout_variance / (B * P) ** 2 * masks[u - 1][:, diag, diag]
        at = [L for L in depths if L >= u]
        yield u, at, np.stack([G[L] for L in at]), above, gcut


def _prepare(spec: ArchSpec, x, depths, forward) -> tuple:
    """The checked depths (sorted), inputs and forward kernels of :func:`layer_moments_at_depths`."""
    check_drawn_spec(spec)
    depths = sorted({int(d) for d in depths})
    if not depths or depths[0] < 1:
        raise ValueError(f"depths must be integers >= 1, got {depths}")
    x = _check_inputs(spec, x)
    if forward is None:
        forward = _forward_smooth if spec.activation in DRAWN_ACTIVATIONS else _forward
    return depths, x, forward(spec, x, depths[-1])


def _cut_terms(Xu: np.ndarray, asin: np.ndarray | None, G: np.ndarray, gcut: np.ndarray | None) -> tuple:
    """The cut at layer ``u`` for a stack of depths' backward kernels: ``(top, per_beta)``, ``top[i, draw] =
    sum_(b,a,d) G[i][b,a,d] V[b,a,d]`` with ``V = sum_(b', beta) X[b,b',a,beta] X[b,b',d,beta]`` (the cut at the
    top: :func:`_diag_quadratic` summed) and ``per_beta[i, draw, beta] = sum_(b,a,d) gcut[i][b,a,d] W[b,beta,a,d]``,
    ``W = sum_b' X[b,b',a,beta] X[b,b',d,beta] Q3(a, beta, d)`` (:func:`_cut_sum` summed over the samples; ``Q3``
    linear in the arcsines of ``asin``, ``None`` for linear: ``Q3 = 1``).  ``Xu``: ``X_u`` ``[draw, b, b', a,
    beta]``; ``G``, ``gcut``: ``[depth, draw, b, a, d]`` (``gcut`` ``None``: no depth above the cut).  The
    forward weights ``V, W`` are formed once per draw (``O(B^2 P^3)``, held one draw at a time: ``B P^3``
    entries, or a few draws' where they are small) and contracted with every depth's kernel, in
    :func:`cut_dtype`'s precision (single on large grids, where the contractions accumulate in single precision and
    the sums over samples and layers in double)."""
    D, B, P = Xu.shape[0], Xu.shape[1], Xu.shape[-1]
    top = np.empty((len(G), D))
    per_beta = None if gcut is None else np.empty((len(gcut), D, P))
    if asin is not None:
        const, coef = (float(v) for v in orthant3_in_arcsines())
        within = np.arange(B)
    dtype = cut_dtype(B, P)
    step = max(1, int(CUT_HELD_ENTRIES // (B * P**3)))
    for z in (slice(i, i + step) for i in range(0, D, step)):
        Xt = np.ascontiguousarray(Xu[z].transpose(0, 1, 4, 3, 2), dtype=dtype)  # [draw, b, beta, a, b']
        W = Xt @ np.swapaxes(Xt, -1, -2)                                    # [draw, b, beta, a, d]
        m = len(Xt)
        top[:, z] = np.einsum("izx,zx->iz", G[:, z].reshape(len(G), m, -1),
                              W.sum(axis=2).astype(np.float64, copy=False).reshape(m, -1))
        if gcut is None:
            continue
        if asin is not None:                   # Q3 = const + coef (asin r(a,beta) + asin r(d,beta) + asin r(a,d))
            At = asin[z].transpose(0, 1, 4, 3, 2).astype(dtype)
            W *= (const + coef * asin[z][:, within, within]).astype(dtype)[:, :, None]
            W += dtype(2.0 * coef) * (Xt @ np.swapaxes(Xt * At, -1, -2))     # G symmetric: a <-> d
        per_beta[:, z] = np.moveaxis((W.reshape(m, B, P, P * P) @ np.moveaxis(
            gcut[:, z].reshape(len(gcut), m, B, P * P), 0, -1).astype(dtype)).sum(axis=1, dtype=np.float64), -1, 0)
    return top, per_beta


#: entries of the cut's forward weights (``B P^3`` per draw) :func:`_cut_terms` holds at once
CUT_HELD_ENTRIES = 2**20
#: from this many entries of a cut's forward weights (``B P^3`` per draw) they are formed and contracted in single
#: precision (:func:`cut_dtype`): there the cut's products take most of the drawn law's time (a 2-D chain on 8 x 8 at
#: batch 8 holds ``2^21``), and single precision halves to quarters them
#: (``python validate/benchmark_law_costs.py --precision`` times both in one run and prints how far the values move);
#: below it the saving is small and double precision keeps every recorded draw's value to its last bits
CUT_SINGLE_FROM = 2**18


def cut_dtype(batch: int, positions: int) -> type:
    """The precision a cut's forward weights are formed and contracted in: ``numpy.float32`` from
    :data:`CUT_SINGLE_FROM` entries (``B P^3``), else ``numpy.float64``.  A cut's entries are sums of at most ``B``
    products and its contractions sums of ``B P^2`` terms, accumulated in single precision (unit roundoff
    ``2^-24``) before the sums over samples and layers in double; tests hold a draw's ``s_l`` to ``1e-5`` of the
    double-precision sums over random grids and all four activations, and ``python validate/benchmark_law_costs.py
    --precision`` prints how far the values move on the grids it times."""
    return np.float32 if batch * positions**3 >= CUT_SINGLE_FROM else np.float64


def layer_moments_by_depth(spec: ArchSpec, x: np.ndarray, depths, forward=None) -> dict[int, np.ndarray]:
    """:func:`layer_moments_at_depths` summed as the derivation writes it: each depth's backward kernels, then
    every cut's quadratic forms in the forward kernels (``O(B^2 P^3)`` per layer and depth).  The reference the
    adjoint form is tested against, and the naive way ``validate/benchmark_law_costs.py --adjoint`` times."""
    depths, x, fw = _prepare(spec, x, depths, forward)
    if "loop3" in fw or "loop_rows" in fw:
        return _drawn_smooth_moments_by_depth(spec, fw, depths)
    B, P, n, c, act = spec.batch, spec.positions, spec.width, spec.c, spec.activation
    X, masks, T = fw["X"], fw["masks"], fw["T"]
    zdiag = _gain_diagonals(spec, T, depths[-1])          # [s, beta]
    out = {}
    for L in depths:
        G = _backward_kernels(spec, masks, T, L)
        s_out = np.zeros((x.shape[0], L))
        for u in range(1, L + 1):
            s_out[:, u - 1] += _diag_quadratic(G[u], X[u - 1]).sum(axis=(1, 2, 3))   # the cut at the top
            if u == L:
                continue
            gcut = c * T(G[u + 1])
            R = _cut_sum(gcut, X[u - 1], fw["asin"][u - 1] if act == "relu" else None)   # [draw, b, b', beta]
            per_beta = R.sum(axis=(1, 2))                                  # [draw, beta]
            s_out[:, u:L] += per_beta @ zdiag[1:L - u + 1].T                # l = u + s, s = 1..L-u
        out[L] = n**2 / (B * P) * s_out
    return out


def _drawn_smooth_moments(spec: ArchSpec, fw: dict, depths: list[int]) -> dict[int, np.ndarray]:
    """:func:`layer_moments_at_depths` for an activation with ``phi'^2 != phi'`` (GELU, tanh): the sums of
    :func:`_drawn_smooth_moments_by_depth` in adjoint form -- the backward kernels of every depth carried down
    together, and each cut's four-point loop (from the layer's drawn rows, ``fw["loop_rows"]``, or given,
    ``fw["loop3"]``) formed once, one draw at a time, times the forward kernels, then contracted with every
    depth's ``Gcut``: one layer's loop is held at a time (``B^2 P^3`` entries per draw)."""
    B, P, n = spec.batch, spec.positions, spec.width
    X, T, D = fw["X"], fw["T"], fw["X"][0].shape[0]
    gains = _smooth_gains(spec, T, fw["dphi2"], depths[-1])
    s_out = {L: np.zeros((D, L)) for L in depths}
    dtype = cut_dtype(B, P)
    for u, at, G, above, gcut in _backward_descent(spec, fw["masks"], T, depths):
        top, _ = _cut_terms(X[u - 1], None, G, None)
        for i, L in enumerate(at):
            s_out[L][:, u - 1] += top[i]                                    # the cut at the top
        if not above:
            continue
        r = np.empty((len(above), D, B, P))                              # [depth, draw, b', beta]
        for z in range(D):
            loop = (fw["loop3"][u - 1][z].astype(dtype, copy=False) if "loop3" in fw
                    else loop_of_rows(fw["loop_rows"][u - 1][z:z + 1].astype(dtype, copy=False))[0])
            Xm = np.moveaxis(X[u - 1][z], 1, 2).astype(dtype, copy=False)  # X[b, b', a, beta] as [b, a, b', beta]
            w = loop * Xm[:, :, None]                                    # loop[b, x, y, b', beta] X[b, b', x, beta]
            w *= Xm[:, None, :]                                          # ... X[b, b', y, beta]
            r[:, z] = (gcut[:, z].reshape(len(above), -1).astype(dtype, copy=False)
                       @ w.reshape(B * P * P, B * P)).reshape(len(above), B, P)
        for i, L in enumerate(above):
            for l in range(u + 1, L + 1):
                s_out[L][:, l - 1] += (r[i] * gains[l, l - u]).sum(axis=(1, 2))
    return {L: n**2 / (B * P) * s_out[L] for L in depths}


def loop_of_rows(rows: np.ndarray) -> np.ndarray:
    """The four-point loop ``E[phi'(b, a) phi'(b, a') phi'(b', beta)^2]`` as the mean over the drawn rows ``rows``
    (``[draw, n, B, P]``, the rows' ``phi'``): ``[draw, b, a, a', b', beta]``, one matrix product over the rows of the
    pairs ``phi'(b, a) phi'(b, a')`` and the squares ``phi'(b', beta)^2`` (ten times the plain ``einsum``'s speed
    on a 2-D chain)."""
    D, n, B, P = rows.shape
    pairs = (rows[..., :, None] * rows[..., None, :]).reshape(D, n, B * P * P)
    return (np.swapaxes(pairs, 1, 2) @ (rows * rows).reshape(D, n, B * P)).reshape(D, B, P, P, B, P) / n


def _smooth_gains(spec: ArchSpec, T: "ShiftMap", dphi2: list, deepest: int) -> dict:
    """``Z^l_s`` (``[draw, b', beta]``) for ``2 <= l <= deepest``, ``1 <= s < l``: the gains of the levels between a
    cut and layer ``l`` (:func:`_drawn_smooth_moments_by_depth`)."""
    c, eye = spec.c, np.eye(spec.positions)

    def diag_T(v):                                       # diag T(diag v) over the last axis (positions)
        return np.diagonal(T(v[..., :, None] * eye), axis1=-2, axis2=-1)

    top = diag_T(np.ones_like(dphi2[0]))
    gains = {}
    for l in range(2, deepest + 1):
        z = c * top
        gains[l, 1] = z
        for s in range(2, l):
            z = c * diag_T(dphi2[l - s] * z)             # the mask of level l - s + 1
            gains[l, s] = z
    return gains


def _drawn_smooth_moments_by_depth(spec: ArchSpec, fw: dict, depths: list[int]) -> dict[int, np.ndarray]:
    """:func:`_drawn_smooth_moments` in the derivation's order, every layer's loop held (the reference).

    :func:`layer_moments_at_depths` for an activation with ``phi'^2 != phi'`` (GELU, tanh): the same loops
    with two moments that depend on the points once ``phi'^2`` is not scale free --

    * the 4-point loop at the cut, ``E[phi'(h_u(b, a)) phi'(h_u(b, a')) phi'(h_u(b', beta))^2]``
      (``fw["loop3"]``, ``[draw, b, a, a', b', beta]``) in place of the orthant probability;
    * the gain of the levels between the cut ``u`` and layer ``l``, ``Z^l_s`` (``s = l - u``), carried down
      from the top: ``Z^l_1 = c diag T(I)`` (no mask at the top level) and ``Z^l_s = c diag T(diag(E2_(l-s+1)
      Z^l_(s-1)))``, ``E2_k = E[phi'(h_k(b', beta))^2]`` (``fw["dphi2"]``, ``[draw, b, beta]``), in place of
      ``c^s (1/2)^(s-1)`` -- per sample, position and draw.

    The moments are the drawn rows' means (:mod:`amutheory.symbolic.chain.kernel_law_finite`) or, on one
    position at infinite width, :func:`pair_moments`."""
    B, P, n, c = spec.batch, spec.positions, spec.width, spec.c
    X, masks, T = fw["X"], fw["masks"], fw["T"]
    loop3 = fw["loop3"] if "loop3" in fw else [loop_of_rows(rows) for rows in fw["loop_rows"]]
    gains = _smooth_gains(spec, T, fw["dphi2"], depths[-1])
    out = {}
    for L in depths:
        G = _backward_kernels(spec, masks, T, L)
        s_out = np.zeros((X[0].shape[0], L))
        for u in range(1, L + 1):
            s_out[:, u - 1] += _diag_quadratic(G[u], X[u - 1]).sum(axis=(1, 2, 3))   # the cut at the top
            if u == L:
                continue
            gcut = c * T(G[u + 1])                       # [draw, b, a, a']
            r = np.einsum("zbxy,zbxyeq,zbexq,zbeyq->zeq", gcut, loop3[u - 1], X[u - 1], X[u - 1], optimize=True)
            for l in range(u + 1, L + 1):
                s_out[:, l - 1] += (r * gains[l, l - u]).sum(axis=(1, 2))
        out[L] = n**2 / (B * P) * s_out
    return out


def _backward_kernels(spec: ArchSpec, masks: list, T: "ShiftMap", L: int) -> list:
    """The per-sample backward kernels ``G[i]`` (``[draw, b, p, p']``, ``i = 1..L``) of a net of depth ``L``:
    the readout's at the top, then ``G_i = M_i (.) c T*(G_(i+1))`` with the within-sample masks."""
    B, P, diag = spec.batch, spec.positions, np.arange(spec.batch)
    G = [None] * (L + 1)
    G[L] = spec.outputs * spec.readout_variance / (B * P) ** 2 * masks[L - 1][:, diag, diag]
    for i in range(L - 1, 0, -1):
        G[i] = masks[i - 1][:, diag, diag] * (spec.c * T(G[i + 1]))
    return G


def _check_inputs(spec: ArchSpec, x) -> np.ndarray:
    B, C0 = spec.batch, spec.input_channels
    x = np.asarray(x, dtype=float)
    if x.ndim != 3 + spec.dim or x.shape[1:3] != (B, C0):
        raise ValueError(f"x must have shape (draws, {B}, {C0}) + {(spec.spatial,) * spec.dim}, got {x.shape}")
    return x.reshape(x.shape[0], B, C0, spec.positions)


def _gain_diagonals(spec: ArchSpec, T: "ShiftMap", depth: int) -> np.ndarray:
    """``diag Z_s``, ``s = 0..depth-1``: ``Z_0 = I``, ``Z_s = c T*(E[phi'^2] Z_{s-1})`` (no mask at
    ``s = 1``: the top level has none)."""
    dphi2 = get_activation(spec.activation).moment("dphi2").value   # E[phi'^2]: scale-free for linear, ReLU
    Z = [np.eye(spec.positions)]
    for s in range(1, depth):
        Z.append(spec.c * T(Z[-1] if s == 1 else dphi2 * Z[-1]))
    return np.array([np.diagonal(z) for z in Z])


def _cut_sum(gcut: np.ndarray, Xu: np.ndarray, asin: np.ndarray | None) -> np.ndarray:
    """``sum_{a,d} Gcut[a,d] X[a,beta] X[d,beta] Q3(a, beta, d)`` per ``(draw, b, b', beta)``; ``Q3 =
    1`` (linear) or the orthant probability :func:`orthant3`, linear in the arcsines
    (:func:`orthant3_in_arcsines`: ``1/8 + (asin r(a,beta) + asin r(d,beta) + asin r(a,d)) / (4 pi)``),
    expanded into three quadratic forms."""
    if asin is None:
        return _diag_quadratic(gcut, Xu)
    const, coef = (float(v) for v in orthant3_in_arcsines())
    diag = np.arange(gcut.shape[1])
    a0 = asin[:, diag, diag]                             # r(a, d) within sample b
    return (const * _diag_quadratic(gcut, Xu)
            + 2.0 * coef * _diag_quadratic(gcut, Xu, Xu * asin)   # asin r(a,beta) and asin r(d,beta)
            + coef * _diag_quadratic(gcut * a0, Xu))


def _diag_quadratic(G: np.ndarray, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
    """``sum_{a,d} G[., b, a, d] X[., b, b', a, beta] Y[., b, b', d, beta]`` -> ``[., b, b', beta]``."""
    Y = X if Y is None else Y
    GY = np.matmul(G[:, :, None], Y)                     # [draw, b, b', a, beta]
    return np.einsum("zbcaq,zbcaq->zbcq", X, GY)


# --------------------------------------------------------------------------- input averages
#: target relative Monte-Carlo standard error of a zero/circular ratio (draws are added in
#: batches of :data:`DRAW_BATCH` until every depth meets it or :data:`MAX_DRAWS` is reached); chosen
#: small against the paired 95% CIs of the measured ratio (the zero-padding campaign's
#: ``report.md``; docs/findings/zero_padding.md)
MC_TARGET = 0.004
DRAW_BATCH = 16
MIN_DRAWS = 32
MAX_DRAWS = 256
#: seed of the theory's own input draws (independent of every measurement seed)
THEORY_SEED = 20261121


def _draw_inputs(spec: ArchSpec, rng: np.random.Generator, count: int, input_var: float) -> np.ndarray:
    shape = (count, spec.batch, spec.input_channels) + (spec.spatial,) * spec.dim
    return rng.standard_normal(shape) * np.sqrt(input_var)




def _s_bar_per_draw(spec: ArchSpec, inputs: np.ndarray, depths: list[int]) -> np.ndarray:
    """``s_bar`` of every draw at every depth, ``(draws, len(depths))``, in chunks of draws."""
    per_draw = (spec.batch * spec.positions) ** 2 * (max(depths) + 2) * (2 if spec.activation == "relu" else 1)
    chunk = max(1, int(CHUNK_ENTRIES // per_draw))
    rows = []
    for start in range(0, len(inputs), chunk):
        per = layer_moments_at_depths(spec, inputs[start:start + chunk], depths)
        rows.append(np.stack([per[d].mean(axis=1) for d in depths], axis=1))
    return np.concatenate(rows, axis=0)


_MC_CACHE: dict = {}


def _worst_ratio_error(z: np.ndarray, c: np.ndarray) -> float:
    ratio, se = _ratio_of_means(z, c)
    return float(np.max(se / ratio))


def _worst_mean_error(z: np.ndarray) -> float:
    return float(np.max(z.std(0, ddof=1) / np.sqrt(len(z)) / z.mean(0)))


def _monte_carlo(specs: tuple, depths: tuple, input_var: float, target: float, seed: int, progress=None) -> dict:
    """``s_bar`` per input draw at ``depths`` for every spec in ``specs`` (one geometry; the same
    draws for all), ``{"depths", "s": [per spec (draws, depths)]}``.  Draws are added until the
    worst relative error -- of the ratio of the two specs' means (two specs) or of the mean (one)
    -- is at most ``target``, or :data:`MAX_DRAWS`.  Cached: a request for depths that a cached
    run already holds is served from it.  ``progress``: one line per batch of draws (one line naming
    the cache when served from it)."""
    key = (specs, input_var, target, seed)
    for held in _MC_CACHE.get(key, []):
        if set(depths) <= set(held["depths"]):
            if progress is not None:
                progress(f"kernel law: {len(held['s'][0])} input draws, served from this process's cache")
            return held
    rng = np.random.default_rng(seed)
    s = [np.empty((0, len(depths))) for _ in specs]
    what = "ratio" if len(specs) == 2 else "mean"
    while True:
        count = MIN_DRAWS if len(s[0]) == 0 else DRAW_BATCH
        inputs = _draw_inputs(specs[0], rng, count, input_var)
        s = [np.vstack([prev, _s_bar_per_draw(sp_, inputs, list(depths))]) for prev, sp_ in zip(s, specs)]
        worst = _worst_ratio_error(*s) if len(specs) == 2 else _worst_mean_error(s[0])
        if progress is not None:
            progress(f"kernel law: {len(s[0])} input draws, worst relative Monte-Carlo error of the {what} "
                     f"{100 * worst:.2f}% (target {100 * target:.2f}%)")
        if worst <= target or len(s[0]) >= MAX_DRAWS:
            held = {"depths": tuple(depths), "s": s}
            _MC_CACHE.setdefault(key, []).append(held)
            return held


def _ratio_of_means(z: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mean z / mean c`` and its delta-method standard error over paired draws."""
    ratio = z.mean(0) / c.mean(0)
    resid = (z - ratio * c) / c.mean(0)
    se = resid.std(0, ddof=1) / np.sqrt(len(z)) if len(z) > 1 else np.full_like(ratio, np.inf)
    return ratio, se


def boundary_law_method(spec: ArchSpec) -> str | None:
    """How the exact law of ``spec`` (its zero/circular ratio, or its mean) is computed:
    ``"operator"`` (linear, ``c = 1``: the operator law, input average exact), ``"kernel"`` (ReLU:
    the kernel law, Monte Carlo over inputs, for ``B N^d <=`` :data:`KERNEL_MAX_BP`) or ``None``
    (no exact law: GELU, tanh, linear at ``c != 1``; ReLU grids too large to compute)."""
    if spec.family != "conv":
        return None
    if operator_applies(spec):
        return "operator"
    if spec.activation == "relu" and spec.batch * spec.positions <= KERNEL_MAX_BP:
        return "kernel"
    return None


def exact_boundary_ratio(spec: ArchSpec, depths, input_var: float = 1.0, target: float = MC_TARGET,
                         seed: int = THEORY_SEED, progress=None) -> dict:
    """``E[s_bar_zero(L)] / E[s_bar_circular(L)]`` at infinite width, same geometry, every ``L`` in
    ``depths``: ``{"ratio", "ratio_se", "zero", "circular", "draws", "method"}`` (``zero`` and
    ``circular`` are the mean ``s_bar``; ``ratio_se`` the Monte-Carlo error, 0 when exact).
    ``progress``: optional callable, one line per batch of input draws (kernel law only)."""
    method = boundary_law_method(spec)
    if method is None:
        if spec.activation == "relu":
            check_kernel_spec(spec)                      # raises: the grid is too large for the kernel law
        raise ValueError(f"activation: no exact boundary law for {spec.activation!r} "
                         "(derived for linear and relu conv chains)")
    depths = integer_depths(depths)
    if method == "operator":
        z = operator_s_bar(spec.with_(padding="zero"), depths, input_var)
        c = operator_s_bar(spec.with_(padding="circular"), depths, input_var)
        return {"ratio": z / c, "ratio_se": np.zeros(len(depths)), "zero": z, "circular": c, "draws": 0,
                "method": method}
    # the cache key is the geometry, not the depth of the spec that asked
    geometry = spec.with_(depth=1)
    got = _monte_carlo((geometry.with_(padding="zero"), geometry.with_(padding="circular")),
                       tuple(sorted(set(depths))), float(input_var), float(target), int(seed), progress)
    cols = [got["depths"].index(d) for d in depths]
    z, c = (a[:, cols] for a in got["s"])
    ratio, se = _ratio_of_means(z, c)
    return {"ratio": ratio, "ratio_se": se, "zero": z.mean(0), "circular": c.mean(0), "draws": len(z),
            "method": method}


#: target relative Monte-Carlo error of an absolute mean ``s_bar``: small against the 95% CI of a
#: measured seed mean at the campaign's 32-64 seeds (``validate/studies/finite_width_mean.py``
#: measures them; docs/findings/conv_chains.md, the finite-width factor of the mean)
MC_TARGET_MEAN = 0.02


def kernel_s_bar(spec: ArchSpec, depths, input_var: float = 1.0, target: float = MC_TARGET_MEAN,
                 seed: int = THEORY_SEED, progress=None) -> dict:
    """``E[s_bar(L)]`` at infinite width of a linear or ReLU conv chain (either padding) at every
    ``L`` in ``depths``: ``{"s_bar", "se", "draws"}``, the Monte-Carlo mean over input draws and its
    standard error (draws added until ``se <= target * s_bar`` at every depth); GELU and tanh on one
    position (an MLP's chain) by the Gaussian moments of :func:`pair_moments`."""
    check_drawn_spec(spec)
    depths = integer_depths(depths)
    got = _monte_carlo((spec.with_(depth=1),), tuple(sorted(set(depths))), float(input_var), float(target),
                       int(seed), progress)
    per = got["s"][0][:, [got["depths"].index(d) for d in depths]]
    return {"s_bar": per.mean(0), "se": per.std(0, ddof=1) / np.sqrt(len(per)), "draws": len(per)}
