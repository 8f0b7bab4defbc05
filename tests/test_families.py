"""The architecture families (amutheory.families): the registry, each family's sizes against its real
model, the serialised form of a spec (unchanged by the move to family objects), the user's-module
family, and issue 38's acceptance 2: no comparison of a family's name with a literal, and no table
keyed by family names, outside the families' own modules."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import itertools
import json
from pathlib import Path

import pytest

from amutheory.families import (FAMILY_REGISTRY, Family, family_names, get_family, module_family,
                                register_family, result_family)
import amutheory.symbolic  # noqa: F401  (registers the built-in families' theory: derive, branch multipliers)
from amutheory.spec import ArchSpec

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "amutheory"

#: small specs of every family with a spec (several branches, skips, dims, ratios)
SMALL_SPECS = [
    ArchSpec(depth=3, width=6, kernel=3, spatial=7, input_channels=2, outputs=5),
    ArchSpec(dim=2, depth=2, width=5, kernel=3, spatial=5, input_channels=3, outputs=4, padding="zero"),
    ArchSpec(depth=1, width=4, kernel=5, spatial=9, input_channels=1, outputs=3, activation="tanh"),
    ArchSpec(family="resnet", depth=3, width=6, spatial=7, input_channels=2, outputs=5, branch="conv"),
    ArchSpec(family="resnet", depth=2, width=5, spatial=6, outputs=4, branch="conv-mlp", shortcut="projection"),
    ArchSpec(family="resnet", dim=2, depth=2, width=4, spatial=5, outputs=3, branch="preact", init="k-all"),
    ArchSpec(family="transformer", depth=2, width=8, spatial=6, heads=2, mlp_ratio=2, input_channels=3, outputs=4),
    ArchSpec(family="transformer", depth=3, width=6, spatial=5, heads=3, mlp_ratio=1, input_channels=2, outputs=7),
]


def _model(spec):
    from amutheory.measure.models import build_model

    return build_model(spec, seed=0)


# --------------------------------------------------------------------------- the registry
@pytest.mark.parametrize("name", sorted(FAMILY_REGISTRY))
def test_family_passes_the_public_battery(name):
    """Every registered family keeps the contract as :func:`amutheory.testing.check_family` states it
    (a user's module, without an ArchSpec, the checks that need none)."""
    from amutheory.testing import FAMILY_CHECKS, check_family

    family = get_family(name)
    expected = [c for c, _ in FAMILY_CHECKS][:None if family.has_spec else 2]
    assert check_family(family) == expected


def test_registry_names_and_lookup():
    # the built-in families come first; a family registered later (a plugin) may follow them
    assert family_names()[:4] == ("conv", "resnet", "transformer", "mlp")
    assert all(get_family(n).has_spec for n in family_names())
    assert "module" in family_names(with_spec=False) and "module" not in family_names()
    for name, family in FAMILY_REGISTRY.items():
        assert get_family(name) is family and family.name == name and isinstance(family, Family)
    with pytest.raises(ValueError, match="family must be one of"):
        get_family("mlp-not-registered")
    with pytest.raises(TypeError, match="family must be a string"):
        get_family(3)
    with pytest.raises(ValueError, match="registered already"):
        register_family(get_family("conv"))
    with pytest.raises(TypeError, match="amutheory.families.Family"):
        register_family(object())


def test_spec_asks_its_family():
    for spec in SMALL_SPECS:
        assert spec.family_object is get_family(spec.family)
    with pytest.raises(ValueError, match="user's module"):
        ArchSpec(family="module")


def test_result_family_reads_stored_records():
    assert result_family({}) is get_family("conv")  # records from before residual nets name none
    assert result_family({"family": "resnet"}).counts_blocks
    assert result_family({"family": "transformer"}).depth_symbol() == "K"
    assert result_family({"family": None}).depth_symbol() == "L"


# --------------------------------------------------------------------------- sizes against the real models
@pytest.mark.parametrize("spec", SMALL_SPECS, ids=lambda s: f"{s.family}-{s.branch}-d{s.dim}-{s.shortcut}")
def test_parameter_count_is_the_models(spec):
    model = _model(spec)
    assert spec.family_object.parameter_count(spec) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("spec", SMALL_SPECS, ids=lambda s: f"{s.family}-{s.branch}-d{s.dim}-{s.shortcut}")
def test_probe_layers_and_input_shape_are_the_models(spec):
    import torch

    family = spec.family_object
    shape = family.input_shape(spec, batch=2)
    assert shape == (2, spec.input_channels) + (spec.spatial,) * family.data_dim(spec)
    model = _model(spec)
    pre, out = model.preactivations(torch.zeros(shape, dtype=torch.float64))
    assert len(pre) == family.probe_layers(spec, spec.depth)
    assert tuple(out.shape) == (2, spec.outputs)


@pytest.mark.parametrize("spec", SMALL_SPECS, ids=lambda s: f"{s.family}-{s.branch}-d{s.dim}-{s.shortcut}")
def test_sizes_grow_by_one_block_per_depth(spec):
    """Parameters, activations and probe layers are affine in depth: one block's worth per unit."""
    family = spec.family_object
    for size in (family.parameter_count, family.activation_elements):
        a, b, c = (size(spec.with_(depth=d)) for d in (1, 2, 3))
        assert b - a == c - b > 0
    assert family.modules_per_block(spec) >= 1
    assert family.probe_layers(spec, 4) == 2 * family.probe_layers(spec, 2)


def test_transfer_numbers_of_the_families():
    conv, res, tr = SMALL_SPECS[0], SMALL_SPECS[5], SMALL_SPECS[6]
    assert conv.family_object.hidden_fan_in(conv) == conv.width * conv.kernel**conv.dim
    assert res.family_object.hidden_fan_in(res) == res.width * res.kernel**res.dim
    assert tr.family_object.hidden_fan_in(tr) == tr.width
    assert conv.family_object.branch_multiplier(conv) == 1.0
    # only sqrt-multiplier scales the branch by a multiplier, 1/sqrt(K); the others scale its variance
    assert res.family_object.branch_multiplier(res) == 1.0
    assert get_family("resnet").branch_multiplier(res.with_(init="sqrt-multiplier", depth=4)) == 0.5
    third = get_family("transformer").branch_multiplier(tr.with_(init="sqrt-multiplier", depth=9))
    assert third == pytest.approx(1 / 3)


def test_data_layout_reads_images_in_the_models_dimension():
    one_d, two_d, tr = SMALL_SPECS[0], SMALL_SPECS[1], SMALL_SPECS[6]
    assert one_d.family_object.data_layout(one_d, 3, 8) == {"input_channels": 24, "spatial": 8}
    assert two_d.family_object.data_layout(two_d, 3, 8) == {"input_channels": 3, "spatial": 8}
    assert tr.family_object.data_layout(tr, 1, 8) == {"input_channels": 8, "spatial": 8}


def test_training_options_and_campaign_hooks():
    tr = SMALL_SPECS[6]
    with pytest.raises(ValueError, match="pre-LN already"):
        tr.family_object.check_training_options(tr, "layer", 0.0)
    get_family("conv").check_training_options(SMALL_SPECS[0], "batch", 0.1)
    for family in (get_family(n) for n in family_names()):
        for dotted in (family.campaign_module, family.model_module):  # both optional
            if dotted:
                importlib.import_module(dotted)
        assert family.sweep_defaults().keys() <= {f.name for f in dataclasses.fields(ArchSpec)}
    assert get_family("resnet").measures_stream and not get_family("conv").measures_stream
    assert not get_family("transformer").campaign_figures


def test_derive_goes_through_the_family():
    from amutheory.api import derive

    for spec in (SMALL_SPECS[0], SMALL_SPECS[6]):
        assert derive(spec).name == spec.family_object.derive(spec).name
    with pytest.raises(ValueError, match="residual-net law"):
        derive(SMALL_SPECS[0], law="dense-shape")
    with pytest.raises(ValueError, match="calibrated predictor"):
        derive(ArchSpec(family="resnet", init="k-last"), law="selected")


# --------------------------------------------------------------------------- the serialised form
#: the pre-family rule (amutheory/spec.py before c624d49): the fields each family dropped from to_dict
_OLD_RESNET_FIELDS = ("branch", "init", "shortcut")
_OLD_TRANSFORMER_FIELDS = ("heads", "mlp_ratio", "attn_scale")
_OLD_UNUSED_FIELDS = {"conv": _OLD_RESNET_FIELDS + _OLD_TRANSFORMER_FIELDS,
                      "resnet": _OLD_TRANSFORMER_FIELDS,
                      "transformer": ("branch", "shortcut", "kernel", "padding", "dim")}


def _old_to_dict(spec) -> dict:
    d = dataclasses.asdict(spec)
    for k in _OLD_UNUSED_FIELDS[spec.family]:
        d.pop(k)
    return d


def _spec_grid():
    for dim, act, readout, c in itertools.product((1, 2), ("relu", "tanh"), ("standard", "mup"), (None, 1.5)):
        common = dict(depth=3, width=8, spatial=8, activation=act, readout=readout, init_c=c)
        yield ArchSpec(dim=dim, padding="zero" if c else "circular", **common)
        for branch, init, skip in itertools.product(("conv", "conv-mlp", "preact"), ("k-last", "none"),
                                                    ("identity", "projection")):
            yield ArchSpec(family="resnet", dim=dim, branch=branch, init=init, shortcut=skip, **common)
        if dim == 1:
            for attn, init in itertools.product(("sqrt", "mup"), ("k-last", "none")):
                yield ArchSpec(family="transformer", heads=2, mlp_ratio=2, attn_scale=attn, init=init, **common)


def test_to_dict_is_byte_identical_to_the_pre_family_rule():
    specs = list(_spec_grid())
    assert {s.family for s in specs} == set(_OLD_UNUSED_FIELDS)  # the families that existed before the registry
    for spec in specs:
        assert json.dumps(spec.to_dict()) == json.dumps(_old_to_dict(spec))
        assert ArchSpec(**spec.to_dict()) == spec


# --------------------------------------------------------------------------- a user's module


def _write_factory(tmp_path) -> str:
    path = tmp_path / "net.py"
    path.write_text("import torch\nfrom torch import nn\n\n"
                    "def make(depth, width):\n"
                    "    layers = [nn.Flatten(), nn.Linear(3 * 8, width)]\n"
                    "    for _ in range(depth - 1):\n"
                    "        layers += [nn.ReLU(), nn.Linear(width, width)]\n"
                    "    return nn.Sequential(*layers, nn.ReLU(), nn.Linear(width, 10))\n")
    return f"{path}:make"


def test_module_family(tmp_path):
    import torch

    factory = _write_factory(tmp_path)
    family = module_family(factory)
    assert family.name == "module" and not family.has_spec and family.factory == factory
    assert family.laws() == []
    with pytest.raises(ValueError, match="no closed-form depth law"):
        family.derive(None)
    with pytest.raises(ValueError, match="FILE.py:FACTORY"):
        module_family("no-colon")
    with pytest.raises(ValueError, match="norm and dropout are options of the built-in models"):
        family.check_training_options(None, "batch", 0.0)
    spec = ArchSpec(depth=3, width=5, spatial=8)
    a = family.build_seeded(spec, seed=4, dtype=torch.float64)
    b = family.build_seeded(spec, seed=4, dtype=torch.float64)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert family.parameter_count(spec) == sum(p.numel() for p in a.parameters())
    rep = family.depth_report(a, (1, 3, 8))
    assert rep.effective_depth == spec.depth + 1  # depth hidden Linear layers and the readout, in a row
    with pytest.raises(ValueError, match="input_shape is required"):
        family.depth_report(a)
    assert family.net_label(spec.to_dict()) == f"user's module {factory}"
    assert get_family("resnet").net_label(SMALL_SPECS[3].to_dict()) == "resnet net (relu)"


def test_cell_of_a_module_asks_the_module_family(tmp_path):
    from amutheory.train import Cell

    factory = _write_factory(tmp_path)
    cell = Cell(spec=ArchSpec(depth=2, width=4, spatial=8), lr=0.1, model=factory)
    assert cell.family_object.name == "module" and cell.family_object.factory == factory
    assert Cell(spec=ArchSpec(family="resnet", depth=2, width=4, spatial=8), lr=0.1).family_object.name == "resnet"
    with pytest.raises(ValueError, match="norm and dropout are options"):
        Cell(spec=ArchSpec(), lr=0.1, model=factory, norm="batch")
    with pytest.raises(ValueError, match="pre-LN already"):
        Cell(spec=ArchSpec(family="transformer", width=8), lr=0.1, norm="layer")


#: Cell keys and group keys written by the code before the family objects (pre-c624d49 and c624d49
#: give the same): stored sweeps must keep resuming, so these must not move
_STORED_KEYS = [
    (dict(spec=ArchSpec(depth=3, width=8, spatial=8), lr=0.1), "c9b0b1a352251ba8", "538d36f21d4f1544"),
    (dict(spec=ArchSpec(family="resnet", depth=2, width=8, spatial=8, branch="preact", init="k-all"), lr=0.05,
          seed=3, optimizer="adam", norm="batch", dropout=0.1), "d18076372f12aa22", "e1d7238e936e0d8f"),
    (dict(spec=ArchSpec(family="transformer", depth=2, width=8, spatial=8, heads=2, mlp_ratio=2), lr=1e-3,
          dataset="digits"), "dee74dabe58bbe1d", "19d226de6fc28978"),
    (dict(spec=ArchSpec(dim=2, depth=4, width=16, spatial=8), lr=0.3, model="tests/zoo.py:make", steps=7),
     "c60275d5d79c066d", "2bffeaf6504cfc5b"),
]


@pytest.mark.parametrize("fields,key,group", _STORED_KEYS)
def test_cell_keys_unchanged(fields, key, group):
    from amutheory.train import Cell

    cell = Cell(**fields)
    assert (cell.key(), cell.group_key()) == (key, group)


# --------------------------------------------------------------------------- acceptance 2


def _family_modules() -> list[str]:
    """Files (or package folders) that are a family's own: amutheory/families and each family's
    model and theory modules."""
    owned = ["amutheory/families"]
    for family in FAMILY_REGISTRY.values():
        for dotted in (family.model_module, family.theory_module):
            if dotted:
                rel = dotted.replace(".", "/")
                owned.append(rel if (ROOT / rel).is_dir() else rel + ".py")
    return owned


def _names_a_family(node) -> bool:
    """``x.family``, ``x["family"]``, ``x.get("family", ...)`` or a name ``family``."""
    if isinstance(node, ast.Name):
        return node.id == "family"
    if isinstance(node, ast.Attribute):
        return node.attr == "family"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "family"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "family"
    return False


def _family_literal(node, names) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(isinstance(e, ast.Constant) and e.value in names for e in node.elts)
    return False


def family_branches(path: Path, names) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, code)`` of every comparison of a family expression with a family
    name and every dict literal keyed by family names in ``path``."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else where
            if isinstance(child, ast.Compare):
                sides = [child.left, *child.comparators]
                if any(_names_a_family(s) for s in sides) and any(_family_literal(s, names) for s in sides):
                    found.append((child.lineno, where, ast.unparse(child)))
            if isinstance(child, ast.Dict) and child.keys and all(
                    isinstance(k, ast.Constant) and k.value in names for k in child.keys):
                found.append((child.lineno, where, ast.unparse(child)[:80]))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def _offenders() -> dict:
    names = set(FAMILY_REGISTRY)
    owned = _family_modules()
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if any(rel == o or rel.startswith(o + "/") for o in owned):
            continue
        for line, where, code in family_branches(path, names):
            out.setdefault(rel, []).append((line, where, code))
    return out


def test_the_scan_finds_a_family_branch(tmp_path):
    """The check itself can fail: a comparison and a table of each shape are found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f(spec, r, family):\n"
                   "    a = spec.family == 'resnet'\n"
                   "    b = r.get('family', 'conv') in ('conv', 'x')\n"
                   "    c = r['family'] != 'transformer'\n"
                   "    d = family == 'conv'\n"
                   "    return {'conv': 1, 'resnet': 2}\n")
    assert len(family_branches(bad, set(FAMILY_REGISTRY))) == 5


def test_no_family_branch_outside_the_families():
    """Issue 38, acceptance 2 (every file)."""
    found = _offenders()
    assert found == {}, "\n".join(f"{rel}:{line} ({where}): {code}" for rel, items in found.items()
                                  for line, where, code in items)
