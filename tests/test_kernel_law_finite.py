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
