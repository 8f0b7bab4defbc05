"""The torch pieces every model of :mod:`amutheory.measure` is built from: the activation functions
(by the names of :data:`amutheory.spec.ACTIVATIONS`), the training options' normalisation and
dropout layers.  A leaf module: the conv chain (:mod:`~amutheory.measure.models`), the residual net
(:mod:`~amutheory.measure.resnet`), the Transformer (:mod:`~amutheory.measure.transformer`) and the
MLP (:mod:`~amutheory.measure.mlp`) import it, and it imports none of them.  The two chains (conv and
MLP) share their readout and their forward loop (:func:`readout`, :func:`chain_preactivations`)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from amutheory.spec import NORMS

_ACTIVATIONS = {
    "linear": lambda h: h,
    "relu": F.relu,
    "gelu": F.gelu,
    "tanh": torch.tanh,
}


def activation_fn(name: str):
    """The torch function for an activation name of :data:`amutheory.spec.ACTIVATIONS`."""
    return _ACTIVATIONS[name]


def norm_layer(kind: str, dim: int, width: int, dtype, device) -> nn.Module:
    """``Identity`` (``none``), ``BatchNorm{1,2}d(width)`` (``batch``) or ``GroupNorm(1, width)``
    (``layer``: LayerNorm over channels and positions)."""
    if kind == "none":
        return nn.Identity()
    if kind == "batch":
        return (nn.BatchNorm1d if dim == 1 else nn.BatchNorm2d)(width, dtype=dtype, device=device)
    if kind == "layer":
        return nn.GroupNorm(1, width, dtype=dtype, device=device)
    raise ValueError(f"norm must be one of {', '.join(NORMS)}; got {kind!r}")


def dropout_layer(p: float) -> nn.Module:
    """``Dropout(p)``, or ``Identity`` at ``p = 0``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be a probability in [0, 1), got {p!r}")
    return nn.Dropout(p) if p > 0 else nn.Identity()


def readout(width: int, outputs: int, variance: float, generator, dtype, device) -> nn.Linear:
    """The bias-free linear head ``width -> outputs`` with weights ``N(0, variance)`` from ``generator``."""
    head = nn.Linear(width, outputs, bias=False, dtype=dtype, device=device)
    with torch.no_grad():
        head.weight.normal_(0.0, math.sqrt(variance), generator=generator)
    return head


def chain_preactivations(layers, norms, phi, drop, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """A chain's forward pass: ``h_l = norm_l(layer_l(x_(l-1)))`` (no norm where ``norms`` is None),
    ``x_l = drop(phi(h_l))``; every ``h_l`` and the last ``x_L``."""
    hs = []
    for l, layer in enumerate(layers):
        h = layer(x) if norms is None else norms[l](layer(x))
        hs.append(h)
        x = drop(phi(h))
    return hs, x
