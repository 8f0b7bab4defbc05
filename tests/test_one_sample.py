"""The exact one-sample law of ReLU and linear MLPs (:mod:`amutheory.symbolic.chain.one_sample`): symbolically
the linear finite-width law at batch 1, the infinite-width law as its limit, and the real probe's seed mean on
random small nets (Hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import finite_width as fw
from amutheory.symbolic.chain import one_sample as one


def _mlp(width, depth, activation="relu", **kw):
    return ArchSpec(family="mlp", depth=depth, width=width, activation=activation, batch=1, **kw)


def test_linear_net_is_the_finite_width_law_at_batch_one_symbolically():
    """With every unit active (``p = 1``) at ``c = 1`` the recursion is the linear MLP's exact law at ``B = 1``,
    term by term in ``n, C_0, m, v, v_r``."""
    L = 4
    ours = one.layer_moments_symbolic(L, {one.p: 1, one.c: 1})
    gf = fw.layer_generating_function().subs(fw.B, 1)
    theirs = sp.series(gf, fw.z, 0, L + 1).removeO()
    for l, s in enumerate(ours, start=1):
        target = theirs.coeff(fw.z, l).subs({fw.n: one.n, fw.C_0: one.C_0, fw.m: one.m, fw.v: one.v, fw.v_r: one.v_r})
        assert sp.simplify(s - target) == 0, l


def test_the_transfer_is_polynomial_in_the_active_count_and_its_linear_limit_has_no_inactive_part():
    T, O = one.update_transfer(), one.update_outputs()
    assert all(sp.Poly(e, one.K).degree() <= 2 for e in list(T) + list(O))
    # at K = n (every unit active) nothing is inactive: the Omega blocks' terms vanish from the traces
    new = O.subs(one.K, one.n) - sp.Matrix([T.row(0) + T.row(4), T.row(4) + T.row(3)]).subs(one.K, one.n)
    assert sp.simplify(new) == sp.zeros(2, 8)


@pytest.mark.parametrize("depth", [3, 8])
def test_infinite_width_limit_is_the_kernel_law_at_one_sample(depth):
    """As ``n`` grows, ``E[s_bar] / n`` converges like ``1/n`` (its change shrinks four-fold with each four-fold
    width, to within 10%) on the infinite-width kernel law's value (``mlp-kernel``, whose masks are independent of
    the weights; within 4 of its Monte Carlo standard errors over input draws)."""
    from amutheory.laws.mlp import MlpKernel

    specs = [_mlp(w, depth, input_channels=8, outputs=3) for w in (2**12, 2**14, 2**16)]
    scaled = [one.one_sample_s_bar(s, [depth])[0] / s.width for s in specs]
    assert 3.6 < (scaled[0] - scaled[1]) / (scaled[1] - scaled[2]) < 4.4
    kernel = MlpKernel().evaluate(specs[2], [depth])
    assert abs(kernel.s_bar[0] - scaled[2] * specs[2].width) <= 4 * kernel.s_bar_se[0]


def _probe_mean(spec, seeds):
    s = probe(spec, list(seeds), chunk=500).s
    return s.mean(axis=0), s.std(axis=0, ddof=1) / math.sqrt(len(s))


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(3, 10), depth=st.integers(1, 3), inputs=st.integers(1, 6), outputs=st.integers(1, 4),
       c=st.sampled_from([None, 1.5, 2.6]), activation=st.sampled_from(["relu", "relu", "linear"]))
def test_law_is_the_probes_seed_mean_on_random_small_nets(width, depth, inputs, outputs, c, activation):
    """Every layer's ``E[s_l]`` against the real probe's seed mean over 4000 seeds (fixed), at any ``c`` (so
    ``s_l`` depends on the depth above it where ``c p != 1``).  Tolerance: 4.5 standard errors of the mean per
    layer, a two-sided chance of 7e-6 per comparison under a normal mean (at most 18 comparisons here); the nets
    are kept shallow (L <= 3) so that the seed means' tails are light enough for the normal reading."""
    spec = _mlp(width, depth, activation, input_channels=inputs, outputs=outputs, init_c=c)
    mean, se = _probe_mean(spec, range(4000))
    law = one.one_sample_layer_moments(spec)
    assert np.all(np.abs(law - mean) <= 4.5 * se), (law, mean, se)


