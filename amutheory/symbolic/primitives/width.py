"""How the one-step moment scales with width: the width rule of the learning rate.

The expansion (:mod:`amutheory.symbolic.primitives.expansion`) writes the first-order change of layer ``l``
as ``sum_{j <= l} J_{l<-j} K_{j-1} J_{l<-j}^T g_l``.  Three of its factors carry the width; the
pair sums ``tau(R R^T) tau((P^T P)^2)`` are normalised traces and do not (at leading order):

* the Gram ``K_{j-1}`` of a hidden layer's inputs, per position: ``F E[phi(h)^2]`` with ``F`` the
  layer's fan-in (``n k^d`` for a convolution, ``n`` for a linear layer);
* the per-entry backward variance ``E[g^2]``: the readout sends the loss direction ``r`` back as
  ``W_out^T r``, whose entries have variance ``R = n_out v_out`` (``v_out`` the variance of a
  readout weight); an activation derivative multiplies it by ``E[phi'(h)^2]`` and, at
  criticality (``chi = c E[phi'^2] = 1``), the chain passes it down unchanged;
* the output of the squared sum is averaged over ``n`` channels, and ``|J K J^T g|^2`` sums over
  ``n`` entries of ``g``: the two cancel.

So ``s_l = F^2 E[phi^2]^2 E[phi'^2] R x (width-free: core(l), kernel, positions, batch)``
(:func:`update_scale`).  Pooling over ``P`` positions and the batch mean divide ``g`` by ``P B``
but the same sums over positions and samples come back in ``K``; how much depends on the spatial
coherence of the patches, a width-free factor the conv calibration absorbs into ``a``.

With ``F = n k^d`` and a readout of variance ``v_out = sigma_out^2 / n^rho`` the exponent
``nu = d ln s / d ln n = 2 - rho`` follows (:func:`width_exponent`), and ``eta* = sqrt(C / s_bar)``
scales like ``n^(-nu/2)``:

* ``rho = 1`` (the fan-in readout ``Var 1/n`` of this library's models, the standard
  parametrisation): ``eta* ~ n^(-1/2)``;
* ``rho = 2`` (a muP readout, ``Var 1/n^2``): ``eta*`` independent of the width, the muP
  statement for SGD hidden layers.

This is *not* the ``1/fan_in`` often quoted for SGD in the standard parametrisation: that is the
stability limit set by the *output* (``f`` moves by ``eta n``), not the update of the hidden
pre-activations the AM-muP probe fixes.  ``amutheory.transfer`` uses the rule derived here and
reports ``1/fan_in`` beside it; the ``transfer`` campaign measures both.
"""

from __future__ import annotations

import functools

import sympy as sp

from amutheory.spec import READOUT_POWERS
from amutheory.symbolic.primitives.symbols import n

#: fan-in of a hidden layer, kernel size and dimension (the width ``n`` is the library's symbol)
F = sp.Symbol("F", positive=True)
k = sp.Symbol("k", positive=True)
d = sp.Symbol("d", positive=True, integer=True)
#: E[phi(h)^2] and E[phi'(h)^2] at the layer's variance
q_phi = sp.Symbol("q_phi", positive=True)
chi_phi = sp.Symbol("chi_phi", positive=True)
#: readout: outputs, weight variance, and its strength ``R = n_out v_out``
n_out = sp.Symbol("n_out", positive=True)
v_out = sp.Symbol("v_out", positive=True)
R = sp.Symbol("R", positive=True)
#: readout variance convention ``v_out = sigma_out^2 / n^rho``
sigma_out2 = sp.Symbol("sigma_out2", positive=True)
rho = sp.Symbol("rho", real=True)

#: readout conventions: name -> rho (the powers are the spec's, :data:`amutheory.spec.READOUT_POWERS`)
READOUTS = {name: sp.Integer(p) for name, p in READOUT_POWERS.items()}


def gram_scale() -> sp.Expr:
    """Per-position Gram entry of a hidden layer's inputs: ``F E[phi^2]``."""
    return F * q_phi


def backward_variance() -> sp.Expr:
    """Per-entry ``E[g^2]`` of every pre-activation's loss gradient at criticality: ``E[phi'^2] R``."""
    return chi_phi * R


@functools.lru_cache(maxsize=None)
def update_scale() -> sp.Expr:
    """The width-carrying scale of ``s_l``: ``(1/n) E|K J J^T g|^2`` with normalised traces,
    ``= (1/n) K^2 (n E[g^2]) = F^2 E[phi^2]^2 E[phi'^2] R`` (``R = n_out v_out``)."""
    entries = n * backward_variance()            # |g|^2 summed over n channels
    return sp.simplify(gram_scale() ** 2 * entries / n)


@functools.lru_cache(maxsize=None)
def scale_in_width(readout: str = "standard", rho_value=None) -> sp.Expr:
    """:func:`update_scale` of a net of width ``n``: ``F = n k^d``, ``R = n_out sigma_out^2 / n^rho``."""
    r = _rho(readout, rho_value)
    return sp.simplify(update_scale().subs(R, n_out * v_out).subs({F: n * k**d, v_out: sigma_out2 / n**r}))


@functools.lru_cache(maxsize=None)
def width_exponent(readout: str = "standard", rho_value=None) -> sp.Expr:
    """``nu = d ln s / d ln n`` (derived: ``2 - rho``)."""
    return sp.simplify(n * sp.diff(sp.log(scale_in_width(readout, rho_value)), n))


def eta_width_exponent(readout: str = "standard", rho_value=None) -> sp.Expr:
    """``d ln eta* / d ln n = -nu / 2`` (``-1/2`` for the standard readout, ``0`` for muP)."""
    return -width_exponent(readout, rho_value) / 2


@functools.lru_cache(maxsize=None)
def width_factor_expr() -> tuple:
    """``(expr, (F_r, R_r, F_t, R_t))``: ``eta*_t / eta*_r = sqrt(scale_r / scale_t)`` at equal depth
    and activation, in the fan-ins and readout strengths (``E[phi^2]``, ``E[phi'^2]`` cancel)."""
    Fr, Ft, Rr, Rt = sp.symbols("F_r F_t R_r R_t", positive=True)
    ref = update_scale().subs({F: Fr, R: Rr})
    tgt = update_scale().subs({F: Ft, R: Rt})
    return sp.simplify(sp.sqrt(ref / tgt)), (Fr, Rr, Ft, Rt)


@functools.lru_cache(maxsize=None)
def width_factor_fn():
    """Lambdified :func:`width_factor_expr`: ``f(F_r, R_r, F_t, R_t)``."""
    expr, args = width_factor_expr()
    return sp.lambdify(args, expr, "numpy")


def _rho(readout: str, rho_value) -> sp.Expr:
    if rho_value is not None:
        return sp.nsimplify(rho_value)
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {', '.join(READOUTS)}, got {readout!r}")
    return READOUTS[readout]
