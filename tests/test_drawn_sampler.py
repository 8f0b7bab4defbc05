"""How the finite-width kernel law draws a layer's rows (amutheory.symbolic.chain.kernel_law_finite): the layer's
own weights on shifted rows are an exact factor of the kernel map T, so both samplers draw the same law; and
the cost model's estimate tracks the choice."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.laws import costs
from amutheory.laws.chain_finite import slope_depths
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import kernel_law as K
from amutheory.symbolic.chain.kernel_law_finite import (SAMPLERS, _draw_rows, finite_width_kernel_s_bar,
                                                       sampled_forward, weights_cheaper)


@settings(max_examples=25, deadline=None)
@given(dim=st.integers(1, 2), spatial=st.integers(1, 7), kernel=st.sampled_from([1, 3, 5]),
       padding=st.sampled_from(["circular", "zero"]), rows=st.integers(1, 6), batch=st.integers(1, 3))
def test_shifted_rows_factor_the_kernel_map(dim, spatial, kernel, padding, rows, batch):
    """``T(F^T F) = sum_t F_t^T F_t / taps`` to rounding, any grid, kernel (wider than the grid too) and padding."""
    T = K.ShiftMap(spatial, kernel, dim, padding)
    F = np.random.default_rng(spatial * 7 + rows).standard_normal((2, rows, batch, T.P))
    shifted = T.shift_rows(F)
    lhs = np.einsum("tdrbp,tdreq->dbepq", shifted, shifted) / T.taps
    gram = np.einsum("drbp,dreq->dbepq", F, F)
    np.testing.assert_allclose(lhs, T(gram), atol=1e-12 * max(1.0, np.abs(gram).max()))


@pytest.mark.parametrize("padding", ["circular", "zero"])
def test_both_samplers_draw_rows_of_the_layers_covariance(padding):
    """20000 rows from either sampler: their empirical covariance is ``Sigma = c T(F^T F) / r`` within 6 of
    its entries' standard errors (``sqrt((Sigma_ij^2 + Sigma_ii Sigma_jj) / rows)`` for Gaussian rows)."""
    T = K.ShiftMap(4, 3, 1, padding)
    rng = np.random.default_rng(3)
    F = np.maximum(rng.standard_normal((1, 5, 2, 4)), 0.0)       # 5 rows, 2 samples, 4 positions
    sigma = 2.0 * T(K._blocks(F.reshape(1, 5, 8).swapaxes(1, 2) @ F.reshape(1, 5, 8) / 5, 2, 4))
    target = K._flat(sigma)[0]
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / 20000)
    for use_weights in (True, False):
        h = _draw_rows(np.random.default_rng(4), 20000, F, 2.0, T, sigma, use_weights)[0]
        np.testing.assert_array_less(np.abs(h.T @ h / 20000 - target), 6 * se + 1e-12)


def test_the_two_samplers_give_the_law_within_its_monte_carlo_error():
    """Same law, other streams: a ReLU chain's s_bar at depths 4 and 8, 512 draws each, within 4 combined
    standard errors."""
    spec = ArchSpec(dim=1, width=16, spatial=6, batch=3, activation="relu")
    a = finite_width_kernel_s_bar(spec, [4, 8], sampler="weights")
    b = finite_width_kernel_s_bar(spec, [4, 8], sampler="eigh")
    assert a["sampler"] == "weights" and b["sampler"] == "eigh"
    assert not np.array_equal(a["s_bar"], b["s_bar"])
    assert np.all(np.abs(a["s_bar"] - b["s_bar"]) <= 4 * np.hypot(a["se"], b["se"]))


def test_a_bad_sampler_names_itself():
    spec = ArchSpec(dim=1, width=16, spatial=6, batch=3, activation="relu")
    with pytest.raises(ValueError, match="^sampler must be one of " + ", ".join(SAMPLERS)):
        finite_width_kernel_s_bar(spec, [4], sampler="cholesky")
    with pytest.raises(ValueError, match="^sampler"):
        sampled_forward(np.random.default_rng(0), "fast")


def test_auto_takes_the_weights_where_the_grid_is_large_and_the_root_where_it_is_small():
    assert weights_cheaper(ArchSpec(width=32, spatial=16, batch=8), 32)          # B P = 128, n = 32
    assert not weights_cheaper(ArchSpec(width=128, spatial=1, kernel=1, batch=8), 128)   # an MLP's 8 points