def test_a_layer_without_active_units_ends_the_seed_and_the_law_knows_it():
    """At width 2 a quarter of the layers have no active unit (the seed's ``s`` is then zero at every layer); the
    law drops those events exactly, and matches the probe there (40000 seeds, 4.5 standard errors as above); the
    lambdified predictor and the symbolic recursion agree."""
    spec = _mlp(2, 3, input_channels=3, outputs=2)
    mean, se = _probe_mean(spec, range(900000, 940000))
    law = one.one_sample_layer_moments(spec)
    assert np.all(np.abs(law - mean) <= 4.5 * se), (law, mean, se)
    at = {one.p: sp.Rational(1, 2), one.c: 2, one.n: 2, one.C_0: 3, one.m: 2, one.v: 1, one.v_r: sp.Rational(1, 2)}
    assert np.allclose([float(x) for x in one.layer_moments_symbolic(3, at)], law, rtol=1e-12)


@pytest.mark.parametrize("bad, message", [(dict(batch=2), "batch"), (dict(activation="gelu"), "activation"),
                                          (dict(family="conv"), "family")])
def test_nets_it_does_not_cover_are_refused_naming_the_argument(bad, message):
    spec = ArchSpec(**{"family": "mlp", "depth": 3, "width": 8, "activation": "relu", "batch": 1, **bad})
    with pytest.raises(ValueError, match=message):
        one.one_sample_layer_moments(spec)
    with pytest.raises(TypeError, match="spec"):
        one.one_sample_s_bar("mlp", [2])
    with pytest.raises(ValueError, match="depths"):
        one.one_sample_s_bar(_mlp(8, 3), [0, 2])


def test_the_law_is_registered_exact_and_is_the_default_for_relu_mlps_at_batch_one():
    """Run Z3 (plan addendum 39) made it the default for ReLU MLPs at batch 1; a linear MLP keeps
    mlp-finite-width, first in the registry, with the same values; batches of more than one sample are refused."""
    from amutheory.laws.registry import REGISTRY, best_law

    law = REGISTRY["mlp-one-sample"]
    assert law.exactness == "exact" and law.covers(_mlp(16, 4))
    assert not law.covers(_mlp(16, 4).with_(batch=8))
    assert best_law(_mlp(16, 16), [8, 16]).law.name == "mlp-one-sample"
    assert best_law(_mlp(16, 16).with_(batch=8), [8, 16]).law.name != "mlp-one-sample"
    linear = _mlp(12, 5, "linear", input_channels=4, outputs=3)
    assert best_law(linear, [2, 5]).law.name == "mlp-finite-width"
    a = REGISTRY["mlp-finite-width"].evaluate(linear, [2, 5]).s_bar
    b = law.evaluate(linear, [2, 5]).s_bar
    assert np.allclose(a, b, rtol=1e-12)


def test_the_command_line_predicts_a_relu_mlp_at_batch_one_with_the_exact_law(tmp_path):
    """The README's recipe, from outside the package: ``amutheory predict`` on a ReLU MLP with ``--batch 1``
    chooses ``mlp-one-sample`` and prints the law's own ``s_bar``; ``--batch 2`` does not take it."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "amutheory", "predict", "--family", "mlp", "--activation", "relu", "--width", "16",
            "--depths", "4,8", "--json"]
    got = subprocess.run(argv + ["--batch", "1"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["law"] == "mlp-one-sample"
    expected = one.one_sample_s_bar(ArchSpec(**out["spec"]), [4, 8])
    assert np.allclose(out["s_bar"], expected, rtol=1e-9)
    other = subprocess.run(argv + ["--batch", "2"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["law"] != "mlp-one-sample"
