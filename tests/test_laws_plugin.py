"""Laws from outside the package: a law written by ARCHITECTURE.md's recipe in its own file runs
through ``predict(law=...)``, ``best_law``, ``amutheory laws`` and ``amutheory predict --plugin``;
``register`` refuses duplicates and non-laws; ``resolve_law`` maps the older names by its table;
``predict`` calls exactly the chosen law's ``evaluate``, once, for every family."""

import functools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from amutheory import ArchSpec, measure, predict
from amutheory.laws import REGISTRY, Law, LawValues, best_law, get_law, register, resolve_law
from amutheory.laws.plugins import load_plugin, plugin_files

#: the recipe of ARCHITECTURE.md ("Adding a law"), word for word but for the names
RECIPE = textwrap.dedent('''
    import numpy as np

    from amutheory.laws import Coverage, Cost, Law, LawValues
    from amutheory.spec import ProbeProtocol


    class ChainToy(Law):
        name, family, exactness = "chain-toy", "conv", "exact"
        summary = "ReLU conv chain: a toy closed form"
        leaves_out = "everything"
        source = "toy_law"

        def _covers(self, spec):            # raise ValueError naming the field, or:
            if spec.activation != "relu":
                return Coverage(False, f"activation: the toy law is for ReLU chains, got {spec.activation!r}")
            return Coverage(True, "ReLU conv chain")

        def cost(self, spec, depths, **_):
            return Cost(0.1, "closed-form", "a closed form per depth")

        def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None):
            s_bar = protocol.input_var * np.asarray(depths, float) ** 2
            return LawValues(self.name, list(depths), s_bar, np.zeros_like(s_bar), {}, self.exactness)
''')
SPEC = ArchSpec(dim=1, width=8, kernel=3, spatial=4, batch=2, activation="relu")
ARCH = ["--dim", "1", "--width", "8", "--kernel", "3", "--spatial", "4", "--batch", "2", "--activation", "relu"]


@pytest.fixture
def registry():
    """The registry as it was, restored after the test (a test's laws do not leak into others)."""
    saved = dict(REGISTRY)
    yield REGISTRY
    REGISTRY.clear()
    REGISTRY.update(saved)


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "toy_law.py"
    path.write_text(RECIPE)
    return path


def test_outside_law_runs_through_predict_and_best_law(registry, plugin):
    assert load_plugin(plugin) == ["chain-toy"]
    pred = predict(SPEC, [4, 8], law="chain-toy")
    assert pred.law_registry == "chain-toy" and pred.law == "chain-toy"
    np.testing.assert_allclose(pred.s_bar, [16.0, 64.0])
    np.testing.assert_allclose(pred.eta_star, [0.25, 0.125])
    np.testing.assert_allclose(pred.local_slope, [-1.0, -1.0])   # secant: s ~ L^2, eta* ~ L^-1
    assert pred.constants["C"].value == 1.0
    # the most exact covering default law of a ReLU chain: the toy (kernel: not a default; coherent: calibrated)
    assert best_law(SPEC, [4, 8]).law.name == "chain-toy"
    default = predict(SPEC, [4, 8])
    assert default.law_registry == "chain-toy" and default.to_dict()["law_registry"] == "chain-toy"
    with pytest.raises(ValueError, match="chain-toy does not cover"):
        predict(SPEC.with_(activation="linear"), [4], law="chain-toy")


def test_outside_law_through_the_cli(plugin):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    run = lambda *args: subprocess.run([sys.executable, "-m", "amutheory", *args], capture_output=True, text=True,
                                       env=env, timeout=300)
    got = run("predict", "--law", "chain-toy", "--plugin", str(plugin), "--depths", "4,8", "--json", *ARCH)
    assert got.returncode == 0, got.stderr
    d = json.loads(got.stdout)
    assert d["law_registry"] == "chain-toy" and d["s_bar"] == [16.0, 64.0]
    got = run("laws", f"--plugin={plugin}", "--json")
    assert got.returncode == 0, got.stderr
    assert "chain-toy" in got.stdout
    got = run("laws", "--plugin", str(plugin), "--depths", "4,8", "--json", *ARCH)
    assert got.returncode == 0, got.stderr
    assert "chain-toy" in got.stdout
    # without the plugin the name is refused after parsing (exit 2); a broken plugin is one line and exit 2
    assert run("predict", "--law", "chain-toy", "--depths", "4", *ARCH).returncode == 2
    bad = plugin.with_name("broken.py")
    bad.write_text("raise RuntimeError('boom')\n")
    got = run("predict", "--plugin", str(bad), "--depths", "4", *ARCH)
    assert got.returncode == 2 and "boom" in got.stderr and "Traceback" not in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_plugin_files_are_found_before_parsing():
    assert plugin_files(["predict", "--plugin", "a.py", "--plugin=b.py", "--depths", "4"]) == ["a.py", "b.py"]


def test_register_refuses_duplicates_and_non_laws(registry):
    with pytest.raises(ValueError, match="already registered"):
        register(get_law("chain-spectral"))
    with pytest.raises(TypeError, match="Law"):
        register("chain-toy")
    with pytest.raises(TypeError, match="Law"):
        register(object())

    class Nameless(Law):
        family, exactness = "conv", "exact"

    with pytest.raises(ValueError, match="name"):
        register(Nameless())


