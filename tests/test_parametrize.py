"""``amutheory.parametrize`` / ``amutheory.param_groups`` on models written here, as a user would
(plain PyTorch, default inits, factories taking ``depth`` and ``width``): identity at the base, the
rule's variance factors and multipliers at 4x the depth, the norm-followed branch reported, the SGD
rates equal to ``transfer``'s (a consistency check, not a claim the rule is right), real optimizer
steps with the groups."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import amutheory
from amutheory.graph import effective_depth
from amutheory.parametrization.branches import WEIGHT_ROLES
from amutheory.transfer import RULES, transfer_lr

IMAGE = (4, 3, 8, 8)
TOKENS = (2, 16, 4)
VECTOR = (4, 8)


# --------------------------------------------------------------------------- the user's models
class BasicBlock(nn.Module):
    def __init__(self, width, norm):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(width) if norm else nn.Identity()
        self.bn2 = nn.BatchNorm2d(width) if norm else nn.Identity()

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class ResNet(nn.Module):
    def __init__(self, depth, width, norm=False):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.blocks = nn.Sequential(*[BasicBlock(width, norm) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(torch.relu(self.stem(x))).mean(dim=(2, 3)))


class PreLNBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))


class Transformer(nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        self.embed = nn.Linear(TOKENS[-1], width)
        self.blocks = nn.ModuleList(PreLNBlock(width) for _ in range(depth))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x).mean(dim=1))


def resnet(depth=2, width=16):
    return ResNet(depth, width)


def bn_resnet(depth=2, width=16):
    return ResNet(depth, width, norm=True)


def transformer(depth=2, width=16):
    return Transformer(depth, width)


def mlp(depth=2, width=16):
    layers = [nn.Linear(VECTOR[-1], width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


MODELS = [(resnet, IMAGE), (bn_resnet, IMAGE), (transformer, TOKENS), (mlp, VECTOR)]
IDS = ["resnet", "bn-resnet", "transformer", "mlp"]


def build(factory, depth, width=16, seed=0):
    torch.manual_seed(seed)
    return factory(depth=depth, width=width)


def state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


# --------------------------------------------------------------------------- branches
def test_branches_and_K_follow_the_built_in_convention():
    """ResNet: one branch per block ending in conv2; pre-LN Transformer: two branches per block
    (attention -> its out_proj, MLP -> fc2), K = blocks; MLP: none."""
    found = amutheory.find_residual_branches(build(resnet, 3), IMAGE)
    assert (found.n_branches, found.K) == (3, 3)
    assert [b.last_layers for b in found.branches] == [(f"blocks.{i}.conv2",) for i in range(3)]
    assert [b.layers for b in found.branches] == [(f"blocks.{i}.conv1", f"blocks.{i}.conv2") for i in range(3)]
    found = amutheory.find_residual_branches(build(transformer, 3), TOKENS)
    assert (found.n_branches, found.K) == (6, 3)
    assert [b.last_layers[0] for b in found.branches] == [x for i in range(3) for x in
                                                          (f"blocks.{i}.attn.out_proj", f"blocks.{i}.fc2")]
    assert found.roles["blocks.0.attn.in_proj_weight"] == "hidden"
    assert (found.roles["embed.weight"], found.roles["head.weight"], found.roles["blocks.1.fc1.weight"],
            found.roles["blocks.1.ln2.weight"]) == ("input", "readout", "branch", "norm")
    assert amutheory.find_residual_branches(build(mlp, 3), VECTOR).n_branches == 0


def test_norm_followed_branch_is_reported_and_left_alone():
    model = build(bn_resnet, 8)
    before = state(model)
    report = amutheory.parametrize(model, "k-last", IMAGE, base_model=build(bn_resnet, 2))
    assert [(b.last_layers, b.norm_after) for b in report.skipped] == [((f"blocks.{i}.conv2",), f"blocks.{i}.bn2")
                                                                       for i in range(8)]
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(r.variance_factor == 1.0 for r in report.rows)
    assert "skipped: branch into add" in str(report) and "blocks.0.bn2" in str(report)


# --------------------------------------------------------------------------- identity at the base
@pytest.mark.parametrize("factory,shape", MODELS, ids=IDS)
@pytest.mark.parametrize("init", ["k-last", "k-all", "k-squared", "sqrt-multiplier", "none"])
def test_identity_at_the_base(factory, shape, init):
    """Same depth and width as the base: weights bit-identical, no hook, every multiplier exactly 1."""
    model, base = build(factory, 3, width=8), build(factory, 3, width=8, seed=1)
    x = torch.randn(shape)
    out = model(x)  # training mode: a BatchNorm moves its running statistics here, before the snapshot
    before = state(model)
    report = amutheory.parametrize(model, init, shape, base_model=base)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(model(x), out)
    assert report.alpha == 1.0 and all(r.variance_factor == 1.0 for r in report.rows)
    assert not any(m._forward_hooks for m in model.modules())
    for optimizer in (("sgd", "adam") if init == "k-last" else ()):
        groups = amutheory.param_groups(model, 0.05, base, rule="am-mup", probe=False, example_input=shape, optimizer=optimizer)
        assert [g["multiplier"] for g in groups] == [1.0] * len(groups)
        assert all(g["lr"] == 0.05 for g in groups)
        assert [g["params"][0] for g in groups] == list(model.parameters())


# --------------------------------------------------------------------------- 4x the depth
def _pooled_variance(model, names):
    w = torch.cat([model.get_parameter(n).detach().flatten().double() for n in names])
    return float(w.var()), w.numel()


#: the variance of the sample variance of uniform weights (PyTorch's default init): (kurtosis - 1) / N
UNIFORM_KURTOSIS = 9 / 5


@pytest.mark.parametrize("factory,shape,last,inner", [
    (resnet, IMAGE, "blocks.{}.conv2.weight", "blocks.{}.conv1.weight"),
    (transformer, TOKENS, "blocks.{}.fc2.weight", "blocks.{}.fc1.weight"),
], ids=["resnet", "transformer"])
@pytest.mark.parametrize("init,last_ratio,inner_ratio", [("k-last", 1 / 4, 1.0), ("k-all", 1 / 4, 1 / 4),
                                                         ("k-squared", 1 / 16, 1.0)])
def test_branch_variances_at_4x_depth(factory, shape, last, inner, init, last_ratio, inner_ratio):
    """At 4x the base's blocks, the pooled variance of the branch layers' weights over the base's (a
    different draw) is the rule's ``v(K) / v(K_base)``, within 4 standard errors of the ratio of two
    sample variances of uniform weights (``sqrt((kurtosis - 1)(1/N + 1/N_base))``); the absolute
    variance is PyTorch's ``1/(3 fan_in)`` times the same factor; layers off the branches untouched."""
    base, model = build(factory, 2, seed=1), build(factory, 8, seed=2)
    untouched = {k: v for k, v in state(model).items() if "fc" not in k and "conv" not in k and "out_proj" not in k}
    report = amutheory.parametrize(model, init, shape, base_model=base)
    assert (report.K, report.K_base) == (8, 2)
    for pattern, ratio in ((last, last_ratio), (inner, inner_ratio)):
        var, n = _pooled_variance(model, [pattern.format(i) for i in range(8)])
        var_base, n_base = _pooled_variance(base, [pattern.format(i) for i in range(2)])
        tolerance = 4 * math.sqrt((UNIFORM_KURTOSIS - 1) * (1 / n + 1 / n_base))
        assert var / var_base == pytest.approx(ratio, rel=tolerance)
        fan_in = model.get_parameter(pattern.format(0))[0].numel()
        assert var == pytest.approx(ratio / (3 * fan_in), rel=4 * math.sqrt((UNIFORM_KURTOSIS - 1) / n))
        assert {r.variance_factor for r in report.rows if r.name.endswith(pattern.format(0)[8:])} == {ratio}
    assert all(torch.equal(untouched[k], model.state_dict()[k]) for k in untouched)


