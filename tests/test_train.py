"""Tests of amutheory.train (the library): cells and their keys, the loop and vectorised trainers,
the stacked optimizers, the divergence rule, the learning-rate search, the minibatch order, the
training layers, run_sweep's JSON contract and resume rules, and the results table.

Every run here is tiny (width 8, depth 2-3, 20 steps of batch 16 on synthetic data) and seeded,
so the whole file takes seconds on one CPU thread."""

import json
import math
import shutil

import numpy as np
import pytest
import torch
from torch import nn

from amutheory.spec import ArchSpec
from amutheory.train import Cell, LrSearch, fit_power, run_sweep, spec_for_data, train_cell
from amutheory.train import run as R
from amutheory.train import store as S
from amutheory.train.optim import StackedOptimizer, torch_optimizer

SPEC = ArchSpec(dim=1, depth=2, width=8, kernel=3, spatial=8, input_channels=3, outputs=10)
TINY = dict(dataset="synthetic", steps=20, batch_size=16)
CONTRACT = ("lrs", "loss_mean", "loss_ci", "diverged", "eta_star_train", "eta_star_train_ci", "eta_star_grid")


@pytest.fixture(autouse=True)
def _one_thread():
    # nothing here is timed; one thread is the engines' default and the fastest on 2 cores
    torch.set_num_threads(1)
    yield


def _cell(**kw) -> Cell:
    d = dict(spec=SPEC, lr=0.1, **TINY)
    d.update(kw)
    return Cell(**d)


def _no_timing(rec: dict) -> dict:
    rec = dict(rec)
    assert isinstance(rec.pop("timing")["wall_s"], float)
    return rec


# ----------------------------------------------------------------------------- 1. Cell


