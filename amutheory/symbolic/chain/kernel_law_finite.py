"""The kernel law with its forward kernels drawn at width ``n``: a Monte Carlo of the finite-width
kernel recursion, for ReLU (and linear) chains and MLPs, and for GELU and tanh ones, whose Gaussian moments
(the cut's four-point loop, the gains between the cut and layer ``l``) are then the drawn rows' means
(:func:`amutheory.symbolic.chain.kernel_law._drawn_smooth_moments`).

At width ``n`` the forward kernels of a chain are not deterministic.  Given the post-activation
kernel of layer ``u`` (over samples and positions), the ``n`` channels of ``h_(u+1)`` are i.i.d.
Gaussian rows with covariance ``Sigma_(u+1) = c T(Phi_u)`` -- exactly, since the layer's weights are
independent of everything below it -- and ``Phi_u = (1/n) sum_i phi(h_u,i) phi(h_u,i)^T`` is the
empirical kernel of those ``n`` rows.  So the forward kernels are an exact Markov chain, and a
draw of the rows needs a factor ``A A^T = Sigma``: either the matrix square root (``(B P)^3`` per layer,
``sampler="eigh"``) or the layer's own weights on the shifted rows below, ``A = sqrt(c / (r k^d)) [S_t
F^T]_t`` (``r n k^d B P`` per layer, ``sampler="weights"``: a conv layer's forward pass); ``"auto"``
takes the weights where they halve the cost (:func:`weights_cheaper`), and both draw the same law.  This law draws it, takes the empirical
value and mask kernels of each draw in place of the infinite-width (arc-cosine) ones, and runs the
kernel law's backward recursion (:func:`amutheory.symbolic.chain.kernel_law.layer_moments_at_depths`)
on them: infinite width *given* the drawn forward pass.

What it leaves out: the finite-width terms of the backward side (the fluctuations of the products
of Jacobians above each update and of the readout seen through them).  For a linear MLP these are
known exactly (:mod:`amutheory.symbolic.chain.finite_width`), and they are the smaller part there
(the tests compare); for ReLU they are not derived.  Nothing is fitted to probes of the net.
"""

from __future__ import annotations

import time

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


#: the ways :func:`sampled_forward` draws a layer's rows (module docstring)
SAMPLERS = ("auto", "weights", "eigh")
#: ``eigh``'s cost per ``(B P)^3`` in multiply-adds' time, for :func:`weights_cheaper` (LAPACK's
#: divide-and-conquer with eigenvectors; calibrated 2026-11-28 on this project's 2-core machine from timings of
#: both samplers at B P = 8..256, widths 32-256, where they cost the same; ``python validate/benchmark_law_costs.py
#: --samplers`` times the whole law with each)
EIGH_FLOPS = 4.0


def weights_cheaper(spec: ArchSpec, rows: int) -> bool:
    """Whether the layer's weights (``n k^d rows B P`` multiply-adds) draw ``n`` rows of ``B P`` points in at
    most half the time of the square root (``EIGH_FLOPS (B P)^3`` for ``eigh``, plus ``n (B P)^2``): the
    Monte Carlo stream changes with the sampler, so ``"auto"`` leaves the square root (the law's first
    sampler) where the saving is small -- MLPs' few points, and so their recorded draws."""
    bp = spec.batch * spec.positions
    taps = spec.kernel**spec.dim
    return 2 * spec.width * taps * rows * bp <= EIGH_FLOPS * bp**3 + spec.width * bp**2


def _draw_rows(rng, n: int, F: np.ndarray, scale: float, T, sigma, use_weights: bool) -> np.ndarray:
    """``n`` rows ``[draw, n, B P]`` of covariance ``sigma = scale T(F^T F) / r`` (``F``: ``[draw, r, B, P]``)."""
    D, r = F.shape[:2]
    if not use_weights:
        flat = K._flat(sigma)                                           # [draw, BP, BP]
        return rng.standard_normal((D, n, flat.shape[-1])) @ np.swapaxes(_sqrt_psd(flat), -1, -2)
    shifted = np.moveaxis(T.shift_rows(F), 0, 1).reshape(D, T.taps * r, -1)  # [draw, taps r, BP]
    return np.sqrt(scale / (r * T.taps)) * (rng.standard_normal((D, n, T.taps * r)) @ shifted)


def _gram(rows: np.ndarray, n: int) -> np.ndarray:
    """``rows^T rows / n`` over the ``n`` rows of each draw (``[draw, n, B P]`` -> ``[draw, B P, B P]``)."""
    out = np.swapaxes(rows, -1, -2) @ rows
    out /= n
    return out


