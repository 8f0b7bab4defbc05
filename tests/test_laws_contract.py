"""The law contract, checked for every law in the registry (one example net per law), and the
default choice of law.

Each registered law must pass the public battery, :func:`amutheory.testing.check_law`: cover its
example, evaluate to a :class:`LawValues` whose constants carry their sources, agree with itself (its
per-layer ``s_l`` average to its ``s_bar``), state a finite cost that grows with depth, refuse other
families with a reason, and run through ``predict``.  Where a law has an independent
check it is made here for every law that has it: exact sums against brute force, exact laws against
the probe on real nets.  A new law needs one example below (the first test fails until it has one).
"""

import numpy as np
import pytest

from amutheory import ArchSpec, measure, predict
from amutheory.laws import REGISTRY, best_law, get_law
from amutheory.testing import LAW_CHECKS, check_law

_CONV = dict(dim=1, width=32, kernel=3, spatial=6, batch=2)
_RES = dict(family="resnet", dim=1, width=32, kernel=3, spatial=4, batch=2, init="k-last")
_DENSE = dict(family="resnet", dim=1, width=32, kernel=1, spatial=1, batch=1, init="k-last")
_MLP = dict(family="mlp", width=32, input_channels=8, batch=2)
_TRF = dict(family="transformer", width=16, spatial=4, heads=2, mlp_ratio=2, init="k-last", activation="relu")

#: one small net each law covers, and the calibration depths of the calibrated ones
EXAMPLES = {
    "chain-finite-width": (ArchSpec(**_CONV, activation="linear"), None),
    "chain-spectral": (ArchSpec(**_CONV, activation="linear"), None),
    "chain-operator": (ArchSpec(**_CONV, activation="linear", padding="zero"), None),
    "chain-kernel": (ArchSpec(**_CONV, activation="relu", padding="zero"), None),
    "chain-kernel-finite-backward": (ArchSpec(**_CONV, activation="relu"), None),
    "chain-kernel-finite": (ArchSpec(**_CONV, activation="gelu"), None),
    "chain-coherent": (ArchSpec(**_CONV, activation="relu"), [2, 3, 4, 6]),
    "chain-mlp-limit": (ArchSpec(**_CONV, activation="relu"), None),
    "resnet-dense": (ArchSpec(**_DENSE, branch="conv-mlp", activation="relu"), None),
    "resnet-modes": (ArchSpec(**_RES, branch="conv", activation="linear"), None),
    "resnet-points": (ArchSpec(**_RES, branch="conv-mlp", activation="relu"), None),
    "resnet-coherent": (ArchSpec(**_RES, branch="conv-mlp", activation="relu"), [1, 2, 3, 4]),
    "resnet-dense-shape": (ArchSpec(**_RES, branch="conv-mlp", activation="relu"), [1, 2, 3, 4]),
    "resnet-limit-shape": (ArchSpec(**_RES, branch="conv", activation="linear"), [1, 2, 3, 4]),
    "resnet-selected": (ArchSpec(**_RES, branch="conv-mlp", activation="relu"), [1, 2, 3, 4, 6]),
    "transformer-coherent": (ArchSpec(**_TRF), [1, 2, 3, 4]),
    "transformer-effective-depth": (ArchSpec(**_TRF), [1, 2, 3, 4]),
    "mlp-finite-width": (ArchSpec(**_MLP, activation="linear"), None),
    "mlp-one-sample": (ArchSpec(**{**_MLP, "batch": 1}, activation="relu"), None),
    "mlp-spectral": (ArchSpec(**_MLP, activation="linear"), None),
    "mlp-kernel-finite": (ArchSpec(**_MLP, activation="relu"), None),
    "mlp-kernel-finite-backward": (ArchSpec(**_MLP, activation="relu"), None),
    "mlp-kernel": (ArchSpec(**_MLP, activation="relu"), None),
    "mlp-coherent": (ArchSpec(**_MLP, activation="relu"), [2, 3, 4, 6]),
}
DEPTHS = [3, 5, 8]


def test_every_built_in_law_has_an_example():
    built_in = {name for name, law in REGISTRY.items() if type(law).__module__.startswith("amutheory.")}
    assert built_in <= set(EXAMPLES)


