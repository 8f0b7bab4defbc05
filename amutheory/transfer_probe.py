"""The ``probe`` rule: the model's own one-step probe, carried to training by a measured bridge.

The fixed rules of :mod:`amutheory.transfer` assume a law for a kind of net; this rule measures the net.

**One-step ratio.**  The canonical probe (:mod:`amutheory.measure.module_probe`, what ``measure --model``
runs) gives ``s_bar`` (the mean over counted layers of the one-step moment) of the reference and of the
target, seed by seed; the maximal-update rate of one step is ``eta*_1 = sqrt(C / s_bar)``, so

    r1 = eta*_1(target) / eta*_1(reference) = sqrt(mean_seeds s_bar(reference) / mean_seeds s_bar(target)),

a ratio of means (a smooth statistic), with a percentile bootstrap CI over the seeds (the seed index
resampled jointly for both nets; :data:`BOOTSTRAP` draws, NumPy seed 0).  A factory (or a built-in spec)
is redrawn per seed; a module given directly keeps its weights and its seeds move the probe's input and
loss direction only.  The one-step ratio carries any width change too (both nets are probed at their own
widths).

**Bridge.**  Training is not one step: how ``eta*_train / eta*_1`` moves with effective depth is measured
on recorded models (``validate/transfer_probe_findings.py`` writes the record, package data
``data/transfer_bridge.json`` keyed by its run's fingerprint): for model ``j``,
``beta_j = [ln(eta*_train(L)/eta*_train(L_0)) - ln r1_j] / ln(L_eff(L)/L_eff(L_0))``.  For a net of kind
``k`` (chain / residual / transformer, read off the model as ``transfer`` reads it) the bridge is the
median ``beta`` over the recorded models of kind ``k`` when there are at least :data:`MIN_KIND` of them,
else over every recorded model (said).  Its error ``e_beta`` is the largest leave-one-out
``|beta_j - median(beta without j)|`` in that set.  With ``rho = L_eff(target) / L_eff(reference)``:

    lr_t = lr * r1 * rho^beta,
    interval = [lo * r1_lo * rho^beta * exp(-e_beta |ln rho|),  hi * r1_hi * rho^beta * exp(+e_beta |ln rho|)]

(``[lo, hi]`` the tuned rate's CI).  The bridge is measured across depth at fixed width; a width change is
carried by the one-step ratio alone (said in a note).

**Cost.**  One seed of each net is probed first and timed; the full probe's cost is that times the seeds.
Where it exceeds the budget the rule is not run (``rule="auto"`` then falls back to the fixed default
rule, and says why).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

#: environment variable naming another bridge file (tests, a user's own recorded models)
BRIDGE_ENV = "AMUTHEORY_TRANSFER_BRIDGE"
#: the file shipped with the package
BRIDGE_FILE = Path(__file__).parent / "data" / "transfer_bridge.json"
#: seeds of the probe by default, and bootstrap draws of its CI
SEEDS = 8
BOOTSTRAP = 2000
LEVEL = 0.95
#: the default seconds the probe may take (estimated from one seed) before ``auto`` falls back
BUDGET_S = 60.0
#: recorded models of one kind needed before the bridge is that kind's own
MIN_KIND = 3
#: the largest bridge exponent (and error) a file may record
MAX_BETA = 20.0
#: the most probe seeds, and the longest budget (a day), a call may ask for
MAX_SEEDS = 1024
MAX_BUDGET_S = 86400.0


@dataclass
class ProbeRatio:
    """The one-step ratio ``r1`` with its CI, what it read, and what it cost."""

    ratio: float
    ci: list
    s_bar_reference: list
    s_bar_target: list
    seeds: list
    seconds: float
    estimate_s: float
    layers_reference: int
    layers_target: int
    redrawn: bool

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ProbeSkipped:
    """The probe was not run (too costly, or the model cannot be probed): why, and the estimate."""

    reason: str
    estimate_s: float | None = None

    def to_dict(self) -> dict:
        return {"skipped": True, "reason": self.reason, "estimate_s": self.estimate_s}


# --------------------------------------------------------------------------- builds
def build_of(net, input_shape=None):
    """``(build, redrawn)``: a no-argument callable returning the net the probe reads for one seed, and
    whether the seed redraws its weights (a spec: the built-in net from torch's global generator; a
    module: a copy, its weights kept)."""
    import copy

    from torch import nn

    from amutheory.spec import ArchSpec

    if isinstance(net, ArchSpec):
        from amutheory.measure.module_probe import builtin_factory

        make = builtin_factory(net)
        return (lambda: make(net.depth, net.width)), True
    if isinstance(net, nn.Module):
        return (lambda: copy.deepcopy(net)), False
    raise TypeError(f"reference/target must be an ArchSpec or a torch.nn.Module, got {type(net).__name__}")


def _shape_of(net, input_shape):
    from amutheory.spec import ArchSpec

    if isinstance(net, ArchSpec):
        return tuple(net.family_object.input_shape(net))
    if input_shape is None:
        raise ValueError("input_shape is required to probe an nn.Module")
    return tuple(input_shape)


def check_seeds(seeds) -> list[int]:
    if isinstance(seeds, bool):
        raise TypeError(f"probe_seeds must be an integer >= 2 or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if not 2 <= seeds <= MAX_SEEDS:
            raise ValueError(f"probe_seeds must be at least two distinct seeds and at most {MAX_SEEDS}, got {seeds!r}")
        seeds = range(seeds)
    try:
        out = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise TypeError(f"probe_seeds must be an integer >= 2 or a list of seeds, got {seeds!r}") from None
    if len(out) < 2 or len(set(out)) != len(out) or min(out) < 0 or len(out) > MAX_SEEDS or max(out) >= 2**63:
        raise ValueError(f"probe_seeds must be at least two distinct seeds >= 0 (at most {MAX_SEEDS}, each below "
                         f"2^63), got {seeds!r}")
    return out


def check_budget(budget) -> float:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not math.isfinite(budget) or budget <= 0 \
            or budget > MAX_BUDGET_S:
        raise ValueError(f"probe_budget must be a positive number of seconds, at most {MAX_BUDGET_S:g} (a day), "
                         f"got {budget!r}")
    return float(budget)


# --------------------------------------------------------------------------- the one-step ratio
def probe_ratio(reference, target, input_shape=None, target_input_shape=None, seeds=SEEDS,
                budget: float = BUDGET_S, builds=None) -> ProbeRatio | ProbeSkipped:
    """``r1`` of ``target`` over ``reference`` (module docstring).  ``builds = (ref_build, tgt_build)``:
    no-argument callables that draw each net from torch's global generator (a factory at its depth),
    default :func:`build_of`.  Not run (:class:`ProbeSkipped`) when one seed of each, timed, says the
    seeds would take more than ``budget`` seconds, or when the probe cannot differentiate the model."""
    from amutheory.measure.module_probe import probe_module

    seeds, budget = check_seeds(seeds), check_budget(budget)
    ref_shape = _shape_of(reference, input_shape)
    tgt_shape = _shape_of(target, target_input_shape if target_input_shape is not None else input_shape)
    if builds is None:
        (ref_build, redrawn), (tgt_build, _) = build_of(reference), build_of(target)
    else:
        (ref_build, tgt_build), redrawn = builds, True
    t0 = time.perf_counter()
    try:
        first = [probe_module(b, seeds[:1], s) for b, s in ((ref_build, ref_shape), (tgt_build, tgt_shape))]
    except (ValueError, TypeError) as exc:
        return ProbeSkipped(f"the probe cannot run on this model: {exc}")
    one = time.perf_counter() - t0
    estimate = one * len(seeds)
    if estimate > budget:
        return ProbeSkipped(f"one seed of both nets took {one:.2g} s: {len(seeds)} seeds would take about "
                            f"{estimate:.2g} s, over the budget of {budget:g} s (probe_budget)", estimate)
    rest = [probe_module(b, seeds[1:], s) for b, s in ((ref_build, ref_shape), (tgt_build, tgt_shape))]
    s_ref = np.concatenate([first[0].s_bar, rest[0].s_bar])
    s_tgt = np.concatenate([first[1].s_bar, rest[1].s_bar])
    if not (np.all(np.isfinite(s_ref)) and np.all(np.isfinite(s_tgt)) and np.all(s_ref > 0) and np.all(s_tgt > 0)):
        dead = int(np.sum(~(s_ref > 0))) + int(np.sum(~(s_tgt > 0)))
        return ProbeSkipped(f"the probe's one-step moments are not finite and positive on every seed ({dead} of "
                            f"{2 * len(seeds)} draws move no counted layer: a dead or degenerate net); no finite CI")
    ratio, ci = ratio_with_ci(s_ref, s_tgt)
    return ProbeRatio(ratio, ci, s_ref.tolist(), s_tgt.tolist(), seeds, time.perf_counter() - t0, estimate,
                      len(first[0].layers), len(first[1].layers), redrawn)


def ratio_with_ci(s_ref, s_tgt, level: float = LEVEL, draws: int = BOOTSTRAP) -> tuple[float, list]:
    """``sqrt(mean s_ref / mean s_tgt)`` and its percentile bootstrap CI over the seed index."""
    from amutheory.bootstrap import percentile_interval, resample, seed_draws

    s_ref, s_tgt = np.asarray(s_ref, float), np.asarray(s_tgt, float)
    ratio = float(np.sqrt(s_ref.mean() / s_tgt.mean()))
    ref, tgt = resample(seed_draws(len(s_ref), draws, rng=0), s_ref, s_tgt)
    lo, hi = percentile_interval(np.sqrt(ref.mean(1) / tgt.mean(1)), level)
    return ratio, [float(lo), float(hi)]


# --------------------------------------------------------------------------- the bridge
def bridge_path(path=None) -> Path:
    """The bridge file: ``path``, else ``$AMUTHEORY_TRANSFER_BRIDGE``, else the package's."""
    from amutheory.transfer_interval import record_path

    return record_path(path, BRIDGE_ENV, BRIDGE_FILE)


