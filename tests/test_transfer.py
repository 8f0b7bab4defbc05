"""Learning-rate transfer (amutheory.transfer) and the `transfer` command: exact rule values on
nets whose depth measures are known by construction, error handling, JSON keys."""

import json
from math import comb

import pytest
import torch
from torch import nn

from amutheory.cli import main
from amutheory.spec import ArchSpec
from amutheory.transfer import RULES, depth_measures, transfer_lr


class Chain(nn.Module):
    def __init__(self, depth, width=8):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(width, width, bias=False) for _ in range(depth)])

    def forward(self, x):
        return self.layers(x)


class Res(nn.Module):
    def __init__(self, blocks, width=8):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(blocks))

    def forward(self, x):
        for b in self.blocks:
            x = x + torch.relu(b(x))
        return x


def test_power_and_chen_rules_on_chains_are_exact():
    r = transfer_lr(0.1, Chain(4), Chain(16), input_shape=(1, 8))
    assert r.reference.effective_depth == 4 and r.target.effective_depth == 16
    assert r.rules["power"] == pytest.approx(0.1 * 4**-1.5, rel=1e-12)
    # one path per chain: sum_p L_p^3 = L^3, so Chen's rule is the same power law
    assert r.rules["chen"] == pytest.approx(r.rules["power"], rel=1e-12)
    assert r.rules["depth-mup"] == pytest.approx(0.1 / 4, rel=1e-12)
    assert r.rules["completep"] == pytest.approx(0.1 / 16, rel=1e-12)
    assert set(r.rules) == set(RULES) and r.lr == r.rules["am-mup"]


def test_chen_rule_uses_the_path_sum_of_residual_blocks():
    r = transfer_lr(1.0, Res(3), Res(6), input_shape=(1, 8))
    # n residual blocks of one layer + one addition: each block's branch path is 2 longer
    assert r.reference.blocks == 3 and r.target.blocks == 6
    # every block adds 1 (the addition) on its skip path and 2 (layer + addition) on its branch, so a
    # path taking k of the n branches has length n + k: sum_p L_p^3 = sum_k C(n, k) (n + k)^3
    for n, m in ((3, r.reference), (6, r.target)):
        assert m.path_sum_cubed == sum(comb(n, k) * (n + k) ** 3 for k in range(n + 1))
    assert r.rules["chen"] == pytest.approx((r.reference.path_sum_cubed / r.target.path_sum_cubed) ** 0.5)


def test_am_mup_on_conv_specs_has_finite_depth_corrections():
    ref = ArchSpec(depth=4, width=32)
    r = transfer_lr(0.05, ref, ref.with_(depth=16))
    # the derived law: exponent -3/2 with O(1/L) corrections, so the factor differs from 4^-1.5
    factor = r.depth_factors["am-mup"]
    assert 0.5 * 4**-1.5 < factor < 2 * 4**-1.5 and factor != pytest.approx(4**-1.5, rel=1e-3)
    assert r.width_factor == 1.0


def test_width_rule_is_derived_inverse_sqrt_width():
    # s ~ F^2 R (amutheory.symbolic.primitives.width): F = 3n, R = 10/n, so eta* ~ n^(-1/2) at fixed kernel
    ref = ArchSpec(depth=4, width=32)
    r = transfer_lr(0.05, ref, ref.with_(width=64))
    assert r.width_factor == pytest.approx(0.5**0.5, rel=1e-12)
    assert r.width_rules == pytest.approx({"derived": 0.5**0.5, "fan-in": 0.5})
    assert r.rules["power"] == pytest.approx(0.05 * 0.5**0.5)
    assert any("width" in n for n in r.notes)


