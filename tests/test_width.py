"""The width rule: its derivation (amutheory.symbolic.primitives.width), the models' readout and attention
options it rests on, its measured check (a real probe at two widths), and the width sweeps of a
campaign (written, analysed, resumed)."""

import csv
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.campaign import run_campaign
from amutheory.campaign.presets import WIDTH_SWEEPS, CampaignConfig, WidthSweep
from amutheory.campaign.transfer_table import ratio_ci
from amutheory.campaign.width_sweep import WIDTH_COLUMNS, WIDTH_FILE
from amutheory.cli import main
from amutheory.measure.models import build_model
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import width as W
from amutheory.transfer import transfer_lr


# --------------------------------------------------------------------------- derivation
def test_update_scale_is_squared_gram_times_backward_variance():
    assert sp.simplify(W.update_scale() - W.F**2 * W.q_phi**2 * W.chi_phi * W.R) == 0


@pytest.mark.parametrize("readout, nu, eta", [("standard", 1, sp.Rational(-1, 2)), ("mup", 0, 0)])
def test_width_exponents(readout, nu, eta):
    assert W.width_exponent(readout) == nu
    assert W.eta_width_exponent(readout) == eta


def test_width_exponent_of_any_readout_power():
    r = sp.Symbol("r", real=True)
    assert sp.simplify(W.width_exponent(rho_value=r) - (2 - r)) == 0
    with pytest.raises(ValueError, match="readout"):
        W.width_exponent("ntk")


@settings(max_examples=40, deadline=None)
@given(n_r=st.integers(1, 4096), n_t=st.integers(1, 4096), n_c=st.integers(1, 4096), k=st.sampled_from([1, 3, 5]),
       dim=st.sampled_from([1, 2]), readout=st.sampled_from(["standard", "mup"]))
def test_width_factor_property(n_r, n_t, n_c, k, dim, readout):
    """The derived factor is (n_r/n_t)^(1/2) (standard) or 1 (muP) at a fixed kernel, for any widths,
    and factors compose: a -> b -> c equals a -> c."""
    rho = {"standard": 1, "mup": 2}[readout]
    f = W.width_factor_fn()

    def factor(a, b):
        return f(a * k**dim, 10 / a**rho, b * k**dim, 10 / b**rho)

    assert factor(n_r, n_t) == pytest.approx((n_r / n_t) ** (1 - rho / 2), rel=1e-12)
    assert factor(n_r, n_t) * factor(n_t, n_c) == pytest.approx(factor(n_r, n_c), rel=1e-12)


# --------------------------------------------------------------------------- the models' options
@pytest.mark.parametrize("spec", [
    ArchSpec(depth=3, width=16, spatial=8, batch=2),
    ArchSpec(family="resnet", branch="conv-mlp", depth=2, width=16, spatial=8, batch=2),
    ArchSpec(family="transformer", depth=2, width=16, spatial=4, mlp_ratio=2, batch=2),
], ids=["conv", "resnet", "transformer"])
def test_muP_readout_divides_every_s_by_the_width(spec):
    # s is quadratic in the backward signal, which is linear in the head's weights; the muP head is
    # the standard head's draw times n^(-1/2), so every s_l of every seed falls by exactly 1/n
    std = probe(spec, [0, 1]).s
    mup = probe(spec.with_(readout="mup"), [0, 1]).s
    np.testing.assert_allclose(mup * spec.width, std, rtol=1e-10)


