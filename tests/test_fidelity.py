"""The multi-fidelity search (``amutheory.tuning.fidelity``) and the engine's stopped runs that it rests on
(``Cell.stop``, ``amutheory.train.checkpoint``): a rung goes on from the last one's saved state, bit for bit
the run trained in one go, and is charged only its new steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from amutheory.spec import ArchSpec
from amutheory.train import Cell, spec_for_data
from amutheory.train.run import train
from amutheory.tuning.cost import charge
from amutheory.tuning.fidelity import STOPS, Fidelity, search, step_of

SPEC = spec_for_data(ArchSpec(family="conv", dim=1, width=8, depth=3), "digits")


# --------------------------------------------------------------------------- the engine: stopped runs
@pytest.mark.parametrize("vectorise", [True, False])
@pytest.mark.parametrize("optimizer,momentum,lr", [("sgd", 0.9, 0.05), ("adam", 0.0, 0.003)])
def test_a_run_in_rungs_is_the_run_in_one_go(tmp_path, vectorise, optimizer, momentum, lr):
    base = Cell(spec=SPEC, lr=lr, dataset="digits", steps=40, batch_size=16, optimizer=optimizer, momentum=momentum)
    rates = [lr / 2, lr, 2 * lr]
    whole = train([base.with_(lr=r) for r in rates], vectorise=vectorise)
    ck = str(tmp_path / "ck")
    first = train([base.with_(lr=r, stop=7, checkpoints=ck) for r in rates], vectorise=vectorise)
    second = train([base.with_(lr=r, stop=20, checkpoints=ck) for r in rates[1:]], vectorise=vectorise)
    last = train([base.with_(lr=r, checkpoints=ck) for r in rates], vectorise=vectorise)
    for w, r in zip(whole, last):
        assert r["key"] == w["key"]  # the whole run's key: a stopped run leaves no trace in it
        if vectorise:  # stacks of other sizes: the same run to float rounding (as the engine's members)
            assert r["curve"]["loss"] == pytest.approx(w["curve"]["loss"], rel=1e-5)
        else:  # the loop: bit for bit
            assert r["curve"]["loss"] == w["curve"]["loss"] and r["score"] == w["score"]
    assert [r["resumed_from"] for r in last] == [7, 20, 20]
    assert [charge(r).steps for r in first + second + last] == [7, 7, 7, 13, 13, 33, 20, 20]
    assert [r["score"] for r in first] == pytest.approx([float(np.mean(w["curve"]["loss"][:7])) for w in whole],
                                                       rel=1e-6)


def test_a_damaged_state_means_the_run_starts_over(tmp_path):
    base = Cell(spec=SPEC, lr=0.05, dataset="digits", steps=20, batch_size=16, checkpoints=str(tmp_path))
    whole = train([base])[0]
    train([base.with_(stop=5)])
    (state,) = list(tmp_path.rglob("vectorised-5.pt"))
    state.write_bytes(b"not a state")
    again = train([base])[0]
    assert again["resumed_from"] == 0 and again["curve"]["loss"] == whole["curve"]["loss"]


def test_stop_is_checked_and_keyed_only_when_set():
    base = Cell(spec=SPEC, lr=0.05, dataset="digits", steps=20, batch_size=16)
    assert "stop" not in base.identity() and "checkpoints" not in base.identity()
    assert base.with_(stop=20).key() == base.key() and base.with_(stop=20).stop is None
    assert base.with_(stop=5).key() != base.key() and base.with_(stop=5).run_key() == base.key()
    assert base.with_(checkpoints="/tmp/x").key() == base.key()
    with pytest.raises(ValueError, match="stop"):
        base.with_(stop=21)
    with pytest.raises(ValueError, match="stop"):
        base.with_(stop=0)
    with pytest.raises(TypeError, match="checkpoints"):
        base.with_(checkpoints=3)


# --------------------------------------------------------------------------- the search on a known landscape
T = 300


def _landscape(x_opt: float, x_div: float = math.inf, learn: bool = True, noise: float = 0.0, seed_shift=0.0):
    """``run(requests)`` on synthetic runs: the loss falls at a speed that peaks at ``ln rate = x_opt``
    (runs above ``x_div`` diverge at step 5); every run is the prefix of its whole run."""
    rng = np.random.default_rng(0)
    wiggle = rng.normal(0, noise, 4096)
    asked = []

    def run(requests):
        out = []
        for lr, seed, stop in requests:
            asked.append((lr, seed, stop))
            n = T if stop is None else stop
            x = math.log(lr) + seed_shift * (seed - 100)
            if x > x_div:
                losses = [2.3] * 5 + [math.inf]
                out.append(_record(losses[:min(n, 6)], diverged=n > 5))
                continue
            speed = math.exp(-(x - x_opt) ** 2) if learn else 0.0
            # faster rates gain early; the optimum of the whole run sits at x_opt
            t = np.arange(n)
            losses = 2.3 * np.exp(-speed * t / 60) + 0.05 + wiggle[hash((round(lr, 12), seed)) % 4000 + t % 96]
            out.append(_record(list(losses)))
        return out

    return run, asked


def _record(losses, diverged=False):
    n = len(losses)
    finite = [v for v in losses if math.isfinite(v)]
    return {"score": None if diverged else float(np.mean(finite)),
            "final_loss": None if diverged else float(np.mean(finite[-max(1, math.ceil(n / 10)):])),
            "diverged": diverged, "backward_passes": n,
            "curve": {"step": list(range(n)), "loss": [v if math.isfinite(v) else None for v in losses]}}


def test_the_search_lands_on_a_known_optimum_from_a_prior_off_by_a_factor_three():
    run, asked = _landscape(math.log(0.1))
    res = search(0.3, Fidelity(), [100, 101], T, 10, run)
    assert res["stop"] == "converged" and res["answer"] == "fit"
    assert abs(math.log(res["eta_star_train"] / 0.1)) < 0.1
    horizons = [a[2] for a in asked]
    assert set(horizons) == {33, 100, None}
    assert sum(h is None for h in horizons) <= Fidelity().max_final  # only contenders reach the end
    assert res["eta_star_train_ci"] is None and "one seed" in res["ci_reason"]


def test_the_search_moves_when_the_prior_is_far_off():
    run, _ = _landscape(math.log(0.1))
    res = search(0.005, Fidelity(), [100], T, 10, run)  # a prior 20x too low
    assert abs(math.log(res["eta_star_train"] / 0.1)) < 0.15


def test_next_to_divergence_the_step_is_halved_and_the_answer_stays_below_the_edge():
    edge = math.log(0.1) + 0.05  # divergence just above the optimum of the learning speed
    run, asked = _landscape(math.log(0.1), x_div=edge)
    res = search(0.1, Fidelity(), [100], T, 10, run, interval=[0.05, 0.2])
    ks = [r["k"] for r in res["rates"]]
    assert any(k != int(k) for k in ks)  # a half step towards the diverged neighbour
    assert math.log(res["eta_star_train"]) <= edge


def test_when_nothing_learns_it_stops_early_and_answers_the_prior_labelled():
    run, asked = _landscape(math.log(0.1), learn=False)
    res = search(0.07, Fidelity(), [100], T, 10, run)
    assert res["stop"] == "nothing-learns" and res["answer"] == "prior" and res["eta_star_train"] == 0.07
    assert "does-not-learn" in res["flags"] and "chance loss" in res["reason"]
    assert all(a[2] is not None for a in asked)  # stopped before any whole run


def test_with_confirm_seeds_the_contenders_get_seeds_and_a_ci():
    run, asked = _landscape(math.log(0.1), noise=0.01, seed_shift=0.05)
    res = search(0.1, Fidelity(confirm_seeds=3), [100, 101, 102], T, 10, run)
    seeded = [a for a in asked if a[1] != 100]
    assert len(seeded) == 6 and all(a[2] is None for a in seeded)  # 3 contenders x 2 more seeds, whole runs
    lo, hi = res["eta_star_train_ci"]
    assert lo <= res["eta_star_train"] <= hi


def test_the_search_is_a_function_of_its_records():
    run1, asked1 = _landscape(math.log(0.03), noise=0.02)
    run2, asked2 = _landscape(math.log(0.03), noise=0.02)
    a = search(0.05, Fidelity(), [100], T, 10, run1)
    b = search(0.05, Fidelity(), [100], T, 10, run2)
    assert asked1 == asked2 and a["eta_star_train"] == b["eta_star_train"] and a["stop"] in STOPS


def test_the_prior_interval_sets_the_step():
    narrow, _ = step_of(0.1, [0.09, 0.11], Fidelity())
    wide, _ = step_of(0.1, [0.001, 10.0], Fidelity())
    assert narrow == Fidelity().min_step and wide == Fidelity().max_step
    assert step_of(0.1, None, Fidelity())[1] == pytest.approx(0.7)


@pytest.mark.parametrize("kw,match", [({"points": 2}, "points"), ({"eta": 1}, "eta"), ({"survivors": 10}, "survivors"),
                                      ({"min_step": -1.0}, "min_step"), ({"min_step": 0.7}, "min_step"),
                                      ({"confirm_seeds": 0}, "confirm_seeds"), ({"max_final": True}, "max_final")])
def test_fidelity_refuses_bad_settings(kw, match):
    with pytest.raises(ValueError, match=match):
        Fidelity(**kw)


def test_search_refuses_too_few_seeds_for_its_confirmation():
    with pytest.raises(ValueError, match="confirm_seeds"):
        search(0.1, Fidelity(confirm_seeds=2), [100], T, 10, lambda q: [])
