"""The contract of a law and of a family as a public battery, in the shape of scikit-learn's
``check_estimator``: run it on your own law or family before you register or ship it.

    from amutheory.testing import check_family, check_law
    check_family(MyFamily())                     # raises AssertionError naming the failed check
    check_law(MyLaw(), spec=ArchSpec(family="my-family", depth=2, width=8))

Each check is one function in :data:`LAW_CHECKS` / :data:`FAMILY_CHECKS` whose docstring says what
it asks; a failure raises ``AssertionError("check_law(my-law) values: ...")`` naming the law or
family, the check and what was wrong.  Both return the names of the checks passed (a check that
does not apply, e.g. the per-layer form of a law without one, counts as passed).  The project's own
tests run both on every registered law and family (``tests/test_laws_contract.py``,
``tests/test_families.py``).

A family that is not registered yet is registered for the battery and removed after it; a law is
never registered by it.  The checks build small nets (width 8, depth at most 4) and take seconds;
``check_law`` evaluates the law once at ``depths`` (a calibrated law measures its calibration nets
with 8 seeds unless given ``calibration``).
"""

from __future__ import annotations

import json
import math

__all__ = ["check_law", "check_family", "example_specs", "LAW_CHECKS", "FAMILY_CHECKS"]

#: the sizes every example net starts from (a family's ``normalise`` fixes the fields it does not read)
EXAMPLE_SIZES = dict(depth=2, width=8, kernel=3, spatial=4, batch=2, input_channels=3, outputs=3, heads=2,
                     mlp_ratio=2)


#: the layers that register what a family finds by registration (its model, theory and laws)
LAYERS = ("amutheory.measure", "amutheory.symbolic", "amutheory.laws")


def _import_layers() -> None:
    import importlib

    for name in LAYERS:
        importlib.import_module(name)


class _Context:
    """What the checks share: the object, its example spec, depths, calibration and values."""

    def __init__(self, obj, kind: str, spec=None, depths=(3, 5, 8), calibration=None):
        self.obj, self.kind, self.spec, self.depths, self.calibration = obj, kind, spec, list(depths), calibration
        self.values = None

    def fail(self, check: str, message: str):
        name = getattr(self.obj, "name", None) or type(self.obj).__name__
        raise AssertionError(f"check_{self.kind}({name}) {check}: {message}")

    def require(self, ok, check: str, message: str):
        if not ok:
            self.fail(check, message)


#: the dense shape some exact laws need (kernel = spatial = batch = 1)
DENSE_SIZES = dict(EXAMPLE_SIZES, kernel=1, spatial=1, batch=1)


def example_specs(family: str):
    """Small nets of ``family``: ReLU and linear, each padding and residual branch, and the dense
    shape (kernel = spatial = batch = 1) of each (every one a valid :class:`~amutheory.spec.ArchSpec`;
    the combinations the family refuses are left out), in a fixed order: where :func:`check_law`
    looks for a net the law covers when given none."""
    import itertools

    from amutheory.spec import ArchSpec

    seen = []
    for act, sizes, pad, branch in itertools.product(("relu", "linear"), (EXAMPLE_SIZES, DENSE_SIZES),
                                                     ("circular", "zero"), ("conv", "conv-mlp", "preact")):
        try:
            spec = ArchSpec(family=family, activation=act, padding=pad, branch=branch, **sizes)
        except (ValueError, TypeError):
            continue
        if spec not in seen:
            seen.append(spec)
            yield spec


