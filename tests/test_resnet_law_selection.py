"""Picking a residual law from its calibration alone (``predict(law="selected")``).

Residual nets have two calibrated laws (the coherent order, three constants; the dense shape, two).
Which one to trust for a given net is decided before any held-out depth is seen, by the residual
standard error ``sqrt(RSS / dof)`` of each law's fit at the calibration K
(:func:`amutheory.api.pick_resnet_law`).  Kinds of evidence: the arithmetic of the criterion
(exact; properties over random fits, including the case where the rms and the residual standard
error disagree); real nets, where the selected prediction must *be* the picked law's own prediction
from the same measurement; the campaign's ``selected_law`` record (in
``test_resnet_dense_shape.test_campaign_analysis_reports_both_laws``); errors and the CLI.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import RESNET_LAWS, SELECTION_CRITERION, derive, measure, pick_resnet_law, predict
from amutheory.calibrate import residual_se
from amutheory.cli import main
from amutheory.spec import ArchSpec

pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")

#: constants each law fits
N_CONSTANTS = {"coherent": 3, "dense-shape": 2}


def small(branch="conv-mlp", init="k-all", activation="relu", **kw):
    kw = {"kernel": 3, "spatial": 4, "batch": 2, "width": 16, "depth": 8, **kw}
    return ArchSpec(family="resnet", branch=branch, init=init, activation=activation, **kw)


def _cal(rms, depths, law, with_se=True):
    """A calibration dict as ``Calibration.to_dict`` writes it (``with_se=False``: as written before
    the residual standard error was recorded)."""
    dof = len(depths) - N_CONSTANTS[law]
    d = {"depths": list(depths), "residual_rms_log": rms}
    if with_se:
        d.update(residual_dof=dof, residual_se_log=residual_se(rms, len(depths), dof))
    return d


def test_residual_se_is_the_dof_corrected_rms():
    assert residual_se(0.1, 6, 3) == pytest.approx(0.1 * math.sqrt(2))
    assert residual_se(0.1, 6, 6) == pytest.approx(0.1)
    assert residual_se(0.1, 3, 0) is None and residual_se(None, 6, 3) is None and residual_se(0.1, 6, None) is None


def test_the_criterion_is_not_the_rms():
    """Six calibration K: coherent rms 0.030 (3 dof, se 0.0424) against dense-shape rms 0.033 (4
    dof, se 0.0404).  The rms would pick the coherent law for its extra constant; the residual
    standard error picks the dense shape."""
    depths = [2, 4, 8, 16, 32, 64]
    cals = {"coherent": _cal(0.030, depths, "coherent"), "dense-shape": _cal(0.033, depths, "dense-shape")}
    picked, ses = pick_resnet_law(cals)
    assert picked == "dense-shape"
    assert ses == pytest.approx({"coherent": 0.030 * math.sqrt(2), "dense-shape": 0.033 * math.sqrt(1.5)})


@settings(max_examples=60, deadline=None)
@given(rms=st.tuples(st.floats(1e-4, 1.0), st.floats(1e-4, 1.0)), n_depths=st.integers(4, 12),
       with_se=st.booleans(), drop=st.sampled_from([None, "dense-shape"]))
def test_pick_is_the_lower_residual_se(rms, n_depths, with_se, drop):
    """Over random fits: the law picked has the lowest ``sqrt(RSS / dof)``; a summary written before
    the key existed gives the same pick (recomputed from rms, depths and the law's constants); a
    law without a calibration (not covered) is left out."""
    depths = list(range(2, 2 + n_depths))
    cals = {law: _cal(r, depths, law, with_se) for law, r in zip(RESNET_LAWS, rms)}
    if drop:
        cals[drop] = None
    picked, ses = pick_resnet_law(cals)
    expected = {law: r * math.sqrt(n_depths / (n_depths - N_CONSTANTS[law])) for law, r in zip(RESNET_LAWS, rms)
                if cals[law]}
    assert ses == pytest.approx(expected)
    assert ses[picked] == min(ses.values())
    assert pick_resnet_law({law: _cal(r, depths, law, not with_se) if cals[law] else None
                            for law, r in zip(RESNET_LAWS, rms)}) == (picked, ses)


def test_no_pick_without_residual_dof():
    """Three calibration K fit the coherent law exactly: nothing says how well it fits, so no pick."""
    cals = {"coherent": _cal(0.0, [2, 4, 8], "coherent"), "dense-shape": _cal(0.02, [2, 4, 8], "dense-shape")}
    assert pick_resnet_law(cals)[0] is None
    assert pick_resnet_law({}) == (None, {})


def test_selected_prediction_is_the_picked_laws_own():
    """Real nets (conv-mlp / k-all / ReLU, n = 16, 8 seeds) measured once at K = 2, 3, 4, 6: the
    selected prediction is exactly the picked law's prediction from the same measurement (eta*,
    constants, name), and its record names both fits and both laws' eta*."""
    spec = small()
    cal = measure(spec, [2, 3, 4, 6], list(range(8)))
    own = {law: predict(spec, [8, 16], law=law, calibration_measurement=cal) for law in RESNET_LAWS}
    sel = predict(spec, [8, 16], law="selected", calibration_measurement=cal)
    picked, ses = pick_resnet_law({law: p.calibration.to_dict() for law, p in own.items()})
    assert sel.selection["law"] == picked and sel.selection["residual_se_log"] == ses
    assert sel.law == own[picked].law and sel.eta_star == own[picked].eta_star
    assert {k: c.value for k, c in sel.constants.items()} == {k: c.value for k, c in own[picked].constants.items()}
    assert sel.selection["eta_star_by_law"] == {law: p.eta_star for law, p in own.items()}
    assert sel.selection["criterion"] == SELECTION_CRITERION and sel.selection["not_covered"] == {}
    assert sel.to_dict()["law_selection"]["law"] == picked and f"law selected: {picked}" in sel.notes[-1]
    assert "law_selection" not in own[picked].to_dict()