def _mask_gram(masks: np.ndarray, n: int) -> np.ndarray:
    """:func:`_gram` of ReLU's masks (entries 0 or 1), with the same value to the last bit in half the time: the
    products are counted in single precision, exact for integers below ``2^24`` (``n`` rows at most), and divided
    by ``n`` in double."""
    if n >= 2**24:
        return _gram(masks, n)
    m = masks.astype(np.float32)
    out = (np.swapaxes(m, -1, -2) @ m).astype(np.float64)
    out /= n
    return out


def _uses_weights(sampler: str, spec: ArchSpec, rows: int) -> bool:
    """Whether ``sampler`` draws a layer of ``rows`` input rows through the layer's weights."""
    return sampler == "weights" or (sampler == "auto" and weights_cheaper(spec, rows))


def sampled_forward(rng: np.random.Generator, sampler: str = "auto"):
    """A ``forward(spec, x, L)`` for :func:`~amutheory.symbolic.chain.kernel_law.layer_moments_at_depths`
    whose kernels are one draw of the width-``n`` chain per input (module docstring); ``sampler`` (one of
    :data:`SAMPLERS`) says how a layer's rows are drawn."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")

    def forward(spec: ArchSpec, x: np.ndarray, L: int) -> dict:
        B, C0, P, n, c = spec.batch, spec.input_channels, spec.positions, spec.width, spec.c
        phi, dphi = _phi(spec.activation)
        T = K._shift_map(spec.spatial, spec.kernel, spec.dim, spec.padding)
        gamma = np.einsum("dbcp,decq->dbepq", x, x)
        t_gamma = T.in_tap_order(gamma)
        kappa, sigma = T.taps * t_gamma / C0, c * t_gamma / C0
        X, masks, asin, loop3, dphi2 = [(C0 / n) * kappa], [], [], [], []
        smooth = spec.activation in K.DRAWN_ACTIVATIONS
        rows = np.swapaxes(x, 1, 2)                                     # [draw, C0, B, P]: the input's rows
        for u in range(1, L + 1):
            h = _draw_rows(rng, n, rows, c, T, sigma, _uses_weights(sampler, spec, rows.shape[1]))
            d = dphi(h)
            masks.append(K._blocks(_mask_gram(d, n) if spec.activation == "relu" else _gram(d, n), B, P))
            if spec.activation == "relu":
                corr = K._correlation(_gram(h, n), scales=False)[0]
                asin.append(K._blocks(np.arcsin(corr, out=corr), B, P))
            if smooth:          # E[phi'(b, a) phi'(b, a') phi'(b', beta)^2] and E[phi'(b', beta)^2], per draw
                rows = d.reshape(d.shape[:2] + (B, P))
                loop3.append(rows)              # the loop itself is formed at its cut: K.loop_of_rows
                dphi2.append((rows * rows).mean(axis=1))
            if u == L:
                break
            f = phi(h)
            value = K._blocks(_gram(f, n), B, P)
            rows = f.reshape(f.shape[:2] + (B, P))
            update = np.multiply(masks[-1], X[-1])                        # X_(u+1) = c T(M_u X_u) + taps T(value)
            update *= c
            update += T.taps * value
            X.append(T(update))
            # Sigma_(u+1) = c T(value): only the square root draws from it (the weights draw from the rows)
            sigma = None if _uses_weights(sampler, spec, n) else c * T.in_tap_order(value)
        drawn = {"X": X, "masks": masks, "asin": asin, "T": T}
        return dict(drawn, loop_rows=loop3, dphi2=dphi2) if smooth else drawn

    return forward


#: seconds between two progress lines of :func:`draws_progress` while draws remain
PROGRESS_EVERY_S = 5.0


def draws_progress(progress):
    """A ``progress(i, total, draws_done)`` for :func:`finite_width_kernel_s_bar` that passes one line to
    ``progress(line)`` when the last batch of draws is done, and one after a batch whenever
    :data:`PROGRESS_EVERY_S` seconds have passed since the last line (a long law shows it is moving; a short one
    prints one line) (``None`` for ``None``)."""
    if progress is None:
        return None
    last = [time.perf_counter()]

    def report(i, total, done):
        now = time.perf_counter()
        if i == total:
            progress(f"finite-width kernel law: {done} draws of inputs and forward chains")
        elif now - last[0] >= PROGRESS_EVERY_S:
            progress(f"finite-width kernel law: {done} draws so far")
        else:
            return
        last[0] = now

    return report


def check_finite_kernel_spec(spec: ArchSpec) -> None:
    """The kernel law's coverage with drawn forward kernels
    (:func:`~amutheory.symbolic.chain.kernel_law.check_drawn_spec`: linear, ReLU, GELU and tanh chains and
    MLPs, GELU and tanh within a size)."""
    K.check_drawn_spec(spec)


#: kernel entries per draw held at once, ``(B P)^2`` each: a batch of draws is drawn in one stream and computed a
#: few draws at a time, so the layers' kernels stay small (fresh large arrays cost more than the sums over them on
#: this machine: ``validate/benchmark_law_costs.py --adjoint`` times both)
HELD_ENTRIES = 2**20


class _BatchNormals:
    """The Gaussian draws of one batch's forward chains, drawn up front in the order :func:`sampled_forward` asks
    for them (layer by layer, every draw of the batch), then served to the batch's draws a few at a time: the
    Monte Carlo stream is the one a single pass over the batch draws."""

    def __init__(self, rng: np.random.Generator, spec: ArchSpec, count: int, depth: int, sampler: str):
        shapes, rows = [], spec.input_channels
        for _ in range(depth):
            use = _uses_weights(sampler, spec, rows)
            shapes.append((count, spec.width, (spec.kernel**spec.dim) * rows if use else spec.batch * spec.positions))
            rows = spec.width
        self.layers = [rng.standard_normal(shape) for shape in shapes]
        self.draws, self.next = slice(None), 0

    def serve(self, draws: slice) -> None:
        self.draws, self.next = draws, 0

    def standard_normal(self, shape: tuple) -> np.ndarray:
        out = self.layers[self.next][self.draws]
        if out.shape != tuple(shape):
            raise AssertionError(f"the forward pass asked for {shape}, the batch drew {out.shape}")
        self.next += 1
        return out


def batch_size(spec: ArchSpec, depths, draws: int) -> int:
    """The draws :func:`finite_width_kernel_s_bar` draws in one stream: up to 64; for GELU and tanh the count whose
    four-point loops fitted :data:`~amutheory.limits.CHUNK_ENTRIES` when every layer's was held (they are formed at
    their cut now; the rule stays, as it fixes the Monte Carlo stream of the runs on record)."""
    batch = max(1, min(draws, 64))
    if spec.activation in K.DRAWN_ACTIVATIONS:
        batch = max(1, min(batch, int(CHUNK_ENTRIES // ((max(depths) + 1) * spec.batch**2 * spec.positions**3))))
    return batch


def finite_width_kernel_s_bar(spec: ArchSpec, depths, input_var: float = 1.0, draws: int = DRAWS,
                              seed: int = SEED, progress=None, sampler: str = "auto") -> dict:
    """``E[s_bar(L)]`` at ``depths`` at the chain's width (``spec``: a conv chain, an MLP's chain with
    kernel 1 on one position): the mean over ``draws`` draws of inputs and forward chains, with its
    standard error ``se``, and each draw's ``s_bar`` (``per_draw``, ``(draws, depths)``: the depths share
    the draws).  ``progress(i, total, draws_done)`` after each batch of draws (``i`` of ``total`` batches done), and
    within a batch after each few draws held at once (``i`` the batches done before it); ``sampler``: how the rows are
    drawn (:func:`sampled_forward`; the law is the same, the Monte Carlo stream is not)."""
    check_finite_kernel_spec(spec)
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    depths = sorted({int(d) for d in depths})
    if not depths or depths[0] < 1:
        raise ValueError(f"depths must be integers >= 1, got {depths}")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    rng = np.random.default_rng(seed)
    batch = batch_size(spec, depths, draws)
    rows, done, batches, total = [], 0, 0, -(-draws // batch)
    step = max(1, int(HELD_ENTRIES // (spec.batch * spec.positions) ** 2))
    while done < draws:
        count = min(batch, draws - done)
        x = K._draw_inputs(spec, rng, count, input_var)
        noise = _BatchNormals(rng, spec, count, max(depths), sampler)      # the batch's stream, in its order
        for start in range(0, count, step):
            noise.serve(slice(start, start + step))
            per = K.layer_moments_at_depths(spec, x[start:start + step], depths,
                                            forward=sampled_forward(noise, sampler))
            rows.append(np.stack([per[d].mean(axis=1) for d in depths], axis=1))
            if progress is not None and start + step < count:     # within a batch: the batches finished so far
                progress(batches, total, done + start + step)
        done, batches = done + count, batches + 1
        if progress is not None:
            progress(batches, total, done)
    s = np.concatenate(rows)
    return {"depths": depths, "s_bar": s.mean(axis=0), "se": s.std(axis=0, ddof=1) / np.sqrt(len(s)),
            "draws": draws, "seed": seed, "sampler": sampler, "per_draw": s}
