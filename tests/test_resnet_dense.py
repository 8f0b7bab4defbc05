"""The exact dense residual law with the stream Jacobian's spread (amutheory.symbolic.resnet.dense).

Kinds of evidence: SymPy identities (the coherent order keeps ``m2 = m1^2``); the free-product
rule for ``rho4`` against random matrices; properties over random K, widths and conventions
(the spread only adds; exact scalings); and real dense residual nets (torch, the one-step probe)
against the law with nothing fitted, plus a control that the coherent order is rejected by the
same data.  The derivation is ``derivations/07_residual_dense_law.py``, section 5c.
"""

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import predict
from amutheory.cli import main
from amutheory.measure.probe import draw_seed, probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import dense as rd
pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")

#: every (branch, init, activation) the law covers
COVERED = [(b, i, a) for b in ("conv", "conv-mlp") for i in ("k-last", "k-all", "k-squared", "sqrt-multiplier")
           for a in ("linear", "relu")] + [("preact", i, "linear") for i in ("k-last", "k-all", "k-squared",
                                                                                  "sqrt-multiplier")]


def dense(branch, init, activation="relu", **kw):
    kw = {"kernel": 1, "spatial": 1, "batch": 1, **kw}
    return ArchSpec(family="resnet", branch=branch, init=init, activation=activation, **kw)


def test_coherent_order_keeps_m2_equal_m1_squared():
    """With ``lambda = 0`` and no source spread, ``m2 = m1^2`` is carried from block to block
    exactly (the coherent order); the spread is the only thing that breaks it."""
    for branch in ("conv", "conv-mlp", "preact"):
        rec = rd.block_recursion(branch)
        coherent = (rec["m2_next"] - rec["lam"] * rd.m1**2 - rec["src_var"] - 2 * rec["src_cov"] * rd.m1
                    ).subs(rd.m2, rd.m1**2)
        assert sp.simplify(coherent - rec["m1_next"] ** 2) == 0


def test_fourth_moment_rule_values():
    assert rd.fourth_moment_ratio([2]) == 2  # Gaussian matrix: Marchenko-Pastur tau(X^2) = 2 tau(X)^2
    d2, d4 = sp.Rational(1, 2), sp.Rational(1, 2)
    assert rd.block_recursion("conv-mlp")["rho4"].subs({rd.D2h: d2, rd.D4h: d4}) == 4
    assert rd.block_recursion("preact")["rho4"].subs({rd.D2h: 1, rd.D4h: 1, rd.D2x: 1, rd.D4x: 1}) == 3


def _gaussian_pair_and_relu_mask(seed, n):
    """Two n x n Gaussian matrices of variance 1/n and a diagonal ReLU mask (``phi'`` of a Gaussian)."""
    rng = np.random.default_rng(seed)
    w1, w2 = rng.normal(size=(n, n)) / np.sqrt(n), rng.normal(size=(n, n)) / np.sqrt(n)
    return w1, w2, np.diag((rng.normal(size=n) > 0).astype(float))


def test_fourth_moment_rule_against_random_matrices():
    """``J = W2 D W1`` (Gaussian, ReLU mask): ``tau((J J^T)^2)/tau(J J^T)^2 -> 4``.  At n = 600 the
    finite-n correction is O(1/n) and one draw's trace fluctuates at ~1/n: 3% is > 10 of either."""
    n = 600
    w1, w2, mask = _gaussian_pair_and_relu_mask(0, n)
    jj = (w2 @ mask @ w1) @ (w2 @ mask @ w1).T
    ratio = np.trace(jj @ jj) / n / (np.trace(jj) / n) ** 2
    assert ratio == pytest.approx(4.0, rel=0.03)