def test_uncovered_config_keeps_the_coherent_law():
    """A projection shortcut has no dense law: the selection keeps the coherent law and says why."""
    spec = small(shortcut="projection")
    cal = measure(spec, [2, 3, 4, 6], list(range(4)))
    sel = predict(spec, [8], law="selected", calibration_measurement=cal)
    coherent = predict(spec, [8], law="coherent", calibration_measurement=cal)
    assert sel.selection["law"] == "coherent" and sel.eta_star == coherent.eta_star
    assert set(sel.selection["not_covered"]) == {"dense-shape"} and "shortcut" in sel.selection["not_covered"][
        "dense-shape"]
    assert np.isfinite(sel.selection["residual_se_log"]["coherent"])


def test_selection_errors():
    spec = small()
    with pytest.raises(ValueError, match="calibration_depths"):  # refused before anything is measured
        predict(spec, [8], law="selected", calibration_depths=[2, 3, 4])
    with pytest.raises(ValueError, match="constants"):
        predict(spec, [8], law="selected", constants="derive")
    with pytest.raises(ValueError, match="law"):
        predict(ArchSpec(depth=4), [4], law="selected")
    with pytest.raises(ValueError, match="law"):
        derive(spec, law="selected")


def test_cli_predict_selected(capsys):
    base = ["predict", "--family", "resnet", "--branch", "conv-mlp", "--init", "k-all", "--width", "16",
            "--kernel", "3", "--spatial", "4", "--batch", "2", "--depths", "8", "--calibration-seeds", "4",
            "--law", "selected", "--quiet"]
    assert main(base + ["--calibration-depths", "2,3,4,6", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["law_selection"]["law"] in RESNET_LAWS and set(d["law_selection"]["residual_se_log"]) == set(RESNET_LAWS)
    assert main(base + ["--calibration-depths", "2,3,4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "calibration_depths" in err[0]
    assert main(["derive", "--family", "resnet", "--law", "selected"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
