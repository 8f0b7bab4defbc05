"""Tests of the learning-rate-free optimizers (Prodigy, DoG) as training-cell optimizers and of the
``lr_free`` baseline (amutheory.tuning.lrfree):

1. the cell: momentum refused, a missing package refused with the install line, the keys of the
   other optimizers' cells unchanged, the optimizer built with the cell's lr and weight decay;
2. real runs (the built-in 1-D conv net, depth 2, width 8, on digits, batch 16, one thread): both
   reduce the held-out loss, a prodigy record is the same twice, the vectorised engine hands them
   to the loop;
3. ``lr_free``: its result, its charging, its table reuse and its refusals.

Skipped where the ``lrfree`` extra is not installed (``pip install -e ".[lrfree]"``; the ``test``
extra installs it)."""

import importlib.util

import pytest
import torch
from torch.nn import functional as F

pytest.importorskip("prodigyopt")
pytest.importorskip("dog")

from amutheory.names import LR_FREE_OPTIMIZERS, TRAIN_OPTIMIZERS  # noqa: E402
from amutheory.spec import ArchSpec  # noqa: E402
from amutheory.train import run as R  # noqa: E402
from amutheory.train import spec_for_data  # noqa: E402
from amutheory.train import optim as O  # noqa: E402
from amutheory.train.cell import Cell  # noqa: E402
from amutheory.train.store import TABLE  # noqa: E402
from amutheory.tuning.lrfree import lr_free  # noqa: E402

SPEC = spec_for_data(ArchSpec(family="conv", dim=1, width=8, depth=2), "digits")
RUN = dict(engine="local", workers=1, threads=1, vectorise=True, scheduler=None)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield


def _cell(**kw) -> Cell:
    d = dict(spec=SPEC, lr=1.0, optimizer="prodigy", dataset="digits", steps=20, batch_size=16)
    d.update(kw)
    return Cell(**d)


def _lines(out) -> int:
    path = out / TABLE
    return len(path.read_text().splitlines()) if path.exists() else 0


def _no_timing(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "timing"}


# ----------------------------------------------------------------------------- 1. the cell


def test_names():
    assert TRAIN_OPTIMIZERS[:3] == ("sgd", "adam", "adamw") and LR_FREE_OPTIMIZERS == ("prodigy", "dog")
    assert set(LR_FREE_OPTIMIZERS) <= set(TRAIN_OPTIMIZERS)
    assert not set(LR_FREE_OPTIMIZERS) & set(O.StackedOptimizer.KINDS)


@pytest.mark.parametrize("optimizer", LR_FREE_OPTIMIZERS)
def test_momentum_is_refused(optimizer):
    with pytest.raises(ValueError, match="momentum"):
        _cell(optimizer=optimizer, momentum=0.9)
    assert _cell(optimizer=optimizer, momentum=0.0).momentum == 0.0


@pytest.mark.parametrize("optimizer, module", [("prodigy", "prodigyopt"), ("dog", "dog")])
def test_a_missing_package_is_refused_with_the_install_line(optimizer, module, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(ImportError, match=r'pip install -e "\.\[lrfree\]"') as err:
        _cell(optimizer=optimizer)
    assert isinstance(err.value, ValueError)  # the command line's one-line refusal
    _cell(optimizer="sgd", lr=0.1)  # the others need nothing


def test_the_command_line_refuses_a_missing_package_before_any_work(tmp_path, monkeypatch, capsys):
    from amutheory.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "dog" else real(name, *a))
    out = tmp_path / "sweep"
    rc = main(["sweep", "--depths", "2", "--width", "8", "--dim", "1", "--dataset", "digits", "--lrs", "0.5,1,2",
               "--seeds", "2", "--steps", "20", "--batch-size", "16", "--optimizer", "dog", "--out", str(out),
               "--no-figures", "--quiet"])
    assert rc == 2 and not out.exists()
    assert 'pip install -e ".[lrfree]"' in capsys.readouterr().err


