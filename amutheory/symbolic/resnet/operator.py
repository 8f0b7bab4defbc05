"""The exact infinite-width one-step law of a *linear* residual net over its points, either padding.

The mode law (:mod:`amutheory.symbolic.resnet.spectral`) needs circular padding: there every conv is
diagonal in the Fourier modes.  A zero-padded conv is not, so this law carries the net's ``P = B
N^d`` points (sample, position) as kernels, ``P x P`` matrices, and averages over the channels with
the position-valued planar pairings of :mod:`amutheory.symbolic.primitives.operator_planar` (a pair of a k-tap
layer maps what it encloses by ``s T``, ``T(X) = k^-d sum_t S_t X S_t^T`` with ``S_t`` the padded
shift).  Given the inputs it is exact at infinite width; with circular padding it is the mode law
draw by draw (tested to 1e-10).

**The update.**  A layer with input field ``z`` and error field ``delta`` moves its own output, per
unit ``-eta``, by ``C_z delta``, ``C_z(a, a') = sum_t (S_t z)(a) . (S_t z)(a')`` the patch Gram of its
input (``n k^d T(K_z)``, ``K_z = z . z / n`` the input's kernel; ``n K_z`` for a 1x1 layer).  With the
block ``x <- x + J x``, ``J = alpha W_2 W_1`` (``alpha W`` for ``conv``), the stream's update before
block ``i + 1`` is ``u_i = M_i g_i`` (``g_i`` the stream gradient after block ``i``) with

    M_i = (I + J_i) M_{i-1} (I + J_i)^T + Src_i,   Src_i = alpha^2 (W_2 C_x W_2^T + C_h),

(``alpha^2 C_x`` for ``conv``), ``M_0 = C_in`` the stem's own update (``C_in = k^d T(Gamma)``, ``Gamma``
the raw inputs' Gram).  ``M_i`` is free of ``g_i`` (blocks after ``i``), so ``sum_a E|u_i(a)|^2 =
n tr(G_i Phi_i(I))`` with ``G_i = g_i . g_i / n`` and ``Phi_i(X) = E_n[M_i^T X M_i]``.  The recursion is
closed by ``m_i = E_n[M_i]`` and ``Phi_i`` on diagonal kernels (what lies between ``M^T`` and ``M`` is
always the probe's diagonal or a pair map of it): each is one :func:`operator_planar.expectation`
of the words above, nothing typed by hand.  The first branch layer's pre-activation moves by
``R g_i``, ``R = W_1 M_{i-1} (I + J_i)^T + alpha C_x W_2^T`` (its read of the stream, and its own
update, which adds coherently to the read-back of its weights through ``(I + J_i)^T``); ``preact``'s
stream is a pre-activation too.  The forward kernel ``K_x <- K_x + E_n[J K_x J^T]`` and the backward
``G_{i-1} = G_i + E_n[J^T G_i J]`` are planar expectations too, from ``K_x0 = T(Gamma) / c_in`` and
``G_K = outputs v_r / (B P_s)^2`` on every pair of positions of one sample (the loss directions of
different samples average out), ``P_s = N^d``.  So, per unit ``eta^2``,

    s_stream = tr(G_{i-1} Phi_{i-1}(I)) / P,   s_first = tr(G_i E_n[R^T R]) / P.

**Inputs.**  The law given the inputs is a quadratic form in ``Gamma``; its mean over Gaussian inputs
is a Monte Carlo over draws here (:func:`s_bar`: mean and standard error; the same draws for both
paddings, so the boundary ratio :func:`boundary_ratio` is paired).

**ReLU** (``conv-mlp`` only).  The mask ``D = phi'(h)`` sits in ``J = alpha W_2 D W_1``, in ``W_1``'s
source ``W_2 D C_x D W_2^T`` and in its own error ``alpha D W_2^T g``.  Masks do not pair; those left in
one channel loop average to the 2- and 3-point functions of ``h``'s Gaussian kernel ``K_h = s_1
T(K_x)`` (orthant probabilities, :mod:`amutheory.symbolic.chain.kernel_law`), with ``D S D = D S`` for a
diagonal ``S`` (``relu'^2 = relu'``), and the stream's kernel grows by ``alpha^2 s_2 V(K_h)`` (``V``
the arc-cosine kernel).  The assumption beyond the linear law is the gradient independence of
infinite-width analyses (masks free of the weights beside them); at one point it is the dense free
law of :mod:`amutheory.symbolic.resnet.dense` to 1e-8, which real dense nets confirm.  ``conv`` with
ReLU is refused (its branch mean piles up on the stream), and so is ``preact`` (its stream masks
persist from block to block: the dense net needs the coordinate law).

**Scope and cost.**  Identity shortcuts, every forward-stable init; any kernel, size, batch and
dimension with ``B N^d <=`` :data:`MAX_POINTS`.  A block costs ``O(P^4)`` (``Phi`` on every point's
diagonal; the mask loops around the point projectors and the outer-product terms are formed in ``P^3``:
:mod:`~amutheory.symbolic.primitives.operator_planar`; ``validate/benchmark_resnet_points.py`` times it against the
stacked products).  Given the inputs the law is linear in the head's ``r r^T``, so :func:`head_couplings` gives
every loss direction's ``s_bar`` from one pass and :func:`point_law` averages the directions exactly.  Left out: the ``O(1/n)`` terms (the
stem's own source, exact, is kept), as in the dense and mode laws.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import operator_planar as O
from amutheory.symbolic.primitives import planar as P
from amutheory.symbolic.chain.kernel_law import mask_kernel, mask_kernel3, value_kernel
from amutheory.symbolic.resnet.dense import branch_constants, check_residual_spec

alpha = sp.Symbol("alpha", positive=True)
SYMBOLS = (alpha, O.gain("W1"), O.gain("W2"))

#: largest number of points ``B N^d`` the law runs for (``Phi`` holds ``P^3`` numbers, a block costs ``P^4``)
MAX_POINTS = 128

BRANCHES = ("conv", "conv-mlp", "preact")
ACTIVATIONS = ("linear", "relu")
#: why a ReLU branch other than conv-mlp is refused
RELU_REFUSED = {"conv": "a single-layer ReLU branch has a non-zero mean that piles up on the stream, which is "
                        "no kernel of centred fields",
                "preact": "its stream masks persist from block to block, so they are not free of the stream's "
                          "update (the dense net needs the coordinate law of symbolic.resnet.preact)"}


def block_operators(branch: str, activation: str = "linear") -> dict:
    """The block's operators in the letters of :mod:`operator_planar`: ``J``, ``src`` and the first
    layer's ``read`` (``R``), each a ``{word: coefficient}`` dictionary.  With ReLU (``conv-mlp``
    only) the mask ``D = phi'(h)`` sits between ``W_2`` and ``W_1``: ``J = alpha W_2 D W_1``, ``W_1``'s
    update reaches the stream through ``W_2 D C_x D W_2^T`` and its own error is ``alpha D W_2^T g``;
    ``C_h`` is then the Gram of ``phi(h)``, ``W_2``'s input."""
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {', '.join(BRANCHES)}; got {branch!r}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}; got {activation!r}")
    if activation == "relu" and branch != "conv-mlp":
        raise ValueError(f"branch: the residual operator law with ReLU covers conv-mlp only; got {branch!r} "
                         f"({RELU_REFUSED[branch]})")
    w1 = O.layer("W1", "conv")
    d = O.mask("D") if activation == "relu" else P.scalar(1)
    if branch == "conv":
        j = P.scale(w1, alpha)
        src = P.scale(O.atom("Cx"), alpha**2)
        own = P.scale(O.atom("Cx"), alpha)  # W_1's own update, per unit g (its error is alpha g)
    else:
        w2 = O.layer("W2", "1x1" if branch == "conv-mlp" else "conv")
        j = P.scale(P.mul(w2, d, w1), alpha)
        src = P.scale(P.add(P.mul(w2, d, O.atom("Cx"), d, O.adjoint(w2)), O.atom("Ch")), alpha**2)
        own = P.scale(P.mul(O.atom("Cx"), d, O.adjoint(w2)), alpha)  # its error is alpha D W_2^T g
    one_j = P.add(P.scalar(1), j)
    read = P.add(P.mul(w1, O.free(), O.adjoint(one_j)), own)
    return {"J": j, "src": src, "one_j": one_j, "read": read}


