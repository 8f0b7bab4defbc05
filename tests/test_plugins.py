"""Plugins in every process (issue 46, items 2 and 3): a family and a law written outside the package
(files in a temporary folder), registered by ``--plugin`` / :func:`amutheory.plugins.load_plugin`
and by an entry point of a real installed distribution (a ``.dist-info`` folder on the path, read by
``importlib.metadata`` as ``pip install`` leaves it), run through ``predict``, ``measure``, ``sweep``
and ``tune`` -- in this process, on the default local pool (spawned workers) and on a local Dask
cluster -- and pass the public battery (:mod:`amutheory.testing`).  Also: a law's ``priority``, and
the family recipe's rough edges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from amutheory import plugins
from amutheory.families import FAMILY_REGISTRY, Family, get_family, register_family
from amutheory.laws import REGISTRY, Coverage, Cost, Law, LawValues, best_law, register
from amutheory.spec import ArchSpec, ProbeProtocol

REPO = Path(__file__).resolve().parents[1]

#: a family ("toy", a linear MLP) and its exact law, as ARCHITECTURE.md's recipe writes them
PLUGIN = textwrap.dedent('''
    """A family and a law written outside amutheory: a linear MLP ("toy") and its exact law."""
    import math

    import numpy as np
    import torch
    from torch import nn

    from amutheory.families import Family
    from amutheory.laws import Coverage, Cost, Law, LawValues
    from amutheory.spec import ProbeProtocol


    class ToyNet(nn.Module):
        """A linear MLP: preactivations(x) -> (hs, out) and forward(x), weights from generator."""

        def __init__(self, spec, generator=None, dtype=torch.float64):
            super().__init__()
            sizes = [spec.input_channels] + [spec.width] * spec.depth
            self.layers = nn.ModuleList(nn.Linear(a, b, bias=False, dtype=dtype) for a, b in zip(sizes, sizes[1:]))
            self.head = nn.Linear(spec.width, spec.outputs, bias=False, dtype=dtype)
            with torch.no_grad():
                for layer in self.layers:
                    layer.weight.normal_(0.0, math.sqrt(1.0 / layer.in_features), generator=generator)
                self.head.weight.normal_(0.0, math.sqrt(spec.readout_variance), generator=generator)

        def preactivations(self, x):
            hs = []
            for layer in self.layers:
                x = layer(x)
                hs.append(x)
            return hs, self.head(x)

        def forward(self, x):
            return self.preactivations(x)[1]


    class ToyFamily(Family):
        name, title, summary = "toy", "toy net", "a linear MLP under another name"
        unused_fields = ("dim", "kernel", "spatial", "padding", "branch", "init", "shortcut", "heads",
                         "mlp_ratio", "attn_scale")
        takes_norm, no_norm_because = False, "the toy net has no normalisation layers"

        def normalise(self, spec):
            return {"dim": 1, "kernel": 1, "spatial": 1, "padding": "circular", "activation": "linear"}

        def data_dim(self, spec):
            return 0                                   # inputs (B, input_channels)

        def data_layout(self, spec, channels, side):
            return {"input_channels": channels * side * side, "spatial": 1}

        def build_model(self, spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
            self.check_training_options(spec, norm, dropout)
            return ToyNet(spec, generator, dtype or torch.float64).to(device)

        def parameter_count(self, spec):
            return spec.input_channels * spec.width + (spec.depth - 1) * spec.width**2 + spec.width * spec.outputs

        def activation_elements(self, spec):
            return spec.input_channels + 2 * spec.depth * spec.width


    class ToyLinear(Law):
        name, family, exactness = "toy-linear", "toy", "exact"
        summary = "linear toy net: s_bar = input_var * depth"
        leaves_out = "everything a toy leaves out"
        source = "toy_plugin"

        def _covers(self, spec):
            return Coverage(True, "any toy net")

        def cost(self, spec, depths, **_):
            return Cost(0.01 * (1 + len(depths)), "closed-form", "a closed form per depth")

        def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None):
            s_bar = protocol.input_var * np.asarray(depths, float)
            return LawValues(self.name, list(depths), s_bar, np.zeros_like(s_bar), {}, self.exactness)


    FAMILY = ToyFamily()
''')
TOY = ["--family", "toy", "--width", "8"]
#: a tiny training run: 2 depths (two groups: the pool starts), 3 rates, 2 seeds, 5 steps
SWEEP = ["sweep", *TOY, "--depths", "2,3", "--lrs", "0.05,0.1,0.2", "--seeds", "2", "--steps", "5",
         "--batch-size", "8", "--quiet", "--no-figures", "--json"]
TUNE = ["tune", *TOY, "--from-depth", "2", "--from-lr", "0.1", "--depths", "3", "--seeds", "2",
        "--steps", "5", "--batch-size", "8", "--rule", "power", "--quiet", "--no-figures", "--json"]


@pytest.fixture
def plugin(tmp_path) -> Path:
    path = tmp_path / "toy_plugin.py"
    path.write_text(PLUGIN)
    return path


@pytest.fixture
def installed(tmp_path) -> Path:
    """A distribution installed into a folder (its module and its ``.dist-info`` with the entry points),
    as ``pip install --target`` leaves it; put on ``PYTHONPATH`` by :func:`_env`."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toy_ep.py").write_text(PLUGIN)
    info = site / "toy_plugin_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[amutheory.families]\ntoy = toy_ep:FAMILY\n\n"
                                           "[amutheory.laws]\ntoy-linear = toy_ep:ToyLinear\n")
    (info / "RECORD").write_text("")
    return site


