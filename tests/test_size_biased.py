"""The size-biased probe (:mod:`amutheory.measure.size_biased`): its patches are the layers' own linear maps, its
likelihood ratio averages to one, and its weighted seed mean is the exact laws' ``E[s_l]`` on random small nets
(Hypothesis) -- linear MLPs (``mlp-finite-width``), ReLU MLPs at one sample (``mlp-one-sample``) and linear
circular chains (``chain-finite-width``), with the full and the pooled tilt."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from amutheory.measure.size_biased import patches, size_biased_probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import one_sample
from amutheory.symbolic.chain.finite_width import finite_width_layer_moments
from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_layer_moments

#: 4.5 standard errors of a seed mean: a two-sided chance of 7e-6 per comparison under a normal mean (a few dozen
#: comparisons in this file); the nets are shallow (L <= 3) so that the weighted values' tails are light enough
#: for the normal reading
TOL = 4.5


@settings(max_examples=20, deadline=None, derandomize=True)
@given(dim=st.sampled_from([1, 2]), kernel=st.sampled_from([1, 3, 5]), spatial=st.integers(5, 7),
       padding=st.sampled_from(["circular", "zeros"]), c_in=st.integers(1, 4), c_out=st.integers(1, 4),
       batch=st.integers(1, 3))
def test_patches_are_the_layers_linear_map(dim, kernel, spatial, padding, c_in, c_out, batch):
    conv = (nn.Conv1d if dim == 1 else nn.Conv2d)(c_in, c_out, kernel, padding=kernel // 2, padding_mode=padding,
                                                   bias=False, dtype=torch.float64)
    x = torch.randn((batch, c_in) + (spatial,) * dim, dtype=torch.float64)
    P = patches(conv, x)
    y = conv(x)
    rebuilt = (P @ conv.weight.view(c_out, -1).T).reshape(batch, -1, c_out).transpose(1, 2).reshape(y.shape)
    assert torch.allclose(rebuilt, y, atol=1e-12)
    lin = nn.Linear(c_in, c_out, bias=False, dtype=torch.float64)
    xl = torch.randn(batch, c_in, dtype=torch.float64)
    assert torch.allclose(patches(lin, xl) @ lin.weight.T, lin(xl))


def _weighted(spec, seeds, pooled=False):
    res = size_biased_probe(spec, seeds, chunk=500, pooled=pooled)
    w = res.weighted
    return res, w.mean(axis=0), w.std(axis=0, ddof=1) / math.sqrt(len(w))


@pytest.mark.parametrize("pooled", [False, True])
def test_the_likelihood_ratio_averages_to_one(pooled):
    """``E_Q[dP/dQ] = 1``: the seeds' ``w`` on a zero-padded ReLU chain (where ``E[Z_l | past]`` is not a multiple of
    the input's norm) within 4.5 standard errors of one."""
    spec = ArchSpec(family="conv", dim=1, depth=3, width=6, kernel=3, spatial=5, padding="zero", activation="relu",
                    batch=2, input_channels=2)
    res = size_biased_probe(spec, range(3000), chunk=500, pooled=pooled)
    w = np.exp(res.log_w)
    assert abs(w.mean() - 1) <= TOL * w.std(ddof=1) / math.sqrt(len(w)), (w.mean(), w.std())


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(3, 9), depth=st.integers(1, 3), batch=st.integers(1, 4), inputs=st.integers(1, 5),
       outputs=st.integers(1, 4))
def test_linear_mlp_weighted_mean_is_the_exact_finite_width_law(width, depth, batch, inputs, outputs):
    """At the linear law's critical ``c = 1``, with several samples (the full tilt: an MLP has one position)."""
    spec = ArchSpec(family="mlp", depth=depth, width=width, activation="linear", batch=batch, input_channels=inputs,
                    outputs=outputs)
    _, mean, se = _weighted(spec, range(3000))
    law = finite_width_layer_moments(spec, np.arange(1, depth + 1))
    assert np.all(np.abs(law - mean) <= TOL * se), (law, mean, se)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(3, 9), depth=st.integers(1, 3), inputs=st.integers(1, 5), outputs=st.integers(1, 4),
       c=st.sampled_from([None, 2.6]))
def test_relu_mlp_weighted_mean_is_the_exact_one_sample_law(width, depth, inputs, outputs, c):
    spec = ArchSpec(family="mlp", depth=depth, width=width, activation="relu", batch=1, input_channels=inputs,
                    outputs=outputs, init_c=c)
    _, mean, se = _weighted(spec, range(3000))
    law = one_sample.one_sample_layer_moments(spec)
    assert np.all(np.abs(law - mean) <= TOL * se), (law, mean, se)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(2, 6), depth=st.integers(1, 3), kernel=st.sampled_from([1, 3]), spatial=st.integers(3, 5),
       batch=st.integers(1, 3), pooled=st.booleans())
