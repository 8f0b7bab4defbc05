"""The ``probe-run`` rule (issue 47, second plan): the model's own short-run optimum at both depths, carried
to the full run by a recorded bridge.

Checked: the parabola vertex, the grid's growth towards an optimum beyond its end (on a known landscape
fed through the executor the rule trains with), real short runs of a user's factory on digits (their
cost, the ratio they report), the rule's rate and interval against its formula, the refusals of the API
and of the command line, and a command-line run end to end."""

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory import transfer_run as trun
from amutheory.spec import ArchSpec

MODELS = textwrap.dedent('''
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc1, self.fc2, self.ln = nn.Linear(d, d), nn.Linear(d, d), nn.LayerNorm(d)

        def forward(self, x):
            return x + self.fc2(torch.relu(self.fc1(self.ln(x))))


    class Net(nn.Module):
        def __init__(self, depth, width):
            super().__init__()
            self.embed = nn.Linear(64, width)
            self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            return self.head(self.blocks(self.embed(x.flatten(1))))


    def prenorm(depth=2, width=16):
        return Net(depth, width)
''')


@pytest.fixture
def zoo(tmp_path):
    path = tmp_path / "run_models.py"
    path.write_text(MODELS)
    return path


def template(path, steps=20):
    from amutheory.train import Cell, spec_for_data

    spec = spec_for_data(ArchSpec(family="conv", dim=2, depth=2, width=8), "digits")
    return Cell(spec=spec, lr=1.0, dataset="digits", steps=steps, batch_size=16, model=f"{path}:prenorm")


def bridge_file(tmp_path, settings_dict=None, betas=None):
    betas = betas or {"a": 0.1, "b": -0.1, "c": 0.3, "d": 0.0}
    kinds = {"a": "residual", "b": "residual", "c": "residual", "d": "chain"}
    path = tmp_path / "bridge_run.json"
    models = {n: {"kind": kinds[n], "betas": {"8": b}} for n, b in betas.items()}
    path.write_text(json.dumps({"runs": {"fp1": {"settings": settings_dict or trun.ShortRun().to_dict(),
                                                 "models": models}}}))
    return path


@settings(max_examples=40, deadline=None)
@given(st.floats(-2.0, 2.0), st.floats(0.1, 5.0), st.floats(-1.0, 1.0))
def test_vertex_of_an_exact_parabola_is_its_minimum(centre, curvature, level):
    rates = np.exp(np.linspace(-3, 3, 13))
    scores = curvature * (np.log(rates) - centre) ** 2 + level
    eta, flags = trun.vertex(rates, scores)
    assert math.log(eta) == pytest.approx(centre, abs=1e-9)
    assert "no curvature" not in flags


def test_vertex_without_curvature_is_the_best_rate_and_says_so():
    rates = [0.1, 0.2, 0.4, 0.8, 1.6]
    eta, flags = trun.vertex(rates, [0.5, 0.7, 0.8, 0.85, 0.87])
    assert eta == 0.1 and flags == ["edge", "no curvature"]


def landscape(optimum, horizon_log):
    """An executor giving every cell the score (ln lr - ln optimum)^2 + 1, seed-independent, as records."""
    def run(cells):
        horizon_log.update(c.stop for c in cells)
        return [{"key": c.key(), "score": (math.log(c.lr) - math.log(optimum)) ** 2 + 1.0} for c in cells]
    return run


@pytest.mark.parametrize("optimum", [1e-4, 0.03, 1.0, 40.0, 1e5])
def test_the_grid_grows_to_an_optimum_beyond_its_end(zoo, optimum):
    s = trun.ShortRun()
    stops = set()
    got = trun.short_optimum(template(zoo), 2, 0.03, s, run=landscape(optimum, stops))
    assert stops == {s.horizon(20)}
    reach = 0.03 * 10 ** (s.spacing * (s.half + trun.MAX_EXTENSIONS * s.half))
    if 0.03**2 / reach < optimum < reach:
        assert got.eta == pytest.approx(optimum, rel=1e-6) and not got.flags
    else:
        assert got.flags == ["at the grid's end after every extension"] or "edge" in got.flags
    assert got.steps == len(got.rates) * s.seeds * s.horizon(20)