def test_sqrt_multiplier_scales_the_branch_output_not_the_weights():
    base, model = build(resnet, 2), build(resnet, 8)
    before = state(model)
    x = torch.randn(2, 16, 8, 8)
    raw = model.blocks[3].conv2(x)
    report = amutheory.parametrize(model, "sqrt-multiplier", IMAGE, base_model=base)
    assert report.alpha == pytest.approx(0.5, rel=1e-15) and model.alpha == report.alpha
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.allclose(model.blocks[3].conv2(x), 0.5 * raw)
    # transfer reads model.alpha: Depth-muP's SGD rate is constant in K under its own multiplier
    groups = amutheory.param_groups(model, 0.1, base, rule="depth-mup", probe=False, example_input=IMAGE)
    assert all(g["multiplier"] == pytest.approx(1.0, rel=1e-12) for g in groups if g["role"] != "readout")


def test_multipliers_at_4x_depth_equal_the_rules_formulas():
    """ResNet at 2 and 8 blocks (effective depth = stem + additions + head = K + 2): ``power`` gives
    ``(10/4)^(-3/2)``, ``depth-mup`` ``(8/2)^(-1)`` on the weights; the readout's weight keeps its width
    rule's 1 (same width); biases kept at the base rate."""
    base, model = build(resnet, 2), build(resnet, 8)
    assert (effective_depth(base, IMAGE).effective_depth, effective_depth(model, IMAGE).effective_depth) == (4, 10)
    for rule, factor in (("power", (10 / 4) ** -1.5), ("depth-mup", 1 / 4)):
        groups = amutheory.param_groups(model, 0.1, base, rule=rule, probe=False, example_input=IMAGE)
        hidden = {g["name"]: g["multiplier"] for g in groups if g["role"] in WEIGHT_ROLES}
        assert len(hidden) == 1 + 2 * 8 and all(m == pytest.approx(factor, rel=1e-12) for m in hidden.values())
        assert [g["multiplier"] for g in groups if g["role"] in ("readout", "readout-bias")] == [1.0, 1.0]
        assert {g["multiplier"] for g in groups if g["role"] == "bias"} == {1.0}


