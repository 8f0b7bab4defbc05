"""``measure`` and :class:`Measurement` (they live in :mod:`amutheory.measure.measurement`, below the laws,
which measure their calibration nets with it).  ``measure`` here also takes a user's ``nn.Module`` or model
factory (:mod:`amutheory.measure.module_measurement`)."""

from amutheory.measure.measurement import Measurement, _check_seeds
from amutheory.measure.measurement import measure as _measure_spec
from amutheory.spec import ArchSpec, ProbeProtocol

__all__ = ["Measurement", "measure", "_check_seeds"]


def measure(spec, depths, seeds, protocol: ProbeProtocol = ProbeProtocol(), C: float = 1.0, progress=None,
            chunk: int = 16, *, input_shape=None, width=None, layers=None, input_kind: str = "float", vocab=None,
            name: str | None = None) -> Measurement:
    """Run the one-step probe on ``spec`` at every depth (``spec.depth`` is replaced) for every seed.

    ``spec`` may also be a user's ``nn.Module`` or a model factory ``FACTORY(depth=L, width=n)``: then
    ``input_shape`` (batch first) is required; ``width`` (None: ``FACTORY(depth=L)``), ``layers`` (module
    types, name patterns, or a preset ``"resnet"``/``"transformer"``), ``input_kind`` (``"float"`` or
    ``"tokens"``) and ``vocab`` say how, ``name`` labels it, and the result is a
    :class:`~amutheory.measure.module_measurement.ModuleMeasurement` (the seeding rule and dtype:
    :mod:`amutheory.measure.module_probe`)."""
    if not isinstance(spec, ArchSpec) and callable(spec):  # an nn.Module or a factory
        from amutheory.measure.module_measurement import measure_module

        return measure_module(spec, depths, seeds, protocol, C, progress, chunk, input_shape=input_shape,
                              width=width, layers=layers, input_kind=input_kind, vocab=vocab, name=name)
    given = {"input_shape": input_shape, "width": width, "layers": layers, "vocab": vocab, "name": name}
    for key, value in given.items():
        if value is not None:
            raise ValueError(f"{key} is for an nn.Module or a model factory; an ArchSpec says its own")
    if input_kind != "float":
        raise ValueError("input_kind is for an nn.Module or a model factory; an ArchSpec says its own")
    return _measure_spec(spec, depths, seeds, protocol, C, progress, chunk)
