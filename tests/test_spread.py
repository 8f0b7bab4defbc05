"""The seed spread of ``ln s_bar`` split at the probe's loss directions.

Kinds of evidence:

* two independent derivations of the same law agree: the Mellin expansion (quadrature of
  ``I_0, I_1``) and the chi-square density (closed form) for equal eigenvalues, over random
  degrees of freedom; the closed form against scipy's digamma written out by hand;
* the quadrature against Monte Carlo over loss directions for random spectra and for the form of a
  real net (tolerances from the number of draws);
* the measured form *is* the probe: ``r^T M r`` equals the probe's ``s_bar`` to rounding, and each
  entry of ``M`` equals the polarisation of the unvectorised reference probe, over random small
  nets (Hypothesis);
* the decomposition recovers known parts from synthetic seeds built with them;
* errors and the validate script (resume, JSON, one-line errors).
"""

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from amutheory import stats
from amutheory.measure.loss_form import (DECOMPOSITION_KEYS, PER_SEED_KEYS, loss_form, measure_loss_form,
                                         sample_coupling, spread_decomposition)
from amutheory.measure.probe import draw_seed, probe, s_layers_one
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import spread
pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")


# --------------------------------------------------------------------------- the law of ln Q
@settings(max_examples=25, deadline=None)
@given(dof=st.integers(1, 200))
def test_mellin_quadrature_equals_the_chi_square_closed_form(dof):
    """``dof`` equal eigenvalues: the quadrature of the Mellin expansion and the closed form from
    the chi-square density are two derivations; they agree to the quadrature's 1e-8."""
    gap, var = spread.log_moments_of_spectrum(np.full(dof, 0.37))
    assert gap == pytest.approx(spread.chi_square_gap(dof), abs=1e-8)
    assert var == pytest.approx(spread.chi_square_var(dof), abs=1e-8)


@settings(max_examples=25, deadline=None)
@given(dof=st.floats(0.5, 500.0))
def test_chi_square_closed_form_is_digamma(dof):
    """The SymPy-derived closed form against ``psi(nu/2) - ln(nu/2)`` and ``psi'(nu/2)`` typed here."""
    assert spread.chi_square_gap(dof) == pytest.approx(special.digamma(dof / 2) - math.log(dof / 2), rel=1e-12)
    assert spread.chi_square_var(dof) == pytest.approx(special.polygamma(1, dof / 2), rel=1e-12)


def test_symbolic_forms():
    g = spread.log_moments()
    assert g["mean_log"].equals(-spread.I0 - spread.sp.EulerGamma)
    assert g["var_log"].equals(2 * spread.I1 - spread.I0**2 - spread.sp.pi**2 / 6)
    assert spread.chi_square_var(1) == pytest.approx(math.pi**2 / 2)  # Var[ln z^2]


def _monte_carlo(lam, draws, rng):
    q = (rng.standard_normal((draws, lam.size)) ** 2) @ lam
    lq = np.log(q)
    return lq.mean() - math.log(lam.sum()), lq.var(), lq


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(2, 40))
def test_quadrature_against_monte_carlo(seed, size):
    """Random spectra (exponential eigenvalues).  200 000 draws: the standard error of the mean of
    ``ln Q`` is ``sd/447`` and of its variance ``sd(ln^2)/447``; 5 standard errors is the bound
    (a false failure has probability below 1e-6 per example)."""
    rng = np.random.default_rng(seed)
    lam = rng.exponential(size=size)
    gap, var = spread.log_moments_of_spectrum(lam)
    mc_gap, mc_var, lq = _monte_carlo(lam, 200_000, rng)
    se_mean = lq.std() / math.sqrt(lq.size)
    se_var = ((lq - lq.mean()) ** 2).std() / math.sqrt(lq.size)
    assert abs(gap - mc_gap) < 5 * se_mean
    assert abs(var - mc_var) < 5 * se_var


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), batch=st.integers(2, 8), outputs=st.integers(1, 12),
       spread_power=st.floats(0.0, 6.0))
def test_isotropic_head_spread_lies_between_the_two_couplings(seed, batch, outputs, spread_power):
    """``M = C (x) I_m``: ``Var_r`` between ``psi'(B m / 2)`` (``C ~ I``) and ``psi'(m / 2)`` (``C`` of
    rank one), for random couplings from nearly equal to nearly rank one.  A property checked here,
    not proved."""
    c = np.random.default_rng(seed).exponential(size=batch) ** spread_power
    _, var = spread.log_moments_of_spectrum(np.repeat(c, outputs))
    assert spread.chi_square_var(batch * outputs) - 1e-8 <= var <= spread.chi_square_var(outputs) + 1e-8


