"""The kernel law with forward kernels drawn at width n (amutheory.symbolic.chain.kernel_law_finite):
its limits, what it captures of the exact linear law, and ReLU MLPs against the probe."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.laws import REGISTRY, best_law
from amutheory.laws.mlp import chain_of
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.finite_width import finite_width_s_bar
from amutheory.symbolic.chain.kernel_law import kernel_s_bar
from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar
from amutheory.symbolic.chain.spectral import spectral_s_bar


def _mlp(width, activation="relu", depth=8, **kw):
    kw.setdefault("input_channels", 16)
    return ArchSpec(family="mlp", depth=depth, width=width, activation=activation, **kw)


def test_linear_net_gains_the_forward_excess_but_not_the_backward_one():
    """Linear MLP at n = 16, L = 8: the infinite-width law < this law < the exact law at width n (the
    exact law's backward terms are what this law leaves out), each gap beyond 4 Monte Carlo SE."""
    spec = _mlp(16, "linear")
    got = finite_width_kernel_s_bar(chain_of(spec), [8], draws=512)
    mc, se = got["s_bar"][0], got["se"][0]
    assert spectral_s_bar(chain_of(spec), [8])[0] + 4 * se < mc < finite_width_s_bar(spec, [8])[0] - 4 * se


def test_wide_relu_net_reaches_the_infinite_width_kernel_law():
    spec = _mlp(4096, depth=6, batch=4)
    got = finite_width_kernel_s_bar(chain_of(spec), [6], draws=256)
    inf = kernel_s_bar(chain_of(spec), [6])
    se = np.hypot(got["se"][0], inf["se"][0])
    assert abs(got["s_bar"][0] - inf["s_bar"][0]) <= 4 * se + 6 * 6 / 4096 * inf["s_bar"][0]


def test_draws_are_reproducible_and_bad_arguments_name_themselves():
    chain = chain_of(_mlp(16, depth=4, batch=2))
    a, b = finite_width_kernel_s_bar(chain, [2, 4], draws=8), finite_width_kernel_s_bar(chain, [4, 2], draws=8)
    assert np.array_equal(a["s_bar"], b["s_bar"])
    with pytest.raises(ValueError, match="^draws"):
        finite_width_kernel_s_bar(chain, [4], draws=1)
    with pytest.raises(ValueError, match="^depths"):
        finite_width_kernel_s_bar(chain, [0])


def test_the_default_for_a_relu_mlp_needs_no_probe():
    spec = _mlp(64, depth=16)
    choice = best_law(spec, [8, 12, 16])
    assert choice.law.name == "mlp-kernel-finite"
    assert REGISTRY["mlp-kernel-finite"].cost(spec, [8, 12, 16]).cost_class != "probe"


@settings(max_examples=4, deadline=None)
@given(width=st.sampled_from([32, 48, 64]), depth=st.integers(2, 6), batch=st.integers(2, 4))
def test_relu_law_matches_the_probe_seed_mean_at_moderate_depth(width, depth, batch):
    """ReLU MLPs with L/n <= 0.19, where the backward terms the law leaves out are small: the law
    within 4 combined standard errors (the probe's seed mean over 600 seeds and the law's Monte Carlo)
    of the probe's mean of s_bar."""
    spec = _mlp(width, depth=depth, batch=batch, input_channels=8)
    s = probe(spec, range(600), chunk=200).s_bar
    got = finite_width_kernel_s_bar(chain_of(spec), [depth], draws=512)
    se = np.hypot(s.std(ddof=1) / np.sqrt(len(s)), got["se"][0])
    assert abs(s.mean() - got["s_bar"][0]) <= 4 * se, (s.mean(), got["s_bar"][0], se)


# --------------------------------------------------------------------------- smooth activations (GELU, tanh)
def _with_smooth_loops(fw: dict, activation: str) -> dict:
    """ReLU's (or linear's) exact forward kernels with the smooth path's loops: for ReLU ``phi'^2 = phi'``, so
    the four-point loop is the orthant probability of three points (linear in their arcsines) and
    ``E[phi'^2] = 1/2``; for linear every factor is 1."""
    from amutheory.symbolic.chain.kernel_law import orthant3_in_arcsines

    draws, B, _, P, _ = fw["X"][0].shape
    if activation == "linear":
        ones = np.ones((draws, B, P, P, B, P))
        return dict(fw, loop3=[ones] * len(fw["masks"]), dphi2=[np.ones((draws, B, P))] * len(fw["masks"]))
    const, coef = (float(v) for v in orthant3_in_arcsines())
    diag = np.arange(B)
    loop3 = []
    for A in fw["asin"]:                                 # [draw, b, b', p, p']
        cross = A.transpose(0, 1, 3, 2, 4)               # [draw, b, a, b', beta]
        loop3.append(const + coef * (cross[:, :, :, None] + cross[:, :, None, :]
                                     + A[:, diag, diag][..., None, None]))
    return dict(fw, loop3=loop3, dphi2=[np.full((draws, B, P), 0.5)] * len(loop3))


@pytest.mark.parametrize("activation,net", [("relu", "mlp"), ("linear", "mlp"), ("relu", "zero"), ("relu", "circular"),
                                            ("linear", "zero")])
def test_smooth_loops_reproduce_the_orthant_path_on_exact_relu_kernels(activation, net):
    """The smooth path (a four-point loop over sample and position triples, gains per sample and position
    carried down from layer l) is the same algebra as the orthant path: fed ReLU's exact kernels it returns
    the same moments to rounding, on MLPs and on chains with either padding (where the gains see the edge)."""
    from amutheory.symbolic.chain import kernel_law as K

    if net == "mlp":
        spec = chain_of(_mlp(64, activation, depth=8, batch=5, input_channels=7))
    else:
        spec = ArchSpec(dim=1, depth=8, width=64, spatial=5, kernel=3, padding=net, activation=activation, batch=2,
                        input_channels=3)
    x = K._draw_inputs(spec, np.random.default_rng(0), 6, 1.0)
    ref = K.layer_moments_at_depths(spec, x, [3, 8])
    got = K.layer_moments_at_depths(spec, x, [3, 8],
                                    forward=lambda s, x_, L: _with_smooth_loops(K._forward(s, x_, L), activation))
    for L in (3, 8):
        np.testing.assert_allclose(got[L], ref[L], rtol=1e-8)


@pytest.mark.parametrize("activation", ["gelu", "tanh"])
def test_pair_moments_match_adaptive_quadrature(activation):
    from scipy import integrate

    from amutheory.activations import get_activation
    from amutheory.symbolic.chain.kernel_law import pair_moments

    act = get_activation(activation)
    for S in (np.array([[2.3, -0.9], [-0.9, 1.1]]), np.array([[9.0, 5.0], [5.0, 4.0]])):
        got = pair_moments(S, activation)
        C = np.linalg.cholesky(S)

        def E(f):
            g = lambda z2, z1: f(C[0, 0] * z1, C[1, 0] * z1 + C[1, 1] * z2) * np.exp(-(z1 * z1 + z2 * z2) / 2) / (2 * np.pi)  # noqa: E731
            return integrate.dblquad(g, -12, 12, -12, 12, epsabs=1e-14, epsrel=1e-13)[0]

        ref = {"value": E(lambda u, v: act.phi(u) * act.phi(v)), "mask": E(lambda u, v: act.dphi(u) * act.dphi(v)),
               "loop4": E(lambda u, v: act.dphi(u) ** 2 * act.dphi(v) ** 2)}
        for k, v in ref.items():
            assert got[k][0, 1] == pytest.approx(v, rel=1e-6), (k, S)
        assert got["dphi2"][0] == pytest.approx(E(lambda u, v: act.dphi(u) ** 2), rel=1e-6)


@pytest.mark.parametrize("activation", ["gelu", "tanh"])
def test_drawn_smooth_law_reaches_the_quadrature_law_on_the_same_inputs(activation):
    """At n = 2^16 the drawn rows' means are the Gaussian moments to ~0.5% a layer: on the same inputs the
    drawn law's s_l is the infinite-width (quadrature) law's within 4 standard errors of the paired
    differences, plus an O(L/n) allowance for the bias of the finite-width terms."""
    from amutheory.symbolic.chain import kernel_law as K
    from amutheory.symbolic.chain.kernel_law_finite import sampled_forward

    spec = chain_of(_mlp(2**16, activation, depth=4, batch=3, input_channels=8))
    x = K._draw_inputs(spec, np.random.default_rng(1), 12, 1.0)
    exact = K.layer_moments_at_depths(spec, x, [4])[4].sum(axis=1)
    drawn = K.layer_moments_at_depths(spec, x, [4], forward=sampled_forward(np.random.default_rng(2)))[4].sum(axis=1)
    d = drawn / exact - 1
    assert abs(d.mean()) <= 4 * d.std(ddof=1) / np.sqrt(len(d)) + 4 * 4 / 2**16, d


def test_the_default_for_gelu_and_tanh_mlps_needs_no_probe_and_the_chain_law_says_what_it_takes():
    for activation in ("gelu", "tanh"):
        spec = _mlp(64, activation, depth=16)
        choice = best_law(spec, [8, 12, 16])
        assert choice.law.name == "mlp-kernel-finite" and choice.calibrated_because is None
        assert REGISTRY["mlp-kernel"].covers(spec)
    chain = ArchSpec(dim=1, width=32, spatial=8, activation="gelu", depth=8)
    assert best_law(chain, [4, 8]).law.name == "chain-kernel-finite"  # run K
    assert best_law(chain.with_(activation="relu"), [4, 8]).law.name == "chain-kernel-finite-backward"  # run I
    with pytest.raises(ValueError, match=r"^spatial: .*batch\^2 x \(N\^d\)\^3"):   # 8^2 x 81^3 > 2^24
        finite_width_kernel_s_bar(chain.with_(dim=2, spatial=9), [4], draws=4)
    with pytest.raises(ValueError, match="^spatial: at infinite width .* one position"):
        kernel_s_bar(chain, [4])


@settings(max_examples=4, deadline=None)
@given(activation=st.sampled_from(["gelu", "tanh"]), width=st.sampled_from([32, 48, 64]), depth=st.integers(2, 6),
       batch=st.integers(2, 4), c=st.sampled_from([None, 1.5]))
def test_smooth_law_matches_the_probe_seed_mean_at_moderate_depth(activation, width, depth, batch, c):
    """GELU and tanh MLPs (critical c, or c = 1.5) with L/n <= 0.19: the drawn law within 4 combined standard
    errors of the probe's mean of s_bar over 600 seeds (run J of the plan checks depths 8-16 at widths 32-128)."""
    spec = _mlp(width, activation, depth=depth, batch=batch, input_channels=8, init_c=c)
    s = probe(spec, range(600), chunk=200).s_bar
    got = finite_width_kernel_s_bar(chain_of(spec), [depth], draws=512)
    se = np.hypot(s.std(ddof=1) / np.sqrt(len(s)), got["se"][0])
    assert abs(s.mean() - got["s_bar"][0]) <= 4 * se, (s.mean(), got["s_bar"][0], se)


def test_a_default_decided_per_activation_is_kept_out_net_by_net(monkeypatch):
    """Law.not_default_for: had run J decided for tanh only, a GELU MLP would calibrate and say why, a tanh MLP
    would not, and the law would still answer when asked by name."""
    import amutheory.laws.mlp as mlp_laws

    monkeypatch.setattr(mlp_laws, "DRAWN_DEFAULT", ("tanh",))
    gelu = _mlp(32, "gelu", depth=8)
    choice = best_law(gelu, [4, 8])
    assert choice.law.name == "mlp-coherent"
    assert "mlp-kernel-finite: no planned check has made it the default for gelu MLPs" in choice.calibrated_because
    assert best_law(_mlp(32, "tanh", depth=8), [4, 8]).law.name == "mlp-kernel-finite"
    assert REGISTRY["mlp-kernel-finite"].evaluate(gelu, [4]).s_bar[0] > 0
