"""The canonical one-step probe: exact first-order change of every pre-activation.

For a seed ``s`` the probe draws (from one ``torch.Generator`` seeded with ``s``, in this
order) the model's weights, inputs ``x ~ N(0, input_var)`` of the family's input shape
(``Family.input_shape``: ``(B, c_in, N[, N])``, ``(B, c_in)`` for an MLP) and loss directions ``r ~ N(0, I)`` of shape ``(B, outputs)``.  With ``loss = mean_b <r_b, f(x_b)>``
and one SGD step ``theta_1 = theta_0 - eta grad``,

    Delta h_l = -eta (J_theta h_l) grad + O(eta^2),
    s_l = mean_{batch, channels, positions} [(J_theta h_l grad)^2],

so the one-step second moment is ``eta^2 s_l``.  ``J_theta h_l grad`` is computed exactly with
forward-mode AD (``torch.func.jvp``) along ``-grad``; ``vmap`` runs many seeds at once.
:func:`sgd_step_change` takes a real SGD step on a copy of the model, the reference the probe
is checked against (tests, benchmark).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, jvp, stack_module_state, vmap

from amutheory.limits import check_probe
from amutheory.measure.models import build_model
from amutheory.spec import ArchSpec, ProbeProtocol

_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def resolve_device(device: str) -> torch.device:
    """``device`` as a torch device; ``cuda`` falls back to an error naming the argument."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for but CUDA is not available here")
    return torch.device(device)


def draw_seed(spec: ArchSpec, seed: int, protocol: ProbeProtocol = ProbeProtocol()):
    """Model, inputs and loss directions of one seed (all drawn on the CPU, then moved)."""
    dtype = _DTYPES[protocol.dtype]
    gen = torch.Generator().manual_seed(int(seed))
    model = build_model(spec, generator=gen, dtype=dtype)
    shape = spec.family_object.input_shape(spec)
    x = torch.randn(shape, generator=gen, dtype=dtype) * protocol.input_var**0.5
    r = torch.randn((spec.batch, spec.outputs), generator=gen, dtype=dtype)
    device = resolve_device(protocol.device)
    return model.to(device), x.to(device), r.to(device)


def law_given_seeds(spec: ArchSpec, seeds, protocol: ProbeProtocol = ProbeProtocol()) -> list[float]:
    """The exact law over the points, ``E[s_bar | x, r]`` at infinite width, for each seed's own draw
    of inputs and loss directions (:func:`draw_seed`'s, so the values pair seed by seed with
    :func:`probe`'s); :func:`amutheory.symbolic.resnet.operator.draw_layer_moments` raises a
    ``ValueError`` naming the reason for a net it does not cover."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    out = []
    for sd in seeds:
        _, x, r = draw_seed(spec, sd, protocol)
        out.append(float(resnet_operator.draw_layer_moments(spec, x.cpu().numpy(), r.cpu().numpy()).mean()))
    return out


def probe_loss(model, params, x, r):
    """``mean_b <r_b, f(x_b)>`` for parameters ``params`` of ``model``."""
    out = functional_call(model, params, (x,))
    return (out * r).sum(-1).mean()


class _PreactView(torch.nn.Module):
    """Wraps a model so that ``forward`` returns ``(preactivations, output)``."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model.preactivations(x)


def _prefix(params: dict) -> dict:
    return {f"model.{k}": v for k, v in params.items()}


def _first_order_change(model, params, x, r):
    """``(J_theta h_l) grad`` for every l (the change per unit of ``-eta``), one seed."""
    g = grad(lambda p: probe_loss(model, p, x, r))(params)
    direction = {k: -v for k, v in g.items()}
    view = _PreactView(model)

    def preacts(p):
        hs, _ = functional_call(view, _prefix(p), (x,))
        return tuple(hs)

    _, dh = jvp(preacts, (params,), (direction,))
    return dh


def first_order_change(model, x, r) -> list[torch.Tensor]:
    """``dh_l = (J_theta h_l)(-grad)`` for l = 1..L of one seed at ``model``'s current weights.

    One SGD step of size ``eta`` changes ``h_l`` by ``eta * dh_l + O(eta^2)``; compare with
    ``sgd_step_change(model, x, r, eta)`` divided by ``eta``.
    """
    params = {k: v.detach() for k, v in model.named_parameters()}
    return list(_first_order_change(model, params, x, r))


def s_layers_one(model, x, r) -> torch.Tensor:
    """``s_l`` for l = 1..L of one seed, unvectorised (reference path)."""
    dh = first_order_change(model, x, r)
    return torch.stack([d.pow(2).mean() for d in dh])