def test_width_rule_reads_the_readout_of_modules():
    import torch
    from torch import nn

    torch.manual_seed(0)  # the realised readouts below are random draws: fixed seed

    def mlp(n, readout_var):
        net = nn.Sequential(nn.Linear(4, n), nn.ReLU(), nn.Linear(n, n), nn.ReLU(), nn.Linear(n, 10))
        nn.init.normal_(net[-1].weight, std=readout_var**0.5)
        return net

    # muP readout (Var 1/n^2): the hidden update no longer grows with n, only F does -> factor F_r/F_t * n_t/n_r = 1
    r = transfer_lr(0.1, mlp(64, 1 / 64**2), mlp(256, 1 / 256**2), input_shape=(2, 4))
    assert r.width_factor == pytest.approx(1.0, rel=0.1)  # realised |W|^2 of 640 and 2560 draws: sd of the factor ~3%, so 10% is > 3 sd
    r = transfer_lr(0.1, mlp(64, 1 / 64), mlp(256, 1 / 256), input_shape=(2, 4))
    assert r.width_factor == pytest.approx(0.5, rel=0.1)
    assert r.width_rules["fan-in"] == pytest.approx(0.25)
    # the same readout shape: same init assumed, no sampling noise in the factor
    r = transfer_lr(0.1, mlp(64, 1 / 64), mlp(64, 1 / 64), input_shape=(2, 4))
    assert r.width_factor == 1.0


def test_resnet_and_transformer_am_mup_use_the_derived_exponent():
    res = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", width=16, spatial=8, depth=4)
    r = transfer_lr(1.0, res, res.with_(depth=16))
    assert r.depth_factors["am-mup"] == pytest.approx(0.25)  # eta* ~ K^-1 (derived)
    tf = ArchSpec(family="transformer", init="sqrt-multiplier", width=16, spatial=4, depth=2)
    r = transfer_lr(1.0, tf, tf.with_(depth=8))
    assert r.depth_factors["am-mup"] == pytest.approx(1.0)  # K^0 (derived)
    assert r.depth_factors["depth-mup"] == pytest.approx(1.0)  # the 1/sqrt(K) multiplier is Depth-muP
    assert r.target.effective_depth == 2 * 8 + 2


@pytest.mark.parametrize("lr", [0, -1.0, float("nan"), "0.1", True])
def test_bad_lr(lr):
    with pytest.raises(ValueError, match="lr"):
        transfer_lr(lr, ArchSpec(depth=2), ArchSpec(depth=4))


def test_bad_rule_and_inputs():
    with pytest.raises(ValueError, match="rule"):
        transfer_lr(0.1, ArchSpec(depth=2), ArchSpec(depth=4), rule="magic")
    with pytest.raises(ValueError, match="input_shape"):
        transfer_lr(0.1, Chain(2), Chain(4))
    with pytest.raises(TypeError, match="reference/target"):
        depth_measures("model.py:x")


def test_cli_transfer_json_keys(capsys, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from torch import nn\n"
                 "def small():\n    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(2)])\n"
                 "def deep():\n    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(8)])\n")
    assert main(["transfer", "--lr", "0.05", "--from", f"{f}:small", "--to", f"{f}:deep",
                 "--input-shape", "1,4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    # the fixed rules, and the probe (it ran: the default auto runs it where affordable, to check them)
    assert set(RULES) | {"probe"} == set(d["rules"]) and d["lr"] == d["rules"][d["rule"]]
    assert d["rule_reason"].startswith("auto: ") and d["probe"]["one_step"]["seeds"] == list(range(8))
    assert d["width_factor"] == 1.0 and set(d["width_rules"]) == {"derived", "fan-in"}
    assert d["rules"]["power"] == pytest.approx(0.05 * 4**-1.5)
    assert main(["transfer", "--lr", "0.05", "--from-depth", "4", "--to-depth", "8", "--width", "16",
                 "--rule", "power", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["rule"] == "power" and d["lr"] == d["rules"]["power"]


@pytest.mark.parametrize("argv", [
    ["transfer", "--lr", "0.1", "--from-depth", "4"],
    ["transfer", "--lr", "0.1", "--from", "a.py:x", "--to", "b.py:y"],
    ["transfer", "--lr", "-1", "--from-depth", "2", "--to-depth", "4"],
    ["transfer", "--lr", "0.1", "--from", "a.py:x"],
])
def test_cli_transfer_errors_are_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err
