"""The laws of MLPs.  An MLP is the conv chain with kernel 1 on one position
(:meth:`amutheory.families.mlp.MlpFamily.chain_spec`), so each law here evaluates the chain's own
symbolic module on that chain spec:

* ``mlp-finite-width`` (exact): the linear MLP's law at its own width ``n``
  (:mod:`amutheory.symbolic.chain.finite_width`), whose ``n -> oo`` limit is ``mlp-spectral``;
* ``mlp-one-sample`` (exact): ReLU (and linear) MLPs with a batch of one sample at their own width ``n``
  (:mod:`amutheory.symbolic.chain.one_sample`): the forward-backward coupling carried exactly;
* ``mlp-spectral`` (exact at infinite width): the spectral law of the linear chain (:mod:`amutheory.symbolic.chain.spectral`)
  at its one Fourier mode, the zero mode: ``s_l = weight_0 Q_l(1)``, a cubic in ``l``;
* ``mlp-kernel-finite`` (Monte Carlo; the default for ReLU MLPs by run D, for GELU and tanh MLPs by run J
  of validate/plans/FINITE_WIDTH.md): the kernel law with its forward kernels drawn at the net's width
  (:mod:`amutheory.symbolic.chain.kernel_law_finite`; GELU and tanh: every Gaussian moment the drawn rows' mean);
* ``mlp-kernel-finite-backward`` (approximate, on request: run G kept the default): ``mlp-kernel-finite``
  times the linear MLP's exact backward factor at the equal-variance width ``2n/5``
  (:mod:`amutheory.symbolic.chain.backward_width`);
* ``mlp-kernel`` (Monte Carlo, on request): the infinite-width kernel law of ReLU chains
  (:mod:`amutheory.symbolic.chain.kernel_law`) over the batch's ``B`` points (GELU, tanh: its Gaussian
  moments by quadrature, :func:`~amutheory.symbolic.chain.kernel_law.pair_moments`);
* ``mlp-coherent`` (calibrated): the closed-form coherent law (:mod:`amutheory.symbolic.chain.conv`) with
  ``a, b, e`` and the seed spread fitted (:func:`amutheory.calibrate.calibrate`) to probe measurements
  of the MLP itself at other depths.

Each ``evaluate`` takes the contract's arguments and keyword options it may use
(``calibration_depths``, ``calibration_seeds``; others are ignored) and returns the law of the mean
over seeds; the typical value is made outside the laws.
"""

from __future__ import annotations

import functools

import numpy as np

from amutheory.constants import Constant
import amutheory.laws.costs as costs
from amutheory.laws.contract import Coverage, Cost, Law, LawValues
from amutheory.spec import ArchSpec, ProbeProtocol

#: the calibrated law's default calibration depths and seeds (the API's defaults)
CALIBRATION_DEPTHS = (2, 3, 4, 6)
CALIBRATION_SEEDS = 32
#: seed-bootstrap refits behind the calibrated law's standard error
BOOTSTRAP_REFITS = 100


def chain_of(spec: ArchSpec) -> ArchSpec:
    """The conv chain that is the MLP ``spec`` (kernel 1, one position)."""
    return spec.family_object.chain_spec(spec)


def _input_var(protocol: ProbeProtocol) -> Constant:
    return Constant("input_var", protocol.input_var, "convention", note="probe input variance")


def _held_in(depths, calibration_depths) -> list:
    both = sorted(set(depths) & set(calibration_depths))
    return [f"depths {both} were used for calibration: not an independent check there"] if both else []


def _relu_kernel_coverage(spec: ArchSpec, entry: str) -> Coverage:
    """Whether a kernel-law entry covers ``spec``: a ReLU MLP whose chain the kernel law takes."""
    from amutheory.symbolic.chain.kernel_law import check_kernel_spec

    if spec.activation != "relu":
        return Coverage(False, f"activation: {entry} entry is for ReLU MLPs (a linear MLP has the exact "
                               f"mlp-finite-width), got {spec.activation!r}")
    check_kernel_spec(chain_of(spec))
    return Coverage(True, "ReLU MLP with a batch within the kernel law's size")


