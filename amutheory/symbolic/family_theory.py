"""Each built-in family's theory, registered with the families (:mod:`amutheory.families.services`).

A family is the floor below this package and never imports it; importing ``amutheory.symbolic`` (any
of its modules) runs this module, which registers what the symbolic side implements for each family:
its derived depth law (``derive``), whether a residual stream stays finite (``forward_stable``), the
branch multiplier of an init convention (``branch_multiplier``) and the seed spread at infinite width where it is
derived (``infinite_width_spread``).  SymPy is imported by the functions,
not here, so that ``import amutheory.symbolic`` stays light.
"""

from __future__ import annotations

from dataclasses import replace

from amutheory.families import provide

_CONV_ONLY = "finite_width is available for the conv family only"


def conv_derive(spec, finite_width: bool = False, law: str = "coherent"):
    """The conv chain's closed-form law (:func:`amutheory.symbolic.chain.conv.conv_law`)."""
    from amutheory.symbolic.chain.conv import conv_law

    return conv_law(spec, finite_width=finite_width)


def mlp_derive(spec, finite_width: bool = False, law: str = "coherent"):
    """The chain law of the MLP's :meth:`~amutheory.families.mlp.MlpFamily.chain_spec`, named for the
    MLP (its exponent is the chain's, derived by SymPy from the same expansion)."""
    from amutheory.families.mlp import EQUIVALENCE
    from amutheory.symbolic.chain.conv import conv_law

    chain = conv_law(spec.family_object.chain_spec(spec), finite_width=finite_width)
    name = f"mlp-{spec.activation}" + ("-finite-width" if finite_width else "")
    return replace(chain, name=name, assumptions=[EQUIVALENCE] + list(chain.assumptions))


def resnet_derive(spec, finite_width: bool = False, law: str = "coherent"):
    """The residual net's coherent leading-order law (:func:`amutheory.symbolic.resnet.coherent.resnet_law`)."""
    from amutheory.symbolic.resnet.coherent import resnet_law

    if finite_width:
        raise ValueError(_CONV_ONLY)
    return resnet_law(spec)


def transformer_derive(spec, finite_width: bool = False, law: str = "coherent"):
    """The Transformer's coherent law, or with ``law="effective-depth"`` the chain law in its effective
    depth (:mod:`amutheory.symbolic.transformer.coherent`)."""
    from amutheory.symbolic.transformer.coherent import effective_depth_law, transformer_law

    if finite_width:
        raise ValueError(_CONV_ONLY)
    return effective_depth_law(spec) if law == "effective-depth" else transformer_law(spec)


def resnet_forward_stable(spec) -> bool:
    """The mean-field recursion of the stream (:func:`amutheory.symbolic.resnet.coherent.is_forward_stable`)."""
    from amutheory.symbolic.resnet.coherent import is_forward_stable

    return bool(is_forward_stable(spec))


def init_branch_multiplier(spec) -> float:
    """``alpha`` of ``spec.init`` at ``spec.depth`` blocks (:mod:`amutheory.symbolic.resnet.init`)."""
    from amutheory.symbolic.resnet.init import branch_multiplier, numeric

    return float(numeric(branch_multiplier(spec.init), spec.depth))


def no_infinite_width_spread(spec) -> None:
    """The seed spread at infinite width where no derivation covers the net (every family but the MLP's)."""
    return None


def mlp_infinite_width_spread(spec) -> dict | None:
    """A linear MLP's seed spread of ``ln s_bar`` at infinite width, the same at every depth: ``Var ln tr(K R K)`` over
    its inputs and loss directions (:func:`amutheory.symbolic.primitives.spread.linear_mlp_spread`, ``2^18`` draws);
    ``None`` for other activations (not derived)."""
    if spec.activation != "linear":
        return None
    from amutheory.symbolic.primitives.spread import linear_mlp_spread

    return linear_mlp_spread(spec.batch, spec.input_channels, spec.outputs, draws=2**18)


def register() -> None:
    """Register the built-in families' theory (run once, when ``amutheory.symbolic`` is imported)."""
    for family, derive in (("conv", conv_derive), ("mlp", mlp_derive), ("resnet", resnet_derive),
                           ("transformer", transformer_derive)):
        provide("derive", derive, family=family)
    provide("forward_stable", resnet_forward_stable, family="resnet")
    for family in ("resnet", "transformer"):
        provide("branch_multiplier", init_branch_multiplier, family=family)
    provide("infinite_width_spread", no_infinite_width_spread)
    provide("infinite_width_spread", mlp_infinite_width_spread, family="mlp")


register()
