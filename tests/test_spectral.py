"""The spectral law of linear circular conv chains (amutheory.symbolic.chain.spectral): its symbolic
sums against brute force, its limits, the API/CLI path that uses it, and a measured check."""

import json
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.api import predict
from amutheory.cli import main
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import spectral as S
from amutheory.symbolic.primitives.symbols import epsilon, l


def _spec(**kw):
    base = dict(family="conv", dim=1, activation="linear", padding="circular", width=64, kernel=3, spatial=8,
                batch=4, input_channels=3, depth=4)
    base.update(kw)
    return ArchSpec(**base)


# --------------------------------------------------------------------------- symbolic
def test_backward_recursion_solution():
    assert sp.simplify(S.backward_moment() - (1 - S.r ** (S.i + 1)) / (1 - S.r)) == 0
    assert sp.simplify(S.backward_moment(sp.Integer(1)) - (S.i + 1)) == 0


def test_zero_mode_is_the_conv_pair_kernel_with_a_equal_b():
    assert S.zero_mode_is_pair_kernel()


def test_generic_mode_tends_to_zero_mode():
    """The r != 1 closed form is continuous at r = 1 (the two branches are one function)."""
    q = S.mode_layer_moment(False).subs({l: 5, epsilon: sp.Rational(1, 7)})
    z = S.mode_layer_moment(True).subs({l: 5, epsilon: sp.Rational(1, 7)})
    assert sp.limit(q, S.r, 1) == z


def test_saturated_mode_is_the_deep_limit():
    fn = sp.lambdify((l, S.r, epsilon), S.mode_layer_moment(False))
    sat = sp.lambdify((S.r, epsilon), S.saturated_mode_moment())
    for rate in (0.1, 0.5, 0.8):
        assert fn(400, rate, 0.05) == pytest.approx(sat(rate, 0.05), rel=1e-10)


@settings(max_examples=25, deadline=None)
@given(dim=st.sampled_from([1, 2]), spatial=st.integers(1, 12), half_k=st.integers(0, 3),
       width=st.integers(1, 512), batch=st.integers(1, 6), channels=st.integers(1, 5), layer=st.integers(1, 9))
def test_layer_moments_equal_brute_force(dim, spatial, half_k, width, batch, channels, layer):
    k = min(2 * half_k + 1, spatial if spatial % 2 else spatial - 1) or 1
    if dim == 2:
        spatial = min(spatial, 6)
        k = min(k, spatial if spatial % 2 else spatial - 1)
    spec = _spec(dim=dim, spatial=spatial, kernel=k, width=width, batch=batch, input_channels=channels)
    exact = S.brute_force_spectral_layer(spec, layer)
    # rel 1e-8: the float64 closed form divides by (1 - r)^3 and by r, which costs ~3 of 16 digits
    assert S.spectral_layer_moments(spec, [layer])[0] == pytest.approx(exact, rel=1e-8)
    mean = np.mean([S.brute_force_spectral_layer(spec, x) for x in range(1, layer + 1)])
    assert S.spectral_s_bar(spec, [layer])[0] == pytest.approx(mean, rel=1e-8)


def test_near_one_modes_use_high_precision():
    """Large N puts modes next to r = 1, where the closed form cancels to ~1e-11 in float64."""
    spec = _spec(spatial=512, kernel=3)
    rates, _ = S.mode_weights(spec)
    assert np.any((rates < 1) & (rates > 1 - S.NEAR_ONE))
    for layer in (3, 12):
        assert S.spectral_layer_moments(spec, [layer])[0] == pytest.approx(
            S.brute_force_spectral_layer(spec, layer), rel=1e-9)


def test_slope_is_the_derivative_and_tends_to_minus_three_halves():
    spec = _spec()
    depths = np.array([6.0, 20.0, 90.0])
    h = 1e-4
    up, down = S.spectral_s_bar(spec, depths * (1 + h)), S.spectral_s_bar(spec, depths * (1 - h))
    numeric = -0.5 * (np.log(up) - np.log(down)) / (np.log(1 + h) - np.log(1 - h))
    np.testing.assert_allclose(S.spectral_slope(spec, depths), numeric, rtol=1e-6)
    assert S.spectral_slope(spec, [1e6])[0] == pytest.approx(-1.5, abs=1e-3)


def test_constants_are_the_deep_limit_of_the_law():
    """``a = b`` (zero mode) and ``e`` (saturated modes) give the cubic that the law approaches."""
    spec = _spec(spatial=8)
    c = {k: v.value for k, v in S.spectral_constants(spec).items()}
    assert c["a"] == c["b"] > 0 and c["e"] > 0 and 0 < c["r_1"] < 1
    big = 200
    cubic = c["a"] * sp.lambdify(l, S.mode_layer_moment(True).subs(epsilon, c["epsilon"]))(big) + c["e"]
    assert S.spectral_layer_moments(spec, [big])[0] == pytest.approx(cubic, rel=1e-9)


def test_weights_scale_with_input_variance_and_head():
    spec = _spec()
    _, w1 = S.mode_weights(spec, 1.0)
    _, w2 = S.mode_weights(spec, 2.0)
    np.testing.assert_allclose(w2, 4 * w1)
    _, wm = S.mode_weights(spec.with_(readout="mup"))
    np.testing.assert_allclose(wm, w1 / spec.width)


