"""The residual stream at finite width (amutheory.symbolic.resnet.finite_width): the block's exact moments, the
K -> oo limit of a forward-stable init, and the toolkit's own dense linear residual nets against the exact law."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.measure.resnet import ResidualConvNet
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import finite_width as F


def test_the_block_moments_are_the_derived_ones():
    mom = F.block_ratio_moments()
    assert sp.simplify(mom["mean"] - (1 + F.eps2)) == 0
    assert sp.simplify(mom["variance"] - (4 * F.eps2 / F.n + F.eps2**2 * (F.m * (1 + 2 / F.n) - 1))) == 0


def test_a_forward_stable_stream_has_an_excess_flat_in_K_and_a_chain_does_not():
    assert sp.simplify(F.forward_stable_limit() - sp.exp(4 * F.a / F.n)) == 0
    spec = ArchSpec(family="resnet", width=32, kernel=1, spatial=1, batch=1, activation="linear", branch="conv")
    ks = [4, 16, 64, 256, 1024]
    stable = F.stream_excess(spec, ks)                                   # k-last: K eps^2 = 1
    assert np.all(np.diff(stable) > 0) and stable[-1] < math.exp(4 / 32) - 1 + 1e-3
    assert stable[-1] - stable[1] < 0.02                                 # flat: O(1/n), not O(K/n)
    unscaled = F.stream_excess(spec.with_(init="none"), ks)              # eps^2 = 1: the K/n term is back
    assert np.all(np.diff(np.log1p(unscaled)) > 0) and unscaled[-1] > 1e6
    chain = np.array([(1 + 2 / 32)**k - 1 for k in ks])
    assert np.all(chain[2:] > 10 * stable[2:])


def _measured_ratio(spec, seeds: int):
    """``E r^2 / (E r)^2`` of ``r = |x_K|^2 / |x_0|^2`` over ``seeds`` of the toolkit's residual net, and its
    delta-method standard error."""
    x = torch.ones(1, spec.input_channels, 1, dtype=torch.float64)
    r = np.empty(seeds)
    for s in range(seeds):
        net = ResidualConvNet(spec, generator=torch.Generator().manual_seed(10_000 + s))
        moments = net.stream_second_moments(x)
        r[s] = moments[-1] / moments[0]
    m1, m2 = r.mean(), (r * r).mean()
    ratio = m2 / m1**2
    g = (r * r) / m2 - 2 * r / m1                                        # d ln(ratio) per draw
    return ratio, ratio * g.std(ddof=1) / math.sqrt(seeds)


@settings(max_examples=5, deadline=None)
@given(width=st.sampled_from([8, 12, 16]), blocks=st.integers(2, 12),
       branch=st.sampled_from(["conv", "conv-mlp", "preact"]), init=st.sampled_from(["k-last", "sqrt-multiplier", "k-all"]))
def test_the_toolkits_dense_linear_nets_match_the_exact_stream_law(width, blocks, branch, init):
    """3000 seeds of ``ResidualConvNet`` (dense, linear): the measured ratio within 4 of its standard errors of
    the exact law (the chain's ``(1 + 2/n)^K`` is far outside at these sizes)."""
    spec = ArchSpec(family="resnet", depth=blocks, width=width, kernel=1, spatial=1, batch=1, input_channels=3,
                    activation="linear", branch=branch, init=init)
    got, se = _measured_ratio(spec, 3000)
    law = 1 + F.stream_excess(spec, [blocks])[0]
    assert abs(got - law) <= 4 * se, (got, law, se)


def test_the_stream_law_refuses_what_it_does_not_cover():
    dense = ArchSpec(family="resnet", width=16, kernel=1, spatial=1, batch=1, activation="linear")
    with pytest.raises(ValueError, match="^activation"):
        F.stream_excess(dense.with_(activation="relu"), [4])
    with pytest.raises(ValueError, match="^kernel"):
        F.stream_excess(dense.with_(kernel=3), [4])
    with pytest.raises(ValueError, match="^family"):
        F.stream_excess(ArchSpec(family="conv", activation="linear"), [4])
    with pytest.raises(ValueError, match="^blocks"):
        F.stream_excess(dense, [0])
    with pytest.raises(TypeError, match="^spec"):
        F.stream_excess("resnet", [4])


def test_derive_finite_width_for_a_dense_linear_residual_net_from_the_command_line(capsys):
    import json
    import subprocess
    import sys

    from amutheory.cli import main

    net = ["--family", "resnet", "--activation", "linear", "--kernel", "1", "--spatial", "1", "--batch", "1",
           "--width", "32", "--depths", "4,64"]
    assert main(["derive", *net, "--finite-width", "--json"]) == 0
    fw = json.loads(capsys.readouterr().out)["finite_width"]
    assert fw["blocks"] == [4, 64] and fw["forward_stable_limit"] == "exp(4*a/n)" and fw["block_gain"] == "1/K"
    assert fw["stream_excess"][1] < math.exp(4 / 32) - 1 < fw["chain_excess"][1]
    readme = ("derive --family resnet --activation linear --kernel 1 --spatial 1 --batch 1 --finite-width").split()
    ok = subprocess.run([sys.executable, "-m", "amutheory", *readme], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]       # the README's command, as written there
    assert "here a = lim K eps2 = 1: the excess tends to" in ok.stdout and "flat in K" in ok.stdout
    got = subprocess.run([sys.executable, "-m", "amutheory", "derive", "--family", "resnet", "--activation", "relu",
                          "--width", "32", "--depths", "4", "--finite-width"], capture_output=True, text=True, timeout=300)
    assert got.returncode == 2 and "Traceback" not in got.stderr
    assert got.stderr.strip().splitlines()[-1].endswith("exact for linear branches (rotation invariance), got 'relu'")


def test_derive_names_the_limit_of_each_init(capsys):
    import json

    from amutheory.cli import main

    dense = ["--family", "resnet", "--activation", "linear", "--kernel", "1", "--spatial", "1", "--batch", "1",
             "--width", "32", "--depths", "4"]
    expected = {("conv", "k-last"): ("1", "exp(n**(-1)*4) - 1"), ("conv-mlp", "k-all"): ("0", "0"),
                ("conv", "none"): ("oo", "oo")}
    for (branch, init), (a, limit) in expected.items():
        assert main(["derive", *dense, "--branch", branch, "--init", init, "--finite-width", "--json"]) == 0
        fw = json.loads(capsys.readouterr().out)["finite_width"]
        assert fw["a"] == a
        assert fw["excess_limit"] == "oo" if limit == "oo" else sp.simplify(sp.sympify(fw["excess_limit"]) - sp.sympify(limit)) == 0
