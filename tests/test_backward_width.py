"""The linear MLP's law split into forward and backward widths (amutheory.symbolic.chain.backward_width),
and the approximate ReLU law built on it (mlp-kernel-finite-backward)."""

import math

import numpy as np
import pytest
import sympy as sp

from amutheory.laws import REGISTRY
from amutheory.laws.mlp import chain_of
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import backward_width as bw
from amutheory.symbolic.chain import finite_width as fw
from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar


def _mlp(width, activation="linear", depth=12, **kw):
    kw.setdefault("input_channels", 16)
    return ArchSpec(family="mlp", depth=depth, width=width, activation=activation, **kw)


def test_equal_widths_are_the_exact_law_symbolically():
    assert sp.simplify(bw.split_generating_function().subs(bw.n_b, fw.n) - fw.layer_generating_function()) == 0


def test_the_forward_only_law_is_the_split_law_as_the_backward_width_grows():
    ratio = sp.cancel(bw.split_generating_function() / bw.forward_only_generating_function())
    assert sp.simplify(sp.limit(ratio, bw.n_b, sp.oo) - 1) == 0


def test_the_forward_only_law_is_what_the_kernel_law_at_width_n_computes_by_monte_carlo():
    """The forward drawn at width n, the backward at infinite width given it (kernel_law_finite, linear):
    its Monte Carlo mean against the closed form, within 4 of its standard errors at each depth."""
    spec = _mlp(24)
    got = finite_width_kernel_s_bar(chain_of(spec), [4, 8, 12], draws=1024)
    law = bw.split_s_bar(spec, [4, 8, 12], math.inf)
    assert np.all(np.abs(got["s_bar"] - law) <= 4 * got["se"]), (got["s_bar"], law, got["se"])


def test_backward_step_variance_and_the_equal_variance_width():
    p = bw.p_on
    assert sp.simplify(bw.backward_step_variance() - (3 - p) / (fw.n * p)) == 0
    assert bw.equal_variance_width(64, "relu") == pytest.approx(25.6)
    assert bw.equal_variance_width(64, "linear") == pytest.approx(64.0)
    with pytest.raises(ValueError, match="activation"):
        bw.equal_variance_width(64, "swish")
    with pytest.raises(TypeError, match="activation"):
        bw.equal_variance_width(64, None)


def test_the_step_variance_of_any_activation_reduces_to_the_masks_and_matches_a_monte_carlo():
    """``(3 mu_4 / mu_2^2 - 1) / n`` (the masks' ``(3 - p) / (n p)``, checked above, is its ``mu_2 = mu_4 = p``); for GELU and tanh at
    unit variance it is checked against one backward step drawn 40000 times at n = 64 (the relative variance of a
    variance estimate from 40000 draws has sd sqrt(2 / 40000) ~ 0.7% for Gaussian-like F: 5% is ~7 sd)."""
    from amutheory.activations import get_activation

    assert sp.simplify(bw.backward_step_variance_of_moments() * fw.n - (3 * bw.mu_4 / bw.mu_2**2 - 1)) == 0
    assert bw.step_variance_factor("relu") == (5.0, "exact") and bw.step_variance_factor("linear") == (2.0, "exact")
    rng = np.random.default_rng(0)
    n, draws = 64, 40000
    for name in ("gelu", "tanh"):
        act = get_activation(name)
        factor, source = bw.step_variance_factor(name)
        assert source == "quadrature"
        assert factor == pytest.approx(2 + 3 * act.spectral_variance(act.critical_c()).value, rel=1e-9)
        h, g = rng.standard_normal((draws, n)), rng.standard_normal((draws, n))
        F = (act.dphi(h) ** 2 * g**2).mean(axis=1)
        assert n * F.var() / F.mean() ** 2 == pytest.approx(factor, rel=0.05)
        assert bw.equal_variance_width(64, name) == pytest.approx(128 / factor)


