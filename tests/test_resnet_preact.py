"""The coordinate law of dense pre-activation nets with persistent stream masks
(amutheory.symbolic.resnet.preact).

Kinds of evidence: SymPy (the mask pair is the Gaussian orthant probability) and SciPy's bivariate
normal; exact identities over random K, widths and conventions (with independent masks the law is
the free law, for ReLU and linear; its parts add up; persistence only adds); the stream of real
torch nets (its masks' pair frequencies are the random walk's); and real dense preact/ReLU nets
(the one-step probe) against the law with nothing fitted, with the free law rejected by the same
data.  The derivation is ``derivations/08_residual_preact_masks.py``.
"""

import json

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from test_resnet_dense import _assert_law_holds, _conditional_ratios, _mean_and_se, dense

from amutheory.measure.models import build_model
from amutheory.symbolic.resnet import dense as rd
from amutheory.symbolic.resnet import preact as rp
from amutheory.symbolic.resnet.coherent import _stream_path

pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")

INITS = ("k-last", "k-all", "k-squared", "sqrt-multiplier")


def test_mask_pair_is_the_orthant_probability():
    """``E[relu'(u)^2 relu'(v)^2] = 1/4 + asin(rho) / (2 pi)`` exactly (SymPy), and SciPy's bivariate
    normal CDF agrees (its default absolute error is 1e-5; 1e-4 is 10 of it); linear gives 1."""
    pair = rp.mask_pair("relu")
    assert sp.simplify(pair - (sp.Rational(1, 4) + sp.asin(rp.rho) / (2 * sp.pi))) == 0
    assert rp.mask_pair("linear") == 1
    for r in (0.0, 0.3, 0.8, 0.99):
        scipy_p = stats.multivariate_normal(mean=[0, 0], cov=[[1, r], [r, 1]]).cdf([0, 0])
        assert float(pair.subs(rp.rho, r)) == pytest.approx(scipy_p, abs=1e-4)
    with pytest.raises(ValueError, match="activation"):
        rp.mask_pair("gelu")


@settings(max_examples=30, deadline=None)
@given(init=st.sampled_from(INITS), activation=st.sampled_from(["linear", "relu"]), depth=st.integers(1, 40),
       width=st.sampled_from([16, 64, 300]), c=st.floats(0.5, 3.0), input_var=st.floats(0.2, 5.0))
def test_independent_masks_give_the_free_law(init, activation, depth, width, c, input_var):
    """Two derivations, one law: the coordinate recursion with the masks made independent is the
    free-probability law of :mod:`resnet_dense`, entry by entry (rounding: 1e-10); for linear nets
    the masks are all ones, so the persistent law is the free law too."""
    spec = dense("preact", init, activation, depth=depth, width=width, init_c=c)
    free = rd.free_layer_moments(spec, input_var)
    np.testing.assert_allclose(rp.layer_moments(spec, input_var, masks="independent"), free, rtol=1e-10)
    if activation == "linear":
        np.testing.assert_allclose(rp.layer_moments(spec, input_var), free, rtol=1e-10)
        np.testing.assert_allclose(rd.layer_moments(spec, input_var), free, rtol=1e-10)


@settings(max_examples=30, deadline=None)
@given(init=st.sampled_from(INITS), depth=st.integers(1, 40), width=st.sampled_from([16, 64, 300]),
       masks=st.sampled_from(rp.MASKS))
def test_parts_add_up_and_persistence_only_adds(init, depth, width, masks):
    """``stream + own = all`` (rounding), the stream entries are all ``stream``, and persistent masks
    (pair probabilities >= their independent value, every coefficient >= 0) never lower ``s``."""
    spec = dense("preact", init, "relu", depth=depth, width=width)
    parts = [rp.layer_moments(spec, part=p, masks=masks) for p in ("all", "stream", "own")]
    np.testing.assert_allclose(parts[1] + parts[2], parts[0], rtol=1e-12)
    assert np.all(parts[2][0::2] == 0) and np.all(parts[0] > 0)
    assert np.all(rp.layer_moments(spec) >= rp.layer_moments(spec, masks="independent") * (1 - 1e-12))
    np.testing.assert_allclose(rd.layer_moments(spec), rp.layer_moments(spec), rtol=1e-12)