def test_participation_ratio():
    assert spread.participation_ratio(np.full(7, 2.0)) == pytest.approx(7)
    assert spread.participation_ratio([1.0, 0.0, 0.0]) == pytest.approx(1)


@pytest.mark.parametrize("bad, exc", [([], ValueError), ([[1.0]], ValueError), ([1.0, -1.0], ValueError),
                                      ([0.0, 0.0], ValueError), ([np.nan], ValueError)])
def test_bad_spectrum(bad, exc):
    with pytest.raises(exc, match="eigenvalues"):
        spread.log_moments_of_spectrum(bad)
    with pytest.raises(exc, match="eigenvalues"):
        spread.participation_ratio(bad)


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-2.0, ValueError), (math.inf, ValueError),
                                      ("10", TypeError), (True, TypeError)])
def test_bad_dof(bad, exc):
    with pytest.raises(exc, match="dof"):
        spread.chi_square_var(bad)


# --------------------------------------------------------------------------- the form of real nets
def _small(family, **kw):
    base = dict(width=8, kernel=3, spatial=4, batch=2, outputs=3)
    if family == "resnet":
        base.update(branch=kw.pop("branch", "conv-mlp"), init=kw.pop("init", "k-last"))
    return ArchSpec(family=family, **{**base, **kw})


@settings(max_examples=8, deadline=None)
@given(family=st.sampled_from(["conv", "resnet"]), depth=st.integers(1, 4), width=st.integers(2, 12),
       kernel=st.sampled_from([1, 3]), activation=st.sampled_from(["linear", "relu"]), seed=st.integers(0, 99))
def test_form_reproduces_the_probe(family, depth, width, kernel, activation, seed):
    """``r^T M r`` at the seed's own ``r`` is the probe's ``s_bar`` (float64: to 1e-10 relative)."""
    spec = _small(family, depth=depth, width=width, kernel=kernel, activation=activation)
    res = measure_loss_form(spec, [seed], chunk=4)
    assert res.s_bar[0] == pytest.approx(probe(spec, [seed]).s_bar[0], rel=1e-10)
    assert res.eigenvalues.shape == (1, spec.batch * spec.outputs)


def test_form_entries_are_the_polarisation_of_the_reference_probe():
    """``M_ij = (s(e_i + e_j) - s(e_i) - s(e_j)) / 2`` with ``s`` from the unvectorised probe path."""
    spec = _small("resnet", depth=3, activation="relu")
    model, x, _ = draw_seed(spec, 5)
    form = loss_form(model, x, spec.outputs, chunk=5)
    size = spec.batch * spec.outputs

    def s_at(v):
        return float(s_layers_one(model, x, v.reshape(spec.batch, spec.outputs)).mean())

    eye = torch.eye(size, dtype=x.dtype)
    for i, j in [(0, 0), (0, 1), (2, 5), (4, 3)]:
        polar = (s_at(eye[i] + eye[j]) - s_at(eye[i]) - s_at(eye[j])) / 2 if i != j else s_at(eye[i])
        assert form[i, j] == pytest.approx(polar, rel=1e-9, abs=1e-12 * form.trace())
    assert np.allclose(form, form.T)


def test_the_loss_direction_law_of_a_real_form():
    """One real net's form: 100 000 loss directions against the derived gap and variance (5
    standard errors, as above)."""
    spec = ArchSpec(family="resnet", branch="conv-mlp", init="k-squared", width=16, depth=4, kernel=3,
                    spatial=4, batch=4, outputs=5)
    res = measure_loss_form(spec, [3], chunk=20)
    per = res.per_seed()
    mc_gap, mc_var, lq = _monte_carlo(res.eigenvalues[0], 100_000, np.random.default_rng(1))
    assert abs(per["gap_r"][0] - mc_gap) < 5 * lq.std() / math.sqrt(lq.size)
    assert abs(per["var_r"][0] - mc_var) < 5 * ((lq - lq.mean()) ** 2).std() / math.sqrt(lq.size)
    assert 1 <= per["nu_eff"][0] <= spec.batch * spec.outputs


def test_sample_coupling_of_an_isotropic_form():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 4))
    c = a @ a.T
    got, aniso = sample_coupling(np.kron(c, np.eye(3)), 4, 3)
    assert np.allclose(got, c) and aniso == pytest.approx(0.0, abs=1e-14)
    with pytest.raises(ValueError, match="form must be"):
        sample_coupling(np.eye(6), 4, 3)


