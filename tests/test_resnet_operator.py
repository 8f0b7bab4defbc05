"""The exact law of linear residual nets over their points, either padding (amutheory.symbolic.resnet.operator),
and the position-valued planar pairings it is built from (amutheory.symbolic.primitives.operator_planar).

Kinds of evidence: the pairing rule at one point is the scalar planar count (Hypothesis over random
words); the position-valued rule against random zero-padded conv matrices, free blocks included;
the law with circular padding is the mode law draw by draw (Hypothesis over branches, inits,
kernels, sizes, batches, dimensions and depths); real zero-padded nets (torch, the one-step probe)
against the law given each seed's inputs and loss directions, nothing fitted; the boundary ratio's
saturation in K; the API and CLI routes and their errors.  The derivation is
``derivations/10_zero_padded_residual.py``.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import exact_resnet_law, predict
from amutheory.cli import main
from amutheory.measure.probe import draw_seed, probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import operator_planar as O
from amutheory.symbolic.primitives import planar as P
from amutheory.symbolic.resnet import operator as ro
from amutheory.symbolic.resnet import spectral as rs
INITS = ("k-last", "k-all", "k-squared", "sqrt-multiplier")
CASES = [(b, i) for b in ro.BRANCHES for i in INITS]


def linear(branch, init, **kw):
    """A residual net of the tests' geometry, linear unless ``activation`` says otherwise."""
    kw = {"kernel": 3, "spatial": 6, "batch": 2, "depth": 3, "width": 64, "input_channels": 3, "activation": "linear",
          **kw}
    return ArchSpec(family="resnet", branch=branch, init=init, **kw)


# --------------------------------------------------------------------------- the pairing rule
LETTERS = [("W1", False), ("W1", True), ("W2", False), ("W2", True)]


@settings(max_examples=60, deadline=None)
@given(word=st.lists(st.sampled_from(LETTERS), min_size=0, max_size=8), s1=st.floats(0.1, 3), s2=st.floats(0.1, 3))
def test_one_point_is_the_scalar_planar_count(word, s1, s2):
    """At ``P = 1`` (every map the identity) the position-valued expectation of any word is
    :func:`planar.tau` of it: the same non-crossing pairings with the same weights."""
    op = P.mul(*[O.layer(n, "conv", s) for n, s in word]) if word else P.scalar(1)
    value = O.compile_expectation(op, (O.gain("W1"), O.gain("W2")))((s1, s2), O.Kernels(1, {}, lambda x: x))
    scalar = P.tau(P.mul(*[P.letter(n, None, s) for n, s in word]) if word else P.scalar(1), {"W1": s1, "W2": s2}, 1)
    assert float(np.sum(value)) == pytest.approx(float(scalar), rel=1e-12, abs=1e-12)