def test_stream_masks_of_real_nets_pair_like_the_random_walk():
    """The stream coordinate is a Gaussian random walk: in real dense preact/ReLU nets (n = 2048,
    K = 8, k-last, 8 seeds: 16384 coordinates) the frequency of ``x_a > 0 and x_b > 0`` for every
    pair of blocks is :func:`stream_mask_pairs`.  A frequency's sd is <= 0.5/sqrt(16384) = 0.004
    (less: the seeds' coordinates are not fully independent within a net, so 0.02 is ~5 sd); the
    independent value 1/4 is off by 0.08-0.21 for these pairs."""
    spec = dense("preact", "k-last", depth=8, width=2048)
    signs = []
    with torch.no_grad():
        for seed in range(8):
            model = build_model(spec, seed=seed)
            x = model.stem(torch.randn(1, spec.input_channels, 1, dtype=torch.float64,
                                       generator=torch.Generator().manual_seed(seed)))
            row = []
            for k in range(spec.depth):
                row.append((x[0, :, 0] > 0).double())
                x = x + model.alpha * model._branch(k, x, [])
            signs.append(torch.stack(row))
    signs = torch.cat(signs, dim=1).numpy()  # (blocks, coordinates)
    measured = signs @ signs.T / signs.shape[1]
    law = rp.stream_mask_pairs("relu", _stream_path(spec, spec.depth, 1.0)[:spec.depth])
    off = ~np.eye(spec.depth, dtype=bool)
    assert np.max(np.abs(measured - law)[off]) < 0.02
    assert np.min(law[off]) > 0.25 + 0.08


def test_law_matches_dense_preact_relu_nets_and_the_free_law_does_not():
    """preact / k-last / ReLU, n = 256, K = 32, 64 seeds, conditioned per seed on the stem's ``q_0``
    and the head's ``G_K`` (as in test_resnet_dense).  The law: the seed mean of measured / law is
    1 within 4 standard errors plus 4% for the O(1/n) terms left out (the free law's covered nets
    measure 0.98-1.04 at n = 256; here 1.01 +- 0.04).  The control: on the first layers' pre-activations,
    which read the stream through its masks (the law is 27% above the free law there at K = 32, the
    stream entries only 3.5%), measured / free law exceeds 1 by more than 4 standard errors (here
    1.29 +- 0.06), and measured / law does not (1.01 there)."""
    spec = dense("preact", "k-last", depth=32, width=256)
    seeds = list(range(64))
    ratios = _conditional_ratios(spec, seeds)
    _assert_law_holds(ratios.mean(1))
    _assert_law_holds(ratios[:, 1::2].mean(1))
    first_free, first_free_se = _mean_and_se(
        (ratios * (rd.layer_moments(spec) / rd.free_layer_moments(spec)))[:, 1::2].mean(1))
    assert first_free - 1 > 4 * first_free_se, first_free


def test_errors():
    spec = dense("preact", "k-last", depth=4)
    with pytest.raises(ValueError, match="masks"):
        rp.layer_moments(spec, masks="free")
    with pytest.raises(ValueError, match="part"):
        rp.layer_moments(spec, part="both")
    with pytest.raises(ValueError, match="branch"):
        rp.layer_moments(dense("conv-mlp", "k-last", depth=4))
    with pytest.raises(ValueError, match="input_var"):
        rp.layer_moments(spec, input_var=0.0)
    with pytest.raises(ValueError, match="spread"):
        rd.layer_moments(spec, spread=False)
    with pytest.raises(ValueError, match="kernel"):
        rp.layer_moments(spec.with_(kernel=3, spatial=8))