def load_bridge(path=None) -> dict:
    """``{fingerprint: record}`` of the bridge file (``{}`` when there is none), every entry checked."""
    from amutheory.transfer_interval import read_record

    p = bridge_path(path)
    data = read_record(p, "bridge file")
    if data is None:
        return {}
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict):
        raise ValueError(f"bridge file {p}: no 'runs' table (write it with validate/transfer_probe_findings.py)")
    for fp, rec in runs.items():
        models = rec.get("models") if isinstance(rec, dict) else None
        if not isinstance(models, dict) or not models:
            raise ValueError(f"bridge file {p}: runs.{fp}.models is not a table of recorded models")
        for name, m in models.items():
            where = f"runs.{fp}.models.{name}"
            if not isinstance(m, dict) or not isinstance(m.get("kind"), str):
                raise ValueError(f"bridge file {p}: {where} has no kind")
            betas = m.get("betas")
            if not isinstance(betas, dict) or not betas or not all(
                    isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)
                    and abs(b) <= MAX_BETA for b in betas.values()):
                raise ValueError(f"bridge file {p}: {where}.betas must be a table of finite exponents within "
                                 f"+-{MAX_BETA:g}")
    return runs


@dataclass
class Bridge:
    """The bridge exponent for a kind of net, its leave-one-out error, and what it rests on."""

    beta: float
    error: float
    kind: str
    models: list
    pooled: bool
    fingerprint: str
    reason: str
    betas: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def bridge_from(models: dict, kind: str, exclude=()) -> tuple[float, float, list, bool] | None:
    """``(beta, e_beta, models used, pooled)`` of ``models`` (``{name: {"kind", "betas"}}``) for ``kind``
    (module docstring), leaving out the names in ``exclude``; None with fewer than two models."""
    pool = {n: m for n, m in models.items() if n not in set(exclude)}
    own = {n: m for n, m in pool.items() if m["kind"] == kind}
    pooled = len(own) < MIN_KIND
    used = pool if pooled else own
    if len(used) < 2:
        return None
    betas = {n: [float(b) for b in m["betas"].values()] for n, m in used.items()}
    beta = statistics.median(b for bs in betas.values() for b in bs)
    errors = []
    for n, bs in betas.items():
        rest = statistics.median(b for other, obs in betas.items() if other != n for b in obs)
        errors += [abs(b - rest) for b in bs]
    return float(beta), float(max(errors)), sorted(used), pooled


