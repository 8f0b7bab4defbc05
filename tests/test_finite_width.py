"""The linear MLP's finite-width law (amutheory.symbolic.chain.finite_width): its pieces against direct
Monte Carlo of Gaussian matrices, its infinite-width limit symbolically, and the law against the probe's
seed mean at random small widths and depths (Hypothesis), where the infinite-width law is far off."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.laws import REGISTRY, best_law
from amutheory.laws.mlp import chain_of
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import finite_width as fw
from amutheory.symbolic.chain.spectral import spectral_layer_moments, spectral_s_bar


def _mlp(width, depth=4, **kw):
    kw.setdefault("input_channels", 16)
    return ArchSpec(family="mlp", depth=depth, width=width, activation="linear", **kw)


def test_hidden_transfer_eigenvalues_are_the_norm_moment_and_one_minus_one_over_n():
    n = fw.n
    assert {sp.simplify(e) for e in fw.transfer_eigenvalues()} == {sp.simplify(1 + 2 / n), sp.simplify(1 - 1 / n)}


def test_layer_transfer_matches_monte_carlo_wishart_moments():
    """(E tr K'^2, E (tr K')^2) for K' = Y^T Y, Y with R rows N(0, s2 K): 200000 draws, 5 SE."""
    rng = np.random.default_rng(0)
    R, s2, draws = 5, 0.3, 200_000
    A = rng.standard_normal((3, 3))
    K = A @ A.T
    root = np.linalg.cholesky(K * s2)
    Y = rng.standard_normal((draws, R, 3)) @ root.T
    Kp = np.swapaxes(Y, 1, 2) @ Y
    tr2 = np.einsum("dij,dji->d", Kp, Kp)
    tr11 = np.trace(Kp, axis1=1, axis2=2) ** 2
    want = np.asarray(fw.layer_transfer(R, sp.Rational(3, 10)) * sp.Matrix([np.trace(K @ K), np.trace(K) ** 2]),
                      float).ravel()
    for got, w in zip((tr2, tr11), want):
        assert abs(got.mean() - w) <= 5 * got.std() / np.sqrt(draws)


def test_product_moments_match_monte_carlo_products():
    """u_p = E tau((U U^T)^2) for U a product of p Gaussian n x n layers (variance 1/n): 20000 draws."""
    rng = np.random.default_rng(1)
    n, p, draws = 6, 4, 20_000
    U = np.broadcast_to(np.eye(n), (draws, n, n))
    for _ in range(p):
        U = (rng.standard_normal((draws, n, n)) / np.sqrt(n)) @ U
    S = U @ np.swapaxes(U, 1, 2)
    tau2 = np.einsum("dij,dji->d", S, S) / n
    u = fw.product_moments(_mlp(n), p + 1)[p]
    assert abs(tau2.mean() - u) <= 5 * tau2.std() / np.sqrt(draws)
    assert u > p + 1  # the finite-width excess over the infinite-width p + 1


def test_infinite_width_limit_is_the_spectral_zero_mode_symbolically():
    assert fw.infinite_width_limit_holds()


def test_wide_nets_reach_the_spectral_law_and_narrow_ones_exceed_it():
    wide = _mlp(1_048_576, depth=32)
    got = fw.finite_width_s_bar(wide, [2, 8, 32])
    want = spectral_s_bar(chain_of(wide), [2, 8, 32])
    assert np.allclose(got, want, rtol=5 * 32 * 6 / 1_048_576)  # the excess is ~ L (1 + B C_0 / (C_0 + B)) / n
    narrow = _mlp(16, depth=16)
    ratio = fw.finite_width_layer_moments(narrow, [1, 8, 16]) / spectral_layer_moments(chain_of(narrow), [1, 8, 16])
    assert ratio[0] == pytest.approx(1.0)  # the first layer's update sees no product of layers
    assert 1.0 < ratio[1] < ratio[2]


def test_slope_is_the_derivative_of_the_quartic_depth_sum_at_infinite_width():
    from amutheory.symbolic.chain.spectral import spectral_slope

    wide = _mlp(1_048_576, depth=16)
    assert np.allclose(fw.finite_width_slope(wide, [3, 8, 16]), spectral_slope(chain_of(wide), [3, 8, 16]),
                       atol=1e-4)


def test_the_default_law_of_a_linear_mlp_is_the_finite_width_law_and_needs_no_probe():
    choice = best_law(_mlp(32), [8, 16])
    assert choice.law.name == "mlp-finite-width"
    assert REGISTRY["mlp-finite-width"].cost(_mlp(32), [8, 16]).cost_class != "probe"


@pytest.mark.parametrize("spec, arg", [
    (ArchSpec(family="mlp", depth=4, width=8, activation="relu"), "activation"),
    (ArchSpec(family="mlp", depth=4, width=8, activation="linear", init_c=2.0), "c"),
    (ArchSpec(family="conv", depth=4, width=8, activation="linear"), "family"),
])
def test_nets_outside_the_derivation_are_refused_naming_the_argument(spec, arg):
    with pytest.raises(ValueError, match=f"^{arg}:"):
        fw.finite_width_s_bar(spec, [4])


@settings(max_examples=5, deadline=None)
@given(width=st.integers(6, 16), depth=st.integers(1, 8), channels=st.integers(2, 8), batch=st.integers(2, 4))
def test_law_matches_the_probe_seed_mean_at_random_small_widths(width, depth, channels, batch):
    """The probe's mean over 1500 seeds against the law: within 4 standard errors of the seed mean at
    every layer.  s_l is heavy-tailed (log-normal with a variance of order L/n, larger for one input
    feature or one sample), and a seed mean of a heavy tail falls short of the mean with its standard
    error underestimated: so L <= n/2 and at least two features and samples here (a single feature
    and sample at n = 4 needs ~60000 seeds to come within 2 SE).  The infinite-width law is off by up
    to a factor 2 at these sizes."""
    depth = min(depth, width // 2)
    spec = ArchSpec(family="mlp", depth=depth, width=width, activation="linear", input_channels=channels,
                    batch=batch, outputs=2)
    s = probe(spec, range(1500), chunk=250).s
    mean, se = s.mean(0), s.std(0, ddof=1) / np.sqrt(len(s))
    law = fw.finite_width_layer_moments(spec, np.arange(1, depth + 1))
    assert np.all(np.abs(mean - law) <= 4 * se), (mean, law, se)


def test_the_findings_page_regenerates_from_its_kept_json_word_for_word():
    """docs/findings/finite_width.md is markdown() of the kept table and run JSONs (runs A-F), nothing typed."""
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("finite_width_table", root / "validate" / "finite_width_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    rows = json.loads((root / "docs" / "findings" / "finite_width" / "table.json").read_text())
    assert table.markdown(rows) == (root / "docs" / "findings" / "finite_width.md").read_text()


def test_one_backward_step_has_relative_variance_two_over_n_linear_and_five_over_n_relu():
    """Run F's lead rests on it: ``(c/n) sum_i D_i g_i^2`` (Bernoulli(p) masks), derived in SymPy, against
    a Monte Carlo of the same factor."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("relu_bias", root / "validate" / "finite_width_relu_bias.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    got = mod.backward_step_variance()
    assert (got["linear"], got["relu"], got["ratio"]) == ("2/n", "5/n", 2.5)
    rng = np.random.default_rng(5)
    n, draws = 20, 200_000
    g2 = rng.standard_normal((draws, n)) ** 2
    mask = rng.random((draws, n)) < 0.5
    f = (2.0 / n) * (mask * g2).sum(1)
    rel = f.var() / f.mean() ** 2          # 5/n = 0.25; its sampling sd at 2e5 draws is about 0.002
    assert abs(f.mean() - 1.0) < 0.005 and abs(rel - 5 / n) < 0.01


def test_the_probe_grid_is_what_the_laws_command_chooses(capsys):
    """The findings page's "which nets still need a probe" grid reads the registry as ``amutheory laws`` does: two of
    its cells against the command's JSON (a ReLU chain of width 128 still calibrated by a planned check, run W; at
    width 32 both paddings probe-free, runs Q and R2)."""
    import importlib.util
    import json
    from pathlib import Path

    from amutheory.cli import main

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("finite_width_table", root / "validate" / "finite_width_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    rows = {r["net"]: {c["width"]: c for c in r["cells"]} for r in table.probe_grid()}
    for padding, width, probe in (("zero", 128, True), ("circular", 32, False), ("zero", 32, False)):
        cell = rows[f"relu 1-D chain, {padding}"][width]
        assert main(["laws", "--family", "conv", "--activation", "relu", "--padding", padding, "--width", str(width),
                     "--spatial", "16", "--depths", "8,12,16", "--json"]) == 0
        choice = json.loads(capsys.readouterr().out)["choice"]
        assert (cell["law"], cell["probe"]) == (choice["law"], choice["exactness"] == "calibrated") == (
            cell["law"], probe)
        assert (cell["why"] == "check") == probe
