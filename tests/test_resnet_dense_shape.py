"""The dense-shape law of spatial and batched residual nets (resnet_dense.shape_predictor).

The law is the stream part and the own part of the exact dense law of the net's dense
single-sample twin, each times a calibrated constant.  Kinds of evidence: exact identities (the
parts add up to the dense law; the constants are pure factors; at ``kernel = spatial = batch = 1``
and both constants 1 the law *is* the dense law); properties over random K, widths
and conventions (its local slope tends to the coherent order's derived exponent, which it shares);
real spatial nets (torch, the one-step probe) calibrated on shallow K and checked at a held-out
K; errors and the CLI.  What the law assumes (the position and batch sums the same at every block) is
in the module docstring and ``derivations/07_residual_dense_law.py``, section 5d.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import derive, measure, predict
from amutheory.cli import main
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import dense as rd
from amutheory.symbolic.resnet.coherent import is_forward_stable

pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")

#: every (branch, init, activation) the dense law, and so the dense shape, covers
COVERED = [(b, i, a) for b in ("conv", "conv-mlp", "preact")
           for i in ("k-last", "k-all", "k-squared", "sqrt-multiplier") for a in ("linear", "relu")]


def spatial(branch, init, activation="relu", **kw):
    kw = {"kernel": 3, "spatial": 8, "batch": 8, "width": 64, **kw}
    return ArchSpec(family="resnet", branch=branch, init=init, activation=activation, **kw)


@settings(max_examples=25, deadline=None)
@given(case=st.sampled_from(COVERED), depth=st.integers(1, 48), width=st.sampled_from([32, 64, 256]),
       kernel=st.sampled_from([1, 3, 5]), spatial_size=st.sampled_from([5, 8, 16]), batch=st.sampled_from([1, 2, 8]),
       rho_s=st.floats(1e-4, 1e3), rho_o=st.floats(1e-4, 1e3))
def test_shape_law_is_the_twin_dense_law_parts_times_rho(case, depth, width, kernel, spatial_size, batch, rho_s,
                                                          rho_o):
    """Exact: the two parts add up to the twin's dense law, and the law is ``rho_stream * stream +
    rho_own * own`` for any geometry; the twin drops the kernel, the positions and the batch and keeps
    everything else."""
    branch, init, act = case
    spec = spatial(branch, init, act, width=width, kernel=kernel, spatial=spatial_size, batch=batch)
    twin = rd.dense_twin(spec)
    assert (twin.kernel, twin.spatial, twin.batch) == (1, 1, 1)
    assert (twin.width, twin.branch, twin.init, twin.activation) == (width, branch, init, act)
    at = twin.with_(depth=depth)
    stream, own = rd.layer_moments(at, part="stream"), rd.layer_moments(at, part="own")
    np.testing.assert_allclose(stream + own, rd.layer_moments(at), rtol=1e-12)
    assert np.all(stream >= 0) and np.all(own >= 0)
    fn = rd.shape_predictor(spec)
    assert fn([depth], rho_s, rho_o)[0] == pytest.approx(rho_s * stream.mean() + rho_o * own.mean(), rel=1e-12)


@pytest.mark.parametrize("branch, init, act", [("conv-mlp", "k-last", "relu"), ("conv", "k-squared", "relu"),
                                               ("preact", "k-all", "linear"), ("preact", "k-last", "relu")])
def test_dense_nets_get_the_dense_law_itself(branch, init, act):
    spec = spatial(branch, init, act, kernel=1, spatial=1, batch=1)
    ks = [1, 2, 7, 30]
    np.testing.assert_allclose(rd.shape_predictor(spec)(ks, 1.0, 1.0), rd.s_bar(spec, ks), rtol=1e-13)


#: the covered conventions whose forward pass is stable (the others have no power law)
STABLE = [c for c in COVERED if is_forward_stable(ArchSpec(family="resnet", branch=c[0], init=c[1], activation=c[2]))]


@settings(max_examples=12, deadline=None)
@given(case=st.sampled_from(STABLE), width=st.sampled_from([64, 128]))
def test_shape_law_slope_tends_to_the_derived_exponent(case, width):
    """The dense law's K-dependence (spread and all) has the coherent order's exponent: its local
    slope ``d ln eta*/d ln K`` between K = 4096 and 8192 is within 0.02 of it (the ``1/K`` terms
    are ~1e-3 there; 0.02 allows the ``O(K^-1/2)`` approach of a few conventions' stream path)."""
    branch, init, act = case
    spec = spatial(branch, init, act, width=width)
    s = rd.shape_predictor(spec)([4096, 8192], 1.0, 1.0)
    slope = -0.5 * math.log(s[1] / s[0]) / math.log(2)
    assert slope == pytest.approx(float(derive(spec.with_(depth=8)).exponent), abs=0.02)


@pytest.mark.parametrize("kw, word", [({"activation": "gelu"}, "activation"), ({"init": "none"}, "init"),
                                      ({"shortcut": "projection"}, "shortcut")])
def test_out_of_scope_is_refused(kw, word):
    args = {"branch": "conv-mlp", "init": "k-last", **kw}
    with pytest.raises(ValueError, match=word):
        rd.shape_predictor(spatial(args.pop("branch"), args.pop("init"), **args))


def test_law_argument_errors():
    spec = spatial("conv-mlp", "k-last", depth=4)
    with pytest.raises(ValueError, match="law"):
        predict(ArchSpec(depth=4), [4], law="dense-shape")
    with pytest.raises(ValueError, match="law"):
        predict(spec, [4], constants="derive", law="dense-shape")
    with pytest.raises(ValueError, match="law"):
        predict(spec, [4], law="effective-depth")
    with pytest.raises(ValueError, match="law"):
        derive(spec, law="dense-shape")
    with pytest.raises(ValueError, match="depths"):
        rd.shape_predictor(spec)([2.5], 1.0, 1.0)
    with pytest.raises(ValueError, match="part"):
        rd.layer_moments(rd.dense_twin(spec), part="stream-only")


def test_real_spatial_nets_held_out():
    """The campaign's geometry (kernel 3, 8 positions, batch 8, n = 64), conv-mlp / k-all / ReLU,
    64 seeds: the two constants calibrated on K = 2, 4, 8, 16, checked at K = 64 (4x deeper than
    the deepest calibration net, as in the campaign).  The calibrated law of the seed mean must lie
    within 3 standard errors of the measured ``ln`` mean there, the standard error being the
    measurement's (delta method, ``sd / (sqrt(64) mean)``, ~6%) and the prediction's own
    (``s_bar_log_sd``, over the calibration's seed-bootstrap refits) in quadrature, plus 5% for the
    ``O(1/n)`` terms the law leaves out (K/n = 1 here).  Neither part may be dropped by the fit: each
    carries at least 5% of the prediction at the held-out K (a fit that zeroes one part is the
    degenerate case :func:`amutheory.api.predict` flags in its notes)."""
    spec = spatial("conv-mlp", "k-all", "relu", depth=16)
    seeds = list(range(64))
    cal = measure(spec, [2, 4, 8, 16], seeds)
    held = measure(spec.with_(depth=64), [64], seeds)
    pred = predict(spec, [64], law="dense-shape", calibration_measurement=cal)
    assert pred.law == "resnet-dense-shape-conv-mlp-k-all-relu" and pred.calibration.depths == [2, 4, 8, 16]
    s = held.s_bar(64)
    se_meas = s.std(ddof=1) / math.sqrt(len(s)) / s.mean()
    se = math.hypot(se_meas, pred.s_bar_log_sd[0])
    assert abs(math.log(pred.s_bar[0] / s.mean())) < 3 * se + 0.05, (pred.s_bar[0], s.mean(), se)
    rho_s, rho_o = pred.constants["rho_stream"].value, pred.constants["rho_own"].value
    fn = rd.shape_predictor(spec)
    stream, own = fn([64], rho_s, 0.0)[0], fn([64], 0.0, rho_o)[0]
    assert min(stream, own) > 0.05 * (stream + own), (stream, own)
    assert not any("dropped" in note for note in pred.notes)


def test_cli_predict_dense_shape(capsys):
    base = ["predict", "--family", "resnet", "--branch", "conv-mlp", "--init", "k-last", "--width", "32",
            "--kernel", "3", "--spatial", "4", "--batch", "2", "--depths", "8,16", "--calibration-depths", "2,3,4",
            "--calibration-seeds", "8", "--law", "dense-shape", "--quiet"]
    assert main(base + ["--json"]) == 0
    out = capsys.readouterr().out
    assert '"law": "resnet-dense-shape-conv-mlp-k-last-relu"' in out and '"rho_own"' in out
    assert main(base[:4] + ["preact"] + base[5:] + ["--json"]) == 0  # preact/ReLU: the coordinate law's parts
    assert '"law": "resnet-dense-shape-preact-k-last-relu"' in capsys.readouterr().out
    assert main(base + ["--activation", "gelu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "activation" in err[0]


def test_cli_derive_refuses_dense_shape(capsys):
    assert main(["derive", "--family", "resnet", "--law", "dense-shape"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "predict --law dense-shape" in err[0]


def test_campaign_analysis_reports_both_laws():
    """A covered config (conv-mlp / k-all, tiny) and a refused one (a projection shortcut) through the
    campaign's residual analysis: ``dense_shape`` holds the second law's verdict keys, built the
    same way as the coherent law's (held-out rows inside their CI <=> passed), or the reason;
    ``selected_law`` the law picked from the calibration and its verdicts; the report's table and
    the figure's dashed line take them."""
    from amutheory.campaign.analysis_resnet import DENSE_SHAPE_KEYS, SELECTED_KEYS, analyse_resnet_config
    from amutheory.campaign.presets import CampaignConfig
    from amutheory.campaign.report_resnet import _dense_shape_lines
    from amutheory.plots import plot_resnet_eta_star

    results = []
    for shortcut in ("identity", "projection"):
        spec = spatial("conv-mlp", "k-all", width=16, spatial=5, batch=2, depth=6, shortcut=shortcut)
        cfg = CampaignConfig(f"res-{shortcut}", spec, (1, 2, 3, 4, 6), (1, 2, 3, 4), 4)
        meas = measure(spec, list(cfg.depths), cfg.seed_list)
        results.append(analyse_resnet_config(cfg, meas))
    covered, refused = results[0]["dense_shape"], results[1]["dense_shape"]
    assert refused == {"covered": False, "reason": refused["reason"]} and "shortcut" in refused["reason"]
    assert covered["covered"] and set(DENSE_SHAPE_KEYS) <= set(covered)
    assert covered["law"] == "resnet-dense-shape-conv-mlp-k-all-relu"
    assert set(covered["constants"]["mean"]) >= {"rho_stream", "rho_own", "sigma2_0", "kappa"}
    for stat in ("mean", "geo"):
        rows = covered["per_depth"][stat]
        assert [r["calibration"] for r in rows] == [True, True, True, True, False]
        assert all(r["inside_ci"] == (r["eta_meas_ci"][0] <= r["eta_pred"] <= r["eta_meas_ci"][1]) for r in rows)
    assert covered["passed"] == all(r["inside_ci"] for s in ("mean", "geo") for r in covered["per_depth"][s]
                                    if not r["calibration"])
    # the law picked from the calibration alone: the lower residual standard error, its verdicts copied;
    # the refused config keeps the coherent law
    sel, kept = results[0]["selected_law"], results[1]["selected_law"]
    ses = {"coherent": results[0]["calibration"]["mean"]["residual_se_log"],
           "dense-shape": covered["calibration"]["mean"]["residual_se_log"]}
    assert sel["residual_se_log"] == ses and sel["law"] == min(ses, key=ses.get)
    source = results[0] if sel["law"] == "coherent" else covered
    assert all(sel[k] == source[k] for k in SELECTED_KEYS) and sel["name"] == source["law"]
    assert kept["law"] == "coherent" and set(kept["residual_se_log"]) == {"coherent"}
    assert kept["passed"] == results[1]["passed"]
    lines = _dense_shape_lines(results)
    assert lines[0] == "### The two calibrated laws at the held-out K" and len([x for x in lines if x.startswith(
        "| k-all |")]) == 2
    assert sum("not covered" in x for x in lines) == 1
    assert any(x.startswith("* the law picked from the calibration, over all 2 stable configs") for x in lines)
    fig = plot_resnet_eta_star(results)
    assert sum(line.get_linestyle() == "--" for line in fig.axes[0].get_lines()) == 1


def test_a_dropped_part_is_flagged():
    """The degenerate fit seen on small geometries (``rho_stream`` -> 0): the prediction's notes say
    which part was dropped, and a fit with both parts in use says nothing."""
    from amutheory.api import Constant, _dropped_parts

    spec = spatial("conv-mlp", "k-last", "linear", depth=8)
    fn = rd.shape_predictor(spec)

    def notes(rho_s, rho_o):
        const = {"rho_stream": Constant("rho_stream", rho_s, "calibrated"),
                 "rho_own": Constant("rho_own", rho_o, "calibrated")}
        return _dropped_parts(fn, const, np.array([4.0, 16.0]))

    assert notes(1.0, 1.0) == []
    (stream_note,) = notes(1e-12, 1.0)
    (own_note,) = notes(1.0, 1e-12)
    assert "dropped the stream part" in stream_note and "dropped the own part" in own_note
