"""The canonical one-step probe (:mod:`amutheory.measure.probe`) on a user's ``nn.Module``.

The protocol is the built-in one: with ``loss = mean <r, f(x)>`` (the mean over every output axis but
the last) and one SGD step ``theta_1 = theta_0 - eta grad``, every counted pre-activation changes by
``Delta h_l = -eta (J_theta h_l) grad + O(eta^2)`` and

    s_l = mean_{all entries} [(J_theta h_l grad)^2],

computed exactly with forward-mode AD (``torch.func.jvp`` along ``-grad``), ``vmap`` over seeds.  The
counted ``h_l`` are the outputs of the module calls :func:`amutheory.graph.layers.select_layers`
chooses (default: every Conv and Linear output but the readout, every MultiheadAttention output; a
preset ``"resnet"``/``"transformer"``: the inputs of the activation functions), captured by hooks
inside the functional forward pass (:func:`amutheory.graph.layers.capture`).

**Seeding rule.**  For seed ``s``: ``torch.manual_seed(s)``; then, for a factory,
``model = FACTORY(depth=L, width=n)`` (``FACTORY(depth=L)`` when ``width`` is None) draws its weights
from torch's global generator; then ``x`` of ``input_shape`` (``N(0, input_var)``, or for
``input_kind="tokens"`` integers uniform in ``[0, vocab)``), then ``r ~ N(0, I)`` of the output's
shape, from the same generator in that order.  A factory that builds the built-in conv chain from the
global generator (``amutheory.measure.models.build_model(spec)``) therefore gives the built-in
probe's draws exactly, seed by seed.  A module given directly keeps its weights: its seeds change the
inputs and the loss directions only.  The global generator's state is restored afterwards.

**Dtype**: ``protocol.dtype`` (float64 by default); the model is cast to it after it is built (a
factory that builds in float32 draws its weights in float32).

**Real models.**  The probe runs on a copy (the user's module is never changed): BatchNorm uses the
batch statistics and has no running statistics on the copy
(``torch.func.replace_all_batch_norm_modules_``), so the user's are untouched; dropout is off (Dropout
modules in eval mode, MultiheadAttention's dropout 0, functional dropout the identity) while every
other module stays in training mode; attention runs on PyTorch's math kernel
(``sdpa_kernel(SDPBackend.MATH)``, the path forward-mode AD supports).  When ``vmap`` cannot run a
model the seeds run one at a time (``ModuleProbeResult.vectorised`` is False, with the reason).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, jvp, replace_all_batch_norm_modules_, stack_module_state, vmap

from amutheory.graph.layers import capture, select_layers
from amutheory.measure.probe import _DTYPES, resolve_device
from amutheory.spec import ProbeProtocol

#: the input kinds: Gaussian floats, or integer tokens in [0, vocab)
INPUT_KINDS = ("float", "tokens")
#: the seeding rule, as the JSON states it
SEEDING = ("per seed s: torch.manual_seed(s); FACTORY(depth=L, width=n) draws its weights from the global "
           "generator; then x (N(0, input_var), or tokens uniform in [0, vocab)) of the input shape, then r ~ N(0, I) "
           "of the output's shape; a module given directly keeps its weights (seeds change x and r only)")


def probe_copy(model: nn.Module, dtype: torch.dtype, device) -> nn.Module:
    """A copy of ``model`` in probe mode: batch-statistics BatchNorm without running statistics,
    dropout off, everything else in training mode (module docstring)."""
    net = copy.deepcopy(model).to(device=device, dtype=dtype)
    net.train()
    replace_all_batch_norm_modules_(net)
    for m in net.modules():
        if isinstance(m, (nn.modules.dropout._DropoutNd, nn.AlphaDropout)):
            m.eval()
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
    return net


def builtin_factory(spec):
    """The built-in net of ``spec``'s family as a user's factory ``make(depth, width)`` under this probe's
    seeding rule: its weights are drawn from the global generator's stream (which the probe seeds), so
    probing it here reproduces the built-in probe's draws seed for seed."""
    from amutheory.measure.models import build_model

    def make(depth, width):
        gen = torch.Generator()
        gen.set_state(torch.get_rng_state())
        net = build_model(spec.with_(depth=depth, width=width), generator=gen)
        torch.set_rng_state(gen.get_state())
        return net

    return make