@pytest.fixture(scope="module")
def calibrations():
    """The calibrated laws' measurements of their examples (8 seeds at their calibration depths)."""
    return {name: measure(spec, cal, seeds=8) for name, (spec, cal) in EXAMPLES.items() if cal is not None}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_law_passes_the_public_battery(name, calibrations):
    """Every registered law keeps the contract as :func:`amutheory.testing.check_law` states it: it
    describes itself, covers its example and refuses other families with a reason, its cost is finite
    and grows with depth, its values (and per-layer moments, where it has them) keep the contract, and
    ``predict(law=name)`` runs it."""
    spec, _ = EXAMPLES.get(name, (None, None))
    passed = check_law(REGISTRY[name], spec, DEPTHS, calibrations.get(name))
    assert passed == [check for check, _ in LAW_CHECKS]


def test_spectral_law_against_brute_force_sum():
    """The spectral law's s_l against the explicit sum over positions and Wick pairings."""
    from amutheory.symbolic.chain.spectral import brute_force_spectral_layer

    spec = EXAMPLES["chain-spectral"][0].with_(depth=4)
    s_l = REGISTRY["chain-spectral"].layer_moments(spec, {}, 1.0)
    brute = [brute_force_spectral_layer(spec, l) for l in range(1, 5)]
    np.testing.assert_allclose(s_l, brute, rtol=1e-9)


def test_operator_law_against_brute_force_sum():
    from amutheory.symbolic.chain.operator_law import brute_force_layer_moment

    spec = EXAMPLES["chain-operator"][0].with_(depth=4)
    s_l = REGISTRY["chain-operator"].layer_moments(spec, {}, 1.0)
    brute = [brute_force_layer_moment(spec, l, 4) for l in range(1, 5)]
    np.testing.assert_allclose(s_l, brute, rtol=1e-9)


@pytest.mark.parametrize("name", ["chain-spectral", "chain-operator", "resnet-dense", "resnet-modes"])
def test_exact_law_against_the_probe(name):
    """The exact infinite-width law against real nets at width 256 (64 seeds, fixed): the measured mean
    must lie within 4 standard errors of the seed mean plus the left-out finite-width term, allowed
    as 4 L/n relative (the laws leave out terms of relative order l/n; 4 L/n bounds it with room for
    their constants)."""
    spec, _ = EXAMPLES[name]
    spec = spec.with_(width=256)
    depth = 3
    law = REGISTRY[name].evaluate(spec, [depth]).s_bar[0]
    s = measure(spec, [depth], seeds=64).s_bar(depth)
    se = s.std(ddof=1) / np.sqrt(len(s))
    allowed = 4 * se + 4 * depth / spec.width * law
    assert abs(s.mean() - law) <= allowed, (s.mean(), law, se)


def test_default_takes_the_exact_law_of_a_linear_circular_chain_and_says_so():
    spec = ArchSpec(dim=1, width=64, kernel=3, spatial=8, activation="linear")
    pred = predict(spec, [4, 8])
    d = pred.to_dict()
    assert d["law_registry"] == "chain-finite-width" and "exact" in d["law_reason"]
    assert all(c["source"] != "calibrated" for c in d["constants"].values())
    # the old default, asked for by name, still calibrates
    old = predict(spec, [4, 8], constants="calibrate", calibration_seeds=4)
    assert old.law_choice is None and old.constants["a"].source == "calibrated"


def test_default_skips_a_law_over_its_cost_budget_and_records_the_estimate():
    spec = EXAMPLES["resnet-points"][0]
    assert best_law(spec, [4, 8], budget_s=1e4).law.name == "resnet-points"
    choice = best_law(spec, [4, 8], budget_s=1e-3)
    assert choice.law.name == "resnet-coherent"
    (skip,) = choice.skipped
    assert skip["law"] == "resnet-points" and skip["estimate_s"] >= 0 and "budget" in skip["reason"]


#: a ReLU chain that keeps the calibrated default: wider than 64 (run W of the finite-width plan)
_WIDE_RELU = ArchSpec(**{**_CONV, "width": 128}, activation="relu", padding="zero")


def test_relu_chain_default_stays_calibrated_and_names_the_kernel_law_it_passed_over():
    choice = best_law(_WIDE_RELU, [4, 8])
    assert choice.law.name == "chain-coherent"
    assert "chain-kernel" in [d["law"] for d in choice.not_default]


