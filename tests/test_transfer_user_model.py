"""``transfer`` on a user's own model (issue 39, part 4): one factory called at both depths, the
interval for the chosen rule (the tuned rate's CI widened by the rule's measured held-out error),
and the confidence record (what the model resolved to, the evidence, the rules' assumptions it
breaks).  The held-out errors come from a tiny protocol run through validate/transfer_errors.py."""

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amutheory.cli import main
from amutheory.protocol import Protocol, Study, TransferPlan, fingerprint, run_protocol
from amutheory.spec import ArchSpec
from amutheory.transfer import RULES
from amutheory.transfer_interval import ERRORS_ENV, NO_RUN

REPO = Path(__file__).resolve().parent.parent

MODELS = textwrap.dedent('''
    import torch
    from torch import nn


    class Block(nn.Module):
        """pre-LN: x + attn(LN(x)), then x + MLP(LN(x)) with GELU"""

        def __init__(self, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))


    class Transformer(nn.Module):
        def __init__(self, depth, width):
            super().__init__()
            self.embed = nn.Linear(4, width)
            self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            return self.head(self.ln(self.blocks(self.embed(x))).mean(1))


    def transformer(depth, width):
        return Transformer(depth, width)


    class ResMLP(nn.Module):
        def __init__(self, depth, width):
            super().__init__()
            self.inp = nn.Sequential(nn.Flatten(), nn.Linear(8, width))
            self.blocks = nn.ModuleList([nn.Sequential(nn.ReLU(), nn.Linear(width, width)) for _ in range(depth)])
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            h = self.inp(x)
            for b in self.blocks:
                h = h + b(h)
            return self.head(h)


    def resmlp(depth, width):
        return ResMLP(depth, width)


    def resmlp_he(depth, width):
        """the same net with the critical He init on every Linear: Var[W] = 2 / fan_in"""
        model = ResMLP(depth, width)
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        return model


    def resmlp_d2():
        torch.manual_seed(0)
        return ResMLP(2, 16)


    def resmlp_d8():
        torch.manual_seed(0)
        return ResMLP(8, 16)
''')


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "models.py"
    path.write_text(MODELS)
    return path


def _transfer(capsys, *argv) -> dict:
    """``transfer --json``; the fixed am-mup rule unless a rule is named (these tests are about its interval; the
    probe rule, the default where affordable, has its own tests in test_transfer_probe.py)."""
    rule = () if "--rule" in argv else ("--rule", "am-mup")
    assert main(["transfer", "--lr", "0.1", "--width", "16", "--json", *rule, *argv]) == 0
    return json.loads(capsys.readouterr().out)


TRANSFORMER = ("--from-depth", "2", "--to-depth", "8", "--input-shape", "2,6,4")
RESMLP = ("--from-depth", "2", "--to-depth", "8", "--input-shape", "2,2,4")