def check_input(input_shape, input_kind: str = "float", vocab=None) -> tuple[int, ...]:
    """``input_shape`` as a tuple of positive integers; ``input_kind`` and ``vocab`` checked together."""
    if input_kind not in INPUT_KINDS:
        raise ValueError(f"input_kind must be one of {', '.join(INPUT_KINDS)}, got {input_kind!r}")
    try:
        shape = tuple(int(s) for s in input_shape)
    except TypeError:
        raise TypeError(f"input_shape must be a sequence of positive integers, got {input_shape!r}") from None
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"input_shape must be positive integers (batch first), got {input_shape!r}")
    if input_kind == "tokens":
        if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1:
            raise ValueError(f"vocab must be a positive integer for input_kind='tokens', got {vocab!r}")
    elif vocab is not None:
        raise ValueError("vocab is for input_kind='tokens' only")
    return shape


def draw_input(shape, input_kind: str, vocab, input_var: float, dtype) -> torch.Tensor:
    """One input from torch's global generator (the seeding rule's ``x``)."""
    if input_kind == "tokens":
        return torch.randint(0, vocab, shape)
    return torch.randn(shape, dtype=dtype) * input_var**0.5


def _sdpa_math():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.MATH)


def _forward(model, state, x):
    return functional_call(model, state, (x,))


def _loss(out, r):
    return (out * r).sum(-1).mean()


def _first_order_change(base, calls, params, buffers, x, r) -> tuple:
    """``(J_theta h_l) grad`` for every counted call, one seed (``base``: the probe-mode model)."""
    def loss(p):
        with capture(base, calls, []):
            return _loss(_forward(base, {**p, **buffers}, x), r)

    g = grad(loss)(params)
    direction = {k: -v for k, v in g.items()}

    def preacts(p):
        hs: list = []
        with capture(base, calls, hs):
            _forward(base, {**p, **buffers}, x)
        return tuple(hs)

    return jvp(preacts, (params,), (direction,))[1]


def _s_layers(base, calls, params, buffers, x, r) -> torch.Tensor:
    dh = _first_order_change(base, calls, params, buffers, x, r)
    return torch.stack([d.pow(2).mean() for d in dh])


@dataclass
class SeedDraw:
    """One seed's probe-mode model, input and loss directions."""

    model: nn.Module
    x: torch.Tensor
    r: torch.Tensor


def draw(build, seed: int, shape, input_kind="float", vocab=None, input_var=1.0, dtype=torch.float64,
         device="cpu") -> SeedDraw:
    """The seeding rule (module docstring) for one seed; ``build()`` returns the model (called after
    ``torch.manual_seed(seed)``)."""
    torch.manual_seed(int(seed))
    model = probe_copy(build(), dtype, device)
    x = draw_input(shape, input_kind, vocab, input_var, dtype)
    with torch.no_grad(), _sdpa_math(), capture(model, [], []):
        out = model(x.to(device))
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.dim() < 1:
        raise TypeError(f"model: its forward must return one floating-point tensor of outputs (the loss is "
                        f"mean <r, f(x)> over its last axis), got {type(out).__name__}")
    r = torch.randn(tuple(out.shape), dtype=dtype)
    return SeedDraw(model, x.to(device), r.to(device))


@dataclass
class ModuleProbeResult:
    """Per-seed, per-counted-call ``s_l`` (``s[i, l]`` for ``seeds[i]``), the counted calls' names,
    and whether the seeds ran vectorised (``vmap``) or one at a time (``fallback``: why)."""

    seeds: list
    s: np.ndarray
    layers: list
    vectorised: bool = True
    fallback: str | None = None
    calls: list = field(default_factory=list, repr=False)

    @property
    def s_bar(self) -> np.ndarray:
        return self.s.mean(axis=1)