# ------------------------------------------------------------------------------------------- laws
def law_attributes(c: _Context) -> None:
    """``name``, ``family``, ``summary`` and ``leaves_out`` are non-empty strings; ``exactness`` is one
    of :data:`amutheory.laws.EXACTNESS`; ``default_candidate`` is a bool, with ``not_default_because``
    saying why where it is False; ``priority`` is a finite number (0 for the built-ins)."""
    from amutheory.laws.contract import EXACTNESS, Law

    law = c.obj
    c.require(isinstance(law, Law), "attributes", f"not an amutheory.laws.Law instance: {type(law).__name__}")
    for attr in ("name", "family", "summary", "leaves_out"):
        value = getattr(law, attr, None)
        c.require(isinstance(value, str) and value.strip(), "attributes", f"{attr} must be a non-empty string, "
                  f"got {value!r}")
    c.require(isinstance(law.source, str), "attributes", f"source must be a string, got {law.source!r}")
    c.require(law.exactness in EXACTNESS, "attributes",
              f"exactness must be one of {', '.join(EXACTNESS)}, got {law.exactness!r}")
    c.require(isinstance(law.default_candidate, bool), "attributes",
              f"default_candidate must be a bool, got {law.default_candidate!r}")
    c.require(law.default_candidate or law.not_default_because, "attributes",
              "a law that is not a default candidate says why in not_default_because")
    p = getattr(law, "priority", 0)
    c.require(not isinstance(p, bool) and isinstance(p, (int, float)) and math.isfinite(p), "attributes",
              f"priority must be a finite number, got {p!r}")


def law_family(c: _Context) -> None:
    """``family`` names a registered family that has an ArchSpec (the family is registered first)."""
    from amutheory.families import get_family

    try:
        family = get_family(c.obj.family)
    except ValueError as exc:
        c.fail("family", str(exc))
    c.require(family.has_spec, "family", f"family {c.obj.family!r} has no ArchSpec (a user's module): no law runs "
              "on it")


def law_describe(c: _Context) -> None:
    """``describe()`` is a JSON-serialisable dict whose name, family and exactness are the law's."""
    d = c.obj.describe()
    c.require(isinstance(d, dict), "describe", f"describe() must return a dict, got {type(d).__name__}")
    try:
        json.dumps(d)
    except (TypeError, ValueError) as exc:
        c.fail("describe", f"describe() is not JSON-serialisable ({exc})")
    for key in ("name", "family", "exactness"):
        c.require(d.get(key) == getattr(c.obj, key), "describe", f"describe()[{key!r}] is {d.get(key)!r}, the law's "
                  f"{key} is {getattr(c.obj, key)!r}")


def law_covers_example(c: _Context) -> None:
    """``covers(spec)`` returns a :class:`~amutheory.laws.Coverage`, true with a reason, on the example
    net (the one given, or the first of :func:`example_specs` it covers); ``covers`` of something
    that is not an ArchSpec raises ``TypeError``."""
    from amutheory.laws.contract import Coverage

    law = c.obj
    if c.spec is None:
        for spec in example_specs(law.family):
            coverage = law.covers(spec)
            if coverage:
                c.spec = spec
                break
        else:
            c.fail("covers", f"covers none of the small example nets of family {law.family!r}: pass spec=, a "
                   "small net it covers")
    coverage = law.covers(c.spec)
    c.require(isinstance(coverage, Coverage), "covers", f"covers() must return a Coverage, got "
              f"{type(coverage).__name__}")
    c.require(coverage.ok, "covers", f"does not cover the example net {c.spec}: {coverage.reason}")
    c.require(isinstance(coverage.reason, str) and coverage.reason.strip(), "covers",
              "a Coverage says how the law covers the net (reason)")
    try:
        law.covers("not a spec")
    except TypeError:
        pass
    else:
        c.fail("covers", "covers() of something that is not an ArchSpec must raise TypeError")


def law_refuses_other_families(c: _Context) -> None:
    """``covers`` of a net of every other registered family is false, with a reason naming the family."""
    from amutheory.families import family_names

    for other in family_names():
        if other == c.obj.family:
            continue
        spec = next(iter(example_specs(other)), None)
        if spec is None:
            continue
        coverage = c.obj.covers(spec)
        c.require(not coverage, "refuses other families", f"covers a {other} net: {spec}")
        c.require("family" in coverage.reason, "refuses other families",
                  f"the reason it gives for a {other} net does not name the family: {coverage.reason!r}")