def test_the_head_turns_isotropic_with_width():
    """``M -> C (x) I_m`` as the head widens: the head's Gram ``W W^T`` deviates from its mean by
    ``O(sqrt(m / n))``, so from n = 8 to n = 128 the anisotropy should fall by a factor ~2-4 and
    ``var_r`` close in on the isotropic ``var_r_iso``.  Six seeds per width (seed sd of the mean
    anisotropy ~0.03, measured); the bound asks for a fall of 30%."""
    res = {}
    for n in (8, 128):
        spec = ArchSpec(family="resnet", branch="conv-mlp", init="k-last", width=n, depth=3, kernel=3,
                        spatial=4, batch=4, outputs=5)
        res[n] = measure_loss_form(spec, range(6), chunk=20).per_seed()
    assert res[128]["anisotropy"].mean() < 0.7 * res[8]["anisotropy"].mean()
    excess = {n: r["var_r"].mean() - r["var_r_iso"].mean() for n, r in res.items()}
    assert abs(excess[128]) < 0.5 * excess[8]


def test_form_errors():
    spec = _small("conv", depth=2)
    model, x, _ = draw_seed(spec, 0)
    with pytest.raises(ValueError, match="chunk"):
        loss_form(model, x, 3, chunk=0)
    with pytest.raises(ValueError, match="outputs"):
        loss_form(model, x, 0)
    with pytest.raises(TypeError, match="spec"):
        measure_loss_form("resnet", [0])
    with pytest.raises(ValueError, match="seeds"):
        measure_loss_form(spec, [])


# --------------------------------------------------------------------------- the decomposition
def test_decomposition_recovers_known_parts():
    """Synthetic seeds: ``tr M`` lognormal with ``Var[ln tr M] = 0.09``, ``nu = 10`` equal
    eigenvalues, ``s_bar = tr M chi^2_10 / 10``.  Then ``var_r = psi'(5)`` and ``gap_r`` exactly,
    and 4000 seeds put the measured parts inside their 95% CIs of the truth (each CI is the
    bootstrap's; a miss has probability ~5% per part, so the check is on the four parts whose
    truth is known, with the seed fixed)."""
    rng = np.random.default_rng(11)
    n, sd = 4000, 0.3
    trace = np.exp(rng.normal(0.0, sd, n))
    s_bar = trace * rng.chisquare(10, n) / 10
    per = {"s_bar": s_bar, "trace": trace, "gap_r": np.full(n, spread.chi_square_gap(10)),
           "var_r": np.full(n, spread.chi_square_var(10)), "nu_eff": np.full(n, 10.0),
           "var_r_iso": np.full(n, spread.chi_square_var(10)), "anisotropy": np.zeros(n)}
    d = spread_decomposition(per, n_boot=400)
    assert set(DECOMPOSITION_KEYS) <= set(d)
    assert d["var_r"]["value"] == pytest.approx(spread.chi_square_var(10))
    var_net, gap_net = sd**2, -(sd**2) / 2  # lognormal: E ln T - ln E T = -Var[ln T] / 2
    truth = {"var_net": var_net, "gap_net": gap_net, "var_total": var_net + spread.chi_square_var(10),
             "gap_total": gap_net + spread.chi_square_gap(10)}
    for key, value in truth.items():
        lo, hi = d[key]["ci"]
        assert lo <= value <= hi, (key, value, d[key])


def test_decomposition_errors():
    ok = {k: np.ones(5) for k in PER_SEED_KEYS}
    with pytest.raises(ValueError, match="lacks trace"):
        spread_decomposition({k: v for k, v in ok.items() if k != "trace"})
    with pytest.raises(ValueError, match="per_seed"):
        spread_decomposition({**ok, "trace": np.ones(4)})
    with pytest.raises(ValueError, match="per_seed"):
        spread_decomposition({**ok, "s_bar": -np.ones(5)})
    with pytest.raises(ValueError, match="level"):
        spread_decomposition(ok, level=1.5)
    with pytest.raises(ValueError, match="columns"):
        stats.joint_bootstrap_ci({"a": np.ones(3), "b": np.ones(4)}, lambda a, b: {"x": 0.0})