def _shifts(N, k, padding):
    """The padded shifts ``S_t`` of one axis as ``N x N`` matrices."""
    out = []
    for t in range(-(k // 2), k // 2 + 1):
        S = np.zeros((N, N))
        for p in range(N):
            if padding == "circular" or 0 <= p + t < N:
                S[p, (p + t) % N] = 1.0
        out.append(S)
    return out


def _conv(rng, n, shifts, gain):
    """``sum_t S_t (x) W_t`` with independent ``n x n`` taps of variance ``gain / (n k)``, on the
    point-major index ``(point, channel)``."""
    k = len(shifts)
    return sum(np.kron(S, rng.normal(0.0, np.sqrt(gain / (n * k)), (n, n))) for S in shifts)


def _partial(A, pts, n):
    """``E_n``: the channel-normalised partial trace of ``A`` on ``(point, channel)``."""
    return np.einsum("aibi->ab", A.reshape(pts, n, pts, n)) / n


def test_position_valued_pairings_against_random_zero_padded_convs():
    """Two zero-padded convs and a free block ``M = (I + V) C (I + V)^T`` built from a third, at
    ``n = 200``, ``N = 5``: the planar expectation of ``W_2 W_1 M^T W_1^T X W_1 M W_1^T W_2^T`` (with
    ``m`` and ``Phi`` read off the same ``M``) matches the random matrices.  The normalised partial
    traces of one draw fluctuate by ``O(1/n)`` and carry ``O(1/n)`` non-planar terms, a few per cent
    of the entries at n = 200; the tolerance, 5% of the largest entry, is about twice that."""
    rng = np.random.default_rng(3)
    n, N = 200, 5
    shifts = _shifts(N, 3, "zero")
    w1, w2, v = (_conv(rng, n, shifts, g) for g in (1.3, 0.8, 0.5))
    C = np.diag(np.arange(1.0, N + 1)) + 0.3
    M = (np.eye(N * n) + v) @ np.kron(C, np.eye(n)) @ (np.eye(N * n) + v).T
    X = np.diag(rng.uniform(0.5, 2.0, N))
    big = lambda A: np.kron(A, np.eye(n))  # noqa: E731
    direct = _partial(w2 @ w1 @ M.T @ w1.T @ big(X) @ w1 @ M @ w1.T @ w2.T, N, n)
    T = lambda Y: sum(S @ Y @ S.T for S in shifts) / 3  # noqa: E731
    rows = M.reshape(N, n, N, n)  # Phi(E_c)(a, b) = sum_{j, i} M[(c, j), (a, i)] M[(c, j), (b, i)] / n
    phi_table = np.einsum("cjai,cjbi->cab", rows, rows) / n
    w1l, w2l = O.layer("W1", "conv"), O.layer("W2", "conv")
    word = P.mul(w2l, w1l, O.free(True), O.adjoint(w1l), O.atom("X"), w1l, O.free(), O.adjoint(w1l), O.adjoint(w2l))
    law = O.compile_expectation(word, (O.gain("W1"), O.gain("W2")))(
        (1.3, 0.8), O.Kernels(N, {"X": X}, T, _partial(M, N, n), phi_table))
    assert np.abs(law - direct).max() < 0.05 * np.abs(direct).max(), (law, direct)
    # the pair map is T, not the circular one: the corner entries feel the boundary
    assert abs(T(np.eye(N))[0, 0] - 2 / 3) < 1e-12


def test_phi_of_a_non_diagonal_kernel_is_refused():
    k = O.Kernels(2, {"Y": np.ones((2, 2))}, lambda x: x, np.eye(2), np.stack([np.eye(2)] * 2))
    with pytest.raises(ValueError, match="not diagonal"):
        O.evaluate(("phi", ("prod", (("atom", "Y"),))), k)
    with pytest.raises(ValueError, match="kind"):
        O.layer("W", "dense")


# --------------------------------------------------------------------------- the law
def _mode_law_given_inputs(spec, x):
    """The mode law's ``E[s_bar | x]``: ``sum_q c_q w_q(x)`` (:func:`resnet_spectral.mode_coefficients`)."""
    cin, pts, B = spec.input_channels, spec.positions, spec.batch
    xh = np.fft.fftn(x, axes=tuple(range(-spec.dim, 0))).reshape(B, cin, pts)
    xi = np.einsum("bc,dcq->bdq", xh[..., 0].real, xh)
    return rs.mode_coefficients(spec) @ ((np.abs(xi) ** 2).sum(axis=(0, 1)) / (cin * pts**2 * B))


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(CASES), kernel=st.sampled_from([1, 3, 5]), spatial=st.integers(5, 8),
       batch=st.integers(1, 3), dim=st.sampled_from([1, 1, 2]), depth=st.integers(1, 12), seed=st.integers(0, 99))
def test_circular_padding_is_the_mode_law_draw_by_draw(case, kernel, spatial, batch, dim, depth, seed):
    """Given the inputs, the law over the points with circular padding equals the mode law to 1e-9:
    two derivations (Fourier modes with scalar planar counts; positions with kernel-valued ones)."""
    if dim == 2:
        spatial = min(spatial, 5)
    spec = linear(*case, kernel=kernel, spatial=spatial, batch=batch, dim=dim, depth=depth)
    x = np.random.default_rng(seed).normal(size=(batch, spec.input_channels) + (spatial,) * dim)
    assert ro.draw_layer_moments(spec, x).mean() == pytest.approx(_mode_law_given_inputs(spec, x), rel=1e-9)


def test_directions_enter_through_their_gram():
    """The law given the loss directions depends on them through ``r r^T`` only, linearly: directions
    with ``r r^T = outputs I`` give the law averaged over them, and two draws' average is the law at
    the average of their Grams."""
    spec = linear("preact", "k-last", padding="zero", outputs=2)
    x = np.random.default_rng(0).normal(size=(2, 3, 6))
    np.testing.assert_allclose(ro.draw_layer_moments(spec, x, np.sqrt(2) * np.array([[1.0, 0.0], [0.0, -1.0]])),
                               ro.draw_layer_moments(spec, x), rtol=1e-12)
    r1, r2 = np.random.default_rng(1).normal(size=(2, 2, 2))
    both = ro.draw_layer_moments(spec, x, r1) + ro.draw_layer_moments(spec, x, r2)
    stacked = ro.draw_layer_moments(spec.with_(outputs=4), x, np.hstack([r1, r2]))
    np.testing.assert_allclose(both, stacked, rtol=1e-12)


#: real zero-padded nets: n = 256, c_in = 16, kernel 3, K = 3, one per branch, one in 2D
REAL = [("conv-mlp", "k-last", {"spatial": 6, "batch": 2}),
        ("preact", "k-all", {"spatial": 6, "batch": 2}),
        ("conv", "sqrt-multiplier", {"spatial": 4, "batch": 2, "dim": 2})]


@pytest.mark.parametrize("branch, init, kw", REAL)
def test_law_matches_real_zero_padded_resnets(branch, init, kw):
    """Nothing fitted, 128 seeds, the law given each seed's inputs and loss directions.  Measured /
    law per seed has mean 1 within 4 standard errors (~2%) plus 3% for the O(1/n) terms the law
    leaves out (+1.5-2.5% at n = 256 on circular nets, where the mode law is exact).  The zero /
    circular ratio of the seed means (same seeds: same weights, inputs and directions) is the law's
    within 4 paired standard errors: the O(1/n) excess is common to both paddings."""
    spec = linear(branch, init, width=256, input_channels=16, outputs=8, padding="zero", **kw)
    seeds = range(128)
    # each seed's inputs and loss directions, drawn once: the same for both paddings (the generator draws
    # the weights first, and their number does not depend on the padding)
    inputs = [draw_seed(spec, s)[1:] for s in seeds]
    again = draw_seed(spec.with_(padding="circular"), seeds[-1])[1:]
    assert all(torch.equal(a, b) for a, b in zip(again, inputs[-1]))
    meas, law = {}, {}
    for pad in ("zero", "circular"):
        sp_ = spec.with_(padding=pad)
        meas[pad] = probe(sp_, seeds).s.mean(1)
        law[pad] = np.array([ro.draw_layer_moments(sp_, x.numpy(), r.numpy()).mean() for x, r in inputs])
    ratio = meas["zero"] / law["zero"]
    assert abs(ratio.mean() - 1) < 4 * ratio.std(ddof=1) / np.sqrt(len(ratio)) + 0.03, ratio.mean()
    mz, mc = meas["zero"].mean(), meas["circular"].mean()
    dev = meas["zero"] / mc - (mz / mc) * meas["circular"] / mc
    boundary = law["zero"].mean() / law["circular"].mean()
    assert abs(mz / mc - boundary) < 4 * dev.std(ddof=1) / np.sqrt(len(dev)), (mz / mc, boundary)
    assert boundary < 0.95  # the boundary is visible at this size


@pytest.mark.parametrize("case", CASES)
def test_boundary_ratio_saturates_in_depth(case):
    """For every stable convention the zero / circular ratio of the law settles as K grows: its
    change per doubling of K shrinks (at least by a third from K = 8..16 to 32..64), where a chain's
    ratio keeps falling like ``lambda_max^L``.  Same input draws at every K and padding."""
    spec = linear(*case, spatial=6, batch=1)
    r = ro.boundary_ratio(spec, [8, 16, 32, 64], draws=4, seed=0)["ratio"]
    early, late = abs(r[1] - r[0]), abs(r[3] - r[2])
    assert late < (2 / 3) * early + 1e-4, r


@pytest.mark.parametrize("kw, word", [({"activation": "gelu"}, "activation"),
                                      ({"activation": "relu", "branch": "conv"}, "branch"),
                                      ({"activation": "relu", "branch": "preact"}, "branch"),
                                      ({"shortcut": "projection"}, "shortcut"), ({"init": "none"}, "init"),
                                      ({"spatial": 12, "batch": 11}, "spatial")])
def test_out_of_scope_is_refused(kw, word):
    spec = linear("conv-mlp", "k-last", padding="zero").with_(**kw)
    with pytest.raises(ValueError, match=word):
        ro.draw_layer_moments(spec, np.zeros((spec.batch, 3, spec.spatial)))
    with pytest.raises(ValueError, match="x must have shape"):
        ro.draw_layer_moments(linear("conv", "k-last"), np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match="directions must have shape"):
        ro.draw_layer_moments(linear("conv", "k-last"), np.zeros((2, 3, 6)), np.zeros((3, 10)))
    with pytest.raises(ValueError, match="draws"):
        ro.s_bar(linear("conv", "k-last"), [2], draws=1)
    with pytest.raises(ValueError, match="depths"):
        ro.s_bar(linear("conv", "k-last"), [2.5])


def test_routing_predict_and_cli(capsys):
    """A linear zero-padded spatial net gets the law over its points; ``predict --constants derive``
    reports the boundary ratio (and for ``geo`` the gap) as Monte Carlo constants with their errors."""
    spec = linear("conv-mlp", "k-last", padding="zero")
    _, name, how = exact_resnet_law(spec)
    assert name == "resnet-points-conv-mlp-k-last-linear" and "zero-padded" in how
    pred = predict(spec, [2, 8], constants="derive")
    law = ro.zero_padding_law(spec, [2, 8], 32, 0)
    np.testing.assert_allclose(pred.s_bar, law["mean"], rtol=1e-12)
    ratio = pred.constants["boundary_ratio"]
    assert ratio.source == "monte-carlo" and ratio.error > 0 and 0.3 < ratio.value < 1
    typical = predict(spec, [2, 8], constants="derive", statistic="geo")
    np.testing.assert_allclose(typical.s_bar, law["mean"] * np.exp(law["gap"]), rtol=1e-12)
    assert typical.constants["typical_gap"].source == "monte-carlo"
    assert main(["predict", "--family", "resnet", "--branch", "conv", "--activation", "linear", "--padding", "zero",
                 "--spatial", "6", "--batch", "2", "--depths", "2,4", "--constants", "derive", "--json"]) == 0
    assert '"boundary_ratio"' in capsys.readouterr().out
    code = main(["predict", "--family", "resnet", "--branch", "conv", "--activation", "relu", "--padding", "zero",
                 "--spatial", "6", "--batch", "2", "--depths", "2,4", "--constants", "derive"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1


def test_zero_padding_law_against_plain_monte_carlo():
    """The control-variate mean equals the plain Monte-Carlo mean of the zero-padded law within their
    errors (4 combined standard errors): the circular net's exact mean only removes noise."""
    spec = linear("conv", "k-squared", padding="zero", batch=3)
    cv = ro.zero_padding_law(spec, [4], draws=48, seed=1, seed_draws=4000)
    plain = ro.s_bar(spec, [4], draws=200, seed=7)
    assert abs(cv["mean"][0] - plain["mean"][0]) < 4 * np.hypot(cv["mean_se"][0], plain["se"][0])


@settings(max_examples=15, deadline=None)
@given(case=st.sampled_from([("conv", "linear"), ("conv-mlp", "linear"), ("preact", "linear"), ("conv-mlp", "relu")]),
       init=st.sampled_from(INITS), padding=st.sampled_from(["circular", "zero"]), dim=st.sampled_from([1, 2]),
       depth=st.integers(1, 4), batch=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_the_probes_loops_and_outer_products_formed_in_p3_are_the_stacked_products(case, init, padding, dim, depth,
                                                                                  batch, seed):
    """``method="outer"`` (the point projectors as outer products, the ReLU loops around them held as rows, the
    outer-product terms summed in one batched product) gives the naive stack of ``P x P`` matrix products."""
    branch, activation = case
    spec = linear(branch, init, activation=activation, padding=padding, dim=dim, spatial=4 if dim == 1 else 3,
                  depth=depth, batch=batch)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, 3) + (spec.spatial,) * dim)
    r = rng.normal(size=(batch, spec.outputs))
    np.testing.assert_allclose(ro.draw_layer_moments(spec, x, r), ro.draw_layer_moments(spec, x, r, method="stack"),
                               rtol=1e-10)


def test_outer_and_stack_evaluations_agree():
    """The outer-product evaluation of the point projectors is the naive stack of matrix products."""
    spec = linear("conv-mlp", "k-all", padding="zero", batch=3, depth=4)
    x = np.random.default_rng(5).normal(size=(3, 3, 6))
    np.testing.assert_allclose(ro.draw_layer_moments(spec, x), ro.draw_layer_moments(spec, x, method="stack"),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="method"):
        ro.draw_layer_moments(spec, x, method="dense")


def test_boundary_command_for_residual_nets(capsys):
    """``boundary --family resnet``: the chains' keys per depth plus ``s_bar_ratio_se``; the slope shift
    is the law's local slope from the neighbours; ReLU preact gets a one-line refusal (exit 2)."""
    import json

    from amutheory.api import resnet_boundary

    args = ["boundary", "--family", "resnet", "--activation", "linear", "--spatial", "6", "--batch", "2",
            "--depths", "2,8", "--draws", "4", "--quiet", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("eta_ratio", "s_bar_ratio", "s_bar_ratio_se", "slope_shift", "constant_level", "claim_holds",
                "method", "law"):
        assert key in d, key
    spec = linear("conv-mlp", "k-last", padding="zero", depth=2)
    rows = resnet_boundary(spec, [2, 8], draws=4)
    assert [r["s_bar_ratio"] for r in rows] == pytest.approx(d["s_bar_ratio"], rel=1e-12)
    r = ro.boundary_ratio(spec, [1, 3], draws=4)["ratio"]
    assert rows[0]["slope_shift"] == pytest.approx(-0.5 * np.log(r[1] / r[0]) / np.log(3), rel=1e-10)
    assert main(["boundary", "--family", "resnet", "--branch", "preact", "--spatial", "6", "--batch", "2",
                 "--depths", "2"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="tolerance"):
        resnet_boundary(spec, [2], tolerance=0)


def test_benchmark_script(validate_script, capsys):
    import json

    bench = validate_script("benchmark_resnet_points")
    assert bench.main(["--depths", "2,3", "--width", "16", "--seeds", "3", "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stack_agreement"] < 1e-10 and out["law_s"] > 0 and len(out["measured_over_law"]) == 2
    assert out["einsum_s"] is None  # the three-mask loops exist with ReLU only
    assert bench.main(["--depths", "2", "--width", "16", "--seeds", "2", "--repeats", "1", "--activation", "relu",
                       "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the folded three-point contraction, the stack evaluation and the plain einsum give one law
    assert out["stack_agreement"] < 1e-10 and out["einsum_s"] > 0
    for argv in (["--seeds", "1"], ["--activation", "relu", "--branch", "preact"]):
        with pytest.raises(SystemExit) as exc:
            bench.main(argv)
        assert exc.value.code == 2
    assert "conv-mlp only" in capsys.readouterr().err


@pytest.mark.parametrize("shapes", [((6, 6), (6, 6)), ((6, 6), (4, 6, 6)), ((4, 6, 6), (6, 6)),
                                    ((4, 6, 6), (4, 6, 6))])
def test_three_point_contraction_is_the_einsum(shapes):
    """The middle of a three-mask loop, folded into stacks of matrix products where one factor is a
    single kernel, equals the plain einsum for every mix of kernels and stacks (random entries, so no
    structure hides a wrong index)."""
    rng = np.random.default_rng(3)
    a, b, three = rng.normal(size=shapes[0]), rng.normal(size=shapes[1]), rng.normal(size=(6, 6, 6))
    ref = np.einsum("...pc,...cq,pcq->...pq", a, b, three)
    assert ref.shape[-2:] == (6, 6)
    np.testing.assert_allclose(O._three_point(a, b, three), ref, rtol=1e-12, atol=1e-12)


def test_zero_padding_validation_script(tmp_path, capsys, validate_script):
    """``validate/studies/resnet_zero_padding.py``: one CSV block per (K, padding) with the law per seed, resumes
    without re-measuring, refuses another set-up, exits 2 for an unstable convention or bad input;
    its ratio is the seed means' ratio and its law ratio the per-seed laws', recomputed from the CSV."""
    import json

    zp = validate_script("resnet_zero_padding")
    out = tmp_path / "zp.csv"
    args = ["--width", "16", "--spatial", "5", "--batch", "2", "--depths", "2,4", "--seeds", "4", "--out", str(out),
            "--json"]
    assert zp.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    lines = [line.split(",") for line in out.read_text().splitlines()[1:]]
    assert len(lines) == 2 * 2 * 4
    for row in first["rows"]:
        col = {pad: [(float(f[9]), float(f[10])) for f in lines if int(f[6]) == row["depth"] and f[7] == pad]
               for pad in ("zero", "circular")}
        mean = {pad: np.mean([v for v, _ in col[pad]]) for pad in col}
        law = {pad: np.mean([w for _, w in col[pad]]) for pad in col}
        assert row["ratio"] == pytest.approx(mean["zero"] / mean["circular"], rel=1e-9)
        assert row["law_ratio"] == pytest.approx(law["zero"] / law["circular"], rel=1e-9)
    assert "slope_shift" in first["rows"][1] and "law_slope_shift" in first["rows"][1]
    assert zp.main(args) == 0  # resume: nothing re-measured, same numbers
    captured = capsys.readouterr()
    assert "skipped" in captured.err and json.loads(captured.out) == first
    with pytest.raises(SystemExit, match="another set-up"):
        zp.main([*args, "--init", "k-all"])
    assert zp.main([*args, "--init", "none"]) == 2
    assert zp.main([*args, "--spatial", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "forward-stable" in err[0] and "spatial" in err[1]
    relu = ["--activation", "relu", "--width", "16", "--spatial", "5", "--batch", "2", "--depths", "2,4", "--seeds", "4",
            "--json"]
    assert zp.main([*relu, "--out", str(tmp_path / "relu.csv")]) == 0  # ReLU conv-mlp: the law covers it
    assert "law_ratio" in json.loads(capsys.readouterr().out)["rows"][0]
    assert zp.main([*relu, "--branch", "preact", "--out", str(tmp_path / "preact.csv")]) == 0  # measured only
    assert "law_ratio" not in json.loads(capsys.readouterr().out)["rows"][0]



# --------------------------------------------------------------------------- ReLU conv-mlp: masks in the loops
def test_mask_loops_against_monte_carlo():
    """Products of kernels and ReLU masks in one channel loop (1 to 4 masks, one pair merging at a
    diagonal kernel) against 20 000 channels drawn from the points' Gaussian law: within 3% of the
    largest entry (the Monte Carlo's own error is ~1%)."""
    from amutheory.symbolic.chain.kernel_law import mask_kernel, mask_kernel3

    rng = np.random.default_rng(0)
    pts, n = 4, 20000
    A = rng.normal(size=(pts, 6))
    S = A @ A.T / 6
    D = (rng.multivariate_normal(np.zeros(pts), S, size=n) > 0).astype(float)
    mats = {"X": rng.normal(size=(pts, pts)), "Y": np.diag(rng.uniform(1, 2, pts)), "Z": rng.normal(size=(pts, pts))}
    k = O.Kernels(pts, mats, lambda v: v, masks={"D": (mask_kernel(S, "relu"), mask_kernel3(S, "relu"))})
    for word in ("XDZ", "XDZDX", "DXDZDX", "XDYDZDXD", "DYDYDXDZ"):
        direct = np.eye(pts)[None].repeat(n, 0)
        for c in word:
            direct = direct * D[:, None, :] if c == "D" else direct @ mats[c]
        direct = direct.mean(0)
        op = P.mul(*[O.mask("D") if c == "D" else O.atom(c) for c in word])
        law = O.compile_expectation(op, ())((), k)
        assert np.abs(law - direct).max() < 0.03 * np.abs(direct).max(), word
    with pytest.raises(ValueError, match="4 masks"):
        O.compile_expectation(P.mul(*[O.mask("D") if c == "D" else O.atom(c) for c in "XDZDXDZDX"]), ())((), k)


@pytest.mark.parametrize("init", INITS)
def test_relu_conv_mlp_at_one_point_is_the_dense_free_law(init):
    """At ``kernel = spatial = batch = 1`` the ReLU law over the points is the dense free law of
    :mod:`resnet_dense` (exact at infinite width for conv-mlp, and checked there against real dense
    nets), draw by draw: the law is homogeneous of degree 2 in ``q_0 = |x|^2 / c_in``.  1e-7: the
    mask functions clip correlations at 1."""
    from amutheory.symbolic.resnet import dense as rd
    for depth in (1, 3, 9):
        spec = linear("conv-mlp", init, activation="relu", kernel=1, spatial=1, batch=1, depth=depth, input_channels=5)
        x = np.random.default_rng(depth).normal(size=(1, 5, 1))
        q0 = (x**2).sum() / 5
        np.testing.assert_allclose(ro.draw_layer_moments(spec, x),
                                   rd.free_layer_moments(spec) / rd.stem_moment(spec) * q0**2, rtol=1e-7)


@pytest.mark.parametrize("padding", ["circular", "zero"])
def test_relu_law_matches_real_conv_mlp_nets(padding):
    """Spatial ReLU conv-mlp / k-last nets (n = 256, N = 6, B = 2, c_in = 16, K = 3, 96 seeds), the law
    given each seed's inputs and loss directions, nothing fitted: measured / law per seed has mean 1
    within 4 standard errors (~3%) plus 4% for the O(1/n) terms (dense ReLU nets at n = 256: +1 to +4%)."""
    spec = linear("conv-mlp", "k-last", activation="relu", width=256, input_channels=16, outputs=8, padding=padding)
    seeds = range(96)
    meas = probe(spec, seeds).s_bar
    law = np.array([ro.draw_layer_moments(spec, *(v.numpy() for v in draw_seed(spec, s)[1:])).mean() for s in seeds])
    ratio = meas / law
    assert abs(ratio.mean() - 1) < 4 * ratio.std(ddof=1) / np.sqrt(len(ratio)) + 0.04, ratio.mean()


def test_relu_routing_and_the_campaign_switch():
    """``predict --constants derive`` covers spatial ReLU conv-mlp nets through the Monte-Carlo law over
    the points; ``exact_resnet_law(monte_carlo=False)`` (the campaign's call) refuses the Monte-Carlo
    laws in one line, and spatial ReLU conv or preact nets are refused naming the branch's reason."""
    spec = linear("conv-mlp", "k-last", activation="relu")
    _, name, how = exact_resnet_law(spec)
    assert name == "resnet-points-conv-mlp-k-last-relu" and "masks" in how
    pred = predict(spec, [2, 3], constants="derive")
    law = ro.point_law(spec, [2, 3], 32, 0)
    np.testing.assert_allclose(pred.s_bar, law["mean"], rtol=1e-12)
    assert pred.constants["s_bar_mean"].source == "monte-carlo"
    for net in (spec, linear("conv", "k-last", padding="zero")):
        with pytest.raises(ValueError, match="monte_carlo"):
            exact_resnet_law(net, monte_carlo=False)
    with pytest.raises(ValueError, match="persist"):
        exact_resnet_law(linear("preact", "k-last", activation="relu"))


def test_point_law_script_against_a_campaign_folder(tmp_path, capsys, validate_script):
    """``validate/studies/resnet_point_law.py`` reads a campaign's measured ``s`` (nothing re-measured), puts
    the law given each seed beside it, writes one CSV block per (config, K), resumes, and exits 2 with
    one line for a folder that is no campaign or a config it does not have."""
    import csv
    import json

    from amutheory.campaign.presets import CampaignConfig
    from amutheory.campaign.results import CSV_COLUMNS, _block_rows

    spec = linear("conv-mlp", "k-last", width=32, padding="zero", depth=3)
    cfg = CampaignConfig("res-zero", spec, (2, 3), (2,), 4)
    with (tmp_path / "results.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for k in (2, 3):
            w.writerows(_block_rows(cfg, "zero", k, list(range(4)), probe(spec.with_(depth=k), range(4)).s))
    (tmp_path / "campaign.json").write_text(json.dumps({"protocol": {"input_var": 1.0},
                                                        "configs": {"res-zero": {"spec": spec.to_dict()}}}))
    pl = validate_script("resnet_point_law")
    args = ["--campaign", str(tmp_path), "--depths", "2,3", "--seeds", "4", "--json"]
    assert pl.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader((tmp_path / "point_law.csv").open()))
    assert len(rows) == 8
    for r in first["rows"]:
        block = [row for row in rows if int(row["depth"]) == r["depth"]]
        meas = np.mean([float(row["s_bar"]) for row in block])
        law = np.mean([float(row["law"]) for row in block])
        assert r["ratio"] == pytest.approx(meas / law, rel=1e-9) and r["ci"][0] <= r["ratio"] <= r["ci"][1]
    assert pl.main(args) == 0  # resume: the law is not computed again
    captured = capsys.readouterr()
    assert "skipped" in captured.err and json.loads(captured.out) == first
    assert pl.main(["--campaign", str(tmp_path), "--configs", "nope"]) == 2
    for bad in (["--campaign", str(tmp_path / "missing")], ["--campaign", str(tmp_path), "--fresh"]):
        with pytest.raises(SystemExit) as exc:
            pl.main(bad)
        assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3
    # --fresh: the seeds of held_out_reseed.csv, paired with the law given each of them
    from amutheory.measure.probe import law_given_seeds

    fresh = list(range(1000, 1004))
    s_bar = probe(spec.with_(depth=3), fresh).s_bar
    with (tmp_path / "held_out_reseed.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("campaign", "config", "depth", "seed", "s_bar"))
        w.writerows((str(tmp_path), "res-zero", 3, sd, v) for sd, v in zip(fresh, s_bar))
    assert pl.main(["--campaign", str(tmp_path), "--depths", "3", "--seeds", "4", "--fresh", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seeds"] == "fresh" and len(out["rows"]) == 1
    law = law_given_seeds(spec.with_(depth=3), fresh)
    assert out["rows"][0]["ratio"] == pytest.approx(np.mean(s_bar) / np.mean(law), rel=1e-9)
    assert len(list(csv.DictReader((tmp_path / "point_law_fresh.csv").open()))) == 4
    # --fresh FILE: another seed set's file of the folder, its own output file, the same pairing
    (tmp_path / "set_b.csv").write_text((tmp_path / "held_out_reseed.csv").read_text())
    assert pl.main(["--campaign", str(tmp_path), "--depths", "3", "--seeds", "4", "--fresh", "set_b.csv", "--json"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert other["fresh_file"] == "set_b.csv" and other["rows"][0]["ratio"] == pytest.approx(out["rows"][0]["ratio"])
    assert len(list(csv.DictReader((tmp_path / "point_law_set_b.csv").open()))) == 4
    for bad in (["--fresh", "nope.csv"], ["--fresh", str(tmp_path / "set_b.csv")]):
        with pytest.raises(SystemExit) as exc:
            pl.main(["--campaign", str(tmp_path), *bad])
        assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


def test_width_line_recovers_a_known_limit(validate_script):
    """``limit_line`` of ``validate/studies/resnet_width_law.py`` on synthetic seeds whose measured / law is
    ``a + c / n`` times independent noise (sd 0.05 per seed, 400 seeds per width): it returns ``a`` and
    ``c`` within 4 of their bootstrap standard errors (the 95% CI's half-width / 1.96) and its CI holds
    the true limit; a limit of 1.1 is excluded from holding 1 (its standard error is ~0.01).  The
    line's chi-square test accepts those seeds and rejects ratios that fall like ``1/n^2``."""
    wl = validate_script("resnet_width_law")
    rng = np.random.default_rng(3)
    for a, c in ((1.0, 5.0), (1.1, 5.0)):
        blocks = {}
        for n in (128, 256, 512, 1024):
            law = rng.uniform(0.5, 2.0, 400)
            blocks[n] = (law * (a + c / n) * rng.normal(1, 0.05, 400), law)
        line = wl.limit_line(blocks)
        se_a = (line["limit_ci"][1] - line["limit_ci"][0]) / 3.92
        se_c = (line["excess_coefficient_ci"][1] - line["excess_coefficient_ci"][0]) / 3.92
        assert abs(line["limit"] - a) < 4 * se_a and abs(line["excess_coefficient"] - c) < 4 * se_c
        assert line["limit_ci"][0] <= a <= line["limit_ci"][1]
        assert line["limit_inside"] == (a == 1.0)
        assert line["line_dof"] == 2 and line["line_p"] > 1e-3  # on the line: p uniform, fails 1 in 1000
    curved = {n: (np.ones(400) * (1 + 3000 / n**2) * rng.normal(1, 0.05, 400), np.ones(400)) for n in (32, 64, 128, 256)}
    assert wl.limit_line(curved)["line_p"] < 1e-3  # 1/n^2 with +290% .. +5%: far off any 1/n line


def test_width_law_script(tmp_path, capsys, validate_script):
    """``validate/studies/resnet_width_law.py`` measures real nets at each width, puts the law given each seed
    beside them (written a chunk of seeds at a time), recomputes its ratios from those rows, measures
    only the seeds a rerun adds, resumes without measuring again, refuses another set-up in the same
    file, and exits 2 with one line for one width or a net the law does not cover."""
    import csv
    import json

    wl = validate_script("resnet_width_law")
    out = tmp_path / "w.csv"
    args = ["--widths", "32,64", "--depths", "1,2", "--seeds", "4", "--chunk", "3", "--out", str(out), "--json"]
    assert wl.main(args) == 0
    capsys.readouterr()
    args[5] = "6"  # two more seeds: only they are measured, the first four are read back
    assert wl.main(args) == 0
    captured = capsys.readouterr()
    first = json.loads(captured.out)
    assert captured.err.count(": 2 seeds measured") == 4
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 24 and [d["depth"] for d in first["depths"]] == [1, 2]
    for d in first["depths"]:
        for r in d["rows"]:
            block = [row for row in rows if int(row["depth"]) == d["depth"] and int(row["width"]) == r["width"]]
            ratio = np.mean([float(row["s_bar"]) for row in block]) / np.mean([float(row["law"]) for row in block])
            assert r["ratio"] == pytest.approx(ratio, rel=1e-9)
    spec = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu", kernel=3, spatial=4,
                    batch=1, input_channels=3, depth=2, width=64)
    row = next(r for r in rows if r["depth"] == "2" and r["width"] == "64" and r["seed"] == "3")
    assert float(row["s_bar"]) == pytest.approx(float(probe(spec, [3]).s_bar[0]), rel=1e-9)
    _, x, r = draw_seed(spec, 3)  # the law column is the law given that seed's own inputs and directions
    assert float(row["law"]) == pytest.approx(float(ro.draw_layer_moments(spec, x.numpy(), r.numpy()).mean()), rel=1e-12)
    assert wl.main(args) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "measured" not in captured.err and json.loads(captured.out) == first
    with pytest.raises(SystemExit, match="another set-up"):
        wl.main(args + ["--batch", "2"])
    for bad in (["--widths", "64"], ["--branch", "preact"], ["--spatial", "12", "--batch", "12"]):
        with pytest.raises(SystemExit) as exc:
            wl.main(bad + ["--out", str(out)])
        assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3


def test_covers_is_check_spec_as_a_bool():
    """``covers`` answers what ``check_spec`` refuses: ReLU conv-mlp and linear nets in, ReLU ``conv``
    and ``preact`` and more than ``MAX_POINTS`` points out."""
    base = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu", kernel=3, spatial=4,
                    batch=1, depth=2, width=32)
    assert ro.covers(base) and ro.covers(base.with_(branch="preact", activation="linear"))
    for spec in (base.with_(branch="conv", init="k-squared"), base.with_(branch="preact"),
                 base.with_(spatial=12, batch=12)):
        assert not ro.covers(spec)
        with pytest.raises(ValueError):
            ro.check_spec(spec)


# --------------------------------------------------------------------------- every loss direction from one pass
@settings(max_examples=12, deadline=None)
@given(case=st.sampled_from([("conv", "linear"), ("conv-mlp", "linear"), ("preact", "linear"), ("conv-mlp", "relu")]),
       init=st.sampled_from(INITS), padding=st.sampled_from(["circular", "zero"]), dim=st.sampled_from([1, 2]),
       depth=st.integers(1, 4), batch=st.integers(1, 3), outputs=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_head_couplings_give_the_law_for_every_loss_direction_and_their_exact_mean(case, init, padding, dim, depth,
                                                                                   batch, outputs, seed):
    """``head_couplings`` (one adjoint recursion, no backward chain) reproduces the backward chain of
    ``draw_layer_moments`` for a drawn loss direction and, as ``outputs tr A``, its mean over the directions."""
    branch, activation = case
    spec = linear(branch, init, activation=activation, padding=padding, dim=dim, spatial=4 if dim == 1 else 3,
                  depth=depth, batch=batch, outputs=outputs)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, 3) + (spec.spatial,) * dim)
    r = rng.normal(size=(batch, outputs))
    A = ro.head_couplings(spec, x)
    assert np.sum((r @ r.T) * A) == pytest.approx(ro.draw_layer_moments(spec, x, r).mean(), rel=1e-10)
    assert outputs * np.trace(A) == pytest.approx(ro.draw_layer_moments(spec, x).mean(), rel=1e-10)


def test_point_laws_mean_averages_the_loss_directions_exactly():
    """``point_law``'s mean is the mean over its input draws of the law given each input (the directions' exact
    mean); ``s_bar_draws(directions=True)`` takes one drawn direction per input (``loss_directions``)."""
    spec = linear("conv-mlp", "k-last", activation="relu", depth=2)
    law = ro.point_law(spec, [1, 2], 4, 7)
    xs = ro._draws(spec, 4, 7, 1.0)
    given_x = np.array([[ro.draw_layer_moments(spec.with_(depth=k), x).mean() for k in (1, 2)] for x in xs])
    np.testing.assert_allclose(law["mean"], given_x.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(law["mean_se"], given_x.std(axis=0, ddof=1) / 2, rtol=1e-10)
    drawn = ro.s_bar_draws(spec, [1, 2], 4, 7, directions=True)
    rs_ = ro.loss_directions(spec, 4, 7)
    np.testing.assert_allclose(drawn[:, 1], [ro.draw_layer_moments(spec, x, r).mean() for x, r in zip(xs, rs_)],
                               rtol=1e-10)


def test_point_laws_log_moments_are_the_directions_exact_average():
    """``point_law``'s gap and spread take the loss directions' part exactly (the Mellin moments of each input
    draw's quadratic form); 4000 drawn directions per input draw agree within their Monte Carlo error."""
    spec = linear("conv-mlp", "k-last", activation="relu", depth=2, batch=3, spatial=4, outputs=4)
    law = ro.point_law(spec, [2], 8, 3)
    couplings = ro.coupling_draws(spec, [2], 8, 3)[:, 0]
    r = np.random.default_rng(9).normal(size=(4000, 3, 4))
    heads = np.einsum("nbo,nco->nbc", r, r)
    logs = np.log(np.einsum("nbc,dbc->dn", heads, couplings))  # (draws, directions)
    per_draw = logs.mean(axis=1)                                 # E[ln s | x], drawn
    exact = np.log(law["mean"][0]) + law["gap"][0]               # mean over the draws of the exact E[ln s | x]
    se = np.sqrt(np.mean(logs.var(axis=1)) / 4000 / len(couplings))
    assert abs(per_draw.mean() - exact) < 4 * se + 1e-9
    spread = np.mean(logs.var(axis=1)) + per_draw.var(ddof=1)
    assert spread == pytest.approx(law["var"][0], rel=0.05)


def test_the_relu_laws_slope_reads_its_neighbours_on_the_first_draws_and_its_level_on_all():
    """``predict --law resnet-points`` with ReLU: ``s_bar`` at the depths asked is ``point_law`` over every draw, the
    local slope the secant through ``K - 1, K + 1`` on the first ``POINT_SLOPE_DRAWS`` draws (the same inputs), with
    its Monte Carlo error reported."""
    from amutheory.laws.resnet_exact import POINT_SLOPE_DRAWS
    from amutheory.stats import eta_slope_between

    spec = linear("conv-mlp", "k-last", activation="relu", depth=4, batch=2, spatial=4)
    pred = predict(spec, [3], law="resnet-points", draws=6)
    level = ro.point_law(spec, [3], 6, 0)
    np.testing.assert_allclose(pred.s_bar, level["mean"], rtol=1e-12)
    few = ro.point_law(spec, [2, 4], POINT_SLOPE_DRAWS, 0)["mean"]
    np.testing.assert_allclose(pred.local_slope, eta_slope_between(few[0], few[1], 2, 4), rtol=1e-10)
    assert pred.constants["local_slope_mc_se"].value > 0
