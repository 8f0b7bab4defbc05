"""The kernel law's recursion in adjoint form (amutheory.symbolic.chain.kernel_law.layer_moments_at_depths): the
same sums as the derivation's order (every depth's backward kernels contracted with every cut,
``layer_moments_by_depth``), the kernel map ``T`` summed one grid axis at a time equal to ``sum_t S_t X S_t^T`` built
from explicit shift matrices, and the drawn law's stream unchanged by how many draws are held at once."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import kernel_law as K
from amutheory.symbolic.chain import kernel_law_finite as KF


def _shift_matrix(spatial: int, dim: int, padding: str, t: tuple) -> np.ndarray:
    """``S_t`` on the flattened ``d``-dimensional grid: ``(S_t x)[p] = x[p + t]`` (wrapped or dropped)."""
    P = spatial**dim
    S = np.zeros((P, P))
    for p in itertools.product(range(spatial), repeat=dim):
        q = [a + b for a, b in zip(p, t)]
        if padding == "circular":
            q = [a % spatial for a in q]
        elif any(a < 0 or a >= spatial for a in q):
            continue
        S[np.ravel_multi_index(p, (spatial,) * dim), np.ravel_multi_index(q, (spatial,) * dim)] = 1.0
    return S


@settings(max_examples=30, deadline=None)
@given(dim=st.integers(1, 2), spatial=st.integers(1, 6), kernel=st.sampled_from([1, 3, 5]),
       padding=st.sampled_from(["circular", "zero"]), lead=st.integers(1, 3))
def test_kernel_map_is_the_sum_over_taps_of_shifted_kernels(dim, spatial, kernel, padding, lead):
    """``T(X) = k^-d sum_t S_t X S_t^T`` with ``S_t`` built position by position, for the axis-by-axis sum and the
    tap-order one, any grid, kernel (wider than the grid too) and padding."""
    T = K.ShiftMap(spatial, kernel, dim, padding)
    X = np.random.default_rng(spatial * 11 + kernel).standard_normal((lead, 2, T.P, T.P))
    r = kernel // 2
    want = sum(S @ X @ S.T for S in (_shift_matrix(spatial, dim, padding, t)
                                     for t in itertools.product(range(-r, r + 1), repeat=dim))) / T.taps
    np.testing.assert_allclose(T(X), want, rtol=0, atol=1e-12 * np.abs(X).max())
    np.testing.assert_allclose(T.in_tap_order(X), want, rtol=0, atol=1e-12 * np.abs(X).max())


_GEOMETRY = st.tuples(st.integers(1, 2), st.sampled_from([1, 3]), st.integers(1, 5))   # dim, kernel, spatial


@settings(max_examples=25, deadline=None)
@given(geometry=_GEOMETRY, padding=st.sampled_from(["circular", "zero"]), activation=st.sampled_from(["relu", "linear"]),
       batch=st.integers(1, 3), depths=st.lists(st.integers(1, 7), min_size=1, max_size=4), drawn=st.booleans())
def test_adjoint_form_sums_what_the_derivation_sums(geometry, padding, activation, batch, depths, drawn):
    """``E[s_l | x]`` at every depth asked, in adjoint form and in the derivation's order, on the same inputs and
    (``drawn``) the same width-16 forward draws: equal to rounding (1e-10 of the largest)."""
    got, want = _both_orders(geometry, padding, activation, batch, depths, drawn, draws=3)
    assert sorted(got) == sorted(want) == sorted(set(depths))
    for L in want:
        assert got[L].shape == want[L].shape == (3, L)
        np.testing.assert_allclose(got[L], want[L], rtol=0, atol=1e-10 * np.abs(want[L]).max())


def _both_orders(geometry, padding, activation, batch, depths, drawn, draws):
    """``E[s_l | x]`` of a width-16 chain (a kernel wider than the grid taken as 1) summed both ways on the same
    inputs and, ``drawn``, the same forward draws: ``(adjoint form, derivation's order)``."""
    dim, kernel, spatial = geometry
    spec = ArchSpec(family="conv", dim=dim, kernel=kernel if kernel <= spatial else 1, spatial=spatial,
                    padding=padding, activation=activation, batch=batch, width=16, input_channels=2,
                    depth=max(depths))
    x = np.random.default_rng(len(depths) + 5 * spatial).standard_normal((draws, batch, 2) + (spatial,) * dim)

    def forward():
        return KF.sampled_forward(np.random.default_rng(4)) if drawn else None

    return (K.layer_moments_at_depths(spec, x, depths, forward=forward()),
            K.layer_moments_by_depth(spec, x, depths, forward=forward()))


@pytest.mark.parametrize("spec", [
    ArchSpec(family="conv", dim=1, width=24, spatial=8, batch=4, padding="zero", activation="relu"),
    ArchSpec(family="conv", dim=2, width=16, spatial=4, batch=3, padding="circular", activation="relu"),
    ArchSpec(family="conv", dim=1, width=24, spatial=6, batch=3, padding="circular", activation="gelu"),
], ids=["relu-1d", "relu-2d", "gelu-1d"])
@pytest.mark.parametrize("sampler", ["weights", "eigh"])
def test_draws_held_at_once_leave_the_stream_unchanged(monkeypatch, spec, sampler):
    """The drawn law over 70 draws (two batches) holding one draw at a time and the whole batch at once: the same
    per-draw ``s_bar`` to rounding -- the batch's Gaussian draws are taken in one stream, whatever is held."""
    runs = []
    for held in (1, 2**40):
        monkeypatch.setattr(KF, "HELD_ENTRIES", held)
        runs.append(KF.finite_width_kernel_s_bar(spec, [2, 5], draws=70, sampler=sampler)["per_draw"])
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-10, atol=0)