def law_cost(c: _Context) -> None:
    """``cost(spec, depths)`` is a :class:`~amutheory.laws.Cost` with a finite positive estimate and a
    ``how``, not smaller for more (deeper) depths."""
    from amutheory.laws.contract import Cost

    shallow, deep = c.obj.cost(c.spec, [2, 4]), c.obj.cost(c.spec, [2, 4, 64])
    for cost in (shallow, deep):
        c.require(isinstance(cost, Cost), "cost", f"cost() must return a Cost, got {type(cost).__name__}")
        c.require(math.isfinite(cost.seconds) and cost.seconds > 0, "cost",
                  f"the estimate must be finite and > 0 s, got {cost.seconds!r}")
        c.require(isinstance(cost.how, str) and cost.how.strip(), "cost", "a Cost says what it counts (how)")
    c.require(shallow.seconds <= deep.seconds, "cost", f"depths [2, 4, 64] are estimated cheaper ({deep.seconds:g} "
              f"s) than [2, 4] ({shallow.seconds:g} s)")


def law_values(c: _Context) -> None:
    """``evaluate(spec, depths)`` (through :func:`amutheory.laws.call_evaluate`) returns
    :class:`~amutheory.laws.LawValues` for exactly those depths: ``law`` its name, its exactness,
    ``s_bar`` finite and > 0, ``s_bar_se`` finite and >= 0 of the same shape, every constant a
    :class:`~amutheory.constants.Constant` with a known source; an exact law has no calibrated or
    Monte Carlo constant and zero standard errors, a Monte Carlo law positive standard errors and a
    Monte Carlo constant, a calibrated law a calibrated constant; ``local_slope``, where given, one
    finite value per depth."""
    import numpy as np

    from amutheory.constants import SOURCES, Constant
    from amutheory.laws.contract import LawValues, call_evaluate

    law, n = c.obj, len(c.depths)
    try:
        v = call_evaluate(law, c.spec, c.depths, calibration=c.calibration, calibration_seeds=8)
    except TypeError as exc:
        c.fail("values", str(exc))
    c.values = v
    c.require(isinstance(v, LawValues), "values", f"evaluate must return LawValues, got {type(v).__name__}")
    c.require(v.law == law.name, "values", f"LawValues.law is {v.law!r}, not the law's name {law.name!r}")
    c.require(list(v.depths) == c.depths, "values", f"depths {list(v.depths)} for the depths asked {c.depths}")
    c.require(v.exactness == law.exactness, "values", f"exactness {v.exactness!r}, the law's is {law.exactness!r}")
    s, se = np.asarray(v.s_bar, float), np.asarray(v.s_bar_se, float)
    c.require(s.shape == se.shape == (n,), "values", f"s_bar {s.shape} and s_bar_se {se.shape} must be ({n},)")
    c.require(np.all(np.isfinite(s)) and np.all(s > 0), "values", f"s_bar must be finite and > 0, got {s.tolist()}")
    c.require(np.all(np.isfinite(se)) and np.all(se >= 0), "values", f"s_bar_se must be finite and >= 0, got "
              f"{se.tolist()}")
    for key, const in v.constants.items():
        c.require(isinstance(const, Constant) and const.source in SOURCES, "values",
                  f"constant {key!r} must be a Constant with a source in {SOURCES}, got {const!r}")
    sources = {const.source for const in v.constants.values()}
    if law.exactness == "exact":
        c.require(not sources & {"calibrated", "monte-carlo"} and np.all(se == 0), "values",
                  f"an exact law has no calibrated or Monte Carlo constant and zero s_bar_se (sources {sorted(sources)})")
    elif law.exactness == "monte-carlo":
        c.require("monte-carlo" in sources and np.all(se > 0), "values",
                  "a Monte Carlo law has a Monte Carlo constant and positive s_bar_se")
    elif law.exactness == "approximate":
        c.require("calibrated" not in sources, "values", "an approximate law is fitted to nothing (no calibrated "
                  f"constant; sources {sorted(sources)})")
    else:
        c.require("calibrated" in sources, "values", "a calibrated law has a calibrated constant")
    if v.local_slope is not None:
        slope = np.asarray(v.local_slope, float)
        c.require(slope.shape == (n,) and np.all(np.isfinite(slope)), "values",
                  f"local_slope must be {n} finite values, got {slope.tolist()}")


