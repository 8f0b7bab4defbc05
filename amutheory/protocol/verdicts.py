"""The registered decision rules: fits on bootstrap draws, and a verdict per claim and per rule.

Every quantity comes with its seed-bootstrap draws (``B`` rows): a study's eta*_train at each
depth has :data:`amutheory.train.search.BOOTSTRAP` draws from resampling its seeds, and the
draws of two studies with the same seeds resample the same seed indices (the same minibatch
order and init seed), so a difference of two studies' exponents is read draw by draw (a paired
bootstrap).  A CI is the 2.5 and 97.5 percentiles of the finite draws.

Verdicts (``holds`` / ``fails`` / ``conditional`` / ``inconclusive``), as registered:

* exponent ``e`` against the claimed ``e0``: *holds* if ``e0`` is inside the CI and the CI is
  narrower than :data:`MAX_CI_WIDTH`; *inconclusive* if inside but wider; outside: *conditional*
  when ``e0`` is inside the CI at a registered shorter horizon, or the slope of the AM-muP law
  with its finite-depth corrections over the same depths is inside the CI (the condition is
  named), else *fails*;
* equal exponents (``same-exponent``): the difference's CI holds 0 (and is narrower than
  :data:`MAX_CI_WIDTH`); with ``prefactor_changes`` the prefactor ratio's CI must also exclude 1,
  else *conditional* ("exponent unchanged, no prefactor change resolved"); a difference whose CI
  excludes 0 *fails*;
* ``steeper`` (GELU): *holds* if the activation at its own critical init is steeper than the
  reference (difference CI below 0); *conditional* if only at He ``c = 2``; else *fails* (or
  *inconclusive* when the CIs are too wide to tell);
* **the margin rule** (registrations from 2026-11-27b on, ``margin = delta``): a two-sided claim
  "the quantity is ``e0``" *holds* when the whole CI lies inside ``[e0 - delta, e0 + delta]``, *fails*
  when it lies wholly outside, and is *inconclusive* otherwise -- no width cut, and imprecision is never
  rewarded.  ``conditional`` keeps its meaning: the claim fails at the registered horizon but holds
  (by the same rule) at a registered shorter one, or holds for the law with its finite-depth
  corrections.  A prefactor change must still resolve (ratio CI excluding 1); ``steeper`` is
  one-sided (holds when the difference's CI lies below 0, fails when it lies at or above 0); a
  transfer rule *transfers* at a depth when the whole CI of its ratio lies inside the tolerance band;
* a transfer rule at a held-out depth *transfers* if its rate is within a factor ``tolerance``
  of eta*_train, *misses* if the whole CI of the ratio lies outside that band, else is
  *uncertain*; the rule *holds* if it transfers at every held-out depth, *fails* if it misses at
  one, *conditional* if it transfers at the shallower held-out depths only (up to a named depth),
  else *inconclusive*.
"""

from __future__ import annotations

import math

import numpy as np

#: a CI wider than this (in exponent units) says nothing about a -3/2 claim
MAX_CI_WIDTH = 1.0
LEVEL = 0.95
VERDICTS = ("holds", "fails", "conditional", "inconclusive", "untestable")


def learning_verdict(claim: dict, learns: dict) -> dict | None:
    """``untestable`` when a net the claim's fits use does not learn at its optimum (``learns``:
    ``{study: {point: True / False / None}}``; ``None``: no finite loss, every rate diverged), with the
    largest size tried and the loss it reached; ``None`` when every point learns.  Only protocols
    registered with ``requires_learning`` apply it (the earlier registration keeps its own rules)."""
    bad = [(study, p) for study, pts in learns.items() for p, ok in pts.items() if ok is not True]
    if not bad:
        return None
    where = ", ".join(f"{study} at {p}" for study, p in bad)
    return {"verdict": "untestable",
            "reason": f"the nets do not learn at this size (final training loss at the optimum above the threshold, "
                      f"or every rate diverged): {where}; the verdict it would have had: {claim['verdict']} "
                      f"({claim['reason']})",
            "verdict_if_tested": claim["verdict"]}


def ci(draws) -> list | None:
    """The central ``LEVEL`` interval of the finite draws (``None`` with fewer than 10)."""
    d = np.asarray(draws, float)
    d = d[np.isfinite(d)]
    if d.size < 10:
        return None
    q = (1 - LEVEL) / 2 * 100
    return [float(np.percentile(d, q)), float(np.percentile(d, 100 - q))]


def _contains(interval, value: float) -> bool:
    return interval is not None and interval[0] <= value <= interval[1]