def _kernel_coverage(spec: ArchSpec, entry: str, smooth: str = "its Gaussian moments by quadrature") -> Coverage:
    """:func:`_relu_kernel_coverage`, and GELU or tanh MLPs at any ``c`` (``smooth``: how the law takes
    their Gaussian moments)."""
    from amutheory.symbolic.chain.kernel_law import DRAWN_ACTIVATIONS, check_drawn_spec

    if spec.activation in DRAWN_ACTIVATIONS:
        check_drawn_spec(chain_of(spec))
        return Coverage(True, f"{spec.activation} MLP at any c, {smooth}")
    if spec.activation != "relu":
        return Coverage(False, f"activation: {entry} is for ReLU, GELU and tanh MLPs (a linear MLP has the exact "
                               f"mlp-finite-width), got {spec.activation!r}")
    return _relu_kernel_coverage(spec, entry)


class _MlpLaw(Law):
    family = "mlp"

    def _monte_carlo_values(self, spec, depths, s_bar, se, draws: str, protocol, note: str) -> LawValues:
        """The values of a Monte Carlo law, its worst relative standard error as a constant."""
        s_bar, se = np.asarray(s_bar, float), np.asarray(se, float)
        constants = {"s_bar_mc_rel_se": Constant("s_bar_mc_rel_se", float(np.max(se / s_bar)), "monte-carlo",
                                                 note=f"worst relative standard error over the depths asked, {draws}"),
                     "input_var": _input_var(protocol)}
        return self.values(spec, depths, s_bar, se, constants, None, [note])

    def values(self, spec, depths, s_bar, s_bar_se, constants, s_l=None, notes=()) -> LawValues:
        return LawValues(self.name, list(depths), np.asarray(s_bar, float), np.asarray(s_bar_se, float),
                         constants, self.exactness, s_l, list(notes))


class MlpFiniteWidth(_MlpLaw):
    name, exactness = "mlp-finite-width", "exact"
    summary = ("linear MLP at c = 1, exact at its width n: Wishart moments of the Gaussian layers, summed as a "
               "rational generating function (the n -> oo limit is mlp-spectral)")
    leaves_out = "nothing in the mean over seeds (the typical value's seed-spread line is calibrated)"
    source = "amutheory.symbolic.chain.finite_width"

    def _covers(self, spec):
        from amutheory.symbolic.chain.finite_width import check_finite_width_spec

        check_finite_width_spec(spec)
        return Coverage(True, "linear MLP, critical c = 1, any width")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "a recurrence of order six up to the deepest depth")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, **options):
        from amutheory.symbolic.chain.finite_width import (finite_width_layer_moments, finite_width_s_bar,
                                                          finite_width_slope)
        from amutheory.symbolic.chain.spectral import spectral_constants, spectral_s_bar

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths, v = [int(d) for d in depths], protocol.input_var
        s_l = {d: finite_width_layer_moments(spec, np.arange(1, d + 1), v) for d in depths}
        s_bar = finite_width_s_bar(spec, depths, v)
        constants = dict(spectral_constants(chain_of(spec), v))
        excess = s_bar / spectral_s_bar(chain_of(spec), depths, v)
        constants["width_excess"] = Constant(
            "width_excess", float(excess[-1]), "exact",
            note=f"E[s_bar] at width {spec.width} over its infinite-width value at L = {depths[-1]}")
        constants["input_var"] = _input_var(protocol)
        note = (f"finite-width law of the linear MLP at width {spec.width} (exact in the mean over seeds): nothing "
                f"fitted; infinite-width law x {', '.join(f'{x:.3f}' for x in excess)} at L = {depths}")
        values = self.values(spec, depths, s_bar, np.zeros_like(s_bar), constants, s_l,
                             [note, "local slope: five-point difference of the exact L s_bar(L) over L - 2 .. L + 2"])
        values.local_slope = finite_width_slope(spec, depths, v)
        return values


