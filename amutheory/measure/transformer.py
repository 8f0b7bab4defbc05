"""Pre-LN Transformer encoders built from an :class:`~amutheory.spec.ArchSpec` (``family="transformer"``).

Input ``(B, c_in, T)`` (the probe's Gaussian tokens, channels first; ``T = spec.spatial``), read as
``T`` tokens of ``c_in`` features.  ``embed``: a bias-free linear ``c_in -> n`` (``Var 1/c_in``),
then ``K = depth`` pre-LN blocks, each with two residual additions,

    x <- x + alpha * Attn(LN(x)) W_O          (multi-head softmax attention, ``heads`` heads)
    x <- x + alpha * phi(LN(x) W_1) W_2       (MLP, hidden width ``mlp_ratio * n``)

then ``LN``, the mean over tokens and a bias-free linear head (``Var spec.readout_variance``, ``1/n`` by default).  ``LN`` has no affine
parameters and every linear map is bias-free, so every parameter is a weight matrix.  Init
(``v_1, v_2 = layer_variance_factors(init, "conv-mlp")``, ``alpha = branch_multiplier(init)``):
``W_Q, W_K, W_V`` ``Var 1/n``; ``W_O`` ``Var v_2/n``; ``W_1`` ``Var v_1/n``; ``W_2``
``Var c v_2/(mlp_ratio n)`` (``c`` the activation's He constant).  So ``k-last`` puts ``1/K`` on
the last layer of both branches (the AM-muP residual-aware init) and ``none`` is the standard
fan-in init.  No positional encoding: the tokens are i.i.d. Gaussian, attention is permutation
equivariant, and nothing the probe measures depends on order.

``preactivations`` returns every tensor entering the MLP activation (one per block, ``(B, T,
mlp_ratio n)``): the AM average of the law (:mod:`amutheory.symbolic.transformer.coherent`) runs over these.
Attention logits enter a softmax, not ``phi``; they are left out of the average by that choice.
Training option ``dropout``: on both branch outputs before they are added (off for the probe).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from amutheory.measure.layers import activation_fn, dropout_layer
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet.init import branch_multiplier, layer_variance_factors, numeric


def _linear(fan_in: int, fan_out: int, variance_times_fan_in: float, generator, dtype, device) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out, bias=False, dtype=dtype, device=device)
    with torch.no_grad():
        layer.weight.normal_(0.0, math.sqrt(variance_times_fan_in / fan_in), generator=generator)
    return layer


def layer_norm(x: torch.Tensor) -> torch.Tensor:
    """LayerNorm over the feature axis without affine parameters (eps 1e-5)."""
    return F.layer_norm(x, x.shape[-1:])


class SelfAttention(nn.Module):
    """Multi-head softmax self-attention ``softmax(Q K^T / s) V W_O``, bias-free; ``s = sqrt(d_h)``
    (``attn_scale="sqrt"``) or ``d_h`` (``"mup"``)."""

    def __init__(self, n: int, heads: int, out_variance: float, generator, dtype, device, attn_scale: str = "sqrt"):
        super().__init__()
        self.heads = heads
        self.logit_power = 0.5 if attn_scale == "sqrt" else 1.0
        self.q = _linear(n, n, 1.0, generator, dtype, device)
        self.k = _linear(n, n, 1.0, generator, dtype, device)
        self.v = _linear(n, n, 1.0, generator, dtype, device)
        self.o = _linear(n, n, out_variance, generator, dtype, device)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        b, t, n = u.shape
        h, dh = self.heads, n // self.heads

        def split(z):
            return z.reshape(b, t, h, dh).transpose(1, 2)  # (B, h, T, d_h)

        q, k, v = split(self.q(u)), split(self.k(u)), split(self.v(u))
        weights = torch.softmax(q @ k.transpose(-1, -2) / dh**self.logit_power, dim=-1)
        return self.o((weights @ v).transpose(1, 2).reshape(b, t, n))


class MLP(nn.Module):
    """``phi(u W_1) W_2``; ``forward`` returns ``(pre-activation u W_1, output)``."""

    def __init__(self, n: int, hidden: int, phi, v1: float, v2_times_c: float, generator, dtype, device):
        super().__init__()
        self.phi = phi
        self.fc1 = _linear(n, hidden, v1, generator, dtype, device)
        self.fc2 = _linear(hidden, n, v2_times_c, generator, dtype, device)

    def forward(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc1(u)
        return h, self.fc2(self.phi(h))


class PreLNTransformer(nn.Module):
    """Embedding, ``spec.depth`` pre-LN blocks (attention + MLP), final LN, token mean, linear head."""

    def __init__(self, spec: ArchSpec, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu", dropout: float = 0.0):
        super().__init__()
        if not isinstance(spec, ArchSpec) or spec.family_object.model_module != __name__:
            raise TypeError("spec must be an ArchSpec with family='transformer'")
        self.spec = spec
        K, n = spec.depth, spec.width
        v1, v2 = (numeric(v, K) for v in layer_variance_factors(spec.init, "conv-mlp"))
        self.alpha = numeric(branch_multiplier(spec.init), K)
        phi = activation_fn(spec.activation)
        self.embed = _linear(spec.input_channels, n, 1.0, generator, dtype, device)
        self.attn, self.mlp = nn.ModuleList(), nn.ModuleList()
        for _ in range(K):
            self.attn.append(SelfAttention(n, spec.heads, v2, generator, dtype, device, spec.attn_scale))
            self.mlp.append(MLP(n, spec.mlp_ratio * n, phi, v1, spec.c * v2, generator, dtype, device))
        self.head = _linear(n, spec.outputs, n * spec.readout_variance, generator, dtype, device)
        self.drop = dropout_layer(dropout)

    def _stream(self, x: torch.Tensor, hs: list, moments: list | None = None) -> torch.Tensor:
        x = self.embed(x.transpose(1, 2))  # (B, T, n)
        if moments is not None:
            moments.append(float(x.pow(2).mean()))
        for attn, mlp in zip(self.attn, self.mlp):
            x = x + self.alpha * self.drop(attn(layer_norm(x)))
            h, y = mlp(layer_norm(x))
            hs.append(h)
            x = x + self.alpha * self.drop(y)
            if moments is not None:
                moments.append(float(x.pow(2).mean()))
        return x

    def preactivations(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Every MLP pre-activation (one per block) and the output ``f(x)``."""
        hs: list[torch.Tensor] = []
        x = self._stream(x, hs)
        return hs, self.head(layer_norm(x).mean(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.preactivations(x)[1]

    @torch.no_grad()
    def stream_second_moments(self, x: torch.Tensor) -> list[float]:
        """``E[x_k^2]`` of the residual stream after the embedding and after every block."""
        moments: list[float] = []
        self._stream(x, [], moments)
        return moments