def test_the_backward_factor_is_one_at_infinite_width_and_grows_with_depth_over_width():
    spec = _mlp(64)
    f = bw.backward_factor(spec, [2, 8, 16], 25.6)
    assert 1 < f[0] < f[1] < f[2]
    assert bw.backward_factor(spec, [16], 1e9)[0] == pytest.approx(1.0, abs=1e-6)
    # narrower backward, larger factor; at the net's own width it is the exact law over the forward-only one
    assert bw.backward_factor(spec, [16], 16.0)[0] > f[2]
    assert bw.backward_factor(spec, [16], 64.0)[0] == pytest.approx(
        fw.finite_width_s_bar(spec, [16])[0] / bw.split_s_bar(spec, [16], math.inf)[0])


@pytest.mark.parametrize("kw,match", [({"backward_width": 0.0}, "backward_width"), ({"backward_width": "x"}, "backward_width"), ({"backward_width": None}, "backward_width"),
                                      ({"depths": [0]}, "depths")])
def test_bad_arguments_name_themselves(kw, match):
    args = {"depths": [4], "backward_width": 10.0, **kw}
    with pytest.raises(ValueError, match=match):
        bw.split_s_bar(_mlp(16), args["depths"], args["backward_width"])


def test_the_approximate_law_is_the_kernel_law_times_the_factor_and_says_what_it_assumes():
    spec = _mlp(48, "relu", batch=4)
    law, inner = REGISTRY["mlp-kernel-finite-backward"], REGISTRY["mlp-kernel-finite"]
    got, base = law.evaluate(spec, [6, 12]), inner.evaluate(spec, [6, 12])
    factor = bw.backward_factor(spec.with_(activation="linear"), [6, 12], 0.4 * 48)
    assert np.allclose(got.s_bar, base.s_bar * factor) and np.all(factor > 1)
    assert got.exactness == "approximate" and got.constants["backward_width"].value == pytest.approx(19.2)
    assert "assumption" in law.leaves_out and not law.covers(_mlp(48, "linear"))


def test_the_chain_split_is_the_exact_chain_law_at_equal_widths_and_the_kernel_law_at_infinite_backward():
    """Linear circular chain, width 16: n_b = n is chain-finite-width; n_b = oo is the forward-only law the
    kernel law at width n computes (its Monte Carlo mean within 4 SE at every depth)."""
    from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_s_bar

    spec = ArchSpec(family="conv", dim=1, depth=12, width=16, kernel=3, spatial=8, padding="circular",
                    activation="linear", input_channels=3)
    assert np.allclose(bw.split_s_bar(spec, [4, 8, 12], 16), finite_width_chain_s_bar(spec, [4, 8, 12]))
    got = finite_width_kernel_s_bar(spec, [4, 8, 12], draws=512)
    law = bw.split_s_bar(spec, [4, 8, 12], math.inf)
    assert np.all(np.abs(got["s_bar"] - law) <= 4 * got["se"]), (got["s_bar"], law, got["se"])
    assert np.all(np.diff(bw.backward_factor(spec, [2, 8, 12], 6.4)) > 0)


def test_the_chain_law_covers_relu_chains_and_is_the_default_for_either_padding_up_to_width_64():
    from amutheory.laws.chain_finite import backward_twin

    law = REGISTRY["chain-kernel-finite-backward"]
    relu = ArchSpec(family="conv", dim=1, depth=8, width=16, kernel=3, spatial=8, padding="circular",
                    activation="relu", input_channels=3)
    zero = relu.with_(padding="zero")
    assert law.covers(relu) and law.covers(zero) and not law.covers(relu.with_(activation="linear"))
    # run I made it circular chains' default, run R2 zero-padded ones' (after runs L and R had kept the calibrated
    # law); wider than 64 neither (run W)
    assert law.not_default_for(relu) is None and law.not_default_for(zero) is None
    assert "width 128" in law.not_default_for(zero.with_(width=128))
    got = law.evaluate(relu, [4, 8])
    assert got.exactness == "approximate" and np.all(got.s_bar > 0) and got.constants["backward_width"].value == 6.4
    # a zero-padded chain: its own forward kernels (the edge lowers s_bar), its circular twin's backward factor
    edge = law.evaluate(zero, [4, 8])
    assert np.all(edge.s_bar < got.s_bar) and edge.constants["backward_width"].value == 6.4
    assert backward_twin(zero) == relu.with_(activation="linear", init_c=None)
    factor = bw.backward_factor(backward_twin(zero), [4, 8], 6.4)
    assert f"{factor[0]:.3f}, {factor[1]:.3f}" in edge.notes[0]


