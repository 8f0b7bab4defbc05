"""The MLP family (issue 38, part 3): the family builds, is the conv chain with kernel 1 on one
position, its default law agrees with the probe at held-out depths, its exponent comes from the
derivation, and every command runs with ``--family mlp``."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from amutheory.families import get_family
from amutheory.laws import best_law, get_law
from amutheory.measure.models import build_model
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec

MLP = dict(family="mlp", width=64, input_channels=16, batch=8)


def test_family_fixes_the_fields_it_does_not_read_and_drops_them_from_to_dict():
    spec = ArchSpec(**MLP, depth=3, kernel=5, spatial=9, dim=2, padding="zero")
    assert (spec.dim, spec.kernel, spec.spatial, spec.padding) == (1, 1, 1, "circular")
    assert set(spec.to_dict()) == {"family", "depth", "width", "activation", "init_c", "input_channels", "batch",
                                   "outputs", "readout"}
    assert spec.family_object.input_shape(spec) == (8, 16)


@pytest.mark.parametrize("depth", [1, 4])
def test_parameter_count_equals_the_models(depth):
    spec = ArchSpec(**MLP, depth=depth, outputs=7)
    model = build_model(spec, seed=0)
    assert get_family("mlp").parameter_count(spec) == sum(p.numel() for p in model.parameters())
    hs, out = model.preactivations(torch.randn(8, 16, dtype=torch.float64))
    assert len(hs) == depth and out.shape == (8, 7) and all(h.shape == (8, 64) for h in hs)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_probe_on_the_mlp_equals_the_probe_on_its_chain(activation):
    """Same generator, same draws (weights in the chain's order and counts, inputs in the family's
    shape): the MLP and the chain with kernel 1 on one position are one function, so the probe's
    s_l agree to float rounding (1x1 convolution and matrix product sum in different orders)."""
    spec = ArchSpec(**MLP, depth=5, activation=activation)
    chain = spec.family_object.chain_spec(spec)
    assert chain.family == "conv" and (chain.kernel, chain.spatial) == (1, 1)
    np.testing.assert_allclose(probe(spec, range(6)).s, probe(chain, range(6)).s, rtol=1e-12)


def test_derived_exponent_is_the_chain_laws_on_the_equivalent_spec():
    """Not a typed number: the MLP's law is the chain law of its chain spec, the exponent SymPy's."""
    from amutheory.symbolic.chain.conv import conv_law

    spec = ArchSpec(**MLP, depth=4, activation="relu")
    law = spec.family_object.derive(spec)
    assert law.name == "mlp-relu"
    assert law.exponent == conv_law(spec.family_object.chain_spec(spec)).exponent
    assert law.s_bar == conv_law(spec.family_object.chain_spec(spec)).s_bar


def test_default_laws_exact_for_linear_finite_width_monte_carlo_for_relu():
    assert best_law(ArchSpec(**MLP, activation="linear"), [8]).law.name == "mlp-finite-width"
    assert best_law(ArchSpec(**MLP, activation="relu"), [8]).law.name == "mlp-kernel-finite"  # no probe
    assert not get_law("mlp-spectral").covers(ArchSpec(**MLP, activation="linear", init_c=2.0))
    assert not get_law("mlp-finite-width").covers(ArchSpec(**MLP, activation="linear", init_c=2.0))


HELD_OUT = [8, 12, 16]
CALIBRATION = (2, 3, 4, 6)
#: the checked nets' seeds: disjoint from the calibration's (0 .. 31)
CHECK_SEEDS = range(1000, 1064)


@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_default_law_against_the_probe_at_held_out_depths(activation):
    """The default law's s_bar against the mean of 64 independent seeds at depths it was not
    calibrated on.  Allowance: 4 standard errors of the difference (the seed mean's and, for the
    calibrated law, its own seed-bootstrap spread) plus, for a law that leaves the finite-width terms
    out, 4 L/n relative (as tests/test_laws_contract.py); the linear MLP's finite-width law has none."""
    spec = ArchSpec(**{**MLP, "width": 128}, activation=activation)
    law = best_law(spec, HELD_OUT, calibration_depths=CALIBRATION).law
    values = law.evaluate(spec, HELD_OUT, calibration_depths=CALIBRATION, calibration_seeds=32)
    assert not any("were used for calibration" in n for n in values.notes)
    for depth, s_law, se_law in zip(HELD_OUT, values.s_bar, values.s_bar_se):
        s = probe(spec.with_(depth=depth), CHECK_SEEDS).s_bar
        se = np.hypot(s.std(ddof=1) / np.sqrt(len(s)), se_law)
        width_term = 0.0 if law.name == "mlp-finite-width" else 4 * depth / spec.width * s_law
        allowed = 4 * se + width_term
        assert abs(s.mean() - s_law) <= allowed, (activation, depth, s.mean(), s_law, se)


def test_predict_default_returns_the_chosen_laws_values():
    from amutheory import predict

    spec = ArchSpec(**MLP, activation="linear")
    pred = predict(spec, HELD_OUT)
    np.testing.assert_allclose(pred.s_bar, get_law("mlp-finite-width").evaluate(spec, HELD_OUT).s_bar, rtol=1e-12)


