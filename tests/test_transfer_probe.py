"""The ``probe`` rule (issue 47): the model's own one-step probe carried to training by a measured bridge.

Checked against the probe ``measure --model`` runs (the same seeds give the same ``s_bar``), the bridge's
median and leave-one-out error by hand, the interval's formula, ``auto``'s fallback, the mismatch the probe
measures, the held-out error fallback for a kind without a record, and the command line's refusals."""

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory import transfer_probe as tp
from amutheory.spec import ArchSpec
from amutheory.transfer import transfer_lr, transfer_with_interval

MODELS = textwrap.dedent('''
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d, scale):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, d), nn.Linear(d, d)
            self.gamma = nn.Parameter(torch.full((d,), scale))

        def forward(self, x):
            return x + self.gamma * self.fc2(torch.relu(self.fc1(x)))


    class Net(nn.Module):
        def __init__(self, depth, width, scale):
            super().__init__()
            self.embed = nn.Linear(6, width)
            self.blocks = nn.Sequential(*[Block(width, scale) for _ in range(depth)])
            self.head = nn.Linear(width, 3)

        def forward(self, x):
            return self.head(self.blocks(self.embed(x)))


    def resmlp(depth, width):
        return Net(depth, width, 1.0)


    def layerscale(depth, width):
        return Net(depth, width, 1e-6)
''')


@pytest.fixture
def zoo(tmp_path):
    import importlib.util

    path = tmp_path / "probe_models.py"
    path.write_text(MODELS)
    spec = importlib.util.spec_from_file_location("amutheory_test_probe_models", path)  # a name no other test uses
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield path, mod


@pytest.fixture
def bridge_file(tmp_path):
    """A bridge of three residual models (betas 0.1, -0.1, 0.3) and one chain model (0.0)."""
    path = tmp_path / "bridge.json"
    models = {"a": {"kind": "residual", "betas": {"8": 0.1}}, "b": {"kind": "residual", "betas": {"8": -0.1}},
              "c": {"kind": "residual", "betas": {"8": 0.3}}, "d": {"kind": "chain", "betas": {"8": 0.0}}}
    path.write_text(json.dumps({"runs": {"fp0": {"models": models}}}))
    return path


def test_ratio_is_the_measure_probes_eta_ratio(zoo):
    """r1 = sqrt(mean s_bar(ref) / mean s_bar(tgt)) of the very draws measure --model makes (same seeds)."""
    import torch

    from amutheory.measure.module_measurement import measure_module
    from amutheory.spec import ProbeProtocol

    _, mod = zoo
    seeds = [0, 1, 2]
    builds = (lambda: mod.resmlp(depth=2, width=8)), (lambda: mod.resmlp(depth=6, width=8))
    torch.manual_seed(0)
    r1 = tp.probe_ratio(mod.resmlp(2, 8), mod.resmlp(6, 8), (16, 6), seeds=seeds, builds=builds, budget=tp.MAX_BUDGET_S)
    m = measure_module(mod.resmlp, [2, 6], seeds, ProbeProtocol(), input_shape=(16, 6), width=8)
    expected = math.sqrt(m.s_bar(2).mean() / m.s_bar(6).mean())
    assert r1.ratio == pytest.approx(expected, rel=1e-12)
    assert r1.ci[0] <= r1.ratio <= r1.ci[1] and r1.redrawn and r1.seeds == seeds


def test_ratio_ci_coverage_by_simulation():
    """The seed-bootstrap CI of the ratio of means covers the true ratio: lognormal s_bar (sigma 0.3, 8 seeds
    each, as the probe's per-seed spread on the plan's models), 300 replicates; percentile bootstrap at n = 8 is
    known to under-cover a little, so the bound is 0.85 (the binomial SE at 0.95 is 0.013)."""
    rng = np.random.default_rng(1)
    sigma, n, reps = 0.3, 8, 300
    true = math.sqrt(math.exp(0.0) / math.exp(math.log(4.0)))  # means e^(mu + s^2/2) share the s^2 term
    hits = 0
    for _ in range(reps):
        ref = np.exp(rng.normal(0.0, sigma, n))
        tgt = np.exp(rng.normal(math.log(4.0), sigma, n))
        _, (lo, hi) = tp.ratio_with_ci(ref, tgt, draws=500)
        hits += lo <= true <= hi
    assert hits / reps >= 0.85


def test_bridge_median_and_leave_one_out_error(bridge_file):
    b = tp.bridge("residual", bridge_file)
    assert b.beta == pytest.approx(0.1) and not b.pooled and b.models == ["a", "b", "c"]
    # leave-one-out: a vs median(-0.1, 0.3) = 0.1 -> 0; b vs median(0.1, 0.3) = 0.2 -> 0.3; c vs 0.0 -> 0.3
    assert b.error == pytest.approx(0.3)
    t = tp.bridge("transformer", bridge_file)
    assert t.pooled and t.models == ["a", "b", "c", "d"] and t.beta == pytest.approx(0.05)
    left = tp.bridge("residual", bridge_file, exclude=["a"])  # two residual models left: fewer than MIN_KIND
    assert left.pooled and left.models == ["b", "c", "d"]
    assert tp.bridge("residual", bridge_file, exclude=["a", "b", "c"]) is None  # one model: no bridge