def test_the_cost_estimate_grows_with_width_grid_and_depths_and_counts_the_slope_neighbours():
    spec = ArchSpec(width=32, spatial=16, batch=8, activation="relu")
    base = costs.kernel_finite_seconds(spec, [4, 8, 16], 512)
    assert base < costs.kernel_finite_seconds(spec.with_(width=64), [4, 8, 16], 512)
    assert base < costs.kernel_finite_seconds(spec.with_(spatial=32), [4, 8, 16], 512)
    assert base < costs.kernel_finite_seconds(spec, [4, 8, 16, 32], 512)
    assert slope_depths([1, 4, 8]) == [1, 2, 3, 4, 5, 7, 8, 9]


def test_the_command_lines_default_relu_chain_takes_the_probe_free_law_within_the_budget():
    """Run Q of the finite-width plan: at ``ArchSpec``'s default geometry (spatial 16, batch 8) a circular ReLU
    chain at width 32 or 64 is predicted with no probe by default, its estimate within the 60 s budget; a
    zero-padded one too since run R2 (runs L and R had kept the calibrated law); at width 128 both take the
    calibrated law (run W)."""
    import subprocess
    import sys

    from amutheory.laws import REGISTRY, best_law

    for width in (32, 64):
        spec = ArchSpec(width=width, activation="relu", depth=16)
        assert best_law(spec, [4, 8, 16]).law.name == "chain-kernel-finite-backward"
        assert REGISTRY["chain-kernel-finite-backward"].cost(spec, [4, 8, 16]).seconds < 60
        assert best_law(spec.with_(padding="zero"), [4, 8, 16]).law.name == "chain-kernel-finite-backward"
    for padding in ("circular", "zero"):
        assert best_law(ArchSpec(width=128, activation="relu", depth=16, padding=padding),
                        [4, 8, 16]).law.name == "chain-coherent"
    got = subprocess.run([sys.executable, "-m", "amutheory", "laws", "--family", "conv", "--activation", "relu",
                          "--width", "32", "--depths", "4,8,16"], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    assert "default: chain-kernel-finite-backward" in got.stdout


def test_the_slopes_monte_carlo_error_matches_its_spread_over_replicates():
    """``secant_slope_se`` (delta method) against the standard deviation of the secant slope over 400 replicates of
    512 correlated lognormal draws (log-sd 0.5, correlation 0.9 between the neighbours): within 15% (the spread's
    own relative error at 400 replicates is 3.5%)."""
    from amutheory.laws.chain_finite import secant_slope_se

    rng = np.random.default_rng(11)
    cov = 0.25 * np.array([[1.0, 0.9], [0.9, 1.0]])
    slopes, ses = [], []
    for _ in range(400):
        z = rng.multivariate_normal([np.log(100.0), np.log(140.0)], cov, size=512)
        draws = {15: np.exp(z[:, 0]), 17: np.exp(z[:, 1])}
        S15, S17 = 15 * draws[15].mean(), 17 * draws[17].mean()
        slopes.append(-0.5 * (np.log(S17 / S15) / np.log(17 / 15) - 1))
        ses.append(secant_slope_se(draws, [15], [17])[0])
    assert abs(np.mean(ses) / np.std(slopes, ddof=1) - 1) < 0.15


def test_the_backward_law_reports_its_slopes_monte_carlo_error():
    from amutheory.laws import REGISTRY

    spec = ArchSpec(dim=1, width=16, spatial=6, batch=3, activation="relu", depth=8)
    got = REGISTRY["chain-kernel-finite-backward"].evaluate(spec, [4, 8])
    se = got.constants["local_slope_mc_se"]
    assert se.source == "monte-carlo" and 0 < se.value < 1 and "at L = 8" in se.note


def test_a_noisy_slope_is_named_in_the_notes():
    from amutheory.laws.chain_finite import NOISY_SLOPE_SE, noisy_slope_notes

    assert noisy_slope_notes([8, 16], [-1.8, -2.2], [0.05, NOISY_SLOPE_SE / 2]) == []
    (note,) = noisy_slope_notes([8, 32], [-1.7, -3.75], [0.04, 0.93])
    assert "L = 32: -3.75 +- 0.93" in note and "L = 8" not in note


def test_gelu_and_tanh_chains_at_the_default_geometry_take_the_drawn_law_within_the_budget():
    """Run T of the finite-width plan: GELU and tanh chains (either padding) at ``ArchSpec``'s default geometry,
    widths 32 and 64, default to ``chain-kernel-finite`` with its estimate within the 60 s budget."""
    from amutheory.laws import REGISTRY, best_law

    for activation in ("gelu", "tanh"):
        for padding in ("circular", "zero"):
            for width in (32, 64):
                spec = ArchSpec(width=width, activation=activation, padding=padding, depth=16)
                assert best_law(spec, [4, 8, 16]).law.name == "chain-kernel-finite"
                assert REGISTRY["chain-kernel-finite"].cost(spec, [4, 8, 16]).seconds < 60