@functools.lru_cache(maxsize=None)
def block_law(branch: str, activation: str = "linear") -> dict:
    """The compiled expectations of one block (each a :func:`operator_planar.compile_expectation`):
    ``forward`` (``K -> E_n[J K J^T]``, atom ``K``), ``backward`` (``G -> E_n[J^T G J]``), ``h_kernel``
    (``E_n[W_1 K W_1^T]``, the first layer's output kernel, ``W_2``'s input), ``mean`` (``m_i``), ``phi`` (``Phi_i`` on the stack ``X``) and ``read`` (``E_n[R^T R]``)."""
    ops = block_operators(branch, activation)
    j, one_j = ops["J"], ops["one_j"]
    m_new = P.add(P.mul(one_j, O.free(), O.adjoint(one_j)), ops["src"])
    m_new_t = P.add(P.mul(one_j, O.free(True), O.adjoint(one_j)), ops["src"])
    w1 = O.layer("W1", "conv")
    c = functools.partial(O.compile_expectation, symbols=SYMBOLS)
    return {"forward": c(P.mul(j, O.atom("K"), O.adjoint(j))),
            "backward": c(P.mul(O.adjoint(j), O.atom("G"), j)),
            "h_kernel": c(P.mul(w1, O.atom("K"), O.adjoint(w1))),
            "mean": c(m_new), "phi": c(P.mul(m_new_t, O.atom("X"), m_new)),
            "read": c(P.mul(O.adjoint(ops["read"]), ops["read"]))}