def test_the_backward_laws_take_gelu_and_tanh_at_their_critical_c_on_request():
    """Run M of the finite-width plan kept the drawn laws as the defaults for GELU and tanh; the backward laws take
    those nets on request, at the critical c only, with the step variance by quadrature."""
    from amutheory.laws import best_law, not_default_reason

    mlp_law, chain_law = REGISTRY["mlp-kernel-finite-backward"], REGISTRY["chain-kernel-finite-backward"]
    mlp = ArchSpec(family="mlp", depth=6, width=24, activation="gelu", input_channels=8, batch=4)
    chain = ArchSpec(family="conv", dim=1, depth=6, width=16, kernel=3, spatial=6, padding="zero", activation="tanh",
                     input_channels=3, batch=4)
    for law, spec in ((mlp_law, mlp), (chain_law, chain)):
        assert law.covers(spec)
        refused = law.covers(spec.with_(init_c=1.5))
        assert not refused and refused.reason.startswith("c: the backward factor needs the critical c")
        assert "run M" in not_default_reason(law, spec)
        assert best_law(spec, [2, 4]).law.name != law.name
    got = mlp_law.evaluate(mlp, [2, 4])
    inner = REGISTRY["mlp-kernel-finite"].evaluate(mlp, [2, 4])
    n_b = bw.equal_variance_width(24, "gelu")
    factor = bw.backward_factor(mlp.with_(activation="linear", init_c=None), [2, 4], n_b)
    assert np.allclose(got.s_bar, inner.s_bar * factor) and np.all(factor > 1)
    assert got.constants["step_variance"].source == "quadrature" and got.constants["rho_fb"].value > 1
    assert got.constants["backward_width"].value == pytest.approx(48 / got.constants["step_variance"].value)