def _env(*paths) -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        [str(p) for p in paths] + [str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))


def _cli(*args, env=None, cwd=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "amutheory", *map(str, args)], capture_output=True, text=True,
                          env=env or _env(), cwd=cwd, timeout=timeout)


def _python(code: str, env: dict):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# ----------------------------------------------------------------------------------- in this process
def test_a_plugin_file_registers_its_family_and_law_once_and_both_pass_the_battery(plugin):
    from amutheory.api.selection import predict
    from amutheory.testing import FAMILY_CHECKS, LAW_CHECKS, check_family, check_law

    assert plugins.load_plugin(plugin) == ["toy", "toy-linear"]
    assert plugins.load_plugin(plugin) == []  # loaded once
    assert str(plugin.resolve()) in dict(plugins.portable())
    spec = ArchSpec(family="toy", depth=2, width=8)
    assert spec.family_object is get_family("toy") and spec.activation == "linear"
    pred = predict(spec, [2, 4])
    assert pred.law_registry == "toy-linear" and list(pred.s_bar) == [2.0, 4.0]
    assert check_family(get_family("toy")) == [c for c, _ in FAMILY_CHECKS]
    assert check_law(REGISTRY["toy-linear"]) == [c for c, _ in LAW_CHECKS]


def test_a_broken_plugin_is_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ValueError, match=r"--plugin .*broken.py: RuntimeError: boom"):
        plugins.load_plugin(bad)
    dup = tmp_path / "dup.py"
    dup.write_text("from amutheory.families.conv import FAMILY as F\nclass Conv2(type(F)):\n    pass\nC = Conv2()\n")
    with pytest.raises(ValueError, match=r"--plugin .*dup.py: family: a family called 'conv' is registered already"):
        plugins.load_plugin(dup)
    with pytest.raises(ValueError, match="is not a Python file"):
        plugins.load_plugin(tmp_path / "missing.py")


class _Outside(Law):
    """A calibrated law of conv chains from outside, ranked first by its priority."""

    name, family, exactness, priority = "chain-outside", "conv", "calibrated", 1
    summary, leaves_out, source = "an outside calibrated chain law", "everything", "tests"

    def _covers(self, spec):
        return Coverage(True, "any conv chain")

    def cost(self, spec, depths, **_):
        return Cost(1.0, "probe", "none really")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None):
        from amutheory.constants import Constant

        s = np.asarray(depths, float)
        return LawValues(self.name, list(depths), s, 0.1 * s, {"a": Constant("a", 1.0, "calibrated")}, "calibrated")


def test_priority_makes_an_outside_law_the_default_and_the_reason_says_so():
    relu = ArchSpec(dim=1, width=8, kernel=3, spatial=4, batch=2, activation="relu")
    linear = relu.with_(activation="linear")
    assert best_law(relu, [4, 8]).law.name == "chain-kernel-finite-backward"  # the built-in default (run I)
    register(_Outside())
    choice = best_law(relu, [4, 8])
    assert choice.law.name == "chain-outside" and "priority 1" in choice.reason
    choice = best_law(linear, [4, 8])  # over the exact law too: priority ranks before exactness
    assert choice.law.name == "chain-outside"
    assert "more exact but of lower priority: chain-finite-width, chain-spectral" in choice.reason
    dict.pop(REGISTRY, "chain-outside")
    tie = type("Tie", (_Outside,), {"priority": 0, "name": "chain-tie"})
    register(tie())
    assert best_law(relu, [4, 8]).law.name == "chain-kernel-finite-backward"  # a tie in priority: exactness decides
    for bad in (float("nan"), "high", True):
        with pytest.raises(ValueError, match="priority must be a finite number"):
            register(type("Bad", (_Outside,), {"priority": bad, "name": "chain-bad"}))