def probe_module(build, seeds, input_shape, layers=None, input_kind: str = "float", vocab=None,
                 protocol: ProbeProtocol = ProbeProtocol(), chunk: int = 16) -> ModuleProbeResult:
    """``s_l`` of the model ``build()`` returns (called once per seed, after ``torch.manual_seed``) for
    every seed, ``chunk`` seeds vectorised at a time; the layers counted are
    ``select_layers(model, x, layers)`` on the first seed's draw."""
    shape = check_input(input_shape, input_kind, vocab)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    dtype, device = _DTYPES[protocol.dtype], resolve_device(protocol.device)
    rows, vectorised, fallback, calls = [], True, None, None
    with torch.random.fork_rng(devices=[]), _sdpa_math():
        for start in range(0, len(seeds), chunk):
            drawn = [draw(build, s, shape, input_kind, vocab, protocol.input_var, dtype, device)
                     for s in seeds[start:start + chunk]]
            if calls is None:
                calls = select_layers(drawn[0].model, drawn[0].x, layers)
            base = drawn[0].model
            block = None
            if vectorised:
                try:
                    block = _vectorised(base, calls, drawn)
                except Exception as exc:  # noqa: BLE001 - any model vmap cannot run: the loop below
                    vectorised, fallback = False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            if block is None:
                try:
                    block = np.stack([_one(d, calls) for d in drawn])
                except Exception as exc:  # noqa: BLE001 - an op without forward-mode AD, ...: one line
                    raise ValueError(f"model: the probe could not differentiate the model (grad, then jvp): "
                                     f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
            rows.append(block)
    return ModuleProbeResult(seeds, np.concatenate(rows, axis=0), [c.name for c in calls], vectorised, fallback,
                             calls)


def _state(model):
    return ({k: v.detach() for k, v in model.named_parameters()},
            {k: v.detach() for k, v in model.named_buffers()})


def _one(d: SeedDraw, calls) -> np.ndarray:
    params, buffers = _state(d.model)
    return _s_layers(d.model, calls, params, buffers, d.x, d.r).detach().cpu().numpy()


def _vectorised(base, calls, drawn) -> np.ndarray:
    params, buffers = stack_module_state([d.model for d in drawn])
    params = {k: v.detach() for k, v in params.items()}
    buffers = {k: v.detach() for k, v in buffers.items()}
    xs, rs = torch.stack([d.x for d in drawn]), torch.stack([d.r for d in drawn])
    skeleton = copy.deepcopy(base).to("meta")

    def one(p, b, x, r):
        return _s_layers(skeleton, calls, p, b, x, r)

    return vmap(one)(params, buffers, xs, rs).detach().cpu().numpy()


def sgd_step_change(model: nn.Module, calls, x, r, eta: float) -> list[torch.Tensor]:
    """``h_l(theta_1) - h_l(theta_0)`` of the counted calls after one real SGD step of size ``eta`` on
    the probe-mode ``model`` (a copy is stepped): the reference the probe is checked against."""
    stepped = copy.deepcopy(model)
    with _sdpa_math():
        with capture(stepped, calls, []):
            loss = _loss(stepped(x), r)
        stepped.zero_grad()
        loss.backward()
        torch.optim.SGD(stepped.parameters(), lr=eta).step()
        h0, h1 = [], []
        with torch.no_grad():
            with capture(model, calls, h0):
                model(x)
            with capture(stepped, calls, h1):
                stepped(x)
    return [b - a for a, b in zip(h0, h1)]


def first_order_change(model: nn.Module, calls, x, r) -> list[torch.Tensor]:
    """``(J_theta h_l)(-grad)`` of the counted calls, one seed, unvectorised (compare with
    :func:`sgd_step_change` divided by ``eta``)."""
    params, buffers = _state(model)
    with _sdpa_math():
        return list(_first_order_change(model, calls, params, buffers, x, r))
