"""The depth law ``eta*(L) = sqrt(C / s_bar(L))`` as an object: expression, exponent,
finite-depth corrections, local slope, LaTeX and a lambdified predictor.

Everything is computed from ``s_bar(L)`` as :mod:`amutheory.symbolic.primitives.expansion` derives it:

* ``exponent = lim_{L->oo} d ln eta* / d ln L = -(1/2) lim L s_bar'(L) / s_bar(L)``
  (a SymPy ``Rational``);
* ``eta*(L) = eta_0 L^exponent (1 + c_1/L + c_2/L^2 + ...)``, ``c_k`` from the series of
  ``(s_bar(L) / (s_0 L^{-2 exponent}))^{-1/2}`` in ``x = 1/L``;
* ``d ln eta*/d ln L = exponent + sigma_1/L + ...``, likewise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from amutheory.symbolic.primitives.symbols import C, L, x


@dataclass
class ScalingLaw:
    """A derived depth law.

    Attributes
    ----------
    s_bar : SymPy expression of ``L`` (and constants): the mean one-step moment.
    constants : tuple of SymPy symbols that stay free in the expression.
    assumptions : the regime the law holds in, one sentence each.
    name : short label (e.g. ``conv1d-relu-circular``).
    s_layer : SymPy expression of ``l``: the per-layer moment the mean is made of.
    """

    s_bar: sp.Expr
    constants: tuple
    assumptions: list = field(default_factory=list)
    name: str = ""
    s_layer: sp.Expr | None = None
    high_precision: bool = False

    @property
    def eta_star(self) -> sp.Expr:
        """``eta*(L) = sqrt(C / s_bar(L))``."""
        return sp.sqrt(C / self.s_bar)

    @property
    def exponent(self) -> sp.Rational:
        """Leading exponent of ``eta*`` in ``L``: ``-(1/2) lim L s_bar'/s_bar``."""
        try:
            growth = sp.limit(sp.cancel(L * sp.diff(self.s_bar, L) / self.s_bar), L, sp.oo)
        except NotImplementedError:
            raise ValueError(f"the law {self.name!r} has no power-law exponent SymPy can find "
                             "(at fixed finite width it grows like lambda^L)") from None
        value = sp.nsimplify(-growth / 2)
        if not value.is_Rational:
            raise ValueError(f"the law {self.name!r} has no power-law exponent (growth {growth})")
        return value

    def _normalised(self) -> sp.Expr:
        """``s_bar(1/x) x^{-2 exponent}`` as a function of ``x = 1/L`` (finite at x = 0)."""
        p = -2 * self.exponent
        return sp.cancel(sp.expand(self.s_bar.subs(L, 1 / x) * x**p))

    @property
    def prefactor(self) -> sp.Expr:
        """``eta_0`` in ``eta* ~ eta_0 L^exponent``."""
        return sp.sqrt(C / self._normalised().subs(x, 0))

    def corrections(self, order: int = 3) -> list:
        """``[c_1, ..., c_order]``: ``eta* = eta_0 L^exponent (1 + sum_k c_k L^{-k})``."""
        _check_order(order)
        p = self._normalised()
        ratio = (p / p.subs(x, 0)) ** sp.Rational(-1, 2)
        ser = sp.series(ratio, x, 0, order + 1).removeO()
        return [sp.factor(sp.expand(ser).coeff(x, k)) for k in range(1, order + 1)]

    @property
    def local_slope(self) -> sp.Expr:
        """``d ln eta* / d ln L = -(L/2) s_bar'(L) / s_bar(L)`` (exact)."""
        return sp.cancel(-L * sp.diff(self.s_bar, L) / (2 * self.s_bar))

    def local_slope_series(self, order: int = 3) -> list:
        """``[exponent, sigma_1, ..., sigma_order]`` of the local slope in ``1/L``."""
        _check_order(order)
        ser = sp.series(self.local_slope.subs(L, 1 / x), x, 0, order + 1).removeO()
        return [sp.factor(sp.expand(ser).coeff(x, k)) for k in range(0, order + 1)]

    def eta_star_series(self, order: int = 3) -> sp.Expr:
        """The truncated expansion ``eta_0 L^exponent (1 + sum_k c_k / L^k)``."""
        cs = self.corrections(order)
        return self.prefactor * L**self.exponent * (1 + sum(c / L**k for k, c in enumerate(cs, 1)))

    def latex(self) -> str:
        """LaTeX of ``eta^*(L)``."""
        return r"\eta^{\star}(L) = " + sp.latex(self.eta_star)

    def predictor(self, quantity: str = "eta_star"):
        """A vectorised NumPy function ``f(L, **constants)`` made by ``lambdify``.

        ``quantity`` is ``eta_star``, ``s_bar`` or ``local_slope``; constants are passed by
        their symbol names (``C`` included)."""
        expr = {"eta_star": self.eta_star, "s_bar": self.s_bar, "local_slope": self.local_slope}.get(quantity)
        if expr is None:
            raise ValueError(f"quantity must be eta_star, s_bar or local_slope; got {quantity!r}")
        args = [L] + sorted(expr.free_symbols - {L}, key=lambda s: s.name)
        names = [s.name for s in args[1:]]
        if self.high_precision:
            import mpmath

            mp_fn = sp.lambdify(args, expr, modules="mpmath")

            def fn(depths, *vals):
                with mpmath.workdps(50):
                    mp_vals = [mpmath.mpf(v) for v in vals]
                    return np.array([float(mp_fn(mpmath.mpf(float(d)), *mp_vals))
                                     for d in np.ravel(depths)]).reshape(np.shape(depths))
        else:
            fn = sp.lambdify(args, expr, modules="numpy")

        def predict(depths, **values):
            missing = [k for k in names if k not in values]
            if missing:
                raise ValueError(f"missing constants: {', '.join(missing)}")
            depths = np.asarray(depths, dtype=float)
            return np.asarray(fn(depths, *[np.float64(values[k]) for k in names]), dtype=float) * np.ones_like(depths)

        predict.constants = names
        predict.expr = expr
        return predict

    def substitute(self, values: dict) -> "ScalingLaw":
        """The law with some constants replaced by numbers (``{name: value}``)."""
        subs = {s: values[s.name] for s in self.s_bar.free_symbols if s.name in values}
        s_layer = self.s_layer.subs(subs) if self.s_layer is not None else None
        return ScalingLaw(self.s_bar.subs(subs), tuple(c for c in self.constants if c.name not in values),
                          list(self.assumptions), self.name, s_layer, self.high_precision)

    def to_dict(self, order: int = 3) -> dict:
        """The ``derive`` JSON contract (plus extra keys)."""
        return {
            "name": self.name,
            "exponent": str(self.exponent),
            "eta_star": sp.sstr(self.eta_star),
            "eta_star_latex": sp.latex(self.eta_star),
            "s_bar": sp.sstr(self.s_bar),
            "s_layer": sp.sstr(self.s_layer) if self.s_layer is not None else None,
            "prefactor": sp.sstr(self.prefactor),
            "corrections": [sp.sstr(c) for c in self.corrections(order)],
            "local_slope_series": [sp.sstr(c) for c in self.local_slope_series(order)],
            "assumptions": list(self.assumptions),
            "constants": [c.name for c in self.constants],
        }


def _check_order(order):
    if isinstance(order, bool) or not isinstance(order, int) or order < 1 or order > 12:
        raise ValueError(f"order must be an integer in 1..12, got {order!r}")