#: a law outside amutheory whose own check made it the default for ReLU chains only (``Law.not_default_for``)
PER_NET_LAW = textwrap.dedent('''
    import numpy as np

    from amutheory.constants import Constant
    from amutheory.laws import Coverage, Cost, Law, LawValues
    from amutheory.spec import ProbeProtocol


    class PerActivation(Law):
        family = "conv"
        name, exactness = "chain-per-activation", "calibrated"
        summary = "a law whose check made it the default for ReLU chains only"
        leaves_out = "everything"
        source = "outside"
        default_candidate, priority = True, 1

        def _covers(self, spec):
            return Coverage(True, "any chain")

        def not_default_for(self, spec):
            return None if spec.activation == "relu" else f"its check covered ReLU chains only, got {spec.activation}"

        def cost(self, spec, depths, **_):
            return Cost(0.0, "closed-form", "none")

        def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None):
            s = np.asarray(depths, float)
            return LawValues(self.name, list(depths), s, 0.1 * s, {"a": Constant("a", 1.0, "calibrated")}, "calibrated")
''')


def test_an_outside_law_can_be_the_default_for_some_nets_only(tmp_path):
    """``Law.not_default_for`` from a plugin file, as a user runs ``amutheory laws --plugin`` and ``predict``: the
    default where its check said so, passed over (with its reason, in text and JSON) elsewhere."""
    path = tmp_path / "per_net_law.py"
    path.write_text(PER_NET_LAW)
    net = ["--family", "conv", "--dim", "1", "--width", "8", "--spatial", "4", "--depths", "4,8", "--plugin", path]
    relu = _cli("laws", *net, "--activation", "relu")
    assert relu.returncode == 0, relu.stderr[-2000:]
    assert "default: chain-per-activation: the first by priority (priority 1)" in relu.stdout
    gelu = _cli("laws", *net, "--activation", "gelu", "--json")
    assert gelu.returncode == 0, gelu.stderr[-2000:]
    d = json.loads(gelu.stdout)
    row = next(r for r in d["laws"] if r["law"] == "chain-per-activation")
    assert row["covers"] and row["not_default"] == "its check covered ReLU chains only, got gelu"
    assert d["choice"]["law"] != "chain-per-activation"
    assert {"law": "chain-per-activation", "reason": row["not_default"]} in d["choice"]["not_default"]
    text = _cli("laws", *net, "--activation", "gelu").stdout
    assert "chain-per-activation         calibrated   covers, ~0 s; not the default: its check covered ReLU" in text
    named = _cli("predict", *net, "--activation", "gelu", "--law", "chain-per-activation", "--json")
    assert named.returncode == 0 and json.loads(named.stdout)["law"] == "chain-per-activation"  # on request
    # the API ARCHITECTURE.md names, in a user's own Python process
    out = _python(f"""
        from amutheory.laws import REGISTRY, not_default_reason
        from amutheory.plugins import load_plugin
        from amutheory.spec import ArchSpec

        load_plugin({str(path)!r})
        law = REGISTRY["chain-per-activation"]
        net = ArchSpec(dim=1, width=8, spatial=4)
        print(not_default_reason(law, net.with_(activation="relu")), "|", not_default_reason(law, net.with_(activation="tanh")))
    """, _env())
    assert out.strip() == "None | its check covered ReLU chains only, got tanh"


class _Bare(Family):
    """A family with no law: a conv chain's model under another name."""

    name, title, summary = "resmlp", "bare net", "a conv chain without laws"

    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
        return get_family("conv").build_model(spec.with_(family="conv"), generator, dtype, device, norm, dropout)

    def parameter_count(self, spec):
        return get_family("conv").parameter_count(spec.with_(family="conv"))

    def activation_elements(self, spec):
        return get_family("conv").activation_elements(spec.with_(family="conv"))


def test_the_family_recipes_rough_edges(plugin):
    from amutheory.api.selection import predict

    plugins.load_plugin(plugin)
    toy = ArchSpec(family="toy", depth=2, width=8)
    # constants="calibrate"/"derive" on an outside family: its calibrated / exact law, or a clear refusal
    assert predict(toy, [2, 4], constants="derive").law_registry == "toy-linear"
    with pytest.raises(ValueError, match="family 'toy' has no calibrated law \\(its laws: toy-linear \\(exact\\)\\)"):
        predict(toy, [2, 4], constants="calibrate")
    # a family with no law at all: said in words, no empty brackets
    register_family(_Bare())
    with pytest.raises(ValueError, match="has no registered law") as exc:
        best_law(ArchSpec(family="resmlp", depth=2, width=8), [2, 4])
    assert "()" not in str(exc.value)