#: the activations whose batch-1 MLPs take ``mlp-one-sample`` as ``predict``'s default, by run Z3 of
#: validate/plans/FINITE_WIDTH.md (addendum 39; docs/findings/finite_width.md); a linear MLP keeps
#: mlp-finite-width, the same values, first in the registry
ONE_SAMPLE_DEFAULT: tuple = ("relu",)


class MlpOneSample(_MlpLaw):
    name, exactness = "mlp-one-sample", "exact"
    summary = ("ReLU or linear MLP with a batch of one sample, exact at its width n: the update's recursion "
               "M' = A M A^T + |x|^2 I carried through eight quadratic invariants, each layer's weights split on its "
               "input (the forward-backward coupling exact), the active count K ~ Bin(n, 1/2) averaged; nothing fitted")
    leaves_out = ("nothing in the mean over seeds at batch 1 (the typical value's seed-spread line is calibrated); "
                  "it does not cover batches of more than one sample, whose cross-sample pairs it does not carry")
    source = "amutheory.symbolic.chain.one_sample"

    def _covers(self, spec):
        from amutheory.symbolic.chain.one_sample import check_one_sample_spec

        check_one_sample_spec(spec)
        return Coverage(True, f"{spec.activation} MLP with one sample, any width and c")

    def not_default_for(self, spec):
        if spec.activation == "relu" and spec.activation not in ONE_SAMPLE_DEFAULT:
            return ("its planned check (run Z3, addendum 39 of validate/plans/FINITE_WIDTH.md) has not made it the "
                    "default for ReLU MLPs at batch 1; ask for it with law='mlp-one-sample'")
        return None

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "an 8 x 8 linear recursion per depth")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, **options):
        from amutheory.symbolic.chain.one_sample import one_sample_layer_moments

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths, v = [int(d) for d in depths], protocol.input_var
        s_l = {d: one_sample_layer_moments(spec.with_(depth=d), v) for d in depths}
        s_bar = np.array([s_l[d].mean() for d in depths])
        note = (f"one-sample law of the {spec.activation} MLP at width {spec.width} (exact in the mean over seeds): "
                "nothing fitted")
        return self.values(spec, depths, s_bar, np.zeros_like(s_bar), {"input_var": _input_var(protocol)}, s_l,
                           [note])


class MlpSpectral(_MlpLaw):
    name, exactness = "mlp-spectral", "exact"
    summary = ("linear MLP at c = 1 at infinite width: the chain's spectral law at its one (zero) mode, a cubic in "
               "l, summed exactly")
    leaves_out = "finite-width terms of relative order l/n (mlp-finite-width has them)"
    source = "amutheory.symbolic.chain.spectral"

    def _covers(self, spec):
        from amutheory.symbolic.chain.spectral import check_spectral_spec

        check_spectral_spec(chain_of(spec))
        return Coverage(True, "linear MLP, critical c = 1")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "the zero mode's closed form per depth")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, **options):
        from amutheory.symbolic.chain.spectral import spectral_constants, spectral_layer_moments, spectral_s_bar

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        chain, depths, v = chain_of(spec), [int(d) for d in depths], protocol.input_var
        s_l = {d: spectral_layer_moments(chain.with_(depth=d), np.arange(1, d + 1), v) for d in depths}
        constants = dict(spectral_constants(chain, v))
        constants["input_var"] = _input_var(protocol)
        s_bar = spectral_s_bar(chain, depths, v)
        note = "spectral law of the chain with kernel 1 on one position (exact at infinite width): nothing fitted"
        return self.values(spec, depths, s_bar, np.zeros_like(s_bar), constants, s_l, [note])