def test_a_calibrated_choice_says_why_each_derived_law_was_not_taken(capsys):
    """``calibrated_because`` names every derived law ranked above the calibrated choice with its reason,
    and only derived ones; an exact or Monte Carlo choice has none (API, JSON and the text line)."""
    import json

    from amutheory.cli import main

    relu = best_law(_WIDE_RELU, [4, 8])
    why = relu.calibrated_because
    assert why.startswith("no derived law is taken") and "chain-kernel: " in why and "chain-spectral: " in why
    assert "chain-coherent: " not in why  # the calibrated choice itself is not among the laws passed over
    assert best_law(ArchSpec(dim=1, width=16, spatial=6, activation="linear"), [4]).calibrated_because is None
    zero = ArchSpec(dim=1, width=32, spatial=8, activation="relu", padding="zero")
    assert best_law(zero, [4]).calibrated_because is None  # run R2 of the finite-width plan: no probe up to width 64
    assert "chain-kernel-finite-backward: the default for ReLU chains up to width 64" in \
        best_law(zero.with_(width=128), [4]).calibrated_because  # run W
    for gelu in (ArchSpec(family="mlp", width=64, activation="gelu"), ArchSpec(dim=1, width=32, spatial=8, activation="gelu")):
        assert best_law(gelu, [4]).calibrated_because is None  # runs J and K of the finite-width plan
    assert main(["laws", "--family", "transformer", "--width", "32", "--depths", "2,4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["choice"]["calibrated_because"] == "the family 'transformer' has no derived law"
    assert main(["laws", "--family", "conv", "--dim", "2", "--activation", "gelu", "--width", "32", "--depths", "2,4"]) == 0
    out = capsys.readouterr().out
    assert "calibrated because no derived law is taken for this net: chain-finite-width" in out
    assert "chain-kernel-finite: spatial" in out
    # as a user runs it: the installed command line in its own process
    import subprocess
    import sys

    got = subprocess.run([sys.executable, "-m", "amutheory", "laws", "--family", "conv", "--dim", "1", "--activation",
                          "relu", "--padding", "zero", "--width", "128", "--depths", "2,4"],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    assert "default: chain-coherent" in got.stdout
    assert "calibrated because no derived law is taken for this net:" in got.stdout
    assert "chain-kernel-finite-backward: the default for ReLU chains up to width 64" in got.stdout


def test_named_law_that_does_not_cover_the_net_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="chain-spectral does not cover"):
        predict(EXAMPLES["chain-kernel"][0], [4], law="chain-spectral")
    with pytest.raises(ValueError, match="law: no law called"):
        get_law("nope")


def test_unstable_residual_net_is_refused_once_with_the_reason():
    spec = ArchSpec(family="resnet", dim=1, width=32, kernel=1, spatial=1, batch=1, branch="conv", init="k-last",
                    activation="relu")
    with pytest.raises(ValueError, match="not stable") as exc:
        best_law(spec, [4])
    assert str(exc.value).count("not stable") == 1


def test_derive_json_labels_every_free_constant(capsys):
    import json

    from amutheory.cli import main

    for args, calibrated in ((["--family", "conv"], {"a", "b", "e"}),
                             (["--family", "resnet", "--branch", "conv-mlp"], {"A", "B", "e0"})):
        assert main(["derive", *args, "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert {k for k, v in d["free_constants"].items() if v["source"] == "calibrated"} == calibrated


def test_predict_cli_says_which_law_and_why(capsys):
    import json

    from amutheory.cli import main

    assert main(["predict", "--activation", "linear", "--width", "16", "--spatial", "6", "--depths", "4,8",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["law_registry"] == "chain-finite-width" and d["law_reason"].startswith("chain-finite-width")
    assert main(["laws", "--family", "resnet", "--branch", "conv-mlp", "--spatial", "8", "--depths", "128,192,256",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["choice"]["law"] == "resnet-coherent"
    assert [s["law"] for s in d["choice"]["skipped_for_cost"]] == ["resnet-points"]


def test_package_functions_survive_their_subpackages_being_imported():
    """``amutheory.measure`` is both the API function and the probe's sub-package: importing the
    sub-package must not replace the function (it did: ``measure(...)`` then raised 'module' not callable)."""
    import importlib

    import amutheory

    importlib.import_module("amutheory.measure.probe")
    from amutheory import measure as measure_again

    assert callable(amutheory.measure) and callable(measure_again)
