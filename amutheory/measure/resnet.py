"""Residual conv nets built from an :class:`~amutheory.spec.ArchSpec` with ``family="resnet"``.

``stem``: a bias-free conv ``c_in -> n`` (``Var 1/fan_in``, no activation), then ``K = depth``
blocks ``x <- S x + alpha * branch(x)`` (``S`` the identity, or a 1x1 conv with ``Var 1/fan_in``
for ``shortcut="projection"``), global average pooling and the linear head (``Var spec.readout_variance``, ``1/width`` by default).
Branches (``phi`` the activation):

* ``conv``:     ``phi(W * x)``                 pre-activation ``W * x``
* ``conv-mlp``: ``W2 phi(W1 * x)``, W2 1x1     pre-activation ``W1 * x``
* ``preact``:   ``W2 * phi(W1 * phi(x))``      pre-activations ``x`` and ``W1 * phi(x)``

Every weight is drawn with the init convention of :mod:`amutheory.symbolic.resnet.init`.
``preactivations`` returns every tensor that enters an activation function, in order.
Training options (:func:`amutheory.measure.models.build_model`): ``norm`` after the branch's
first conv (before its activation), ``dropout`` on the branch output before it is added.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from amutheory.measure.layers import activation_fn, dropout_layer, norm_layer
from amutheory.spec import TORCH_PADDING_MODE, ArchSpec
from amutheory.symbolic.resnet.init import branch_multiplier, layer_variance_factors, numeric


def _conv(spec: ArchSpec, c_in: int, kernel: int, dtype, device):
    conv = nn.Conv1d if spec.dim == 1 else nn.Conv2d
    return conv(c_in, spec.width, kernel, padding=kernel // 2, padding_mode=TORCH_PADDING_MODE[spec.padding],
                bias=False, dtype=dtype, device=device)


def _init(layer, variance_times_fan_in: float, generator):
    fan_in = layer.weight[0].numel()
    with torch.no_grad():
        layer.weight.normal_(0.0, math.sqrt(variance_times_fan_in / fan_in), generator=generator)


class ResidualConvNet(nn.Module):
    """Stem, ``spec.depth`` residual blocks of type ``spec.branch``, GAP and linear head."""

    def __init__(self, spec: ArchSpec, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                 norm: str = "none", dropout: float = 0.0):
        super().__init__()
        if not isinstance(spec, ArchSpec) or spec.family_object.model_module != __name__:
            raise TypeError("spec must be an ArchSpec with family='resnet'")
        self.spec = spec
        self.phi = activation_fn(spec.activation)
        K, c, n = spec.depth, spec.c, spec.width
        self.alpha = numeric(branch_multiplier(spec.init), K)
        factors = [numeric(v, K) for v in layer_variance_factors(spec.init, spec.branch)]
        self.stem = _conv(spec, spec.input_channels, spec.kernel, dtype, device)
        _init(self.stem, 1.0, generator)
        self.first, self.second, self.skip = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        for _ in range(K):
            w1 = _conv(spec, n, spec.kernel, dtype, device)
            _init(w1, c * factors[0], generator)
            self.first.append(w1)
            if spec.branch != "conv":
                w2 = _conv(spec, n, 1 if spec.branch == "conv-mlp" else spec.kernel, dtype, device)
                _init(w2, c * factors[1], generator)
                self.second.append(w2)
            if spec.shortcut == "projection":
                p = _conv(spec, n, 1, dtype, device)
                _init(p, 1.0, generator)
                self.skip.append(p)
        if norm != "none":
            self.norms = nn.ModuleList(norm_layer(norm, spec.dim, n, dtype, device) for _ in range(K))
        self.drop = dropout_layer(dropout)
        self.head = nn.Linear(n, spec.outputs, bias=False, dtype=dtype, device=device)
        with torch.no_grad():
            self.head.weight.normal_(0.0, math.sqrt(spec.readout_variance), generator=generator)

    def _branch(self, k: int, x: torch.Tensor, hs: list) -> torch.Tensor:
        branch = self.spec.branch
        if branch == "preact":
            hs.append(x)
            x = self.phi(x)
        h = self.first[k](x)
        norms = getattr(self, "norms", None)
        if norms is not None:
            h = norms[k](h)
        hs.append(h)
        y = self.phi(h)
        return self.drop(y if branch == "conv" else self.second[k](y))

    def preactivations(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Every tensor entering an activation function, and the output ``f(x)``."""
        hs: list[torch.Tensor] = []
        x = self.stem(x)
        for k in range(self.spec.depth):
            skip = self.skip[k](x) if self.spec.shortcut == "projection" else x
            x = skip + self.alpha * self._branch(k, x, hs)
        return hs, self.head(x.flatten(2).mean(-1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.preactivations(x)[1]

    @torch.no_grad()
    def stream_second_moments(self, x: torch.Tensor) -> list[float]:
        """``E[x_k^2]`` of the residual stream after the stem and after every block (diagnostic
        of forward stability)."""
        out, hs = [], []
        x = self.stem(x)
        out.append(float(x.pow(2).mean()))
        for k in range(self.spec.depth):
            skip = self.skip[k](x) if self.spec.shortcut == "projection" else x
            x = skip + self.alpha * self._branch(k, x, hs)
            out.append(float(x.pow(2).mean()))
        return out