def test_attn_scale_changes_the_logits_only_of_transformers():
    import torch

    spec = ArchSpec(family="transformer", depth=1, width=16, spatial=4, mlp_ratio=2)
    x = torch.randn(2, 4, spec.input_channels, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    a = build_model(spec, seed=0)(x.transpose(1, 2))
    b = build_model(spec.with_(attn_scale="mup"), seed=0)(x.transpose(1, 2))
    assert not torch.allclose(a, b)
    assert "attn_scale" in spec.to_dict() and "attn_scale" not in ArchSpec().to_dict()
    with pytest.raises(ValueError, match="attn_scale"):
        spec.with_(attn_scale="none")
    with pytest.raises(ValueError, match="readout"):
        ArchSpec(readout="ntk")


def test_cli_readout_and_attention_flags(capsys):
    assert main(["transfer", "--lr", "0.1", "--from-depth", "2", "--to-depth", "2", "--width", "16",
                 "--to-width", "64", "--readout", "mup", "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert d["width_factor"] == pytest.approx(1.0) and d["width_rules"]["fan-in"] == pytest.approx(0.25)
    assert main(["transfer", "--lr", "0.1", "--from-depth", "2", "--to-depth", "2", "--readout", "ntk"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "readout" in err


# --------------------------------------------------------------------------- measured
def test_measured_width_ratio_matches_the_derived_rule_not_inverse_fan_in():
    """eta*(128) / eta*(32) of a ReLU conv chain (depth 4, 64 fixed seeds): the derived rule's 1/2 lies in
    the ratio's 95% seed-bootstrap CI, the 1/fan_in rule's 1/4 does not.  The CI is the tolerance (64 seeds
    per width put its half-width near 15%, from the campaign's `transfer` preset)."""
    spec = ArchSpec(depth=4, width=32, kernel=3, spatial=16, activation="relu")
    seeds = list(range(64))
    s32, s128 = (probe(spec.with_(width=n), seeds).s.mean(axis=1) for n in (32, 128))
    ratio, lo, hi = ratio_ci(s32, s128, np.random.default_rng(0))
    r = transfer_lr(1.0, spec, spec.with_(width=128))
    assert lo <= r.width_factor <= hi, (r.width_factor, lo, hi)
    assert not lo <= r.width_rules["fan-in"] <= hi
    assert r.width_factor == pytest.approx(0.5)


# --------------------------------------------------------------------------- campaign sweeps
def _tiny_config():
    spec = ArchSpec(depth=3, width=8, spatial=4, batch=2)
    return [CampaignConfig("tiny", spec, (2, 3, 4, 6), (2, 3, 4), 4)]


def _tiny_sweep():
    spec = ArchSpec(family="transformer", depth=1, width=8, spatial=4, heads=2, mlp_ratio=2, batch=2)
    return WidthSweep("w-tiny", spec, (8, 16, 32), 8, 6)


def test_width_sweep_is_measured_analysed_reported_and_resumed(tmp_path):
    summary = run_campaign(_tiny_config(), tmp_path, progress=None, figures=False, width_sweeps=[_tiny_sweep()])
    assert summary["timing"]["width_blocks_computed"] == 3
    (r,) = summary["width_transfer"]["sweeps"]
    assert [row["width"] for row in r["rows"]] == [8, 16, 32] and r["derived_exponent"] == -0.5
    for t in r["transfer"]:
        assert set(t["rules"]) == {"derived", "fan-in"}
        assert t["ci"][0] <= t["measured_ratio"] <= t["ci"][1]
        assert t["rules"]["derived"]["ratio"] == pytest.approx(math.sqrt(8 / t["width"]))
    fit = r["fit"]["mean"]
    assert fit["ci"][0] <= fit["exponent"] <= fit["ci"][1]
    assert set(summary["width_transfer"]["summary"]) == {"derived", "fan-in"}
    assert "## Learning-rate transfer across width" in (tmp_path / "report.md").read_text()
    with open(tmp_path / WIDTH_FILE) as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == WIDTH_COLUMNS and len(rows) == 1 + 3 * 6
    again = run_campaign(_tiny_config(), tmp_path, progress=None, figures=False, width_sweeps=[_tiny_sweep()])
    assert again["timing"]["width_blocks_computed"] == 0 and again["timing"]["width_blocks_resumed"] == 3
    assert again["width_transfer"] == summary["width_transfer"]


def test_width_sweep_drops_a_partial_block_and_a_cut_off_line(tmp_path):
    run_campaign(_tiny_config(), tmp_path, progress=None, figures=False, width_sweeps=[_tiny_sweep()])
    path = tmp_path / WIDTH_FILE
    lines = path.read_text().splitlines()
    # keep width 8 whole and 2 seeds of width 16, then a line cut off mid-write (as an interrupt leaves it)
    kept = lines[:1 + 6] + lines[1 + 6:1 + 8] + [lines[-1][:7]]
    path.write_text("\n".join(kept))
    again = run_campaign(_tiny_config(), tmp_path, progress=None, figures=False, width_sweeps=[_tiny_sweep()])
    assert again["timing"]["width_blocks_resumed"] == 1 and again["timing"]["width_blocks_computed"] == 2
    with open(path) as f:
        assert len(list(csv.reader(f))) == 1 + 3 * 6


def test_width_sweep_refuses_another_setup_in_the_same_directory(tmp_path):
    run_campaign(_tiny_config(), tmp_path, progress=None, figures=False, width_sweeps=[_tiny_sweep()])
    other = WidthSweep("w-tiny", _tiny_sweep().spec.with_(spatial=8), (8, 16, 32), 8, 6)
    with pytest.raises(ValueError, match="width sweep 'w-tiny'"):
        run_campaign(_tiny_config(), tmp_path, progress=None, figures=False, width_sweeps=[other])


@pytest.mark.parametrize("kwargs, match", [
    (dict(widths=(8,), reference_width=8), "widths"),
    (dict(widths=(8, 16), reference_width=32), "reference_width"),
    (dict(widths=(8, 12), reference_width=8, spec=ArchSpec(family="transformer", width=8, heads=8)), "heads"),
    (dict(widths=(8, 16), reference_width=8, seeds=1), "seeds"),
    (dict(widths=(8, 16), reference_width=8, first_seed=-3), "first_seed"),
])
def test_width_sweep_validates(kwargs, match):
    base = dict(name="x", spec=ArchSpec(width=8), seeds=4)
    with pytest.raises(ValueError, match=match):
        WidthSweep(**{**base, **kwargs})


def test_width_sweep_seed_offset_shifts_its_seeds():
    sweep = WidthSweep("x", ArchSpec(width=8), (8, 16), 8, 3)
    assert sweep.seed_list == [0, 1, 2]
    assert sweep.with_seed_offset(50).seed_list == [50, 51, 52]
    assert sweep.with_seed_offset(50).with_seed_offset(5).seed_list == [55, 56, 57]
    assert sweep.with_seed_offset(0) is sweep


def test_width_sweep_widths_must_be_integers():
    with pytest.raises(TypeError, match="widths"):
        WidthSweep("x", ArchSpec(width=8), (8, 16.5), 8, 4)


def test_transfer_preset_has_width_sweeps_of_three_families():
    assert {s.spec.family for s in WIDTH_SWEEPS["transfer"]} == {"conv", "resnet", "transformer"}
    for s in WIDTH_SWEEPS["transfer"] + WIDTH_SWEEPS["paper"]:
        assert s.spec.depth / min(s.widths) <= 1 / 8  # the narrowest width keeps L/n small
