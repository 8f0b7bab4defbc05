"""The finite-width kernel law of an MLP, written out for one position: the kernel law
(:mod:`amutheory.symbolic.chain.kernel_law`) on ``B x B`` kernels with every *forward* channel mean
drawn at the net's width ``n``, and a choice of how the cut's channel means are taken.

At width ``n`` the forward Gram chain of an MLP is an exact Markov chain: given the post-activation
kernel ``Phi_(u-1)`` (``B x B``), the ``n`` units of ``h_u`` are i.i.d. rows ``N(0, c Phi_(u-1))``
(first layer ``N(0, (c / C_0) x x^T)``), independent of everything below since ``W_u`` is.  One draw
costs ``n B^2`` per layer (not a net's forward pass).  From the same rows ``h_u`` (``n x B``) this law
takes the empirical channel means

* ``Phi_u = (1/n) sum_i phi(h_ui) phi(h_ui)^T`` (the value kernel, the next layer's input),
* ``M_u = (1/n) sum_i phi'(h_ui) phi'(h_ui)^T`` (the mask kernel: the update kernel
  ``X_(u+1) = c M_u (.) X_u + Phi_u`` and, on its diagonal, the backward kernel
  ``G_u(b) = c M_u(b, b) G_(u+1)(b)``, ``G_L(b) = m v_r M_L(b, b) / B^2``),

and runs the kernel law's sums, per draw,

    E[s_l] = (n^2 / B) sum_(b, b') [ G_l(b) X_l(b, b')^2
             + sum_(u < l) c G_(u+1)(b) Z_(l-u)(b') X_u(b, b')^2 Q_u(b, b') ].

The cut's channel means, ``cut=``:

* ``"empirical"`` (the default): the 3-point mask at the cut of an MLP is
  ``(1/n) sum_i phi'(h_ui(b))^2 phi'(h_ui(b')) = M_u(b, b')`` (``relu'^2 = relu'``), and the
  across-pairing diagonal is ``Z_s(b') = c^s prod_(k=u+1)^(u+s-1) M_k(b', b')`` -- every channel
  mean of the kernel law replaced by its value in the drawn forward pass;
* ``"analytic"``: ``Q_u`` the orthant probability at the drawn *correlation* of ``h_u``
  (``1/4 + asin(r_u(b, b')) / (2 pi)``) and ``Z_s = c (c E[phi'^2])^(s-1)``, what
  :mod:`amutheory.symbolic.chain.kernel_law_finite` computes (same random stream: equal to it to
  rounding, a test).

For a linear MLP every mask is 1, both modes coincide, and the mean over draws is the linear net's
law with the forward Gram moments at width ``n`` and the products of Jacobians above each update at
infinite width (:func:`forward_only_linear_s_bar`, from
:mod:`amutheory.symbolic.chain.finite_width`'s transfer matrices; tests).

Left out (both modes): the finite-width terms of the backward side -- the fluctuations of the
products of weight matrices above each update and of the readout seen through them (for the linear
MLP, :func:`backward_only_linear_s_bar` measures their share exactly; for ReLU they are not derived).
Nothing is fitted to probes.  The value is a Monte-Carlo mean over ``draws`` draws of inputs and
forward chains with a fixed seed, and its standard error.
"""

from __future__ import annotations

import numpy as np

from amutheory.spec import ArchSpec

#: the law's own seed (the same as :mod:`amutheory.symbolic.chain.kernel_law_finite`'s, independent of
#: every measurement seed)
SEED = 20261128
#: draws of (inputs, forward chain) by default.  The draws are heavy-tailed like the net's seeds: at
#: 8192 draws the relative Monte-Carlo error of s_bar (ReLU, B = 8, L = 16) is about 9% at n = 16, 3.4% at
#: n = 32, 2% at n = 64, 1.1% at n = 128 -- each well under a 128-seed probe mean's (57%, 35%, 21%, 10%)
DRAWS = 8192
#: seconds per draw and layer on one core: a constant and a part per ``n B^2`` (the rows drawn), measured
#: at n = 16 and 128, B = 8 (about 5 s at n = 128, L = 16)
SECONDS_PER_DRAW_LAYER = (1.0e-5, 4.0e-9)
#: draws per vectorised batch (the random stream is drawn batch by batch, as kernel_law_finite's)
BATCH = 64
ACTIVATIONS = ("linear", "relu")
CUTS = ("empirical", "analytic")


