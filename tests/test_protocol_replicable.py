"""The registration of 2026-11-27b (issue 48): the smooth optimum, one interval method named on every CI,
the margin rule, claims not tested with their reasons, the largest stable rate and its claim."""

import dataclasses
import json
from pathlib import Path

import pytest

import amutheory.protocol.verdicts as V
from amutheory.protocol import PRESETS, Claim, Protocol, Study, TransferPlan, fingerprint, run_protocol
from amutheory.protocol.presets import MARGIN, NOT_TESTED, PROTOCOL_2026_11_27B
from amutheory.spec import ArchSpec

ROOT = Path(__file__).resolve().parent.parent


def test_the_registration_names_its_preset():
    text = (ROOT / "validate" / "plans" / "REGISTRATION_PROTOCOL_2026_11_27B.md").read_text()
    assert f"**`{fingerprint(PROTOCOL_2026_11_27B)}`**" in text, "the protocol preset changed without its registration"
    for s in PROTOCOL_2026_11_27B.studies:
        assert f"| {s.name} |" in text, s.name
    assert PRESETS["protocol-2026-11-27b"] is PROTOCOL_2026_11_27B
    p = PROTOCOL_2026_11_27B
    assert (p.interval, p.optimum, p.margin, p.requires_learning) == ("jackknife", "smooth", MARGIN, True)
    assert "margin rule" in text and "delete-one-seed jackknife" in text and "0.25" in text
    untested = {c.name: c.untestable for c in p.claims if c.untestable}
    assert untested == NOT_TESTED and all(len(r) > 40 for r in untested.values())
    assert any(c.kind == "eta-max" for c in p.claims)
    chain = p.study("chain1d")
    assert chain.steps == 1000 and max(chain.depths) == 16 and chain.eta_max_rounds > 0
    assert p.study("transformer").dataset == "digits-positions"


# ----------------------------------------------------------------------------- the margin rule
def _fit(lo, hi, e=None):
    return {"exponent": (lo + hi) / 2 if e is None else e, "exponent_ci": [lo, hi]}


def test_margin_rule_holds_fails_and_is_inconclusive_with_no_width_cut():
    assert V.margin_status([-1.6, -1.4], -1.5, 0.25) == "holds"
    assert V.margin_status([-1.2, -0.9], -1.5, 0.25) == "fails"
    assert V.margin_status([-1.7, -1.2], -1.5, 0.25) == "inconclusive"  # overlaps the band, not inside
    assert V.margin_status(None, -1.5, 0.25) == "inconclusive"
    # a wide CI that holds -3/2 no longer holds: imprecision is not rewarded
    assert V.exponent_verdict(_fit(-2.3, -0.7), -1.5, {}, None, 0.25)["verdict"] == "inconclusive"
    assert V.exponent_verdict(_fit(-2.3, -0.7), -1.5, {}, None)["verdict"] == "inconclusive"  # the old width cut
    assert V.exponent_verdict(_fit(-1.6, -1.4), -1.5, {}, None, 0.25)["verdict"] == "holds"
    assert V.exponent_verdict(_fit(-2.4, -2.0), -1.5, {}, None, 0.25)["verdict"] == "fails"
    cond = V.exponent_verdict(_fit(-2.4, -2.0), -1.5, {100: _fit(-1.6, -1.35)}, None, 0.25)
    assert cond["verdict"] == "conditional" and "T = 100" in cond["condition"]
    corr = V.exponent_verdict(_fit(-2.0, -1.8), -1.5, {}, -1.9, 0.25)
    assert corr["verdict"] == "conditional" and "finite-depth" in corr["condition"]


def test_margin_rule_on_differences_steepness_and_transfer():
    diff = {"exponent_difference": 0.05, "exponent_difference_ci": [-0.1, 0.2]}
    assert V.same_exponent_verdict(diff, None, False, 0.25)["verdict"] == "holds"
    assert V.same_exponent_verdict(diff, {"ratio": 1.1, "ratio_ci": [0.9, 1.3]}, True, 0.25)["verdict"] == "conditional"
    assert V.same_exponent_verdict(diff, {"ratio": 3.0, "ratio_ci": [2.0, 4.0]}, True, 0.25)["verdict"] == "holds"
    wide = {"exponent_difference": 0.1, "exponent_difference_ci": [-0.5, 0.7]}
    assert V.same_exponent_verdict(wide, None, False, 0.25)["verdict"] == "inconclusive"
    far = {"exponent_difference": 0.9, "exponent_difference_ci": [0.5, 1.3]}
    assert V.same_exponent_verdict(far, None, False, 0.25)["verdict"] == "fails"
    below = {"exponent_difference": -0.3, "exponent_difference_ci": [-0.5, -0.1]}
    above = {"exponent_difference": 0.3, "exponent_difference_ci": [0.1, 0.5]}
    assert V.steeper_verdict(wide, below, 0.25)["verdict"] == "holds"
    assert V.steeper_verdict(wide, above, 0.25)["verdict"] == "fails"
    assert V.steeper_verdict(above, wide, 0.25)["verdict"] == "inconclusive"
    # transfer: the whole CI inside the factor-1.5 band, not the point
    assert V.transfer_status(1.1, [0.8, 1.4], 1.5, True) == "transfers"
    assert V.transfer_status(1.1, [0.5, 1.4], 1.5, True) == "uncertain"
    assert V.transfer_status(1.1, [0.5, 1.4], 1.5) == "transfers"  # the 2026-11-27 rule read the point
    assert V.transfer_status(2.5, [1.8, 3.0], 1.5, True) == "misses"