def law_per_layer(c: _Context) -> None:
    """Where the law gives per-layer moments ``s_l``: one per layer the probe measures
    (``family.probe_layers``) at each depth, averaging to ``s_bar`` (two code paths of one law)."""
    import numpy as np

    v = c.values
    if v is None or v.s_l is None:
        return
    family = c.spec.family_object
    for d, s_bar in zip(c.depths, np.asarray(v.s_bar, float)):
        c.require(d in v.s_l, "per-layer", f"s_l has no entry for depth {d}")
        s_l = np.asarray(v.s_l[d], float)
        layers = family.probe_layers(c.spec, d)
        c.require(len(s_l) == layers, "per-layer", f"depth {d}: {len(s_l)} values of s_l, the probe measures {layers}")
        c.require(math.isclose(s_l.mean(), s_bar, rel_tol=1e-9), "per-layer",
                  f"depth {d}: s_l averages to {s_l.mean():.12g}, s_bar is {s_bar:.12g}")


def law_predicts(c: _Context) -> None:
    """Registered under its name, the law runs through ``predict(spec, depths, law=name)``: the
    prediction names it and its eta* is finite and > 0 at every depth."""
    import numpy as np

    from amutheory.api.selection import predict
    from amutheory.laws.registry import REGISTRY

    if dict.get(REGISTRY, c.obj.name) is not c.obj:
        return  # not registered (the battery registers no law)
    pred = predict(c.spec, c.depths, law=c.obj.name, calibration_measurement=c.calibration, calibration_seeds=8)
    c.require(pred.law_registry == c.obj.name, "predict", f"predict(law={c.obj.name!r}) ran {pred.law_registry!r}")
    eta = np.asarray(pred.eta_star, float)
    c.require(eta.shape == (len(c.depths),) and np.all(np.isfinite(eta)) and np.all(eta > 0), "predict",
              f"eta* must be finite and > 0 at every depth, got {eta.tolist()}")


#: the checks of :func:`check_law`, in the order they run: ``(name, function)``
LAW_CHECKS = (("attributes", law_attributes), ("family", law_family), ("describe", law_describe),
              ("covers", law_covers_example), ("refuses other families", law_refuses_other_families),
              ("cost", law_cost), ("values", law_values), ("per-layer", law_per_layer), ("predict", law_predicts))


def _run(c, name: str, check) -> None:
    """Run one check; the law's or family's own code failing inside it fails the check by name."""
    try:
        check(c)
    except AssertionError:
        raise
    except Exception as exc:
        c.fail(name, f"raised {type(exc).__name__}: {' '.join(str(exc).split())}")


def check_law(law, spec=None, depths=(3, 5, 8), calibration=None) -> list[str]:
    """Run :data:`LAW_CHECKS` on ``law`` (a :class:`~amutheory.laws.Law` instance, or a subclass,
    which is instantiated); the names of the checks passed.  ``spec``: a small net the law covers
    (default: the first of :func:`example_specs` it covers); ``depths``: where it is evaluated;
    ``calibration``: a :class:`~amutheory.api.Measurement` for a calibrated law (else it measures
    its own, 8 seeds).  ``AssertionError`` naming the law and the first check that fails."""
    _import_layers()
    from amutheory.laws.contract import Law

    if isinstance(law, type) and issubclass(law, Law):
        law = law()
    c = _Context(law, "law", spec, depths, calibration)
    passed = []
    for name, check in LAW_CHECKS:
        _run(c, name, check)
        passed.append(name)
    return passed