# --------------------------------------------------------------------------- the points and the map T
class PointMap:
    """``T(X) = k^-d sum_t S_t X S_t^T`` on kernels over the ``B N^d`` points (sample-major, positions
    row-major), each tap a gather: ``(S_t z)(a) = z(a + t)`` inside the grid, 0 outside (zero padding)
    or wrapped (circular).  The taps of a 'same' conv are symmetric, so ``T* = T``."""

    def __init__(self, spec: ArchSpec):
        from scipy import sparse

        N, d, r = spec.spatial, spec.dim, spec.kernel // 2
        grid = np.stack(np.meshgrid(*[np.arange(N)] * d, indexing="ij"), -1).reshape(-1, d)
        offsets = np.stack(np.meshgrid(*[np.arange(-r, r + 1)] * d, indexing="ij"), -1).reshape(-1, d)
        ps = N**d
        self.size, self.taps = spec.batch * ps, len(offsets)
        self.src, self.valid = [], []
        for t in offsets:
            moved = grid + t
            inside = np.all((moved >= 0) & (moved < N), axis=1)
            moved = moved % N
            flat = np.ravel_multi_index(moved.T, (N,) * d)
            valid = np.ones(ps) if spec.padding == "circular" else inside.astype(float)
            self.src.append((np.arange(spec.batch)[:, None] * ps + flat[None, :]).ravel())
            self.valid.append(np.tile(valid, spec.batch))
        # T on vec(X) as one sparse matrix: (S_t (x) S_t) summed over the taps, over k^d
        pts = self.size
        cols = np.concatenate([(src[:, None] * pts + src[None, :]).ravel() for src in self.src])
        vals = np.concatenate([np.outer(v, v).ravel() for v in self.valid]) / self.taps
        rows = np.tile(np.arange(pts * pts), self.taps)
        keep = vals != 0
        self.matrix = sparse.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(pts * pts, pts * pts))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        lead, pts = X.shape[:-2], self.size
        flat = X.reshape(-1, pts * pts)
        return (self.matrix @ flat.T).T.reshape(lead + (pts, pts))