@pytest.mark.parametrize("lr", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_cell_rejects_bad_lr(lr):
    with pytest.raises(ValueError, match=r"^lr "):
        _cell(lr=lr)


@pytest.mark.parametrize("field, value, error, name", [
    ("steps", 0, ValueError, "steps"),
    ("steps", -3, ValueError, "steps"),
    ("batch_size", 0, ValueError, "batch_size"),
    ("optimizer", "rmsprop", ValueError, "optimizer"),
    ("norm", "group", ValueError, "norm"),
    ("dtype", "float16", ValueError, "dtype"),
    ("dropout", 1.0, ValueError, "dropout"),
    ("momentum", 1.0, ValueError, "momentum"),
    ("seed", -1, ValueError, "seed"),
    ("steps", 2.5, TypeError, "steps"),
    ("lr", "0.1", TypeError, "lr"),
    ("device", "tpu", ValueError, "device"),
])
def test_cell_rejects_bad_fields(field, value, error, name):
    with pytest.raises(error, match=name):
        _cell(**{field: value})


def test_cell_rejects_non_archspec_and_adam_momentum():
    with pytest.raises(TypeError, match="spec"):
        Cell(spec=SPEC.to_dict(), lr=0.1)
    for opt in ("adam", "adamw"):
        with pytest.raises(ValueError, match="momentum"):
            _cell(optimizer=opt, momentum=0.9)
    assert _cell(optimizer="sgd", momentum=0.9).momentum == 0.9


def test_cell_key_is_stable_and_covers_the_keyed_fields():
    a, b = _cell(), _cell()
    assert a.key() == b.key() and len(a.key()) == 16 and int(a.key(), 16) >= 0
    assert a.key() == _cell(lr=1e-1).key() == _cell(lr=0.1).key()
    changed = [a.with_(lr=0.2), a.with_(seed=1), a.with_(steps=21), a.with_(optimizer="adam"),
               a.with_(spec=SPEC.with_(depth=3)), a.with_(spec=SPEC.with_(width=9)), a.with_(batch_size=17),
               a.with_(momentum=0.5), a.with_(weight_decay=1e-3), a.with_(norm="layer"), a.with_(dropout=0.1),
               a.with_(dtype="float64"), a.with_(dataset="digits")]
    keys = {c.key() for c in changed}
    assert a.key() not in keys and len(keys) == len(changed)
    # where a cell runs is not what it computes
    assert a.with_(data_dir="/somewhere/else").key() == a.key()
    assert a.with_(device="cuda:1").key() == a.key()
    # group_key ignores lr only
    assert a.with_(lr=0.3).group_key() == a.group_key() != a.with_(seed=1).group_key()
    # the record's cell dict rebuilds the same cell
    assert Cell.from_dict(a.to_dict()).key() == a.key()
    assert Cell.from_dict(a.to_dict(), data_dir="/x") == a.with_(data_dir="/x")


def test_cell_numpy_integer_seed_has_the_same_key():
    assert _cell(seed=np.int64(1), steps=np.int64(20)).key() == _cell(seed=1, steps=20).key()


# ----------------------------------------------------------------------------- 2. determinism


def test_train_cell_is_deterministic():
    c = _cell(lr=0.05, seed=3)
    a, b = train_cell(c), train_cell(c)
    assert _no_timing(a) == _no_timing(b)
    assert a["key"] == c.key() and a["mode"] == "loop" and not a["diverged"]
    assert a["backward_passes"] == 20 and a["forward_passes"] == 20 + a["eval_passes"] and a["eval_passes"] >= 1
    assert a["curve"]["step"] == list(range(20)) and len(a["curve"]["loss"]) == 20
    assert a["score"] == pytest.approx(np.mean(a["curve"]["loss"]), rel=1e-12)  # all 20 steps are kept
    assert a["final_loss"] == pytest.approx(np.mean(a["curve"]["loss"][-2:]), rel=1e-12)  # last tenth: 2 steps
    assert 0.0 <= a["test_accuracy"] <= 1.0 and a["test_loss"] > 0
    # another seed is another run
    assert train_cell(c.with_(seed=4))["score"] != a["score"]


def test_train_group_is_deterministic():
    cells = [_cell(lr=lr, seed=1) for lr in (0.01, 0.1, 1.0, 1e4)]
    a, b = R.train_group(cells), R.train_group(cells)
    assert [_no_timing(r) for r in a] == [_no_timing(r) for r in b]
    assert [r["key"] for r in a] == [c.key() for c in cells]
    assert {r["mode"] for r in a} == {"vectorised"}


# ----------------------------------------------------------------------------- 3. vectorised == loop

_AGREE = [  # (optimizer, extra fields, rates, norm); each sgd case carries the divergent rate 1e4
    ("sgd", {}, (1e-3, 1e-2, 1e-1, 1e4), "none"),
    ("sgd", dict(momentum=0.9, weight_decay=1e-2), (1e-3, 1e-2, 1e-1, 1e4), "none"),
    ("adam", dict(weight_decay=1e-2), (1e-4, 1e-3, 1e-2), "none"),
    ("adamw", dict(weight_decay=1e-2), (1e-4, 1e-3, 1e-2), "none"),
    ("sgd", {}, (1e-3, 1e-2, 1e-1, 1e4), "batch"),
    ("sgd", {}, (1e-3, 1e-2, 1e-1, 1e4), "layer"),
    ("adamw", dict(weight_decay=1e-2), (1e-4, 1e-3, 1e-2), "batch"),
]


def _rel_close(a, b, rel):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b))