def test_feature_vector_data_digits_flattened_and_synthetic_vectors():
    from amutheory.train import spec_for_data
    from amutheory.train.data import as_model_input, load_dataset

    spec = spec_for_data(ArchSpec(**MLP, depth=2), "digits")
    assert (spec.input_channels, spec.outputs) == (64, 10)
    assert as_model_input(torch.zeros(5, 1, 8, 8), spec.family_object.data_dim(spec)).shape == (5, 64)
    data = load_dataset("synthetic", dim=0, input_channels=12, classes=3, n_train=64, n_test=8)
    assert tuple(data.x_train.shape) == (64, 12) and "MLP teacher" in data.source
    assert len(set(data.y_train.tolist())) > 1


def _cli(*argv, timeout=240):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "amutheory", *argv], capture_output=True, text=True, env=env,
                          timeout=timeout)
    assert done.returncode == 0, (argv, done.stderr[-2000:])
    return done.stdout


_TINY = ("--family", "mlp", "--width", "16", "--input-dim", "8")


def test_cli_derive_prints_the_derived_exponent():
    from amutheory.symbolic.chain.conv import conv_law

    d = json.loads(_cli("derive", *_TINY, "--activation", "linear", "--json"))
    spec = ArchSpec(family="mlp", width=16, input_channels=8, activation="linear")
    assert d["name"] == "mlp-linear"
    assert d["exponent"] == str(conv_law(spec.family_object.chain_spec(spec)).exponent)
    assert "spectral" in d  # the linear MLP's exact law, from its chain


def test_cli_measure_laws_transfer_with_family_mlp():
    m = json.loads(_cli("measure", *_TINY, "--depths", "2,3", "--seeds", "4", "--json"))
    assert m["spec"]["family"] == "mlp" and m["spec"]["input_channels"] == 8 and len(m["eta_star_mean"]) == 2
    laws = json.loads(_cli("laws", *_TINY, "--activation", "linear", "--depths", "4", "--json"))
    assert laws["choice"]["law"] == "mlp-finite-width" and {r["law"] for r in laws["laws"]} >= {"mlp-coherent"}
    t = json.loads(_cli("transfer", *_TINY, "--lr", "0.1", "--from-depth", "2", "--to-depth", "4", "--json"))
    assert t["reference"]["effective_depth"] < t["target"]["effective_depth"] and 0 < t["lr"] < 0.1


def test_cli_predict_with_family_mlp():
    d = json.loads(_cli("predict", *_TINY, "--activation", "linear", "--depths", "4,8", "--json"))
    assert d["spec"]["family"] == "mlp" and len(d["eta_star"]) == 2


def test_cli_sweep_with_family_mlp_on_synthetic_vectors(tmp_path):
    out = tmp_path / "sweep"
    d = json.loads(_cli("sweep", *_TINY, "--depths", "2,3", "--lrs", "0.01,0.1,1", "--steps", "5", "--seeds", "2",
                        "--workers", "1", "--no-figures", "--out", str(out), "--json"))
    assert {(r["depth"], r["width"]) for r in d["runs"]} == {(2, 16), (3, 16)}


def test_mlp_preset_holds_out_depths_beyond_its_calibration():
    from amutheory.campaign import PRESETS

    configs = PRESETS["mlp"]
    assert {c.spec.family for c in configs} == {"mlp"} and {c.spec.activation for c in configs} == {"relu", "linear"}
    for c in configs:
        assert min(c.held_out_depths) > max(c.calibration_depths)


def test_mlp_campaign_analyses_the_mlp_as_the_chain_it_is(tmp_path):
    # the campaign names the MLP's own derived law and takes the exact finite-width law of a linear MLP (nothing
    # fitted for the mean), as predict's default does; its figures are drawn on the equivalent chain
    from amutheory.campaign import run_campaign
    from amutheory.campaign.presets import CampaignConfig

    configs = [CampaignConfig(f"mlp-{act}", ArchSpec(family="mlp", depth=6, width=16, activation=act, input_channels=4),
                              (2, 3, 4, 6), (2, 3, 4), 8) for act in ("linear", "relu")]
    summary = run_campaign(configs, tmp_path, progress=None)
    by_name = {c["name"]: c for c in summary["configs"]}
    assert by_name["mlp-linear"]["law"] == "mlp-finite-width"
    assert by_name["mlp-linear"]["constants_from"].startswith("finite-width law")
    # a ReLU MLP's mean: the finite-width kernel law, no probe of the net (issue 50)
    assert by_name["mlp-relu"]["law"] == "mlp-kernel-finite" and by_name["mlp-relu"]["derived_exponent"] == "-3/2"
    assert "nothing fitted" in by_name["mlp-relu"]["constants_from"]
    for c in summary["configs"]:
        assert not [e for e in c["errors"] if "figures" in e], c["errors"]
    # the per-layer figure needs the law's a, b, e (the exact linear law has them; a Monte Carlo s_bar does not)
    assert (tmp_path / "layer_profiles_mlp-linear.png").is_file()
