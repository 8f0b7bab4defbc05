"""The PyTorch model of the MLP family (:mod:`amutheory.families.mlp`).

``MLP``: ``L`` bias-free linear layers ``h_1 = W_1 x``, ``h_l = W_l phi(h_(l-1))`` with He fan-in init
``Var[W_l] = c / fan_in``, and a bias-free linear readout of ``phi(h_L)`` with ``Var =
spec.readout_variance``.  Inputs are feature vectors ``(B, input_channels)``.  The interface is
:class:`~amutheory.measure.models.ConvChain`'s: ``preactivations`` returns every ``h_l`` and the
output, ``forward`` the output.

Weights are drawn in the chain's order and with its shapes' element counts (layer by layer, then
the head), so an MLP and the conv chain with kernel 1 on one position built from the same generator
hold the same numbers: the two nets are one function (tests/test_mlp_family.py).

Training options as the chain's: ``norm`` between every linear layer and its activation (``batch``:
BatchNorm over the batch; ``layer``: LayerNorm over the features), ``dropout`` after every activation.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from amutheory.measure.layers import activation_fn, chain_preactivations, dropout_layer, readout
from amutheory.spec import NORMS, ArchSpec


def _norm_layer(kind: str, width: int, dtype, device) -> nn.Module:
    if kind == "none":
        return nn.Identity()
    if kind == "batch":
        return nn.BatchNorm1d(width, dtype=dtype, device=device)
    if kind == "layer":
        return nn.LayerNorm(width, dtype=dtype, device=device)
    raise ValueError(f"norm must be one of {', '.join(NORMS)}; got {kind!r}")


class MLP(nn.Module):
    """Fully connected net of ``spec.depth`` bias-free layers and a bias-free linear readout."""

    def __init__(self, spec: ArchSpec, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                 norm: str = "none", dropout: float = 0.0):
        super().__init__()
        if not isinstance(spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
        self.spec = spec
        self.phi = activation_fn(spec.activation)
        layers = []
        for l in range(spec.depth):
            fan_in = spec.input_channels if l == 0 else spec.width
            layer = nn.Linear(fan_in, spec.width, bias=False, dtype=dtype, device=device)
            with torch.no_grad():
                layer.weight.normal_(0.0, math.sqrt(spec.c / fan_in), generator=generator)
            layers.append(layer)
        self.layers = nn.ModuleList(layers)
        if norm != "none":
            self.norms = nn.ModuleList(_norm_layer(norm, spec.width, dtype, device) for _ in layers)
        self.drop = dropout_layer(dropout)
        self.head = readout(spec.width, spec.outputs, spec.readout_variance, generator, dtype, device)

    def preactivations(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Every pre-activation ``h_1 .. h_L`` and the output ``f(x)``."""
        hs, x = chain_preactivations(self.layers, getattr(self, "norms", None), self.phi, self.drop, x)
        return hs, self.head(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.preactivations(x)[1]