@dataclass
class ProbeResult:
    """Per-seed, per-layer ``s_l``: ``s[i, l-1]`` for ``seeds[i]``."""

    spec: ArchSpec
    seeds: list
    s: np.ndarray

    @property
    def s_bar(self) -> np.ndarray:
        """Arithmetic mean over layers, one value per seed: ``s_bar = (1/L) sum_l s_l``."""
        return self.s.mean(axis=1)


def probe(spec: ArchSpec, seeds, protocol: ProbeProtocol = ProbeProtocol(),
          chunk: int = 16) -> ProbeResult:
    """``s_l`` of ``spec`` for every seed, ``chunk`` seeds vectorised at a time (``vmap``).  A probe
    whose estimated peak memory exceeds what the device has free is refused with ``ValueError``
    (:func:`amutheory.limits.check_probe`)."""
    seeds = check_probe_arguments(spec, seeds, protocol, chunk)
    rows = []
    for start in range(0, len(seeds), chunk):
        block = seeds[start:start + chunk]
        drawn = [draw_seed(spec, s, protocol) for s in block]
        rows.append(s_layers_drawn(drawn, block, f"{spec.family_object!r}.build_model"))
    return ProbeResult(spec=spec, seeds=seeds, s=np.concatenate(rows, axis=0))


def check_probe_arguments(spec, seeds, protocol, chunk) -> list[int]:
    """The probe's arguments checked (``TypeError``/``ValueError`` naming the argument), and a probe whose
    estimated peak memory exceeds what the device has free refused before any net is built
    (:func:`amutheory.limits.check_probe`, a calibrated estimate); the seeds as a list of ints."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    if not isinstance(protocol, ProbeProtocol):
        raise TypeError(f"protocol must be a ProbeProtocol, got {type(protocol).__name__}")
    check_probe(spec, min(chunk, len(seeds)), protocol.dtype, protocol.device)
    return seeds


def s_layers_drawn(drawn, seeds, maker: str) -> np.ndarray:
    """``s_l`` of drawn ``(model, x, r)`` triples (one per seed of ``seeds``), vectorised over them: a
    ``seeds x L`` array."""
    models = [d[0] for d in drawn]
    params, _ = stack_models(models, seeds, maker)
    params = {k: v.detach() for k, v in params.items()}
    xs = torch.stack([d[1] for d in drawn])
    rs = torch.stack([d[2] for d in drawn])
    base = copy.deepcopy(models[0]).to("meta")

    def one(p, x, r):
        dh = _first_order_change(base, p, x, r)
        return torch.stack([d.pow(2).mean() for d in dh])

    return vmap(one)(params, xs, rs).detach().cpu().numpy()


def stack_models(models, seeds, maker: str):
    """``torch.func.stack_module_state`` of the seeds' models, which it needs of one class with the same
    parameters; ``ValueError`` in one line saying which seed's model differs, and how, otherwise."""
    first = models[0]
    names = [(k, tuple(v.shape)) for k, v in first.named_parameters()]
    for seed, model in zip(seeds[1:], models[1:]):
        if type(model) is not type(first):
            raise ValueError(f"probe: {maker} gave seed {seeds[0]} a {_class(first)} and seed {seed} a "
                             f"{_class(model)}; the probe stacks the seeds' models (torch.func.stack_module_state), "
                             "so every seed needs a model of one class with the same parameters")
        other = [(k, tuple(v.shape)) for k, v in model.named_parameters()]
        if other != names:
            diff = sorted(set(other) ^ set(names))[:2]
            raise ValueError(f"probe: {maker} gave seeds {seeds[0]} and {seed} models of class {_class(model)} with "
                             f"different parameters (e.g. {diff}); the probe stacks the seeds' models, so every seed "
                             "needs the same parameter names and shapes")
        if model.training != first.training:
            raise ValueError(f"probe: {maker} gave seeds {seeds[0]} and {seed} models in different train/eval "
                             "modes; the probe stacks the seeds' models, so every seed needs the same mode")
    return stack_module_state(models)


def _class(model) -> str:
    kind = type(model)
    return f"{kind.__qualname__} (module {kind.__module__})"


def sgd_step_change(model, x, r, eta: float) -> list[torch.Tensor]:
    """``h_l(theta_1) - h_l(theta_0)`` after one real SGD step of size ``eta`` on a copy."""
    stepped = copy.deepcopy(model)
    loss = (stepped(x) * r).sum(-1).mean()
    stepped.zero_grad()
    loss.backward()
    opt = torch.optim.SGD(stepped.parameters(), lr=eta)
    opt.step()
    with torch.no_grad():
        h0, _ = model.preactivations(x)
        h1, _ = stepped.preactivations(x)
    return [b - a for a, b in zip(h0, h1)]
