"""The exact mode-by-mode law of linear circular residual nets (amutheory.symbolic.resnet.spectral).

Kinds of evidence: SymPy identities (at ``rho = D = 1`` every block formula is the dense law's);
the planar pairing counts (``lambda_q``, ``rho_J``, the sources' spread and covariance) against
random conv matrices; the input Gram's moments against Monte Carlo; properties over random K,
widths, kernels, spatial sizes, batches and dimensions (the dense law at ``k = N = B = 1``, the
derived exponent, eta* falling with K); real nets (torch, the one-step probe) against the law with
nothing fitted; the API, CLI and campaign routes.  The derivation is
``derivations/09_linear_spatial_residual.py``.
"""

import json

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import derive, exact_resnet_law, predict
from amutheory.cli import main
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import dense as rd
from amutheory.symbolic.resnet import spectral as rs
pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")

INITS = ("k-last", "k-all", "k-squared", "sqrt-multiplier")
CASES = [(b, i) for b in rs.BRANCHES for i in INITS]


def linear(branch, init, **kw):
    kw = {"kernel": 3, "spatial": 8, "batch": 8, "depth": 4, "width": 64, **kw}
    return ArchSpec(family="resnet", branch=branch, init=init, activation="linear", **kw)


@pytest.mark.parametrize("branch", rs.BRANCHES)
def test_every_block_formula_is_the_dense_one_at_the_zero_mode_of_a_1x1_conv(branch):
    """``rho = D = 1``, ``beta = q``: the mode recursion, the read and the sources are the dense law's
    (linear moments) as SymPy expressions, not only as numbers."""
    mode, dense = rs.mode_block_recursion(branch), rd.block_recursion(branch)
    to_dense = {rs.rho: 1, rs.Dq: 1, rs.beta: rd.q, rs.s1: rd.c * rd.v1, rs.s2: rd.c * rd.v2, rs.m1: rd.m1,
                rs.m2: rd.m2, rs.alpha: rd.alpha}
    moments = {rd.D2h: 1, rd.D4h: 1, rd.D2x: 1, rd.D4x: 1, rd.Mx: rd.q,
               rd.Mh: rd.c * rd.v1 * rd.q}  # linear: E phi(h)^2 = Var h = c v1 q
    for key in ("eps2", "lam", "src", "src_var", "src_cov", "m1_next", "m2_next", "s_first"):
        assert sp.simplify(mode[key].subs(to_dense) - dense[key].subs(moments)) == 0, key


def _conv_pair(rng, n, k, omega, gain):
    """``W_hat(0)`` and ``W_hat(q)`` of a ``k``-tap conv with independent taps of variance ``gain / (n k)``."""
    taps = [rng.normal(0.0, np.sqrt(gain / (n * k)), (n, n)) for _ in range(k)]
    shifts = np.arange(k) - k // 2
    return sum(taps), sum(np.exp(1j * omega * t) * w for t, w in zip(shifts, taps))