@pytest.mark.parametrize("kw, arg", [(dict(activation="relu"), "activation"), (dict(padding="zero"), "padding"),
                                     (dict(init_c=2.0), "c")])
def test_bad_specs_name_the_argument(kw, arg):
    with pytest.raises(ValueError, match=arg):
        S.check_spectral_spec(_spec(**kw))
    if arg == "c":  # relu and zero padding have their own exact laws under constants="derive"
        with pytest.raises(ValueError, match=arg):
            predict(_spec(**kw), [2, 4], constants="derive")
    assert not S.spectral_applies(_spec(**kw))
    with pytest.raises(TypeError, match="spec"):
        S.check_spectral_spec("conv")


# --------------------------------------------------------------------------- API and CLI
def test_predict_derive_is_the_spectral_law():
    spec = _spec()
    pred = predict(spec, [2, 8], law="chain-spectral")
    np.testing.assert_allclose(pred.s_bar, S.spectral_s_bar(spec, [2, 8]))
    np.testing.assert_allclose(pred.eta_star, 1 / np.sqrt(S.spectral_s_bar(spec, [2, 8])))
    assert pred.calibration is None and all(c.source != "calibrated" for c in pred.constants.values())
    # constants="derive" takes the finite-width law of the same chain (chain-finite-width), exact at its width
    from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_s_bar

    np.testing.assert_allclose(predict(spec, [2, 8], constants="derive").s_bar, finite_width_chain_s_bar(spec, [2, 8]))


def test_cli_predict_and_derive_json(capsys):
    flags = ["--family", "conv", "--dim", "1", "--padding", "circular", "--activation", "linear", "--width", "64",
             "--kernel", "3", "--spatial", "8", "--batch", "4"]
    assert main(["predict", *flags, "--depths", "2,4", "--constants", "derive", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["law"].endswith("finite-width") and len(d["eta_star"]) == 2
    assert main(["derive", *flags, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["spectral"]["constants"]["a"]["source"] == "exact" and d["exponent"] == "-3/2"
    gelu = ["predict", "--family", "conv", "--dim", "1", "--padding", "circular", "--activation", "gelu",
            "--width", "64", "--kernel", "3", "--spatial", "8", "--depths", "2,4", "--constants", "derive"]
    assert main(gelu) == 2
    assert "activation" in capsys.readouterr().err


# --------------------------------------------------------------------------- measured
def test_measured_mean_matches_the_parameter_free_law():
    """200 fixed seeds of a real probe (n = 256, N = 32, B = 4, L = 4; the non-zero modes are 72% of s).  The per-seed s_bar is
    heavy-tailed (CV ~ 1, mostly from the random inputs and readout), so the standard error of
    the mean is ~7%; the tolerance is 3 standard errors plus the finite-width excess the law
    leaves out (relative ~ gamma L / n with gamma <~ 4 measured: <= 6% here).  A wrong mode
    weight (e.g. dropping the non-zero modes, or a factor 2) fails by far more; the last line
    checks that the zero mode alone is rejected."""
    spec = _spec(width=256, depth=4, spatial=32)
    s = probe(spec, range(200)).s_bar
    pred = S.spectral_s_bar(spec, [4])[0]
    se = s.std(ddof=1) / math.sqrt(len(s))
    assert abs(s.mean() - pred) <= 3 * se + 0.06 * pred
    # the check can fail: the zero mode alone (the MLP-like part) is far outside the same tolerance
    rates, weights = S.mode_weights(spec)
    zero_only = weights[rates == 1].sum() * S.mode_depth_sum(True).subs({S.L: 4, epsilon: spec.input_channels / spec.width}) / 4
    assert abs(s.mean() - float(zero_only)) > 3 * se + 0.06 * pred


# --------------------------------------------------------------------------- validate/studies/finite_width_mean.py
def test_finite_width_script_writes_resumes_and_refuses(tmp_path, capsys, validate_script):
    fwm = validate_script("finite_width_mean")
    out = tmp_path / "fw.csv"
    args = ["--depth", "2", "--widths", "4,8", "--spatial", "5", "--batch", "2", "--seeds", "3", "--out", str(out),
            "--json"]
    assert fwm.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert [r["width"] for r in first["rows"]] == [4, 8] and len(out.read_text().splitlines()) == 1 + 6
    assert fwm.main(args) == 0  # resume: nothing re-measured, same numbers
    captured = capsys.readouterr()
    assert "skipped" in captured.err and json.loads(captured.out) == first
    assert len(out.read_text().splitlines()) == 1 + 6
    assert fwm.main([*args, "--spatial", "0"]) == 2  # bad input: one line, no traceback
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "spatial" in err[0]
    with pytest.raises(SystemExit, match="another set-up"):
        fwm.main(["--depth", "3", *args[2:]])
    with pytest.raises(SystemExit, match="another set-up"):
        fwm.main([*args, "--activation", "relu"])
    relu = tmp_path / "relu.csv"
    assert fwm.main([*args[:-3], "--out", str(relu), "--json", "--activation", "relu", "--padding", "zero"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["activation"] == "relu" and got["padding"] == "zero" and all(r["law"] > 0 for r in got["rows"])