# ----------------------------------------------------------------------------------------- families
def family_attributes(c: _Context) -> None:
    """``name``, ``title`` and ``summary`` are non-empty strings; ``counts_blocks``, ``has_spec``,
    ``takes_norm``, ``measures_stream`` and ``campaign_figures`` are bools; ``unused_fields`` names
    ArchSpec fields outside the shared ones (:data:`amutheory.families.base.SHARED_FIELDS`); the
    optional ``model_module``, ``theory_module`` and ``campaign_module`` are empty or importable."""
    import dataclasses
    import importlib

    from amutheory.families.base import SHARED_FIELDS, Family
    from amutheory.spec import ArchSpec

    f = c.obj
    c.require(isinstance(f, Family), "attributes", f"not an amutheory.families.Family instance: {type(f).__name__}")
    for attr in ("name", "title", "summary"):
        value = getattr(f, attr, None)
        c.require(isinstance(value, str) and value.strip(), "attributes", f"{attr} must be a non-empty string, "
                  f"got {value!r}")
    for attr in ("counts_blocks", "has_spec", "takes_norm", "measures_stream", "campaign_figures"):
        c.require(isinstance(getattr(f, attr), bool), "attributes", f"{attr} must be a bool, got {getattr(f, attr)!r}")
    c.require(f.takes_norm or f.no_norm_because, "attributes", "a family that takes no norm says why (no_norm_because)")
    fields = {fl.name for fl in dataclasses.fields(ArchSpec)}
    bad = [n for n in f.unused_fields if n not in fields or n in SHARED_FIELDS]
    c.require(isinstance(f.unused_fields, tuple) and not bad, "attributes",
              f"unused_fields must be a tuple of ArchSpec fields other than the shared ones; not: {bad}")
    for attr in ("model_module", "theory_module", "campaign_module"):
        dotted = getattr(f, attr, "")
        if dotted:
            try:
                importlib.import_module(dotted)
            except ImportError as exc:
                c.fail("attributes", f"{attr} {dotted!r} does not import ({exc})")


def family_describe(c: _Context) -> None:
    """``describe()`` is a JSON-serialisable dict naming the family; ``depth_symbol()`` is K for a
    family whose depth counts blocks, L otherwise; ``laws()`` are laws of this family."""
    d = c.obj.describe()
    c.require(isinstance(d, dict) and d.get("name") == c.obj.name, "describe",
              f"describe() must be a dict with the family's name, got {d!r}")
    try:
        json.dumps(d)
    except (TypeError, ValueError) as exc:
        c.fail("describe", f"describe() is not JSON-serialisable ({exc})")
    c.require(c.obj.depth_symbol() == ("K" if c.obj.counts_blocks else "L"), "describe",
              f"depth_symbol() is {c.obj.depth_symbol()!r} with counts_blocks={c.obj.counts_blocks}")
    c.require(all(law.family == c.obj.name for law in c.obj.laws()), "describe", "laws() holds a law of another family")


def family_spec(c: _Context) -> None:
    """A small ``ArchSpec(family=name, ...)`` builds (the one given, or the first of
    :func:`example_specs`); its ``family_object`` is the family; its serialised form leaves out the
    ``unused_fields`` and reads back to the same spec (stored results keep resuming)."""
    from amutheory.spec import ArchSpec

    if c.spec is None:
        c.spec = next(iter(example_specs(c.obj.name)), None)
        if c.spec is None:
            try:
                ArchSpec(family=c.obj.name, **EXAMPLE_SIZES)
            except (ValueError, TypeError) as exc:
                c.fail("spec", f"no small ArchSpec of the family builds ({exc}): pass spec=")
    c.require(c.spec.family == c.obj.name, "spec", f"the example is a {c.spec.family} net")
    c.require(c.spec.family_object is c.obj, "spec", "spec.family_object is not this family (another one is "
              f"registered as {c.obj.name!r})")
    d = c.spec.to_dict()
    c.require(not set(c.obj.unused_fields) & set(d), "spec",
              f"to_dict() keeps unused fields {sorted(set(c.obj.unused_fields) & set(d))}")
    c.require(ArchSpec(**d).to_dict() == d, "spec", "ArchSpec(**spec.to_dict()) does not read back to the same "
              "stored spec")