def test_source_covariance_against_random_matrices():
    """The block's source operator and its ``J J^T`` covary by ``src_cov`` (at ``alpha = s1 = s2 =
    q = 1``; ReLU mask ``D``, Gaussian var 1/n; ``D2 = D4`` = the drawn mask's fraction of ones):
    conv-mlp ``W2 D^2 W2^T`` against ``W2 D W1 W1^T D W2^T`` (``D4``, ~1/2), conv ``D^2`` against
    ``D W W^T D`` (``D4 - D2^2``, ~1/4).  Independent operators would give 0.  At n = 600 the O(1/n)
    bias and one draw's fluctuation of the Gaussian traces are ~1%, so 5% is > 4 of them."""
    n = 600
    w1, w2, mask = _gaussian_pair_and_relu_mask(2, n)
    src = w2 @ mask @ w2.T
    jj = (w2 @ mask @ w1) @ (w2 @ mask @ w1).T
    cov = np.trace(src @ jj) / n - np.trace(src) / n * np.trace(jj) / n
    unit = {rd.alpha: 1, rd.q: 1, rd.c: 1, rd.v1: 1, rd.v2: 1}
    frac = np.trace(mask) / n
    expected = rd.block_recursion("conv-mlp")["src_cov"].subs(unit).subs(rd.D4h, frac)
    assert cov == pytest.approx(float(expected), rel=0.05)
    jj_conv = mask @ w1 @ w1.T @ mask
    cov_conv = np.trace(mask @ jj_conv) / n - np.trace(mask) / n * np.trace(jj_conv) / n
    expected = rd.block_recursion("conv")["src_cov"].subs(unit).subs({rd.D4h: frac, rd.D2h: frac})
    assert cov_conv == pytest.approx(float(expected), rel=0.05)


@settings(max_examples=30, deadline=None)
@given(case=st.sampled_from(COVERED), depth=st.integers(1, 80), width=st.integers(16, 1024))
def test_spread_only_adds(case, depth, width):
    """``tau(M^2) >= tau(M)^2``: the law with the spread is never below the coherent order."""
    spec = dense(*case, depth=depth, width=width)
    full, coherent = rd.layer_moments(spec), rd.layer_moments(spec, spread=False)
    assert np.all(full >= coherent * (1 - 1e-12)) and np.all(coherent > 0)


@settings(max_examples=20, deadline=None)
@given(case=st.sampled_from(COVERED), depth=st.integers(1, 40), outputs=st.integers(1, 20),
       input_var=st.floats(0.1, 10.0))
def test_exact_scalings(case, depth, outputs, input_var):
    """``s`` is linear in the head's gradient (``outputs``) and of degree 2 in ``input_var``."""
    spec = dense(*case, depth=depth)
    base = rd.layer_moments(spec)
    np.testing.assert_allclose(rd.layer_moments(spec.with_(outputs=outputs)), base * outputs / spec.outputs,
                               rtol=1e-10)
    np.testing.assert_allclose(rd.layer_moments(spec, input_var), base * input_var**2, rtol=1e-10)


def _conditional_ratios(spec, seeds):
    """Per seed: measured ``s`` over the law conditioned on that seed's draw of ``q_0`` (stem) and
    ``G_K`` (head weights and loss direction); the law's expectation step is the exact
    ``E[q_0^2] = 1 + 2/f``, tested apart, and these two draws dominate the seed spread."""
    s = np.asarray(probe(spec, seeds).s)
    law = rd.layer_moments(spec) / (rd.stem_moment(spec) * spec.outputs * spec.readout_variance)
    ratios = []
    with torch.no_grad():
        for row, seed in zip(s, seeds):
            model, x, r = draw_seed(spec, seed)
            q0 = float(model.stem(x).pow(2).mean())
            g_k = float((model.head.weight.T @ r[0]).pow(2).mean())
            ratios.append(row / (law * q0**2 * g_k))
    return np.asarray(ratios)


def _mean_and_se(per_seed):
    """The seed mean of a per-seed value and its standard error."""
    return per_seed.mean(), per_seed.std(ddof=1) / np.sqrt(len(per_seed))


def _assert_law_holds(per_seed, slack=0.04):
    """The seed mean of measured / law is 1 within 4 standard errors plus ``slack`` (the O(1/n)
    and O(1/K^2) terms the law leaves out)."""
    mean, se = _mean_and_se(per_seed)
    assert abs(mean - 1) < 4 * se + slack, (mean, se)


