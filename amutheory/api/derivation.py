"""``derive``: a spec in, its symbolic depth law out (SymPy only), and the names of the laws."""

from __future__ import annotations

from amutheory.api.checks import _check_spec
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.conv import conv_law

TRANSFORMER_LAWS = ("coherent", "effective-depth")
#: residual-net laws of :func:`predict`: the coherent order (``A, B, e0`` calibrated) or the dense
#: shape (the exact dense law's stream and own parts, each times a calibrated ``rho``,
#: :func:`amutheory.symbolic.resnet.dense.shape_predictor`)
RESNET_LAWS = ("coherent", "dense-shape")
#: what :func:`predict` takes as a residual net's ``law``: either law, or ``"selected"`` (both
#: calibrated on the same nets, the one that fits the calibration K better kept: :func:`pick_resnet_law`)
RESNET_LAW_CHOICES = RESNET_LAWS + ("selected", "limit-shape")
#: the residual laws that are calibrated predictors, not closed forms (``derive`` refuses them)
CALIBRATED_RESNET_LAWS = ("dense-shape", "selected", "limit-shape")
#: every law name :func:`predict` knows, in the order the CLI lists them (``limit-shape``: the exact
#: infinite-width law of the net times one calibrated amplitude, :func:`limit_shape_predictor`; not a
#: candidate of ``selected``)
LAWS = ("coherent", "effective-depth", "dense-shape", "selected", "limit-shape")
#: the criterion :func:`pick_resnet_law` applies (the words every selection record carries)
SELECTION_CRITERION = ("the lower residual standard error of the calibration's fit of ln s_bar "
                       "(sqrt(RSS / dof); made before any held-out depth is seen)")


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
    family has it at all (:func:`_check_law`)."""
    try:
        if spec is None:
            raise ValueError(law)
        _check_law(spec, law)
    except ValueError:
        raise ValueError(f"law: {law!r} is a residual-net law (family resnet)") from None
    raise ValueError(f"law: {law!r} is a calibrated predictor, not a closed form (predict with "
                     f"law={law!r}); derive gives the coherent law, whose exponent it shares")


def _check_law(spec: ArchSpec, law) -> None:
    """``law`` must be one the family has: ``ValueError`` naming it otherwise."""
    allowed = {"transformer": TRANSFORMER_LAWS, "resnet": RESNET_LAW_CHOICES}.get(spec.family, ("coherent",))
    if law not in allowed:
        raise ValueError(f"law: family {spec.family!r} has the laws {', '.join(allowed)}; got {law!r}")


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
