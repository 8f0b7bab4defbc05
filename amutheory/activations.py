"""Gaussian moments of activations and their critical init constants.

For ``z ~ N(0, q)`` the quantities the depth law needs are

* ``E[phi(z)^2]``     forward variance map: ``q_{l+1} = c E[phi(z_l)^2]``;
* ``E[phi'(z)^2]``    backward multiplier: ``chi = c E[phi'(z)^2]`` (``chi = 1``: critical);
* ``E[phi(z)^4]``, ``E[phi'(z)^4]``  fourth moments (finite-width and spectral-variance terms);
* ``E[phi(z)^2 phi'(z)^2]``  one unit's forward-backward coupling (finite-width terms).

Linear and ReLU moments are SymPy integrals against the Gaussian density, exact in ``q``.
GELU and tanh have no closed form; their moments come from ``scipy.integrate.quad`` with the
quadrature's error bound attached.

``critical_c`` is the variance-preserving constant at unit pre-activation variance,
``c* = 1 / E[phi(z)^2]`` with ``z ~ N(0, 1)``: 1 (linear), 2 (ReLU, exactly critical: also
``chi = 1``), ~2.352 (GELU), ~2.536 (tanh) -- the last two by quadrature
(:meth:`Activation.critical_constant`).  For GELU and tanh ``c*`` does not give
``chi = 1``; ``chi(c*)`` is reported so a user sees how far from critical the net is.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp

from amutheory.constants import Constant
from amutheory.symbolic.cache import derivation

_z = sp.Symbol("z", real=True)
_q = sp.Symbol("q", positive=True)


@derivation
def _gaussian_expectation(f_of_z: sp.Expr, lower=-sp.oo) -> sp.Expr:
    """``E[f(sqrt(q) Z)]`` for ``Z ~ N(0, 1)`` by SymPy integration (exact)."""
    density = sp.exp(-_z**2 / 2) / sp.sqrt(2 * sp.pi)
    return sp.simplify(sp.integrate(f_of_z.subs(_z, sp.sqrt(_q) * _z) * density, (_z, lower, sp.oo)))


class Activation:
    """Gaussian moments of one activation; ``moment(kind, q)`` returns a :class:`Constant`."""

    name: str = ""
    exact: bool = False

    # numeric callables (numpy) for quadrature
    def phi(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def dphi(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def exact_moment(self, kind: str) -> sp.Expr:  # pragma: no cover - abstract
        raise NotImplementedError

    def moment(self, kind: str, q: float = 1.0) -> Constant:
        """``E[g(z)]``, ``z ~ N(0, q)``, for ``kind`` in ``phi2, dphi2, phi4, dphi4, phi1, phi2dphi2``."""
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
        if not (isinstance(q, (int, float)) and q > 0):
            raise ValueError(f"q must be a positive number, got {q!r}")
        if self.exact:
            expr = self.exact_moment(kind)
            return Constant(f"E[{kind}]", float(expr.subs(_q, q)), "exact", 0.0, sp.sstr(expr))
        value, err = _quadrature(self, kind, float(q))
        return Constant(f"E[{kind}]", value, "quadrature", err)

    def critical_c(self) -> float:
        """``c* = 1 / E[phi(z)^2]`` at ``z ~ N(0, 1)`` (variance preserving at unit variance)."""
        return 1.0 / self.moment("phi2", 1.0).value

    def critical_constant(self) -> Constant:
        if self.exact:
            expr = 1 / self.exact_moment("phi2").subs(_q, 1)
            return Constant("c_critical", float(expr), "exact", 0.0, sp.sstr(expr))
        m = self.moment("phi2", 1.0)
        return Constant("c_critical", 1.0 / m.value, "quadrature", m.error / m.value**2)

    def chi(self, c: float, q: float = 1.0) -> float:
        """Backward multiplier ``chi = c E[phi'(z)^2]``, ``z ~ N(0, q)``."""
        return c * self.moment("dphi2", q).value

    def spectral_variance(self, c: float, q: float = 1.0) -> Constant:
        """``v_D = c^2 E[phi'^4] / (c E[phi'^2])^2 - 1``: variance of the diagonal factor
        ``c phi'(h)^2`` normalised to mean 1.  Free probability adds it to the Marchenko-Pastur
        variance 1 of each weight matrix: per-layer variance of ``J J^T`` is ``v = 1 + v_D``."""
        m2, m4 = self.moment("dphi2", q), self.moment("dphi4", q)
        value = m4.value / m2.value**2 - 1.0
        source = "exact" if self.exact else "quadrature"
        err = 0.0 if self.exact else 4 * (m4.error / m2.value**2 + m2.error * m4.value / m2.value**3)
        return Constant("v_D", value, source, err)

    def forward_kurtosis_excess(self, q: float = 1.0) -> Constant:
        """``E[phi^4]/E[phi^2]^2 - 1``: per-layer relative variance (times ``n``) of
        ``||x_l||^2``, the forward source of finite-width growth (5 for ReLU, 2 for linear)."""
        m2, m4 = self.moment("phi2", q), self.moment("phi4", q)
        source = "exact" if self.exact else "quadrature"
        return Constant("kappa_fwd", m4.value / m2.value**2 - 1.0, source,
                        0.0 if self.exact else 4 * m4.error / m2.value**2)


    def forward_backward_coupling(self, q: float = 1.0) -> Constant:
        """``rho = E[phi^2 phi'^2] / (E[phi^2] E[phi'^2]) - 1``: how one unit's forward weight ``phi(h)^2`` and its
        backward weight ``phi'(h)^2`` move together (0 linear, 1 ReLU; positive for GELU, negative for tanh, whose
        derivative is largest where ``phi^2`` is smallest).  At infinite width the two factorise; at width ``n``
        the same-unit terms carry ``rho / n``."""
        m, f, b = self.moment("phi2dphi2", q), self.moment("phi2", q), self.moment("dphi2", q)
        source = "exact" if self.exact else "quadrature"
        err = 0.0 if self.exact else (m.error + m.value * (f.error / f.value + b.error / b.value)) / (f.value * b.value)
        return Constant("rho_fb", m.value / (f.value * b.value) - 1.0, source, err)


_KINDS = {"phi1", "phi2", "dphi2", "phi4", "dphi4", "phi2dphi2"}


class Linear(Activation):
    name, exact = "linear", True

    def phi(self, x):
        return x

    def dphi(self, x):
        return np.ones_like(x)

    @functools.lru_cache(maxsize=None)
    def exact_moment(self, kind):
        f = {"phi1": _z, "phi2": _z**2, "phi4": _z**4, "dphi2": sp.Integer(1), "dphi4": sp.Integer(1),
             "phi2dphi2": _z**2}[kind]
        return _gaussian_expectation(f)


class ReLU(Activation):
    name, exact = "relu", True

    def phi(self, x):
        return np.maximum(x, 0.0)

    def dphi(self, x):
        return (x > 0).astype(float)

    @functools.lru_cache(maxsize=None)
    def exact_moment(self, kind):
        # phi = z on z > 0 and 0 elsewhere; phi' = 1 on z > 0.
        f = {"phi1": _z, "phi2": _z**2, "phi4": _z**4, "dphi2": sp.Integer(1), "dphi4": sp.Integer(1),
             "phi2dphi2": _z**2}[kind]
        return _gaussian_expectation(f, lower=0)


class GELU(Activation):
    name = "gelu"

    def phi(self, x):
        from scipy import special

        return x * special.ndtr(x)

    def dphi(self, x):
        from scipy import special

        return special.ndtr(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


class Tanh(Activation):
    name = "tanh"

    def phi(self, x):
        return np.tanh(x)

    def dphi(self, x):
        return 1.0 - np.tanh(x) ** 2


@functools.lru_cache(maxsize=None)
def _quadrature(act: Activation, kind: str, q: float) -> tuple[float, float]:
    s = math.sqrt(q)
    g = {
        "phi1": lambda z: act.phi(s * z),
        "phi2": lambda z: act.phi(s * z) ** 2,
        "phi4": lambda z: act.phi(s * z) ** 4,
        "dphi2": lambda z: act.dphi(s * z) ** 2,
        "dphi4": lambda z: act.dphi(s * z) ** 4,
        "phi2dphi2": lambda z: act.phi(s * z) ** 2 * act.dphi(s * z) ** 2,
    }[kind]
    density = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    from scipy import integrate  # quadrature (GELU, tanh) only: SciPy loads when it runs

    value, err = integrate.quad(lambda z: g(z) * density(z), -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12)
    return float(value), float(err)


#: one entry per name of :data:`amutheory.spec.ACTIVATIONS` (tests/test_import_cycles.py checks it:
#: this module reads nothing of the spec, so the spec may ask it for an activation's constants)
_REGISTRY = {cls.name: cls() for cls in (Linear, ReLU, GELU, Tanh)}


def get_activation(name: str) -> Activation:
    """The :class:`Activation` called ``name`` (one of linear, relu, gelu, tanh)."""
    if not isinstance(name, str):
        raise TypeError(f"activation must be a string, got {type(name).__name__}")
    if name not in _REGISTRY:
        raise ValueError(f"activation must be one of {', '.join(_REGISTRY)}; got {name!r}")
    return _REGISTRY[name]


def variance_map_trajectory(name: str, c: float, q0: float = 1.0, depth: int = 10) -> list[float]:
    """``q_0, q_1, ..., q_depth`` under ``q_{l+1} = c E[phi(z)^2]``, ``z ~ N(0, q_l)``."""
    act = get_activation(name)
    qs = [float(q0)]
    for _ in range(depth):
        q = qs[-1]
        qs.append(c * act.moment("phi2", q).value if q > 1e-300 else 0.0)
    return qs