def check_spec(spec: ArchSpec):
    """``ValueError`` naming the argument unless the law over the points covers ``spec``."""
    check_residual_spec(spec, "the residual operator law")
    if spec.activation not in ACTIVATIONS:
        raise ValueError(f"activation: the residual operator law is for linear and ReLU nets (masks with "
                         f"phi'^2 = phi'); got {spec.activation!r}")
    if spec.activation == "relu" and spec.branch != "conv-mlp":
        raise ValueError(f"branch: the residual operator law with ReLU covers conv-mlp only; got {spec.branch!r} "
                         f"({RELU_REFUSED[spec.branch]})")
    if spec.batch * spec.positions > MAX_POINTS:
        raise ValueError(f"spatial: the residual operator law runs for batch x N^d <= {MAX_POINTS} points "
                         f"(cost P^4 per block); got {spec.batch} x {spec.positions}")


def covers(spec: ArchSpec) -> bool:
    """Whether the law over the points covers ``spec`` (:func:`check_spec` passes)."""
    try:
        check_spec(spec)
    except ValueError:
        return False
    return True


def _gram(spec: ArchSpec, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, float)
    shape = (spec.batch, spec.input_channels) + (spec.spatial,) * spec.dim
    if x.shape != shape:
        raise ValueError(f"x must have shape {shape} (batch, channels, positions), got {x.shape}")
    pts = x.reshape(spec.batch, spec.input_channels, -1).transpose(0, 2, 1).reshape(-1, spec.input_channels)
    return pts @ pts.T


#: how :func:`draw_layer_moments` evaluates ``Phi`` on the point projectors: ``"outer"`` (a product
#: ``A E_c B`` as the outer product ``A[:, c] B[c, :]``) or ``"stack"`` (the ``P`` projectors as a
#: stack of ``P x P`` matrices, every product a stack of matrix products: the naive way, kept as the
#: benchmark's and the tests' reference)
METHODS = ("outer", "stack")


def draw_layer_moments(spec: ArchSpec, x: np.ndarray, directions: np.ndarray | None = None,
                       method: str = "outer") -> np.ndarray:
    """``E[s_l | x]`` at infinite width (per unit ``eta^2``; the weights and the loss directions
    averaged, the inputs ``x`` given, shape ``(B, c_in, N[, N])``) of every pre-activation, in the
    probe's order (per block: the stream, then the first layer, for ``preact``).  With the loss
    directions ``directions`` (shape ``(B, outputs)``) given too, ``E[s_l | x, r]``: then ``G_K`` is
    ``v_r r_b . r_b' / (B P_s)^2`` (the head's ``V V^T / n -> v_r I``) instead of its mean over ``r``."""
    check_spec(spec)
    heads = _heads(spec, directions)
    forward = _forward_blocks(spec, x, spec.depth, method)
    G = [np.kron(heads, np.ones((spec.positions,) * 2)) * _head_scale(spec)]
    for block in reversed(forward["blocks"]):  # G_K, then backwards: G_(i-1) = G_i + E_n[J^T G_i J]
        G.append(G[-1] + block["backward"](G[-1]))
    G = G[::-1]  # G[i] = G_i, i = 0..K
    out, pts = [], forward["points"]
    for i, block in enumerate(forward["blocks"], start=1):
        if "stream" in block:
            out.append(np.trace(G[i - 1] @ block["stream"]) / pts)
        out.append(np.trace(G[i] @ block["read"]) / pts)
    return np.asarray(out)


def _heads(spec: ArchSpec, directions) -> np.ndarray:
    """``sum_o r_bo r_b'o`` of the loss directions (``B x B``), or its mean ``outputs I`` (``None``)."""
    if directions is None:
        return spec.outputs * np.eye(spec.batch)
    directions = np.asarray(directions, float)
    if directions.shape != (spec.batch, spec.outputs):
        raise ValueError(f"directions must have shape {(spec.batch, spec.outputs)} (batch, outputs), "
                         f"got {directions.shape}")
    return directions @ directions.T


def _head_scale(spec: ArchSpec) -> float:
    """``G_K`` per unit of ``r_b . r_b'``: ``v_r / (B P_s)^2`` on every pair of positions."""
    return spec.readout_variance / (spec.batch * spec.positions) ** 2