def test_the_readme_recipe_for_a_zero_padded_relu_chain_runs_from_the_command_line(capsys):
    """README: ``--law chain-kernel-finite-backward`` predicts a zero-padded ReLU chain with no probe (its circular
    twin's backward factor), and it is the default for it up to width 64 (run R2)."""
    import json

    from amutheory.cli import main

    net = ["--family", "conv", "--dim", "1", "--activation", "relu", "--padding", "zero", "--width", "16",
           "--spatial", "6", "--batch", "4", "--depths", "3,5", "--quiet"]
    assert main(["predict", *net, "--law", "chain-kernel-finite-backward", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["law_registry"] == "chain-kernel-finite-backward" and "calibration" not in d
    assert d["constants"]["backward_width"]["value"] == pytest.approx(6.4) and d["eta_star"][1] < d["eta_star"][0]
    assert main(["laws", *net]) == 0
    assert "default: chain-kernel-finite-backward" in capsys.readouterr().out


# --------------------------------------------------------------------------- one masked layer's Wick transfer
def test_the_masked_transfer_is_the_linear_one_without_masks():
    import sympy as sp

    from amutheory.symbolic.chain import finite_width as fw
    from amutheory.symbolic.chain.backward_width import masked_hidden_transfer, p_on

    assert sp.simplify(masked_hidden_transfer().subs(p_on, 1) - fw.hidden_transfer()) == sp.zeros(2, 2)


def test_the_masked_transfers_top_eigenvalue_is_one_plus_the_step_variance_and_the_other_the_linear_one():
    import sympy as sp

    from amutheory.symbolic.chain import finite_width as fw
    from amutheory.symbolic.chain.backward_width import backward_step_variance, masked_transfer_eigenvalues

    got = masked_transfer_eigenvalues()
    want = [1 - 1 / fw.n, 1 + backward_step_variance()]
    assert all(any(sp.simplify(g - w) == 0 for g in got) for w in want)


def test_one_masked_layer_maps_the_second_moments_as_derived():
    """Monte Carlo of ``A' = D W A W^T D`` at width 6, masks on with probability 1/2 independently of ``W``: both
    moments within 4 standard errors of :func:`masked_layer_transfer` (20000 draws, fixed seed)."""
    import sympy as sp

    from amutheory.symbolic.chain import finite_width as fw
    from amutheory.symbolic.chain.backward_width import masked_layer_transfer, p_on

    n, p, draws = 6, 0.5, 20000
    rng = np.random.default_rng(1234)
    G = rng.standard_normal((n, n))
    A = G @ G.T / n
    W = rng.standard_normal((draws, n, n)) / np.sqrt(n * p)
    D = (rng.random((draws, n)) < p).astype(float)
    Ap = D[:, :, None] * (W @ A @ W.transpose(0, 2, 1)) * D[:, None, :]
    t2 = np.einsum("dij,dji->d", Ap, Ap)
    t11 = np.trace(Ap, axis1=1, axis2=2) ** 2
    T = np.asarray(masked_layer_transfer().subs({fw.n: n, p_on: sp.Rational(1, 2)}), float)
    want = T @ np.array([np.trace(A @ A), np.trace(A) ** 2])
    for got, w in ((t2, want[0]), (t11, want[1])):
        assert abs(got.mean() - w) < 4 * got.std(ddof=1) / np.sqrt(draws), (got.mean(), w)


def test_relu_products_under_independent_masks_grow_faster_than_linear_ones_at_the_equal_variance_width():
    """The fact the findings page reports: from two layers on, the backward products' excess ``u_p(n)/u_p(oo)`` under independent ReLU
    masks exceeds the linear layer's at ``2n/5`` (which run G found to overshoot already), so the masks of one
    sample do not explain the overshoot; both start at 1."""
    from amutheory.symbolic.chain.backward_width import linear_product_excess, masked_product_excess

    for n in (16, 32, 64):
        masked = masked_product_excess(n, "relu", [0, 2, 4, 8, 16])
        linear = linear_product_excess(2 * n / 5, [0, 2, 4, 8, 16])
        assert masked[0] == linear[0] == 1.0
        assert np.all(masked[1:] > linear[1:])
    with pytest.raises(ValueError, match="activation"):
        masked_product_excess(32, "gelu", [1])


def test_the_pair_transfer_keeps_one_samples_products_symmetric():
    """One sample's masked layer is the pair transfer at ``q = p`` on a symmetric ``A`` (``gamma = alpha``); that
    reading holds only if the map sends ``alpha = gamma`` to ``alpha' = gamma'`` -- the ``alpha`` and ``gamma`` rows,
    from different Wick pairings, must agree there."""
    import sympy as sp

    from amutheory.symbolic.chain.backward_width import masked_pair_transfer, p_on, q_on

    T = masked_pair_transfer().subs(q_on, p_on)
    a, b = sp.symbols("a b", positive=True)
    out = T * sp.Matrix([a, b, a])
    assert sp.simplify(out[0] - out[2]) == 0


def test_one_masked_layer_maps_a_pairs_invariants_as_derived():
    """Monte Carlo of ``A' = D_a W A W^T D_b`` at width 6 for a non-symmetric ``A``, masks on with probability 1/2 and
    both on with probability 0.35 (independent of ``W`` and across units): the three invariants within 4 standard
    errors of :func:`masked_pair_transfer` (40000 draws, fixed seed)."""
    import sympy as sp

    from amutheory.symbolic.chain import finite_width as fw
    from amutheory.symbolic.chain.backward_width import masked_pair_transfer, p_on, q_on

    n, p, q, draws = 6, 0.5, 0.35, 40000
    rng = np.random.default_rng(4321)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    W = rng.standard_normal((draws, n, n)) / np.sqrt(n * p)
    # each unit's (d_a, d_b): (1, 1) with probability q, (1, 0) and (0, 1) with p - q each, (0, 0) otherwise
    u = rng.random((draws, n))
    d_a = (u < p).astype(float)
    d_b = ((u < q) | ((u >= p) & (u < 2 * p - q))).astype(float)
    Ap = d_a[:, :, None] * (W @ A @ W.transpose(0, 2, 1)) * d_b[:, None, :]
    got = {"alpha": np.einsum("dij,dij->d", Ap, Ap) / n, "beta": (np.trace(Ap, axis1=1, axis2=2) / n) ** 2,
           "gamma": np.einsum("dij,dji->d", Ap, Ap) / n}
    T = np.asarray(masked_pair_transfer().subs({fw.n: n, p_on: p, q_on: q}), float)
    want = T @ np.array([np.trace(A @ A.T) / n, (np.trace(A) / n) ** 2, np.trace(A @ A) / n])
    for (name, x), w in zip(got.items(), want):
        assert abs(x.mean() - w) < 4 * x.std(ddof=1) / np.sqrt(draws), (name, x.mean(), w)


def test_a_pairs_excess_rate_runs_from_a_linear_layers_to_one_relu_samples():
    import sympy as sp

    from amutheory.symbolic.chain.backward_width import p_on, pair_excess_rate, q_on

    rate = pair_excess_rate()
    half = sp.Rational(1, 2)
    assert rate.subs({p_on: half, q_on: half}) == 3              # one ReLU sample: 1 + 3/n
    assert rate.subs({p_on: half, q_on: half**2}) == 1           # independent masks: a linear layer's 1 + 1/n
    assert rate.subs({p_on: 1, q_on: 1}) == 1                    # a linear layer


def test_a_pairs_coupling_is_one_over_q_minus_one_and_grows_with_the_angle_for_relu():
    """``pair_coupling`` against a Monte Carlo of two unit Gaussians at angle theta (200000 pairs, fixed seed; the
    ratio's sampling error is under 1% there), and its ReLU form at the ends: 1 for one sample, 3 at right angles."""
    import sympy as sp

    from amutheory.symbolic.chain.backward_width import pair_coupling, q_on, relu_pair_coupling
    from amutheory.symbolic.chain.kernel_law import theta

    rho = relu_pair_coupling()
    assert sp.simplify(rho.subs(theta, 0) - 1) == 0 and sp.simplify(rho.subs(theta, sp.pi / 2) - 3) == 0
    rng = np.random.default_rng(11)
    for angle in (0.4, 1.2, 2.0):
        z = rng.standard_normal((200_000, 2))
        u, v = z[:, 0], np.cos(angle) * z[:, 0] + np.sin(angle) * z[:, 1]
        pu, pv, du, dv = np.maximum(u, 0), np.maximum(v, 0), (u > 0) * 1.0, (v > 0) * 1.0
        measured = (pu * pv * du * dv).mean() / ((pu * pv).mean() * (du * dv).mean()) - 1
        q = (du * dv).mean()
        assert abs(measured - float(pair_coupling().subs(q_on, q))) < 1e-9   # the identity phi D = phi, draw by draw
        assert abs(measured - float(rho.subs(theta, angle))) < 0.03 * (1 + measured)


def test_the_masked_split_is_the_linear_split_without_masks():
    """At ``p = 1`` the masked factor is the linear backward factor, symbolically and in the predictor; at a very
    large backward width it is 1; at ReLU's ``p = 1/2`` it is above the equal-variance factor (the single sample's
    larger excess); bad arguments name themselves."""
    import sympy as sp

    from amutheory.symbolic.chain.backward_width import (backward_factor, masked_backward_factor,
                                                         masked_split_generating_function, p_on,
                                                         split_generating_function)

    assert sp.simplify(masked_split_generating_function().subs(p_on, 1) - split_generating_function()) == 0
    spec = ArchSpec(family="mlp", depth=16, width=24, activation="linear", input_channels=10, batch=3)
    depths = [2, 5, 9, 16]
    np.testing.assert_allclose(masked_backward_factor(spec, depths, 1.0), backward_factor(spec, depths, 24.0), rtol=1e-10)
    np.testing.assert_allclose(masked_backward_factor(spec, depths, 0.5, backward_width=1e9), 1.0, atol=1e-6)
    assert np.all(masked_backward_factor(spec, depths, 0.5) > backward_factor(spec, depths, 24.0 * 2 / 5))
    for bad in (0.0, 1.5, "x", True):
        with pytest.raises(ValueError, match="on_probability"):
            masked_backward_factor(spec, depths, bad)
    with pytest.raises(ValueError, match="family"):
        masked_backward_factor(spec.with_(family="conv"), depths, 0.5)


def _one_sample_pass(spec, seed):
    """A real ReLU MLP's pre-activations, backward vectors ``d(r . f)/dh`` and layer inputs for one input (autograd)."""
    import torch

    from amutheory.measure.models import build_model

    gen = torch.Generator().manual_seed(seed)
    model = build_model(spec, generator=gen)
    x = torch.randn(1, spec.input_channels, generator=gen, dtype=torch.float64)
    r = torch.randn(1, spec.outputs, generator=gen, dtype=torch.float64)
    hs, f = model.preactivations(x)
    grads = torch.autograd.grad((r * f).sum(), hs)
    inputs = [x] + [torch.relu(h) for h in hs[:-1]]
    return ([v.detach().numpy().ravel() for v in hs], [g.numpy().ravel() for g in grads],
            [v.detach().numpy().ravel() for v in inputs], float((r * f).sum().detach()))


def test_one_sample_euler_identity_and_the_coupling_split_hold_on_a_real_relu_mlp():
    """h . delta is r . f at every layer, and what is left of |delta_(i-1)|^2 once the coupling part is taken off is
    a sum of squares (never negative), on real nets of random widths and depths."""
    from amutheory.symbolic.chain.backward_width import one_sample_split

    rng = np.random.default_rng(3)
    for seed in range(6):
        width, depth = int(rng.integers(6, 40)), int(rng.integers(2, 9))
        spec = ArchSpec(family="mlp", depth=depth, width=width, activation="relu", input_channels=5, batch=1,
                        outputs=3)
        h, delta, x_prev, rf = _one_sample_pass(spec, seed)
        got = one_sample_split(h, delta, x_prev)
        np.testing.assert_allclose(got["euler"], rf, rtol=1e-9, atol=1e-12)
        assert np.all(got["fresh"] >= -1e-9 * got["top"].max())
    with pytest.raises(ValueError, match="one vector per layer"):
        one_sample_split(h[:1], delta[:1], x_prev[:1])


def test_one_sample_fresh_part_is_a_chi_square_on_the_active_directions_off_the_input():
    """Over 3000 seeds of a ReLU MLP at width 12 (c = 2; the few whose units all went off have no backward and are
    left out), ``fresh / ((c/n) |delta_i|^2)`` is ``chi^2_(K - 1)`` given the active count ``K`` below: its mean is
    compared with the seeds' mean of ``K - 1`` within 4 standard errors of the difference (the per-seed
    differences' sd over the root of the seeds kept)."""
    from amutheory.symbolic.chain.backward_width import one_sample_split

    spec = ArchSpec(family="mlp", depth=4, width=12, activation="relu", input_channels=6, batch=1, outputs=2)
    ratios, dof = [], []
    for seed in range(3000):
        got = one_sample_split(*_one_sample_pass(spec, 10_000 + seed)[:3])
        if np.all(got["top"] > 0) and np.all(got["active"] > 0):   # a net whose units all went off has no backward
            ratios.append(got["fresh"] / (spec.c / spec.width * got["top"]))
            dof.append(got["active"] - 1)
    diff = np.array(ratios) - np.array(dof)
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(diff))
    assert np.all(np.abs(diff.mean(axis=0)) <= 4 * se), (diff.mean(axis=0), se)
    # the coupling part replaces one fresh direction: without it the ratio would miss the active count by one
    assert np.all(np.abs(diff.mean(axis=0) - 1.0) > 4 * se)