@pytest.mark.parametrize("content, words", [
    ("[]", "no 'runs' table"),
    ('{"runs": {"x": {"models": {}}}}', "not a table of recorded models"),
    ('{"runs": {"x": {"models": {"a": {"betas": {"8": 1}}}}}}', "has no kind"),
    ('{"runs": {"x": {"models": {"a": {"kind": "chain", "betas": {"8": NaN}}}}}}', "finite exponents"),
    ("{", "not readable JSON"),
])
def test_bad_bridge_files_are_refused_by_name(tmp_path, content, words):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=words) as err:
        tp.load_bridge(path)
    assert str(path) in str(err.value)


def test_probe_rule_rate_and_interval_follow_the_formula(zoo, bridge_file):
    _, mod = zoo
    builds = (lambda: mod.resmlp(depth=2, width=8)), (lambda: mod.resmlp(depth=6, width=8))
    ref, tgt = mod.resmlp(2, 8), mod.resmlp(6, 8)
    res = transfer_with_interval(0.5, ref, tgt, rule="probe", input_shape=(16, 6), lr_ci=(0.4, 0.6),
                                 builds=builds, bridge_file=bridge_file, probe_seeds=4)
    p = res.probe
    rho = res.target.effective_depth / res.reference.effective_depth
    assert p["rho"] == pytest.approx(rho)
    assert res.lr == pytest.approx(0.5 * p["one_step"]["ratio"] * rho**0.1)
    spread = math.exp(0.3 * abs(math.log(rho)))
    assert res.lr_interval == pytest.approx([0.4 * p["one_step"]["ci"][0] * rho**0.1 / spread,
                                             0.6 * p["one_step"]["ci"][1] * rho**0.1 * spread])
    assert res.confidence["covers_rule_error"] and res.confidence["held_out_error"]["record"] == "bridge"
    assert res.rules["probe"] == res.lr and set(res.rules) > {"am-mup", "power", "probe"}
    assert res.to_dict()["probe"]["bridge"]["fingerprint"] == "fp0"


def test_auto_takes_the_best_recorded_rule_the_probe_a_candidate(zoo, bridge_file, tmp_path):
    """auto: the smallest recorded typical error for the kind (a record's median table), the probe competing
    where it ran; nothing recorded: the probe; the probe over its budget: a fixed rule, and why."""
    _, mod = zoo
    ref, tgt = mod.resmlp(2, 8), mod.resmlp(4, 8)
    none, some = tmp_path / "none.json", tmp_path / "some.json"
    none.write_text(json.dumps({"runs": {}}))
    some.write_text(json.dumps({"runs": {"r": {"kind": "residual", "rules": {"power": 0.1, "probe": 2.0},
                                               "median": {"power": 0.9, "probe": 0.3, "chen": 0.5}}}}))
    opts = dict(input_shape=(16, 6), bridge_file=bridge_file, probe_seeds=3)
    res = transfer_lr(1.0, ref, tgt, rule="auto", errors=none, **opts)
    assert res.rule == "probe" and "no run is recorded" in res.rule_reason
    res = transfer_lr(1.0, ref, tgt, rule="auto", errors=some, **opts)
    assert res.rule == "probe" and "(0.3)" in res.rule_reason  # the median table, not the largest
    cheap = transfer_lr(1.0, ref, tgt, rule="auto", errors=some, input_shape=(16, 6), bridge_file=bridge_file,
                        probe_budget=1e-9)
    assert cheap.rule == "chen" and "over the budget" in cheap.rule_reason and "probe" not in cheap.rules
    assert cheap.probe["skipped"] and cheap.probe["estimate_s"] > 0
    with pytest.raises(ValueError, match="over the budget"):
        transfer_lr(1.0, ref, tgt, rule="probe", input_shape=(16, 6), bridge_file=bridge_file, probe_budget=1e-9)
    with pytest.raises(ValueError, match="no bridge is recorded"):
        transfer_lr(1.0, ref, tgt, rule="probe", input_shape=(16, 6), bridge_file=bridge_file.parent / "none.json")


