"""The finite-width laws of conv chains:

* ``chain-finite-width`` (exact): linear circular chains, every Fourier mode at the net's own width ``n``,
  exact in the mean over seeds (:mod:`amutheory.symbolic.chain.finite_width_modes`); its ``n -> oo`` limit
  is ``chain-spectral``;
* ``chain-kernel-finite-backward`` (approximate; the default for ReLU chains up to width 64 -- circular by runs I, Q
  and W, zero-padded by run R2 --, on request for wider ones by run W and GELU and tanh chains by run M): ReLU chains (GELU and tanh at the critical
  ``c``), the kernel law with its forward kernels drawn at width ``n``
  (:mod:`amutheory.symbolic.chain.kernel_law_finite`) times the linear circular chain's exact backward factor at
  the width of equal backward-step variance (``2n/5`` for ReLU; :mod:`amutheory.symbolic.chain.backward_width`;
  a zero-padded chain takes its circular twin's);
* ``chain-kernel-finite`` (Monte Carlo): GELU and tanh chains (either padding), the kernel law with its forward
  kernels drawn at width ``n`` and every Gaussian moment the drawn rows' mean (the four-point loop over sample
  and position triples, the gains per sample and position; :func:`~amutheory.symbolic.chain.kernel_law.
  _drawn_smooth_moments`), the backward side at infinite width given the forward pass."""

from __future__ import annotations

import numpy as np

from amutheory.constants import Constant
import amutheory.laws.costs as costs
from amutheory.laws.blocks import input_var_constant, target_constant
from amutheory.laws.contract import Coverage, Cost, Law, LawValues
from amutheory.spec import ProbeProtocol


def finite_width_mean(spec, depths, input_var) -> tuple:
    """``(s_bar, local slope, constants, name, note)`` of the finite-width law (the spectral law's
    constants kept, for the infinite-width reading, with the finite-width excess beside them)."""
    from amutheory.symbolic.chain.finite_width_modes import check_finite_width_modes_spec, finite_width_chain_s_bar
    from amutheory.symbolic.chain.spectral import spectral_constants, spectral_s_bar

    check_finite_width_modes_spec(spec)
    depths = [int(d) for d in depths]
    s_bar = finite_width_chain_s_bar(spec, depths, input_var)
    # the local slope d ln eta*/d ln L from the exact sums at the integer neighbours (central secant)
    S = lambda ds: np.asarray(ds, float) * finite_width_chain_s_bar(spec, ds, input_var)  # noqa: E731
    lo = [max(d - 1, 1) for d in depths]
    hi = [d + 1 for d in depths]
    dlnS = np.log(S(hi) / S(lo)) / np.log(np.asarray(hi, float) / np.asarray(lo, float))
    slope = -0.5 * (dlnS - 1.0)
    const = dict(spectral_constants(spec, input_var))
    excess = s_bar / spectral_s_bar(spec, depths, input_var)
    const["width_excess"] = Constant("width_excess", float(excess[-1]), "exact",
                                     note=f"E[s_bar] at width {spec.width} over its infinite-width value at "
                                          f"L = {depths[-1]}")
    note = (f"finite-width law of the linear circular chain at width {spec.width} (exact in the mean over seeds): "
            f"nothing fitted; infinite-width law x {', '.join(f'{x:.3f}' for x in excess)} at L = {depths}")
    return s_bar, slope, const, f"conv{spec.dim}d-linear-circular-finite-width", note


