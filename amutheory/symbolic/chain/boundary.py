"""Zero padding: the boundary operator, its spectrum, and the correction to the depth law.

With zero ("same") padding a position near the edge sees part of its k-window outside the grid.
At criticality (``c E[phi^2] = 1`` per unit variance, ``c E[phi'^2] = 1``) the mean-field second
moments per position obey, in 1D,

    q_{l+1}(p) = (1/k) sum_{|s| <= r} q_l(p + s) 1[0 <= p + s < N],      r = (k - 1)/2,

``q_{l+1} = A q_l`` with the banded sub-stochastic operator ``A`` (:func:`averaging_operator`):
the transition matrix of a random walk with uniform steps in ``{-r..r}`` that is killed when it
leaves the grid.  The backward pass uses the adjoint, ``A^T = A``.  The forward profile of
``h_l`` is ``q_l = A^l 1`` (flat input, zero padded), the backward profile of the gradient at
``h_l`` is ``G_l = A^(L-l) 1`` (the global-average-pool head feeds every position equally).
In 2D with a k x k kernel the window factorises, so every profile is the tensor product of two
1D profiles and every position average is the square of the 1D one -- exact for this operator.

Spectrum (derived in SymPy from the operator's symbol ``sigma(theta) = (1/k) sum_s cos(s theta)
= sin(k theta/2) / (k sin(theta/2))``): the lowest Dirichlet mode has ``theta ~ pi/N``, so

    lambda_max = 1 - pi^2 (k^2 - 1) / (24 N^2) + O(N^-3)

(exact for k = 3: ``(1 + 2 cos(pi/(N+1)))/3``).  The position-averaged forward deficit after
``l`` layers is, while ``l (k^2-1) << N^2``, the mass a diffusion with step variance
``(k^2-1)/12`` loses through two absorbing walls: ``1 - <A^l 1> ~ (2/N) sqrt(l (k^2-1)/(6 pi))``;
for ``l (k^2-1) >~ N^2`` it decays like ``lambda_max^l`` instead.

The correction to the one-step moment is derived *exactly* (at infinite width, any ``N, k, L``) for
linear chains by :mod:`amutheory.symbolic.chain.operator_law` and for ReLU chains by
:mod:`amutheory.symbolic.chain.kernel_law`; :func:`exact_ratio_and_shift` and :func:`exact_regime` use
them.  What follows is the older position-local **model**, kept for activations without an exact
law (GELU, tanh) and for comparison (measured, it under-states the loss).

The position-local model (leading order in the position-local mean field):
every pair ``(j, j')`` of updated layers with ``m = max(j, j')`` contributes to ``s_l``

    w_j w_j' (a + b sum_{i=m+1}^{l} omega_{l-i}) * beta_l,
    beta_l = < q_l^2 G_l >  (update of layer l ~ patch Gram x gradient, squared),
    omega_t = < A^t 1 >     (a fluctuation injected t layers below l reaches l attenuated),

with ``< . >`` the mean over positions.  Circular padding has ``A 1 = 1``, so ``beta = omega = 1``
and the homogeneous law comes back exactly.  What the model leaves out: cross-position
correlations of the pre-activations (the spatially coherent mode that ReLU's non-zero mean
feeds) -- measured, it under-states the boundary loss of ReLU chains; see docs/findings/zero_padding.md.

Regime: the top layer's own factor ``beta_L`` decays like ``lambda_max^(2L)``, but the ratio of
``s_bar`` is dominated at large ``L`` by the shallow layers (``l <~ 1/(1 - lambda_max)``) and decays
like ``C lambda_max^L L^-4`` (``lambda_max^L = exp(-L pi^2 (k^2-1)/(24 N^2))`` at leading order;
derivations/03 checks the ratio of successive depths against ``lambda (1 - 4/L)``).  While
``L k^2 << N^2`` the deficit grows like ``k sqrt(L) / N`` instead.  Either way the correction is
"constant-level" (the paper's claim) only while ``L k^2 / N^2 << 1``: :func:`regime` measures it
by the shift of the local slope of ``eta*`` the boundary factor causes; with the tolerance
:data:`SLOPE_TOLERANCE` the model's threshold is a fixed value of ``L (k^2-1) / N^2``, the same for
every ``k`` (computed, not measured: derivations/03 prints it and checks it lies near 0.05).
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
import sympy as sp

from amutheory.stats import central_eta_slope, eta_slope_between, integer_neighbours
from amutheory.symbolic.primitives.expansion import pairs_with_max
from amutheory.symbolic.primitives.symbols import epsilon, m

k_sym = sp.Symbol("k", positive=True, integer=True)
N_sym = sp.Symbol("N", positive=True)
theta = sp.Symbol("theta", positive=True)
s_sym = sp.Symbol("s", integer=True)
l_sym = sp.Symbol("l", positive=True)

#: tolerated shift of the local slope of eta* for the boundary correction to count as
#: "constant-level": a convention, of the size of a measured slope's 95% CI at the campaign's 32
#: seeds (the zero-padding campaign's ``report.md`` lists the measured shifts with their CIs)
SLOPE_TOLERANCE = 0.05


# --------------------------------------------------------------------------- symbolic (SymPy)
@functools.lru_cache(maxsize=None)
def operator_symbol() -> sp.Expr:
    """Symbol of the interior averaging operator: ``(1/k) sum_{s=-r}^{r} cos(s theta)`` in closed form."""
    r = (k_sym - 1) / 2
    total = sp.summation(sp.exp(sp.I * s_sym * theta), (s_sym, -r, r))
    return sp.simplify(sp.re(sp.simplify(total.rewrite(sp.sin))) / k_sym)


@functools.lru_cache(maxsize=None)
def step_variance() -> sp.Expr:
    """Variance of one step of the walk, ``(1/k) sum_{s=-r}^{r} s^2 = (k^2 - 1)/12`` (derived)."""
    r = (k_sym - 1) / 2
    return sp.factor(sp.summation(s_sym**2, (s_sym, -r, r)) / k_sym)


@functools.lru_cache(maxsize=None)
def symbol_series(order: int = 4) -> sp.Expr:
    """Taylor series of the symbol in ``theta`` up to ``theta^order`` (derived)."""
    sym = sp.sin(k_sym * theta / 2) / (k_sym * sp.sin(theta / 2))
    return sp.expand(sp.series(sym, theta, 0, order + 1).removeO())


@functools.lru_cache(maxsize=None)
def top_eigenvalue_asymptotic(order: int = 2) -> sp.Expr:
    """``lambda_max`` to order ``N^-order`` (2 or 4): the symbol at the lowest Dirichlet mode
    ``theta = pi/N``; ``order=2`` gives ``1 - pi^2 (k^2 - 1)/(24 N^2)``.  The effective length of
    the box (``N + O(k)``) enters at ``O(N^-3)``, so that is the error of the ``order=2`` form."""
    if order not in (2, 4):
        raise ValueError(f"order must be 2 or 4, got {order!r}")
    return sp.expand(symbol_series(order).subs(theta, sp.pi / N_sym))


@functools.lru_cache(maxsize=None)
def early_deficit_asymptotic() -> sp.Expr:
    """``1 - <A^l 1> ~ (2/N) sqrt(2 l sigma_s^2 / pi)``, ``sigma_s^2`` = :func:`step_variance`:
    the expected maximum excursion of a diffusion, per absorbing wall (valid while
    ``l (k^2-1) << N^2``).  It converges slowly and from above: the exact deficit is
    ``(2/N) [sqrt(2 sigma_s^2 l / pi) - delta_k / 2] + o(1)`` with the box's effective extension
    ``delta_k`` (exactly 1 for k = 3; for larger k computed numerically, not in closed form), so the
    ratio exact/asymptotic approaches 1 only like ``1 - c_k / sqrt(l)``: derivations/03 computes
    ``delta_k`` for k = 3, 5, 7 and the ratio along ``l``."""
    return sp.simplify(2 / N_sym * sp.sqrt(2 * l_sym * step_variance() / sp.pi))


@functools.lru_cache(maxsize=None)
def regime_exponent() -> sp.Expr:
    """``-L ln lambda_max`` at leading order: ``L pi^2 (k^2 - 1) / (24 N^2)`` (``L`` = :data:`l_sym`)."""
    return sp.expand(-l_sym * (top_eigenvalue_asymptotic(2) - 1))


@functools.lru_cache(maxsize=None)
def _pairs_fn():
    return sp.lambdify((m, epsilon), pairs_with_max(m), "numpy")


# --------------------------------------------------------------------------- exact finite N
def _check(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_geometry(spatial, kernel, dim=1):
    spatial = _check(spatial_name := "spatial", spatial)
    kernel = _check("kernel", kernel)
    if kernel % 2 == 0:
        raise ValueError(f"kernel must be odd, got {kernel}")
    if kernel > spatial:
        raise ValueError(f"kernel must be <= {spatial_name} ({spatial}), got {kernel}")
    if isinstance(dim, bool) or not isinstance(dim, (numbers.Integral, np.integer)) or dim not in (1, 2):
        raise ValueError(f"dim must be 1 or 2 (an integer), got {dim!r}")
    return spatial, kernel


def averaging_operator(spatial: int, kernel: int, padding: str = "zero") -> np.ndarray:
    """The 1D operator ``A`` (``N x N``): ``A[p, p'] = 1/k`` for ``|p - p'| <= r`` inside the grid
    (zero padding) or modulo ``N`` (circular padding, where ``A 1 = 1``)."""
    spatial, kernel = _check_geometry(spatial, kernel)
    if padding not in ("zero", "circular"):
        raise ValueError(f"padding must be 'zero' or 'circular', got {padding!r}")
    r = kernel // 2
    A = np.zeros((spatial, spatial))
    for p in range(spatial):
        for s in range(-r, r + 1):
            q = p + s
            if padding == "circular":
                A[p, q % spatial] += 1.0 / kernel
            elif 0 <= q < spatial:
                A[p, q] = 1.0 / kernel
    return A


@functools.lru_cache(maxsize=256)
def top_eigenvalue(spatial: int, kernel: int) -> float:
    """Exact ``lambda_max`` of the zero-padding operator (symmetric banded matrix: LAPACK's banded
    solver for the top eigenvalue only)."""
    from scipy.linalg import eigvals_banded

    spatial, kernel = _check_geometry(spatial, kernel)
    r = kernel // 2
    band = np.full((r + 1, spatial), 1.0 / kernel)  # lower form: band[i, j] = A[j + i, j]
    for i in range(1, r + 1):
        band[i, spatial - i:] = 0.0
    return float(eigvals_banded(band, lower=True, select="i", select_range=(spatial - 1, spatial - 1))[0])


def powers_applied_to_one(spatial: int, kernel: int, steps: int, padding: str = "zero") -> np.ndarray:
    """``[A^t 1 for t = 0..steps]`` as an array ``(steps + 1, N)``."""
    steps = _check("steps", steps, 0)
    A = averaging_operator(spatial, kernel, padding)
    out = np.empty((steps + 1, spatial))
    out[0] = 1.0
    for t in range(1, steps + 1):
        out[t] = A @ out[t - 1]
    return out


def mean_deficit(spatial: int, kernel: int, steps: int, dim: int = 1) -> np.ndarray:
    """``1 - <A^t 1>`` for ``t = 0..steps`` (position-averaged forward deficit), in ``dim`` D."""
    _check_geometry(spatial, kernel, dim)
    return 1.0 - powers_applied_to_one(spatial, kernel, steps).mean(axis=1) ** dim


def boundary_factors(spatial: int, kernel: int, depth: int, dim: int = 1, padding: str = "zero") -> dict:
    """``beta_l`` (``l = 1..L``) and ``omega_t`` (``t = 0..L-1``) of the model (module docstring)."""
    _check_geometry(spatial, kernel, dim)
    depth = _check("depth", depth)
    P = powers_applied_to_one(spatial, kernel, depth, padding)  # P[t] = A^t 1
    q = P[1:]                     # q_l = A^l 1, l = 1..L
    G = P[depth - 1::-1]          # G_l = A^(L-l) 1, l = 1..L
    beta = np.mean(q * q * G, axis=1) ** dim
    omega = P[:depth].mean(axis=1) ** dim
    return {"beta": beta, "omega": omega}


def layer_moments(a: float, b: float, e: float, eps: float, spatial: int, kernel: int, depth: int,
                  dim: int = 1, padding: str = "zero") -> np.ndarray:
    """Per-layer ``s_l`` (``l = 1..L``) of the boundary model with constants ``a, b, e, epsilon``.

    The pair weights ``sum_{max(j,j') = m} w_j w_j'`` are the SymPy expression of
    :func:`amutheory.symbolic.primitives.expansion.pairs_with_max` (lambdified); with circular padding this
    equals the homogeneous law term by term."""
    f = boundary_factors(spatial, kernel, depth, dim, padding)
    beta, omega = f["beta"], f["omega"]
    ms = np.arange(1, depth + 1, dtype=float)
    weights = np.where(ms == 1, eps**2, _pairs_fn()(ms, eps))
    cum = np.concatenate([[0.0], np.cumsum(omega)])  # cum[t] = sum_{u < t} omega_u
    s = np.empty(depth)
    for li in range(1, depth + 1):
        mm = np.arange(1, li + 1)
        # sum_{i=m+1}^{l} omega_{l-i} = sum_{t=0}^{l-m-1} omega_t = cum[l - m]
        s[li - 1] = beta[li - 1] * (np.sum(weights[:li] * (a + b * cum[li - mm])) + e)
    return s


def boundary_ratio(a: float, b: float, e: float, eps: float, spatial: int, kernel: int, depths,
                   dim: int = 1) -> np.ndarray:
    """``s_bar_zero(L) / s_bar_circular(L)`` at every depth (same constants): the predicted
    zero/circular ratio of ``s_bar``; the ``eta*`` ratio is its inverse square root."""
    out = []
    for d in depths:
        d = _check("depth", d)
        z = layer_moments(a, b, e, eps, spatial, kernel, d, dim, "zero").mean()
        c = layer_moments(a, b, e, eps, spatial, kernel, d, dim, "circular").mean()
        if c <= 0:
            raise ValueError(f"s_bar({d}) = 0 with these constants (depth 1 needs e > 0 or epsilon > 0): "
                             "the ratio is undefined")
        out.append(z / c)
    return np.asarray(out)


@functools.lru_cache(maxsize=None)
def _asymptotic_fns():
    lam2 = sp.lambdify((k_sym, N_sym), top_eigenvalue_asymptotic(2), "numpy")
    expo = sp.lambdify((l_sym, k_sym, N_sym), regime_exponent(), "numpy")
    return lam2, expo


def regime(depth: int, kernel: int, spatial: int, dim: int = 1, constants=None,
           tolerance: float = SLOPE_TOLERANCE) -> dict:
    """Where zero padding stands at ``(L, k, N)``: the regime parameter ``L k^2 / N^2``, the
    exponent ``L pi^2 (k^2-1) / (24 N^2)``, the exact and asymptotic ``lambda_max``, the predicted
    eta* ratio and the shift of the local slope ``d ln eta*/d ln L`` the boundary causes
    (central difference of the model), and ``constant_level``: ``|shift| <= tolerance``.
    ``constants``: ``(a, b, e, epsilon)``; default the ReLU MLP limit ``(1, 2, 0, 0)``."""
    spatial, kernel = _check_geometry(spatial, kernel, dim)
    depth = _check("depth", depth)
    a_, b_, e_, eps_ = (1.0, 2.0, 0.0, 0.0) if constants is None else constants
    lam2, expo = _asymptotic_fns()
    # central difference; one-sided where s_bar(L - 1) = 0 (L = 2 with e = epsilon = 0: s_1 = 0)
    lo = depth - 1 if depth > 1 and (e_ > 0 or eps_ > 0 or depth > 2) else depth
    hi = depth + 1
    r_lo, r_mid, r_hi = boundary_ratio(a_, b_, e_, eps_, spatial, kernel, [lo, depth, hi], dim)
    # eta* ratio = ratio^(-1/2): slope shift = -(1/2) d ln ratio / d ln L
    shift = eta_slope_between(r_lo, r_hi, lo, hi)
    return {
        "depth": depth, "kernel": kernel, "spatial": spatial, "dim": dim,
        "regime_parameter": depth * kernel**2 / spatial**2,
        "regime_exponent": float(expo(depth, kernel, spatial)),
        "top_eigenvalue": top_eigenvalue(spatial, kernel),
        "top_eigenvalue_asymptotic": float(lam2(kernel, spatial)),
        "s_bar_ratio": float(r_mid),
        "eta_ratio": float(r_mid ** -0.5),
        "slope_shift": float(shift),
        "constant_level": bool(abs(shift) <= tolerance),
    }


def exact_ratio_and_shift(spec, depths, input_var: float = 1.0, progress=None) -> dict:
    """The *exact* infinite-width zero/circular ratio of ``s_bar`` of ``spec``'s geometry
    (:func:`amutheory.symbolic.chain.kernel_law.exact_boundary_ratio`: the operator law for linear chains,
    the kernel law for ReLU chains) at ``depths`` and the shift of ``d ln eta*/d ln L`` it causes
    (central difference over ``L -+ 1``, one-sided at ``L = 1``), computed in one input average.
    Keys: ``ratio``, ``ratio_se`` (Monte-Carlo), ``slope_shift``, ``method``, ``draws``."""
    from amutheory.symbolic.chain.kernel_law import exact_boundary_ratio

    depths = [_check("depth", d) for d in depths]
    lo, hi = integer_neighbours(depths)
    grid = sorted(set(lo) | set(depths) | set(hi))
    got = exact_boundary_ratio(spec, grid, input_var, progress=progress)
    at = dict(zip(grid, got["ratio"]))
    se = dict(zip(grid, got["ratio_se"]))
    shift = central_eta_slope(at, depths)
    return {"ratio": np.array([at[d] for d in depths]), "ratio_se": np.array([se[d] for d in depths]),
            "slope_shift": np.asarray(shift, dtype=float) * np.ones(len(depths)), "method": got["method"],
            "draws": got["draws"]}


def exact_regime(spec, depths, input_var: float = 1.0, tolerance: float = SLOPE_TOLERANCE,
                 progress=None) -> list[dict]:
    """:func:`regime` with the exact boundary ratio (:func:`exact_ratio_and_shift`) in place of the
    position-local model, one row per depth (the same keys, plus ``s_bar_ratio_se``, ``method``,
    ``draws`` and the local model's ``s_bar_ratio_local_model`` for comparison)."""
    got = exact_ratio_and_shift(spec, depths, input_var, progress)
    rows = []
    for i, d in enumerate(depths):
        row = regime(int(d), spec.kernel, spec.spatial, spec.dim, tolerance=tolerance)
        row["s_bar_ratio_local_model"] = row["s_bar_ratio"]
        ratio, shift = float(got["ratio"][i]), float(got["slope_shift"][i])
        row.update({"s_bar_ratio": ratio, "eta_ratio": ratio**-0.5, "slope_shift": shift,
                    "constant_level": bool(abs(shift) <= tolerance), "s_bar_ratio_se": float(got["ratio_se"][i]),
                    "method": got["method"], "draws": got["draws"]})
        rows.append(row)
    return rows
