"""A Monte Carlo law over ``predict``'s budget takes the draws the budget allows (amutheory.laws.costs.draws_within),
no fewer than a floor, and says so: in the choice, in the law's notes and in its reported Monte Carlo error (run U
of validate/plans/FINITE_WIDTH.md checks the scaled law against the calibrated fallback at width 128)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import predict
from amutheory.laws import REGISTRY, best_law, costs
from amutheory.laws.contract import Cost, Law
from amutheory.laws.registry import law_cost
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.kernel_law_finite import DRAWS

ROOT = Path(__file__).resolve().parents[1]


@settings(max_examples=200, deadline=None)
@given(fixed=st.floats(0, 20), per_draw=st.floats(1e-4, 1.0), budget=st.floats(0.5, 200), full=st.integers(2, 2048))
def test_the_budgets_draws_are_the_most_that_fit_on_the_step_and_never_below_the_floor(fixed, per_draw, budget, full):
    seconds_at = lambda k: fixed + per_draw * k  # noqa: E731 - the laws' estimates are affine in the draws
    got = costs.draws_within(seconds_at, full, budget)
    if seconds_at(full) <= budget:
        assert got == full
    elif got is None:           # not even the floor fits
        assert seconds_at(min(costs.DRAWS_FLOOR, full)) > budget - 1e-9 or fixed > budget
    else:
        assert min(costs.DRAWS_FLOOR, full) <= got < full
        assert got % costs.DRAWS_STEP == 0
        assert seconds_at(got) <= budget + 1e-9
        assert seconds_at(got + costs.DRAWS_STEP) > budget - 1e-9


def test_no_budget_keeps_the_full_draws():
    assert costs.draws_within(lambda k: 1.0 + k, 512, None) == 512


def test_a_gelu_chain_at_width_128_takes_the_drawn_law_at_the_budgets_draws_not_the_calibrated_fallback():
    spec = ArchSpec(width=128, activation="gelu", spatial=32, depth=16)   # 32 positions: the full draws are over
    choice = best_law(spec, [8, 12, 16])
    assert choice.law.name == "chain-kernel-finite"
    assert costs.DRAWS_FLOOR <= choice.draws < DRAWS
    assert REGISTRY["chain-kernel-finite"].cost(spec, [8, 12, 16], draws=choice.draws).seconds <= 60.0
    assert f"at {choice.draws} draws" in choice.reason and choice.to_dict()["draws"] == choice.draws
    # at width 32 on 16 positions the full draws fit; with a budget the floor does not fit, the calibrated law is taken and the
    # drawn law is named as skipped for cost
    assert best_law(spec.with_(width=32, spatial=16), [8, 12, 16]).draws == DRAWS
    tight = best_law(spec, [8, 12, 16], budget_s=10.0)
    assert tight.law.name == "chain-coherent"
    assert "chain-kernel-finite" in [s["law"] for s in tight.skipped]


def test_predict_passes_the_draws_to_the_law_and_the_law_reports_them():
    spec = ArchSpec(family="mlp", width=16, depth=3, activation="relu", input_channels=8, batch=4)
    pred = predict(spec, [2, 3], draws=24)
    assert pred.law_registry == "mlp-kernel-finite"
    assert "24 draws" in pred.constants["s_bar_mc_rel_se"].note
    assert any("(24 draws" in note for note in pred.notes)


@pytest.mark.parametrize("draws, error", [(1, ValueError), (0, ValueError), (2.5, TypeError), (True, TypeError)])
def test_bad_draws_name_the_argument(draws, error):
    with pytest.raises(error, match="draws"):
        predict(ArchSpec(family="mlp", width=16, depth=3, activation="relu"), [2, 3], draws=draws)


def test_the_command_line_refuses_bad_draws_in_one_line_and_shows_the_budgets_draws():
    bad = subprocess.run([sys.executable, "-m", "amutheory", "predict", "--family", "conv", "--width", "32",
                          "--depths", "4,8", "--draws", "1"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "--draws" in bad.stderr
    got = subprocess.run([sys.executable, "-m", "amutheory", "laws", "--family", "conv", "--activation", "tanh",
                          "--width", "128", "--spatial", "32", "--depths", "8,12,16", "--json"],
                         capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    d = json.loads(got.stdout)
    assert d["choice"]["law"] == "chain-kernel-finite" and costs.DRAWS_FLOOR <= d["choice"]["draws"] < DRAWS
    row = next(r for r in d["laws"] if r["law"] == "chain-kernel-finite")
    assert row["cost"]["draws"] == d["choice"]["draws"] and row["cost"]["seconds"] <= 60.0


class _PlainCost(Law):
    """An outside law whose ``cost`` takes neither a budget nor draws."""

    family, name, exactness = "conv", "plain-cost-law", "exact"

    def _covers(self, spec):
        raise NotImplementedError

    def cost(self, spec, depths):
        return Cost(1.0, "finite-sum")


def test_a_law_whose_cost_takes_no_budget_is_asked_without_one():
    assert law_cost(_PlainCost(), ArchSpec(), [2, 4], 60.0, 100).seconds == 1.0


def test_draws_asked_of_a_law_without_draws_are_named_as_unused():
    spec = ArchSpec(family="mlp", width=16, depth=3, activation="linear", input_channels=8, batch=4)
    pred = predict(spec, [2, 3], draws=64)       # the exact finite-width law: no draws
    assert pred.law_registry == "mlp-finite-width"
    assert any("draws=64 not used" in note for note in pred.notes)


def test_a_relu_circular_chain_wider_than_64_takes_the_calibrated_default_by_run_w():
    """Runs I and Q decided the probe-free default at widths 32 and 64; run W (width 128, fresh seeds) found the
    calibrated law better in error and z, so wider chains take it and the backward law says why."""
    from amutheory.laws.chain_finite import DEFAULT_MAX_WIDTH

    spec = ArchSpec(width=128, activation="relu", depth=16)
    choice = best_law(spec, [8, 12, 16])
    assert choice.law.name == "chain-coherent"
    reason = next(d["reason"] for d in choice.not_default if d["law"] == "chain-kernel-finite-backward")
    assert "run" in reason and "W" in reason
    assert best_law(spec.with_(width=DEFAULT_MAX_WIDTH), [8, 12, 16]).law.name == "chain-kernel-finite-backward"
    assert best_law(spec.with_(width=16), [8, 12, 16]).law.name == "chain-kernel-finite-backward"


def test_the_draws_flags_help_states_the_laws_own_numbers():
    """``--draws``'s help names the full count and the floor; they live in the law and the cost model, so the
    help must follow them (the command line does not import them at start-up)."""
    got = subprocess.run([sys.executable, "-m", "amutheory", "predict", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 0
    text = " ".join(got.stdout.split())
    assert f"{DRAWS} for the finite-width kernel laws" in text and f"at least {costs.DRAWS_FLOOR}" in text


def test_the_readmes_2d_recipe_asks_the_backward_law_at_its_draws_from_the_command_line():
    """README: on a 2-D ReLU chain, where the backward law is over the budget, ``--law chain-kernel-finite-backward
    --draws N`` runs it with N draws (a small 2-D chain here), as a user types it."""
    got = subprocess.run([sys.executable, "-m", "amutheory", "predict", "--family", "conv", "--dim", "2",
                          "--activation", "relu", "--width", "8", "--spatial", "4", "--batch", "2", "--depths", "2,3",
                          "--law", "chain-kernel-finite-backward", "--draws", "16", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    d = json.loads(got.stdout)
    assert d["law_registry"] == "chain-kernel-finite-backward"
    assert "16 draws" in json.dumps(d) and all(s > 0 for s in d["s_bar"])


def test_2d_relu_chains_take_the_backward_law_by_run_2e_where_it_fits_the_budget():
    """Run 2E (plan addendum 27) decided the 2-D default per padding; the registry follows its recorded decision: a
    padding it met takes ``chain-kernel-finite-backward`` at width 32 (within the 60 s budget at the draws' floor or
    above), one it did not keeps the calibrated law and says why; at width 64 the floor is over the budget (cost)."""
    from amutheory.laws.chain_finite import DEFAULT_2D_PADDINGS

    recorded = json.loads((ROOT / "docs" / "findings" / "finite_width" / "smooth_2e.json").read_text())["decision"]
    assert set(recorded) == {"circular", "zero"}
    assert {p for p, d in recorded.items() if d["met"]} == set(DEFAULT_2D_PADDINGS)
    for padding in recorded:
        spec = ArchSpec(dim=2, width=32, spatial=8, batch=8, input_channels=3, padding=padding, activation="relu",
                        depth=16)
        choice = best_law(spec, [8, 12, 16])
        if padding in DEFAULT_2D_PADDINGS:
            assert choice.law.name == "chain-kernel-finite-backward" and choice.draws >= costs.DRAWS_FLOOR
        else:
            assert choice.law.name == "chain-coherent"
            reason = next(d["reason"] for d in choice.not_default if d["law"] == "chain-kernel-finite-backward")
            assert "2E" in reason
        wide = best_law(spec.with_(width=64), [8, 12, 16])
        assert wide.law.name == "chain-coherent" and "cost" in wide.reason


@pytest.mark.parametrize("activation, budget, law", [("relu", "90", "chain-kernel-finite-backward"),
                                                     ("tanh", "600", "chain-kernel-finite")])
def test_the_readmes_budget_recipes_take_the_probe_free_2d_laws_from_the_command_line(activation, budget, law):
    """README: on 2-D chains (8 x 8, batch 8) the probe-free law is over the 60 s budget at width 64 (ReLU) and on
    GELU and tanh chains, and ``--budget`` takes it; ``amutheory laws --json`` as a user types it (nothing run)."""
    arch = ["--family", "conv", "--dim", "2", "--activation", activation, "--width", "64" if activation == "relu"
            else "32", "--spatial", "8", "--depths", "8,12,16", "--json"]
    choices = {}
    for extra in ([], ["--budget", budget]):
        got = subprocess.run([sys.executable, "-m", "amutheory", "laws", *arch, *extra], capture_output=True, text=True,
                             timeout=120)
        assert got.returncode == 0, got.stderr[-2000:]
        choices[bool(extra)] = json.loads(got.stdout)["choice"]
    assert choices[False]["law"] == "chain-coherent"
    assert [d["law"] for d in choices[False]["skipped_for_cost"]] == [law]
    assert choices[True]["law"] == law and choices[True]["draws"] >= costs.DRAWS_FLOOR


@settings(max_examples=100, deadline=None)
@given(fixed=st.floats(0, 20), per_draw=st.floats(1e-3, 10.0), budget=st.floats(0.5, 200), full=st.integers(2, 64),
       floor=st.integers(1, 16), step=st.integers(1, 8))
def test_a_laws_own_floor_and_step(fixed, per_draw, budget, full, floor, step):
    seconds_at = lambda k: fixed + per_draw * k  # noqa: E731
    got = costs.draws_within(seconds_at, full, budget, floor, step)
    if seconds_at(full) <= budget:
        assert got == full
    elif got is not None:
        assert min(floor, full) <= got < full and got % step == 0 and seconds_at(got) <= budget + 1e-9


def test_the_residual_law_over_the_points_takes_the_budgets_draws_and_is_skipped_where_its_floor_does_not_fit():
    """At 64 points (B = 8, N = 8) the ReLU conv-mlp net's law over the points is the default; under a budget its
    full 32 draws do not fit it takes fewer (a multiple of 4, at least 8) and says so; where not even 8 fit the
    calibrated law is taken, the law over the points named as skipped for cost; at 128 points (N = 16) the planned
    check kept it off the default."""
    from amutheory.laws.resnet_exact import POINT_DRAWS, POINT_DRAWS_FLOOR, POINT_DRAWS_STEP

    spec = ArchSpec(family="resnet", branch="conv-mlp", activation="relu", spatial=8, batch=8, width=32, depth=16)
    law = REGISTRY["resnet-points"]
    full = law.cost(spec, [8, 12, 16], draws=POINT_DRAWS).seconds
    budget = round(law.cost(spec, [8, 12, 16], draws=(POINT_DRAWS + POINT_DRAWS_FLOOR) // 2).seconds + 0.01, 3)
    assert best_law(spec, [8, 12, 16], budget_s=max(full, 60.0)).law.name == "resnet-points"
    choice = best_law(spec, [8, 12, 16], budget_s=budget)
    assert choice.law.name == "resnet-points"
    assert POINT_DRAWS_FLOOR <= choice.draws < POINT_DRAWS and choice.draws % POINT_DRAWS_STEP == 0
    assert law.cost(spec, [8, 12, 16], draws=choice.draws).seconds <= budget
    assert f"at {choice.draws} draws" in choice.reason
    deep = best_law(spec, [128, 192, 256])  # deep enough that not even the floor's 8 draws fit 60 s
    assert deep.law.name == "resnet-coherent" and "resnet-points" in [s["law"] for s in deep.skipped]
    wide = best_law(spec.with_(spatial=16), [8, 12, 16])  # 128 points: kept off the default by run Y3
    assert wide.law.name == "resnet-coherent"
    assert [d["law"] for d in wide.not_default] == ["resnet-points"] and "Y3" in wide.not_default[0]["reason"]
    linear = best_law(spec.with_(activation="linear", padding="zero"), [8, 12, 16])  # kept off by run Y5
    assert linear.law.name == "resnet-coherent" and "Y5" in linear.not_default[0]["reason"]
    out = subprocess.run([sys.executable, "-m", "amutheory", "laws", "--family", "resnet", "--branch", "conv-mlp",
                          "--activation", "relu", "--spatial", "8", "--width", "32", "--depths", "8,12,16",
                          "--budget", f"{budget:.3f}"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and f"at {choice.draws} draws (of its {POINT_DRAWS})" in out.stdout, out.stdout


def test_a_law_skipped_for_cost_names_the_smallest_budget_that_takes_it():
    """``takes_budget_s``: the whole seconds from which the skipped law is the default (at ``takes_draws``, its floor
    or more), one second less keeping it skipped; a law without draws needs its estimate."""
    spec = ArchSpec(width=128, activation="gelu", spatial=32, depth=16)
    skipped = {d["law"]: d for d in best_law(spec, [8, 12, 16], budget_s=10.0).skipped}["chain-kernel-finite"]
    takes, draws = skipped["takes_budget_s"], skipped["takes_draws"]
    assert f"a budget of {takes} s takes it, at {draws} draws" in skipped["reason"]
    at = best_law(spec, [8, 12, 16], budget_s=float(takes))
    assert at.law.name == "chain-kernel-finite" and at.draws == draws and costs.DRAWS_FLOOR <= draws < DRAWS
    assert best_law(spec, [8, 12, 16], budget_s=takes - 1.0).law.name == "chain-coherent"
    linear = ArchSpec(width=32, activation="linear", depth=16)
    exact = {d["law"]: d for d in best_law(linear, [8, 12, 16], budget_s=1.0).skipped}
    assert exact, "a 1 s budget skips the exact linear laws for cost"
    for d in exact.values():
        assert d["takes_draws"] is None and d["takes_budget_s"] == math.ceil(d["cost"]["seconds"])


def test_the_default_scan_names_the_nets_whose_default_changed(validate_script, tmp_path, capsys):
    """``validate/scan_defaults.py``: every net of its grid gets ``predict``'s default at the budget, and a scan against
    an earlier one names each net whose law changed and counts those that kept it with other draws."""
    scan = validate_script("scan_defaults")
    now = tmp_path / "now.json"
    assert scan.main(["--out", str(now)]) == 0
    got = json.loads(now.read_text())
    assert len(got) == sum(1 for _ in scan.nets()) and all(v[0] != "error" for v in got.values())
    key = "conv 2-D N=8 gelu circular n=32 B=8 L=8,12,16"
    assert got[key] == [best_law(ArchSpec(dim=2, spatial=8, width=32, activation="gelu", depth=16), [8, 12, 16]).law.name,
                        None]
    before = dict(got)
    before[key] = ["chain-kernel-finite", 128]
    redrawn = next(k for k, v in got.items() if v[1])
    before[redrawn] = [got[redrawn][0], got[redrawn][1] - 16]
    (tmp_path / "before.json").write_text(json.dumps(before))
    capsys.readouterr()
    assert scan.main(["--out", str(tmp_path / "again.json"), "--against", str(tmp_path / "before.json")]) == 0
    out = capsys.readouterr().out
    assert f"{key}: chain-kernel-finite -> chain-coherent" in out
    assert f"1 of {len(got)} nets changed law" in out and "1 kept it with other draws (1 more, 0 fewer)" in out
    with pytest.raises(SystemExit) as bad:
        scan.main(["--out", str(now), "--against", str(tmp_path / "missing.json")])
    assert bad.value.code == 2