def cost_seconds(spec: ArchSpec, depth: int, draws: int = DRAWS) -> float:
    """Estimated seconds on one core for depths up to ``depth`` (:data:`SECONDS_PER_DRAW_LAYER`)."""
    a, b = SECONDS_PER_DRAW_LAYER
    return 0.2 + draws * (int(depth) + 1) * (a + b * spec.width * spec.batch**2)


def check_spec(spec: ArchSpec) -> None:
    """A bias-free MLP (``family="mlp"``) with a linear or ReLU activation."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "mlp":
        raise ValueError(f"family: the finite-width kernel law here is written for MLPs (conv chains: "
                         f"amutheory.symbolic.chain.kernel_law_finite), got {spec.family!r}")
    if spec.activation not in ACTIVATIONS:
        raise ValueError(f"activation: the kernel law needs phi'^2 = phi' up to a constant (linear or relu), "
                         f"got {spec.activation!r}")


def _depths(depths) -> list[int]:
    try:
        out = sorted({int(d) for d in np.atleast_1d(depths)})
    except (TypeError, ValueError):
        raise ValueError(f"depths must be integers >= 1, got {depths!r}") from None
    if not out or out[0] < 1 or any(float(d) != int(d) for d in np.atleast_1d(depths)):
        raise ValueError(f"depths must be integers >= 1, got {depths!r}")
    return out


def _sqrt_psd(S: np.ndarray) -> np.ndarray:
    w, q = np.linalg.eigh(S)
    return q * np.sqrt(np.clip(w, 0.0, None))[..., None, :]


def _forward(spec: ArchSpec, x: np.ndarray, L: int, rng: np.random.Generator, cut: str) -> dict:
    """One width-``n`` forward chain per input of ``x`` (``(D, B, C_0)``), up to layer ``L``:
    ``X_u`` (``[D, B, B]``, u = 1..L), ``M_u``, the cut kernel ``Q_u`` and the diagonals ``m_u = M_u(b, b)``."""
    n, c, C0, relu = spec.width, spec.c, spec.input_channels, spec.activation == "relu"
    gamma = x @ np.swapaxes(x, -1, -2)
    sigma = c * gamma / C0
    X, M, Q = [gamma / n], [], []
    for u in range(1, L + 1):
        h = rng.standard_normal((x.shape[0], n, spec.batch)) @ np.swapaxes(_sqrt_psd(sigma), -1, -2)
        if relu:
            d = (h > 0).astype(float)
            M.append(np.swapaxes(d, -1, -2) @ d / n)
            if cut == "empirical":
                Q.append(M[-1])
            else:
                emp = np.swapaxes(h, -1, -2) @ h / n
                sd = np.sqrt(np.clip(np.diagonal(emp, axis1=-2, axis2=-1), 0.0, None))
                den = sd[..., :, None] * sd[..., None, :]
                with np.errstate(invalid="ignore", divide="ignore"):
                    r = np.clip(np.where(den > 0, emp / np.where(den > 0, den, 1.0), 0.0), -1.0, 1.0)
                Q.append(0.25 + np.arcsin(r) / (2 * np.pi))
            f = np.maximum(h, 0.0)
        else:
            M.append(np.ones_like(sigma))
            Q.append(M[-1])
            f = h
        if u == L:
            break
        phi = np.swapaxes(f, -1, -2) @ f / n
        sigma = c * phi
        X.append(c * M[-1] * X[-1] + phi)
    m = np.array([np.diagonal(Mu, axis1=-2, axis2=-1) for Mu in M])     # [u, D, B]
    return {"X": X, "M": M, "Q": Q, "m": m}


def _layer_moments(spec: ArchSpec, fw: dict, depths: list[int], cut: str) -> dict[int, np.ndarray]:
    """``{L: s_l per draw, (D, L)}`` from one batch of forward chains (module docstring's sum)."""
    n, c, B = spec.width, spec.c, spec.batch
    X, Q, m = fw["X"], fw["Q"], fw["m"]
    Lmax = depths[-1]
    dphi2 = 0.5 if spec.activation == "relu" else 1.0
    # A_u(b') = sum_b [c G_(u+1)(b) / (prefactor)] X_u(b, b')^2 Q_u(b, b') needs G, which depends on L
    # only through a factor per sample: G_u(b) = m v_r / B^2 c^(L-u) prod_(k=u..L) m_k(b).
    logm = np.log(np.clip(m, 1e-300, None))                             # [u, D, B]
    zero = m <= 0
    out = {}
    for L in depths:
        # suffix products P_u(b) = prod_(k=u..L) m_k(b), u = 1..L+1 (P_(L+1) = 1)
        suffix = np.concatenate([np.cumsum(logm[:L][::-1], axis=0)[::-1], np.zeros((1,) + logm.shape[1:])])
        dead = np.concatenate([np.cumsum(zero[:L][::-1], axis=0)[::-1] > 0, np.zeros((1,) + zero.shape[1:], bool)])
        prod = np.where(dead, 0.0, np.exp(suffix))                        # [u-1 for u = 1..L+1, D, B]
        G = [spec.outputs * spec.readout_variance / B**2 * c ** (L - u) * prod[u - 1] for u in range(1, L + 2)]
        s = np.zeros((m.shape[1], L))
        for u in range(1, L + 1):
            Xu = X[u - 1]
            s[:, u - 1] += np.einsum("db,dbe->d", G[u - 1], Xu**2)                 # the cut at the top
            if u == L:
                continue
            A = np.einsum("db,dbe->de", c * G[u], Xu**2 * Q[u - 1])               # [D, b']
            if cut == "empirical":
                z = np.full_like(A, c)                                            # Z_1 = c: no mask
                for l in range(u + 1, L + 1):
                    s[:, l - 1] += (A * z).sum(axis=1)
                    z = z * c * m[l - 1]                                          # mask of layer l
            else:
                z = c
                for l in range(u + 1, L + 1):
                    s[:, l - 1] += z * A.sum(axis=1)
                    z = z * c * dphi2
        out[L] = n**2 / B * s
    return out


def layer_moments(spec: ArchSpec, depths, input_var: float = 1.0, draws: int = DRAWS, seed: int = SEED,
                  cut: str = "empirical", progress=None) -> dict:
    """Per draw ``s_l`` of every depth: ``{"depths", "s_l": {L: array (draws, L)}, "draws", "seed", "cut"}``
    (the draws of inputs and forward chains; :func:`finite_width_kernel_s_bar` averages them)."""
    check_spec(spec)
    depths = _depths(depths)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    if not np.isfinite(input_var) or input_var <= 0:
        raise ValueError(f"input_var must be a positive number, got {input_var!r}")
    if cut not in CUTS:
        raise ValueError(f"cut must be one of {CUTS}, got {cut!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    rows = {L: [] for L in depths}
    done, total = 0, -(-int(draws) // BATCH)
    while done < draws:
        count = min(BATCH, int(draws) - done)
        # the inputs are drawn as kernel_law_finite draws them: (count, B, C_0, 1)
        x = rng.standard_normal((count, spec.batch, spec.input_channels, 1))[..., 0] * np.sqrt(input_var)
        fw = _forward(spec, x, depths[-1], rng, cut)
        for L, s in _layer_moments(spec, fw, depths, cut).items():
            rows[L].append(s)
        done += count
        if progress is not None:
            progress(-(-done // BATCH), total, done)
    return {"depths": depths, "s_l": {L: np.concatenate(r) for L, r in rows.items()}, "draws": int(draws),
            "seed": int(seed), "cut": cut}


def finite_width_kernel_s_bar(spec: ArchSpec, depths, input_var: float = 1.0, draws: int = DRAWS,
                              seed: int = SEED, progress=None, cut: str = "empirical") -> dict:
    """``E[s_bar(L)]`` of the MLP ``spec`` at its width for every ``L`` in ``depths`` (sorted, unique):
    ``{"depths", "s_bar", "se", "draws", "seed", "cut"}``, the mean over ``draws`` draws of inputs and
    width-``n`` forward chains and its standard error.  ``progress(batch, batches, draws_done)``
    after each batch of :data:`BATCH` draws."""
    got = layer_moments(spec, depths, input_var, draws, seed, cut, progress)
    per = np.stack([got["s_l"][L].mean(axis=1) for L in got["depths"]], axis=1)      # (draws, depths)
    return {"depths": got["depths"], "s_bar": per.mean(axis=0), "se": per.std(axis=0, ddof=1) / np.sqrt(len(per)),
            "draws": got["draws"], "seed": got["seed"], "cut": cut}


# --------------------------------------------------------------------------- the linear MLP's reference
def _transfer(rows: float, var: float) -> np.ndarray:
    """``(E tr K'^2, E (tr K')^2)`` from ``(tr K^2, (tr K)^2)``: :func:`amutheory.symbolic.chain.finite_width.layer_transfer`."""
    return var**2 * np.array([[rows * (rows + 1), rows], [2 * rows, rows**2]], float)


def _linear_layer_moments(spec: ArchSpec, count: int, input_var: float, forward_finite: bool,
                          backward_finite: bool) -> np.ndarray:
    """``E[s_l]``, ``l = 1..count``, of the linear MLP from :mod:`~amutheory.symbolic.chain.finite_width`'s
    sum ``(v_r m / B^3)[sum_j u_(l-j) kappa_(j-1) + 2 sum_(j<j') u_(l-j') beta_j w_(j'-j-1) kappa_(j-1)]``
    with the forward moments ``kappa`` and the product moments ``u, w`` each at width ``n`` or at
    infinite width (``kappa_j = n^2 kappa_0 / C_0^2`` for ``j >= 1``; ``u_p = p + 1``, ``w_p = 1``)."""
    n, C0, B, v = float(spec.width), float(spec.input_channels), float(spec.batch), float(input_var)
    g = _transfer(C0, v) @ np.array([B, B**2])
    kappa = np.empty(count)
    kappa[0] = g[0]
    state = _transfer(n, 1 / C0) @ g
    for j in range(1, count):
        kappa[j] = state[0] if forward_finite else n**2 * g[0] / C0**2
        state = _transfer(n, 1 / n) @ state
    T = np.array([[1 + 1 / n, 1.0], [2 / n**2, 1.0]]) if backward_finite else np.array([[1.0, 1.0], [0.0, 1.0]])
    u, w, st = np.empty(count), np.empty(count), np.array([1.0, 1.0])
    for p in range(count):
        u[p], w[p] = st
        st = T @ st
    beta = np.ones(count + 1)
    beta[1] = n / C0
    out = np.empty(count)
    for l in range(1, count + 1):
        tot = sum(u[l - j] * kappa[j - 1] for j in range(1, l + 1))
        tot += 2 * sum(u[l - jp] * beta[j] * w[jp - j - 1] * kappa[j - 1]
                       for j in range(1, l + 1) for jp in range(j + 1, l + 1))
        out[l - 1] = spec.readout_variance * spec.outputs / B**3 * tot
    return out


def _linear_s_bar(spec, depths, input_var, forward_finite, backward_finite) -> np.ndarray:
    if spec.family != "mlp" or spec.activation != "linear" or spec.c != 1.0:
        raise ValueError(f"spec: the linear reference is derived for linear MLPs at c = 1, got "
                         f"{spec.family!r} {spec.activation!r} c = {spec.c}")
    depths = np.asarray(_depths(depths))
    cum = np.cumsum(_linear_layer_moments(spec, int(depths.max()), input_var, forward_finite, backward_finite))
    return cum[depths - 1] / depths


def forward_only_linear_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """The linear MLP's ``E[s_bar(L)]`` with its forward Gram moments at width ``n`` and its backward
    product moments at infinite width: what this law's mean over draws is for a linear net."""
    return _linear_s_bar(spec, depths, input_var, True, False)


def backward_only_linear_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """The linear MLP's ``E[s_bar(L)]`` with its backward product moments at width ``n`` and its forward
    Gram moments at infinite width (the part this law leaves out, alone)."""
    return _linear_s_bar(spec, depths, input_var, False, True)