class MlpKernel(_MlpLaw):
    name, exactness = "mlp-kernel", "monte-carlo"
    summary = ("ReLU, GELU or tanh MLP at infinite width: the chain's kernel law over the batch's B points (GELU, "
               "tanh: its Gaussian moments by quadrature), inputs averaged by Monte Carlo")
    leaves_out = "finite-width terms that grow with L/n and are large for ReLU"
    source = "amutheory.symbolic.chain.kernel_law"
    default_candidate = False
    not_default_because = ("infinite width: its left-out finite-width terms grow with L/n and are large for ReLU nets "
                           "at the widths people train; the default is mlp-kernel-finite (its forward kernels drawn at "
                           "the net's width); ask for this one with law='mlp-kernel'")

    def _covers(self, spec):
        return _kernel_coverage(spec, "the kernel law")

    def cost(self, spec, depths, **_):
        from amutheory.symbolic.chain.kernel_law import DRAWN_ACTIVATIONS

        if spec.activation in DRAWN_ACTIVATIONS:
            return Cost(costs.pair_kernel_seconds(chain_of(spec), max(depths)), "monte-carlo",
                        "B^2 pairs x a 2-D quadrature grid per layer and input draw, up to the deepest depth + 1")
        return Cost(costs.kernel_seconds(chain_of(spec), max(depths)), "monte-carlo",
                    "B^2 per layer and input draw, up to the deepest depth + 1")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, **options):
        from amutheory.symbolic.chain.kernel_law import kernel_s_bar

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        got = kernel_s_bar(chain_of(spec), depths, protocol.input_var, progress=progress)
        note = (f"kernel law of the chain with kernel 1 on one position (input average by Monte Carlo, "
                f"{got['draws']} draws; masks averaged independently of the weights): nothing fitted")
        return self._monte_carlo_values(spec, depths, got["s_bar"], got["se"], f"{got['draws']} input draws",
                                        protocol, note)


#: the smooth activations whose MLPs take ``mlp-kernel-finite`` as ``predict``'s default, by run J of
#: validate/plans/FINITE_WIDTH.md (its planned rule, run D's: no worse than the calibrated mlp-coherent at
#: held-out depths, in error and in z, at widths 32 and 64; docs/findings/finite_width.md)
DRAWN_DEFAULT = ("gelu", "tanh")


class MlpKernelFinite(_MlpLaw):
    name, exactness = "mlp-kernel-finite", "monte-carlo"
    summary = ("ReLU, GELU or tanh MLP at its width n: the kernel law with its forward kernels drawn at width n (an "
               "exact Markov chain of n i.i.d. rows per layer; for GELU and tanh every Gaussian moment of the law "
               "is the drawn rows' mean), Monte Carlo over inputs and forward chains; nothing fitted")
    leaves_out = "the finite-width terms of the backward side (products of Jacobians above each update, the readout)"
    source = "amutheory.symbolic.chain.kernel_law_finite"

    def _covers(self, spec):
        return _kernel_coverage(spec, "the finite-width kernel law", "every Gaussian moment drawn at width n")

    def not_default_for(self, spec):
        from amutheory.symbolic.chain.kernel_law import DRAWN_ACTIVATIONS

        if spec.activation in DRAWN_ACTIVATIONS and spec.activation not in DRAWN_DEFAULT:
            return (f"no planned check has made it the default for {spec.activation} MLPs (run J of "
                    f"validate/plans/FINITE_WIDTH.md decided for {', '.join(DRAWN_DEFAULT)}); ask for it with "
                    "law='mlp-kernel-finite'")
        return None

    def cost(self, spec, depths, budget_s=None, draws=None, **_):
        from amutheory.laws.chain_finite import kernel_finite_cost

        return kernel_finite_cost(chain_of(spec), depths, budget_s, draws)

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, draws=None,
                 **options):
        from amutheory.laws.chain_finite import check_draws, drawn_law_at
        from amutheory.symbolic.chain.kernel_law_finite import DRAWS, draws_progress

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        draws = check_draws(draws) or DRAWS
        s_bar, se, mc = drawn_law_at(chain_of(spec), depths, protocol.input_var, draws_progress(progress),
                                     draws=draws)
        note = (f"kernel law with forward kernels drawn at width {spec.width} ({draws} draws of inputs and "
                f"forward chains): nothing fitted; the backward side at infinite width given the forward pass")
        return self.values(spec, depths, s_bar, se, {"s_bar_mc_rel_se": mc, "input_var": _input_var(protocol)},
                           None, [note])


