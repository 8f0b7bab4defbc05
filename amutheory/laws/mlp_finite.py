"""``mlp-kernel-finite-empirical``: the finite-width kernel law of a ReLU MLP
(:mod:`amutheory.symbolic.chain.finite_width_kernel`), a law of the contract
(:mod:`amutheory.laws.contract`) in the pattern of :class:`amutheory.laws.mlp.MlpKernel`.

Not registered here.  The registry already holds ``mlp-kernel-finite``
(:class:`amutheory.laws.mlp.MlpKernelFinite`, :mod:`amutheory.symbolic.chain.kernel_law_finite`):
the same Monte Carlo of the forward Gram chain at width ``n``, with the cut's channel means taken
from the infinite-width formulas at the drawn correlations; this law takes every channel mean from
the drawn forward pass (``cut="empirical"``), hence its own name.
"""

from __future__ import annotations

import numpy as np

from amutheory.constants import Constant
from amutheory.laws.contract import Coverage, Cost, Law, LawValues
from amutheory.spec import ArchSpec, ProbeProtocol


class MlpKernelFiniteEmpirical(Law):
    name, family, exactness = "mlp-kernel-finite-empirical", "mlp", "monte-carlo"
    summary = ("ReLU MLP at its width n: the kernel law with its forward kernels and every channel mean (value, "
               "mask, the cut's 3-point mask and the across-pairing diagonal) taken from forward chains drawn at "
               "width n (an exact Markov chain of n i.i.d. rows per layer); Monte Carlo, nothing fitted")
    leaves_out = ("the finite-width terms of the backward side: the fluctuations of the products of weight matrices "
                  "above each update and of the readout seen through them (for ReLU not derived; relative order "
                  "L/n, the law runs below the probe's mean by about 0.5 L/n at B = 8)")
    source = "amutheory.symbolic.chain.finite_width_kernel"

    def _covers(self, spec: ArchSpec) -> Coverage:
        from amutheory.symbolic.chain.finite_width_kernel import check_spec

        if spec.activation != "relu":
            return Coverage(False, f"activation: the {self.name} entry is for ReLU MLPs (a linear MLP has the exact "
                                   f"mlp-finite-width), got {spec.activation!r}")
        check_spec(spec)
        return Coverage(True, "ReLU MLP (B x B kernels drawn at the net's width)")

    def cost(self, spec: ArchSpec, depths, **_) -> Cost:
        from amutheory.symbolic.chain.finite_width_kernel import DRAWS, cost_seconds

        return Cost(cost_seconds(spec, max(int(d) for d in depths)), "monte-carlo",
                    f"{DRAWS} draws of inputs and width-{spec.width} forward chains, n B^2 per layer each")

    def evaluate(self, spec: ArchSpec, depths, protocol: ProbeProtocol = ProbeProtocol(), calibration=None,
                 progress=None, **options) -> LawValues:
        from amutheory.symbolic.chain.finite_width_kernel import finite_width_kernel_s_bar

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        report = None if progress is None else (
            lambda i, total, done: i == total and progress(f"{self.name}: {done} draws of inputs and forward chains"))
        got = finite_width_kernel_s_bar(spec, depths, protocol.input_var, progress=report)
        at = {d: i for i, d in enumerate(got["depths"])}
        s_bar = np.array([got["s_bar"][at[d]] for d in depths])
        se = np.array([got["se"][at[d]] for d in depths])
        constants = {
            "s_bar_mc_rel_se": Constant("s_bar_mc_rel_se", float(np.max(se / s_bar)), "monte-carlo",
                                        note=f"worst relative standard error over the depths asked, {got['draws']} "
                                             f"draws (seed {got['seed']})"),
            "input_var": Constant("input_var", protocol.input_var, "convention", note="probe input variance"),
        }
        note = (f"kernel law with its forward kernels and channel means drawn at width {spec.width} ({got['draws']} "
                f"draws of inputs and forward chains): nothing fitted; the backward side at infinite width given "
                f"the forward pass")
        return LawValues(self.name, depths, s_bar, se, constants, self.exactness, None, [note])


LAWS = (MlpKernelFiniteEmpirical(),)
