"""The kernel law with its forward kernels drawn at width ``n``: a Monte Carlo of the finite-width
kernel recursion, for ReLU (and linear) chains and MLPs, and for GELU and tanh ones, whose Gaussian moments
(the cut's four-point loop, the gains between the cut and layer ``l``) are then the drawn rows' means
(:func:`amutheory.symbolic.chain.kernel_law._drawn_smooth_moments`).

At width ``n`` the forward kernels of a chain are not deterministic.  Given the post-activation
kernel of layer ``u`` (over samples and positions), the ``n`` channels of ``h_(u+1)`` are i.i.d.
Gaussian rows with covariance ``Sigma_(u+1) = c T(Phi_u)`` -- exactly, since the layer's weights are
independent of everything below it -- and ``Phi_u = (1/n) sum_i phi(h_u,i) phi(h_u,i)^T`` is the
empirical kernel of those ``n`` rows.  So the forward kernels are an exact Markov chain that costs
``n (B P)^2`` per layer to draw (not a net's forward pass).  This law draws it, takes the empirical
value and mask kernels of each draw in place of the infinite-width (arc-cosine) ones, and runs the
kernel law's backward recursion (:func:`amutheory.symbolic.chain.kernel_law.layer_moments_at_depths`)
on them: infinite width *given* the drawn forward pass.

What it leaves out: the finite-width terms of the backward side (the fluctuations of the products
of Jacobians above each update and of the readout seen through them).  For a linear MLP these are
known exactly (:mod:`amutheory.symbolic.chain.finite_width`), and they are the smaller part there
(the tests compare); for ReLU they are not derived.  Nothing is fitted to probes of the net.
"""

from __future__ import annotations

import numpy as np

from amutheory.limits import CHUNK_ENTRIES
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import kernel_law as K

#: the law's own seed (independent of every measurement seed)
SEED = 20261128
#: draws of (inputs, forward chain): the standard error of s_bar over draws is reported
DRAWS = 512


def _phi(act: str):
    if act == "relu":
        return lambda h: np.maximum(h, 0.0), lambda h: (h > 0).astype(float)
    if act in K.DRAWN_ACTIVATIONS:
        from amutheory.activations import get_activation

        a = get_activation(act)
        return a.phi, a.dphi
    return lambda h: h, lambda h: np.ones_like(h)


def _sqrt_psd(S: np.ndarray) -> np.ndarray:
    w, q = np.linalg.eigh(S)
    return q * np.sqrt(np.clip(w, 0.0, None))[..., None, :]


def sampled_forward(rng: np.random.Generator):
    """A ``forward(spec, x, L)`` for :func:`~amutheory.symbolic.chain.kernel_law.layer_moments_at_depths`
    whose kernels are one draw of the width-``n`` chain per input (module docstring)."""

    def forward(spec: ArchSpec, x: np.ndarray, L: int) -> dict:
        B, C0, P, n, c = spec.batch, spec.input_channels, spec.positions, spec.width, spec.c
        phi, dphi = _phi(spec.activation)
        T = K._shift_map(spec.spatial, spec.kernel, spec.dim, spec.padding)
        gamma = np.einsum("dbcp,decq->dbepq", x, x)
        kappa = T.taps * T(gamma) / C0
        sigma = c * T(gamma) / C0
        X, masks, asin, loop3, dphi2 = [(C0 / n) * kappa], [], [], [], []
        smooth = spec.activation in K.DRAWN_ACTIVATIONS
        for u in range(1, L + 1):
            flat = K._flat(sigma)                                       # [draw, BP, BP]
            h = rng.standard_normal((flat.shape[0], n, flat.shape[-1])) @ np.swapaxes(_sqrt_psd(flat), -1, -2)
            d = dphi(h)
            masks.append(K._blocks(np.swapaxes(d, -1, -2) @ d / n, B, P))
            if spec.activation == "relu":
                emp = np.swapaxes(h, -1, -2) @ h / n
                asin.append(np.arcsin(K._blocks(K._correlation(emp)[0], B, P)))
            if smooth:          # E[phi'(b, a) phi'(b, a') phi'(b', beta)^2] and E[phi'(b', beta)^2], per draw
                rows = d.reshape(d.shape[:2] + (B, P))
                loop3.append(np.einsum("zibx,ziby,zieq->zbxyeq", rows, rows, rows * rows, optimize=True) / n)
                dphi2.append((rows * rows).mean(axis=1))
            if u == L:
                break
            f = phi(h)
            vx = K._blocks(np.swapaxes(f, -1, -2) @ f / n, B, P)
            sigma = c * T(vx)
            X.append(c * T(masks[-1] * X[-1]) + T.taps * T(vx))
        drawn = {"X": X, "masks": masks, "asin": asin, "T": T}
        return dict(drawn, loop3=loop3, dphi2=dphi2) if smooth else drawn

    return forward


def draws_progress(progress):
    """A ``progress(i, total, draws_done)`` for :func:`finite_width_kernel_s_bar` that passes one line to
    ``progress(line)`` when the last batch of draws is done (``None`` for ``None``)."""
    if progress is None:
        return None
    return lambda i, total, done: i == total and progress(f"finite-width kernel law: {done} draws of inputs and "
                                                          "forward chains")


def check_finite_kernel_spec(spec: ArchSpec) -> None:
    """The kernel law's coverage with drawn forward kernels
    (:func:`~amutheory.symbolic.chain.kernel_law.check_drawn_spec`: linear, ReLU, GELU and tanh chains and
    MLPs, GELU and tanh within a size)."""
    K.check_drawn_spec(spec)


def finite_width_kernel_s_bar(spec: ArchSpec, depths, input_var: float = 1.0, draws: int = DRAWS,
                              seed: int = SEED, progress=None) -> dict:
    """``E[s_bar(L)]`` at ``depths`` at the chain's width (``spec``: a conv chain, an MLP's chain with
    kernel 1 on one position): the mean over ``draws`` draws of inputs and forward chains, with its
    standard error ``se``.  ``progress(i, total, draws_done)`` after each batch of draws."""
    check_finite_kernel_spec(spec)
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    depths = sorted({int(d) for d in depths})
    if not depths or depths[0] < 1:
        raise ValueError(f"depths must be integers >= 1, got {depths}")
    rng = np.random.default_rng(seed)
    forward = sampled_forward(rng)
    batch = max(1, min(draws, 64))
    if spec.activation in K.DRAWN_ACTIVATIONS:      # the four-point loops held: B^2 P^3 entries per layer and draw
        batch = max(1, min(batch, int(CHUNK_ENTRIES // ((max(depths) + 1) * spec.batch**2 * spec.positions**3))))
    rows, done, total = [], 0, -(-draws // batch)
    while done < draws:
        count = min(batch, draws - done)
        x = K._draw_inputs(spec, rng, count, input_var).reshape(count, spec.batch, spec.input_channels,
                                                                spec.positions)
        per = K.layer_moments_at_depths(spec, x.reshape((count, spec.batch, spec.input_channels)
                                                        + (spec.spatial,) * spec.dim), depths, forward=forward)
        rows.append(np.stack([per[d].mean(axis=1) for d in depths], axis=1))
        done += count
        if progress is not None:
            progress(len(rows), total, done)
    s = np.concatenate(rows)
    return {"depths": depths, "s_bar": s.mean(axis=0), "se": s.std(axis=0, ddof=1) / np.sqrt(len(s)),
            "draws": draws, "seed": seed}