@pytest.mark.parametrize("optimizer, extra, lrs, norm", _AGREE)
def test_vectorised_matches_loop_in_float64(optimizer, extra, lrs, norm):
    cells = [_cell(lr=lr, seed=2, optimizer=optimizer, norm=norm, dtype="float64", **extra) for lr in lrs]
    vec = R.train_group(cells)
    loop = [train_cell(c) for c in cells]
    # float64: the two engines differ only in the order of rounding (batched vs single kernels, the
    # stacked vs torch.optim update formulas); over 20 steps that is ~1e-14 relative (measured
    # <1e-15), while a wrong update, norm statistic or minibatch would show at 1e-3 or more
    rel = 1e-9
    for v, l in zip(vec, loop):
        assert v["mode"] == "vectorised" and l["mode"] == "loop" and v["key"] == l["key"]
        for k in ("score", "final_loss", "test_loss", "test_accuracy"):
            assert _rel_close(v[k], l[k], rel), (k, v[k], l[k])
        assert v["curve"]["step"] == l["curve"]["step"]
        assert all(_rel_close(x, y, rel) for x, y in zip(v["curve"]["loss"], l["curve"]["loss"]))
        assert len(v["curve"]["loss"]) == len(l["curve"]["loss"])
        for k in ("diverged", "diverged_step", "diverged_reason", "forward_passes", "backward_passes",
                  "eval_passes"):
            assert v[k] == l[k], k
    stable = [r for r, c in zip(loop, cells) if c.lr < 1e3]
    assert stable and not any(r["diverged"] for r in stable)
    assert all(r["score"] is not None and r["test_loss"] is not None for r in stable)
    if optimizer == "sgd":
        v, l = vec[-1], loop[-1]
        assert cells[-1].lr == 1e4
        assert v["diverged"] and l["diverged"] and v["diverged_step"] == l["diverged_step"] >= 1
        assert v["score"] is None and l["score"] is None and v["final_loss"] is None
        assert v["test_loss"] is None and v["eval_passes"] == 0
        # a diverged member is dropped alone: its neighbours' records are those of a group without it
        # (a stack of 3 instead of 4 may pick other kernels: rounding-level differences, same rel)
        for with_it, without in zip(vec[:-1], R.train_group(cells[:-1])):
            for k in ("score", "final_loss", "test_loss", "test_accuracy"):
                assert _rel_close(with_it[k], without[k], rel), k
            assert all(_rel_close(x, y, rel) for x, y in zip(with_it["curve"]["loss"], without["curve"]["loss"]))


# ----------------------------------------------------------------------------- 4. StackedOptimizer


@pytest.mark.parametrize("optimizer, momentum, weight_decay", [
    ("sgd", 0.0, 0.0), ("sgd", 0.9, 0.0), ("sgd", 0.9, 0.05), ("sgd", 0.0, 0.05),
    ("adam", 0.0, 0.0), ("adam", 0.0, 0.05), ("adamw", 0.0, 0.0), ("adamw", 0.0, 0.05)])
def test_stacked_optimizer_matches_torch_optim(optimizer, momentum, weight_decay):
    g = torch.Generator().manual_seed(11)
    lrs = [1e-3, 3e-2, 0.5]
    m = len(lrs)
    shapes = {"w": (3, 4), "v": (5,)}
    p0 = {k: torch.randn(m, *s, generator=g, dtype=torch.float64) for k, s in shapes.items()}
    drive = [{k: torch.randn(m, *s, generator=g, dtype=torch.float64) for k, s in shapes.items()} for _ in range(5)]

    def grad(p, t):  # a gradient that depends on the parameters, so the states matter
        return {k: torch.cos(p[k]) * drive[t][k] + 0.3 * p[k] for k in p}

    cell = Cell(spec=SPEC, lr=lrs[0], optimizer=optimizer, momentum=momentum, weight_decay=weight_decay)
    stacked = StackedOptimizer(cell, torch.tensor(lrs, dtype=torch.float64))
    ps = {k: v.clone() for k, v in p0.items()}
    refs = []
    for j, lr in enumerate(lrs):
        params = {k: nn.Parameter(v[j].clone()) for k, v in p0.items()}
        refs.append((params, torch_optimizer(cell.with_(lr=lr), list(params.values()))))
    for t in range(5):
        ps = stacked.step(ps, grad(ps, t))
        for j, (params, opt) in enumerate(refs):
            for k, v in params.items():  # grad() of member j alone
                v.grad = torch.cos(v.detach()) * drive[t][k][j] + 0.3 * v.detach()
            opt.step()
        # float64; the two sides round in a different order (e.g. addcdiv vs (lr/bc1) m / denom):
        # ~1e-16 per op, ~1e-15 after 5 steps. 1e-11 of the displacement still sees Adam's eps (1e-8)
        for j, (params, _) in enumerate(refs):
            for k, v in params.items():
                moved = v.detach() - p0[k][j]
                assert (ps[k][j] - p0[k][j] - moved).abs().max() <= 1e-11 * moved.abs().max(), (t, j, k)
    assert stacked.t == 5


