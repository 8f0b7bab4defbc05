"""What the backward-factor laws (``mlp-kernel-finite-backward``, ``chain-kernel-finite-backward``) share: the
critical ``c`` they need for GELU and tanh, and their inputs as labelled constants."""

from __future__ import annotations

from amutheory.constants import Constant
from amutheory.laws.contract import Coverage
from amutheory.spec import ArchSpec


def critical_only(spec: ArchSpec) -> Coverage | None:
    """``None`` when a GELU or tanh net runs at its critical ``c`` (the only ``c`` whose pre-activation variance, and
    so one backward step's variance, is the same at every layer: what the backward factor's equal-variance width
    needs), else the refusal."""
    from amutheory.activations import get_activation

    critical = get_activation(spec.activation).critical_c()
    if abs(spec.c - critical) > 1e-9 * critical:
        return Coverage(False, f"c: the backward factor needs the critical c = {critical:.6g} of {spec.activation} "
                               f"(the same step variance at every layer), got {spec.c:g}")
    return None


def backward_constants(n_b: float, activation: str) -> dict:
    """The backward factor's inputs as labelled constants (exact for ReLU, by quadrature for GELU and tanh): the
    equal-variance width, one backward step's ``n Var F / (E F)^2``, and the same-unit coupling ``rho_fb`` that
    the factor does not carry."""
    from amutheory.activations import get_activation
    from amutheory.symbolic.chain.backward_width import step_variance_factor

    factor, source = step_variance_factor(activation)
    rho = get_activation(activation).forward_backward_coupling(1.0)
    return {"backward_width": Constant("backward_width", n_b, source,
                                       note=f"the linear width of equal backward-step variance, 2n / {factor:.4g} for "
                                            f"{activation} (amutheory.symbolic.chain.backward_width)"),
            "step_variance": Constant("step_variance", factor, source,
                                      note="n Var F / (E F)^2 of one backward step, (3 E[phi'^4] / E[phi'^2]^2 - 1)"),
            "rho_fb": Constant("rho_fb", rho.value, rho.source, rho.error,
                               note="E[phi^2 phi'^2] / (E phi^2 E phi'^2) - 1, one unit's forward-backward coupling: "
                                    "not carried by the factor")}