def _forward_blocks(spec: ArchSpec, x: np.ndarray, blocks: int, method: str) -> dict:
    """Everything of the law of a net of ``blocks`` blocks given the inputs ``x`` but its backward kernels:
    per block ``i = 1 .. blocks``, ``read`` (``E_n[R_i^T R_i]``, the first layer's read, ``P x P``), with
    ``preact`` ``stream`` (``Phi_(i-1)(I)``, the stream's own), and ``backward`` / ``adjoint`` (``G ->
    E_n[J_i^T G J_i]`` and ``X -> E_n[J_i X J_i^T]``, its adjoint, both with block ``i``'s masks).  The
    backward kernels ``G_i`` start at the head, a chain :func:`draw_layer_moments` runs and :func:`head_couplings` folds into an adjoint recursion.
    (The branch multiplier depends on the net's depth, so no block serves two depths.)"""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    law = block_law(spec.branch, spec.activation)
    relu = spec.activation == "relu"
    T = PointMap(spec)
    n, Pt = spec.width, T.size
    taps = T.taps
    a, v1, v2 = branch_constants(spec)
    values = (a, spec.c * v1, spec.c * v2)
    gamma = _gram(spec, x)
    kx = T(gamma) / spec.input_channels  # the stem's output kernel
    mean = taps * T(gamma)  # M_0 = C_in
    phi_table = np.einsum("ca,cb->cab", mean, mean)  # Phi_0(E_c) = C_in E_c C_in
    out = []
    for _ in range(blocks):
        kh = law["h_kernel"](values, O.Kernels(Pt, {"K": kx}, T))
        w2_input = value_kernel(kh, "relu") if relu else kh  # the kernel of phi(h)
        atoms = {"Cx": n * taps * T(kx), "Ch": n * (taps * T(w2_input) if spec.branch == "preact" else w2_input)}
        if method == "stack":
            atoms["X"] = np.eye(Pt)[:, None, :] * np.eye(Pt)[:, :, None]
        two = mask_kernel(kh, "relu") if relu else None
        masks = {"D": (two, mask_kernel3(kh, "relu"))} if relu else None
        k = O.Kernels(Pt, atoms, T, mean, phi_table, probe="X" if method == "outer" else None,  # X = E_c
                      masks=masks)
        cache: dict = {}
        block = {"backward": _pair_map(law["backward"], "G", values, Pt, T, two),
                 "adjoint": _pair_map(law["forward"], "K", values, Pt, T, two)}
        if spec.branch == "preact":
            block["stream"] = phi_table.sum(axis=0)
        block["read"] = law["read"](values, k, cache)
        out.append(block)
        mean, phi_table = law["mean"](values, k, cache), law["phi"](values, k, cache)
        # the stream's kernel: conv-mlp with ReLU adds alpha^2 s_2 V(K_h) (W_2 is 1x1 and free of the stream)
        kx = kx + (a**2 * values[2] * value_kernel(kh, "relu") if relu else
                   law["forward"](values, O.Kernels(Pt, {"K": kx}, T)))
    return {"blocks": out, "points": Pt}


def _pair_map(compiled, atom: str, values, size: int, T, two):
    """``X -> compiled(X)``: a block's compiled expectation with the one kernel ``atom`` and its masks."""
    masks = None if two is None else {"D": (two, None)}
    return lambda X: compiled(values, O.Kernels(size, {atom: X}, T, masks=masks))