def test_stacked_optimizer_keep_drops_members():
    cell = Cell(spec=SPEC, lr=0.1, optimizer="adam")
    g = torch.Generator().manual_seed(5)
    p = {"w": torch.randn(3, 4, generator=g, dtype=torch.float64)}
    grads = [{"w": torch.randn(3, 4, generator=g, dtype=torch.float64)} for _ in range(4)]
    full = StackedOptimizer(cell, torch.tensor([0.01, 0.1, 1.0], dtype=torch.float64))
    part = StackedOptimizer(cell, torch.tensor([0.01, 1.0], dtype=torch.float64))
    pf, pp = dict(p), {"w": p["w"][[0, 2]]}
    for t, gr in enumerate(grads):
        pf = full.step(pf, gr if t < 2 else {"w": gr["w"][[0, 2]]})
        pp = part.step(pp, {"w": gr["w"][[0, 2]]})
        if t == 1:
            full.keep(torch.tensor([0, 2]))
            pf = {"w": pf["w"][[0, 2]]}
    # the same elementwise formulas on the same numbers: identical
    assert torch.equal(pf["w"], pp["w"]) and torch.equal(full.lrs, part.lrs)


# ----------------------------------------------------------------------------- 5. divergence


def test_divergence_rule():
    assert R.divergence(math.nan, 2.0) == "non-finite loss"
    assert R.divergence(math.inf, 2.0) == "non-finite loss"
    assert R.divergence(-math.inf, 2.0) == "non-finite loss"
    why = R.divergence(20.5, 2.0)
    assert why is not None and "20.5" in why and "10" in why and "2" in why
    assert R.divergence(20.0, 2.0) is None  # exactly 10x is not above it
    assert R.divergence(19.9, 2.0) is None and R.divergence(0.1, 2.0) is None


def test_diverged_record():
    rec = train_cell(_cell(lr=1e4))
    assert rec["diverged"] is True and rec["score"] is None and rec["final_loss"] is None
    assert rec["diverged_reason"] and rec["diverged_step"] == rec["curve"]["step"][-1]
    assert rec["backward_passes"] == rec["diverged_step"] + 1 < 20
    assert rec["test_loss"] is None and rec["test_accuracy"] is None and rec["eval_passes"] == 0
    json.dumps(rec, allow_nan=False)  # JSON-ready: nothing non-finite


# ----------------------------------------------------------------------------- 6. the search

GRID = np.geomspace(1e-3, 1.0, 10)


def _parabola_table(vertex: float, offsets=(0.1, 0.5, 0.9), lrs=GRID) -> np.ndarray:
    """Scores ``(ln lr - ln vertex)^2 + offset_s``: every seed mean (and bootstrap mean) is an exact
    parabola in ln lr with its vertex at ``vertex``."""
    x = np.log(lrs)
    return np.stack([(x - math.log(vertex)) ** 2 + o for o in offsets], 1)


def test_search_parabola_vertex_between_grid_points():
    vertex = 0.0377  # between the grid points 0.0215 and 0.0464
    s = LrSearch(GRID, [0, 1, 2], _parabola_table(vertex), depth=4, width=8)
    # three points of an exact parabola: polyfit recovers its vertex to float rounding (~1e-15)
    assert s.eta_star_train == pytest.approx(vertex, rel=1e-9)
    assert s.eta_star_grid == GRID[np.argmin(np.abs(np.log(GRID / vertex)))] == pytest.approx(0.046415888, rel=1e-8)
    assert s.flags == [] and list(s.diverged) == [0.0] * 10
    lo, hi = s.eta_star_train_ci  # every resample is the same parabola shifted: the CI collapses
    assert lo == pytest.approx(vertex, rel=1e-9) and hi == pytest.approx(vertex, rel=1e-9)
    assert np.allclose(s.loss_mean, (np.log(GRID / vertex)) ** 2 + 0.5, rtol=1e-14, atol=0)
    # the order of the rates does not matter
    perm = [3, 9, 0, 5, 1, 8, 2, 7, 4, 6]
    t = LrSearch(GRID[perm], [0, 1, 2], _parabola_table(vertex)[perm])
    assert t.eta_star_train == s.eta_star_train and t.to_dict()["lrs"] == s.to_dict()["lrs"]


