"""The finite-width law of linear circular conv chains (amutheory.symbolic.chain.finite_width_modes):
its Wick identities against Monte Carlo of small random matrices, its limits (the spectral law at
n -> oo, the MLP law at the zero mode) and the probe."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import finite_width_modes as fm

N_MC = 200_000


def _taps(rng, size, rows, cols, k, fan_in):
    """``size`` draws of ``k`` taps ``rows x cols``, variance ``1 / (fan_in k)``."""
    return rng.normal(0.0, (1.0 / (fan_in * k)) ** 0.5, (size, k, rows, cols))


def _layer(rng, size, rows, cols, k, spatial, q, fan_in):
    """``(M, W_q)`` of one layer: the zero mode and mode ``q`` of ``k`` symmetric taps."""
    W = _taps(rng, size, rows, cols, k, fan_in)
    t = np.arange(k) - k // 2
    phase = np.exp(1j * 2 * np.pi * q * t / spatial)
    return W.sum(axis=1), np.einsum("t,stij->sij", phase, W)


def _rate(k, spatial, q):
    t = np.arange(k) - k // 2
    return (np.cos(2 * np.pi * q * t / spatial).sum() / k) ** 2


def _fn(expr, *syms):
    return sp.lambdify(syms, expr, "numpy")


def _close(mc, exact, rel):
    assert abs(mc - exact) <= rel * abs(exact), (mc, exact)


def test_backward_transfer_against_monte_carlo():
    """``(|tau Z|^2, tau(Z Z^*), tau(Z conj Z))`` of ``Z = F(q) F(0)^T`` over 1..3 layers (n = 3, k = 3, N = 5)."""
    rng = np.random.default_rng(1)
    width, k, spatial, q = 3, 3, 5, 1
    rate = _rate(k, spatial, q)
    T = np.asarray(_fn(fm.backward_transfer(), fm.n, fm.r)(width, rate), float)
    Fq = np.broadcast_to(np.eye(width), (N_MC, width, width)).astype(complex)
    F0 = np.broadcast_to(np.eye(width), (N_MC, width, width)).astype(float)
    state = np.ones(3)
    for _ in range(3):
        M, Wq = _layer(rng, N_MC, width, width, k, spatial, q, width)
        Fq, F0 = Wq @ Fq, M @ F0
        state = T @ state
        Z = Fq @ np.swapaxes(F0, 1, 2)
        w = np.abs(np.trace(Z, axis1=1, axis2=2) / width) ** 2
        f = np.einsum("sij,sij->s", Z, Z.conj()).real / width
        g = np.einsum("sij,sji->s", Z, Z.conj()).real / width
        for mc, exact in zip((w.mean(), f.mean(), g.mean()), state):
            _close(mc, exact, 0.03)


@pytest.mark.parametrize("first", [True, False])
def test_cross_transfer_against_monte_carlo(first):
    """One layer on given inputs: ``(||Gamma'||^2, tr K_q' tr K_0')`` is :func:`cross_transfer` of the
    inputs' own ``(||Gamma||^2, tr K_q tr K_0)`` (a conditional expectation, so exact given them)."""
    rng = np.random.default_rng(2)
    width, cin, k, spatial, q, batch = 3, (2 if first else 3), 3, 6, 1, 2
    X0 = rng.normal(size=(cin, batch))
    Xq = rng.normal(size=(cin, batch)) + 1j * rng.normal(size=(cin, batch))
    Xq = Xq + 0.7 * X0  # correlated with the zero mode: the map holds for any inputs
    gam = X0.T @ Xq
    state = np.array([np.sum(np.abs(gam) ** 2), np.sum(np.abs(Xq) ** 2) * np.sum(X0**2)])
    M, Wq = _layer(rng, N_MC, width, cin, k, spatial, q, cin)
    G1 = np.swapaxes(M @ X0, 1, 2) @ (Wq @ Xq)
    mc = [np.mean(np.sum(np.abs(G1) ** 2, axis=(1, 2))),
          np.mean(np.sum(np.abs(Wq @ Xq) ** 2, axis=(1, 2)) * np.sum((M @ X0) ** 2, axis=(1, 2)))]
    T = np.asarray(_fn(fm.cross_transfer(fm.n, 1 / fm.C_0, fm.r), fm.n, fm.C_0, fm.r)(width, cin,
                                                                                         _rate(k, spatial, q)), float)
    for a, b in zip(mc, T @ state):
        _close(a, b, 0.02)


def test_pair_factorisation_against_monte_carlo():
    """The pair ``j = 1 < j' = 3`` at ``l = 4``: ``E[tr(A_1 A_3^*) tr(Gamma_0 Gamma_2^*)] = r beta_1 n f_1 w_1
    kappa_0`` (and the diagonal ``j = j' = 2``: ``n f_2 kappa_1``), n = 3, C_0 = 2, B = 2."""
    rng = np.random.default_rng(3)
    width, cin, k, spatial, q, batch, size = 3, 2, 3, 5, 1, 2, 400_000
    rate = _rate(k, spatial, q)
    X0 = rng.normal(size=(size, cin, batch)) * np.sqrt(spatial)
    Xq = (rng.normal(size=(size, cin, batch)) + 1j * rng.normal(size=(size, cin, batch))) * np.sqrt(spatial / 2)
    layers = [_layer(rng, size, width, cin if i == 0 else width, k, spatial, q, cin if i == 0 else width)
              for i in range(4)]
    gram = [np.swapaxes(X0, 1, 2) @ Xq]
    x0, xq = X0, Xq
    for M, Wq in layers[:2]:
        x0, xq = M @ x0, Wq @ xq
        gram.append(np.swapaxes(x0, 1, 2) @ xq)

    def A(j, l=4):  # F_lj(q) F_lj(0)^T, layers j+1 .. l (1-based)
        Fq = np.broadcast_to(np.eye(width), (size, width, width)).astype(complex)
        F0 = np.broadcast_to(np.eye(width), (size, width, width)).astype(float)
        for M, Wq in layers[j:l]:
            Fq, F0 = Wq @ Fq, M @ F0
        return Fq @ np.swapaxes(F0, 1, 2)

    def term(j, jp):
        a = np.einsum("sij,sij->s", A(j), A(jp).conj())
        g = np.einsum("sij,sij->s", gram[j - 1], gram[jp - 1].conj())
        return np.mean(a * g).real

    seq = fm.mode_sequences(width, rate, 0.0, cin, batch, float(spatial), 4)
    pair = rate * (width / cin) * width * seq["f"][1] * seq["w"][1] * seq["kappa"][0]
    diag = width * seq["f"][2] * seq["kappa"][1]
    _close(term(1, 3), pair, 0.05)
    _close(term(2, 2), diag, 0.05)


def test_zero_mode_is_the_mlp():
    """At ``r = r_in = 1`` the mode's generating function is the MLP's, Taylor coefficient by coefficient, ``l < 8`` (numbers
    for the inputs and the width; the full symbolic identity, ``fm.zero_mode_is_mlp()``, takes ~40 s)."""
    from amutheory.symbolic.chain.finite_width import layer_generating_function

    vals = {fm.C_0: 3, fm.B: 4, fm.m: 5, fm.v: sp.Rational(3, 2), fm.v_r: sp.Rational(1, 7)}
    for width in (3, 16):
        at = {**vals, fm.n: width}
        mode = fm.taylor_coefficients(fm.mode_generating_function().subs({fm.r: 1, fm.r_in: 1}).subs(at), 8)
        mlp = fm.taylor_coefficients(layer_generating_function().subs(at), 8)
        assert all(sp.simplify(a - b) == 0 for a, b in zip(mode, mlp))


def test_infinite_width_limit_is_the_spectral_mode_symbolically():
    """``lim n -> oo`` of a non-zero mode (per ``(n / C_0)^2``) has the Taylor coefficients ``weight Q_l(r)``
    of the spectral law, ``l = 1 .. 4``, symbolic in ``r``."""
    from amutheory.symbolic.chain import spectral
    from amutheory.symbolic.primitives.symbols import epsilon, l

    vals = {fm.C_0: 3, fm.B: 4, fm.m: 1, fm.v: 1, fm.v_r: 1}
    coeffs = fm.infinite_width_mode_coefficients(5, vals)
    weight = sp.Rational(1, 4**3) * 3 * 4**2 / 3**2  # m v_r / B^3 * ||Gamma_0||^2 / C_0^2
    q = spectral.mode_layer_moment(False).subs(epsilon, 0)  # the first layer's weight vanishes as n -> oo
    for ll in range(1, 5):
        got = coeffs[ll]
        want = weight * q.subs(l, ll).subs(spectral.r, fm.r)
        assert sp.simplify(got - want) == 0, (ll, got, want)


def _spec(**kw):
    base = dict(family="conv", dim=1, depth=6, width=4, kernel=3, spatial=5, padding="circular",
                activation="linear", input_channels=2, batch=3)
    base.update(kw)
    return ArchSpec(**base)


@pytest.mark.parametrize("kw", [dict(), dict(kernel=5, spatial=7), dict(dim=2, spatial=4, depth=3)])
def test_large_width_is_the_spectral_law(kw):
    from amutheory.symbolic.chain.spectral import spectral_layer_moments, spectral_s_bar

    spec = _spec(width=200_000, **kw)
    layers = np.arange(1, spec.depth + 1)
    ratio = fm.finite_width_chain_layer_moments(spec, layers) / spectral_layer_moments(spec, layers)
    assert np.allclose(ratio, 1.0, atol=1e-3)
    depths = [1, 2, spec.depth]
    assert np.allclose(fm.finite_width_chain_s_bar(spec, depths) / spectral_s_bar(spec, depths), 1.0, atol=1e-3)


@pytest.mark.parametrize("kernel", [1, 3, 5])
def test_zero_mode_row_is_the_mlp_law_times_the_position_factor(kernel):
    """The zero mode of any chain is the MLP of ``C_0`` inputs at input variance ``P v``: its row is
    ``k^(2d) / P^2`` times the MLP's finite-width law; at ``k = 1`` and one position the whole law is it."""
    from amutheory.symbolic.chain.finite_width import finite_width_layer_moments

    spec = _spec(kernel=kernel, spatial=7)
    mlp = ArchSpec(family="mlp", depth=6, width=4, input_channels=2, batch=3, activation="linear")
    row = fm.finite_width_mode_table(spec, 6)[0]
    P = spec.spatial
    assert np.allclose(row, kernel**2 / P**2 * finite_width_layer_moments(mlp, np.arange(1, 7)), rtol=1e-10)
    one = _spec(kernel=1, spatial=1)
    assert np.allclose(fm.finite_width_chain_layer_moments(one, np.arange(1, 7)),
                       finite_width_layer_moments(mlp, np.arange(1, 7)), rtol=1e-10)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(width=st.integers(4, 8), depth=st.integers(1, 4), kernel=st.sampled_from([1, 3, 5]),
       spatial=st.integers(5, 7), batch=st.integers(1, 3))
def test_law_against_the_probe(width, depth, kernel, spatial, batch):
    """The law against the probe's seed mean of ``s_bar`` (within 4 standard errors of the seeds)."""
    from amutheory.measure.probe import probe

    spec = _spec(width=width, depth=depth, kernel=kernel, spatial=spatial, batch=batch)
    seeds = 1500
    s_bar = probe(spec, range(seeds), chunk=500).s_bar
    law = fm.finite_width_chain_s_bar(spec, [depth])[0]
    se = s_bar.std(ddof=1) / np.sqrt(seeds)
    assert abs(s_bar.mean() - law) <= 4 * se, (s_bar.mean(), law, se)