def test_real_short_runs_report_their_ratio_and_cost(zoo):
    r = trun.run_ratio(template(zoo), 2, 4, 0.1, guess=0.7)
    h = trun.ShortRun().horizon(20)
    assert r.horizon == h == 4
    assert r.ratio == pytest.approx(r.target.eta / r.reference.eta)
    for opt in (r.reference, r.target):
        assert min(opt.rates) <= opt.eta <= max(opt.rates) and len(opt.rates) >= 9
        assert all(math.isfinite(v) for v in opt.scores)
    assert r.steps == (len(r.reference.rates) + len(r.target.rates)) * 2 * h
    assert r.full_runs == pytest.approx(r.steps / 20)
    assert min(abs(math.log(x / (r.reference.eta * 0.7))) for x in r.target.rates) < 1e-9  # centred on the guess


@pytest.mark.parametrize("kwargs, words", [
    (dict(fraction=0.0), "fraction"), (dict(fraction=1.5), "fraction"), (dict(seeds=0), "seeds"),
    (dict(half=1), "half"), (dict(spacing=-0.1), "spacing"), (dict(seeds=True), "seeds"),
])
def test_bad_settings_are_refused_by_name(kwargs, words):
    with pytest.raises(ValueError, match=words):
        trun.ShortRun(**kwargs)


def test_run_ratio_refuses_bad_arguments_by_name(zoo):
    with pytest.raises(TypeError, match="template"):
        trun.run_ratio("cell", 2, 4, 0.1)
    with pytest.raises(ValueError, match="from_lr"):
        trun.run_ratio(template(zoo), 2, 4, -1.0)
    with pytest.raises(ValueError, match="guess"):
        trun.run_ratio(template(zoo), 2, 4, 0.1, guess=float("nan"))


def test_probe_run_rate_and_interval_follow_the_formula(zoo, tmp_path):
    from amutheory.transfer import transfer_with_interval
    from amutheory.families.user import ModuleFamily

    fam = ModuleFamily(f"{zoo}:prenorm")
    ref, tgt = (fam.build_model(ArchSpec(depth=d, width=8), who="test", seed=0) for d in (2, 4))
    path = bridge_file(tmp_path)
    res = transfer_with_interval(0.1, ref, tgt, rule="probe-run", input_shape=(16, 1, 8, 8), lr_ci=(0.08, 0.12),
                                 probe=False, run_template=template(zoo), run_to_depth=4, run_bridge_file=path)
    p = res.probe_run
    rho = res.target.effective_depth / res.reference.effective_depth
    assert p["bridge"]["beta"] == pytest.approx(0.1) and p["bridge"]["error"] == pytest.approx(0.3)  # b, c: |-0.1 - 0.2|, |0.3 - 0.0|
    factor = p["short_run"]["ratio"] * rho**0.1
    assert res.rule == "probe-run" and res.lr == pytest.approx(0.1 * factor)
    spread = math.exp(0.3 * abs(math.log(rho)))
    assert res.lr_interval == pytest.approx([0.08 * factor / spread, 0.12 * factor * spread])
    assert res.confidence["covers_rule_error"] and "short runs" in res.confidence["evidence"][1]
    assert res.to_dict()["probe_run"]["short_run"]["steps"] > 0


def test_probe_run_refusals(zoo, tmp_path):
    from amutheory.transfer import transfer_lr

    spec = ArchSpec(depth=2, width=8)
    with pytest.raises(ValueError, match="run_template"):
        transfer_lr(0.1, spec, spec.with_(depth=4), rule="probe-run")
    with pytest.raises(ValueError, match="read by rule 'probe-run' \\(or auto\\) only"):
        transfer_lr(0.1, spec, spec.with_(depth=4), rule="am-mup", run_template=template(zoo))
    with pytest.raises(TypeError, match="run_template"):
        transfer_lr(0.1, spec, spec.with_(depth=4), rule="probe-run", run_template="cell")
    other = bridge_file(tmp_path, settings_dict={**trun.ShortRun().to_dict(), "seeds": 5})
    with pytest.raises(ValueError, match="no bridge is recorded for its settings"):
        transfer_lr(0.1, spec, spec.with_(depth=4), rule="probe-run", run_template=template(zoo),
                    run_bridge_file=other)


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "amutheory", "transfer", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("flags, words", [
    (["--rule", "probe-run"], "--dataset NAME --steps T"),
    (["--rule", "probe-run", "--dataset", "digits"], "--dataset NAME --steps T"),
    (["--rule", "am-mup", "--dataset", "digits", "--steps", "20"], "drop them with --rule am-mup"),
    (["--dataset", "digits"], "--dataset NAME --steps T"),
    (["--rule", "probe-run", "--dataset", "nope", "--steps", "20"], "unknown dataset"),
    (["--rule", "probe-run", "--dataset", "digits", "--steps", "20", "--to-width", "16"], "one width"),
])
def test_cli_refuses_bad_probe_run_flags_in_one_line(zoo, flags, words):
    proc = _cli("--from", f"{zoo}:prenorm", "--from-depth", "2", "--to-depth", "4", "--width", "8", "--dim", "2",
                "--input-shape", "16,1,8,8", "--lr", "0.1", *flags)
    assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cli_transfer_probe_run_json(zoo, tmp_path):
    path = bridge_file(tmp_path)
    env_cmd = [sys.executable, "-m", "amutheory", "transfer", "--from", f"{zoo}:prenorm", "--from-depth", "2",
               "--to-depth", "4", "--width", "8", "--dim", "2", "--input-shape", "16,1,8,8", "--lr", "0.1",
               "--lr-ci", "0.08,0.12", "--rule", "probe-run", "--dataset", "digits", "--steps", "20",
               "--batch-size", "16", "--no-probe", "--json"]
    import os

    proc = subprocess.run(env_cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, trun.BRIDGE_ENV: str(path)})
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["rule"] == "probe-run" and d["probe_run"]["short_run"]["horizon"] == 4
    assert d["lr_interval"][0] < d["lr"] < d["lr_interval"][1]
    assert d["rules"]["probe-run"] == d["lr"] and "am-mup" in d["rules"]


