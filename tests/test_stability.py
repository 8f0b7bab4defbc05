"""The largest stable rate by bisection (amutheory.train.stability): the bracket and the bisection on
hand-made tables, the rate sequence's determinism and resume, censoring, the delete-one-seed
replicates, and a real end to end run (tiny conv chain on synthetic data) whose edge lies between a
real run that did not diverge and one that did."""

import math

import numpy as np
import pytest

from amutheory.spec import ArchSpec
from amutheory.train.cell import Cell
from amutheory.train.engine import run_groups
from amutheory.train.stability import bisection_rates, edge_bracket, eta_max, next_cells
from amutheory.train.sweep import plan

SPEC = ArchSpec(family="conv", dim=1, depth=2, width=8, kernel=3, padding="circular", activation="relu",
                input_channels=3, spatial=8, outputs=10)
TEMPLATE = Cell(spec=SPEC, lr=1.0, dataset="synthetic", steps=10, batch_size=16)
GRID = np.geomspace(0.01, 100.0, 9).tolist()


def _key(lr, seed, depth=2, width=8):
    return TEMPLATE.with_(spec=SPEC.with_(depth=depth, width=width), lr=lr, seed=seed).key()


def _rec(diverged):
    return {"diverged": diverged}


class Oracle:
    """A hand-made 'training': a run at (depth, seed) diverges iff lr > edge[(depth, seed)]."""

    def __init__(self, edges):
        self.edges = edges
        self.trained = []

    def fill_grid(self, table, depths=(2,), seeds=(0,)):
        for L in depths:
            for s in seeds:
                for r in GRID:
                    table[_key(r, s, L)] = _rec(r > self.edges[(L, s)])

    def run(self, table, groups):
        for g in groups:
            for c in g:
                assert c.key() not in table, "a cell trained twice"
                self.trained.append(c.key())
                table[c.key()] = _rec(c.lr > self.edges[(c.depth, c.seed)])


# ----------------------------------------------------------------------------- the bracket
def test_bracket_is_the_largest_stable_rate_below_the_smallest_diverged_one():
    table = {_key(r, 0): _rec(d) for r, d in [(0.1, False), (0.2, False), (0.4, True), (0.8, False), (1.6, True)]}
    assert edge_bracket(table, TEMPLATE, 2, 8, 0, [0.1, 0.2, 0.4, 0.8, 1.6]) == (0.2, 0.4)
    # a rate without a record is left out; a repeated rate is fine
    assert edge_bracket(table, TEMPLATE, 2, 8, 0, [0.1, 0.4, 0.4, 3.2]) == (0.1, 0.4)
    # censored both ways, and nothing known
    assert edge_bracket(table, TEMPLATE, 2, 8, 0, [0.4, 1.6]) == (None, 0.4)
    assert edge_bracket(table, TEMPLATE, 2, 8, 0, [0.1, 0.2]) == (0.2, None)
    assert edge_bracket(table, TEMPLATE, 2, 8, 0, [5.0]) == (None, None)
    # another seed, depth or width is another run
    assert edge_bracket(table, TEMPLATE, 2, 8, 1, [0.1, 0.4]) == (None, None)
    assert edge_bracket(table, TEMPLATE, 3, 8, 0, [0.1, 0.4]) == (None, None)


def test_bisection_halves_the_ln_bracket_each_round_and_converges_on_the_edge():
    oracle = Oracle({(2, 0): 0.37})
    table = {}
    oracle.fill_grid(table)
    lo0, hi0 = edge_bracket(table, TEMPLATE, 2, 8, 0, GRID)
    assert lo0 < 0.37 < hi0
    for r in range(1, 8):
        oracle.run(table, next_cells(table, TEMPLATE, [2], [8], [0], GRID, 7))
        lo, hi = edge_bracket(table, TEMPLATE, 2, 8, 0, GRID + bisection_rates(table, TEMPLATE, 2, 8, 0, GRID, 7))
        assert lo < 0.37 < hi and math.log(hi / lo) == pytest.approx(math.log(hi0 / lo0) / 2 ** r)
    assert next_cells(table, TEMPLATE, [2], [8], [0], GRID, 7) == []
    e = eta_max(table, TEMPLATE, 2, 8, [0], GRID, 7)
    assert e["per_seed"][0]["rounds_done"] == 7 and e["flags"] == ["single-seed"] and e["replicates"] is None
    assert e["eta_max"] == pytest.approx(math.sqrt(lo * hi)) and abs(math.log(e["eta_max"] / 0.37)) < e["resolution"]
    assert e["resolution"] == pytest.approx(math.log(hi0 / lo0) / 2 ** 7)