def test_layer_scale_stack_measures_flat_and_names_the_fixed_rules(zoo, bridge_file):
    """A stack whose branches start at 1e-6: its one-step update does not move with depth; the fixed rules
    that cut the rate with depth fall outside the probe's interval and are named."""
    _, mod = zoo
    builds = (lambda: mod.layerscale(depth=2, width=8)), (lambda: mod.layerscale(depth=16, width=8))
    res = transfer_with_interval(1.0, mod.layerscale(2, 8), mod.layerscale(16, 8), rule="am-mup",
                                 input_shape=(16, 6), builds=builds, bridge_file=bridge_file, probe_seeds=4, probe=True)
    assert res.rule == "am-mup" and "probe" in res.rules  # a fixed rule chosen: the probe still checks it
    assert res.probe["one_step"]["ci"][0] <= 1.0 <= res.probe["one_step"]["ci"][1]
    found = [m for m in res.confidence["mismatches"] if m["assumption"] == "measured depth factor"]
    assert found and "flat in depth" in found[0]["model"] and "completep" in found[0]["rules"]


@settings(max_examples=6, deadline=None)
@given(depth=st.integers(2, 6), width=st.sampled_from([4, 8]), seed=st.integers(0, 50))
def test_equal_nets_give_ratio_one(depth, width, seed):
    """The same net at both ends (a spec, redrawn per seed): r1 is exactly 1, its CI the point."""
    spec = ArchSpec(family="conv", depth=depth, width=width, spatial=8, dim=1, batch=2)
    r1 = tp.probe_ratio(spec, spec, seeds=[seed, seed + 1], budget=tp.MAX_BUDGET_S)
    assert r1.ratio == pytest.approx(1.0, rel=1e-12) and r1.ci == pytest.approx([1.0, 1.0], rel=1e-12)


def test_a_dead_net_is_skipped_not_a_nan_interval():
    """Width 1: some seeds' ReLU net moves no counted layer (s_bar = 0); a ratio of means over such draws has
    no finite CI, so the probe says so instead of returning NaN (found by test_cli_hardening's width-1 case)."""
    spec = ArchSpec(family="conv", depth=2, width=64)
    res = tp.probe_ratio(spec, spec.with_(depth=8, width=1), seeds=8, budget=tp.MAX_BUDGET_S)
    assert isinstance(res, tp.ProbeSkipped) and "no finite CI" in res.reason


def test_no_record_of_a_kind_widens_by_the_largest_recorded_error(tmp_path):
    from amutheory.transfer_interval import held_out_error

    path = tmp_path / "errors.json"
    path.write_text(json.dumps({"runs": {"r1": {"kind": "chain", "rules": {"am-mup": 0.2}},
                                         "r2": {"kind": "residual", "rules": {"am-mup": 0.7}}}}))
    e, rec, fp = held_out_error("transformer", "am-mup", path)
    assert e == 0.7 and fp == "r2" and "no run of a transformer net" in rec["fallback"]
    assert held_out_error("chain", "am-mup", path)[0] == 0.2


@pytest.mark.parametrize("flags, words", [
    (["--probe-seeds", "1"], "at least two distinct seeds"),
    (["--probe-budget", "0"], "positive number of seconds"),
    (["--rule", "probe", "--no-probe"], "needs the probe"),
])
def test_cli_refuses_bad_probe_flags_in_one_line(zoo, flags, words):
    path, _ = zoo
    proc = subprocess.run([sys.executable, "-m", "amutheory", "transfer", "--from", f"{path}:resmlp", "--from-depth",
                           "2", "--to-depth", "4", "--width", "8", "--input-shape", "16,6", "--lr", "0.1", *flags],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cli_transfer_probe_json(zoo, bridge_file):
    path, _ = zoo
    proc = subprocess.run([sys.executable, "-m", "amutheory", "transfer", "--from", f"{path}:resmlp", "--from-depth",
                           "2", "--to-depth", "4", "--width", "8", "--input-shape", "16,6", "--lr", "0.1",
                           "--lr-ci", "0.08,0.12", "--probe-seeds", "3", "--bridge", str(bridge_file), "--json",
                           "--rule", "probe"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["rule"] == "probe" and d["probe"]["one_step"]["redrawn"] and len(d["probe"]["one_step"]["seeds"]) == 3
    assert d["lr_interval"][0] < d["lr"] < d["lr_interval"][1] and d["rule_reason"] == "given"


def test_param_groups_default_runs_the_probe_and_names_what_it_measures(zoo, bridge_file, monkeypatch):
    """param_groups / optim.SGD by default: rule auto, the probe run on the two modules as given; a layer-scale
    stack's flat one-step update puts the fixed rules that cut the rate outside the probe's interval, named in
    the groups' mismatches as transfer names them."""
    import amutheory

    monkeypatch.setenv(tp.BRIDGE_ENV, str(bridge_file))
    _, mod = zoo
    base, model = mod.layerscale(2, 8), mod.layerscale(16, 8)
    opt = amutheory.optim.SGD(model, 0.1, base, example_input=(16, 6))
    groups = opt.amutheory_groups
    assert groups.transfer.probe["one_step"]["redrawn"] is False and "probe" in groups.transfer.rules
    assert groups.transfer.rule_reason.startswith("auto: ")
    assert any(m["assumption"] == "measured depth factor" for m in groups.mismatches)
    assert "measured depth factor" in groups.table()