def test_tune_with_the_probe_run_prior_stores_and_charges_its_short_runs(zoo, tmp_path, monkeypatch):
    """tune --rule probe-run: the prior is the short-run rule's rate; its short runs are cells of the search's
    table (a rerun trains none of them again) and the prior's cost is theirs."""
    from amutheory.tuning.pipeline import tune

    monkeypatch.setenv(trun.BRIDGE_ENV, str(bridge_file(tmp_path)))
    out = tmp_path / "tune"
    s = tune(template(zoo, steps=27), [4], from_depth=2, from_lr=0.1, rule="probe-run", out=out, seeds=2,
             figures=False, probe=False)
    t = s["targets"][0]
    assert t["prior"]["rule"] == "probe-run" and t["prior"]["probe_run"]["short_run"]["horizon"] == 5
    short = t["prior"]["probe_run"]["short_run"]
    cells = len(short["reference"]["rates"]) * 2 + len(short["target"]["rates"]) * 2
    assert t["cost"]["prior"]["cells"] == cells and 0 < t["cost"]["prior"]["steps"] <= short["steps"]
    assert s["cost"]["prior"] == t["cost"]["prior"]
    stored = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert sum(1 for r in stored if r["cell"].get("stop") == 5) >= cells
    again = tune(template(zoo, steps=27), [4], from_depth=2, from_lr=0.1, rule="probe-run", out=out, seeds=2,
                 figures=False, probe=False)
    assert again["this_run"]["cells_trained"] == 0
    assert again["targets"][0]["prior"]["lr"] == pytest.approx(t["prior"]["lr"])


def test_auto_takes_the_short_runs_when_the_run_is_given(zoo, tmp_path):
    """auto with run_template: the short-run rule, said in rule_reason; without it, auto as before (no short run)."""
    from amutheory.families.user import ModuleFamily
    from amutheory.transfer import transfer_lr

    fam = ModuleFamily(f"{zoo}:prenorm")
    ref, tgt = (fam.build_model(ArchSpec(depth=d, width=8), who="test", seed=0) for d in (2, 4))
    path = bridge_file(tmp_path)
    res = transfer_lr(0.1, ref, tgt, rule="auto", input_shape=(16, 1, 8, 8), probe=False, run_template=template(zoo),
                      run_to_depth=4, run_bridge_file=path)
    assert res.rule == "probe-run" and "your run was given" in res.rule_reason
    assert res.lr == res.rules["probe-run"] and res.probe_run["short_run"]["steps"] > 0
    plain = transfer_lr(0.1, ref, tgt, rule="auto", input_shape=(16, 1, 8, 8), probe=False)
    assert plain.rule != "probe-run" and plain.probe_run is None