def test_linear_circular_chain_weighted_mean_is_the_exact_mode_law(width, depth, kernel, spatial, batch, pooled):
    spec = ArchSpec(family="conv", dim=1, depth=depth, width=width, kernel=kernel, spatial=spatial,
                    padding="circular", activation="linear", batch=batch, input_channels=2, outputs=3)
    _, mean, se = _weighted(spec, range(2000), pooled=pooled)
    law = finite_width_chain_layer_moments(spec, np.arange(1, depth + 1))
    assert np.all(np.abs(law - mean) <= TOL * se), (law, mean, se)


def test_the_plain_draw_is_kept_but_one_row_per_layer():
    """Seed ``s`` is the plain probe's net with one row of each chain layer redrawn; the head is untouched."""
    from amutheory.measure.probe import draw_seed
    from amutheory.measure.size_biased import chain_sigmas, tilt_chain

    spec = ArchSpec(family="mlp", depth=3, width=5, activation="relu", batch=2, input_channels=4)
    model, x, _ = draw_seed(spec, 7)
    before = [p.detach().clone() for p in model.parameters()]
    tilt_chain(model, x, "relu", chain_sigmas(spec, model), torch.Generator().manual_seed(1))
    after = list(model.parameters())
    for b, a in zip(before[:-1], after[:-1]):
        assert int((b != a).any(dim=1).sum()) == 1
    assert torch.equal(before[-1], after[-1])


@pytest.mark.parametrize("kw, match", [
    ({"activation": "gelu"}, "linear or relu"),
    ({"family": "resnet"}, "conv or mlp"),
])
def test_nets_it_does_not_cover_are_refused(kw, match):
    spec = ArchSpec(**{"family": "mlp", "depth": 2, "width": 4, "activation": "relu", **kw})
    with pytest.raises(ValueError, match=match):
        size_biased_probe(spec, range(4))


def test_bad_arguments_name_themselves():
    spec = ArchSpec(family="mlp", depth=2, width=4, activation="relu")
    with pytest.raises(ValueError, match="seeds"):
        size_biased_probe(spec, [3])
    with pytest.raises(ValueError, match="chunk"):
        size_biased_probe(spec, range(4), chunk=0)
    with pytest.raises(TypeError, match="spec"):
        size_biased_probe("mlp", range(4))


def test_measure_size_biased_from_the_command_line(capsys):
    """``amutheory measure --size-biased --json``: the plain keys as before and a ``size_biased`` block whose means
    are the weighted seed means of :func:`size_biased_probe` on the same seeds; the plain probe's numbers unchanged."""
    import json

    from amutheory.cli import main

    args = ["measure", "--family", "mlp", "--activation", "relu", "--width", "6", "--depths", "2,3", "--seeds", "12",
            "--input-channels", "4", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(args + ["--size-biased"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["s_bar_mean"] == plain["s_bar_mean"]
    sb = d["size_biased"]
    assert sb["tilt"] == "full"
    for i, L in enumerate((2, 3)):
        spec = ArchSpec(family="mlp", depth=L, width=6, activation="relu", input_channels=4)
        assert sb["s_bar_mean"][i] == pytest.approx(size_biased_probe(spec, range(12)).mean()[0], rel=1e-12)
        lo, hi = sb["eta_star_mean_ci"][i]
        assert lo < sb["eta_star_mean"][i] and (hi is None or hi > sb["eta_star_mean"][i])
    assert sb["fitted_exponent_mean_ci"][0] <= sb["fitted_exponent_mean"] <= sb["fitted_exponent_mean_ci"][1]


@pytest.mark.parametrize("extra, needle", [
    (["--activation", "gelu", "--size-biased"], "--size-biased: activation must be linear or relu"),
    (["--family", "resnet", "--size-biased"], "--size-biased: family must be conv or mlp"),
    (["--tilt", "full"], "--tilt is an option of --size-biased"),
])
def test_measure_size_biased_refusals_are_one_line(extra, needle, capsys):
    from amutheory.cli import main

    code = main(["measure", "--depths", "2,3", "--seeds", "4", "--width", "4"] + extra)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_the_documented_recipe_runs_from_the_command_line():
    """``docs/examples.md``'s size-biased recipe, run literally as a user runs it (its own process): the measurement
    with its size-biased block, and ``predict`` naming the exact one-sample law it is compared with."""
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "examples.md").read_text().replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("amutheory ")]
    measure = next(ln for ln in lines if "--size-biased" in ln)
    predict = next(ln for ln in lines if ln.startswith("amutheory predict") and "--batch 1" in ln)
    for command, needle in ((measure, "size-biased probe (full tilt"), (predict, "mlp-one-sample")):
        argv = shlex.split(command.split("#")[0])
        got = subprocess.run([sys.executable, "-m", "amutheory", *argv[1:]], capture_output=True, text=True,
                             timeout=600)
        assert got.returncode == 0, got.stderr[-2000:]
        assert needle in got.stdout, got.stdout[-2000:]