def head_couplings(spec: ArchSpec, x: np.ndarray, method: str = "outer") -> np.ndarray:
    """``A`` (``B x B``) with ``E[s_bar | x, r] = sum_(b, b') (r_b . r_b') A_(bb')`` for the net of
    ``spec.depth`` blocks (the inputs ``x`` given).  ``s`` is linear in the head's ``G_K`` and ``G_K``
    in ``r r^T``, so one pass gives ``s_bar`` for every loss direction, and their mean exactly:
    ``E[s_bar | x] = outputs tr A``.  The sum over the layers of ``tr(G_i X_i)`` is ``<G_K, W_K>`` with
    ``W_i = read_i + B_i^*(W_(i-1))`` (``B_i^*(X) = X + E_n[J_i X J_i^T]``, the backward step's adjoint;
    ``preact`` adds its stream term inside ``B_i^*``), so no backward chain is run
    (:func:`draw_layer_moments` runs it, the reference).  Every block's forward quantities depend on
    ``K`` through the branch multiplier, so each depth is its own pass."""
    check_spec(spec)
    forward = _forward_blocks(spec, x, spec.depth, method)
    ps, B, pts = spec.positions, spec.batch, forward["points"]
    W = np.zeros((pts, pts))
    for block in forward["blocks"]:
        inner = W + block["stream"] if "stream" in block else W
        W = block["read"] + inner + block["adjoint"](inner)
    layers = spec.depth * (2 if spec.branch == "preact" else 1)
    # <G_K, W_K> = tr(G_K W_K), G_K = scale (heads (x) 1): the positions of each pair of samples summed
    return W.reshape(B, ps, B, ps).sum(axis=(1, 3)).T * _head_scale(spec) / (pts * layers)


def _draws(spec: ArchSpec, draws: int, seed: int, input_var: float):
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    if not float(input_var) > 0:
        raise ValueError(f"input_var must be > 0, got {input_var!r}")
    rng = np.random.default_rng(seed)
    shape = (spec.batch, spec.input_channels) + (spec.spatial,) * spec.dim
    return [rng.normal(0.0, np.sqrt(float(input_var)), shape) for _ in range(draws)]


def _depths(depths) -> list[int]:
    ks = [int(k) for k in np.ravel(depths)]
    if not ks or any(k < 1 or k != d for k, d in zip(ks, np.ravel(depths))):
        raise ValueError(f"depths must be positive integers (block counts), got {depths!r}")
    return ks


def coupling_draws(spec: ArchSpec, depths, draws: int = 32, seed: int = 0, input_var: float = 1.0,
                   progress=None) -> np.ndarray:
    """:func:`head_couplings` for each of ``draws`` Gaussian input draws: shape ``(draws, len(depths), B,
    B)``.  Draws are numpy's ``default_rng(seed)``, one ``(B, c_in, N[, N])`` array each, the same for
    every depth and padding; each costs one pass per depth.  ``progress(done,
    total)`` is called after each draw."""
    check_spec(spec)
    ks = _depths(depths)
    xs = _draws(spec, draws, seed, input_var)
    out = np.empty((len(xs), len(ks), spec.batch, spec.batch))
    for j, x in enumerate(xs):
        out[j] = [head_couplings(spec.with_(depth=k), x) for k in ks]
        if progress is not None:
            progress(j + 1, len(xs))
    return out


def loss_directions(spec: ArchSpec, draws: int, seed: int = 0) -> np.ndarray:
    """The loss directions that go with :func:`coupling_draws`' input draws (numpy ``default_rng([seed,
    1])``, one ``(B, outputs)`` array per draw): ``(draws, B, outputs)``."""
    rng = np.random.default_rng([seed, 1])
    return np.stack([rng.normal(size=(spec.batch, spec.outputs)) for _ in range(draws)])


def s_given(spec: ArchSpec, couplings: np.ndarray, directions: np.ndarray | None = None) -> np.ndarray:
    """``E[s_bar | x, r]`` (``(draws, depths)``) from :func:`coupling_draws`' ``couplings`` and one
    loss direction per draw (``(draws, B, outputs)``), or ``E[s_bar | x]`` (the directions' exact mean,
    ``outputs tr A``) with ``directions=None``."""
    if directions is None:
        return spec.outputs * np.trace(couplings, axis1=-2, axis2=-1)
    heads = np.einsum("dbo,dco->dbc", directions, directions)
    return np.einsum("dbc,dkbc->dk", heads, couplings)