def _width(interval) -> float:
    return math.inf if interval is None else interval[1] - interval[0]


#: interval methods: the percentile seed bootstrap (registrations up to 2026-11), or the delete-one-seed
#: jackknife with a t quantile of n - 1 degrees of freedom (draws are then the n leave-one-out replicates)
INTERVALS = ("bootstrap", "jackknife")


def jackknife_ci(estimate: float, replicates) -> list | None:
    """``estimate +- t_{n-1} * se``, ``se^2 = (n - 1) / n * sum (r_i - mean r)^2`` over the ``n``
    leave-one-out replicates (``None`` with fewer than three finite ones):
    :func:`amutheory.bootstrap.jackknife_interval` at :data:`LEVEL`."""
    from amutheory.bootstrap import jackknife_interval

    return jackknife_interval(float(estimate), replicates, LEVEL)


def interval(estimate: float, draws, method: str = "bootstrap") -> list | None:
    """The CI of ``estimate`` from its ``draws`` by ``method`` (:data:`INTERVALS`)."""
    if method == "jackknife":
        return jackknife_ci(estimate, draws)
    return ci(draws)


def loglog_fit(x, eta, draws, method: str = "bootstrap") -> dict | None:
    """``eta ~ prefactor * x^exponent`` by least squares in logs; ``draws`` (``B x n``) give the
    exponent's and the prefactor's draws (bootstrap resamples, or the leave-one-out replicates for
    ``method="jackknife"``).  Points whose eta is not finite are left out."""
    x, eta = np.asarray(x, float), np.asarray(eta, float)
    ok = np.isfinite(eta) & (eta > 0)
    if ok.sum() < 2:
        return None
    lx = np.log(x[ok])
    slope, intercept = np.polyfit(lx, np.log(eta[ok]), 1)
    d = np.log(np.asarray(draws, float)[:, ok])
    good = np.isfinite(d).all(1)
    slopes = np.full(len(d), np.nan)
    intercepts = np.full(len(d), np.nan)
    if good.sum() >= (3 if method == "jackknife" else 10):
        slopes[good], intercepts[good] = np.polyfit(lx, d[good].T, 1)
    if method == "jackknife":
        pre = jackknife_ci(float(intercept), intercepts)
        return {"exponent": float(slope), "exponent_ci": jackknife_ci(float(slope), slopes),
                "prefactor": float(math.exp(intercept)), "prefactor_ci": None if pre is None else
                [math.exp(pre[0]), math.exp(pre[1])], "points": int(ok.sum()), "x": x[ok].tolist(),
                "slope_draws": slopes, "interval": method}
    return {"exponent": float(slope), "exponent_ci": ci(slopes), "prefactor": float(math.exp(intercept)),
            "prefactor_ci": ci(np.exp(intercepts)), "points": int(ok.sum()), "x": x[ok].tolist(),
            "slope_draws": slopes, "interval": method}


def margin_status(interval, expected: float, margin: float) -> str:
    """``holds`` (the CI inside ``expected +- margin``), ``fails`` (wholly outside) or ``inconclusive``."""
    if interval is None:
        return "inconclusive"
    lo, hi = expected - margin, expected + margin
    if lo <= interval[0] and interval[1] <= hi:
        return "holds"
    if interval[1] < lo or interval[0] > hi:
        return "fails"
    return "inconclusive"


def _margin_exponent(fit, expected: float, at_horizons: dict, corrected_slope, margin: float) -> dict:
    c = fit["exponent_ci"]
    band = f"{expected:g} +- {margin:g}"
    text = f"CI [{c[0]:.2f}, {c[1]:.2f}]"
    status = margin_status(c, expected, margin)
    if status == "holds":
        return {"verdict": "holds", "reason": f"the {text} lies inside {band}"}
    held = [T for T, f in sorted(at_horizons.items())
            if f is not None and margin_status(f["exponent_ci"], expected, margin) == "holds"]
    if held:
        return {"verdict": "conditional", "reason": f"the {text} at the registered horizon is not inside {band}; at "
                                                      f"T = {', '.join(map(str, held))} steps it is",
                "condition": f"training horizon T = {', '.join(map(str, held))} steps"}
    if corrected_slope is not None and margin_status(c, corrected_slope, margin) == "holds":
        return {"verdict": "conditional", "reason": f"the {text} is not inside {band}, but inside {corrected_slope:.2f} "
                                                      f"+- {margin:g}, the slope of the AM-muP law with its "
                                                      f"finite-depth corrections over these depths",
                "condition": "with the finite-depth corrections, not the pure power"}
    if status == "fails":
        return {"verdict": "fails", "reason": f"the {text} lies wholly outside {band}"}
    return {"verdict": "inconclusive", "reason": f"the {text} overlaps {band} without lying inside it"}