# --------------------------------------------------------------------------- the validate script
def test_spread_decomposition_script(tmp_path, capsys, validate_script):
    script = validate_script("spread_decomposition")
    out = tmp_path / "spread.csv"
    args = ["--widths", "8", "--depths", "1,2", "--seeds", "4", "--kernel", "3", "--spatial", "4",
            "--batch", "2", "--outputs", "3", "--out", str(out), "--json"]
    assert script.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert [(r["width"], r["depth"]) for r in first["rows"]] == [(8, 1), (8, 2)]
    assert first["var_r_all_coupled"] == pytest.approx(spread.chi_square_var(3))
    lines = out.read_text().splitlines()
    assert len(lines) == 1 + 2 * 4
    assert script.main(args) == 0  # resumed: nothing measured again, the same numbers
    captured = capsys.readouterr()
    assert "skipped" in captured.err and json.loads(captured.out) == first
    assert len(out.read_text().splitlines()) == len(lines)
    with pytest.raises(SystemExit) as exc:  # another set-up into the same file
        script.main(args[:-1] + ["--activation", "linear"])
    assert "another set-up" in str(exc.value)
    for bad in (["--seeds", "2"], ["--first-seed", "-1"], ["--chunk", "0"]):
        with pytest.raises(SystemExit) as exc:
            script.main(bad)
        assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    assert script.main(["--kernel", "9", "--spatial", "4", "--out", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_measure_spread_cli(capsys):
    from amutheory.cli import main

    args = ["measure", "--family", "resnet", "--branch", "conv-mlp", "--init", "k-squared", "--depths", "2,3",
            "--width", "8", "--spatial", "4", "--batch", "2", "--outputs", "3", "--seeds", "6"]
    assert main(args + ["--spread", "--json", "--compact"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["depth"] for r in d["spread"]] == [2, 3] and d["spread"][0]["seeds"] == 6
    assert set(DECOMPOSITION_KEYS) <= set(d["spread"][0])
    assert "eta_star_mean" in d  # the measure contract is unchanged
    assert d["spread_infinite_width"] is None      # derived for the linear MLP only
    assert main(args) == 0 and "spread" not in capsys.readouterr().out


def test_measure_spread_of_a_linear_mlp_names_its_derived_infinite_width_floor(capsys):
    """``measure --spread`` on a linear MLP adds the derived spread at infinite width (:func:`spread.linear_mlp_spread`
    at the net's batch, input features and outputs) to the JSON and the text."""
    from amutheory.cli import main

    args = ["measure", "--family", "mlp", "--activation", "linear", "--depths", "2", "--width", "8", "--batch", "3",
            "--input-channels", "5", "--outputs", "4", "--seeds", "6", "--spread"]
    assert main(args + ["--json", "--compact"]) == 0
    floor = json.loads(capsys.readouterr().out)["spread_infinite_width"]
    want = spread.linear_mlp_spread(3, 5, 4, draws=2**18)
    assert floor["var_log"] == pytest.approx(want["var_log"], rel=1e-12) and floor["draws"] == 2**18
    assert main(args) == 0
    assert f"at infinite width (derived, every depth): Var total {want['var_log']:.4f}" in capsys.readouterr().out


# --------------------------------------------------------------------------- dense nets: nothing fitted
def test_the_module_docstring_quotes_the_derived_values():
    """The figures of ``spread``'s docstring (``psi'(5)``; the dense net's variance and gap at the
    probe's ``m = 10``, ``c_in = 3``) are what the code derives, to the digits quoted."""
    doc = " ".join(spread.__doc__.split())
    assert f"psi'(5) = {spread.chi_square_var(10):.3f}" in doc
    var, gap = spread.dense_spread(10, 3)
    assert f"they are {var:.2f} and {gap:.2f}" in doc


def test_dense_spread_is_built_from_the_chi_square_moments():
    """Against the closed form typed out here and the stem moment the dense law uses."""
    from amutheory.symbolic.resnet import dense as resnet_dense
    m, f = 10, 3
    var, gap = spread.dense_spread(m, f)
    assert var == pytest.approx(special.polygamma(1, m / 2) + 4 * special.polygamma(1, f / 2), rel=1e-12)
    assert gap == pytest.approx(special.digamma(m / 2) - math.log(m / 2)
                                + 2 * (special.digamma(f / 2) - math.log(f / 2)) - math.log(1 + 2 / f), rel=1e-12)
    spec = ArchSpec(family="resnet", kernel=1, spatial=1, batch=1, input_channels=f)
    assert float(spread.dense_spread_expressions()["stem_second_moment"].subs(spread.fan_in_f, f)) == \
        pytest.approx(resnet_dense.stem_moment(spec))
    with pytest.raises(ValueError, match="outputs"):
        spread.dense_spread(0, 3)
    with pytest.raises(ValueError, match="stem_fan_in"):
        spread.dense_spread(10, 2.5)


@pytest.mark.parametrize("branch, init, activation", [("conv-mlp", "k-last", "relu"), ("conv", "k-last", "linear")])
def test_dense_spread_against_real_nets(branch, init, activation):
    """Dense single-sample residual nets (n = 256, K = 4, 512 seeds): the derived ``Var[ln s_bar]``
    inside the seeds' 95% bootstrap CI, and the derived typical value (``predict --constants derive
    --statistic geo``: the exact mean law times ``exp(gap)``, nothing fitted) inside the CI of the
    geometric mean.  The CIs are the tolerance (the CI of a variance of ``ln chi^2_3``-like values
    from 512 seeds is about +-13%); ``O(1/n)`` terms are left out of both laws."""
    from amutheory.api import predict

    spec = ArchSpec(family="resnet", branch=branch, init=init, activation=activation, width=256, depth=4,
                    kernel=1, spatial=1, batch=1)
    s = probe(spec, range(512), chunk=128).s_bar
    var, _ = spread.dense_spread(spec.outputs, spec.input_channels)
    lo, hi = stats.bootstrap_ci(np.log(s), lambda a, axis=-1: np.var(a, axis=axis, ddof=1))
    assert lo <= var <= hi, (var, lo, hi)
    typical = predict(spec, [4], constants="derive", statistic="geo").s_bar[0]
    _, glo, ghi = stats.geo_mean_ci(s)
    assert glo <= typical <= ghi, (typical, glo, ghi)


def test_benchmark_script_runs(capsys, validate_script):
    """The benchmark's two ways of building the form agree exactly (it times them; nothing timed is
    asserted here)."""
    bench = validate_script("benchmark_loss_form")
    assert bench.main(["--depth", "2", "--width", "8", "--repeats", "1", "--draws", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["max_rel_diff_vmap_vs_loop"] < 1e-12 and out["var_r_derived"] > 0
    with pytest.raises(SystemExit) as exc:
        bench.main(["--draws", "2"])
    assert exc.value.code == 2


@pytest.mark.parametrize("fan_in, outputs", [(16, 10), (3, 2)])
def test_the_linear_mlp_spread_at_one_sample_is_the_dense_closed_form(fan_in, outputs):
    """At batch 1 ``Q = tr(K R K) = |x|^4 |r|^2``, so the Monte Carlo of :func:`spread.linear_mlp_spread` must equal
    :func:`spread.dense_spread`'s closed form (``psi'(m/2) + 4 psi'(f/2)`` and its gap) within 4 of its standard
    errors (``2^18`` draws)."""
    got = spread.linear_mlp_spread(1, fan_in, outputs, draws=2**18)
    var, gap = spread.dense_spread(outputs, fan_in)
    assert abs(got["var_log"] - var) < 4 * got["var_log_se"]
    assert abs(got["gap_log"] - gap) < 4 * got["gap_log_se"]


def test_a_wide_linear_mlp_s_bar_is_a_multiple_of_the_gram_form():
    """On real linear MLPs of width 1024 (depth 2, batch 8, 24 seeds) ``ln s_bar - ln tr(K R K)`` spreads over the
    seeds by the width's part of ``Var ln s_bar`` alone, which diagnostic S2 of the findings page bounds by about
    ``10 / n`` at depth 2 (a spread under 0.1 here): it must stay under 0.12 and under ``ln Q``'s own spread.  A form
    that is not the infinite-width law, ``tr(K)^2 tr(R)`` or ``tr(K^2) tr(R)``, leaves a residual of the order of the
    inputs' and directions' own spread, and fails."""
    torch.set_num_threads(1)
    spec = ArchSpec(family="mlp", width=1024, depth=2, activation="linear", input_channels=16, batch=8)
    seeds = list(range(900000, 900024))
    s_bar = probe(spec, seeds, chunk=8).s_bar
    forms = []
    for seed in seeds:
        _, x, r = draw_seed(spec, seed)
        forms.append(float(spread.linear_mlp_gram_form(x.numpy(), r.numpy())))
    residual = np.log(s_bar) - np.log(forms)
    assert np.std(residual, ddof=1) < 0.12 < np.std(np.log(forms), ddof=1)


@pytest.mark.parametrize("kwargs, exc, name", [(dict(batch=0, input_features=4, outputs=2), ValueError, "batch"),
                                               (dict(batch=2.0, input_features=4, outputs=2), TypeError, "batch"),
                                               (dict(batch=2, input_features=4, outputs=0), ValueError, "outputs"),
                                               (dict(batch=2, input_features=4, outputs=2, draws=1), ValueError, "draws")])
def test_bad_linear_mlp_spread_arguments_are_named(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        spread.linear_mlp_spread(**kwargs)