def test_the_rate_sequence_is_a_pure_function_of_the_table():
    edges = {(2, 0): 0.37, (2, 1): 2.5}
    a, b = {}, {}
    for t in (a, b):
        oracle = Oracle(edges)
        oracle.fill_grid(t, seeds=(0, 1))
        for _ in range(5):
            oracle.run(t, next_cells(t, TEMPLATE, [2], [8], [0, 1], GRID, 5))
    assert a.keys() == b.keys()
    for s in (0, 1):
        rates = bisection_rates(a, TEMPLATE, 2, 8, s, GRID, 5)
        assert rates == bisection_rates(b, TEMPLATE, 2, 8, s, GRID, 5) and len(rates) == 5
        # round r's rate depends on rounds < r only: the first 3 rounds of a 5-round run are a 3-round run
        assert bisection_rates(a, TEMPLATE, 2, 8, s, GRID, 3) == rates[:3]
        # a table cut after two rounds gives their rates, then the next to run: the third rate of before
        cut = {k: v for k, v in a.items() if k not in {_key(r, s) for r in rates[2:]}}
        assert bisection_rates(cut, TEMPLATE, 2, 8, s, GRID, 5) == rates[:3]
        assert [c.lr for g in next_cells(cut, TEMPLATE, [2], [8], [s], GRID, 5) for c in g] == [rates[2]]


def test_resume_trains_no_cell_twice_and_adds_one_cell_per_depth_and_seed_per_round():
    oracle = Oracle({(2, 0): 0.37, (2, 1): 3.0, (3, 0): 0.05, (3, 1): 0.2})
    table = {}
    oracle.fill_grid(table, depths=(2, 3), seeds=(0, 1))
    size = len(table)
    oracle.run(table, next_cells(table, TEMPLATE, [2, 3], [8], [0, 1], GRID, 1))
    assert len(table) == size + 4
    assert next_cells(table, TEMPLATE, [2, 3], [8], [0, 1], GRID, 1) == []
    first = set(oracle.trained)
    for _ in range(3):  # more rounds than needed: the loop stops once every bisection is done
        oracle.run(table, next_cells(table, TEMPLATE, [2, 3], [8], [0, 1], GRID, 2))
    assert len(table) == size + 8 and len(oracle.trained) == 8 and first <= set(oracle.trained)
    for L in (2, 3):
        for s in (0, 1):
            assert len(bisection_rates(table, TEMPLATE, L, 8, s, GRID, 2)) == 2


# ----------------------------------------------------------------------------- censoring, replicates
def test_censored_seeds_count_at_the_range_end_and_are_flagged():
    oracle = Oracle({(2, 0): 1e-3, (2, 1): 1e3, (2, 2): 0.5})
    table = {}
    oracle.fill_grid(table, seeds=(0, 1, 2))
    assert bisection_rates(table, TEMPLATE, 2, 8, 0, GRID, 4) == []  # nothing to bisect
    assert bisection_rates(table, TEMPLATE, 2, 8, 1, GRID, 4) == []
    for _ in range(4):
        oracle.run(table, next_cells(table, TEMPLATE, [2], [8], [0, 1, 2], GRID, 4))
    assert len(oracle.trained) == 4  # only seed 2 bisects
    e = eta_max(table, TEMPLATE, 2, 8, [0, 1, 2], GRID, 4)
    below, above, inside = e["per_seed"]
    assert below["censored"] == "below-range" and below["lo"] is None and below["edge"] == GRID[0]
    assert above["censored"] == "above-range" and above["hi"] is None and above["edge"] == GRID[-1]
    assert inside["censored"] is None and inside["lo"] < 0.5 < inside["hi"] and inside["rounds_done"] == 4
    assert below["resolution"] is None and e["resolution"] == inside["resolution"]
    assert e["flags"] == ["above-range", "below-range"]


def test_unfinished_and_non_monotone_are_flagged():
    table = {}
    Oracle({(2, 0): 0.37}).fill_grid(table)
    table[_key(GRID[-1], 0)] = _rec(False)  # a stable rate above a diverged one
    e = eta_max(table, TEMPLATE, 2, 8, [0], GRID, 3)
    assert "unfinished" in e["flags"] and "non-monotone" in e["flags"] and e["per_seed"][0]["rounds_done"] == 0
    assert e["per_seed"][0]["lo"] < 0.37 < e["per_seed"][0]["hi"]