@pytest.mark.parametrize("branch", rs.BRANCHES)
def test_planar_counts_against_random_conv_matrices(branch):
    """``lambda_q = tau(S_0 S_q) - tau(S_0) tau(S_q)``, ``rho_J``, the source's trace, spread and
    covariance with the block's Jacobians, each against n = 600 random conv matrices at mode
    1 of 8 (``rho = 0.80``), with gains large enough that the ``eps^4`` terms count.  The
    deviations are O(1/n) plus fluctuations of the same order (at n = 1200 they were < 0.006), so
    0.03 is ~5 times what is expected and ~10 times smaller than the dense value's distance
    (``rho = 1``: lambda 1.56 against 1.20 for conv), which is checked to be rejected."""
    rng = np.random.default_rng(3)
    n, k, omega = 600, 3, 2 * np.pi / 8
    D = 1 + 2 * np.cos(omega)
    rho = D / k
    a, g1, g2, beta = 1.0, 0.6, 0.7, 0.9
    eye = np.eye(n)
    w10, w1q = _conv_pair(rng, n, k, omega, g1)
    if branch == "conv":
        j0, jq, src = a * w10, a * w1q, a**2 * D * beta * eye
    elif branch == "conv-mlp":
        w2 = rng.normal(0.0, np.sqrt(g2 / n), (n, n))
        j0, jq, src = a * w2 @ w10, a * w2 @ w1q, a**2 * beta * (D * w2 @ w2.T + g1 * rho * eye)
    else:
        w20, w2q = _conv_pair(rng, n, k, omega, g2)
        j0, jq, src = a * w20 @ w10, a * w2q @ w1q, a**2 * D * beta * (w2q @ w20.T + g1 * rho * eye)

    def tau(x):
        return complex(np.trace(x) / n)

    s0, sq = (eye + j0).T @ (eye + j0), (eye + jq).conj().T @ (eye + jq)
    gain = 1 + tau(j0.T @ jq)
    measured = {"lam": tau(s0 @ sq) - tau(s0) * tau(sq), "rho_J": tau(j0.T @ jq) / tau(j0.T @ j0),
                "eps2": tau(j0.T @ j0), "src": tau(src), "src_var": tau(src @ src.conj().T) - abs(tau(src)) ** 2,
                "src_cov": tau((eye + j0).T @ src.conj().T @ (eye + jq)) - np.conj(tau(src)) * gain}
    rec = rs.mode_block_recursion(branch)
    subs = {rs.alpha: a, rs.s1: g1, rs.s2: g2, rs.rho: rho, rs.Dq: D, rs.beta: beta}
    for key, value in measured.items():
        assert abs(value.imag) < 0.03 and value.real == pytest.approx(float(rec[key].subs(subs)), abs=0.03), key
    dense_lam = float(rec["lam"].subs({**subs, rs.rho: 1}))
    assert abs(measured["lam"].real - dense_lam) > 0.1  # the cross-mode pairing costs rho: dense counts are rejected


def test_input_gram_weights_against_monte_carlo():
    """``sum_{b,b'} E|xi(b, b', q)|^2 = c_in v^2 P^2 B (B + (c_in + 1) [q = 0])`` for Gaussian inputs:
    4000 draws (B = 3, c_in = 2, N = 6); the per-mode mean's relative sd is below 1.5%, so 5%
    is over 3 sd."""
    rng = np.random.default_rng(4)
    spec = linear("conv", "k-last", batch=3, input_channels=2, spatial=6)
    x = rng.normal(size=(4000, spec.batch, spec.input_channels, spec.spatial))
    xh = np.fft.fft(x, axis=-1)
    xi = np.einsum("sbc,sdcq->sbdq", xh[..., 0].real, xh)
    measured = (np.abs(xi) ** 2).sum((1, 2)).mean(0) / (spec.input_channels * spec.spatial**2 * spec.batch)
    np.testing.assert_allclose(measured, rs.modes(spec)["weight"], rtol=0.05)


def test_dirichlet_kernel_and_mode_correlation():
    """``D(w) = sin(k w / 2) / sin(w / 2)`` for odd ``k`` (``k`` at the zero mode); ``rho = D / k^d``
    is 1 at the zero mode and the product over the axes in 2D."""
    for k in (1, 3, 5):
        w = 2 * np.pi * np.arange(1, 9) / 9
        d = rs.modes(linear("conv", "k-last", spatial=9, kernel=k))["D"]
        assert d[0] == k
        np.testing.assert_allclose(d[1:], np.sin(k * w / 2) / np.sin(w / 2), rtol=1e-12, atol=1e-12)  # D = 0 at some modes
    md = rs.modes(linear("conv", "k-last", dim=2, spatial=4, kernel=3))
    d1 = rs.modes(linear("conv", "k-last", spatial=4, kernel=3))["D"]
    np.testing.assert_allclose(md["D"], np.outer(d1, d1).ravel())
    assert md["rho"][0] == 1 and np.all(np.abs(md["rho"]) <= 1)


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(CASES), depth=st.integers(1, 40), width=st.integers(8, 1024),
       outputs=st.integers(1, 20), input_var=st.floats(0.2, 5.0))