def test_law_matches_dense_resnets_and_the_coherent_order_does_not():
    """conv-mlp / k-last / ReLU, n = 256, K = 16, 64 seeds.  The law: the seed mean of the
    per-seed ratio (measured / law, mean over layers) is 1 within 4 standard errors (~3% each
    here) plus 4% for the O(1/n) and O(1/K^2) terms the law leaves out (measured 0.98-1.03 at n = 256,
    K = 2..128).  The control: the coherent order (no spread) is below the deepest quarter of the
    layers by more than 6 standard errors (it misses by ~1.6x there)."""
    spec = dense("conv-mlp", "k-last", depth=16, width=256)
    seeds = list(range(64))
    ratios = _conditional_ratios(spec, seeds)
    _assert_law_holds(ratios.mean(1))
    coherent = rd.layer_moments(spec, spread=False) / rd.layer_moments(spec)
    deep, deep_se = _mean_and_se((ratios / coherent)[:, -4:].mean(1))
    assert deep - 1 > 6 * deep_se, deep


def test_expectation_over_the_stem_is_the_chi_square_moment():
    """``E[q_0^2] / input_var^2 = 1 + 2/f``: the stem's per-coordinate variance at infinite width is
    ``|x_in|^2 / f`` of f Gaussian inputs; checked on 20000 draws (the sample mean's sd is ~1.3%, so 4% is 3 sd)."""
    rng = np.random.default_rng(1)
    spec = dense("conv-mlp", "k-last")
    q0 = (rng.normal(size=(20000, spec.input_channels)) ** 2).mean(1)
    assert (q0**2).mean() == pytest.approx(rd.stem_moment(spec), rel=0.04)


def test_stem_moment_is_its_expression():
    """``stem_moment_expression()`` is ``1 + 2/(c_in k^d)`` (typed here), its ``sstr`` the formula an
    API constant can carry, and ``stem_moment`` evaluates it for every stem (kernel and dimension too)."""
    expr = rd.stem_moment_expression()
    assert sp.simplify(expr - (1 + 2 / (rd.c_in * rd.k_stem**rd.d_stem))) == 0
    assert sp.sstr(expr) == "1 + 2/(c_in*k**d)"
    for kw in ({}, {"input_channels": 5}, {"kernel": 3, "spatial": 8, "dim": 2}):
        spec = ArchSpec(family="resnet", **kw)
        assert rd.stem_moment(spec) == pytest.approx(1 + 2 / (spec.input_channels * spec.kernel**spec.dim), rel=1e-15)


@pytest.mark.parametrize("kw, word", [({"kernel": 3, "spatial": 8}, "kernel"), ({"batch": 8}, "batch"),
                                      ({"activation": "gelu"}, "activation"),
                                      ({"init": "none"}, "init"), ({"shortcut": "projection"}, "shortcut")])
def test_out_of_scope_is_refused(kw, word):
    args = {"branch": "conv-mlp", "init": "k-last", **kw}
    spec = dense(args.pop("branch"), args.pop("init"), **{k: v for k, v in args.items()})
    with pytest.raises(ValueError, match=word):
        rd.layer_moments(spec)


def test_predict_derive_and_cli(capsys):
    spec = dense("conv-mlp", "k-all", depth=4)
    pred = predict(spec, [4, 8, 16], constants="derive")
    np.testing.assert_allclose(pred.s_bar, [rd.layer_moments(spec.with_(depth=k)).mean() for k in (4, 8, 16)])
    assert pred.calibration is None and pred.constants["q0_moment"].source == "exact"
    typical = predict(spec, [4, 8, 16], constants="derive", statistic="geo")  # the exact spread, K-free
    gap = typical.constants["typical_gap"]
    assert gap.source == "exact" and typical.calibration is None
    np.testing.assert_allclose(typical.s_bar, np.array(pred.s_bar) * np.exp(gap.value), rtol=1e-12)
    np.testing.assert_allclose(typical.local_slope, pred.local_slope, rtol=1e-12)
    base = ["predict", "--family", "resnet", "--branch", "conv-mlp", "--init", "k-last", "--depths", "2,8",
            "--constants", "derive", "--quiet"]
    assert main(base + ["--kernel", "1", "--spatial", "1", "--batch", "1", "--json"]) == 0
    assert '"law": "resnet-dense-conv-mlp-k-last-relu"' in capsys.readouterr().out
    assert main([*base[:3], "--branch", "preact", *base[5:]]) == 2  # spatial ReLU preact: no exact law
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kernel" in err[0]