def test_readout_multiplier_follows_its_fan_in_across_width():
    base, model = build(resnet, 2, width=16), build(resnet, 2, width=32)
    groups = amutheory.param_groups(model, 0.1, base, rule="am-mup", probe=False, example_input=IMAGE)
    readout = {g["name"]: g["multiplier"] for g in groups if g["role"] in ("readout", "readout-bias")}
    assert readout == {"head.weight": pytest.approx(16 / 32, rel=1e-15), "head.bias": 1.0}
    expected = transfer_lr(0.1, base, model, input_shape=IMAGE).lr / 0.1
    assert all(g["multiplier"] == pytest.approx(expected, rel=1e-12) for g in groups if g["role"] in WEIGHT_ROLES)


# --------------------------------------------------------------------------- consistency with transfer
@pytest.mark.parametrize("factory,shape", MODELS, ids=IDS)
def test_sgd_rates_equal_transfers_rate(factory, shape):
    """Every layer weight but the readout's gets ``transfer_lr``'s rate for reference = base, target =
    model (4x the depth, 2x the width), under every rule; biases and norm parameters the base rate."""
    base, model = build(factory, 2, width=8), build(factory, 8, width=16, seed=3)
    for rule in RULES:
        expected = transfer_lr(0.07, base, model, rule=rule, input_shape=shape).lr
        groups = amutheory.param_groups(model, 0.07, base, rule=rule, probe=False, example_input=shape)
        rates = [g["lr"] for g in groups if g["role"] in WEIGHT_ROLES]
        assert rates and all(abs(r - expected) <= 1e-12 * expected for r in rates), rule
        assert {g["lr"] for g in groups if g["role"] in ("bias", "norm", "readout-bias")} == {0.07}, rule
        assert groups.transfer.lr == expected and groups.transfer.rule == rule