class _TwoClasses(Family):
    """Seeds of one parity build one class, the others another: what the probe cannot stack."""

    name, title, summary = "two-classes", "two classes", "a model class per seed parity"
    unused_fields = ("dim", "kernel", "spatial", "padding", "branch", "init", "shortcut", "heads",
                     "mlp_ratio", "attn_scale")

    def normalise(self, spec):
        return {"dim": 1, "kernel": 1, "spatial": 1, "padding": "circular"}

    def data_dim(self, spec):
        return 0

    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
        import torch

        model = PLUGIN_NS["ToyNet"](spec, generator, dtype or torch.float64)
        if generator is not None and generator.initial_seed() % 2:
            model.__class__ = type("OtherToyNet", (PLUGIN_NS["ToyNet"],), {})
        return model

    def parameter_count(self, spec):
        return spec.input_channels * spec.width + (spec.depth - 1) * spec.width**2 + spec.width * spec.outputs

    def activation_elements(self, spec):
        return spec.input_channels + 2 * spec.depth * spec.width


PLUGIN_NS: dict = {}


def test_the_battery_and_the_probe_name_what_is_wrong():
    from amutheory.measure.probe import probe
    from amutheory.testing import check_family, check_law

    exec(compile(PLUGIN, "toy_plugin.py", "exec"), PLUGIN_NS)  # noqa: S102 - the test's own source
    off_by_one = type("OffByOne", (PLUGIN_NS["ToyFamily"],), {
        "name": "off-by-one", "parameter_count": lambda self, spec: PLUGIN_NS["ToyFamily"].parameter_count(
            self, spec) + 1})
    with pytest.raises(AssertionError, match=r"check_family\(off-by-one\) model: parameter_count\(spec\) is \d+, "
                                             r"the model has \d+"):
        check_family(off_by_one())
    assert "off-by-one" not in FAMILY_REGISTRY  # the battery registered it for its checks only
    with pytest.raises(AssertionError, match=r"check_family\(two-classes\) model: seeds 0 and 1 give models of two "
                                             "classes"):
        check_family(_TwoClasses())
    register_family(_TwoClasses())
    with pytest.raises(ValueError, match=r"probe: <family two-classes>.build_model gave seed 0 a ToyNet .* and seed 1 "
                                         r"a OtherToyNet .*every seed needs a model of one class"):
        probe(ArchSpec(family="two-classes", depth=2, width=8), range(2))
    register_family(PLUGIN_NS["FAMILY"])  # the toy family, to host the broken laws below
    negative = type("Negative", (PLUGIN_NS["ToyLinear"],), {
        "name": "toy-negative", "evaluate": lambda self, spec, depths, **_: LawValues(
            self.name, list(depths), -np.ones(len(depths)), np.zeros(len(depths)), {}, "exact")})
    with pytest.raises(AssertionError, match=r"check_law\(toy-negative\) values: s_bar must be finite and > 0"):
        check_law(negative())
    with pytest.raises(AssertionError, match=r"check_law\(toy-linear\) attributes: exactness must be one of"):
        check_law(type("Vague", (PLUGIN_NS["ToyLinear"],), {"exactness": "roughly"})())


def test_every_command_that_can_meet_a_law_or_family_takes_plugin():
    from amutheory.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name in ("derive", "predict", "laws", "measure", "boundary", "validate", "compare-widths", "depth",
                 "transfer", "sweep", "tune", "coord-check"):
        assert "--plugin" in commands[name]._option_string_actions, name


