"""``measure`` on a user's ``nn.Module`` or model factory: the one-step probe
(:mod:`amutheory.measure.module_probe`) over depths and seeds, as a :class:`ModuleMeasurement`.

A factory is called ``FACTORY(depth=L, width=n)`` (``FACTORY(depth=L)`` when ``width`` is None) at every
depth; a module given directly is measured at its own depth (``depths`` must hold one entry, which is only
its label).  Each depth's effective depth is :func:`amutheory.graph.effective_depth` of the first seed's
model (``None`` where the model cannot be traced; the fit in effective depth is then left out).
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field

import numpy as np

from amutheory.measure.measurement import Measurement
from amutheory.names import PAPER_EXPONENT

#: the two depth axes of a user model's fits, in words (``depth_axis``, ``effective_depth_axis`` in the JSON)
DEPTH_AXIS = ("depth L: the factory's depth= argument, whatever FACTORY(depth=L) counts (layers, blocks, blocks "
              "per stage)")
EFFECTIVE_DEPTH_AXIS = ("effective depth L_eff: the shortest input -> output path of the traced graph, counting "
                        "parameterised layers and residual additions (amutheory.graph.effective_depth)")
#: the axis and power the -3/2 law is stated in: ``eta* ~ L_eff^(-3/2)`` (docs/theory.md section 1: the
#: multi-path paper's law; the AM-muP paper's ``L^(-3/2)`` for plain conv nets is the same law, their
#: effective depth being their layer count)
LAW_AXIS = "effective_depth"
LAW_EXPONENT = PAPER_EXPONENT
LAW = "eta* ~ L_eff^(-3/2), stated in the effective depth (docs/theory.md section 1)"


@dataclass
class ModuleMeasurement(Measurement):
    """A :class:`Measurement` of a user's model: ``profiles[L][i, l]`` is ``s_l`` of the ``l``-th counted
    call (``layers[L]`` names them) for seed ``seeds[i]``; ``effective_depths[L]`` the traced graph's."""

    model: str = ""
    layers: dict = field(default_factory=dict)
    effective_depths: dict = field(default_factory=dict)
    input_shape: tuple = ()
    input_kind: str = "float"
    vocab: int | None = None
    width: int | None = None
    dtype: str = "float64"
    vectorised: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def fitted_exponent_effective(self, statistic: str = "mean") -> tuple[float, tuple] | None:
        """The slope of ``ln eta*`` on ``ln`` (effective depth), seed-bootstrap CI; ``None`` when an
        effective depth is missing or fewer than two distinct ones."""
        from amutheory import stats

        eff = [self.effective_depths.get(d) for d in self.depths]
        if any(e is None or e <= 0 for e in eff) or len(set(eff)) < 2:
            return None
        values = np.stack([self.s_bar(d) for d in self.depths], axis=1)
        fit = stats.fit_loglog_slope([float(e) for e in eff], values, level=self.level, statistic=statistic)
        lo, hi = fit.ci
        return -fit.slope / 2, (-hi / 2, -lo / 2)

    def to_dict(self) -> dict:
        from amutheory.measure.module_probe import SEEDING

        d = {"spec": None, "depths": list(self.depths), "seeds": list(self.seeds), "C": self.C}
        d.update(self.summary())
        d.update({"model": self.model, "width": self.width, "input_shape": list(self.input_shape),
                  "input_kind": self.input_kind, "vocab": self.vocab, "dtype": self.dtype, "seeding": SEEDING,
                  "layers": [self.layers[L] for L in self.depths],
                  "layers_counted": [len(self.layers[L]) for L in self.depths],
                  "effective_depths": [self.effective_depths.get(L) for L in self.depths],
                  "vectorised": [self.vectorised.get(L, True) for L in self.depths], "notes": list(self.notes)})
        for stat in ("mean", "geo"):
            fit = self.fitted_exponent_effective(stat) if len(self.depths) >= 2 else None
            d[f"fitted_exponent_effective_{stat}"] = None if fit is None else fit[0]
            d[f"fitted_exponent_effective_{stat}_ci"] = None if fit is None else list(fit[1])
        d.update({"depth_axis": DEPTH_AXIS, "effective_depth_axis": EFFECTIVE_DEPTH_AXIS, "law": LAW,
                  "law_axis": LAW_AXIS, "law_exponent": LAW_EXPONENT})
        return d