class MlpKernelFiniteBackward(_MlpLaw):
    name, exactness = "mlp-kernel-finite-backward", "approximate"
    summary = ("ReLU MLP (or GELU, tanh at the critical c) at its width n: mlp-kernel-finite times the backward factor "
               "b(L; n, n_b), the linear MLP's exact backward share of its finite-width excess at the width n_b whose "
               "backward steps fluctuate as the net's (relative variance 5/n for ReLU against 2/n: n_b = 2n/5); "
               "nothing fitted")
    leaves_out = ("an assumption, tested (run G of the finite-width plan) but not derived: that the ReLU net's "
                  "backward finite-width excess is the linear one's at the equal-variance width 2n/5 (mask "
                  "correlations across samples and the ReLU forward-backward coupling are not carried); for GELU and tanh the "
                  "same, at the width 2n / (3 E[phi'^4] / E[phi'^2]^2 - 1) (run M)")
    source = "amutheory.symbolic.chain.backward_width"
    default_candidate = False
    not_default_because = ("its planned check (run G, validate/plans/FINITE_WIDTH.md; docs/findings/finite_width.md) "
                           "met two of its three conditions (every |z| <= 3, a smaller sum of z^2 than "
                           "mlp-kernel-finite) but not the third (a pooled z within +-2: it overshoots where "
                           "mlp-kernel-finite undershoots), so the default stays mlp-kernel-finite; on GELU and tanh "
                           "MLPs run M kept it on request too (GELU: one cell beyond 3 z; tanh: it overshoots where "
                           "mlp-kernel-finite holds); ask for it with law='mlp-kernel-finite-backward'")

    def _covers(self, spec):
        got = _kernel_coverage(spec, "the finite-width kernel law with its backward factor",
                               "every Gaussian moment drawn at width n")
        if not got or spec.activation == "relu":
            return got
        from amutheory.laws.backward import critical_only

        refusal = critical_only(spec)
        return refusal if refusal is not None else Coverage(True, f"{spec.activation} MLP at its critical c, every "
                                                                  "Gaussian moment drawn at width n")

    def cost(self, spec, depths, budget_s=None, draws=None, **_):
        return MlpKernelFinite().cost(spec, depths, budget_s, draws)

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, draws=None,
                 **options):
        from amutheory.laws.backward import backward_constants
        from amutheory.symbolic.chain.backward_width import backward_factor, equal_variance_width

        inner = MlpKernelFinite().evaluate(spec, depths, protocol, progress=progress, draws=draws)
        n_b = equal_variance_width(spec.width, spec.activation)
        factor = backward_factor(spec.with_(activation="linear", init_c=None), [int(d) for d in depths], n_b,
                                 protocol.input_var)
        constants = dict(inner.constants)
        constants.update(backward_constants(n_b, spec.activation))
        note = (f"the finite-width kernel law times the linear MLP's backward factor at width {n_b:g} "
                f"({', '.join(f'{f:.3f}' for f in factor)} at the depths asked): nothing fitted; an assumption, "
                "not derived (leaves_out)")
        return self.values(spec, depths, np.asarray(inner.s_bar) * factor, np.asarray(inner.s_bar_se) * factor,
                           constants, None, list(inner.notes) + [note])


@functools.lru_cache(maxsize=None)
def _s_bar_fn():
    """The coherent law's ``s_bar(L)`` (lambdified once per process)."""
    from amutheory.symbolic.chain.conv import conv_law

    return conv_law(None).predictor("s_bar")