def test_building_the_optimizer_without_its_package_says_how_to_install(monkeypatch):
    cell = _cell(optimizer="dog")
    monkeypatch.setattr(O.importlib, "import_module", lambda name: (_ for _ in ()).throw(ImportError(name)))
    with pytest.raises(ImportError, match=r'pip install -e "\.\[lrfree\]"'):
        O.torch_optimizer(cell, torch.nn.Linear(2, 2).parameters())


def test_keys_of_the_other_optimizers_are_unchanged():
    """The same keys as tests/test_tune_baselines.py hard-codes (from before these optimizers)."""
    spec = ArchSpec(family="conv", dim=1, depth=2, width=4, kernel=3, spatial=8, input_channels=3, outputs=10)
    assert Cell(spec=spec, lr=0.1, dataset="synthetic", steps=20, batch_size=16).key() == "ef293acbc286d2fb"
    assert Cell(spec=spec, lr=0.05, seed=3, optimizer="adam", dataset="synthetic", steps=30,
                batch_size=8).key() == "1b934ef65a606ee7"
    assert _cell(optimizer="prodigy").key() != _cell(optimizer="dog").key()


@pytest.mark.parametrize("optimizer, kind", [("prodigy", "Prodigy"), ("dog", "DoG")])
def test_the_optimizer_gets_the_cells_lr_and_weight_decay(optimizer, kind):
    cell = _cell(optimizer=optimizer, lr=0.5, weight_decay=0.01)
    opt = O.torch_optimizer(cell, torch.nn.Linear(3, 2).parameters())
    assert type(opt).__name__ == kind
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["weight_decay"] == 0.01
    with pytest.raises(ValueError, match="vectorised"):
        O.StackedOptimizer(cell, torch.tensor([0.5]))


# ----------------------------------------------------------------------------- 2. real runs


@pytest.mark.parametrize("optimizer, steps", [("prodigy", 20), ("dog", 100)])
def test_both_reduce_the_loss_on_digits(optimizer, steps):
    """DoG's first steps are tiny by design (``reps_rel = 1e-6``), so it gets 100 steps (0.2 s)."""
    cell = _cell(optimizer=optimizer, steps=steps)
    _, _, xt, yt = R.cell_data(cell)
    with torch.no_grad():
        before = float(F.cross_entropy(R.build_network(cell)(xt), yt))
    rec = R.train_group([cell])[0]  # the vectorised engine's entry: handed to the loop
    assert rec["mode"] == "loop" and not rec["diverged"] and rec["backward_passes"] == steps
    assert rec["test_loss"] < before - 0.1, (rec["test_loss"], before)
    assert rec["final_loss"] < rec["curve"]["loss"][0]


def test_a_prodigy_record_is_the_same_twice():
    a, b = R.train_cell(_cell(seed=3)), R.train_cell(_cell(seed=3))
    assert a["key"] == b["key"] and a["curve"]["loss"] == b["curve"]["loss"]
    assert _no_timing(a) == _no_timing(b)
    assert R.train_cell(_cell(seed=4))["curve"]["loss"] != a["curve"]["loss"]


def test_train_group_runs_lr_free_cells_in_the_loop_one_by_one():
    cells = [_cell(optimizer="dog", lr=lr) for lr in (0.5, 1.0)]
    group = R.train_group(cells)
    assert [r["mode"] for r in group] == ["loop", "loop"]
    assert [_no_timing(r) for r in group] == [_no_timing(R.train_cell(c)) for c in cells]


# ----------------------------------------------------------------------------- 3. lr_free


