"""``derive``: a spec in, its symbolic depth law out (SymPy only), and the names of the laws."""

from __future__ import annotations

from amutheory.checks import _check_spec
# CALIBRATED_RESNET_LAWS: the residual laws that are calibrated predictors, not closed forms (``derive``
# refuses them); LAWS: the older law names :func:`predict` still takes (:func:`amutheory.laws.resolve_law`
# maps each to a registered law; ``limit-shape``: the exact infinite-width law of the net times one
# calibrated amplitude, :func:`limit_shape_predictor`; not a candidate of ``selected``)
from amutheory.names import CALIBRATED_RESNET_LAWS, LAWS, RESNET_LAWS, TRANSFORMER_LAWS
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.conv import conv_law

#: what :func:`predict` takes as a residual net's ``law``: either law, or ``"selected"`` (both
#: calibrated on the same nets, the one that fits the calibration K better kept: :func:`pick_resnet_law`)
RESNET_LAW_CHOICES = RESNET_LAWS + ("selected", "limit-shape")


def derive(spec: ArchSpec | None = None, finite_width: bool = False, law: str = "coherent"):
    """The derived depth law of ``spec``'s family (symbolic; no torch).  Residual nets: the law of
    :func:`amutheory.symbolic.resnet.coherent.resnet_law` (ValueError when the forward pass is unstable).
    Transformers: ``law="coherent"`` (:func:`amutheory.symbolic.transformer.coherent.transformer_law`) or
    ``"effective-depth"`` (the chain law in ``2K + 2``, the second paper's claim)."""
    if spec is not None:
        _check_spec(spec)
    if law not in LAWS:
        raise ValueError(f"law must be one of {', '.join(LAWS)}; got {law!r}")
    if law in CALIBRATED_RESNET_LAWS:
        _refuse_calibrated(spec, law)
    if spec is None:
        return conv_law(None, finite_width=finite_width)
    return spec.family_object.derive(spec, finite_width=finite_width, law=law)


def _refuse_calibrated(spec: ArchSpec | None, law: str) -> None:
    """``derive`` gives closed forms only: a calibrated predictor's name is refused, saying whether the
    family has it at all (:func:`~amutheory.laws.resolve_law`)."""
    from amutheory.laws.resolve import resolve_law

    try:
        if spec is None:
            raise ValueError(law)
        resolve_law(spec.family, law, "calibrate")
    except ValueError:
        raise ValueError(f"law: {law!r} is a residual-net law (family resnet)") from None
    raise ValueError(f"law: {law!r} is a calibrated predictor, not a closed form (predict with "
                     f"law={law!r}); derive gives the coherent law, whose exponent it shares")


def free_constant_sources(law, derived: dict | None = None) -> dict:
    """``{name: {"source", "note"}}`` of every constant left free in ``law``'s expression: those with a
    derivation (``derived``: name -> :class:`~amutheory.constants.Constant`) carry its source; the
    others are **calibrated** -- fitted to probe measurements at other depths by ``predict`` with a
    calibrated law (where an exact law covers the net, ``predict``'s default uses it instead)."""
    derived = derived or {}
    out = {}
    for symbol in law.constants:
        name = symbol.name
        if name in derived:
            out[name] = {"source": derived[name].source, "note": "derived (see derived_constants)"}
        else:
            out[name] = {"source": "calibrated", "note": "fitted to probe measurements at other depths "
                                                         "(predict --constants calibrate)"}
    return out