def test_a_run_unlike_the_recorded_setup_is_named_a_mismatch(zoo, tmp_path):
    from amutheory.families.user import ModuleFamily
    from amutheory.transfer import transfer_with_interval

    path = tmp_path / "bridge_run.json"
    models = {n: {"kind": "residual", "betas": {"8": b}} for n, b in (("a", 0.1), ("b", 0.0), ("c", -0.1))}
    path.write_text(json.dumps({"runs": {"fp2": {"settings": trun.ShortRun().to_dict(), "dataset": "digits",
                                                 "optimizer": "sgd", "steps": 200, "models": models}}}))
    fam = ModuleFamily(f"{zoo}:prenorm")
    ref, tgt = (fam.build_model(ArchSpec(depth=d, width=8), who="test", seed=0) for d in (2, 4))
    res = transfer_with_interval(0.1, ref, tgt, rule="probe-run", input_shape=(16, 1, 8, 8), probe=False,
                                 run_template=template(zoo).with_(momentum=0.5), run_to_depth=4, run_bridge_file=path)
    assert res.probe_run["setup_differences"] == ["steps 20 (recorded: 200)", "momentum 0.5 (recorded: plain SGD)"]
    m = [x for x in res.confidence["mismatches"] if x["assumption"] == "recorded training setup"]
    assert len(m) == 1 and "steps 20" in m[0]["model"]


def test_the_findings_page_regenerates_word_for_word_from_its_kept_summary(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    page = tmp_path / "page.md"
    proc = subprocess.run([sys.executable, "validate/transfer_run_findings.py", "report", "--page", str(page)],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert page.read_text() == (root / "docs" / "findings" / "transfer_probe_2.md").read_text()


def test_param_groups_and_optim_sgd_take_the_short_runs(zoo, tmp_path):
    """param_groups(rule="probe-run", run_template=...) scales the layer weights by the short-run rule's factor,
    and amutheory.optim.SGD builds on the same groups."""
    import torch

    from amutheory import optim
    from amutheory.families.user import ModuleFamily
    from amutheory.parametrization.groups import param_groups

    fam = ModuleFamily(f"{zoo}:prenorm")
    base, model = (fam.build_model(ArchSpec(depth=d, width=8), who="test", seed=0) for d in (2, 4))
    import os

    os.environ[trun.BRIDGE_ENV] = str(bridge_file(tmp_path))
    try:
        g = param_groups(model, 0.1, base, rule="probe-run", example_input=(16, 1, 8, 8), probe=False,
                         run_template=template(zoo), run_to_depth=4)
        opt = optim.SGD(model, 0.1, base, example_input=(16, 1, 8, 8), rule="probe-run", probe=False,
                        run_template=template(zoo), run_to_depth=4)
    finally:
        del os.environ[trun.BRIDGE_ENV]
    factor = g.transfer.lr / 0.1
    weights = [grp for grp in g if "probe-run" in grp["why"]]
    assert weights and g.rule == "probe-run" and g.transfer.rule == "probe-run"
    assert all(grp["multiplier"] == pytest.approx(factor, rel=1e-12) for grp in weights)
    assert isinstance(opt, torch.optim.SGD) and opt.amutheory_groups.rule == "probe-run"
    assert [grp["lr"] for grp in opt.param_groups] == pytest.approx([grp["lr"] for grp in g])


def test_short_runs_that_diverge_at_every_rate_are_refused(zoo):
    def diverged(cells):
        return [{"key": c.key(), "score": None} for c in cells]

    with pytest.raises(ValueError, match="diverged at every rate tried at depth 2"):
        trun.short_optimum(template(zoo), 2, 0.1, trun.ShortRun(), run=diverged)


def test_auto_goes_on_without_short_runs_that_give_no_rate_and_says_why(zoo, tmp_path):
    from amutheory.families.user import ModuleFamily
    from amutheory.transfer import transfer_lr

    fam = ModuleFamily(f"{zoo}:prenorm")
    ref, tgt = (fam.build_model(ArchSpec(depth=d, width=8), who="test", seed=0) for d in (2, 4))
    other = bridge_file(tmp_path, settings_dict={**trun.ShortRun().to_dict(), "seeds": 5})
    res = transfer_lr(0.1, ref, tgt, rule="auto", input_shape=(16, 1, 8, 8), probe=False, run_template=template(zoo),
                      run_to_depth=4, run_bridge_file=other)
    assert res.rule != "probe-run" and "the short runs gave no rate: rule probe-run: no bridge" in res.rule_reason
    with pytest.raises(ValueError, match="no bridge is recorded"):
        transfer_lr(0.1, ref, tgt, rule="probe-run", input_shape=(16, 1, 8, 8), probe=False,
                    run_template=template(zoo), run_to_depth=4, run_bridge_file=other)