def test_search_flags():
    edge = LrSearch(GRID, [0, 1], _parabola_table(1e-4, (0.0, 1.0)))
    assert edge.flags == ["edge"] and edge.eta_star_train == pytest.approx(GRID[0], rel=1e-12)
    assert edge.eta_star_grid == GRID[0]
    top = LrSearch(GRID, [0, 1], _parabola_table(10.0, (0.0, 1.0)))
    assert top.flags == ["edge"] and top.eta_star_grid == GRID[-1]

    table = _parabola_table(0.0377, (0.0, 1.0))
    i = int(np.argmin(table.mean(1)))
    table[i + 1, 1] = math.inf  # one seed of the upper neighbour diverged
    nxt = LrSearch(GRID, [0, 1], table)
    assert nxt.flags == ["next-to-divergence"] and nxt.eta_star_train == pytest.approx(GRID[i], rel=1e-12)
    assert nxt.loss_mean[i + 1] == math.inf and nxt.diverged[i + 1] == 0.5
    assert nxt.loss_ci[i + 1] is None and nxt.loss_ci[i] is not None
    d = nxt.to_dict()
    assert d["loss_mean"][i + 1] is None and d["loss_ci"][i + 1] is None and d["diverged"][i + 1] == 0.5
    json.dumps(d, allow_nan=False)

    dead = LrSearch(GRID, [0, 1, 2], np.full((10, 3), math.inf))
    assert math.isnan(dead.eta_star_train) and math.isnan(dead.eta_star_grid)
    assert dead.flags == ["all-diverged"] and list(dead.diverged) == [1.0] * 10
    assert dead.eta_star_train_ci is None
    d = dead.to_dict()
    assert d["eta_star_train"] is None and d["eta_star_grid"] is None and d["loss_mean"] == [None] * 10
    json.dumps(d, allow_nan=False)


def test_search_diverged_fraction_and_loss_ci():
    table = _parabola_table(0.0377, (0.0, 1.0, 2.0, 3.0))
    table[-1, :3] = math.inf
    table[-2, 0] = math.inf
    s = LrSearch(GRID, [0, 1, 2, 3], table)
    assert list(s.diverged[-2:]) == [0.25, 0.75] and s.diverged[:-2].sum() == 0
    assert np.isinf(s.loss_mean[-2:]).all() and np.isfinite(s.loss_mean[:-2]).all()
    # the offsets 0..3 have sample std sqrt(5/3); the CI is mean +- 1.96 std / sqrt(4)
    half = 1.96 * math.sqrt(5 / 3) / 2
    lo, hi = s.loss_ci[0]
    assert lo == pytest.approx(s.loss_mean[0] - half, rel=1e-12)
    assert hi == pytest.approx(s.loss_mean[0] + half, rel=1e-12)


def test_fit_power_recovers_a_known_exponent():
    depths = [2, 4, 8, 16]
    searches = [LrSearch(GRID, [0, 1, 2], _parabola_table(0.5 * L ** -1.5), depth=L) for L in depths]
    assert all(not s.flags for s in searches)  # every vertex strictly inside the grid
    fit = fit_power(depths, searches)
    # exact vertices, exact power law: only float rounding of the logs (~1e-15)
    assert fit["exponent"] == pytest.approx(-1.5, rel=1e-9)
    assert fit["prefactor"] == pytest.approx(0.5, rel=1e-9)
    assert fit["points"] == 4 and fit["flagged"] == []
    lo, hi = fit["exponent_ci"]
    assert lo == pytest.approx(-1.5, rel=1e-9) and hi == pytest.approx(-1.5, rel=1e-9)
    # an all-diverged depth is left out; one point is not a fit
    dead = LrSearch(GRID, [0, 1, 2], np.full((10, 3), math.inf), depth=32)
    assert fit_power(depths + [32], searches + [dead])["points"] == 4
    assert fit_power([2, 32], [searches[0], dead]) is None


# ----------------------------------------------------------------------------- 7. minibatch order