def test_reduces_to_the_dense_law(case, depth, width, outputs, input_var):
    """At ``kernel = spatial = batch = 1`` the mode sum has one mode and the law is the dense one."""
    spec = linear(*case, kernel=1, spatial=1, batch=1, depth=depth, width=width, outputs=outputs)
    np.testing.assert_allclose(rs.layer_moments(spec, input_var), rd.layer_moments(spec, input_var), rtol=1e-10)


@settings(max_examples=30, deadline=None)
@given(case=st.sampled_from(CASES), kernel=st.sampled_from([1, 3, 5]), spatial=st.integers(5, 12),
       batch=st.integers(1, 8), dim=st.integers(1, 2), width=st.integers(16, 512))
def test_exponent_is_the_derived_one_and_eta_falls_where_it_should(case, kernel, spatial, batch, dim, width):
    """Over random kernels, spatial sizes, batches, dimensions and widths: the law's local slope of
    ``eta* ~ s_bar^(-1/2)`` at K = 2048..4096 is the derived exponent to 0.01 (the zero mode is the
    dense law, and every other mode grows at its power of K: a block's gain is 1 + O(1/K)).  eta*
    decreases with K for every convention whose derived exponent is negative -- from K = 1 on, but
    for conv-mlp / k-squared with ``k > 1`` only from ``K = k^d`` on: there the first layer's own
    update, ``k^d`` times the dense one in the zero mode (every tap gets the whole position-summed
    gradient) and falling like ``1/K^2`` with ``W_2``'s variance, dominates the shallowest nets
    (``test_k_squared_conv_mlp_eta_rises_first`` measures it)."""
    spec = linear(*case, kernel=kernel, spatial=spatial, batch=batch, dim=dim, width=width)
    s = rs.s_bar(spec, [2048, 4096])
    assert -0.5 * np.log(s[1] / s[0]) / np.log(2) == pytest.approx(float(derive(spec).exponent), abs=0.01)
    if float(derive(spec).exponent) < 0:
        first = kernel**dim if case == ("conv-mlp", "k-squared") else 1
        ks = [k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64) if k >= first]
        assert np.all(np.diff(rs.s_bar(spec, ks)) > 0)


@settings(max_examples=20, deadline=None)
@given(case=st.sampled_from(CASES), depth=st.integers(1, 30), outputs=st.integers(1, 20),
       input_var=st.floats(0.2, 5.0))
def test_exact_scalings(case, depth, outputs, input_var):
    """``s`` is linear in the outputs (the head's chi-square) and quadratic in the input variance
    (every term is degree 4 in the inputs and the law is bilinear in their Gram)."""
    spec = linear(*case, depth=depth)
    base = rs.layer_moments(spec)
    np.testing.assert_allclose(rs.layer_moments(spec.with_(outputs=outputs), input_var),
                               base * outputs / spec.outputs * input_var**2, rtol=1e-10)


#: real nets: one per branch, n = 256, c_in = 16 (so the inputs' Gram concentrates and 256 seeds
#: give a ~3% standard error), kernel 3, small spatial sizes and batches, one net in 2D
REAL = [("conv-mlp", "k-last", {"spatial": 4, "batch": 4, "depth": 3}),
        ("preact", "k-all", {"spatial": 4, "batch": 4, "depth": 3}),
        ("conv", "sqrt-multiplier", {"spatial": 3, "batch": 4, "depth": 3, "dim": 2})]


