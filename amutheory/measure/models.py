"""PyTorch models built from an :class:`~amutheory.spec.ArchSpec`.

``ConvChain``: ``L`` bias-free convolutions ``h_l = W_l * x_{l-1}`` with He fan-in init
``Var[W_l] = c / fan_in`` (``fan_in = channels_in * k^d``), activation ``x_l = phi(h_l)``,
global average pooling and a bias-free linear head with ``Var = spec.readout_variance``
(``1 / width``; ``1 / width^2`` for ``readout="mup"``).
``forward`` returns the output; ``preactivations`` returns every ``h_l`` as well.

Training options (the probe leaves both off): ``norm`` puts a normalisation between every conv
and its activation (``batch``: BatchNorm over batch and positions; ``layer``: LayerNorm over
channels and positions, ``GroupNorm(1, n)``; both with the usual affine ``(1, 0)`` init), so
``h_l`` is the normalised tensor; ``dropout`` drops activations with probability ``p`` after
every activation.  With ``norm="none"`` and ``dropout=0`` the module tree is the probe's.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# the shared layers, re-exported (``models.activation_fn`` etc. keep working)
from amutheory.measure.layers import activation_fn, chain_preactivations, dropout_layer, norm_layer, readout  # noqa: F401
from amutheory.spec import TORCH_PADDING_MODE, ArchSpec


class ConvChain(nn.Module):
    """Homogeneous conv chain of ``spec.depth`` layers (circular or zero 'same' padding), GAP and linear head."""

    def __init__(self, spec: ArchSpec, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                 norm: str = "none", dropout: float = 0.0):
        super().__init__()
        if not isinstance(spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
        self.spec = spec
        self.phi = activation_fn(spec.activation)
        conv = nn.Conv1d if spec.dim == 1 else nn.Conv2d
        c = spec.c
        layers = []
        for l in range(spec.depth):
            c_in = spec.input_channels if l == 0 else spec.width
            layer = conv(c_in, spec.width, spec.kernel, padding=spec.kernel // 2,
                         padding_mode=TORCH_PADDING_MODE[spec.padding], bias=False, dtype=dtype, device=device)
            fan_in = c_in * spec.kernel**spec.dim
            with torch.no_grad():
                layer.weight.normal_(0.0, math.sqrt(c / fan_in), generator=generator)
            layers.append(layer)
        self.convs = nn.ModuleList(layers)
        if norm != "none":
            self.norms = nn.ModuleList(norm_layer(norm, spec.dim, spec.width, dtype, device) for _ in layers)
        self.drop = dropout_layer(dropout)
        self.head = readout(spec.width, spec.outputs, spec.readout_variance, generator, dtype, device)

    def preactivations(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Every pre-activation ``h_1 .. h_L`` and the output ``f(x)``."""
        hs, x = chain_preactivations(self.convs, getattr(self, "norms", None), self.phi, self.drop, x)
        pooled = x.flatten(2).mean(-1)
        return hs, self.head(pooled)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.preactivations(x)[1]


def build_model(spec: ArchSpec, seed: int | None = None, generator: torch.Generator | None = None,
                dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                norm: str = "none", dropout: float = 0.0) -> nn.Module:
    """The model of ``spec``'s family, initialised from ``seed`` (a fresh CPU generator) or
    from ``generator`` (drawn from in place); on the CPU first, then moved to ``device``.
    ``norm`` and ``dropout`` are the training options of the module docstring (a transformer's
    blocks are pre-LN already: it takes ``norm="none"`` only)."""
    if seed is not None and generator is not None:
        raise ValueError("give seed or generator, not both")
    if seed is not None:
        generator = torch.Generator().manual_seed(int(seed))
    return spec.family_object.build_model(spec, generator=generator, dtype=dtype, device=device, norm=norm,
                                          dropout=dropout)
