"""The law contract, checked for every law in the registry (one example net per law), and the
default choice of law.

Each registered law must cover its example, evaluate to a :class:`LawValues` whose constants carry
their sources, agree with itself (its per-layer ``s_l`` average to its ``s_bar``), state a finite cost
that grows with depth, and refuse other families with a reason.  Where a law has an independent
check it is made here for every law that has it: exact sums against brute force, exact laws against
the probe on real nets.  A new law needs one example below (the first test fails until it has one).
"""

import math

import numpy as np
import pytest

from amutheory import ArchSpec, measure, predict
from amutheory.constants import SOURCES, Constant
from amutheory.laws import EXACTNESS, REGISTRY, LawValues, best_law, get_law
from amutheory.laws.costs import layers_of

_CONV = dict(dim=1, width=32, kernel=3, spatial=6, batch=2)
_RES = dict(family="resnet", dim=1, width=32, kernel=3, spatial=4, batch=2, init="k-last")
_DENSE = dict(family="resnet", dim=1, width=32, kernel=1, spatial=1, batch=1, init="k-last")
_MLP = dict(family="mlp", width=32, input_channels=8, batch=2)
_TRF = dict(family="transformer", width=16, spatial=4, heads=2, mlp_ratio=2, init="k-last", activation="relu")

#: one small net each law covers, and the calibration depths of the calibrated ones
EXAMPLES = {
    "chain-spectral": (ArchSpec(**_CONV, activation="linear"), None),
    "chain-operator": (ArchSpec(**_CONV, activation="linear", padding="zero"), None),
    "chain-kernel": (ArchSpec(**_CONV, activation="relu", padding="zero"), None),
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
    "mlp-spectral": (ArchSpec(**_MLP, activation="linear"), None),
    "mlp-kernel": (ArchSpec(**_MLP, activation="relu"), None),
    "mlp-coherent": (ArchSpec(**_MLP, activation="relu"), [2, 3, 4, 6]),
}
DEPTHS = [3, 5, 8]


def test_every_registered_law_has_an_example():
    assert set(EXAMPLES) == set(REGISTRY)


@pytest.fixture(scope="module")
def evaluated():
    """Each law's values at DEPTHS on its example (calibrated laws: 8 seeds at their calibration depths)."""
    out = {}
    for name, (spec, cal) in EXAMPLES.items():
        calibration = None if cal is None else measure(spec, cal, seeds=8)
        out[name] = get_law(name).evaluate(spec, DEPTHS, calibration=calibration)
    return out


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_law_describes_itself_and_covers_its_example(name):
    law, (spec, _) = REGISTRY[name], EXAMPLES[name]
    assert law.exactness in EXACTNESS and law.family == spec.family and law.summary and law.leaves_out
    assert law.default_candidate or law.not_default_because
    coverage = law.covers(spec)
    assert coverage and coverage.reason


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_law_refuses_other_families_with_a_reason(name):
    law = REGISTRY[name]
    other = next(spec for spec, _ in EXAMPLES.values() if spec.family != law.family)
    coverage = law.covers(other)
    assert not coverage and "family" in coverage.reason


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_law_values_keep_the_contract(name, evaluated):
    law = REGISTRY[name]
    v = evaluated[name]
    assert isinstance(v, LawValues) and v.law == name and v.depths == DEPTHS and v.exactness == law.exactness
    assert v.s_bar.shape == v.s_bar_se.shape == (len(DEPTHS),)
    assert np.all(np.isfinite(v.s_bar)) and np.all(v.s_bar > 0)
    assert np.all(np.isfinite(v.s_bar_se)) and np.all(v.s_bar_se >= 0)
    assert all(isinstance(c, Constant) and c.source in SOURCES for c in v.constants.values())
    sources = {c.source for c in v.constants.values()}
    if law.exactness == "exact":
        assert "calibrated" not in sources and "monte-carlo" not in sources and np.all(v.s_bar_se == 0)
    if law.exactness == "monte-carlo":
        assert "monte-carlo" in sources and np.all(v.s_bar_se > 0)
    if law.exactness == "calibrated":
        assert "calibrated" in sources


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_law_per_layer_moments_average_to_its_s_bar(name, evaluated):
    """Two code paths of one law: the per-layer form and s_bar (where the law has a per-layer form)."""
    v, (spec, _) = evaluated[name], EXAMPLES[name]
    if v.s_l is None:
        pytest.skip(f"{name} has no per-layer form")
    for d, s_bar in zip(DEPTHS, v.s_bar):
        s_l = np.asarray(v.s_l[d])
        assert len(s_l) == layers_of(spec, d)
        assert s_l.mean() == pytest.approx(s_bar, rel=1e-9)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_law_cost_is_finite_and_grows_with_depth(name):
    law, (spec, cal) = REGISTRY[name], EXAMPLES[name]
    kw = {} if cal is None else {"calibration_depths": tuple(cal), "calibration_seeds": 8}
    shallow, deep = law.cost(spec, [2, 4], **kw), law.cost(spec, [2, 4, 64], **kw)
    assert 0 < shallow.seconds <= deep.seconds < math.inf
    assert shallow.how


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
    assert d["law_registry"] == "chain-spectral" and "exact" in d["law_reason"]
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


def test_relu_chain_default_stays_calibrated_and_names_the_kernel_law_it_passed_over():
    choice = best_law(EXAMPLES["chain-kernel"][0], [4, 8])
    assert choice.law.name == "chain-coherent"
    assert "chain-kernel" in [d["law"] for d in choice.not_default]


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
    assert d["law_registry"] == "chain-spectral" and d["law_reason"].startswith("chain-spectral")
    assert main(["laws", "--family", "resnet", "--branch", "conv-mlp", "--spatial", "16", "--depths", "4,8",
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
