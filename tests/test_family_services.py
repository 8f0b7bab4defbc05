"""A family finds its model, theory and laws by registration (amutheory.families.services), never by
importing the layers above it: what each layer registers, the error when one is not imported, and a
family from outside the package that registers its model instead of overriding ``build_model``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from amutheory.families import (FAMILY_REGISTRY, NotProvided, get_family, is_provided, provide, provided,
                                register_family)
from amutheory.families.mlp import MlpFamily
from amutheory.families.resnet import ResidualFamily
from amutheory.spec import ArchSpec

BUILT_IN = ("conv", "resnet", "transformer", "mlp")


def _run(code: str) -> str:
    """``code`` in a fresh interpreter (nothing registered yet); its stdout."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_family_alone_names_the_layer_to_import_and_each_layer_registers_light():
    out = _run("""
        import sys
        from amutheory.families import NotProvided
        from amutheory.spec import ArchSpec

        spec = ArchSpec(family="resnet", depth=3, width=8, init="k-squared")
        family = spec.family_object
        for call in (lambda: family.derive(spec), lambda: family.build_model(spec), lambda: family.laws(),
                     lambda: family.branch_multiplier(spec), lambda: family.forward_stable(spec)):
            try:
                call()
            except NotProvided as exc:
                print("refused:", exc)
        print("probe layers", family.probe_layers(spec, 3))          # a size: the family's own
        import amutheory.measure, amutheory.symbolic                   # register the models and the theory
        print("heavy", sorted(m for m in ("torch", "sympy", "scipy") if m in sys.modules))
        print("alpha", family.branch_multiplier(spec), "stable", family.forward_stable(spec))
        print("exponent", family.derive(spec).exponent)
        print("model", type(family.build_seeded(spec, 0)).__name__)
        import amutheory.laws
        print("laws", "resnet-coherent" in [law.name for law in family.laws()])
    """)
    refused = [line for line in out.splitlines() if line.startswith("refused:")]
    assert len(refused) == 5
    assert "import amutheory.symbolic" in refused[0] and "symbolic depth law" in refused[0]
    assert "import amutheory.measure" in refused[1] and "torch model" in refused[1]
    assert "import amutheory.laws" in refused[2]
    assert all("amutheory.families.provide(" in line and "'resnet'" in line for line in refused)
    assert "probe layers 3" in out
    assert "heavy []" in out  # registering loads neither torch nor SymPy
    assert "alpha 1.0 stable True" in out and "exponent 0" in out
    assert "model ResidualConvNet" in out and "laws True" in out


def test_every_built_in_family_is_provided_for():
    import amutheory.laws  # noqa: F401
    import amutheory.measure  # noqa: F401
    import amutheory.symbolic  # noqa: F401

    for name in BUILT_IN:
        family = get_family(name)
        assert is_provided("model", family) and is_provided("derive", family) and is_provided("laws", family)
        assert family.theory_module and family.laws()
    for name in ("resnet", "transformer"):
        assert is_provided("branch_multiplier", name)
    assert is_provided("forward_stable", "resnet")
    assert not is_provided("model", "module")  # a user's module builds its own net


def test_provide_checks_its_arguments():
    with pytest.raises(ValueError, match="service must be one of model, derive"):
        provide("modle", print, family="conv")
    with pytest.raises(TypeError, match="implementation must be callable"):
        provide("model", 3, family="conv")
    with pytest.raises(ValueError, match="family must be a family's name or None"):
        provide("model", print, family="")
    with pytest.raises(ValueError, match="service must be one of"):
        provided("laws2", "conv")
    with pytest.raises(NotProvided, match="family 'nobody': its torch model"):
        provided("model", "nobody")
    assert issubclass(NotProvided, NotImplementedError) and not issubclass(NotProvided, ValueError)


class WideMlp(MlpFamily):
    """A built-in family under another name: it keeps the MLP's registered model and theory."""
    name, title = "wide-mlp", "wide MLP"


class Stub(ResidualFamily):
    """An outside family that registers its model instead of overriding ``build_model``."""
    name, title = "stub-res", "stub"


def test_a_subclass_of_a_built_in_keeps_its_model_and_theory_and_an_outside_family_can_register():
    import torch

    import amutheory.measure  # noqa: F401
    import amutheory.symbolic  # noqa: F401

    register_family(WideMlp())
    register_family(Stub())
    try:
        spec = ArchSpec(family="wide-mlp", depth=3, width=8, input_channels=4)
        assert type(spec.family_object.build_seeded(spec, 0)).__name__ == "MLP"
        assert spec.family_object.derive(spec).name == "mlp-relu"

        built = []

        def build_stub(spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
            built.append(spec.depth)
            return torch.nn.Linear(spec.width, spec.outputs)

        provide("model", build_stub, family="stub-res")
        stub = ArchSpec(family="stub-res", depth=2, width=4, spatial=5)
        assert isinstance(stub.family_object.build_model(stub), torch.nn.Linear) and built == [2]
        # its theory is still the residual net's (registered under the name of the class it derives from)
        assert stub.family_object.branch_multiplier(stub) == 1.0
    finally:
        FAMILY_REGISTRY.pop("wide-mlp", None)
        FAMILY_REGISTRY.pop("stub-res", None)
        from amutheory.families import services

        services._PROVIDED.pop(("model", "stub-res"), None)