def test_sweep_on_the_default_pool_loads_a_plugin_family_in_every_worker(plugin, tmp_path):
    """The Python API, two spawned workers: the plugin file's source travels with the groups."""
    from amutheory.train import Cell
    from amutheory.train.sweep import run_sweep

    plugins.load_plugin(plugin)
    template = Cell(spec=ArchSpec(family="toy", depth=2, width=8), lr=0.1, steps=5, batch_size=8)
    summary = run_sweep(template, [2, 3], [8], [0.05, 0.1, 0.2], [0, 1], tmp_path / "sweep", workers=2,
                        figures=False)
    rows = [json.loads(line) for line in (tmp_path / "sweep" / "cells.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {r["cell"]["spec"]["family"] for r in rows} == {"toy"}
    assert summary["this_run"]["cells_run"] == 12


# ----------------------------------------------------------------------------------- fresh processes
def test_an_installed_entry_point_loads_on_the_first_registry_read_in_plain_python(installed):
    out = _python("""
        import sys
        import amutheory, amutheory.spec
        from amutheory import plugins
        from amutheory.cli import build_parser
        with plugins.deferred():
            build_parser()
        print("after parser", "toy_ep" in sys.modules)
        from amutheory import ArchSpec, predict
        spec = ArchSpec(family="toy", width=8)             # get_family('toy'): a miss loads the plugins
        print("after spec", "toy_ep" in sys.modules)
        print("named", list(predict(spec, [2, 4], law="toy-linear").s_bar))
        print("default", predict(spec, [2, 4]).law_registry)
        from amutheory.families import family_names
        print("families", family_names())
    """, _env(installed))
    assert "after parser False" in out and "after spec True" in out
    assert "named [2.0, 4.0]" in out and "default toy-linear" in out
    assert "'toy'" in out.splitlines()[-1]


def test_predict_and_measure_from_the_command_line_by_plugin_and_by_entry_point(installed, plugin):
    got = _cli("measure", "--plugin", plugin, *TOY, "--depths", "2,3", "--seeds", "2", "--json")
    assert got.returncode == 0, got.stderr[-2000:]
    assert json.loads(got.stdout)["spec"]["family"] == "toy"
    got = _cli("predict", *TOY, "--depths", "2,4", "--json", env=_env(installed))
    assert got.returncode == 0, got.stderr[-2000:]
    d = json.loads(got.stdout)
    assert d["law_registry"] == "toy-linear" and d["s_bar"] == [2.0, 4.0]
    got = _cli("predict", *TOY, "--depths", "2,4")  # neither: one line naming the families there are
    assert got.returncode == 2 and "family" in got.stderr and "Traceback" not in got.stderr


@pytest.mark.slow
def test_sweep_and_tune_with_the_default_workers_by_plugin(plugin, tmp_path):
    got = _cli(*SWEEP, "--plugin", plugin, "--out", tmp_path / "sweep")
    assert got.returncode == 0, got.stderr[-2000:]
    assert json.loads(got.stdout)["this_run"]["cells_run"] == 12
    got = _cli(*TUNE, "--plugin", plugin, "--out", tmp_path / "tune")
    assert got.returncode == 0, got.stderr[-2000:]
    assert json.loads(got.stdout)["targets"][0]["depth"] == 3


@pytest.mark.slow
def test_sweep_and_tune_on_a_local_dask_cluster_by_plugin_and_by_entry_point(installed, plugin, tmp_path):
    pytest.importorskip("dask.distributed")
    dask = ["--engine", "dask", "--workers", "2"]
    got = _cli(*SWEEP, *dask, "--plugin", plugin, "--out", tmp_path / "sweep")
    assert got.returncode == 0, got.stderr[-2000:]
    assert json.loads(got.stdout)["this_run"]["cells_run"] == 12
    got = _cli(*TUNE, *dask, "--out", tmp_path / "tune", env=_env(installed))
    assert got.returncode == 0, got.stderr[-2000:]
    assert json.loads(got.stdout)["targets"][0]["depth"] == 3


@pytest.mark.slow
def test_a_users_script_that_registers_a_family_sweeps_on_the_pool_and_on_dask(tmp_path):
    """A family registered by ``register_family`` in a user's own script (no plugin file, no entry
    point): the script's file travels to the workers and runs there as a plugin (its main block does not)."""
    pytest.importorskip("dask.distributed")
    script = tmp_path / "my_study.py"
    script.write_text(PLUGIN.replace("FAMILY = ToyFamily()", "") + textwrap.dedent('''
        from amutheory.families import register_family
        from amutheory.laws import register

        register_family(ToyFamily())
        register(ToyLinear)

        if __name__ == "__main__":
            import json, sys
            from amutheory.spec import ArchSpec
            from amutheory.train import Cell
            from amutheory.train.sweep import run_sweep

            template = Cell(spec=ArchSpec(family="toy", depth=2, width=8), lr=0.1, steps=5, batch_size=8)
            for engine in ("local", "dask"):
                s = run_sweep(template, [2, 3], [8], [0.05, 0.1, 0.2], [0, 1], sys.argv[1] + "/" + engine,
                              engine=engine, workers=2, figures=False)
                print(engine, s["this_run"]["cells_run"])
    '''))
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
                          env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "local 12" in done.stdout and "dask 12" in done.stdout