class MlpCoherent(_MlpLaw):
    name, exactness = "mlp-coherent", "calibrated"
    summary = ("the chain's closed-form coherent law s_l = a l^2 + b(...) l^3 + e with a, b, e and the seed spread "
               "calibrated on probe measurements of the MLP at other depths")
    leaves_out = "nothing at the calibration depths; its extrapolation error grows with the distance to them"
    source = "amutheory.symbolic.chain.conv"

    def _covers(self, spec):
        return Coverage(True, "any MLP (constants calibrated)")

    def cost(self, spec, depths, calibration_depths=CALIBRATION_DEPTHS, calibration_seeds=CALIBRATION_SEEDS, **_):
        return Cost(costs.probe_seconds(spec, calibration_depths, calibration_seeds), "probe",
                    f"{calibration_seeds} seeds at depths {list(calibration_depths)}")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None,
                 calibration_depths=CALIBRATION_DEPTHS, calibration_seeds=CALIBRATION_SEEDS, **options):
        """``calibration``: probe measurements (anything with ``profiles = {depth: s[seed, l]}`` and the
        ``spec`` measured, an :class:`~amutheory.api.Measurement`) of this MLP or of its chain; measured
        here with the probe at ``calibration_depths`` on seeds ``0 .. calibration_seeds - 1`` when ``None``."""
        from amutheory.calibrate import _bootstrap_refits, calibrate, layer_prediction
        from amutheory.symbolic.chain.conv import derived_constants

        depths = [int(d) for d in depths]
        profiles = self._profiles(spec, protocol, calibration, calibration_depths, calibration_seeds, progress)
        chain = chain_of(spec)
        derived = derived_constants(chain, protocol.input_var)
        eps = derived["epsilon"].value
        calib = calibrate(profiles, eps, spec.width, "mean")
        constants = dict(calib.constants)
        for k in ("c", "chi", "v_mlp", "kappa_fwd"):
            constants.setdefault(k, derived[k])
        constants["input_var"] = _input_var(protocol)

        def law(consts: dict, at) -> np.ndarray:
            return np.asarray(_s_bar_fn()(np.asarray(at, float), **{k: consts[k] for k in ("a", "b", "e", "epsilon")}),
                              float) * np.ones(len(at))

        s_bar = law(calib.values(), depths)
        refits = _bootstrap_refits(profiles, lambda r: law(calibrate(r, eps, spec.width, "mean", n_boot=0).values(),
                                                          depths), BOOTSTRAP_REFITS, 0)
        s_bar_se = np.std(np.asarray(refits), axis=0, ddof=1) if len(refits) >= 2 else np.zeros_like(s_bar)
        v = calib.values()
        s_l = {d: layer_prediction(np.arange(1, d + 1), v["a"], v["b"], v["e"], eps, 0.0, spec.width) for d in depths}
        notes = list(calib.notes) + [f"s_bar_se: sd of the law over {len(refits)} seed-bootstrap refits of the "
                                     f"calibration"] + _held_in(depths, calib.depths)
        return self.values(spec, depths, s_bar, s_bar_se, constants, s_l, notes)

    @staticmethod
    def _profiles(spec, protocol, calibration, calibration_depths, calibration_seeds, progress) -> dict:
        if calibration is not None:
            measured = getattr(calibration, "spec", None)
            if not isinstance(measured, ArchSpec) or measured.family_object.chain_spec(measured) is None or \
                    chain_of(spec).with_(depth=1) != measured.family_object.chain_spec(measured).with_(depth=1):
                raise ValueError("calibration must be probe measurements of this MLP (or of its chain with kernel 1 "
                                 "on one position) at other depths")
            return {int(d): np.asarray(s, float) for d, s in calibration.profiles.items()}
        from amutheory.measure.probe import probe

        profiles = {}
        cal = sorted(int(d) for d in calibration_depths)
        for i, d in enumerate(cal):
            profiles[d] = probe(spec.with_(depth=d), range(int(calibration_seeds)), protocol).s
            if progress is not None:
                progress(i + 1, len(cal), d)
        return profiles


LAWS = (MlpFiniteWidth(), MlpOneSample(), MlpSpectral(), MlpKernelFinite(), MlpKernelFiniteBackward(), MlpKernel(), MlpCoherent())