def test_batch_indices_epochs_and_seeds():
    n = 100
    cell = _cell(batch_size=16, steps=20, seed=3)
    idx = R.batch_indices(n, cell)
    assert idx.shape == (20, 16) and idx.dtype == torch.long
    per_epoch = n // 16  # 6 full batches, 4 samples left out each epoch
    for e in range(0, 20, per_epoch):
        block = idx[e:e + per_epoch].flatten()
        assert len(set(block.tolist())) == block.numel()  # distinct within an epoch
        assert int(block.min()) >= 0 and int(block.max()) < n
    assert len(set(idx[:6].flatten().tolist()) | set(idx[6:12].flatten().tolist())) > 96  # epochs reshuffle
    assert torch.equal(idx, R.batch_indices(n, cell))
    assert torch.equal(idx, R.batch_indices(n, cell.with_(lr=7.0)))  # the rate does not change the data
    assert not torch.equal(idx, R.batch_indices(n, cell.with_(seed=4)))


# ----------------------------------------------------------------------------- 8. norm and dropout


def test_norm_layers_and_dropout_fallback():
    from amutheory.measure.models import build_model

    bn = build_model(SPEC, seed=0, norm="batch")
    assert sum(isinstance(m, nn.BatchNorm1d) for m in bn.modules()) == SPEC.depth
    ln = build_model(SPEC, seed=0, norm="layer")
    assert sum(isinstance(m, nn.GroupNorm) for m in ln.modules()) == SPEC.depth
    plain = build_model(SPEC, seed=0)
    assert not any(isinstance(m, (nn.BatchNorm1d, nn.GroupNorm, nn.Dropout)) for m in plain.modules())
    assert any(isinstance(m, nn.Dropout) for m in build_model(SPEC, seed=0, dropout=0.2).modules())

    cells = [_cell(lr=lr, dropout=0.2, seed=1) for lr in (0.01, 0.1)]
    recs = R.train_group(cells)
    assert [r["mode"] for r in recs] == ["loop", "loop"]
    assert [_no_timing(r) for r in recs] == [_no_timing(train_cell(c)) for c in cells]
    # dropout draws masks: the run differs from the same cell without it
    assert recs[1]["score"] != train_cell(cells[1].with_(dropout=0.0))["score"]


def test_transformer_refuses_batch_norm():
    from amutheory.measure.models import build_model

    tr = ArchSpec(family="transformer", depth=2, width=8, spatial=8, input_channels=3, heads=2)
    with pytest.raises(ValueError, match="norm"):
        build_model(tr, seed=0, norm="batch")
    with pytest.raises(ValueError, match="norm"):
        Cell(spec=tr, lr=0.1, norm="batch")
    Cell(spec=tr, lr=0.1)  # norm none is fine


# ----------------------------------------------------------------------------- 9-11. run_sweep

LRS = [0.01, 0.1, 1.0, 1e4]


def _template(**kw) -> Cell:
    return Cell(spec=spec_for_data(SPEC, "synthetic"), lr=1.0, **{**TINY, **kw})


def _rows(out) -> dict:
    return {k: _no_timing(v) for k, v in S.read_table(out).items()}