class ChainFiniteWidth(Law):
    """The exact law of the mean at width ``n`` (evaluated like :class:`amutheory.laws.chain.ChainSpectral`;
    kept apart from :mod:`amutheory.laws.chain`, which lists it first in its ``LAWS``)."""

    family = "conv"
    name, exactness = "chain-finite-width", "exact"
    summary = ("linear circular conv chain at its width n: every Fourier mode's Wick transfer maps (forward cross-mode "
               "Gram, backward pair moments) summed exactly (the n -> oo limit is chain-spectral)")
    leaves_out = "nothing in the mean over seeds (the typical value's seed-spread line is calibrated)"
    source = "amutheory.symbolic.chain.finite_width_modes"

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, C=1.0):
        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        s_bar, slope, const, label, note = finite_width_mean(spec, depths, protocol.input_var)
        const["input_var"] = input_var_constant(protocol.input_var)
        const["C"] = target_constant(C)
        s_l = {d: self.layer_moments(spec.with_(depth=d), const, protocol.input_var) for d in depths}
        return LawValues(self.name, depths, np.asarray(s_bar, float), np.zeros(len(depths)), const, self.exactness,
                         s_l, [note], local_slope=np.asarray(slope, float), label=label)

    def _covers(self, spec):
        from amutheory.symbolic.chain.finite_width_modes import check_finite_width_modes_spec

        check_finite_width_modes_spec(spec)
        return Coverage(True, "linear chain, circular padding, critical c = 1, any width")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum",
                    "3 x 3 and 2 x 2 transfer maps and convolutions up to the deepest depth, per Fourier mode")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_layer_moments

        return finite_width_chain_layer_moments(spec, np.arange(1, spec.depth + 1), input_var)


def kernel_finite_cost(spec, depths, budget_s: float | None = None, draws: int | None = None) -> Cost:
    """The finite-width kernel law's cost: its draws of inputs and width-``n`` forward chains (and, for GELU and
    tanh, the four-point loops over sample and position triples and the cuts through them).  ``draws``: that many
    (default: its full :data:`~amutheory.symbolic.chain.kernel_law_finite.DRAWS`, or, where ``budget_s`` is set and
    they do not fit, the draws that do: :func:`~amutheory.laws.costs.draws_within`; :attr:`Cost.draws` says which)."""
    from amutheory.symbolic.chain.kernel_law import DRAWN_ACTIVATIONS
    from amutheory.symbolic.chain.kernel_law_finite import DRAWS

    def seconds_at(k):
        loops = costs.drawn_loop_seconds(spec, depths, k) if spec.activation in DRAWN_ACTIVATIONS else 0.0
        return costs.kernel_finite_seconds(spec, depths, k) + loops

    if draws is None:
        draws = costs.draws_within(seconds_at, DRAWS, budget_s) or DRAWS
    how = f"{draws} draws of inputs and width-{spec.width} forward chains"
    if draws < DRAWS:
        how += f" (what the budget allows of {DRAWS}: a larger Monte Carlo error, reported)"
    return Cost(seconds_at(draws), "monte-carlo", how, draws=draws, full_draws=DRAWS)


def check_draws(draws) -> int | None:
    """``draws`` for a Monte Carlo law: ``None`` (its own count) or an integer >= 2; ``ValueError``/``TypeError``
    naming the argument otherwise."""
    if draws is None:
        return None
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)):
        raise TypeError(f"draws must be an integer >= 2 or None, got {type(draws).__name__}")
    if draws < 2:
        raise ValueError(f"draws must be an integer >= 2 or None, got {draws}")
    return int(draws)


def drawn_law_at(spec, depths: list, input_var: float, progress=None, asked: list | None = None,
                 per_draw: dict | None = None, draws: int | None = None) -> tuple:
    """``(s_bar, se, mc_constant)`` of the finite-width kernel law (forward kernels drawn at width ``n``) at
    ``depths``, on one set of ``draws`` draws (default: its full count): its values, their Monte Carlo standard
    errors and the worst relative one over ``asked`` (default: every depth) as the constant ``s_bar_mc_rel_se``
    (with the draws and the seed); ``progress`` gets the draws' progress; a dict ``per_draw`` gets each draw's
    values by depth."""
    from amutheory.symbolic.chain.kernel_law_finite import DRAWS, finite_width_kernel_s_bar

    draws = check_draws(draws) or DRAWS
    got = finite_width_kernel_s_bar(spec, depths, input_var, draws=draws, progress=progress)
    if per_draw is not None:
        per_draw.update({d: got["per_draw"][:, i] for i, d in enumerate(got["depths"])})
    at = {d: i for i, d in enumerate(got["depths"])}
    s_bar, se = (np.array([got[k][at[d]] for d in depths]) for k in ("s_bar", "se"))
    rel = {d: se[i] / s_bar[i] for i, d in enumerate(depths)}
    mc = Constant("s_bar_mc_rel_se", float(max(rel[d] for d in (depths if asked is None else asked))), "monte-carlo",
                  note=f"worst relative standard error over the depths asked, {got['draws']} draws (seed {got['seed']})")
    return s_bar, se, mc


