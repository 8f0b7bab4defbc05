"""ARCHITECTURE.md's guides followed literally from outside the package: a toy family ("Adding a
family") and a toy law of it ("Adding a law") are registered, and the shared machinery -- spec
checks, serialisation, the probe, the law registry's choice -- runs on them unchanged."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from amutheory import laws
from amutheory.families import FAMILY_REGISTRY, Family, register_family
from amutheory.laws import Coverage, Cost, Law, LawValues, best_law
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec, ProbeProtocol


class ToyModel(nn.Module):
    """A linear MLP: ``preactivations(x) -> (hs, out)`` and ``forward(x)``, weights from ``generator``."""

    def __init__(self, spec, generator=None):
        super().__init__()
        sizes = [spec.input_channels] + [spec.width] * spec.depth
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=False, dtype=torch.float64) for a, b in zip(sizes, sizes[1:]))
        self.head = nn.Linear(spec.width, spec.outputs, bias=False, dtype=torch.float64)
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


class Toy(Family):
    name, title, summary = "toy", "toy net", "a linear MLP under another name"
    unused_fields = ("dim", "kernel", "spatial", "padding", "branch", "init", "shortcut", "heads",
                     "mlp_ratio", "attn_scale")

    def normalise(self, spec):
        return {"dim": 1, "kernel": 1, "spatial": 1, "padding": "circular"}

    def data_dim(self, spec):
        return 0  # inputs (B, input_channels)

    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
        return ToyModel(spec, generator)

    def parameter_count(self, spec):
        return spec.input_channels * spec.width + (spec.depth - 1) * spec.width**2 + spec.width * spec.outputs

    def activation_elements(self, spec):
        return spec.input_channels + 2 * spec.depth * spec.width


class ToyLaw(Law):
    """A law of the toy family: the probe's own mean over 8 seeds (a law only in form, but a law)."""

    name, family, exactness = "toy-probe", "toy", "calibrated"
    summary = "the probe's mean over 8 seeds at each depth"
    leaves_out = "nothing; it measures"
    source = "amutheory.measure.probe"

    def _covers(self, spec):
        return Coverage(True, "any toy net")

    def cost(self, spec, depths, **_):
        return Cost(1.0, "probe", "8 seeds per depth")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, **options):
        from amutheory.constants import Constant

        s = [probe(spec.with_(depth=d), range(8), protocol).s_bar for d in depths]
        s_bar = np.array([v.mean() for v in s])
        se = np.array([v.std(ddof=1) / np.sqrt(len(v)) for v in s])
        return LawValues(self.name, list(depths), s_bar, se,
                         {"seeds": Constant("seeds", 8.0, "calibrated", note="probe seeds per depth")}, self.exactness)


@pytest.fixture
def toy_registered():
    """The toy family and its law registered for one test, and removed after it."""
    register_family(Toy())
    law = ToyLaw()
    register = getattr(laws, "register", None)  # issue 38 part 2's amutheory.laws.register, where present
    if register is not None:
        register(law)
    else:
        laws.REGISTRY[law.name] = law
    yield law
    FAMILY_REGISTRY.pop("toy", None)
    laws.REGISTRY.pop(law.name, None)


def test_toy_family_and_law_run_through_the_shared_machinery(toy_registered):
    spec = ArchSpec(family="toy", depth=3, width=16, input_channels=5, kernel=3, spatial=8)
    assert (spec.kernel, spec.spatial) == (1, 1) and "kernel" not in spec.to_dict()
    assert spec.family_object.input_shape(spec) == (spec.batch, 5)
    model = spec.family_object.build_model(spec, torch.Generator().manual_seed(0))
    assert spec.family_object.parameter_count(spec) == sum(p.numel() for p in model.parameters())
    s = probe(spec, range(4)).s
    assert s.shape == (4, 3) and np.all(s > 0)
    choice = best_law(spec, [2, 4])
    assert choice.law is toy_registered
    values = choice.law.evaluate(spec, [2, 4])
    assert values.law == "toy-probe" and np.all(values.s_bar > 0) and np.all(values.s_bar_se > 0)


def test_a_duplicate_family_name_is_refused(toy_registered):
    with pytest.raises(ValueError, match="registered already"):
        register_family(Toy())
