"""Learning-rate groups by role (issue 47, part 4): ``amutheory.param_groups`` and the thin
constructors ``amutheory.optim.SGD``/``Adam``/``AdamW``, on models written here as a user would (a
pre-norm residual MLP with LayerNorm and GELU, a ViT-like net with a cls token, position embedding and
layer scale, a BatchNorm ResNet with projection shortcuts):

* every parameter's role read off the model (and off the traced graph where names say nothing);
* SGD: layer weights at ``transfer_lr``'s rate, the readout at its fan-in ratio, every other role kept at
  the base rate, with the rule's words in ``why``;
* Adam: ``none`` (muP's width table, no depth factor), ``depth-mup`` ``(K/K_base)^(-1/2)``, ``completep``
  ``(K/K_base)^(-1)``, ``sgd-rule`` (the old default); the residual conventions refused for a chain;
* the groups survive ``torch.optim.lr_scheduler``; real steps move the parameters; no base = plain SGD;
* the notes name the model's activation; the mismatches are ``transfer``'s; bad input named.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

import amutheory
import amutheory.optim
from amutheory.parametrization.branches import ROLES, WEIGHT_ROLES
from amutheory.parametrization.groups import HIDDEN_MATRIX_ROLES, ParamGroups
from amutheory.transfer import transfer_lr, transfer_with_interval

VECTOR = (4, 8)
PATCHES = (2, 4, 12)
IMAGE = (2, 3, 8, 8)
KEPT = ("readout-bias", "norm", "bias", "embedding", "position", "layer-scale", "other")


# --------------------------------------------------------------------------- the user's models
class PreNormBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.fc1, self.fc2 = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class ResMLP(nn.Module):
    def __init__(self, depth=2, width=16):
        super().__init__()
        self.inp = nn.Linear(VECTOR[-1], width)
        self.blocks = nn.Sequential(*[PreNormBlock(width) for _ in range(depth)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.ln(self.blocks(self.inp(x))))


class ViTBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)
        self.gamma1 = nn.Parameter(1e-6 * torch.ones(width))
        self.gamma2 = nn.Parameter(1e-6 * torch.ones(width))

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v
        x = x + self.gamma1 * self.proj(a)
        return x + self.gamma2 * self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    def __init__(self, depth=2, width=16):
        super().__init__()
        self.patch = nn.Linear(PATCHES[-1], width)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, PATCHES[1] + 1, width))
        self.blocks = nn.ModuleList(ViTBlock(width) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = self.patch(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


class Bottleneck(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout)
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout)) if cin != cout
                         else nn.Identity())

    def forward(self, x):
        return torch.relu(self.shortcut(x) + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class BNResNet(nn.Module):
    def __init__(self, depth=2, width=4):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.blocks = nn.Sequential(Bottleneck(width, 2 * width), *[Bottleneck(2 * width, 2 * width)
                                                                    for _ in range(depth - 1)])
        self.head = nn.Linear(2 * width, 10)

    def forward(self, x):
        return self.head(self.blocks(torch.relu(self.stem(x))).mean(dim=(2, 3)))


class Unnamed(nn.Module):
    """Free parameters whose names say nothing: the traced graph alone tells their roles."""

    def __init__(self, depth=2, width=8):
        super().__init__()
        self.tok = nn.Embedding(20, width)
        self.t = nn.Parameter(torch.zeros(5, width))      # added to activations: position
        self.c = nn.Parameter(torch.zeros(width))         # 1-D, added: bias
        self.a = nn.ParameterList(nn.Parameter(torch.ones(width)) for _ in range(depth))  # x branch: layer scale
        self.w = nn.ParameterList(nn.Parameter(torch.randn(width, width) / width) for _ in range(depth))
        self.b = nn.ParameterList(nn.Parameter(torch.zeros(width)) for _ in range(depth))
        self.head = nn.Linear(width, 10)
        # never used in the forward pass: named by their names and shapes
        self.layer_scale = nn.Parameter(torch.ones(width, 1, 1))
        self.pos_table = nn.Parameter(torch.zeros(7, width))
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.misc = nn.Parameter(torch.zeros(3, 4))

    def forward(self, x):
        h = self.tok(x.long()) + self.t + self.c
        for a, w, b in zip(self.a, self.w, self.b):
            h = h + a * torch.relu(F.linear(h, w, b))
        return self.head(h.mean(1))


class Chain(nn.Module):
    def __init__(self, depth=2, width=16):
        super().__init__()
        layers = [nn.Linear(VECTOR[-1], width), nn.ReLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.Linear(width, 10))

    def forward(self, x):
        return self.net(x)


MODELS = [(ResMLP, VECTOR, 16), (ViT, PATCHES, 16), (BNResNet, IMAGE, 4)]
IDS = ["pre-norm-mlp", "vit", "bn-resnet"]


def build(cls, depth, width, seed=0):
    torch.manual_seed(seed)
    return cls(depth=depth, width=width)


def roles_of(groups) -> dict:
    return {g["name"]: g["role"] for g in groups}


# --------------------------------------------------------------------------- roles
def test_roles_of_the_pre_norm_residual_mlp():
    roles = amutheory.find_residual_branches(build(ResMLP, 2, 16), VECTOR).roles
    assert roles["inp.weight"] == "input" and roles["inp.bias"] == "bias"
    for i in range(2):
        assert (roles[f"blocks.{i}.ln.weight"], roles[f"blocks.{i}.ln.bias"]) == ("norm", "norm")
        assert (roles[f"blocks.{i}.fc1.weight"], roles[f"blocks.{i}.fc2.weight"]) == ("branch", "branch-last")
        assert roles[f"blocks.{i}.fc1.bias"] == roles[f"blocks.{i}.fc2.bias"] == "bias"
    assert (roles["ln.weight"], roles["head.weight"], roles["head.bias"]) == ("norm", "readout", "readout-bias")
    assert set(roles.values()) <= set(ROLES)


def test_roles_of_the_vit_position_cls_and_layer_scale():
    roles = amutheory.find_residual_branches(build(ViT, 2, 16), PATCHES).roles
    assert roles["cls_token"] == roles["pos_embed"] == "position"
    assert (roles["patch.weight"], roles["patch.bias"]) == ("input", "bias")
    for i in range(2):
        assert roles[f"blocks.{i}.gamma1"] == roles[f"blocks.{i}.gamma2"] == "layer-scale"
        assert (roles[f"blocks.{i}.qkv.weight"], roles[f"blocks.{i}.proj.weight"]) == ("branch", "branch-last")
        assert (roles[f"blocks.{i}.fc1.weight"], roles[f"blocks.{i}.fc2.weight"]) == ("branch", "branch-last")
        assert roles[f"blocks.{i}.ln1.weight"] == roles[f"blocks.{i}.ln2.bias"] == "norm"
    assert (roles["norm.weight"], roles["head.weight"], roles["head.bias"]) == ("norm", "readout", "readout-bias")


def test_roles_of_the_batchnorm_resnet_with_projection_shortcut():
    found = amutheory.find_residual_branches(build(BNResNet, 3, 4), IMAGE)
    roles = found.roles
    assert found.K == 3 and (roles["stem.weight"], roles["stem.bias"]) == ("input", "bias")
    assert roles["blocks.0.shortcut.0.weight"] == "hidden"  # the projection: the skip side
    assert roles["blocks.0.shortcut.1.weight"] == roles["blocks.0.shortcut.1.bias"] == "norm"
    for i in range(3):  # conv2 -> bn2 -> add: norm-followed, so conv2 is a branch layer, not the last
        assert (roles[f"blocks.{i}.conv1.weight"], roles[f"blocks.{i}.conv2.weight"]) == ("branch", "branch")
        assert roles[f"blocks.{i}.bn1.weight"] == roles[f"blocks.{i}.bn2.bias"] == "norm"
    assert (roles["head.weight"], roles["head.bias"]) == ("readout", "readout-bias")


def test_roles_from_the_traced_graph_when_names_say_nothing():
    roles = amutheory.find_residual_branches(build(Unnamed, 2, 8), (2, 5)).roles
    assert roles["tok.weight"] == "embedding"
    assert (roles["t"], roles["c"]) == ("position", "bias")
    assert roles["a.0"] == roles["a.1"] == "layer-scale"
    assert roles["w.0"] == roles["w.1"] == "branch-last" and roles["b.0"] == roles["b.1"] == "bias"
    # unused: by name and shape
    assert (roles["layer_scale"], roles["pos_table"], roles["cls"], roles["misc"]) == (
        "layer-scale", "position", "position", "other")


# --------------------------------------------------------------------------- SGD
@pytest.mark.parametrize("cls,shape,width", MODELS, ids=IDS)
def test_sgd_multipliers_per_role(cls, shape, width):
    """Layer weights: transfer's rate (4x the depth... here 2 -> 6, 2x the width); the readout weight
    its fan-in ratio; every other role kept at the base rate, and ``why`` says so."""
    base, model = build(cls, 2, width), build(cls, 6, 2 * width, seed=1)
    lr = 0.05
    groups = amutheory.param_groups(model, lr, base, rule="am-mup", probe=False, example_input=shape)
    expected = transfer_lr(lr, base, model, input_shape=shape).lr / lr
    readout = base.head.weight.shape[1] / model.head.weight.shape[1]
    seen = set()
    for g in groups:
        seen.add(g["role"])
        if g["role"] in WEIGHT_ROLES:
            assert g["multiplier"] == pytest.approx(expected, rel=1e-12) and "am-mup" in g["why"]
        elif g["role"] == "readout":
            assert g["multiplier"] == pytest.approx(readout, rel=1e-15) and "fan-in ratio" in g["why"]
        else:
            assert g["role"] in KEPT and g["multiplier"] == 1.0 and g["lr"] == lr
            assert "kept at the base rate" in g["why"] and "nothing is derived" in g["why"]
        assert g["lr"] == pytest.approx(lr * g["multiplier"], rel=1e-15)
    assert {"norm", "readout", "readout-bias"} <= seen
    by_role = groups.by_role()
    assert sum(r["count"] for r in by_role.values()) == len(groups)
    assert all(r["multiplier"] == 1.0 for role, r in by_role.items() if role in KEPT)
    table = groups.table()
    assert table.index("by role:") < table.index("parameter")
    assert all(w in table for w in ("role", "shape", "multiplier", "lr", "why"))
    assert all(g["name"] in table for g in groups)
    assert amutheory.param_table(list(groups)).count("\n") == len(groups) + 1  # a plain list: rows only


def test_the_vits_roles_in_the_table_and_their_rates():
    base, model = build(ViT, 2, 16), build(ViT, 8, 16)
    groups = amutheory.param_groups(model, 0.1, base, rule="am-mup", probe=False, example_input=PATCHES)
    by_role = groups.by_role()
    assert by_role["layer-scale"]["count"] == 16 and by_role["position"]["count"] == 2
    assert by_role["layer-scale"]["multiplier"] == by_role["position"]["multiplier"] == 1.0
    assert "position embeddings" in by_role["position"]["why"] and "layer-scale" in by_role["layer-scale"]["why"]
    assert by_role["branch"]["multiplier"] == by_role["branch-last"]["multiplier"] < 1


# --------------------------------------------------------------------------- Adam
def test_adam_conventions_on_the_residual_mlp():
    """``none``: hidden matrices x F_base/F_model, input x1, readout its fan-in ratio, no depth factor;
    ``depth-mup``/``completep``: the hidden matrices also x (K/K_base)^(-1/2) / ^(-1), exactly."""
    base, model = build(ResMLP, 2, 16), build(ResMLP, 6, 32)
    fan = transfer_lr(0.01, base, model, input_shape=VECTOR).width_rules["fan-in"]
    assert fan == pytest.approx(16 / 32)  # the median hidden fan-in doubles with the width
    mult = {}
    for conv in ("none", "depth-mup", "completep", "sgd-rule"):
        groups = amutheory.param_groups(model, 0.01, base, optimizer="adam", rule="am-mup", probe=False, example_input=VECTOR,
                                        depth_convention=conv)
        assert groups.depth_convention == conv
        mult[conv] = {g["name"]: g["multiplier"] for g in groups}
        by = groups.by_role()
        kept = ("readout-bias",) if conv == "sgd-rule" else ("norm", "bias", "readout-bias")  # the old default:
        assert all(by[r]["multiplier"] == 1.0 for r in kept)  # the rule's depth factor on all but the readout
        assert mult[conv]["head.weight"] == pytest.approx(16 / 32, rel=1e-15)
    none, dmup, cp = mult["none"], mult["depth-mup"], mult["completep"]
    assert none["inp.weight"] == dmup["inp.weight"] == cp["inp.weight"] == 1.0
    for name in ("blocks.3.fc1.weight", "blocks.3.fc2.weight"):
        assert none[name] == pytest.approx(fan, rel=1e-15)
        assert dmup[name] / none[name] == pytest.approx((6 / 2) ** -0.5, rel=1e-15)
        assert cp[name] / none[name] == pytest.approx((6 / 2) ** -1, rel=1e-15)
    depth = transfer_lr(0.01, base, model, input_shape=VECTOR).depth_factors["am-mup"]
    assert mult["sgd-rule"]["blocks.3.fc2.weight"] == pytest.approx(depth * fan, rel=1e-12)
    assert mult["sgd-rule"]["blocks.3.ln.weight"] == pytest.approx(depth, rel=1e-12)


def test_adam_depth_mup_words_and_notes():
    base, model = build(ViT, 2, 16), build(ViT, 8, 16)
    groups = amutheory.param_groups(model, 1e-3, base, optimizer="adamw", rule="am-mup", probe=False, example_input=PATCHES,
                                    depth_convention="depth-mup")
    why = groups.by_role()["branch-last"]["why"]
    assert "Yang et al. 2023, Tensor Programs VI" in why and "not derived here" in why and "(8/2)^(-0.5)" in why
    assert groups.by_role()["branch-last"]["multiplier"] == pytest.approx(0.5, rel=1e-15)
    assert not any(n.startswith("am-mup") for n in groups.notes)  # no rule's depth factor is applied
    assert any("nothing derived for Adam" in n for n in groups.notes)
    cp = amutheory.param_groups(model, 1e-3, base, optimizer="adam", rule="am-mup", probe=False, example_input=PATCHES,
                                depth_convention="completep")
    assert cp.by_role()["branch"]["multiplier"] == pytest.approx(0.25, rel=1e-15)
    assert "Dey et al. 2025" in cp.by_role()["branch"]["why"]


def test_residual_conventions_are_refused_for_a_chain():
    for conv in ("depth-mup", "completep"):
        with pytest.raises(ValueError, match="convention for residual nets"):
            amutheory.param_groups(build(Chain, 6, 16), 1e-3, build(Chain, 2, 16), optimizer="adam",
                                   example_input=VECTOR, depth_convention=conv)
        with pytest.raises(ValueError, match="base model has no residual branch"):
            amutheory.optim.Adam(build(ResMLP, 6, 16), 1e-3, build(Chain, 2, 16), rule="am-mup", probe=False, example_input=VECTOR,
                                 depth_convention=conv)
    groups = amutheory.param_groups(build(Chain, 6, 16), 1e-3, build(Chain, 2, 16), optimizer="adam",
                                    example_input=VECTOR)  # "none" needs no K
    assert {g["multiplier"] for g in groups} == {1.0}


# --------------------------------------------------------------------------- schedulers and steps
SCHEDULERS = {
    "step": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.3),
    "lambda": lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1 / (1 + t)),
    "cosine": lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10),
}


@pytest.mark.parametrize("make", ["sgd", "adam"])
@pytest.mark.parametrize("schedule", sorted(SCHEDULERS))
def test_groups_survive_schedulers(schedule, make):
    base, model = build(ResMLP, 2, 16), build(ResMLP, 6, 32)
    lr = 0.02
    if make == "sgd":
        opt = amutheory.optim.SGD(model, lr, base, rule="am-mup", probe=False, example_input=VECTOR, momentum=0.9)
    else:
        opt = amutheory.optim.Adam(model, lr, base, rule="am-mup", probe=False, example_input=VECTOR, depth_convention="depth-mup")
    multipliers = [g["multiplier"] for g in opt.amutheory_groups]
    assert len(set(multipliers)) >= 3  # weights, readout, kept: the test has something to keep apart
    sched = SCHEDULERS[schedule](opt)
    x, y = torch.randn(VECTOR), torch.randint(0, 10, (VECTOR[0],))
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()
    factor = sched.get_last_lr()[0] / opt.param_groups[0]["initial_lr"]
    assert factor < 1  # the schedule moved
    for g, m in zip(opt.param_groups, multipliers):
        assert g["initial_lr"] == pytest.approx(lr * m, rel=1e-15)
        assert g["lr"] / (lr * factor) == pytest.approx(m, rel=1e-9), g["name"]


@pytest.mark.parametrize("make", [
    lambda m, b: amutheory.optim.SGD(m, 0.05, b, rule="am-mup", probe=False, example_input=PATCHES, momentum=0.9, nesterov=True),
    lambda m, b: amutheory.optim.Adam(m, 1e-3, b, rule="am-mup", probe=False, example_input=PATCHES, depth_convention="completep"),
    lambda m, b: amutheory.optim.AdamW(m, 1e-3, b, rule="am-mup", probe=False, example_input=PATCHES),
], ids=["sgd", "adam", "adamw"])
def test_a_real_step_moves_the_parameters(make):
    base, model = build(ViT, 2, 16), build(ViT, 4, 16)
    opt = make(model, base)
    assert isinstance(opt, torch.optim.Optimizer) and isinstance(opt.amutheory_groups, ParamGroups)
    assert [g["params"][0] for g in opt.param_groups] == list(model.parameters())
    before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(2)
    x, y = torch.randn(PATCHES), torch.randint(0, 10, (PATCHES[0],))
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    assert math.isfinite(loss.item())
    moved = [not torch.equal(b, p) for b, p in zip(before, model.parameters())]
    assert sum(moved) >= len(moved) // 2, [g["name"] for g, m in zip(opt.param_groups, moved) if not m]
    if not isinstance(opt, torch.optim.SGD):  # Adam moves every parameter with a gradient by about its rate
        assert all(moved)


def test_sgd_without_a_base_is_plain_sgd():
    model = build(ResMLP, 3, 16)
    twin = copy.deepcopy(model)
    opt = amutheory.optim.SGD(model, 0.1, rule="am-mup", probe=False, example_input=VECTOR, momentum=0.9, weight_decay=1e-4)
    plain = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    assert {g["multiplier"] for g in opt.param_groups} == {1.0} and {g["lr"] for g in opt.param_groups} == {0.1}
    x, y = torch.randn(VECTOR), torch.randint(0, 10, (VECTOR[0],))
    for o, m in ((opt, model), (plain, twin)):
        for _ in range(3):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
            o.step()
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters()))
    assert "no base_model" in opt.amutheory_groups.table()


# --------------------------------------------------------------------------- notes and mismatches
def test_notes_name_the_activation_and_mismatches_are_transfers():
    base, model = build(ResMLP, 2, 16), build(ResMLP, 6, 16)
    groups = amutheory.param_groups(model, 0.05, base, rule="am-mup", probe=False, example_input=VECTOR, momentum=0.9)
    am = [n for n in groups.notes if n.startswith("am-mup")]
    assert am and all("the model uses GELU" in n and "MLP-limit ReLU constants" not in n for n in am)
    res = transfer_with_interval(0.05, base, model, rule="am-mup", input_shape=VECTOR, momentum=0.9)
    assert groups.mismatches == res.confidence["mismatches"] and groups.mismatches
    assert {m["assumption"] for m in groups.mismatches} >= {"activation", "norm layers", "momentum"}
    table = groups.table()
    assert table.count("\nmismatch: ") == len(groups.mismatches)
    power = amutheory.param_groups(model, 0.05, base, rule="power", probe=False, example_input=VECTOR)
    assert not any(n.startswith("am-mup") for n in power.notes)  # only the notes of the rule used


# --------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument():
    model, base = build(ResMLP, 2, 16), build(ResMLP, 2, 16)
    for make in (amutheory.optim.SGD, amutheory.optim.Adam, amutheory.optim.AdamW):
        with pytest.raises(ValueError, match="lr must be"):
            make(model, 0.0, base, example_input=VECTOR)
        with pytest.raises(ValueError, match="lr must be"):
            make(model, True, example_input=VECTOR)
        with pytest.raises(TypeError, match="model must be"):
            make("model", 0.1, example_input=VECTOR)
        with pytest.raises(TypeError, match="base_model must be"):
            make(model, 0.1, "base", example_input=VECTOR)
        with pytest.raises(ValueError, match="example_input"):
            make(model, 0.1, base)
        with pytest.raises(ValueError, match="rule must be"):
            make(model, 0.1, base, example_input=VECTOR, rule="magic")
    for bad in ("muP", None, 1):
        with pytest.raises(ValueError, match="depth_convention must be"):
            amutheory.optim.Adam(model, 0.1, base, rule="am-mup", probe=False, example_input=VECTOR, depth_convention=bad)
    with pytest.raises(ValueError, match="depth_convention 'depth-mup' is an Adam convention"):
        amutheory.param_groups(model, 0.1, base, rule="am-mup", probe=False, example_input=VECTOR, depth_convention="depth-mup")
    with pytest.raises(ValueError, match="momentum must be"):
        amutheory.optim.SGD(model, 0.1, base, rule="am-mup", probe=False, example_input=VECTOR, momentum=1.5)


def test_optim_is_served_lazily():
    assert "optim" in dir(amutheory) and "optim" in amutheory.__all__
    assert amutheory.optim.SGD is amutheory.optim.__dict__["SGD"]


# --------------------------------------------------------------------------- property
@settings(max_examples=6, deadline=None)
@given(base_depth=st.integers(1, 3), depth=st.integers(1, 5), base_width=st.sampled_from([8, 12, 16]),
       width=st.sampled_from([8, 16, 24]), lr=st.floats(1e-3, 1.0))
def test_hidden_multipliers_are_transfers_and_norms_and_biases_one(base_depth, depth, base_width, width, lr):
    base, model = build(ResMLP, base_depth, base_width), build(ResMLP, depth, width, seed=1)
    groups = amutheory.param_groups(model, lr, base, rule="am-mup", probe=False, example_input=VECTOR)
    expected = transfer_lr(lr, base, model, input_shape=VECTOR).lr / lr
    for g in groups:
        if g["role"] in HIDDEN_MATRIX_ROLES + ("input",):
            assert g["multiplier"] == pytest.approx(expected, rel=1e-12)
        elif g["role"] in ("norm", "bias", "readout-bias"):
            assert g["multiplier"] == 1.0 and g["lr"] == lr