def test_a_batch_serves_only_the_draws_the_forward_pass_asks_for():
    """The batch's stream refuses a request of another shape (a forward pass that drifted from the draws taken)."""
    spec = ArchSpec(family="conv", dim=1, width=8, spatial=4, batch=2, activation="relu")
    noise = KF._BatchNormals(np.random.default_rng(0), spec, 5, 3, "weights")
    noise.serve(slice(0, 2))
    assert noise.standard_normal((2, 8, 3 * spec.input_channels)).shape == (2, 8, 3 * spec.input_channels)
    with pytest.raises(AssertionError, match="asked for"):
        noise.standard_normal((2, 8, 5))


@pytest.mark.parametrize("every_s, mid_lines", [(0.0, True), (1e9, False)])
def test_a_long_drawn_law_reports_its_draws_as_it_goes(monkeypatch, every_s, mid_lines):
    """``draws_progress`` passes a line after the last batch, and lines while draws remain once
    ``PROGRESS_EVERY_S`` has passed (every few draws held at once when it is 0; none when it is never reached)."""
    monkeypatch.setattr(KF, "PROGRESS_EVERY_S", every_s)
    monkeypatch.setattr(KF, "HELD_ENTRIES", 1)                       # one draw held at a time: many steps
    lines = []
    spec = ArchSpec(family="conv", dim=1, width=8, spatial=4, batch=2, activation="relu")
    KF.finite_width_kernel_s_bar(spec, [2], draws=70, progress=KF.draws_progress(lines.append))
    assert lines[-1] == "finite-width kernel law: 70 draws of inputs and forward chains"
    assert sum("draws of inputs" in line for line in lines) == 1
    middle = [int(line.split()[3]) for line in lines[:-1]]
    assert (len(middle) > 0) == mid_lines
    assert middle == sorted(middle) and all(0 < d < 70 for d in middle)


@settings(max_examples=15, deadline=None)
@given(geometry=_GEOMETRY, padding=st.sampled_from(["circular", "zero"]), activation=st.sampled_from(["gelu", "tanh"]),
       batch=st.integers(1, 3), depths=st.lists(st.integers(1, 6), min_size=1, max_size=3), drawn=st.booleans())
def test_smooth_loops_at_their_cut_sum_what_every_held_loop_sums(geometry, padding, activation, batch, depths, drawn):
    """GELU and tanh: the loops formed at their cut from the drawn rows and contracted in adjoint form, against every
    layer's loop held and contracted depth by depth -- on the same width-16 forward draws, or (one position, not
    ``drawn``) on the infinite-width loops by quadrature: equal to rounding."""
    got, want = _both_orders(geometry if drawn else (1, 1, 1), padding, activation, batch, depths, drawn, draws=2)
    for L in want:
        np.testing.assert_allclose(got[L], want[L], rtol=0, atol=1e-10 * np.abs(want[L]).max())


def test_the_loop_of_the_rows_is_the_mean_over_rows_of_the_four_masks():
    """``loop_of_rows[b, a, a', b', beta] = mean_i phi'_i(b, a) phi'_i(b, a') phi'_i(b', beta)^2``, entry by entry."""
    rows = np.random.default_rng(1).standard_normal((2, 5, 3, 4))
    got = K.loop_of_rows(rows)
    z, b, a, a2, b2, beta = 1, 2, 3, 0, 1, 2
    want = np.mean(rows[z, :, b, a] * rows[z, :, b, a2] * rows[z, :, b2, beta] ** 2)
    assert got.shape == (2, 3, 4, 4, 3, 4)
    assert got[z, b, a, a2, b2, beta] == pytest.approx(want, rel=1e-12)