@pytest.mark.parametrize("branch, init, kw", REAL)
def test_law_matches_real_linear_resnets(branch, init, kw):
    """Nothing fitted, 256 seeds.  The mean: the seed mean of measured ``s_bar`` over the law is 1
    within 4 standard errors (~3% each) plus 3% for the O(1/n) terms the law leaves out (measured
    at n = 256, N = B = 8: +1.2% and +1.7% for conv-mlp and preact at K = 4, 1024 seeds).  The seed
    law: ``E ln s_bar`` is the law's ``ln E s_bar + gap`` within 4 standard errors (~0.03) plus
    0.03, and ``Var ln s_bar`` is the law's within 4 of its standard errors (~0.02) plus 0.06 for
    the finite width's extra spread (measured +0.03..+0.045 at n = 256 on these nets)."""
    spec = linear(branch, init, width=256, input_channels=16, outputs=20, **kw)
    s_bar = probe(spec, range(256)).s.mean(1)
    ratio = s_bar / rs.layer_moments(spec).mean()
    mean, se = ratio.mean(), ratio.std(ddof=1) / np.sqrt(len(ratio))
    assert abs(mean - 1) < 4 * se + 0.03, (mean, se)
    law = rs.seed_law(spec, rs.seed_table(spec, 20000))
    ln = np.log(s_bar)
    dev = ln - ln.mean()
    assert abs(ln.mean() - np.log(law["mean"]) - law["gap"]) < 4 * dev.std(ddof=1) / np.sqrt(len(ln)) + 0.03
    var_se = np.sqrt((np.mean(dev**4) - dev.var() ** 2) / len(ln))
    assert abs(dev.var(ddof=1) - law["var"]) < 4 * var_se + 0.06, (dev.var(ddof=1), law["var"], var_se)


def test_k_squared_conv_mlp_eta_rises_first():
    """The law says ``s_bar`` of a 2D conv-mlp / k-squared net (kernel 3, N = 5, B = 1) falls from
    K = 2 to 4 (157 to 84 at n = 128), so eta* *rises* there before the K^(-1) decay; real nets
    (n = 64, c_in = 16, 256 seeds) show the fall beyond 4 standard errors of the difference, and
    each depth's mean is the law's within 4 standard errors plus 10% (the O(1/n) excess at n = 64)."""
    spec = linear("conv-mlp", "k-squared", dim=2, spatial=5, batch=1, width=64, input_channels=16)
    means, ses = [], []
    for k in (2, 4):
        s_bar = probe(spec.with_(depth=k), range(256)).s.mean(1)
        means.append(s_bar.mean())
        ses.append(s_bar.std(ddof=1) / np.sqrt(len(s_bar)))
        law = rs.layer_moments(spec.with_(depth=k)).mean()
        assert abs(means[-1] / law - 1) < 4 * ses[-1] / law + 0.10
    assert means[0] - means[1] > 4 * np.hypot(*ses)
    assert rs.s_bar(spec, [2])[0] > rs.s_bar(spec, [4])[0]


@pytest.mark.parametrize("kw, word", [({"activation": "relu"}, "activation"), ({"padding": "zero"}, "padding"),
                                      ({"shortcut": "projection"}, "shortcut"), ({"init": "none"}, "init")])
def test_out_of_scope_is_refused(kw, word):
    spec = linear("conv-mlp", "k-last").with_(**kw)
    with pytest.raises(ValueError, match=word):
        rs.layer_moments(spec)
    with pytest.raises(TypeError, match="spec"):
        rs.layer_moments("conv")
    with pytest.raises(ValueError, match="input_var"):
        rs.layer_moments(linear("conv", "k-last"), input_var=0.0)


def test_exact_law_routing():
    """``exact_resnet_law``: the dense law for dense nets (ReLU included), the mode law for linear
    circular spatial nets, a one-line ValueError naming the field for a spatial ReLU preact net."""
    assert exact_resnet_law(linear("conv-mlp", "k-last", kernel=1, spatial=1, batch=1))[1].startswith("resnet-dense")
    fn, name, _ = exact_resnet_law(linear("preact", "k-last"))
    assert name == "resnet-modes-preact-k-last-linear"
    np.testing.assert_allclose(fn([4, 8], 1.0), rs.s_bar(linear("preact", "k-last"), [4, 8]))
    with pytest.raises(ValueError, match="kernel: the exact residual laws cover"):
        exact_resnet_law(linear("preact", "k-last").with_(activation="relu"))