def bridge(kind: str, path=None, exclude=()) -> Bridge | None:
    """The :class:`Bridge` for ``kind`` from the recorded run with the most models (None: none recorded)."""
    return bridge_of_runs(load_bridge(path), kind, exclude)


def bridge_of_runs(runs: dict, kind: str, exclude=()) -> Bridge | None:
    """The :class:`Bridge` for ``kind`` from the run of ``runs`` (``{fingerprint: record}``) with the most
    models (None: no run, or fewer than two models)."""
    if not runs:
        return None
    fp, rec = max(runs.items(), key=lambda kv: (len(kv[1]["models"]), kv[0]))
    got = bridge_from(rec["models"], kind, exclude)
    if got is None:
        return None
    beta, err, used, pooled = got
    own = sum(1 for n in used if rec["models"][n]["kind"] == kind)
    reason = (f"all {len(used)} recorded models pooled ({own} of kind {kind}, fewer than {MIN_KIND})" if pooled
              else f"the {len(used)} recorded models of kind {kind}")
    return Bridge(beta, err, kind, used, pooled, fp, reason,
                  {n: rec["models"][n]["betas"] for n in used})


# --------------------------------------------------------------------------- the rule
def probe_factor(r1: ProbeRatio, b: Bridge, rho: float) -> dict:
    """The probe rule's factor ``r1 rho^beta`` and its interval factors (without the tuned rate's CI)."""
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"the effective-depth ratio must be positive, got {rho!r}")
    carry = rho**b.beta
    spread = math.exp(b.error * abs(math.log(rho)))
    return {"factor": r1.ratio * carry, "low": r1.ci[0] * carry / spread, "high": r1.ci[1] * carry * spread,
            "one_step_ratio": r1.ratio, "one_step_ci": list(r1.ci), "rho": rho, "bridge_factor": carry,
            "bridge_spread": spread}
