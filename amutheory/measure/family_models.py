"""Each built-in family's torch model, registered with the families (:mod:`amutheory.families.services`).

A family is the floor below this package and never imports it; importing ``amutheory.measure`` (any of
its modules) runs this module, which registers the builder of each built-in family's model
(``build(spec, generator, dtype, device, norm, dropout)``; float64 unless ``dtype`` says otherwise).
torch is imported by the builders, not here, so that ``import amutheory.measure`` stays light.
"""

from __future__ import annotations

from amutheory.families import provide


def _dtype(dtype):
    import torch

    return dtype or torch.float64


def build_conv(spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
    """The conv chain (:class:`amutheory.measure.models.ConvChain`)."""
    from amutheory.measure.models import ConvChain

    return ConvChain(spec, generator=generator, dtype=_dtype(dtype), norm=norm, dropout=dropout).to(device)


def build_resnet(spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
    """The residual conv net (:class:`amutheory.measure.resnet.ResidualConvNet`)."""
    from amutheory.measure.resnet import ResidualConvNet

    return ResidualConvNet(spec, generator=generator, dtype=_dtype(dtype), norm=norm, dropout=dropout).to(device)


def build_mlp(spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
    """The fully connected net (:class:`amutheory.measure.mlp.MLP`)."""
    from amutheory.measure.mlp import MLP

    return MLP(spec, generator=generator, dtype=_dtype(dtype), norm=norm, dropout=dropout).to(device)


def build_transformer(spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
    """The pre-LN Transformer (:class:`amutheory.measure.transformer.PreLNTransformer`; its blocks are
    pre-LN already: the family refuses any other ``norm`` before this is called)."""
    from amutheory.measure.transformer import PreLNTransformer

    return PreLNTransformer(spec, generator=generator, dtype=_dtype(dtype), dropout=dropout).to(device)


def register() -> None:
    """Register the built-in families' models (run once, when ``amutheory.measure`` is imported)."""
    for family, build in (("conv", build_conv), ("resnet", build_resnet), ("mlp", build_mlp),
                          ("transformer", build_transformer)):
        provide("model", build, family=family)


register()