def family_model(c: _Context) -> None:
    """``build_seeded(spec, seed)`` is reproducible (the same seed, the same weights; another seed,
    other weights), of one class for every seed, and has ``parameter_count(spec)`` parameters;
    ``check_training_options(spec, "none", 0.0)`` accepts the defaults."""
    import torch

    f, spec = c.obj, c.spec
    a, b, other = (f.build_seeded(spec, seed=s, dtype=torch.float64) for s in (0, 0, 1))
    c.require(isinstance(a, torch.nn.Module), "model", f"build_model must return a torch.nn.Module, got "
              f"{type(a).__name__}")
    c.require(type(a) is type(other), "model", f"seeds 0 and 1 give models of two classes ({type(a).__qualname__}, "
              f"{type(other).__qualname__}); the probe stacks the seeds' models, so every seed needs one class")
    pa, pb, po = (list(m.parameters()) for m in (a, b, other))
    c.require(pa and all(torch.equal(p, q) for p, q in zip(pa, pb)), "model",
              "the same seed gives different weights (draw them from the generator passed to build_model)")
    c.require(any(not torch.equal(p, q) for p, q in zip(pa, po)), "model", "seeds 0 and 1 give the same weights")
    count = sum(p.numel() for p in pa)
    c.require(f.parameter_count(spec) == count, "model",
              f"parameter_count(spec) is {f.parameter_count(spec)}, the model has {count}")
    f.check_training_options(spec, "none", 0.0)


def family_forward(c: _Context) -> None:
    """The model reads a batch of ``input_shape(spec, batch=2)``: ``preactivations(x)`` returns
    ``probe_layers(spec, depth)`` tensors and the output, of shape ``(2, outputs)`` as ``forward(x)``'s."""
    import torch

    f, spec = c.obj, c.spec
    model = f.build_seeded(spec, seed=0, dtype=torch.float64)
    shape = tuple(f.input_shape(spec, batch=2))
    x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    c.require(hasattr(model, "preactivations"), "forward", "the model has no preactivations(x) -> (hs, out): the "
              "probe reads the pre-activations from it")
    hs, out = model.preactivations(x)
    c.require(len(hs) == f.probe_layers(spec, spec.depth), "forward",
              f"preactivations gives {len(hs)} tensors, probe_layers(spec, {spec.depth}) says "
              f"{f.probe_layers(spec, spec.depth)}")
    c.require(tuple(out.shape) == (2, spec.outputs), "forward", f"output shape {tuple(out.shape)}, expected "
              f"(2, {spec.outputs})")
    c.require(tuple(model(x).shape) == (2, spec.outputs), "forward", "forward(x) and preactivations(x)[1] differ "
              "in shape")


def family_sizes(c: _Context) -> None:
    """Sizes are affine in depth, one block's worth per unit: ``parameter_count`` and
    ``activation_elements`` grow by the same positive amount from depth 1 to 2 as from 2 to 3;
    ``modules_per_block`` >= 1; ``probe_layers`` is proportional to depth."""
    f, spec = c.obj, c.spec
    for size in (f.parameter_count, f.activation_elements):
        a, b, d = (size(spec.with_(depth=k)) for k in (1, 2, 3))
        c.require(b - a == d - b > 0, "sizes", f"{size.__name__} at depths 1, 2, 3 is {a}, {b}, {d}: not one "
                  "positive block's worth per unit of depth")
    c.require(f.modules_per_block(spec) >= 1, "sizes", f"modules_per_block is {f.modules_per_block(spec)}")
    c.require(f.probe_layers(spec, 4) == 2 * f.probe_layers(spec, 2) > 0, "sizes",
              f"probe_layers at depths 2 and 4: {f.probe_layers(spec, 2)}, {f.probe_layers(spec, 4)}")