def test_predict_derive_and_cli(capsys):
    """``predict --constants derive``: the mean is the law with nothing fitted, and so is the typical
    value, the mean times ``exp(gap(K))`` of the seed law (Monte Carlo, labelled so, with its error)."""
    from amutheory.api import SEED_DRAWS

    spec = linear("conv", "k-last", width=32)
    pred = predict(spec, [2, 8, 32], constants="derive")
    np.testing.assert_allclose(pred.s_bar, rs.s_bar(spec, [2, 8, 32]))
    assert pred.calibration is None and pred.law == "resnet-modes-conv-k-last-linear"
    typical = predict(spec, [2, 8, 32], constants="derive", statistic="geo")
    assert typical.calibration is None and typical.constants["typical_gap"].source == "monte-carlo"
    table = rs.seed_table(spec, SEED_DRAWS, 0)
    gaps = [rs.seed_law(spec.with_(depth=k), table)["gap"] for k in (2, 8, 32)]
    np.testing.assert_allclose(typical.s_bar, np.array(pred.s_bar) * np.exp(gaps), rtol=1e-10)
    assert typical.constants["typical_gap"].value == pytest.approx(gaps[-1])
    base = ["predict", "--family", "resnet", "--branch", "conv-mlp", "--init", "k-last", "--depths", "2,8",
            "--constants", "derive", "--quiet", "--json"]
    assert main(base + ["--activation", "linear"]) == 0
    assert '"law": "resnet-modes-conv-mlp-k-last-linear"' in capsys.readouterr().out
    assert main([*base[:3], "--branch", "preact", *base[5:]]) == 2  # ReLU preact, spatial: no exact law
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kernel" in err[0]


def test_campaign_reports_the_exact_law_where_it_covers():
    """The campaign's residual analysis: a linear circular config gets ``exact_law`` (covered, every
    K an independent check of the mean, verdict keys built as the calibrated laws'), reported beside
    ``selected_law`` (the calibrated pick, which it does not replace); a ReLU conv-mlp config is not:
    its law over the points averages the inputs by Monte Carlo, which the campaign does not run."""
    from amutheory.api import measure
    from amutheory.campaign.analysis_resnet import DENSE_SHAPE_KEYS, analyse_resnet_config
    from amutheory.campaign.presets import CampaignConfig

    results, nets = [], linear("conv-mlp", "k-all", width=16, spatial=5, batch=2, depth=6)
    for activation in ("linear", "relu"):
        spec = nets.with_(activation=activation)
        cfg = CampaignConfig(f"res-{activation}", spec, (1, 2, 3, 4, 6), (1, 2, 3, 4), 4)
        results.append(analyse_resnet_config(cfg, measure(spec, list(cfg.depths), cfg.seed_list)))
    exact, refused = results[0]["exact_law"], results[1]["exact_law"]
    assert refused["covered"] is False and "monte_carlo" in refused["reason"]  # ReLU conv-mlp: a Monte-Carlo law
    assert exact["covered"] and exact["law"] == "resnet-modes-conv-mlp-k-all-linear"
    assert set(DENSE_SHAPE_KEYS) <= set(exact)
    assert exact["passed"] == all(r["inside_ci"] for s in ("mean", "geo") for r in exact["per_depth"][s])
    rows = exact["per_depth"]["mean"]
    assert exact["depths_inside_mean"] == [sum(r["inside_ci"] for r in rows), 5]
    assert exact["inside_ci_every_depth_mean"] == all(r["inside_ci"] for r in rows)
    assert exact["calibration"] == {"mean": None, "geo": None}
    assert not any(r["calibration"] for st in ("mean", "geo") for r in exact["per_depth"][st])  # all held out
    np.testing.assert_allclose([r["s_pred"] for r in rows], rs.s_bar(nets, [1, 2, 3, 4, 6]), rtol=1e-8)
    assert all(r["selected_law"]["law"] in ("coherent", "dense-shape") for r in results)