@pytest.mark.parametrize("family, law, constants, spec, expected", [
    ("conv", "auto", "auto", None, None),
    ("conv", "auto", "calibrate", None, "chain-coherent"),
    ("conv", "coherent", "auto", None, "chain-coherent"),
    ("conv", "auto", "mlp-limit", None, "chain-mlp-limit"),
    ("conv", "auto", "derive", ArchSpec(activation="linear"), "chain-finite-width"),
    ("conv", "auto", "derive", ArchSpec(activation="linear", padding="zero"), "chain-operator"),
    ("conv", "auto", "derive", ArchSpec(dim=1, spatial=6, batch=2, activation="relu"), "chain-kernel"),
    ("conv", "chain-kernel", "auto", None, "chain-kernel"),
    ("resnet", "auto", "derive", ArchSpec(family="resnet", kernel=1, spatial=1, batch=1, branch="conv-mlp",
                                          init="k-last"), "resnet-dense"),
    ("resnet", "auto", "derive", ArchSpec(family="resnet", dim=1, spatial=4, batch=2, activation="linear",
                                          init="k-last"), "resnet-modes"),
    ("resnet", "coherent", "calibrate", None, "resnet-coherent"),
    ("resnet", "dense-shape", "auto", None, "resnet-dense-shape"),
    ("resnet", "selected", "calibrate", None, "resnet-selected"),
    ("resnet", "limit-shape", "calibrate", None, "resnet-limit-shape"),
    ("transformer", "coherent", "auto", None, "transformer-coherent"),
    ("transformer", "effective-depth", "calibrate", None, "transformer-effective-depth"),
])
def test_resolve_law_table(family, law, constants, spec, expected):
    assert resolve_law(family, law, constants, spec) == expected


def test_resolve_law_refusals():
    with pytest.raises(ValueError, match="constants must be"):
        resolve_law("conv", "auto", "bogus")
    with pytest.raises(ValueError, match="sets its own constants"):
        resolve_law("conv", "chain-spectral", "derive")
    with pytest.raises(ValueError, match="law: family 'conv' has the laws coherent"):
        resolve_law("conv", "dense-shape", "calibrate")
    with pytest.raises(ValueError, match="constants: law 'selected'"):
        resolve_law("resnet", "selected", "derive")
    with pytest.raises(ValueError, match="activation"):
        resolve_law("conv", "auto", "derive", ArchSpec(activation="tanh"))
    with pytest.raises(TypeError, match="law must be a string"):
        resolve_law("conv", 3, "auto")


_TRF = ArchSpec(family="transformer", width=8, spatial=4, batch=2, heads=2, mlp_ratio=2, init="k-last",
                activation="relu")
#: one net per family (the conv family twice: linear and ReLU) with the default law's calibration depths
FAMILIES = {
    "conv-linear": (ArchSpec(dim=1, width=8, kernel=3, spatial=4, batch=2, activation="linear"), None),
    "conv-relu": (SPEC, [2, 3, 4, 6]),
    "resnet": (ArchSpec(family="resnet", dim=1, width=8, kernel=1, spatial=1, batch=1, branch="conv-mlp",
                        init="k-last", activation="relu"), None),
    "transformer": (_TRF, [1, 2, 3, 4]),
}


@pytest.mark.parametrize("case", sorted(FAMILIES))
@pytest.mark.parametrize("statistic", ["mean", "geo"])
def test_predict_calls_the_chosen_law_once_and_returns_its_values(monkeypatch, case, statistic):
    spec, cal = FAMILIES[case]
    measured = None if cal is None else measure(spec, cal, seeds=3)
    chosen = best_law(spec, [4, 8]).law
    calls, original = [], chosen.evaluate

    @functools.wraps(original)  # the same signature: predict passes the options the law takes
    def spy(*args, **kwargs):
        calls.append(kwargs)
        calls[-1]["values"] = original(*args, **kwargs)
        return calls[-1]["values"]

    monkeypatch.setattr(chosen, "evaluate", spy)
    others = [law for law in REGISTRY.values() if law is not chosen]
    for law in others:
        monkeypatch.setattr(law, "evaluate", lambda *a, name=law.name, **k: pytest.fail(f"{name} evaluated"))
    pred = predict(spec, [4, 8], statistic=statistic,
                   **({} if measured is None else {"calibration_measurement": measured}))
    assert len(calls) == 1 and pred.law_registry == chosen.name
    values: LawValues = calls[0]["values"]
    if statistic == "mean":
        np.testing.assert_array_equal(pred.s_bar, values.s_bar)
        np.testing.assert_array_equal(pred.local_slope, values.local_slope)
    assert set(values.constants) <= set(pred.constants)


def test_outside_law_through_an_entry_point(tmp_path, plugin):
    # a distribution on the path whose metadata declares the law in the group amutheory.laws: what
    # `pip install` of a plugin package leaves behind (importlib.metadata reads it like any other)
    (tmp_path / "toy_law_pkg-0.1.dist-info").mkdir()
    (tmp_path / "toy_law_pkg-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-law-pkg\n"
                                                                      "Version: 0.1\n")
    (tmp_path / "toy_law_pkg-0.1.dist-info" / "entry_points.txt").write_text("[amutheory.laws]\n"
                                                                              "toy = toy_law:ChainToy\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(tmp_path), os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    got = subprocess.run([sys.executable, "-m", "amutheory", "predict", "--law", "chain-toy", "--depths", "4,8",
                          "--json", *ARCH], capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["law_registry"] == "chain-toy"
    # the same law from the entry point and from --plugin is registered once
    got = subprocess.run([sys.executable, "-m", "amutheory", "laws", "--plugin", str(plugin), "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr
