"""The limit-shape law of residual nets: the exact infinite-width law times one calibrated amplitude
(amutheory.api.limit_shape, limit_shape_predictor, predict(law="limit-shape")) and the script that puts
it against a campaign's held-out depths (validate/studies/resnet_limit_shape.py).

Kinds of evidence: the law's K-dependence is each exact law it wraps (the mode law, the dense law, the
law over the points averaged over draws common to every K), value for value; a table given to the
predictor is used as it is; real nets, calibrated at K = 2..6, predict a held-out K within the
measurement's and the calibration's errors; the script on a campaign folder of real nets (calibration equal to calibrate_law's,
resume without recomputing, one-line errors).
"""

import csv
import json

import numpy as np
import pytest

from amutheory.api import derive, limit_shape, limit_shape_predictor, measure, predict
from amutheory.calibrate import calibrate_law
from amutheory.cli import main
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import dense as resnet_dense
from amutheory.symbolic.resnet import operator as resnet_operator
from amutheory.symbolic.resnet import spectral as resnet_spectral
def resnet(branch="conv-mlp", init="k-last", **kw):
    kw = {"kernel": 3, "spatial": 4, "batch": 2, "depth": 3, "width": 32, "input_channels": 3, "activation": "linear",
          **kw}
    return ArchSpec(family="resnet", branch=branch, init=init, **kw)


def test_limit_shape_is_the_exact_law_it_wraps():
    """Linear circular: the mode law; dense: the dense law (both exact, ``log_shape_se`` 0); ReLU
    conv-mlp over its points: the mean of the law given each of the same joint draws, the draws the
    same at every K (so one call per K gives what one call for all K gives)."""
    ks = [2, 3, 5]
    lin = resnet()
    out = limit_shape(lin, ks)
    np.testing.assert_allclose(out["s_bar"], resnet_spectral.s_bar(lin, ks, 1.0), rtol=1e-12)
    assert out["draws"] == 0 and np.all(out["log_shape_se"] == 0)
    dense = resnet(kernel=1, spatial=1, batch=1, activation="relu")
    np.testing.assert_allclose(limit_shape(dense, ks)["s_bar"], resnet_dense.s_bar(dense, ks, 1.0), rtol=1e-12)
    relu = resnet(activation="relu")
    out = limit_shape(relu, ks, draws=3, seed=4)
    table = resnet_operator.s_bar_draws(relu, ks, 3, 4, directions=True)
    np.testing.assert_allclose(out["s_bar"], table.mean(axis=0), rtol=1e-12)
    assert out["draws"] == 3 and np.all(out["log_shape_se"] > 0)
    one_by_one = [limit_shape(relu, [k], draws=3, seed=4)["s_bar"][0] for k in ks]
    np.testing.assert_allclose(one_by_one, out["s_bar"], rtol=1e-12)


def test_limit_shape_predictor_uses_its_table_and_refuses_what_no_exact_law_covers():
    """Given a table the predictor returns ``rho`` times it (nothing recomputed: the values here are
    no law's); a K outside the table is computed by :func:`limit_shape`.  A net no exact law covers,
    a bad K and a bad ``draws`` are ``ValueError`` naming the argument."""
    relu = resnet(activation="relu")
    fn = limit_shape_predictor(relu, draws=2, table={2: 5.0, 3: 7.0})
    np.testing.assert_allclose(fn([2, 3, 2], 2.0), [10.0, 14.0, 10.0])
    assert fn(np.array([[4]]), 1.0).shape == (1, 1)
    assert fn([4], 1.0)[0] == pytest.approx(limit_shape(relu, [4], draws=2)["s_bar"][0], rel=1e-12)
    assert "common to every K" in fn.how and "8 joint draws" not in fn.how
    with pytest.raises(ValueError, match="kernel"):
        limit_shape_predictor(resnet(branch="conv", init="k-squared", activation="relu"))
    with pytest.raises(ValueError, match="depths"):
        fn([2.5], 1.0)
    with pytest.raises(ValueError, match="draws"):
        limit_shape(relu, [2], draws=1)
    with pytest.raises(ValueError, match="calibrated predictor"):
        derive(relu, law="limit-shape")


def test_nets_calibrated_on_shallow_depths_predict_a_held_out_depth():
    """Real linear conv-mlp/k-last nets of the campaign's geometry (n = 64, k = 3, N = B = 8): the
    limit-shape law calibrated at K = 2, 3, 4, 6 on 64 seeds predicts ``s_bar`` at K = 16 on 64 other
    seeds, for both statistics, within 3 standard errors of the measured value, the error being the
    measurement's (seed bootstrap of the log mean) and the prediction's own (its calibration's
    refits) in quadrature: a z-test that fails 0.3% of the time when the law holds.  Its amplitude is
    the finite width's excess: measured/law of these nets at n = 64 is ~1.08-1.12 (README), so
    ``rho`` lies within 4 of its standard errors of [1.0, 1.2]."""
    spec = resnet(kernel=3, spatial=8, batch=8, width=64)
    cal = measure(spec, [2, 3, 4, 6], range(64))
    s = measure(spec, [16], range(100, 164)).s_bar(16)
    measured = {"mean": (np.log(s.mean()), s.std(ddof=1) / np.sqrt(len(s)) / s.mean()),
                "geo": (np.log(s).mean(), np.log(s).std(ddof=1) / np.sqrt(len(s)))}
    for stat, (log_m, se) in measured.items():
        pred = predict(spec, [16], law="limit-shape", calibration_measurement=cal, statistic=stat)
        z = (np.log(pred.s_bar[0]) - log_m) / np.hypot(pred.s_bar_log_sd[0], se)
        assert abs(z) <= 3, (stat, z)
        rho = pred.constants["rho"]
        assert 1.0 - 4 * rho.error <= rho.value <= 1.2 + 4 * rho.error
        assert pred.law == "resnet-limit-shape-conv-mlp-k-last-linear"
        assert any("limit-shape law" in n for n in pred.notes)


