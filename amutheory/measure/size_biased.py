"""The size-biased probe: the seed mean of ``s`` at narrow width without its heavy tail.

At finite width ``ln s_bar`` of a deep chain spreads like ``L / n`` (docs/findings/finite_width.md): at
``L / n >= 1`` the seed mean is carried by a few seeds whose weight products happen to grow, and its
standard error undercovers (study P).  Much of that spread is the growth of the forward pass, and the
forward pass can be drawn *size-biased* exactly:

* For a chain of bias-free layers ``h_l = W_l x_(l-1)``, ``x_l = phi(h_l)`` with ``phi`` linear or ReLU
  and ``W_l`` iid ``N(0, sigma_l^2)``, let ``P_q`` be layer ``l``'s input patches (one per output position
  and sample: ``x_(l-1)`` itself for a linear layer) or, with the *pooled* tilt, each sample's mean patch over
  the positions, and ``Z_l = sum_(o, q) phi(w_o . P_q)^2`` (with every patch, ``|x_l|^2``).  Given
  ``x_(l-1)``, ``E[Z_l] = a sigma_l^2 n_l sum_q |P_q|^2`` with ``a = E[phi(g)^2]`` for ``g ~ N(0, 1)`` (the
  activation's ``phi2`` moment, derived by :mod:`amutheory.activations`: 1 linear, 1/2 ReLU).
* ``Q``, the measure of the weights tilted by ``prod_l Z_l / E[Z_l | x_(l-1)]``, is drawn layer by layer
  from the bottom: it is a mixture over one output unit ``o`` (uniform) and one patch ``q`` (in proportion to
  ``|P_q|^2``) of the Gaussian whose row ``w_o`` has ``t = w_o . P_q / (sigma |P_q|)`` distributed as a
  ``chi_3`` (ReLU) or a ``chi_3`` of random sign (linear), everything else as drawn.  So one row per layer
  is redrawn; the rest of the seed's net is the plain probe's.
* Then for any function ``F`` of the net, inputs and loss directions, ``E_P[F] = E_Q[F w]`` with the
  likelihood ratio ``w = prod_l E[Z_l | x_(l-1)] / Z_l``: the mean of ``s_l w`` over seeds is unbiased for
  ``E[s_l]``, exactly, and its spread is what is left once the forward growth is divided out.

The readout is not tilted.  Only positively homogeneous activations (linear, ReLU) have the ``chi_3``
form; :func:`tilt_chain` refuses other nets with a ``ValueError`` naming the reason.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from amutheory.spec import ArchSpec

#: the positively homogeneous activations, whose tilted coordinate is a ``chi_3``
HOMOGENEOUS = ("linear", "relu")
#: the tilt's generator is seeded with the probe seed plus this offset, so the plain draw is untouched
TILT_SEED_OFFSET = 2**40


@functools.lru_cache(maxsize=None)
def second_moment(activation: str) -> float:
    """``a = E[phi(g)^2]``, ``g ~ N(0, 1)``: the activation's exact ``phi2`` moment (:mod:`amutheory.activations`)."""
    from amutheory.activations import get_activation

    return get_activation(activation).moment("phi2", 1.0).value


def _chain_layers(model: nn.Module) -> nn.ModuleList:
    layers = getattr(model, "convs", None)
    if layers is None:
        layers = getattr(model, "layers", None)
    if layers is None or getattr(model, "norms", None) is not None:
        raise ValueError("size-biased probe: the model must be a plain chain (the conv chain or MLP of "
                         "amutheory.measure, no norm layers)")
    for layer in layers:
        if getattr(layer, "bias", None) is not None:
            raise ValueError("size-biased probe: every layer must be bias-free")
    return layers