def s_bar_draws(spec: ArchSpec, depths, draws: int = 32, seed: int = 0, input_var: float = 1.0,
                progress=None, directions: bool = False) -> np.ndarray:
    """``E[s_bar | x]`` for each of ``draws`` Gaussian input draws (rows) at each ``K`` in ``depths``
    (columns).  Draws are numpy's ``default_rng(seed)``, one ``(B, c_in, N[, N])`` array each (then,
    with ``directions``, one ``(B, outputs)`` array of loss directions, and the rows are ``E[s_bar |
    x, r]``), the same for every depth and padding (:func:`head_couplings` per draw and depth).  ``progress(done, total)`` is called after each draw."""
    couplings = coupling_draws(spec, depths, draws, seed, input_var, progress)
    return s_given(spec, couplings, loss_directions(spec, draws, seed) if directions else None)


def s_bar(spec: ArchSpec, depths, draws: int = 32, seed: int = 0, input_var: float = 1.0) -> dict:
    """``E[s_bar]`` at each ``K`` in ``depths``, averaged over ``draws`` input draws: ``mean`` and its
    standard error ``se`` (sd over the draws / sqrt(draws))."""
    table = s_bar_draws(spec, depths, draws, seed, input_var)
    return {"mean": table.mean(axis=0), "se": table.std(axis=0, ddof=1) / np.sqrt(len(table)), "draws": len(table)}


def boundary_ratio(spec: ArchSpec, depths, draws: int = 32, seed: int = 0, input_var: float = 1.0,
                   progress=None) -> dict:
    """``E[s_bar]`` zero / circular at each ``K`` in ``depths`` (the eta* ratio is its inverse square
    root), both paddings on the same input draws: ``ratio`` and its standard error ``se`` (delta
    method, paired), with ``zero`` and ``circular`` (the two means)."""
    z = s_bar_draws(spec.with_(padding="zero"), depths, draws, seed, input_var, progress)
    c = s_bar_draws(spec.with_(padding="circular"), depths, draws, seed, input_var)
    mz, mc = z.mean(axis=0), c.mean(axis=0)
    ratio = mz / mc
    dev = z / mc - ratio * c / mc  # the ratio's influence per draw
    return {"ratio": ratio, "se": dev.std(axis=0, ddof=1) / np.sqrt(len(z)), "zero": mz, "circular": mc,
            "draws": len(z)}


def zero_padding_law(spec: ArchSpec, depths, draws: int = 32, seed: int = 0, input_var: float = 1.0,
                     seed_draws: int = 20000, progress=None) -> dict:
    """The law of ``s_bar`` over seeds of the zero-padded ``spec`` at each ``K`` in ``depths``, with the
    circular net as a control variate.  Its mean is the mode law's exact circular mean times the
    ratio of the two paddings' means over ``draws`` joint draws of inputs and loss directions (the
    same draws for both, so the ratio's error is small where the draw-to-draw spread is common), and
    ``gap = E ln s_bar - ln E s_bar`` is the circular seed law's (:func:`resnet_spectral.seed_law`,
    ``seed_draws`` draws) plus ``E ln(s_zero / s_circ) - ln ratio`` over the same draws.  Returns
    ``mean``, ``mean_se``, ``ratio``, ``ratio_se``, ``gap``, ``gap_se`` (arrays over ``depths``; the
    errors by the delta method, the circular seed law's included) and ``draws``.  ``progress(done,
    total)`` counts the ``2 draws`` recursions over both paddings."""
    from amutheory.symbolic.resnet import spectral as resnet_spectral
    check_spec(spec)
    ks = _depths(depths)
    zero, circ = spec.with_(padding="zero"), spec.with_(padding="circular")
    both = None if progress is None else (lambda offset: lambda done, _: progress(offset + done, 2 * draws))
    z = s_bar_draws(zero, ks, draws, seed, input_var, both and both(0), directions=True)
    c = s_bar_draws(circ, ks, draws, seed, input_var, both and both(draws), directions=True)
    mz, mc, d = z.mean(axis=0), c.mean(axis=0), len(z)
    ratio = mz / mc
    ratio_se = (z / mc - ratio * c / mc).std(axis=0, ddof=1) / np.sqrt(d)
    log_ratio = np.log(z / c)
    # E ln s_z - ln E s_z - (E ln s_c - ln E s_c), estimated on the draws; its influence per draw
    excess = log_ratio.mean(axis=0) - np.log(ratio)
    excess_se = (log_ratio - z / mz + c / mc).std(axis=0, ddof=1) / np.sqrt(d)
    table = resnet_spectral.seed_table(circ, seed_draws, seed, input_var)
    laws = [resnet_spectral.seed_law(circ.with_(depth=k), table, input_var) for k in ks]
    exact = np.array([law["mean"] for law in laws])
    gap_c, gap_c_se = np.array([law["gap"] for law in laws]), np.array([law["gap_se"] for law in laws])
    return {"mean": exact * ratio, "mean_se": exact * ratio_se, "ratio": ratio, "ratio_se": ratio_se,
            "gap": gap_c + excess, "gap_se": np.hypot(gap_c_se, excess_se), "draws": d}