def test_lr_free_runs_one_cell_per_seed_charges_it_and_reuses_the_table(tmp_path):
    template = Cell(spec=SPEC, lr=0.1, optimizer="sgd", dataset="digits", steps=20, batch_size=16)
    table: dict = {}
    res = lr_free(template, 2, 8, "prodigy", [0, 1], out=tmp_path, table=table, run_opts=RUN)
    assert res["method"] == "lr-free:prodigy" and res["optimizer"] == "prodigy"
    assert (res["depth"], res["width"], res["seeds"], res["diverged"]) == (2, 8, [0, 1], 0)
    keys = [_cell(seed=s).key() for s in (0, 1)]  # lr 1.0, the template's data, steps and batch
    assert [t["key"] for t in res["trials"]] == keys and [t["seed"] for t in res["trials"]] == [0, 1]
    assert set(table) == set(keys) and _lines(tmp_path) == 2
    assert res["score_mean"] == pytest.approx((table[keys[0]]["score"] + table[keys[1]]["score"]) / 2)
    assert res["final_loss_mean"] == pytest.approx(sum(t["final_loss"] for t in res["trials"]) / 2)
    assert res["cost"]["cells"] == 2 and res["cost"]["steps"] == 40 and res["cost"]["core_seconds"] > 0
    assert res["cost"]["forward_passes"] == sum(table[k]["forward_passes"] for k in keys)
    again = lr_free(template, 2, 8, "prodigy", [0, 1], out=tmp_path, table=table, run_opts=RUN)
    assert _lines(tmp_path) == 2 and again == res  # read back from the table: nothing trained


def test_lr_free_scores_a_diverged_seed_as_none(tmp_path):
    """Hand-made records in the table the runner reads (nothing trains): a diverged seed makes the
    means ``None`` and is counted."""
    template = _cell(optimizer="dog")
    cells = [template.with_(seed=s) for s in (0, 1)]
    table = {}
    for c, (score, div) in zip(cells, ((2.0, False), (None, True))):
        table[c.key()] = {"key": c.key(), "score": score, "final_loss": score, "diverged": div,
                          "backward_passes": 7 if div else 20, "forward_passes": 7 if div else 21,
                          "timing": {"wall_s": 1.0}}
    res = lr_free(template, 2, 8, "dog", [0, 1], out=tmp_path, table=table, run_opts=RUN)
    assert _lines(tmp_path) == 0 and res["score_mean"] is None and res["final_loss_mean"] is None
    assert res["diverged"] == 1 and [t["diverged"] for t in res["trials"]] == [False, True]
    assert res["cost"] == {"cells": 2, "steps": 27, "forward_passes": 28, "core_seconds": 2.0}


@pytest.mark.parametrize("args, kw, error, name", [
    (("not a cell", 2, 8, "prodigy", [0]), {}, TypeError, "template"),
    ((None, 0, 8, "prodigy", [0]), {}, ValueError, "depth"),
    ((None, 2, 2.5, "prodigy", [0]), {}, TypeError, "width"),
    ((None, 2, 8, "sgd", [0]), {}, ValueError, "optimizer"),
    ((None, 2, 8, 3, [0]), {}, TypeError, "optimizer"),
    ((None, 2, 8, "dog", []), {}, ValueError, "seeds"),
    ((None, 2, 8, "dog", [0, 0]), {}, ValueError, "seeds"),
    ((None, 2, 8, "dog", "01"), {}, TypeError, "seeds"),
    ((None, 2, 8, "dog", [0]), {"table": []}, TypeError, "table"),
    ((None, 2, 8, "dog", [0]), {"run_opts": None}, TypeError, "run_opts"),
    ((None, 2, 8, "dog", [0]), {"out": None}, TypeError, "out"),
    ((None, 2, 8, "dog", [0]), {"template": dict(momentum=0.9)}, ValueError, "momentum"),
    ((None, 2, 8, "dog", [0]), {"template": dict(schedule="exp-ramp:10.0")},
     ValueError, "schedule"),
])
def test_lr_free_refuses_bad_arguments(tmp_path, args, kw, error, name):
    kw = dict(kw)
    template = _cell(**{"optimizer": "sgd", "lr": 0.1, **kw.pop("template", {})}) if args[0] is None else args[0]
    opts = dict(out=tmp_path, table={}, run_opts=RUN)
    opts.update(kw)
    with pytest.raises(error, match=name):
        lr_free(template, *args[1:], **opts)
    assert _lines(tmp_path) == 0
