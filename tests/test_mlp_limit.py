"""Measured against derived, with no calibration: the MLP limit of the pair kernel.

With k = 1, one position and one sample a conv chain is an MLP, and the derivation fixes the
whole profile shape: ``s_l / s_2 = (l-1)^2 + v T_{l-1}`` (epsilon -> 0) with ``v = 1`` (linear)
and ``v = 2`` (ReLU) from exact Gaussian integrals.  The derived ratio must lie inside the 99%
seed-bootstrap interval of the measured ratio of seed means (96 seeds, n = 512; the finite-width
corrections are O(L/n) ~ 1 %, well inside the interval, whose half-width is ~10-15 %)."""

import numpy as np
import pytest

from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives import expansion
from amutheory.symbolic.chain.conv import derived_constants
from amutheory.symbolic.primitives.symbols import a, b, epsilon, l


@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_mlp_limit_profile_matches_derived_v(activation):
    spec = ArchSpec(dim=1, depth=6, width=512, kernel=1, spatial=1, batch=1, activation=activation)
    v = derived_constants(spec)["v_mlp"].value
    s = probe(spec, range(96)).s  # [seed, layer]
    core = expansion.layer_moment_core()
    derived = {k: float(core.subs({a: 1, b: v, epsilon: 0, l: k})) for k in (2, 4, 6)}
    rng = np.random.default_rng(0)
    boot = []
    for _ in range(2000):
        idx = rng.integers(0, len(s), len(s))
        m = s[idx].mean(axis=0)
        boot.append([m[3] / m[1], m[5] / m[1]])
    lo, hi = np.percentile(np.asarray(boot), [0.5, 99.5], axis=0)
    for i, layer in enumerate((4, 6)):
        want = derived[layer] / derived[2]
        assert lo[i] <= want <= hi[i], (activation, layer, want, lo[i], hi[i])
    # and the two activations are told apart: the other activation's v (1 <-> 2) is excluded
    v_other = 3.0 - v
    other = float(core.subs({a: 1, b: v_other, epsilon: 0, l: 6}) / core.subs({a: 1, b: v_other, epsilon: 0, l: 2}))
    assert not (lo[1] <= other <= hi[1])