def check_factory(factory, width) -> None:
    """``factory`` takes ``depth=`` (and ``width=`` when one is given): ``TypeError`` naming it otherwise."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return  # a builtin without a signature: its call says
    params = sig.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for name in ("depth",) + (("width",) if width is not None else ()):
        if name not in params and not takes_any:
            raise TypeError(f"model: the factory {getattr(factory, '__name__', factory)!r} does not take {name}= "
                            f"(it is called as FACTORY(depth=L{', width=n' if width is not None else ''}))")


def builder(model, depth: int, width):
    """A no-argument callable returning the net of ``depth`` (a copy of the module, or the factory's call)."""
    from torch import nn

    if isinstance(model, nn.Module):  # a copy: tracing runs it in training mode (BatchNorm would update)
        return lambda: copy.deepcopy(model)
    kwargs = {"depth": depth} if width is None else {"depth": depth, "width": width}

    def build():
        try:
            net = model(**kwargs)
        except Exception as exc:  # noqa: BLE001 - the user's code: one line saying what failed
            args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            raise ValueError(f"model: {_name(model)}({args}) failed: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:300]}") from None
        if not isinstance(net, nn.Module):
            raise TypeError(f"model: {_name(model)} returned {type(net).__name__}, not a torch.nn.Module")
        return net

    return build


def _name(model) -> str:
    return getattr(model, "__qualname__", None) or getattr(model, "__name__", None) or type(model).__name__


def effective_depth_of(net, shape, input_kind: str):
    """The traced graph's effective depth of ``net`` on ``shape``, or ``(None, why)``."""
    from amutheory.graph import effective_depth

    try:
        rep = effective_depth(net, shape, input_dtype="long" if input_kind == "tokens" else None)
    except Exception as exc:  # noqa: BLE001 - a model torch.fx cannot trace: no effective depth
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return float(rep.effective_depth), None


def measure_module(model, depths, seeds, protocol, C: float = 1.0, progress=None, chunk: int = 16, *,
                   input_shape=None, width=None, layers=None, input_kind: str = "float", vocab=None,
                   name: str | None = None) -> ModuleMeasurement:
    """The probe of a user's ``model`` (module or factory) at every depth for every seed."""
    import torch
    from torch import nn

    from amutheory.checks import _check_C, check_depths
    from amutheory.measure.measurement import _check_seeds
    from amutheory.measure.module_probe import check_input, probe_module
    from amutheory.spec import ProbeProtocol

    depths, C, seeds = check_depths(depths), _check_C(C), _check_seeds(seeds)
    if not isinstance(protocol, ProbeProtocol):
        raise TypeError(f"protocol must be a ProbeProtocol, got {type(protocol).__name__}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    if input_shape is None:
        raise ValueError("input_shape is required for an nn.Module or a model factory (e.g. (8, 3, 8, 8): batch "
                         "first)")
    shape = check_input(input_shape, input_kind, vocab)
    if width is not None and (isinstance(width, bool) or not isinstance(width, int) or width < 1):
        raise ValueError(f"width must be a positive integer or None, got {width!r}")
    if isinstance(model, nn.Module):
        if len(depths) != 1:
            raise ValueError("depths: a module given directly has one depth (give a factory FACTORY(depth=, width=) "
                             "to measure several)")
        if width is not None:
            raise ValueError("width: a module given directly has its own width (give a factory to set it)")
    else:
        check_factory(model, width)
    profiles, names, eff, vec, notes = {}, {}, {}, {}, []
    for i, d in enumerate(depths):
        build = builder(model, d, width)
        res = probe_module(build, seeds, shape, layers, input_kind, vocab, protocol, chunk)
        profiles[d], names[d], vec[d] = res.s, res.layers, res.vectorised
        if res.fallback:
            notes.append(f"depth {d}: vmap could not run the model; seeds ran one at a time ({res.fallback})")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seeds[0]))
            eff[d], why = effective_depth_of(build(), shape, input_kind)
        if why:
            notes.append(f"depth {d}: no effective depth (tracing failed: {why})")
        if progress is not None:
            progress(i + 1, len(depths), d)
    return ModuleMeasurement(spec=None, depths=list(depths), seeds=list(seeds), profiles=profiles, C=C,
                             model=name or _name(model), layers=names, effective_depths=eff, input_shape=shape,
                             input_kind=input_kind, vocab=vocab, width=width, dtype=protocol.dtype, vectorised=vec,
                             notes=notes)