def test_2d_smooth_chains_take_the_drawn_law_by_default_only_where_run_2h_decided():
    """The drawn law covers a 2-D GELU or tanh chain (8 x 8, batch 8: B^2 P^3 = 2^24); run 2H (plan addendum 29)
    decided, per activation, whether it may be the default there; the bounds follow its recorded decision.  Where
    it may not, ``not_default_for`` names the bound; where it may, only its cost keeps it off the 60 s default, and
    a budget that fits it takes it."""
    import json
    from pathlib import Path

    from amutheory.laws import REGISTRY, best_law

    recorded = json.loads((Path(__file__).resolve().parents[1] / "docs" / "findings" / "finite_width"
                           / "smooth_2h.json").read_text())["decision"]
    law = REGISTRY["chain-kernel-finite"]
    for activation in ("gelu", "tanh"):
        big = ArchSpec(dim=2, width=32, spatial=8, batch=8, activation=activation, depth=16)
        assert law.covers(big)
        assert (K.DRAWN_DEFAULT_MAX_B2P3[activation] >= 2**24) == recorded[activation]["met"]
        reason = law.not_default_for(big)
        if recorded[activation]["met"]:
            assert reason is None
            assert best_law(big, [8, 12, 16]).law.name == "chain-coherent"              # over the 60 s budget
            assert best_law(big, [8, 12, 16], budget_s=3600).law.name == "chain-kernel-finite"
        else:
            assert str(K.DRAWN_DEFAULT_MAX_B2P3[activation]) in reason
            assert best_law(big, [8, 12, 16], budget_s=3600).law.name != "chain-kernel-finite"
        small = ArchSpec(dim=1, width=32, spatial=16, batch=8, activation=activation, depth=16)
        assert law.not_default_for(small) is None


class _CutsFrom:
    """Cuts formed in single precision from ``bound`` entries (``kernel_law.CUT_SINGLE_FROM``) within the block."""

    def __init__(self, bound):
        self.bound = bound

    def __enter__(self):
        self.kept, K.CUT_SINGLE_FROM = K.CUT_SINGLE_FROM, self.bound

    def __exit__(self, *exc):
        K.CUT_SINGLE_FROM = self.kept


@settings(max_examples=25, deadline=None)
@given(geometry=_GEOMETRY, padding=st.sampled_from(["circular", "zero"]),
       activation=st.sampled_from(["relu", "linear", "gelu", "tanh"]), batch=st.integers(1, 3),
       depths=st.lists(st.integers(1, 6), min_size=1, max_size=3), drawn=st.booleans())
def test_single_precision_cuts_move_the_sums_by_roundings_only(geometry, padding, activation, batch, depths, drawn):
    """Every cut in single precision against every cut in double, on the same inputs and width-16 draws: within
    ``1e-5`` of the largest ``s_l`` -- a cut's entries are sums of at most ``B`` products and its contractions (at
    most ``B P^2 < 2^11`` terms here) accumulate in single precision, ``2^-24`` each, before the sums over the layers
    in double; an error in the single-precision path (a dropped term, a wrong cast) moves them by far more."""
    if activation in ("gelu", "tanh") and not drawn:
        geometry = (1, 1, 1)                             # the smooth loops by quadrature: one position
    with _CutsFrom(1):
        single, _ = _both_orders(geometry, padding, activation, batch, depths, drawn, draws=2)
    with _CutsFrom(2**62):
        double, reference = _both_orders(geometry, padding, activation, batch, depths, drawn, draws=2)
    for L in double:
        assert single[L].dtype == np.float64
        np.testing.assert_allclose(double[L], reference[L], rtol=0, atol=1e-10 * np.abs(reference[L]).max())
        np.testing.assert_allclose(single[L], double[L], rtol=0, atol=1e-5 * np.abs(double[L]).max())


def test_large_cuts_are_single_and_small_ones_double():
    """``cut_dtype``: single precision from ``CUT_SINGLE_FROM`` entries ``B P^3`` (a 2-D chain on 8 x 8 at batch 8),
    double below (every 1-D chain of the recorded runs, spatial 16 at batch 8)."""
    assert K.CUT_SINGLE_FROM == 2**18
    assert K.cut_dtype(8, 64) is np.float32 and K.cut_dtype(8, 32) is np.float32
    assert K.cut_dtype(8, 16) is np.float64 and K.cut_dtype(4, 32) is np.float64 and K.cut_dtype(1, 1) is np.float64


@settings(max_examples=20, deadline=None)
@given(draws=st.integers(1, 3), rows=st.integers(1, 300), points=st.integers(1, 40), on=st.floats(0.0, 1.0))
def test_the_mask_gram_counts_exactly(draws, rows, points, on):
    """ReLU's mask Gram counted in single precision equals the double-precision Gram to the last bit (its entries are
    counts below ``2^24`` before the division by the rows)."""
    masks = (np.random.default_rng(rows * 41 + points).random((draws, rows, points)) < on).astype(float)
    got = KF._mask_gram(masks, rows)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, KF._gram(masks, rows))