def family_probe(c: _Context) -> None:
    """The one-step probe (:func:`amutheory.measure.probe.probe`) runs on two seeds of the example
    and gives finite, positive ``s_l`` for every layer."""
    import numpy as np

    from amutheory.measure.probe import probe

    s = probe(c.spec, range(2)).s
    layers = c.obj.probe_layers(c.spec, c.spec.depth)
    c.require(s.shape == (2, layers), "probe", f"s has shape {s.shape}, expected (2, {layers})")
    c.require(np.all(np.isfinite(s)) and np.all(s > 0), "probe", f"s_l must be finite and > 0, got {s.tolist()}")


def family_defaults(c: _Context) -> None:
    """``sweep_defaults()`` sets ArchSpec fields only; ``data_layout`` gives ``input_channels`` and
    ``spatial``; ``net_label`` of the stored spec is a non-empty string; ``hidden_fan_in`` and
    ``branch_multiplier`` are finite and > 0."""
    import dataclasses

    from amutheory.spec import ArchSpec

    f, spec = c.obj, c.spec
    fields = {fl.name for fl in dataclasses.fields(ArchSpec)}
    extra = set(f.sweep_defaults()) - fields
    c.require(not extra, "defaults", f"sweep_defaults() sets {sorted(extra)}, not ArchSpec fields")
    layout = f.data_layout(spec, 3, 8)
    c.require(set(layout) == {"input_channels", "spatial"}, "defaults", f"data_layout gives {layout}")
    label = f.net_label(spec.to_dict())
    c.require(isinstance(label, str) and label.strip(), "defaults", f"net_label gives {label!r}")
    for name in ("hidden_fan_in", "branch_multiplier"):
        value = getattr(f, name)(spec)
        c.require(math.isfinite(value) and value > 0, "defaults", f"{name} is {value!r}")


#: the checks of :func:`check_family`, in the order they run (those after ``describe`` need an ArchSpec
#: and are skipped for a family without one, such as a user's module)
FAMILY_CHECKS = (("attributes", family_attributes), ("describe", family_describe), ("spec", family_spec),
                 ("model", family_model), ("forward", family_forward), ("sizes", family_sizes),
                 ("probe", family_probe), ("defaults", family_defaults))


def check_family(family, spec=None) -> list[str]:
    """Run :data:`FAMILY_CHECKS` on ``family`` (a :class:`~amutheory.families.Family` instance, or a
    subclass, which is instantiated), registered for the battery if it is not; the names of the
    checks passed.  ``spec``: a small net of the family (default: the first of
    :func:`example_specs`).  ``AssertionError`` naming the family and the first check that fails."""
    _import_layers()
    from amutheory.families import FAMILY_REGISTRY, Family, register_family

    if isinstance(family, type) and issubclass(family, Family):
        family = family()
    c = _Context(family, "family", spec)
    added = False
    passed = []
    try:
        for name, check in FAMILY_CHECKS:
            if name == "spec" and isinstance(family, Family) and not dict.__contains__(FAMILY_REGISTRY, family.name):
                register_family(family)  # an ArchSpec asks the registry for its family
                added = True
            if name not in ("attributes", "describe") and not getattr(family, "has_spec", True):
                continue  # a user's module: no ArchSpec, no probe
            _run(c, name, check)
            passed.append(name)
    finally:
        if added:
            FAMILY_REGISTRY.pop(family.name, None)
    return passed