def exponent_verdict(fit: dict | None, expected: float, at_horizons: dict, corrected_slope: float | None,
                     margin: float | None = None) -> dict:
    """The verdict on "the exponent is ``expected``" from the fit at the registered horizon;
    ``at_horizons`` = ``{T: fit}`` at the registered shorter horizons; ``corrected_slope`` = the
    AM-muP law's own slope over the same points (or ``None``); ``margin``: the margin rule (module
    docstring), ``None`` for the registrations up to 2026-11-27 (a width cut)."""
    if fit is None or fit["exponent_ci"] is None:
        return {"verdict": "inconclusive", "reason": "no exponent CI (fewer than two finite optima, or an optimum "
                                                     "without a CI)"}
    if margin is not None:
        return _margin_exponent(fit, expected, at_horizons, corrected_slope, margin)
    c = fit["exponent_ci"]
    if _contains(c, expected):
        if _width(c) > MAX_CI_WIDTH:
            return {"verdict": "inconclusive", "reason": f"{expected:g} is inside the CI, but the CI is wider than "
                                                           f"{MAX_CI_WIDTH:g}"}
        return {"verdict": "holds", "reason": f"{expected:g} is inside the CI [{c[0]:.2f}, {c[1]:.2f}]"}
    held = [T for T, f in sorted(at_horizons.items()) if f is not None and _contains(f["exponent_ci"], expected)]
    if held:
        return {"verdict": "conditional", "reason": f"outside the CI [{c[0]:.2f}, {c[1]:.2f}] at the registered "
                                                      f"horizon, inside at T = {', '.join(map(str, held))} steps",
                "condition": f"training horizon T = {', '.join(map(str, held))} steps"}
    if corrected_slope is not None and _contains(c, corrected_slope):
        return {"verdict": "conditional", "reason": f"{expected:g} is outside the CI [{c[0]:.2f}, {c[1]:.2f}]; the "
                                                      f"AM-muP law with its finite-depth corrections has slope "
                                                      f"{corrected_slope:.2f} over these depths, inside it",
                "condition": "with the finite-depth corrections, not the pure power"}
    return {"verdict": "fails", "reason": f"{expected:g} is outside the CI [{c[0]:.2f}, {c[1]:.2f}]"}


def paired_difference(fit_a: dict | None, fit_b: dict | None) -> dict | None:
    """``exponent_a - exponent_b`` and the prefactor ratio ``a / b`` at the common points, draw by draw."""
    if fit_a is None or fit_b is None:
        return None
    if np.shape(fit_a["slope_draws"]) != np.shape(fit_b["slope_draws"]):  # not paired draw by draw: no CI
        return {"exponent_difference": fit_a["exponent"] - fit_b["exponent"], "exponent_difference_ci": None,
                "difference_draws": np.full(1, np.nan)}
    diff = fit_a["slope_draws"] - fit_b["slope_draws"]
    point = fit_a["exponent"] - fit_b["exponent"]
    method = fit_a.get("interval", "bootstrap")
    return {"exponent_difference": point, "exponent_difference_ci": interval(point, diff, method),
            "difference_draws": diff, "interval": method}


def same_exponent_verdict(diff: dict | None, ratio: dict | None, prefactor_changes: bool,
                          margin: float | None = None) -> dict:
    """Equal exponents (and, with ``prefactor_changes``, a prefactor ratio away from 1); ``margin``: the
    margin rule on the difference (``0 +- margin``)."""
    if diff is None or diff["exponent_difference_ci"] is None:
        return {"verdict": "inconclusive", "reason": "no CI for the exponent difference"}
    c = diff["exponent_difference_ci"]
    text = f"exponent difference {diff['exponent_difference']:+.2f} [{c[0]:+.2f}, {c[1]:+.2f}]"
    if margin is not None:
        status = margin_status(c, 0.0, margin)
        if status == "fails":
            return {"verdict": "fails", "reason": f"{text} lies wholly outside 0 +- {margin:g}"}
        if status == "inconclusive":
            return {"verdict": "inconclusive", "reason": f"{text} overlaps 0 +- {margin:g} without lying inside it"}
        return _unchanged_exponent(f"{text} lies inside 0 +- {margin:g}", ratio, prefactor_changes)
    if not _contains(c, 0.0):
        return {"verdict": "fails", "reason": f"{text} excludes 0"}
    if _width(c) > MAX_CI_WIDTH:
        return {"verdict": "inconclusive", "reason": f"{text} holds 0 but is wider than {MAX_CI_WIDTH:g}"}
    return _unchanged_exponent(f"{text} holds 0", ratio, prefactor_changes)