def test_held_out_reseed_script(tmp_path, capsys, validate_script):
    """A tiny finished residual campaign (preact / k-last / ReLU, calibrated on K = 1..4, held out at
    6): the script measures the held-out depth on fresh seeds, writes one CSV block, resumes without
    re-measuring, and its verdicts are the campaign's predictions against the fresh and pooled
    seeds' bootstrap CIs, recomputed here from the CSV, and its deepest-K exponent refitted with the
    held-out K on the fresh seeds; overlapping seeds, unknown configs and bad arguments exit 2 with
    one line."""
    from amutheory import stats
    from amutheory.campaign.presets import CampaignConfig
    from amutheory.campaign.run import run_campaign
    from amutheory.spec import ArchSpec

    spec = ArchSpec(family="resnet", branch="preact", init="k-last", width=16, kernel=3, spatial=5, batch=2,
                    depth=6)
    run_campaign([CampaignConfig("tiny-preact", spec, (1, 2, 3, 4, 6), (1, 2, 3, 4), 6)], tmp_path / "camp",
                 progress=None, figures=False)
    reseed = validate_script("resnet_held_out_reseed")
    args = ["--campaign", str(tmp_path / "camp"), "--seeds", "6", "--first-seed", "100", "--json"]
    assert reseed.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    csv_path = tmp_path / "camp" / "held_out_reseed.csv"
    lines = csv_path.read_text().splitlines()
    assert len(lines) == 1 + 6
    fresh = np.array([float(x.split(",")[-1]) for x in lines[1:]])
    assert {r["law"] for r in first["rows"]} == {"coherent", "dense-shape"}
    for r in first["rows"]:
        ci = {"mean": stats.arith_mean_ci, "geo": stats.geo_mean_ci}[r["statistic"]]
        m, lo, hi = ci(fresh, level=0.95)
        assert r["depth"] == 6 and r["fresh_inside"] == (lo <= r["s_pred"] <= hi)
        assert r["fresh_error"] == pytest.approx(np.sqrt(m / r["s_pred"]) - 1, rel=1e-12)
    (cfg,) = first["configs"].values()  # the law picked from the calibration alone, and the per-config verdicts
    ses = cfg["residual_se_log"]  # sqrt(RSS / dof) of each law's fit: 3 constants against 2
    assert cfg["selected_law"] == min(ses, key=ses.get) and set(ses) == set(cfg["calibration_rms"])
    for law in ("coherent", "dense-shape"):
        rows = [r for r in first["rows"] if r["law"] == law]
        assert cfg["laws"][law]["fresh"] == all(r["fresh_inside"] for r in rows)
    assert first["configs_passed"]["selected"]["fresh"] == int(cfg["laws"][cfg["selected_law"]]["fresh"])
    # the deepest-K exponent redone with the held-out K on the fresh seeds: the least-squares slope of
    # ln eta* = -ln(mean s_bar)/2 over K = 3, 4 (campaign seeds, from results.csv) and 6 (fresh)
    fit = cfg["exponent"]
    assert fit["depths"] == [3, 4, 6] and fit["fresh_depths"] == [6]
    campaign_s = {d: reseed.seed_s_bar(tmp_path / "camp")[("tiny-preact", d)] for d in (3, 4)}
    means = [np.mean(list(campaign_s[3].values())), np.mean(list(campaign_s[4].values())), fresh.mean()]
    assert fit["exponent"] == pytest.approx(np.polyfit(np.log([3, 4, 6]), -0.5 * np.log(means), 1)[0], rel=1e-9)
    assert fit["ci"][0] < fit["exponent"] < fit["ci"][1]
    assert fit["derived_inside"] == (fit["ci"][0] <= fit["derived"] <= fit["ci"][1])
    assert first["exponents_inside"] == {"campaign": int(fit["campaign_derived_inside"]),
                                         "fresh": int(fit["derived_inside"]), "of": 1}
    assert reseed.main(args) == 0  # resume
    captured = capsys.readouterr()
    assert "skipped" in captured.err and json.loads(captured.out) == first
    assert len(csv_path.read_text().splitlines()) == len(lines)
    for bad, word in ((["--first-seed", "3"], "overlap"), (["--only", "nope"], "nope")):
        assert reseed.main([*args, *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0]
    for bad in (["--chunk", "0"], ["--seeds", "1"], ["--bogus"]):  # argument errors: one line too
        with pytest.raises(SystemExit) as exit_:
            reseed.main([*args, *bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_.value.code == 2 and len(err) == 1 and "error" in err[0], err
    assert reseed.main(["--campaign", str(tmp_path / "missing")]) == 2
    assert "not a finished campaign" in capsys.readouterr().err
    # a campaign replicated on shifted seeds (validate --first-seed): the overlap is with its own seeds
    run_campaign([CampaignConfig("tiny-preact", spec, (1, 2, 3, 4, 6), (1, 2, 3, 4), 3)], tmp_path / "shifted",
                 progress=None, figures=False, seed_offset=200)
    shifted = ["--campaign", str(tmp_path / "shifted"), "--seeds", "3", "--json"]
    assert reseed.main([*shifted, "--first-seed", "201"]) == 2
    assert "overlap the campaign's 200..202" in capsys.readouterr().err
    assert reseed.main([*shifted, "--first-seed", "0"]) == 0  # below the campaign's seeds: disjoint
    assert json.loads(capsys.readouterr().out)["seeds"] == [0, 2]