#: the smooth activations whose chains (either padding) take ``chain-kernel-finite`` as ``predict``'s default, by
#: run K (spatial 8) and run T (spatial 16) of validate/plans/FINITE_WIDTH.md (their planned rule, run D's: no worse
#: than the calibrated chain-coherent at held-out depths, in error and in z, at widths 32 and 64; GELU chains still read
#: low by 18-70%: docs/findings/finite_width.md)
DRAWN_CHAIN_DEFAULT = ("gelu", "tanh")


class ChainKernelFinite(Law):
    """GELU and tanh chains at width ``n``: the kernel law, every Gaussian moment drawn."""

    family = "conv"
    name, exactness = "chain-kernel-finite", "monte-carlo"
    summary = ("GELU or tanh conv chain at its width n (either padding): the kernel law with its forward kernels drawn "
               "at width n and every Gaussian moment -- the four-point loop over sample and position triples at each "
               "cut, the gains per sample and position -- the drawn rows' mean; nothing fitted")
    leaves_out = "the finite-width terms of the backward side (products of Jacobians above each update, the readout)"
    source = "amutheory.symbolic.chain.kernel_law_finite"

    def _covers(self, spec):
        from amutheory.symbolic.chain.kernel_law import DRAWN_ACTIVATIONS, check_drawn_spec

        if spec.activation not in DRAWN_ACTIVATIONS:
            return Coverage(False, f"activation: this law is for GELU and tanh chains (ReLU: chain-kernel-finite-backward, "
                                   f"linear: chain-finite-width), got {spec.activation!r}")
        check_drawn_spec(spec)
        return Coverage(True, f"{spec.activation} chain at any c, B^2 N^(3d) within the drawn law's size")

    def not_default_for(self, spec):
        if spec.activation not in DRAWN_CHAIN_DEFAULT:
            return (f"no planned check has made it the default for {spec.activation} chains (run K of "
                    "validate/plans/FINITE_WIDTH.md); ask for it with law='chain-kernel-finite'")
        from amutheory.symbolic.chain.kernel_law import DRAWN_DEFAULT_MAX_B2P3

        bound = DRAWN_DEFAULT_MAX_B2P3[spec.activation]
        if spec.batch**2 * spec.positions**3 > bound:
            return (f"the default for {spec.activation} chains up to batch^2 x (N^d)^3 = {bound}, the sizes its planned "
                    f"checks covered (runs K, T, U and 2H of validate/plans/FINITE_WIDTH.md), got {spec.batch}^2 x "
                    f"{spec.positions}^3; ask for it with law='chain-kernel-finite' (report 2G and run 2H of "
                    "docs/findings/finite_width.md run it on 2-D chains)")
        return None

    def cost(self, spec, depths, budget_s=None, draws=None, **_):
        return kernel_finite_cost(spec, depths, budget_s, draws)

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, C=1.0, draws=None,
                 **options):
        from amutheory.symbolic.chain.kernel_law_finite import DRAWS, draws_progress

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        draws = check_draws(draws) or DRAWS
        s_bar, se, mc = drawn_law_at(spec, depths, protocol.input_var, draws_progress(progress), draws=draws)
        const = {"s_bar_mc_rel_se": mc, "input_var": input_var_constant(protocol.input_var), "C": target_constant(C)}
        note = (f"kernel law with forward kernels drawn at width {spec.width} and every Gaussian moment the drawn rows' "
                f"mean ({draws} draws of inputs and forward chains): nothing fitted; the backward side at "
                "infinite width given the forward pass")
        return LawValues(self.name, depths, s_bar, se, const, self.exactness, None, [note])