def test_transformer_factory_at_both_depths_names_what_it_breaks(models, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(ERRORS_ENV, str(tmp_path / "none.json"))  # no recorded run
    d = _transfer(capsys, "--from", f"{models}:transformer", *TRANSFORMER, "--optimizer", "adam")
    lo, hi = d["lr_interval"]
    assert lo <= d["lr"] <= hi
    c = d["confidence"]
    assert {"resolved_as", "evidence", "held_out_error", "mismatches"} <= set(c)
    assert c["resolved_as"] == "transformer"
    assert c["held_out_error"] is None and c["held_out_error_reason"] == NO_RUN and not c["covers_rule_error"]
    text = json.dumps(c["mismatches"])
    for needle in ("GELU", "LayerNorm", "Adam", "chain law in the effective depth"):
        assert needle in text, needle
    assert d["target"]["blocks"] > d["reference"]["blocks"]  # the factory was called at two depths
    assert d["from"].endswith("(depth=2, width=16)") and d["to"].endswith("(depth=8, width=16)")


def test_lr_ci_widens_the_interval_and_sgd_relu_has_no_activation_mismatch(models, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(ERRORS_ENV, str(tmp_path / "none.json"))
    point = _transfer(capsys, "--from", f"{models}:resmlp", *RESMLP)
    wide = _transfer(capsys, "--from", f"{models}:resmlp", *RESMLP, "--lr-ci", "0.05,0.3", "--momentum", "0.9")
    assert point["lr_interval"] == [pytest.approx(point["lr"])] * 2
    assert wide["lr"] == pytest.approx(point["lr"])
    assert wide["lr_interval"][0] == pytest.approx(point["lr"] * 0.5)
    assert wide["lr_interval"][1] == pytest.approx(point["lr"] * 3)
    assert point["confidence"]["resolved_as"] == "residual"
    kinds = {m["assumption"] for m in wide["confidence"]["mismatches"]}
    assert "momentum" in kinds and "activation" not in kinds and "norm layers" not in kinds


def test_an_init_off_the_critical_he_init_is_a_mismatch(models, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(ERRORS_ENV, str(tmp_path / "none.json"))
    default = _transfer(capsys, "--from", f"{models}:resmlp", *RESMLP)["confidence"]["mismatches"]
    he = _transfer(capsys, "--from", f"{models}:resmlp_he", *RESMLP)["confidence"]["mismatches"]
    init = [m for m in default if m["assumption"] == "init"]
    assert len(init) == 1 and "critical c = 2 (ReLU" in init[0]["rules"], default
    x = float(init[0]["model"].split("~ ")[1].split()[0])  # PyTorch's default: Var[W] fan_in = 1/3
    assert abs(x - 1 / 3) < 0.1, init[0]["model"]
    assert "init" not in {m["assumption"] for m in he}, he
    builtin = _transfer(capsys, "--from-depth", "2", "--to-depth", "8", "--init-c", "0.5")["confidence"]["mismatches"]
    assert "init" in {m["assumption"] for m in builtin}
    assert "init" not in {m["assumption"] for m in _transfer(capsys, "--from-depth", "2", "--to-depth", "8")[
        "confidence"]["mismatches"]}


def test_no_argument_factories_still_transfer(models, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(ERRORS_ENV, str(tmp_path / "none.json"))
    old = _transfer(capsys, "--from", f"{models}:resmlp_d2", "--to", f"{models}:resmlp_d8", "--input-shape", "2,2,4")
    new = _transfer(capsys, "--from", f"{models}:resmlp", *RESMLP)
    # seed 0 before each call: the same nets, so the same fixed rules (the probe differs: a factory is redrawn per
    # probe seed, modules given directly keep their weights)
    assert {k: old["rules"][k] for k in RULES} == pytest.approx({k: new["rules"][k] for k in RULES})


@pytest.mark.parametrize("argv, message", [
    (["--from", "{m}:resmlp", "--input-shape", "2,2,4"], "--from-depth and --to-depth"),
    (["--from", "{m}:resmlp", "--from-depth", "2", "--to-depth", "8"], "--input-shape is required"),
    (["--to", "{m}:resmlp", "--from-depth", "2", "--to-depth", "8"], "--to needs --from"),
    (["--from", "{m}:resmlp", *RESMLP, "--lr-ci", "0.2,0.3"], "must hold --lr"),
    (["--from", "{m}:resmlp", *RESMLP, "--momentum", "1"], "--momentum"),
])
def test_bad_input_is_one_line(models, argv, message, capsys):
    assert main(["transfer", "--lr", "0.1", *[a.replace("{m}", str(models)) for a in argv]]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


RES = ArchSpec(family="resnet", dim=1, depth=2, width=8, kernel=3)
TINY = Protocol("tiny-transfer", "a residual transfer study, tiny",
                studies=(Study("res", "ResNet", RES, dataset="synthetic", depths=(1, 2, 3), seeds=2, steps=10,
                               points=3, refine=0, synthetic_shape=(2, 4), lr_range=(0.01, 1.0)),),
                claims=(), transfer=TransferPlan("res", calibration=(1,), targets=(2, 3)), horizons=(),
                conditional_horizons=())


@pytest.fixture(scope="module")
def errors_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("tinyproto")
    summary = run_protocol(TINY, root / "run", workers=1, say=lambda m: None, figures=False)
    out = root / "errors.json"
    proc = subprocess.run([sys.executable, str(REPO / "validate" / "transfer_errors.py"), "--run",
                           str(root / "run"), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out, summary


def test_transfer_errors_are_keyed_by_the_run_and_widen_the_interval(errors_file, models, capsys):
    out, summary = errors_file
    runs = json.loads(out.read_text())["runs"]
    fp = fingerprint(TINY)
    assert list(runs) == [fp] and runs[fp]["kind"] == "residual"
    assert runs[fp]["rules"]["am-mup"] == summary["transfer"]["rules"]["am-mup"]["median_abs_log_error"]
    d = _transfer(capsys, "--from", f"{models}:resmlp", *RESMLP, "--lr-ci", "0.05,0.3", "--errors", str(out))
    e = runs[fp]["rules"]["am-mup"]
    c = d["confidence"]
    assert c["held_out_error"]["fingerprint"] == fp and c["held_out_error"]["median_abs_log_error"] == e
    assert c["covers_rule_error"] and any(fp in line for line in c["evidence"])
    assert d["lr_interval"][0] == pytest.approx(d["lr"] * 0.5 * math.exp(-e))
    assert d["lr_interval"][1] == pytest.approx(d["lr"] * 3 * math.exp(e))
    # a Transformer is another kind of net: no run of its kind, so the interval is widened by the largest
    # recorded error of the rule (here the residual run's), said in the record, never shrunk to the CI
    t = _transfer(capsys, "--from", f"{models}:transformer", *TRANSFORMER, "--errors", str(out))
    h = t["confidence"]["held_out_error"]
    assert h["median_abs_log_error"] == e and h["kind"] == "residual" and "no run of a transformer" in h["fallback"]
    empty = out.parent / "empty.json"
    empty.write_text(json.dumps({"runs": {}}))
    t = _transfer(capsys, "--from", f"{models}:transformer", *TRANSFORMER, "--errors", str(empty))
    assert t["confidence"]["held_out_error"] is None and t["confidence"]["held_out_error_reason"] == NO_RUN


def test_transfer_errors_refuses_a_folder_without_a_run(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "validate" / "transfer_errors.py"), "--run", str(tmp_path),
                           "--out", str(tmp_path / "e.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not a finished protocol run" in proc.stderr
    assert not (tmp_path / "e.json").exists()


def test_the_error_of_a_run_whose_held_out_nets_learn_is_preferred(errors_file, tmp_path):
    from amutheory.transfer_interval import held_out_error

    out, summary = errors_file
    runs = json.loads(out.read_text())["runs"]
    fp = fingerprint(TINY)
    rec = runs[fp]
    rows = {r["depth"]: r for r in summary["studies"][TINY.transfer.study]["rows"]}
    assert rec["learning_targets"] == [d for d in rec["targets"]
                                       if rows[d]["final_loss_at_optimum"] is not None
                                       and rows[d]["final_loss_at_optimum"] <= 0.5 * rows[d]["chance_loss"]]
    # another record of the same kind: more held-out depths, none of whose nets learn
    more = dict(rec, targets=rec["targets"] + [99, 100], learning_targets=[], rules={"am-mup": 9.0})
    learning = dict(rec, learning_targets=rec["targets"], rules={"am-mup": 0.1})
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"runs": {"a" * 16: more, "b" * 16: learning}}))
    e, _, which = held_out_error(rec["kind"], "am-mup", two)
    assert (e, which) == (0.1, "b" * 16)
    two.write_text(json.dumps({"runs": {"a" * 16: more, "b" * 16: dict(learning, learning_targets=[])}}))
    assert held_out_error(rec["kind"], "am-mup", two)[2] == "a" * 16  # none learn: the most held-out depths