def point_law(spec: ArchSpec, depths, draws: int = 32, seed: int = 0, input_var: float = 1.0,
              progress=None) -> dict:
    """The law of ``s_bar`` over seeds at each ``K`` in ``depths`` by Monte Carlo over ``draws`` input
    draws (the law given each draw exact), the loss directions averaged exactly: ``s_bar`` given the inputs
    is the quadratic form ``sum_o r_o^T A r_o`` of the directions (:func:`head_couplings`' ``A``; ``r_o`` the
    ``B`` directions of output ``o``), ``Q = sum_i lambda_i z_i^2`` over ``A``'s eigenvalues each taken
    ``outputs`` times, so ``E[s_bar | x] = outputs tr A`` and ``E[ln s_bar | x]``, ``Var[ln s_bar | x]`` are
    the Mellin moments of that spectrum (:func:`amutheory.symbolic.primitives.spread.log_moments_of_spectrum`,
    quadrature).  Returns ``mean`` with ``mean_se`` (only the inputs' spread is left in it), ``gap = E ln
    s_bar - ln E s_bar`` with ``gap_se`` (delta method), ``var`` (``Var[ln s_bar]`` over seeds at infinite width:
    the directions' part given the inputs, averaged, plus the inputs' spread of ``E[ln s_bar | x]``) with
    ``var_se``, and ``draws``.  For what has no exact control variate (ReLU ``conv-mlp``; a linear zero-padded
    net has :func:`zero_padding_law`)."""
    return point_law_of(spec, coupling_draws(spec, depths, draws, seed, input_var, progress))


def point_law_of(spec: ArchSpec, couplings: np.ndarray) -> dict:
    """:func:`point_law` from :func:`coupling_draws`' ``couplings`` (``(draws, depths, B, B)``), with ``per_draw``
    (``E[s_bar | x]``, ``(draws, depths)``) besides."""
    from amutheory.symbolic.primitives.spread import log_moments_of_spectrum

    given_x = s_given(spec, couplings)
    lam = np.clip(np.linalg.eigvalsh(couplings), 0.0, None)  # (draws, depths, B)
    moments = np.array([[log_moments_of_spectrum(np.repeat(row, spec.outputs)) for row in per_draw]
                        for per_draw in lam])  # (draws, depths, 2): E ln Q - ln E Q, Var ln Q
    mean_log_x = np.log(given_x) + moments[..., 0]  # E[ln s_bar | x]
    mean, d = given_x.mean(axis=0), len(given_x)
    gap = mean_log_x.mean(axis=0) - np.log(mean)
    spread = moments[..., 1] + (mean_log_x - mean_log_x.mean(axis=0)) ** 2 * d / (d - 1)
    return {"mean": mean, "mean_se": given_x.std(axis=0, ddof=1) / np.sqrt(d), "gap": gap,
            "gap_se": (mean_log_x - given_x / mean).std(axis=0, ddof=1) / np.sqrt(d),
            "var": spread.mean(axis=0), "var_se": spread.std(axis=0, ddof=1) / np.sqrt(d), "draws": d,
            "per_draw": given_x}