def test_the_estimate_is_the_geometric_mean_and_the_replicates_leave_one_seed_out():
    edges = {(2, s): v for s, v in enumerate((0.2, 0.37, 0.9, 4.0))}
    oracle = Oracle(edges)
    table = {}
    oracle.fill_grid(table, seeds=tuple(range(4)))
    for _ in range(3):
        oracle.run(table, next_cells(table, TEMPLATE, [2], [8], [0, 1, 2, 3], GRID, 3))
    e = eta_max(table, TEMPLATE, 2, 8, [0, 1, 2, 3], GRID, 3)
    ln = np.array([p["ln_edge"] for p in e["per_seed"]])
    assert e["ln_eta_max"] == pytest.approx(ln.tolist())
    assert np.exp(ln) == pytest.approx([p["edge"] for p in e["per_seed"]])
    assert [p["edge"] for p in e["per_seed"]] == pytest.approx([math.sqrt(p["lo"] * p["hi"]) for p in e["per_seed"]])
    assert e["eta_max"] == pytest.approx(math.exp(ln.mean()))
    want = [math.exp(np.delete(ln, j).mean()) for j in range(4)]
    assert len(e["replicates"]) == 4 and e["replicates"] == pytest.approx(want, rel=1e-12)
    # the jackknife's pseudo-values average back to the estimate's ln
    pseudo = 4 * ln.mean() - 3 * np.log(e["replicates"])
    assert pseudo.mean() == pytest.approx(ln.mean()) and pseudo == pytest.approx(ln)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("call, exc, name", [
    (lambda: edge_bracket([], TEMPLATE, 2, 8, 0, GRID), TypeError, "table"),
    (lambda: edge_bracket({}, "cell", 2, 8, 0, GRID), TypeError, "template"),
    (lambda: edge_bracket({}, TEMPLATE, 0, 8, 0, GRID), ValueError, "depth"),
    (lambda: edge_bracket({}, TEMPLATE, 2, 8.0, 0, GRID), TypeError, "width"),
    (lambda: edge_bracket({}, TEMPLATE, 2, 8, -1, GRID), ValueError, "seed"),
    (lambda: edge_bracket({}, TEMPLATE, 2, 8, 0, [0.1, -1.0]), ValueError, "rates"),
    (lambda: edge_bracket({}, TEMPLATE, 2, 8, 0, "0.1"), TypeError, "rates"),
    (lambda: bisection_rates({}, TEMPLATE, 2, 8, 0, [], 2), ValueError, "grid_rates"),
    (lambda: bisection_rates({}, TEMPLATE, 2, 8, 0, [0.1, 0.1], 2), ValueError, "grid_rates"),
    (lambda: bisection_rates({}, TEMPLATE, 2, 8, 0, GRID, -1), ValueError, "rounds"),
    (lambda: bisection_rates({}, TEMPLATE, 2, 8, 0, GRID, True), TypeError, "rounds"),
    (lambda: bisection_rates({}, TEMPLATE, 2, 8, 0, GRID, 2), ValueError, "grid cell"),
    (lambda: next_cells({}, TEMPLATE, [2, 2], [8], [0], GRID, 2), ValueError, "depths"),
    (lambda: next_cells({}, TEMPLATE, [2], [], [0], GRID, 2), ValueError, "widths"),
    (lambda: eta_max({}, TEMPLATE, 2, 8, [0, "1"], GRID, 2), TypeError, "seeds"),
    (lambda: eta_max({_key(r, 0): {"diverged": None} for r in GRID}, TEMPLATE, 2, 8, [0], GRID, 2), ValueError,
     "diverged"),
])
def test_bad_arguments_are_refused_by_name(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ----------------------------------------------------------------------------- real training
def _train(table, groups):
    ran = 0
    for _, records in run_groups(groups, workers=1, threads=1):
        for r in records:
            assert r["key"] not in table, "a cell trained twice"
            table[r["key"]] = r
            ran += 1
    return ran


def test_a_real_bisection_finds_an_edge_between_a_stable_and_a_diverged_run():
    grid = np.geomspace(0.1, 100.0, 4).tolist()
    table = {}
    _train(table, plan(TEMPLATE, [2], [8], grid, [0, 1]))
    for s in (0, 1):  # the range brackets the edge on these seeds
        lo, hi = edge_bracket(table, TEMPLATE, 2, 8, s, grid)
        assert lo is not None and hi is not None
    size = len(table)
    assert _train(table, next_cells(table, TEMPLATE, [2], [8], [0, 1], grid, 1)) == 2
    assert len(table) == size + 2
    for _ in range(3):  # resume to 3 rounds: only the missing rounds train
        _train(table, next_cells(table, TEMPLATE, [2], [8], [0, 1], grid, 3))
    assert len(table) == size + 6 and next_cells(table, TEMPLATE, [2], [8], [0, 1], grid, 3) == []
    e = eta_max(table, TEMPLATE, 2, 8, [0, 1], grid, 3)
    assert e["flags"] == [] and e["resolution"] == pytest.approx(math.log(grid[1] / grid[0]) / 8)
    for p in e["per_seed"]:
        stable, diverged = table[_key(p["lo"], p["seed"])], table[_key(p["hi"], p["seed"])]
        assert stable["diverged"] is False and stable["score"] is not None
        assert diverged["diverged"] is True and diverged["diverged_step"] is not None
        assert p["lo"] < p["edge"] < p["hi"] and p["rounds_done"] == 3
        # every rate tried below the edge is stable, every one above it (up to the first divergence) not
        for r in grid + p["rates"]:
            if r <= p["lo"]:
                assert table[_key(r, p["seed"])]["diverged"] is False
    lo_e, hi_e = min(p["edge"] for p in e["per_seed"]), max(p["edge"] for p in e["per_seed"])
    assert lo_e <= e["eta_max"] <= hi_e


# ----------------------------------------------------------------------------- in the protocol run
def test_run_protocol_bisects_resumes_and_hands_eta_max_to_the_summary(tmp_path):
    import dataclasses
    import json

    from amutheory.protocol import Claim, Protocol, Study, TransferPlan, run_protocol

    @dataclasses.dataclass(frozen=True)
    class Bisecting(Study):  # until Study has the field itself
        eta_max_rounds: int = 0

    chain = ArchSpec(family="conv", dim=1, depth=2, width=8, kernel=3, padding="circular", activation="relu")
    study = Bisecting("chain", "1D chain", chain, depths=(2, 3), seeds=2, steps=10, points=3, dataset="synthetic",
                      synthetic_shape=(3, 8), lr_range=(0.1, 100.0), refine=0, eta_max_rounds=2)
    proto = Protocol("bis", "bisection", studies=(study,),
                     claims=(Claim("chain", "eta* ~ L^(-3/2)", "exponent", ("chain",)),),
                     transfer=TransferPlan("chain", calibration=(2,), targets=(3,)), horizons=(),
                     conditional_horizons=(), interval="jackknife")
    out = tmp_path / "bis"
    s = run_protocol(proto, out, workers=1, say=lambda m: None, figures=False)
    grid_cells = 2 * 2 * 3
    raw = s["eta_max_raw"]["chain"]
    assert set(raw) == {"2", "3"}
    bisected = sum(p["rounds_done"] for d in raw.values() for p in d["per_seed"])
    assert s["this_run"]["cells_run"] == grid_cells + bisected
    for d in raw.values():
        assert d["rounds"] == 2 and d["seeds"] == [0, 1] and len(d["per_seed"]) == 2
        for p in d["per_seed"]:
            assert p["rounds_done"] == (0 if p["censored"] else 2)
    json.loads((out / "summary.json").read_text())["eta_max_raw"]  # written, strict JSON
    again = run_protocol(proto, out, workers=1, say=lambda m: None, figures=False)
    assert again["this_run"]["cells_run"] == 0 and again["eta_max_raw"] == s["eta_max_raw"]
    # the last bisection round's records lost (a kill): only they train again, at the same rates
    table = out / "chain" / "cells.jsonl"
    lines = table.read_text().splitlines(keepends=True)
    last = {p["rates"][-1] for d in raw.values() for p in d["per_seed"] if p["rates"]}
    keep = [ln for ln in lines if json.loads(ln)["cell"]["lr"] not in last]
    table.write_text("".join(keep))
    resumed = run_protocol(proto, out, workers=1, say=lambda m: None, figures=False)
    assert resumed["this_run"]["cells_run"] == len(lines) - len(keep) > 0
    assert resumed["eta_max_raw"] == s["eta_max_raw"]