def _unchanged_exponent(said: str, ratio: dict | None, prefactor_changes: bool) -> dict:
    """The verdict once the exponent difference is read as 0 (``said`` says why): ``holds``, or with
    ``prefactor_changes`` ``holds`` only where the prefactor ratio's CI excludes 1, else ``conditional``."""
    if not prefactor_changes:
        return {"verdict": "holds", "reason": said}
    rc = None if ratio is None else ratio["ratio_ci"]
    if rc is not None and not _contains(rc, 1.0):
        return {"verdict": "holds", "reason": f"{said}; prefactor ratio {ratio['ratio']:.2f} "
                                              f"[{rc[0]:.2f}, {rc[1]:.2f}] excludes 1"}
    return {"verdict": "conditional", "reason": f"{said}, but no prefactor change is resolved",
            "condition": "the exponent is unchanged; the prefactor change is not resolved at this size"}


def steeper_verdict(at_he: dict | None, at_critical: dict | None, margin: float | None = None) -> dict:
    """Is the activation steeper than the reference: at its critical init (the activation itself),
    or only at He ``c = 2`` (its sub-criticality)?  With ``margin`` (the margin rule's registrations)
    the claim is one-sided: it fails when the critical difference's CI lies at or above 0, and is
    inconclusive otherwise (no width cut)."""
    def below(d):
        return d is not None and d["exponent_difference_ci"] is not None and d["exponent_difference_ci"][1] < 0

    def text(d, label):
        if d is None or d["exponent_difference_ci"] is None:
            return f"{label}: no CI"
        c = d["exponent_difference_ci"]
        return f"{label}: difference {d['exponent_difference']:+.2f} [{c[0]:+.2f}, {c[1]:+.2f}]"

    both = f"{text(at_critical, 'critical c')}; {text(at_he, 'He c = 2')}"
    if below(at_critical):
        return {"verdict": "holds", "reason": both}
    if below(at_he):
        return {"verdict": "conditional", "reason": both,
                "condition": "steeper only at He c = 2, where GELU is sub-critical (the init, not the activation)"}
    if margin is not None:
        c = None if at_critical is None else at_critical["exponent_difference_ci"]
        return {"verdict": "fails" if c is not None and c[0] >= 0 else "inconclusive", "reason": both}
    wide = all(d is None or _width(d["exponent_difference_ci"]) > MAX_CI_WIDTH for d in (at_he, at_critical))
    return {"verdict": "inconclusive" if wide else "fails", "reason": both}


def transfer_status(ratio: float, ratio_ci, tolerance: float, margin_rule: bool = False) -> str:
    """``transfers`` / ``misses`` / ``uncertain`` for a predicted/true rate ``ratio`` at one depth;
    ``margin_rule``: it transfers only when the whole CI lies inside the band."""
    lo, hi = 1 / tolerance, tolerance
    if margin_rule:
        if ratio_ci is not None and lo <= ratio_ci[0] and ratio_ci[1] <= hi:
            return "transfers"
        if ratio_ci is not None and (ratio_ci[1] < lo or ratio_ci[0] > hi):
            return "misses"
        return "uncertain"
    if math.isfinite(ratio) and lo <= ratio <= hi:
        return "transfers"
    if ratio_ci is not None and (ratio_ci[1] < lo or ratio_ci[0] > hi):
        return "misses"
    return "uncertain"


def rule_verdict(depths: list, statuses: list) -> dict:
    """A rule's verdict over the held-out depths (sorted) from its status at each."""
    if statuses and all(s == "transfers" for s in statuses):
        return {"verdict": "holds", "reason": "within the tolerance at every held-out depth"}
    if any(s == "misses" for s in statuses):
        first = next(d for d, s in zip(depths, statuses) if s == "misses")
        reach = [d for d, s in zip(depths, statuses) if d < first]
        if reach and all(s == "transfers" for d, s in zip(depths, statuses) if d < first):
            return {"verdict": "conditional", "reason": f"transfers up to L = {max(reach)}, misses at L = {first}",
                    "condition": f"held-out depths up to {max(reach)}"}
        return {"verdict": "fails", "reason": f"misses at L = {first}"}
    return {"verdict": "inconclusive", "reason": "not within the tolerance everywhere, but no miss is resolved"}