def test_cli_predict_limit_shape(capsys):
    """``predict --law limit-shape --json`` carries the amplitude; a net no exact law covers is one line, exit 2."""
    args = ["predict", "--family", "resnet", "--branch", "conv-mlp", "--init", "k-all", "--activation", "linear",
            "--width", "32", "--kernel", "3", "--spatial", "4", "--batch", "2", "--depths", "8",
            "--calibration-depths", "2,3,4", "--calibration-seeds", "6", "--law", "limit-shape", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["law"] == "resnet-limit-shape-conv-mlp-k-all-linear" and out["constants"]["rho"]["value"] > 0
    bad = [a if a != "linear" else "relu" for a in args]
    bad[bad.index("conv-mlp")] = "conv"
    assert main(bad) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def _campaign(tmp_path, configs: dict, depths=(2, 3, 4, 6), cal=(2, 3, 4), seeds=6):
    """A campaign folder of real nets: ``campaign.json`` and ``results.csv`` (the probe's ``s``)."""
    from amutheory.campaign.presets import CampaignConfig
    from amutheory.campaign.results import CSV_COLUMNS, _block_rows

    meta = {"protocol": {"input_var": 1.0}, "configs": {}}
    with (tmp_path / "results.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for name, spec in configs.items():
            cfg = CampaignConfig(name, spec, depths, cal, seeds)
            for k in depths:
                w.writerows(_block_rows(cfg, spec.padding, k, list(range(seeds)),
                                        probe(spec.with_(depth=k), range(seeds)).s))
            meta["configs"][name] = {"spec": spec.to_dict(), "depths": list(depths), "calibration_depths": list(cal),
                                     "seeds": list(range(seeds))}
    (tmp_path / "campaign.json").write_text(json.dumps(meta))


def test_limit_shape_script_against_a_campaign_folder(tmp_path, capsys, validate_script):
    """``validate/studies/resnet_limit_shape.py``: the law at every campaign depth to a CSV, ``rho`` equal to
    :func:`calibrate_law` of the campaign's calibration profiles with that law, every other depth
    held out; a rerun reads the CSV (no recomputation: a doctored value shows); a config no exact law
    covers is left out; bad input is one line, exit 2."""
    lin, relu = resnet(init="k-all"), resnet(activation="relu")
    unstable = resnet(branch="conv", init="k-last", activation="relu")
    _campaign(tmp_path, {"lin": lin, "relu": relu, "conv-relu": unstable})
    script = validate_script("resnet_limit_shape")
    args = ["--campaign", str(tmp_path), "--draws", "2", "--json"]
    assert script.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    camp = first["campaigns"][0]
    assert [r["config"] for r in camp["configs"]] == ["lin", "relu"]
    # the configs checked, grouped by shared draws (campaign.draws): a partition of them
    assert sorted(n for g in camp["draw_groups"] for n in g) == ["lin", "relu"] and 1 <= camp["effective_configs"] <= 2
    rows = list(csv.DictReader((tmp_path / "limit_shape.csv").open()))
    assert len(rows) == 8
    from amutheory.campaign.presets import CampaignConfig
    from amutheory.campaign.results import load_measurement

    for r in camp["configs"]:
        spec = lin if r["config"] == "lin" else relu
        table = {int(x["depth"]): float(x["law"]) for x in rows if x["config"] == r["config"]}
        meas = load_measurement(tmp_path / "results.csv", CampaignConfig(r["config"], spec, (2, 3, 4, 6), (2, 3, 4), 6))
        cal = calibrate_law({d: meas.profiles[d] for d in (2, 3, 4)}, limit_shape_predictor(spec, table=table),
                            ("rho",), spread="bounded")
        mean = r["statistics"]["mean"]
        assert mean["rho"] == pytest.approx(cal.constants["rho"].value, rel=1e-9)
        held = [x for x in mean["per_depth"] if not x["calibration"]]
        assert [x["depth"] for x in held] == [6]
        assert held[0]["s_pred"] == pytest.approx(mean["rho"] * table[6], rel=1e-9)
    # resume: the CSV is read, not recomputed (a doctored law value moves the prediction)
    text = (tmp_path / "limit_shape.csv").read_text().splitlines()
    j = next(i for i, line in enumerate(text) if line.startswith("lin,") and ",6," in line)
    parts = text[j].split(",")
    parts[4] = str(2 * float(parts[4]))
    text[j] = ",".join(parts)
    (tmp_path / "limit_shape.csv").write_text("\n".join(text) + "\n")
    assert script.main(args) == 0
    again = json.loads(capsys.readouterr().out)["campaigns"][0]["configs"][0]["statistics"]["mean"]
    assert again["per_depth"][-1]["s_pred"] == pytest.approx(2 * first["campaigns"][0]["configs"][0]["statistics"]
                                                             ["mean"]["per_depth"][-1]["s_pred"], rel=1e-9)
    for bad in (["--campaign", str(tmp_path), "--configs", "nope"], ["--campaign", str(tmp_path / "missing")],
                ["--campaign", str(tmp_path), "--draws", "1"]):
        with pytest.raises(SystemExit) as exc:
            code = script.main(bad)
            raise SystemExit(code)
        assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3


def test_limit_shape_script_checks_the_rule_on_another_seed_set(tmp_path, capsys, validate_script):
    """With ``--fresh-file`` (a seed set re-measured by ``resnet_held_out_reseed.py --out``): the rule
    "limit-shape where an exact law covers the net, the campaign's selected law elsewhere" over every
    forward-stable residual config, per width; the uncovered config's predictions are ``summary.json``'s
    rows (not refitted), its verdicts those rows against the fresh seeds' CIs; the count goes against the
    exact-law null (``pass_count_null`` of those seeds' influence vectors) with ``P(count <= observed)``."""
    from amutheory import stats
    from amutheory.campaign.analysis_resnet import LAW_ROWS
    from amutheory.campaign.draws import pass_count_null, row_influence
    from amutheory.campaign.presets import CampaignConfig
    from amutheory.campaign.run import run_campaign

    covered, other = resnet(init="k-all"), resnet(branch="preact", activation="relu")
    camp = tmp_path / "camp"
    # four calibration K: the coherent law's three constants leave its fit a residual degree of freedom,
    # which the selection needs
    run_campaign([CampaignConfig(name, spec, (2, 3, 4, 6, 8), (2, 3, 4, 6), 6)
                  for name, spec in (("lin", covered), ("preact", other))], camp, progress=None, figures=False)
    reseed = validate_script("resnet_held_out_reseed")
    assert reseed.main(["--campaign", str(camp), "--seeds", "6", "--first-seed", "50",
                        "--out", str(camp / "set50.csv"), "--json"]) == 0
    capsys.readouterr()
    script = validate_script("resnet_limit_shape")
    assert script.main(["--campaign", str(camp), "--draws", "2", "--fresh-file", "set50.csv", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fresh_file"] == ["set50.csv"]
    rule = out["rule"][str(covered.width)]
    assert [(c["config"], c["law"]) for c in rule["configs"]][0] == ("lin", "limit-shape")
    summary = {c["name"]: c for c in json.loads((camp / "summary.json").read_text())["configs"]}
    sel = summary["preact"]["selected_law"]["law"]
    assert rule["configs"][1] == {"config": "preact", "law": sel, "fresh_passed": rule["configs"][1]["fresh_passed"]}
    fresh = {}
    for row in csv.DictReader((camp / "set50.csv").open()):
        fresh.setdefault(row["config"], []).append(float(row["s_bar"]))
    verdict = True  # the uncovered config: its selected law's held-out row against the fresh seeds' CIs
    for stat, ci in (("mean", stats.arith_mean_ci), ("geo", stats.geo_mean_ci)):
        (row,) = [r for r in LAW_ROWS[sel](summary["preact"])[stat] if not r["calibration"]]
        _m, lo, hi = ci(np.array(fresh["preact"]), level=0.95)
        verdict &= lo <= row["s_pred"] <= hi
    assert rule["configs"][1]["fresh_passed"] == verdict
    lin = out["campaigns"][0]["configs"][0]
    assert rule["configs"][0]["fresh_passed"] == lin["fresh_passed"]
    count = sum(c["fresh_passed"] for c in rule["configs"])
    assert rule["fresh_passed"] == [count, 2]
    influence = {name: [row_influence(fresh[name], s) for s in ("geo", "mean")] for name in ("lin", "preact")}
    assert rule["null"]["expected"] == pytest.approx(pass_count_null(influence)["expected"], abs=1e-12)
    assert rule["p_value"] == rule["null"]["p_at_most"][count]
    # with each prediction's own error (its calibration's refits): a wider null, never a narrower one
    cal = rule["null_with_calibration"]
    assert cal["with_prediction_error"] and rule["p_value_with_calibration"] == cal["p_at_most"][count]
    assert cal["expected"] <= rule["null"]["expected"] + 0.05  # 0.05: four Monte Carlo sds of the mean count
    # the campaign's own held-out count against the exact-law null on its seeds (summary.json, report.md)
    full = json.loads((camp / "summary.json").read_text())
    null = full["held_out_null"]["resnet"]
    own = reseed.seed_s_bar(camp)
    own_influence = {name: [row_influence([own[(name, 8)][s] for s in range(6)], stat) for stat in ("mean", "geo")]
                     for name in ("lin", "preact")}
    assert null["names"] == ["lin", "preact"] and null["passed"] == sum(summary[n]["passed"] for n in null["names"])
    assert null["expected"] == pytest.approx(pass_count_null(own_influence)["expected"], abs=1e-12)
    assert null["p_value"] == null["p_at_most"][null["passed"]] and full["held_out_null"]["circular"] is None
    assert f"an exact law would pass {null['expected']:.1f} of 2" in (camp / "report.md").read_text()
    with pytest.raises(SystemExit) as exc:  # a path, not a file name of the campaign folder
        script.main(["--campaign", str(camp), "--fresh-file", str(camp / "set50.csv")])
    assert exc.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