def patches(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The input patches of ``layer`` at ``x``: a ``(batch x positions, fan_in)`` matrix ``P``, one row per sample
    and output position (sample-major), with ``layer(x)`` equal to ``P @ W.view(n_out, -1).T`` reordered."""
    if isinstance(layer, nn.Linear):
        return x.reshape(-1, layer.in_features)
    if isinstance(layer, (nn.Conv1d, nn.Conv2d)):
        dim = 1 if isinstance(layer, nn.Conv1d) else 2
        if layer.stride != (1,) * dim or layer.dilation != (1,) * dim or layer.groups != 1:
            raise ValueError("size-biased probe: convolutions must have stride 1, dilation 1 and groups 1")
        pad = layer.padding
        if isinstance(pad, str):
            raise ValueError("size-biased probe: convolutions need an explicit integer padding")
        mode = "circular" if layer.padding_mode == "circular" else "constant"
        if layer.padding_mode not in ("circular", "zeros"):
            raise ValueError(f"size-biased probe: padding mode {layer.padding_mode!r} is not covered")
        pads = [p for p in reversed(pad) for _ in (0, 1)]
        xp = F.pad(x, pads, mode=mode) if any(pads) else x
        k = layer.kernel_size
        if dim == 1:
            cols = xp.unfold(2, k[0], 1)  # (B, C, N, k)
            return cols.permute(0, 2, 1, 3).reshape(-1, layer.in_channels * k[0])
        cols = F.unfold(xp, k)  # (B, C k k, positions)
        return cols.transpose(1, 2).reshape(-1, layer.in_channels * k[0] * k[1])
    raise ValueError(f"size-biased probe: layer type {type(layer).__name__} is not covered (Linear, Conv1d, Conv2d)")


def tilt_chain(model: nn.Module, x: torch.Tensor, activation: str, sigmas, generator: torch.Generator,
               pooled: bool = False) -> float:
    """Redraw ``model``'s chain layers in place from the size-biased measure ``Q`` (module docstring), bottom
    up, given the input ``x``; ``sigmas[l]`` is layer ``l``'s weight standard deviation.  Returns
    ``ln w = sum_l ln(E[Z_l | x_(l-1)] / Z_l)``."""
    if activation not in HOMOGENEOUS:
        raise ValueError(f"size-biased probe: activation must be linear or relu (positively homogeneous), "
                         f"got {activation!r}")
    a = second_moment(activation)
    phi = (lambda h: h) if activation == "linear" else F.relu
    layers = _chain_layers(model)
    log_w = 0.0
    with torch.no_grad():
        for layer, sigma in zip(layers, sigmas):
            P = patches(layer, x)
            if pooled:
                P = P.view(x.shape[0], -1, P.shape[1]).mean(1)
            norms2 = P.pow(2).sum(1)
            total = float(norms2.sum())
            if total <= 0.0:
                raise ValueError("size-biased probe: a layer's input is zero, so the tilt is undefined")
            weight = layer.weight.view(layer.weight.shape[0], -1)
            n_out = weight.shape[0]
            q = int(torch.multinomial((norms2 / total).cpu().double(), 1, generator=generator))
            o = int(torch.randint(n_out, (1,), generator=generator))
            direction = P[q] / norms2[q].sqrt()
            t = torch.randn(3, generator=generator, dtype=torch.float64).pow(2).sum().sqrt()
            if activation == "linear" and torch.rand(1, generator=generator).item() < 0.5:
                t = -t
            g = torch.randn(weight.shape[1], generator=generator, dtype=torch.float64).to(weight)
            g = g - direction * (direction @ g)
            weight[o] = sigma * (t.to(weight) * direction + g)
            x = phi(layer(x))
            Z = float(phi(P @ weight.T).pow(2).sum())
            log_w += math.log(a * sigma**2 * n_out * total) - math.log(Z)
    return log_w


def chain_sigmas(spec: ArchSpec, model: nn.Module) -> list[float]:
    """The weight standard deviations of a plain chain's layers (He fan-in: ``sqrt(c / fan_in)``), ``fan_in``
    read off each layer's weight."""
    return [math.sqrt(spec.c / layer.weight[0].numel()) for layer in _chain_layers(model)]


def check_size_biased(spec: ArchSpec) -> None:
    """``ValueError`` naming the reason when the size-biased probe does not cover ``spec``."""
    if not spec.family_object.plain_chain:
        raise ValueError(f"size-biased probe: family must be conv or mlp (a plain chain), got {spec.family!r}")
    if spec.activation not in HOMOGENEOUS:
        raise ValueError(f"size-biased probe: activation must be linear or relu (positively homogeneous), "
                         f"got {spec.activation!r}")


class SizeBiasedResult:
    """Per-seed, per-layer ``s_l`` drawn under ``Q`` and each seed's ``ln w``: ``s[i, l-1] * exp(log_w[i])``
    averages to ``E[s_l]`` over seeds (module docstring)."""

    def __init__(self, spec: ArchSpec, seeds: list, s: np.ndarray, log_w: np.ndarray):
        self.spec, self.seeds, self.s, self.log_w = spec, seeds, s, log_w

    @property
    def weighted(self) -> np.ndarray:
        """``s_l w`` per seed and layer: its seed mean is unbiased for ``E[s_l]``."""
        return self.s * np.exp(self.log_w)[:, None]

    @property
    def s_bar(self) -> np.ndarray:
        """``s_bar w`` per seed: its mean is unbiased for ``E[s_bar]``."""
        return self.weighted.mean(axis=1)

    def mean(self) -> tuple[float, float]:
        """The estimate of ``E[s_bar]`` and its standard error."""
        v = self.s_bar
        return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def size_biased_probe(spec: ArchSpec, seeds, protocol=None, chunk: int = 16, pooled: bool = False) -> SizeBiasedResult:
    """:func:`~amutheory.measure.probe.probe` with every chain layer drawn size-biased (module docstring):
    seed ``s`` draws the plain probe's net, inputs and loss directions, then redraws one row per layer from
    a generator seeded ``s + TILT_SEED_OFFSET``.  ``ValueError`` naming the reason for a net it does not
    cover (:func:`check_size_biased`)."""
    from amutheory.measure.probe import check_probe_arguments, draw_seed, s_layers_drawn
    from amutheory.spec import ProbeProtocol

    protocol = ProbeProtocol() if protocol is None else protocol
    seeds = check_probe_arguments(spec, seeds, protocol, chunk)
    check_size_biased(spec)
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least 2 seeds (a standard error needs two), got {len(seeds)}")
    rows, log_w = [], []
    for start in range(0, len(seeds), chunk):
        block = seeds[start:start + chunk]
        drawn = []
        for sd in block:
            model, x, r = draw_seed(spec, sd, protocol)
            gen = torch.Generator().manual_seed(sd + TILT_SEED_OFFSET)
            log_w.append(tilt_chain(model, x, spec.activation, chain_sigmas(spec, model), gen, pooled))
            drawn.append((model, x, r))
        rows.append(s_layers_drawn(drawn, block, f"{spec.family_object!r}.build_model"))
    return SizeBiasedResult(spec, seeds, np.concatenate(rows, axis=0), np.asarray(log_w))


TILTS = ("auto", "pooled", "full")


def resolve_tilt(spec: ArchSpec, tilt: str) -> bool:
    """``pooled`` for :func:`size_biased_probe`: ``auto`` pools on convolutional chains (their readout pools over
    positions, so the pooled forward pass is what ``s`` carries) and is the full tilt on MLPs (one position: the two
    agree)."""
    if tilt not in TILTS:
        raise ValueError(f"tilt must be one of {', '.join(TILTS)}; got {tilt!r}")
    return tilt == "pooled" or (tilt == "auto" and spec.family_object.convolutional)


def size_biased_summary(spec: ArchSpec, depths, seeds, protocol=None, chunk: int = 16, tilt: str = "auto",
                        C: float = 1.0, level: float = 0.95, progress=None) -> dict:
    """The size-biased estimate of ``E[s_bar]`` at every depth with its standard error and normal ``level``
    interval, ``eta* = sqrt(C / E[s_bar])`` with its interval, the seeds' ``Var ln (s_bar w)`` and the fitted
    exponent of ``eta*`` in the depth (seed bootstrap of the weighted values)."""
    from scipy.stats import norm

    from amutheory import stats

    pooled = resolve_tilt(spec, tilt)
    z = float(norm.ppf(0.5 + level / 2))
    out = {"tilt": "pooled" if pooled else "full", "level": level, "s_bar_mean": [], "s_bar_se": [],
           "s_bar_mean_ci": [], "eta_star_mean": [], "eta_star_mean_ci": [], "var_ln_weighted": [],
           "var_ln_log_w": []}
    values = []
    for i, d in enumerate(depths):
        res = size_biased_probe(spec.with_(depth=d), seeds, protocol, chunk=chunk, pooled=pooled)
        v = res.s_bar
        values.append(v)
        m, se = res.mean()
        lo, hi = m - z * se, m + z * se
        out["s_bar_mean"].append(m)
        out["s_bar_se"].append(se)
        out["s_bar_mean_ci"].append([lo, hi])
        out["eta_star_mean"].append(math.sqrt(C / m))
        out["eta_star_mean_ci"].append([math.sqrt(C / hi), math.sqrt(C / lo) if lo > 0 else None])
        out["var_ln_weighted"].append(float(np.var(np.log(v[v > 0]), ddof=1)))
        out["var_ln_log_w"].append(float(np.var(res.log_w, ddof=1)))
        if progress is not None:
            progress(i + 1, len(depths), d)
    if len(depths) >= 2:
        fit = stats.fit_loglog_slope(list(depths), np.stack(values, axis=1), level=level, statistic="mean")
        out["fitted_exponent_mean"] = -fit.slope / 2
        out["fitted_exponent_mean_ci"] = [-fit.ci[1] / 2, -fit.ci[0] / 2]
    return out