def slope_depths(depths) -> list:
    """The depths asked and their integer neighbours (``d - 1 >= 1`` and ``d + 1``), sorted: where
    ``chain-kernel-finite-backward`` evaluates its draws, for the values and their central secant slope."""
    return sorted({int(x) for d in depths for x in (max(int(d) - 1, 1), int(d), int(d) + 1)})


def secant_slope_se(per_draw: dict, lo: list, hi: list) -> np.ndarray:
    """Monte Carlo standard error of the secant slope ``-(1/2) (ln(S_h / S_l) / ln(h / l) - 1)`` (``S = L s_bar``,
    means over draws shared by the depths; a deterministic factor cancels) by the delta method over the draws:
    ``ln S_h - ln S_l`` has variance ``Var(s_h / S_h - s_l / S_l) / draws``."""
    out = []
    for l, h in zip(lo, hi):
        a, b = per_draw[h], per_draw[l]
        g = a / a.mean() - b / b.mean()
        out.append(0.5 * np.sqrt(g.var(ddof=1) / len(g)) / np.log(h / l))
    return np.array(out)


#: a local slope whose Monte Carlo standard error exceeds this gets a note (an exponent read off it is off by as much)
NOISY_SLOPE_SE = 0.1


def noisy_slope_notes(depths, slope, slope_se) -> list:
    """One note naming the depths whose local slope carries a Monte Carlo standard error over
    :data:`NOISY_SLOPE_SE` (``[]`` when none does)."""
    noisy = [f"L = {d}: {v:.2f} +- {e:.2f}" for d, v, e in zip(depths, slope, slope_se) if e > NOISY_SLOPE_SE]
    if not noisy:
        return []
    return [f"the drawn law's local slope is Monte Carlo noise at {'; '.join(noisy)} (heavy-tailed draws at these "
            "L/n): read the slope between depths further apart, or the values"]


def backward_twin(spec):
    """The linear circular chain whose exact backward factor ``chain-kernel-finite-backward`` takes for ``spec``
    (a zero-padded chain's is its circular twin's: the split is derived for circular padding)."""
    return spec.with_(activation="linear", init_c=None, padding="circular")


#: the paddings of 1-D ReLU chains for which ``chain-kernel-finite-backward`` is ``predict``'s default: circular by run
#: I (spatial 8) and run Q (spatial 16, the command line's default geometry) of validate/plans/FINITE_WIDTH.md; zero
#: by run R2 (addendum 41: run R's nets measured with the size-biased probe, 4096 fresh seeds, the same planned rule
#: met at widths 32 and 64), after runs L and R, whose plain seed means could not separate the two laws at width 32,
#: had kept the calibrated law (both laws read low on zero-padded chains, far beyond the probe's noise:
#: docs/findings/finite_width.md)
DEFAULT_PADDINGS = ("circular", "zero")
#: the widest ReLU chain for which ``chain-kernel-finite-backward`` is ``predict``'s default: the widths runs I and Q
#: decided; run W of validate/plans/FINITE_WIDTH.md (a confirmatory check of run U's report, fresh seeds) found the
#: calibrated chain-coherent better in both max |error| and max |z| at width 128, so wider chains take it by default
DEFAULT_MAX_WIDTH = 64
#: the paddings of 2-D ReLU chains for which ``chain-kernel-finite-backward`` is ``predict``'s default (where its cost
#: fits the budget, up to :data:`DEFAULT_MAX_WIDTH`): both, by run 2E of validate/plans/FINITE_WIDTH.md (addendum 27,
#: run I's rule per padding at widths 32 and 64 on fresh seeds: no worse than chain-coherent in max held-out |error|
#: and max |z|; zero-padded 2-D chains still read low beyond 3 z there, as does the calibrated law).  The law fits
#: the budget on 2-D chains since its recursion took the adjoint form; runs I, Q, L and R are 1-D
DEFAULT_2D_PADDINGS: tuple = ("circular", "zero")