@settings(max_examples=10, deadline=None)
@given(power=st.integers(1, 6))
def test_planar_trace_gives_the_free_poisson_moments(power):
    """``tau((W W^T)^p) = Catalan(p) s^p`` for a square Gaussian matrix (Marchenko-Pastur at ratio
    1), and a word pairing ``W`` with ``W`` (no transpose) is of lower order: 0."""
    from amutheory.symbolic.primitives import planar as P
    s = sp.Symbol("s", positive=True)
    w = P.letter("W")
    word = P.mul(*[P.mul(w, P.adjoint(w))] * power)
    assert sp.simplify(P.tau(word, {"W": s}, 1) - sp.catalan(power) * s**power) == 0
    assert P.tau(P.mul(w, w), {"W": s}, 1) == 0


def test_seed_law_of_a_dense_net_is_the_closed_form():
    """At ``kernel = spatial = batch = 1`` the Monte Carlo seed law (40000 joint draws) gives back
    the dense net's exact spread and gap (``symbolic.primitives.spread.dense_spread``: digamma closed forms
    from a separate derivation) within 4 of its standard errors, and its draws' mean of ``s_bar``
    the exact mean."""
    from amutheory.symbolic.primitives import spread
    spec = linear("conv-mlp", "k-last", kernel=1, spatial=1, batch=1, depth=8)
    law = rs.seed_law(spec, rs.seed_table(spec, 40000, seed=1))
    var, gap = spread.dense_spread(spec.outputs, spec.input_channels)
    assert abs(law["gap"] - gap) < 4 * law["gap_se"] and abs(law["var"] - var) < 4 * law["var_se"]
    assert abs(law["mc_mean"] - law["mean"]) < 4 * law["mc_mean_se"]


def test_seed_law_of_a_spatial_net():
    """The draws' mean of ``s_bar`` is the exact mean within 4 standard errors; the same table serves
    every K (common random numbers), and the spread settles with K (k-last: within 0.02 from K = 32
    to 256)."""
    spec = linear("conv-mlp", "k-last")
    table = rs.seed_table(spec, 20000)
    laws = [rs.seed_law(spec.with_(depth=k), table) for k in (2, 32, 256)]
    for law in laws:
        assert abs(law["mc_mean"] - law["mean"]) < 4 * law["mc_mean_se"]
        assert law["gap"] < 0 < law["var"]
    assert abs(laws[2]["var"] - laws[1]["var"]) < 0.02
    with pytest.raises(ValueError, match="draws"):
        rs.seed_table(spec, 1)
    with pytest.raises(ValueError, match="table"):
        rs.seed_law(spec, -table)


def test_benchmark_script(validate_script, capsys):
    """The benchmark's law, probe and two seed-law tables run and agree with each other within their
    errors (the probe within 4 of its standard errors plus 40%, the O(1/n) excess at n = 16: ~+8% at
    n = 64, growing like 1/n; the two tables' gaps within 4 standard errors); nothing timed is
    asserted.  Bad input is one line, exit 2."""
    bench = validate_script("benchmark_resnet_modes")
    assert bench.main(["--depths", "2,4", "--width", "16", "--seeds", "8", "--draws", "2000", "--repeats", "1",
                       "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(abs(r - 1) < 4 * e + 0.4 for r, e in zip(out["measured_over_law"], out["measured_over_law_se"]))
    assert max(out["gap_z"]) < 4 and out["law_s"] > 0
    for bad in (["--seeds", "1"], ["--branch", "dense"], ["--depths", "0"]):
        with pytest.raises(SystemExit) as exc:
            bench.main(bad)
        assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3