@pytest.fixture(scope="module")
def base_sweep(tmp_path_factory):
    """Depths 2 and 3, width 8, four rates (1e4 diverges), seeds 0 and 1: ``(out, summary)``."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("sweep") / "base"
    summary = run_sweep(_template(), [2, 3], [8], LRS, [0, 1], out, figures=False)
    return out, summary


def test_run_sweep_contract(base_sweep):
    out, summary = base_sweep
    assert summary["this_run"]["cells_run"] == 2 * 4 * 2 and summary["cells"] == 16
    assert summary["depths"] == [2, 3] and summary["widths"] == [8] and summary["seeds"] == [0, 1]
    assert len(summary["runs"]) == 2
    for run, L in zip(summary["runs"], (2, 3)):
        assert set(CONTRACT) | {"depth", "width"} <= set(run)
        assert run["depth"] == L and run["width"] == 8 and run["lrs"] == LRS
        assert run["diverged"][-1] == 1.0 and run["loss_mean"][-1] is None and run["loss_ci"][-1] is None
        assert all(m is not None for m in run["loss_mean"][:-1])
        assert run["eta_star_grid"] in LRS[:-1]
        ci = run["eta_star_train_ci"]
        if ci is not None:
            assert ci[0] <= run["eta_star_train"] <= ci[1]
    assert "lrs" not in summary  # two searches: only under runs
    assert len(summary["depth_fit"]) == 1 and summary["depth_fit"][0]["width"] == 8
    assert "width_fit" not in summary
    json.dumps(summary, allow_nan=False)
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["runs"] == summary["runs"] and (out / "report.md").exists()
    assert not list(out.glob("*.png"))  # figures=False
    assert len(S.read_table(out)) == 16 and json.loads((out / S.META).read_text())["optimizer"] == "sgd"


def test_run_sweep_single_search_has_top_level_keys(base_sweep, tmp_path):
    out = tmp_path / "one"
    shutil.copytree(base_sweep[0], out)
    summary = run_sweep(_template(), [2], [8], LRS, [0, 1], out, figures=False)
    assert summary["this_run"]["cells_run"] == 0  # every cell is in the table already
    run = summary["runs"][0]
    for k in CONTRACT:
        assert summary[k] == run[k], k
    assert summary["runs"][0] == base_sweep[1]["runs"][0]
    assert "depth_fit" not in summary


def test_fewer_seeds_are_a_prefix_of_more(tmp_path):
    two = run_sweep(_template(), [2], [8], LRS, [0, 1], tmp_path / "two", figures=False)
    four = run_sweep(_template(), [2], [8], LRS, [0, 1, 2, 3], tmp_path / "four", figures=False)
    assert two["this_run"]["cells_run"] == 8 and four["this_run"]["cells_run"] == 16
    a, b = _rows(tmp_path / "two"), _rows(tmp_path / "four")
    assert len(a) == 8 and set(a) < set(b)
    assert all(a[k] == b[k] for k in a)


def test_sweep_refuses_to_mix_and_resumes(base_sweep, tmp_path):
    out = tmp_path / "mix"
    shutil.copytree(base_sweep[0], out)
    before = (out / S.TABLE).read_bytes()
    for changed, field in ((dict(optimizer="adam"), "optimizer"), (dict(steps=21), "steps"),
                           (dict(norm="layer"), "norm"), (dict(batch_size=32), "batch_size")):
        with pytest.raises(ValueError, match=field) as info:
            run_sweep(_template(**changed), [2, 3], [8], LRS, [0, 1], out, figures=False)
        assert "\n" not in str(info.value) and "another sweep" in str(info.value)
    assert (out / S.TABLE).read_bytes() == before
    more = run_sweep(_template(), [2, 3], [8], LRS, [0, 1, 2], out, figures=False)
    assert more["this_run"]["cells_run"] == 2 * 4  # only seed 2, at both depths and every rate
    rows = _rows(out)
    assert len(rows) == 24
    assert (out / S.TABLE).read_bytes().startswith(before)  # appended, nothing rewritten
    again = run_sweep(_template(), [2, 3], [8], LRS, [0, 1, 2], out, figures=False)
    assert again["this_run"]["cells_run"] == 0 and again["runs"] == more["runs"]
    assert len((out / S.TABLE).read_text().splitlines()) == 24


def test_refine_adds_rates_between_the_grid_neighbours(base_sweep, tmp_path):
    out = tmp_path / "refine"
    shutil.copytree(base_sweep[0], out)
    summary = run_sweep(_template(), [2, 3], [8], LRS, [0, 1], out, refine=2, figures=False)
    assert summary["this_run"]["cells_run"] == 2 * 2 * 2  # 2 new rates x 2 seeds at each depth
    for run, grid_run in zip(summary["runs"], base_sweep[1]["runs"]):
        i = LRS.index(grid_run["eta_star_grid"])
        lo, hi = LRS[max(i - 1, 0)], LRS[min(i + 1, len(LRS) - 1)]
        new = sorted(set(run["lrs"]) - set(LRS))
        assert len(new) == 2 and run["lrs"] == sorted(LRS + new)
        assert all(lo < r < hi for r in new)
        assert new[1] / new[0] == pytest.approx((hi / lo) ** (1 / 3), rel=1e-12)  # log-spaced: geomspace's rounding
    again = run_sweep(_template(), [2, 3], [8], LRS, [0, 1], out, refine=2, figures=False)
    assert again["this_run"]["cells_run"] == 0 and again["runs"] == summary["runs"]


def test_run_sweep_rejects_bad_lists(tmp_path):
    for kw, err in ((dict(lrs=[0.1, 0.1]), ValueError), (dict(lrs=[0.0]), ValueError),
                    (dict(lrs=[math.nan]), ValueError), (dict(seeds=[-1, 0]), ValueError),
                    (dict(depths=[]), ValueError), (dict(depths=[2.0]), TypeError)):
        args = dict(depths=[2], widths=[8], lrs=LRS, seeds=[0, 1])
        args.update(kw)
        with pytest.raises(err):
            run_sweep(_template(), args["depths"], args["widths"], args["lrs"], args["seeds"], tmp_path / "bad")
        assert not (tmp_path / "bad").exists()  # refused before the folder is made


# ----------------------------------------------------------------------------- 12. store


def _rec(key, **kw):
    return {"key": key, "score": 1.5, "curve": {"loss": [1.0, 2.0]}, **kw}


def test_store_round_trip(tmp_path):
    recs = [_rec("a"), _rec("b", score=None), _rec("c", test_loss=math.inf, acc=math.nan)]
    S.append_records(tmp_path, recs[:2])
    S.append_records(tmp_path, recs[2:])
    S.append_records(tmp_path, [])
    table = S.read_table(tmp_path)
    assert list(table) == ["a", "b", "c"]
    assert table["a"] == recs[0] and table["b"] == recs[1]
    assert table["c"]["test_loss"] is None and table["c"]["acc"] is None  # non-finite -> null
    for line in (tmp_path / S.TABLE).read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert S.read_table(tmp_path / "nowhere") == {}


def test_store_cut_off_line_and_duplicates(tmp_path):
    S.append_records(tmp_path, [_rec("a"), _rec("b")])
    full = json.dumps(_rec("c"), sort_keys=True)
    with open(tmp_path / S.TABLE, "a") as f:
        f.write(full[: len(full) // 2])  # an interrupt in the middle of a line
    assert set(S.read_table(tmp_path)) == {"a", "b"}
    S.append_records(tmp_path, [_rec("c", score=2.5), _rec("a", score=9.0)])
    lines = (tmp_path / S.TABLE).read_text().splitlines()
    assert len(lines) == 5
    assert sum(1 for ln in lines if _parses(ln)) == 4  # only the cut-off line is broken
    table = S.read_table(tmp_path)
    assert set(table) == {"a", "b", "c"}
    assert table["c"]["score"] == 2.5  # the new record, not swallowed by the broken line
    assert table["a"]["score"] == 1.5  # a duplicate key keeps the first record
    # a non-dict line or one without a key is skipped
    with open(tmp_path / S.TABLE, "a") as f:
        f.write("[1, 2]\n{\"score\": 1}\n")
    assert set(S.read_table(tmp_path)) == {"a", "b", "c"}


def _parses(line: str) -> bool:
    try:
        json.loads(line)
        return True
    except json.JSONDecodeError:
        return False


def test_two_runs_may_test_one_out_folder_at_once(tmp_path):
    """Two processes checking the same ``--out`` 2000 times each: every check passes (each writes and removes a test
    file of its own name; a shared name let one remove the other's, refusing a writable folder)."""
    import subprocess
    import sys

    code = ("import sys\nfrom amutheory.train.store import check_out_dir\n"
            "for _ in range(2000):\n    check_out_dir(sys.argv[1])\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "out")], stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        err = p.communicate(timeout=120)[1]
        assert p.returncode == 0, err[-1000:]
    assert list((tmp_path / "out").iterdir()) == []


def test_check_out_dir_and_meta(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        S.check_out_dir(f)
    d = S.check_out_dir(tmp_path / "new" / "deeper")
    assert d.is_dir() and list(d.iterdir()) == []
    S.check_meta(d, {"optimizer": "sgd", "steps": 20})
    S.check_meta(d, {"optimizer": "sgd", "steps": 20})  # the same sweep: accepted
    with pytest.raises(ValueError, match="steps"):
        S.check_meta(d, {"optimizer": "sgd", "steps": 30})
    e = tmp_path / "orphan"
    S.append_records(S.check_out_dir(e), [_rec("a")])
    with pytest.raises(ValueError, match="no sweep.json"):
        S.check_meta(e, {"optimizer": "sgd"})