class ChainKernelFiniteBackward(Law):
    """ReLU chains at width ``n``: the finite-width kernel law times the linear circular chain's backward factor."""

    family = "conv"
    name, exactness = "chain-kernel-finite-backward", "approximate"
    summary = ("ReLU conv chain (or GELU, tanh at the critical c) at its width n, either padding: the kernel law with "
               "its forward kernels drawn at width n, times the linear circular chain's exact backward factor "
               "b(L; n, n_b) (every mode's backward transfer at the width n_b whose backward steps fluctuate as the "
               "chain's: 2n/5 for ReLU; a zero-padded chain takes its circular twin's); nothing fitted")
    leaves_out = ("an assumption, not derived: that the ReLU chain's backward finite-width excess is the linear "
                  "chain's at the equal-variance width 2n/5 (on ReLU MLPs the same assumption overshoots: "
                  "docs/findings/finite_width.md, runs G and H); for zero padding a second one, that the boundary "
                  "leaves the relative backward excess as on the circular twin, whose factor it takes; for GELU and tanh "
                  "the same, at the width 2n / (3 E[phi'^4] / E[phi'^2]^2 - 1) (run M)")
    source = "amutheory.symbolic.chain.backward_width"
    #: the default for ReLU circular chains by runs I and Q of validate/plans/FINITE_WIDTH.md (its planned rule: no worse
    #: than the calibrated chain-coherent at held-out depths, in error and in z, at widths 32 and 64; both still
    #: read low there: docs/findings/finite_width.md), for zero-padded ones by run R2 (DEFAULT_PADDINGS), not for
    #: chains wider than 64 (run W: DEFAULT_MAX_WIDTH)
    default_candidate = True

    def _covers(self, spec):
        from amutheory.symbolic.chain.finite_width_modes import check_finite_width_modes_spec
        from amutheory.symbolic.chain.kernel_law import check_kernel_spec

        from amutheory.laws.backward import critical_only
        from amutheory.symbolic.chain.kernel_law import DRAWN_ACTIVATIONS, check_drawn_spec

        if spec.activation in DRAWN_ACTIVATIONS:
            check_drawn_spec(spec)
            check_finite_width_modes_spec(backward_twin(spec))
            refusal = critical_only(spec)
            return refusal if refusal is not None else Coverage(
                True, f"{spec.activation} chain at its critical c ({spec.padding} padding), B^2 N^(3d) within the drawn "
                      "law's size")
        if spec.activation != "relu":
            return Coverage(False, f"activation: this law is for ReLU, GELU and tanh chains, got {spec.activation!r}")
        check_kernel_spec(spec)
        check_finite_width_modes_spec(backward_twin(spec))
        if spec.padding == "zero":
            return Coverage(True, "ReLU chain, zero padding (the backward factor of its circular twin), B N^d within "
                                  "the kernel law's size")
        return Coverage(True, "ReLU chain, circular padding, B N^d within the kernel law's size")

    def not_default_for(self, spec):
        if spec.activation != "relu":
            return (f"its planned check on {spec.activation} chains (run M of validate/plans/FINITE_WIDTH.md; "
                    "docs/findings/finite_width.md) kept the drawn chain-kernel-finite as the default (GELU: still beyond "
                    "3 z; tanh: it overshoots where the drawn law holds); ask for it with law='chain-kernel-finite-backward'")
        if spec.dim == 2 and spec.padding not in DEFAULT_2D_PADDINGS:
            return (f"no planned check has made it the default for {spec.padding}-padded 2-D ReLU chains (run 2E of "
                    "validate/plans/FINITE_WIDTH.md decided circular and zero padding: docs/findings/finite_width.md); "
                    "ask for it with law='chain-kernel-finite-backward'")
        if spec.dim == 1 and spec.padding not in DEFAULT_PADDINGS:
            return (f"no planned check has made it the default for {spec.padding}-padded ReLU chains (runs I and Q of "
                    "validate/plans/FINITE_WIDTH.md decided circular padding, run R2 zero padding: "
                    "docs/findings/finite_width.md); ask for it with law='chain-kernel-finite-backward'")
        if spec.width > DEFAULT_MAX_WIDTH:
            return (f"the default for ReLU chains up to width {DEFAULT_MAX_WIDTH} (runs I and Q); at width 128 the "
                    "calibrated chain-coherent was better in both held-out error and z (runs U and W of "
                    "validate/plans/FINITE_WIDTH.md; docs/findings/finite_width.md), so wider chains take it; ask for "
                    "this one with law='chain-kernel-finite-backward'")
        return None

    def cost(self, spec, depths, budget_s=None, draws=None, **_):
        once = kernel_finite_cost(spec, slope_depths(depths), budget_s, draws)
        return Cost(once.seconds, once.cost_class, f"{once.how} (the depths asked and their neighbours)", once.draws)

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, C=1.0, draws=None):
        from amutheory.laws.backward import backward_constants
        from amutheory.symbolic.chain.backward_width import backward_factor, equal_variance_width
        from amutheory.symbolic.chain.kernel_law_finite import DRAWS, draws_progress

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        report = draws_progress(progress)
        n_b = equal_variance_width(spec.width, spec.activation)
        linear = backward_twin(spec)

        # the depths asked and their integer neighbours in one pass over one set of draws; the local slope is a
        # central secant of L s_bar(L) through the neighbours, with its Monte Carlo standard error
        lo, hi = [max(d - 1, 1) for d in depths], [d + 1 for d in depths]
        every, per_draw = slope_depths(depths), {}
        count = check_draws(draws) or DRAWS
        kf, se, mc = drawn_law_at(spec, every, protocol.input_var, report, asked=depths, per_draw=per_draw,
                                  draws=count)
        pick = [every.index(d) for d in depths]
        s_kf, se_kf = kf[pick], se[pick]
        factor_every = backward_factor(linear, every, n_b, protocol.input_var)
        factor = factor_every[pick]
        S = dict(zip(every, np.asarray(every) * kf * factor_every))
        slope = -0.5 * (np.log(np.array([S[h] / S[l] for l, h in zip(lo, hi)]))
                        / np.log(np.asarray(hi, float) / np.asarray(lo, float)) - 1.0)
        slope_se = secant_slope_se(per_draw, lo, hi)
        const = {"s_bar_mc_rel_se": mc, "local_slope_mc_se": Constant(
                     "local_slope_mc_se", float(np.max(slope_se)), "monte-carlo",
                     note="worst Monte Carlo standard error of the local slope over the depths asked ("
                          + ", ".join(f"{v:.3f} at L = {d}" for d, v in zip(depths, slope_se))
                          + "; delta method over the draws)"),
                 **backward_constants(n_b, spec.activation),
                 "input_var": input_var_constant(protocol.input_var), "C": target_constant(C)}
        note = (f"the kernel law with forward kernels drawn at width {spec.width} ({count} draws) times the "
                f"linear circular chain's backward factor at width {n_b:g} ({', '.join(f'{f:.3f}' for f in factor)} "
                f"at the depths asked): nothing fitted; an assumption, not derived (leaves_out)")
        notes = [note] + noisy_slope_notes(depths, slope, slope_se)
        return LawValues(self.name, depths, s_kf * factor, se_kf * factor, const, self.exactness, None, notes,
                         local_slope=slope)