# ----------------------------------------------------------------------------- a tiny registration, end to end
CHAIN = ArchSpec(family="conv", dim=1, depth=2, width=8, kernel=3, activation="relu")
COMMON = dict(dataset="synthetic", depths=(2, 3, 4), seeds=3, steps=20, points=5, refine=1, synthetic_shape=(3, 8),
              lr_range=(0.01, 3.0))
TINY = Protocol(
    "tiny-b", "a tiny protocol under the 2026-11-27b rules",
    studies=(Study("chain", "1D chain, trained longer", CHAIN, onestep=True, probe_seeds=4, eta_max_rounds=1,
                   **{**COMMON, "steps": 40}),
             Study("bn", "with BatchNorm", CHAIN, norm="batch", **COMMON)),
    claims=(Claim("chain", "eta* ~ L^(-3/2)", "exponent", ("chain",)),
            Claim("bn", "BatchNorm: prefactor, not exponent", "same-exponent", ("bn", "chain"), prefactor_changes=True),
            Claim("gone", "a claim not run", "exponent", ("nowhere",), untestable="no such net on this machine"),
            Claim("chain-eta-max", "eta_max ~ L^(-3/2)", "eta-max", ("chain",))),
    transfer=TransferPlan("chain", calibration=(2,), targets=(3, 4)), horizons=(10, 20), conditional_horizons=(10,),
    requires_learning=True, interval="jackknife", optimum="smooth", margin=0.25)


def _every_ci(node, where="summary"):
    """``(path, dict)`` of every dict holding a non-null ``*_ci`` entry."""
    if isinstance(node, dict):
        if any(k.endswith("_ci") and v is not None for k, v in node.items()):
            yield where, node
        for k, v in node.items():
            yield from _every_ci(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _every_ci(v, f"{where}[{i}]")


def test_every_ci_of_the_summary_names_the_registered_method(tmp_path):
    s = run_protocol(TINY, tmp_path / "b", workers=1, say=lambda m: None, figures=False)
    assert (s["interval"], s["optimum"], s["margin"]) == ("jackknife", "smooth", 0.25)
    written = json.loads((tmp_path / "b" / "summary.json").read_text())  # as a reader gets it
    found = list(_every_ci({k: v for k, v in written.items() if k not in ("eta_max_raw",)}))
    assert len(found) > 20
    wrong = [(path, d.get("interval")) for path, d in found if d.get("interval") != TINY.interval]
    assert not wrong, wrong[:5]
    claims = {c["name"]: c for c in s["claims"]}
    assert claims["gone"]["verdict"] == "untestable" and claims["gone"]["reason"] == "no such net on this machine"
    assert claims["bn"]["horizons"] == {"bn": 20, "chain": 20}  # the 40-step chain read at the shorter horizon
    assert "eta_max" in s and set(s["eta_max"]) == {"chain"}
    rows = s["eta_max"]["chain"]["rows"]
    assert [r["depth"] for r in rows] == [2, 3, 4]
    for r in rows:  # a censored point is a bound, with no CI; an estimate has one that holds it
        assert (r["eta_max_ci"] is None) or r["eta_max_ci"][0] <= r["eta_max"] <= r["eta_max_ci"][1]
        assert r["in_fit"] == (not {"below-range", "above-range"} & set(r["flags"]))
    assert claims["chain-eta-max"]["verdict"] in V.VERDICTS and "learns" not in claims["chain-eta-max"]
    json.dumps(s, allow_nan=False)  # strict JSON


def test_added_fields_keep_earlier_fingerprints():
    assert fingerprint(PRESETS["protocol-2026-11-27"]) == "ee8f31fcb73b26c5"
    assert fingerprint(PRESETS["protocol-2026-11"]) == "3ec19a75a6d0b7fb"
    assert fingerprint(TINY) != fingerprint(dataclasses.replace(TINY, margin=0.3))
    assert fingerprint(TINY) != fingerprint(dataclasses.replace(TINY, optimum="vertex"))
    with pytest.raises(ValueError, match="optimum"):
        dataclasses.replace(TINY, optimum="cubic")
    with pytest.raises(ValueError, match="margin"):
        dataclasses.replace(TINY, margin=-1.0)


def test_the_cli_offers_every_protocol_preset():
    from amutheory.flags import PROTOCOL_PRESETS

    assert set(PROTOCOL_PRESETS) == set(PRESETS)
