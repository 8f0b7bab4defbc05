"""Two runs of one protocol on disjoint seeds, claim by claim: does each land inside the other's CI?

A claim's *estimate* is its exponent (``exponent`` and ``width`` claims), its exponent difference
(``same-exponent``) or, for a ``steeper`` claim, the difference at the activation's critical init.
:func:`replicate_rows` compares two ``summary.json`` of the same protocol (a pilot's two runs, or a
protocol and its replicate ``validate --first-seed``) and says, per claim, whether the second
estimate lies inside the first's 95% CI and the first inside the second's.
"""

from __future__ import annotations


def claim_estimate(claim: dict) -> tuple:
    """``(estimate, CI)`` of a claim of a ``summary.json``: the exponent, or the exponent difference (the
    critical one for ``steeper``); the CI ``None`` where the claim has an estimate but no CI, ``(None, None)``
    without an estimate."""
    if claim.get("fit") and claim["fit"].get("exponent") is not None:
        return claim["fit"]["exponent"], claim["fit"].get("exponent_ci")
    for key in ("difference", "difference_critical"):
        d = claim.get(key)
        if d and d.get("exponent_difference") is not None:
            return d["exponent_difference"], d.get("exponent_difference_ci")
    return None, None


def _inside(value, interval) -> bool | None:
    if value is None or not interval:
        return None
    return bool(interval[0] <= value <= interval[1])


def replicate_rows(first: dict, second: dict) -> list[dict]:
    """Per claim of ``first``: both estimates and CIs, ``second_inside_first`` (the replicate's estimate inside
    the registered CI), ``first_inside_second``, ``agree`` (both; ``None`` where either has no CI) and both
    verdicts.  Raises ``ValueError`` when the two summaries are not of the same claims."""
    if not isinstance(first, dict) or not isinstance(second, dict):
        raise TypeError("first and second must be summary.json dicts")
    names_a = [c["name"] for c in first.get("claims", [])]
    names_b = [c["name"] for c in second.get("claims", [])]
    if names_a != names_b:
        raise ValueError(f"the two summaries check different claims: {names_a} against {names_b}")
    rows = []
    for ca, cb in zip(first["claims"], second["claims"]):
        ea, ia = claim_estimate(ca)
        eb, ib = claim_estimate(cb)
        b_in_a, a_in_b = _inside(eb, ia), _inside(ea, ib)
        agree = None if b_in_a is None or a_in_b is None else (b_in_a and a_in_b)
        rows.append({"claim": ca["name"], "a": ea, "a_ci": ia, "b": eb, "b_ci": ib, "second_inside_first": b_in_a,
                     "first_inside_second": a_in_b, "agree": agree, "verdict_a": ca["verdict"],
                     "verdict_b": cb["verdict"]})
    return rows