def test_adam_multipliers_are_the_documented_ones():
    """Adam, default ``depth_convention="none"``: no depth factor; hidden matrices x the median fan-in
    ratio (muP's Adam table); the readout weight x its fan-in ratio; the rest x1.  ``"sgd-rule"`` (the
    old default): the rule's depth factor on all but the readout, with the old note."""
    base, model = build(transformer, 2, width=8), build(transformer, 8, width=16)
    t = transfer_lr(0.01, base, model, input_shape=TOKENS)
    depth, fan = t.depth_factors["am-mup"], t.width_rules["fan-in"]
    groups = amutheory.param_groups(model, 0.01, base, optimizer="adam", rule="am-mup", probe=False, example_input=TOKENS)
    by = {g["name"]: g["multiplier"] for g in groups}
    assert by["blocks.3.fc2.weight"] == pytest.approx(fan, rel=1e-12)
    assert by["blocks.3.attn.in_proj_weight"] == pytest.approx(fan, rel=1e-12)
    assert by["blocks.3.fc2.bias"] == 1.0 and by["embed.weight"] == 1.0 and by["blocks.3.ln1.weight"] == 1.0
    assert by["head.weight"] == pytest.approx(8 / 16, rel=1e-15) and by["head.bias"] == 1.0
    assert any("nothing derived" in n and "no depth factor" in n for n in groups.notes)
    groups = amutheory.param_groups(model, 0.01, base, optimizer="adam", rule="am-mup", probe=False, example_input=TOKENS,
                                    depth_convention="sgd-rule")
    by = {g["name"]: g["multiplier"] for g in groups}
    assert by["blocks.3.fc2.weight"] == pytest.approx(depth * fan, rel=1e-12)
    assert by["blocks.3.attn.in_proj_weight"] == pytest.approx(depth * fan, rel=1e-12)
    assert by["blocks.3.fc2.bias"] == pytest.approx(depth, rel=1e-12)
    assert by["embed.weight"] == pytest.approx(depth, rel=1e-12)
    assert by["head.weight"] == pytest.approx(8 / 16, rel=1e-15) and by["head.bias"] == 1.0
    assert any("nothing derived" in n for n in groups.notes)


# --------------------------------------------------------------------------- real steps
@pytest.mark.parametrize("factory,shape", MODELS, ids=IDS)
def test_optimizers_step_with_the_groups(factory, shape):
    base, model = build(factory, 2), build(factory, 8)
    amutheory.parametrize(model, "k-last", shape, base_model=base)
    torch.manual_seed(4)
    x, y = torch.randn(shape), torch.randint(0, 10, (shape[0],))
    for make in (lambda g: torch.optim.SGD(g, lr=1.0, momentum=0.9), lambda g: torch.optim.Adam(g, lr=1.0)):
        groups = amutheory.param_groups(model, 1e-3, base, rule="am-mup", probe=False, example_input=shape)
        opt = make(groups)
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in groups]
        before = [p.detach().clone() for p in model.parameters()]
        for _ in range(2):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        assert math.isfinite(loss.item())
        assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
    table = amutheory.param_table(groups)
    assert all(g["name"] in table for g in groups) and "multiplier" in table


def test_no_base_means_multipliers_of_one_and_the_absolute_convention():
    model = build(resnet, 4)
    w = model.blocks[0].conv2.weight.detach().clone()
    report = amutheory.parametrize(model, "k-last", IMAGE)
    assert report.K_base == 1 and torch.allclose(model.blocks[0].conv2.weight, w / 2)
    assert {g["multiplier"] for g in amutheory.param_groups(model, 0.1, rule="am-mup", probe=False, example_input=IMAGE)} == {1.0}


def test_bad_arguments_name_the_argument():
    model = build(resnet, 2)
    with pytest.raises(ValueError, match="init must be"):
        amutheory.parametrize(model, "magic", IMAGE)
    with pytest.raises(ValueError, match="example_input"):
        amutheory.parametrize(model, "k-last")
    with pytest.raises(TypeError, match="model must be"):
        amutheory.parametrize("net", "k-last", IMAGE)
    with pytest.raises(TypeError, match="example_input"):
        amutheory.param_groups(model, 0.1, model, rule="am-mup", probe=False, example_input="3,8,8")
    with pytest.raises(ValueError, match="optimizer must be"):
        amutheory.param_groups(model, 0.1, rule="am-mup", probe=False, example_input=IMAGE, optimizer="lion")
    with pytest.raises(ValueError, match="rule must be"):
        amutheory.param_groups(model, 0.1, probe=False, example_input=IMAGE, rule="magic")
    with pytest.raises(ValueError, match="lr must be"):
        amutheory.param_groups(model, -1.0, rule="am-mup", probe=False, example_input=IMAGE)
    with pytest.raises(TypeError, match="base_model must be"):
        amutheory.param_groups(model, 0.1, "base", rule="am-mup", probe=False, example_input=IMAGE)


def test_exports_are_the_packages_functions():
    from amutheory import parametrization

    assert amutheory.parametrize is parametrization.parametrize
    assert amutheory.param_groups is parametrization.param_groups
    assert amutheory.__all__.count("parametrize") == 1 and "param_groups" in amutheory.__all__
