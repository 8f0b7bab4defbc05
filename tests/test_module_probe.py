"""The one-step probe on a user's own ``nn.Module`` (``measure --model``, ``amutheory.measure(factory, ...)``).

Three models a practitioner would write, in plain PyTorch with default inits, are defined here (not in
the package): a BasicBlock ResNet for 8x8 images (Conv2d + BatchNorm2d + ReLU, identity skips, GAP,
Linear head), a pre-LN Transformer over 16 integer tokens (Embedding, LayerNorm, MultiheadAttention,
GELU MLP, Dropout, Linear head) and an MLP.  Each runs from the command line with one line of flags.
Then: a factory building the built-in conv chain gives ``measure --family conv``'s numbers; the
``resnet``/``transformer`` presets give the built-in residual net's and Transformer's; BatchNorm's
running statistics are untouched and dropout is off; the probe's first-order change matches a real SGD
step on the user's ResNet; a model ``vmap`` cannot run falls back to a loop with the same numbers;
bad input exits 2 with one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import amutheory
from amutheory.cli import main
from amutheory.graph.layers import select_layers
from amutheory.measure.module_probe import builtin_factory, draw, first_order_change, probe_module, sgd_step_change
from amutheory.spec import ArchSpec

pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")

MODELS = textwrap.dedent('''
    import torch
    from torch import nn
    from torch.nn import functional as F


    class BasicBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(out)) + x)


    class ResNet(nn.Module):
        def __init__(self, depth, width=8, classes=10):
            super().__init__()
            self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(width)
            self.blocks = nn.Sequential(*[BasicBlock(width) for _ in range(depth)])
            self.fc = nn.Linear(width, classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.bn(self.stem(x))))
            return self.fc(x.mean((2, 3)))


    def resnet(depth, width=8):
        return ResNet(depth, width)


    class Block(nn.Module):
        def __init__(self, d, heads=2, dropout=0.1):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            u = self.ln1(x)
            a, _ = self.attn(u, u, u, need_weights=False)
            x = x + self.drop(a)
            return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


    class Transformer(nn.Module):
        def __init__(self, depth, width=16, vocab=32, tokens=16, classes=10, dropout=0.1):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.pos = nn.Parameter(0.02 * torch.randn(tokens, width))
            self.blocks = nn.ModuleList(Block(width, dropout=dropout) for _ in range(depth))
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, classes)

        def forward(self, idx):
            x = self.embed(idx) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x).mean(1))


    def transformer(depth, width=16):
        return Transformer(depth, width)


    def mlp(depth, width=16):
        layers = [nn.Linear(12, width), nn.ReLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(width, 10))


    def depth_only(depth):
        return mlp(depth)


    def conv_chain(depth, width):
        """The built-in conv chain drawn from torch's global generator's stream (its layers' own default
        init, which the chain overwrites, is drawn from a copy and discarded)."""
        from amutheory.measure.models import build_model
        from amutheory.spec import ArchSpec

        gen = torch.Generator()
        gen.set_state(torch.get_rng_state())
        net = build_model(ArchSpec(family="conv", depth=depth, width=width), generator=gen)
        torch.set_rng_state(gen.get_state())
        return net
''')

#: each model's flags (one line) and the names of the calls counted at depth K by default
RUNS = {
    "resnet": (["--input-shape", "8,3,8,8", "--width", "8"],
               lambda K: ["stem"] + [f"blocks.{k}.conv{i}" for k in range(K) for i in (1, 2)]),
    "transformer": (["--input-shape", "4,16", "--input-kind", "tokens", "--vocab", "32", "--width", "16"],
                    lambda K: [f"blocks.{k}.{m}" for k in range(K) for m in ("attn", "fc1", "fc2")]),
    "mlp": (["--input-shape", "8,12", "--width", "16"], lambda K: [str(2 * l) for l in range(K)]),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The models' file and the module it defines."""
    import importlib.util

    path = tmp_path_factory.mktemp("user") / "models.py"
    path.write_text(MODELS)
    spec = importlib.util.spec_from_file_location("user_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def _run_json(argv, capsys) -> dict:
    code = main(argv + ["--json", "--compact", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    return json.loads(out.out)


@pytest.mark.parametrize("name", list(RUNS))
def test_user_model_runs_from_one_line(name, models):
    """``python -m amutheory measure --model FILE:FACTORY ...``: finite positive s_l at every counted call,
    the documented calls counted, an effective depth per depth and both fitted exponents."""
    path, _ = models
    flags, expected = RUNS[name]
    proc = subprocess.run([sys.executable, "-m", "amutheory", "measure", "--model", f"{path}:{name}", *flags,
                           "--depths", "2,4", "--seeds", "4", "--json", "--compact", "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    d = json.loads(proc.stdout)
    assert d["model"] == f"{path}:{name}" and d["depths"] == [2, 4] and d["seeds"] == [0, 1, 2, 3]
    assert d["layers"] == [expected(2), expected(4)]
    assert d["layers_counted"] == [len(expected(2)), len(expected(4))]
    for profile, names in zip(d["per_layer_mean"], d["layers"]):
        assert len(profile) == len(names)
        assert all(np.isfinite(v) and v > 0 for v in profile)
    assert all(np.isfinite(v) and v > 0 for v in d["s_bar_mean"] + d["eta_star_mean"])
    assert all(isinstance(e, float) and e > 0 for e in d["effective_depths"]), d["notes"]
    assert d["effective_depths"][1] > d["effective_depths"][0]
    for key in ("fitted_exponent_mean", "fitted_exponent_effective_mean", "fitted_exponent_effective_geo"):
        assert np.isfinite(d[key]) and len(d[f"{key}_ci"]) == 2
    assert d["vectorised"] == [True, True] and d["dtype"] == "float64" and "manual_seed" in d["seeding"]


def test_factory_of_the_builtin_conv_chain_equals_measure_family_conv(models, capsys):
    """The seeding rule reproduces the built-in probe's draws: the same numbers to rounding."""
    path, _ = models
    common = ["--depths", "2,4", "--seeds", "4", "--width", "8"]
    user = _run_json(["measure", "--model", f"{path}:conv_chain", "--input-shape", "8,3,16"] + common, capsys)
    builtin = _run_json(["measure", "--family", "conv", "--spatial", "16"] + common, capsys)
    assert user["layers"] == [["convs.0", "convs.1"], [f"convs.{l}" for l in range(4)]]
    for key in ("s_bar_mean", "s_bar_geo", "eta_star_mean", "fitted_exponent_mean"):
        np.testing.assert_allclose(user[key], builtin[key], rtol=1e-10, atol=0)
    for a, b in zip(user["per_layer_mean"], builtin["per_layer_mean"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=0)


@pytest.mark.parametrize("spec, preset", [
    (ArchSpec(family="resnet", depth=2, width=6, spatial=6, batch=3, branch="preact"), "resnet"),
    (ArchSpec(family="resnet", depth=2, width=6, spatial=6, batch=3, branch="conv-mlp"), "resnet"),
    (ArchSpec(family="transformer", depth=2, width=8, spatial=5, batch=3, activation="gelu"), "transformer"),
], ids=["resnet-preact", "resnet-conv-mlp", "transformer"])
def test_presets_reproduce_the_builtin_conventions(spec, preset):
    """``layers="resnet"``/``"transformer"`` count the tensors the built-in nets' ``preactivations``
    return (the inputs of the activation functions): the same ``s_l``, seed by seed, layer by layer."""
    depths, seeds = [2, 3], [0, 1, 2]
    builtin = amutheory.measure(spec, depths, seeds)
    user = amutheory.measure(builtin_factory(spec), depths, seeds, input_shape=(spec.batch, 3, spec.spatial),
                             width=spec.width, layers=preset)
    for d in depths:
        np.testing.assert_allclose(user.profiles[d], builtin.profiles[d], rtol=1e-10, atol=0)


def test_batchnorm_running_statistics_untouched_and_dropout_off(models):
    """A module given directly: its BatchNorm buffers, parameters and mode are exactly as before; the
    probe's BatchNorm uses batch statistics (the result differs from eval-mode statistics) and dropout
    changes nothing (a Transformer with dropout 0.5 gives the numbers of the same weights without it)."""
    _, m = models
    torch.manual_seed(3)
    net = m.resnet(2, 6).double()
    net.bn.running_mean.add_(0.5)  # statistics a trained model would carry
    before = {k: v.clone() for k, v in net.state_dict().items()}
    res = amutheory.measure(net, [2], [0, 1, 2], input_shape=(4, 3, 8, 8))
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert net.training and all(np.isfinite(res.profiles[2]).ravel())
    frozen = amutheory.measure(net.eval(), [2], [0, 1, 2], input_shape=(4, 3, 8, 8))
    np.testing.assert_allclose(frozen.profiles[2], res.profiles[2], rtol=1e-12)  # eval mode is not used

    def factory(p):
        return lambda depth, width: m.Transformer(depth, width, dropout=p)

    kw = dict(input_shape=(3, 16), width=8, input_kind="tokens", vocab=32)
    wet = amutheory.measure(factory(0.5), [2], [0, 1], **kw)
    dry = amutheory.measure(factory(0.0), [2], [0, 1], **kw)
    np.testing.assert_allclose(wet.profiles[2], dry.profiles[2], rtol=1e-12, atol=0)


def test_first_order_change_matches_a_real_sgd_step(models):
    """On the user's ResNet (batch-statistics BatchNorm): ``|| Delta h_l / eta - dh_l || / || dh_l ||``
    is O(eta) (drops ~10x from eta to eta/10), and the vectorised probe's ``s_l`` is ``mean(dh_l^2)``."""
    _, m = models
    d = draw(lambda: m.resnet(2, 6), 5, (4, 3, 8, 8))
    calls = select_layers(d.model, d.x)
    dh = first_order_change(d.model, calls, d.x, d.r)
    errors = []
    for eta in (1e-4, 1e-5):
        step = sgd_step_change(d.model, calls, d.x, d.r, eta)
        errors.append(max(float((s / eta - f).norm() / f.norm()) for s, f in zip(step, dh)))
    assert errors[1] < 1e-3 and errors[1] < errors[0] / 5, errors
    res = probe_module(lambda: m.resnet(2, 6), [5, 6], (4, 3, 8, 8))
    np.testing.assert_allclose(res.s[0], [float(f.pow(2).mean()) for f in dh], rtol=1e-10)


class _ItemScaled(torch.nn.Module):
    """A model ``vmap`` cannot run (it reads a number out of a tensor with ``.item()``)."""

    def __init__(self, depth, width):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(5 if i == 0 else width, width) for i in range(depth))
        self.head = torch.nn.Linear(width, 3)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.head(x) / (1.0 + 0.0 * x.detach().abs().max().item())


def test_a_model_vmap_cannot_run_falls_back_to_a_loop():
    loop = amutheory.measure(_ItemScaled, [2, 3], [0, 1, 2], input_shape=(4, 5), width=6)
    assert not any(loop.vectorised.values()) and "one at a time" in loop.notes[0]
    reference = amutheory.measure(lambda depth, width: _Plain(depth, width), [2, 3], [0, 1, 2], input_shape=(4, 5),
                                  width=6)
    assert all(reference.vectorised.values())
    for d in (2, 3):
        np.testing.assert_allclose(loop.profiles[d], reference.profiles[d], rtol=1e-10)


class _Plain(_ItemScaled):
    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.head(x)


@pytest.mark.parametrize("flags, needle", [
    (["--model", "{path}:mlp", "--depths", "2"], "--input-shape is required"),
    (["--model", "{path}:transformer", "--input-shape", "4,16", "--input-kind", "tokens", "--depths", "2"], "--vocab"),
    (["--model", "{path}:depth_only", "--input-shape", "8,12", "--width", "8", "--depths", "2"], "width="),
    (["--model", "{path}:mlp", "--input-shape", "8,5", "--depths", "2"], "forward failed"),
    (["--model", "{path}:mlp", "--input-shape", "8,12", "--depths", "2", "--layers", "Conv2d"], "--layers"),
    (["--model", "{path}:mlp", "--input-shape", "8,12", "--depths", "2", "--kernel", "5"], "--kernel"),
    (["--model", "{path}:nothing", "--input-shape", "8,12", "--depths", "2"], "no attribute"),
    (["--depths", "2", "--input-shape", "8,12"], "--input-shape is an option of --model"),
])
def test_bad_input_exits_2_with_one_line(flags, needle, models, capsys):
    path, _ = models
    code = main(["measure", "--seeds", "2", "--quiet"] + [f.format(path=path) for f in flags])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and needle in err[0], err


def test_the_depth_only_factory_runs_without_width(models):
    """Without ``width`` the factory is called ``FACTORY(depth=L)`` (its own default width)."""
    _, m = models
    res = amutheory.measure(m.depth_only, [2], [0, 1], input_shape=(8, 12))
    assert res.layers[2] == ["0", "2"] and res.width is None


def test_api_refuses_module_options_for_a_spec():
    spec = ArchSpec(depth=2, width=4, spatial=4, batch=2)
    with pytest.raises(ValueError, match="input_shape"):
        amutheory.measure(spec, [2], [0, 1], input_shape=(2, 3, 4))
    with pytest.raises(TypeError, match="spec must be"):
        amutheory.measure("conv", [2], [0, 1])
    with pytest.raises(ValueError, match="input_shape is required"):
        amutheory.measure(lambda depth: torch.nn.Linear(3, 2), [2], [0, 1])



def test_layers_by_preset_type_and_pattern(models):
    """``layers``: the ResNet preset counts the ReLU inputs (the stem's, and two per BasicBlock: ``BN(conv1 x)``
    and ``BN(conv2 ...) + x``); a type name and a name pattern select those modules' calls."""
    _, m = models
    kw = dict(input_shape=(4, 3, 8, 8), width=4)
    preset = amutheory.measure(m.resnet, [2], [0, 1], layers="resnet", **kw)
    assert preset.layers[2] == ["(model):relu"] + [f"blocks.{k}:relu" for k in range(2) for _ in (1, 2)]
    by_type = amutheory.measure(m.resnet, [2], [0, 1], layers=["Linear"], **kw)
    assert by_type.layers[2] == ["fc"]
    by_name = amutheory.measure(m.resnet, [2], [0, 1], layers=["blocks.*.conv1"], **kw)
    assert by_name.layers[2] == ["blocks.0.conv1", "blocks.1.conv1"]
    default = amutheory.measure(m.resnet, [2], [0, 1], **kw)
    index = default.layers[2].index("blocks.1.conv1")  # the same call, the same s_l, whichever way it is chosen
    np.testing.assert_allclose(by_name.profiles[2][:, 1], default.profiles[2][:, index], rtol=1e-10)


class _TwoOutputs(torch.nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        self.a, self.b = torch.nn.Linear(5, width), torch.nn.Linear(width, 3)

    def forward(self, x):
        return {"logits": self.b(torch.relu(self.a(x)))}


def test_a_forward_that_returns_no_tensor_is_refused():
    with pytest.raises(TypeError, match="one floating-point tensor"):
        amutheory.measure(_TwoOutputs, [2], [0, 1], input_shape=(4, 5), width=4)


WIDE = """
from torch import nn


def make(depth, width=512):
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)], nn.Linear(width, 10))
"""


def test_a_probe_too_big_for_memory_is_refused_before_any_work(tmp_path, capsys):
    """The estimate (parameters x 2 + module outputs x 3, per seed of a chunk, scaled to the deepest depth) is
    checked against the free memory at the smallest depth's build, before the probe runs."""
    from amutheory.preflight import module_probe_bytes

    (tmp_path / "wide.py").write_text(WIDE)
    code = main(["measure", "--model", f"{tmp_path / 'wide.py'}:make", "--input-shape", "4096,512",
                 "--depths", "1,64", "--seeds", "16"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "needs ~" in err[0] and "depth 64" in err[0]
    net = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10))
    x = torch.zeros(4, 512)
    expected = 16 * 8 * (2 * (512 * 512 + 512 + 512 * 10 + 10) + 3 * (4 * 512 + 4 * 10)) * 64 / 1
    assert module_probe_bytes(net, x, 8, 1, 64, 16) == expected
