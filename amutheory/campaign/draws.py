"""Which configs of a campaign share their seeds' draws, and how many independent ones there are.

Nets of one architecture under different init conventions (or branch multipliers, or activations)
draw the same normals from a seed: the generator lays a weight tensor's normals out by its shape,
and the inputs and loss directions are drawn after the weights.  So seed ``s`` of conv-mlp/k-last
and seed ``s`` of conv-mlp/k-all hold the same raw weights, inputs and loss directions, scaled
differently.  These common random numbers make the *differences* between conventions precise; they
also make the configs' sampling errors at a depth move together, so "m of n configs pass" counts
n correlated outcomes, not n independent ones, and one unlucky draw of inputs fails a whole group.

For two configs with the same seeds at a depth, the Pearson correlation of their per-seed
``ln s_bar`` is the correlation of their geometric-mean sampling errors there (for iid pairs
``(a_i, b_i)``, ``corr(mean a, mean b) = corr(a, b)``), and nearly that of their arithmetic means.
:func:`draw_groups` averages it over the depths both measured, joins configs (single linkage) where
it is at least :data:`GROUP_CORRELATION`, and gives the effective number of independent configs,
the participation ratio ``(sum lambda)^2 / sum lambda^2`` of the correlation matrix's eigenvalues
(``n`` for uncorrelated configs, 1 for identical ones).

:func:`pass_count_null` turns a count of passing configs into a test: the distribution of the
number of configs an *exact* law would pass on the same seeds, with every row's sampling error
correlated as the per-seed values say; :func:`held_out_null` applies it to a campaign's held-out check.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from amutheory.campaign.common import STATISTICS

#: correlation at which two configs count as one draw: half the variance of one's sampling error is
#: the other's.  With the campaigns' 32-96 seeds the standard error of a correlation between
#: independent configs is 1/sqrt(seeds) = 0.10-0.18, so chance correlations stay well below it.
GROUP_CORRELATION = 0.5


def _log_s_bar(meas, depth: int) -> np.ndarray:
    return np.log(np.maximum(meas.s_bar(depth), np.finfo(float).tiny))


def pair_correlation(a, b) -> float | None:
    """Mean over the depths both :class:`~amutheory.api.Measurement` s hold of the correlation of
    their per-seed ``ln s_bar`` (``None`` when their seeds differ or no depth is shared)."""
    if list(a.seeds) != list(b.seeds) or len(a.seeds) < 3:
        return None
    values = []
    for d in sorted(set(a.depths) & set(b.depths)):
        x, y = _log_s_bar(a, d), _log_s_bar(b, d)
        if x.std() > 0 and y.std() > 0:
            values.append(float(np.corrcoef(x, y)[0, 1]))
    return float(np.mean(values)) if values else None


def effective_count(corr: np.ndarray) -> float:
    """Participation ratio ``(sum lambda)^2 / sum lambda^2`` of a correlation matrix (``n`` for the
    identity, 1 for all-ones)."""
    lam = np.clip(np.linalg.eigvalsh(np.asarray(corr, float)), 0.0, None)
    return float(lam.sum() ** 2 / np.sum(lam**2))


def draw_groups(measurements: dict, threshold: float = GROUP_CORRELATION) -> dict:
    """``measurements``: ``{config name: Measurement}``.  Returns the pairwise correlations
    (``correlation[a][b]``, ``None`` for configs without common seeds), the groups of configs joined
    where the correlation is at least ``threshold`` (single linkage; a config alone is its own group),
    the effective number of independent configs and the threshold."""
    if not isinstance(measurements, dict):
        raise TypeError(f"measurements must be a dict of config name -> Measurement, got {type(measurements).__name__}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold!r}")
    names = list(measurements)
    n = len(names)
    table: dict = {a: {} for a in names}
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            r = pair_correlation(measurements[names[i]], measurements[names[j]])
            table[names[i]][names[j]] = table[names[j]][names[i]] = r
            if r is not None and r >= threshold:
                parent[root(i)] = root(j)
    groups: dict = {}
    for i, name in enumerate(names):
        groups.setdefault(root(i), []).append(name)
    out = {"threshold": threshold, "groups": list(groups.values()), "correlation": table}
    return {**out, "effective_configs": effective_of(out, names)}


def groups_of(draws: dict, names) -> list:
    """The groups of ``draws`` restricted to ``names`` (groups with none of them dropped)."""
    wanted = set(names)
    return [g for g in ([m for m in grp if m in wanted] for grp in draws["groups"]) if g]


def effective_of(draws: dict, names) -> float:
    """The effective number of independent configs among ``names`` (from ``draws``' correlations;
    configs without common seeds count as uncorrelated)."""
    names = list(names)
    corr = np.eye(len(names))
    for i, a in enumerate(names):
        for j, b in enumerate(names[:i]):
            r = draws["correlation"][a].get(b)
            corr[i, j] = corr[j, i] = 0.0 if r is None else r
    return effective_count(corr) if names else 0.0


def row_influence(values, statistic: str) -> np.ndarray:
    """Per-seed influence of a held-out row's statistic, centred: ``s_i / mean(s) - 1`` for the
    arithmetic mean (the relative error of the mean is their average), ``ln s_i - mean(ln s)`` for the
    geometric mean.  Two rows on the same seeds have sampling errors whose correlation is, to first
    order in ``1/seeds``, the correlation of their influence vectors."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    s = np.asarray(values, float)
    if s.ndim != 1 or s.size < 3 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("values must be at least 3 finite positive per-seed s_bar")
    x = s / s.mean() - 1.0 if statistic == "mean" else np.log(s)
    return x - x.mean()


def row_log_se(values, statistic: str) -> float:
    """Standard error, in ``ln s``, of a row's statistic over its seeds: the sd of
    :func:`row_influence` over ``sqrt(seeds)``."""
    x = row_influence(values, statistic)
    return float(x.std(ddof=1) / np.sqrt(x.size))


def pass_count_null(configs: dict, level: float = 0.95, draws: int = 20000, seed: int = 0,
                    prediction_sd: dict | None = None) -> dict:
    """How many configs an exact law would pass, given how their rows' sampling errors correlate.

    ``configs``: ``{config name: [influence vector per held-out row]}`` (:func:`row_influence`; every
    vector over the same seeds, in the same order).  A row passes when its prediction lies inside its
    ``level`` interval, and a config when all its rows do.  Under an exact law (the prediction is the
    expected value) a row's standardised error is normal with the rows' correlation matrix ``R``
    (their influence vectors' correlations), and it passes when ``|z| <= z_(1+level)/2``.  ``draws``
    joint normal draws (``seed`` fixed) give the distribution of the number of passing configs:
    ``distribution[j] = P(count = j)``, ``p_at_most[j] = P(count <= j)``, ``expected``, ``percentile_5``
    (the largest ``j`` with ``P(count < j) <= 0.05``), ``pass_probability`` per config and
    ``effective_rows`` (the participation ratio of ``R``: how many independent rows the rows are).

    Approximations: the normal error (the campaign's percentile-bootstrap intervals of a
    lognormal-ish mean cover somewhat less than ``level``, at order ``1/seeds``, so a real exact law
    passes somewhat less often than this null says: the null is strict), and, without
    ``prediction_sd``, the prediction taken as exact.  A calibrated law's prediction has its own error
    (its constants come from a finite calibration); ``prediction_sd``, ``{config name: [ratio per row]}``,
    gives each row's prediction sd in units of its measurement's standard error (both in ``ln s``), and
    each config's prediction error is one normal shared by its rows (one calibration predicts every K),
    independent between configs.  Configs calibrated on common seeds have correlated constants, which
    would widen the count's distribution further, so this null is still on the strict side."""
    if not isinstance(configs, dict) or not configs:
        raise TypeError("configs must be a non-empty dict of config name -> list of influence vectors")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if int(draws) != draws or draws < 100:
        raise ValueError(f"draws must be an integer >= 100, got {draws!r}")
    names, rows = list(configs), []
    owner = []
    for i, name in enumerate(names):
        vectors = list(configs[name])
        if not vectors:
            raise ValueError(f"configs[{name!r}] has no rows")
        rows += [np.asarray(v, float) for v in vectors]
        owner += [i] * len(vectors)
    if len({v.shape for v in rows}) != 1 or rows[0].ndim != 1 or rows[0].size < 3:
        raise ValueError("every influence vector must be 1-D over the same seeds (at least 3)")
    owner = np.array(owner)
    X = np.array(rows)
    sd = X.std(axis=1)
    if np.any(sd == 0):
        raise ValueError("an influence vector is constant: its row has no sampling error")
    R = np.corrcoef(X)
    # a correlation matrix from fewer seeds than rows is singular: factor it by its eigenvectors
    lam, vec = np.linalg.eigh(R)
    factor = vec * np.sqrt(np.clip(lam, 0.0, None))
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((int(draws), len(rows))) @ factor.T
    if prediction_sd is not None:
        ratio = []
        for name in names:
            r = list(prediction_sd.get(name, []))
            if len(r) != len(configs[name]) or not all(np.isfinite(x) and x >= 0 for x in r):
                raise ValueError(f"prediction_sd[{name!r}] must hold one finite ratio >= 0 per row")
            ratio += r
        u = rng.standard_normal((int(draws), len(names)))  # one prediction error per config
        z = z + u[:, owner] * np.asarray(ratio)
    inside = np.abs(z) <= sps.norm.ppf(0.5 + level / 2)
    passed = np.array([inside[:, owner == i].all(axis=1) for i in range(len(names))]).T
    count = passed.sum(axis=1)
    dist = np.bincount(count, minlength=len(names) + 1) / count.size
    at_most = np.cumsum(dist)
    below = np.concatenate([[0.0], at_most[:-1]])  # P(count < j)
    return {"configs": len(names), "rows": len(rows), "level": level, "draws": int(draws),
            "distribution": dist.tolist(), "p_at_most": at_most.tolist(), "expected": float(count.mean()),
            "percentile_5": int(np.max(np.nonzero(below <= 0.05)[0])),
            "pass_probability": dict(zip(names, passed.mean(axis=0).tolist())),
            "effective_rows": effective_count(R), "with_prediction_error": prediction_sd is not None}


def held_out_null(measurements: dict, results: list) -> dict | None:
    """A campaign's count of configs passing the held-out check against what an exact law would pass
    on the same seeds.  ``measurements``: ``{name: Measurement}``; ``results``: the configs' result dicts
    (``name``, ``held_out_depths``, ``passed``: every held-out depth inside its CI for both statistics).
    Every (config, held-out K, statistic) is a row of :func:`pass_count_null`.  Returns the null's keys
    plus ``names`` (the configs), ``passed`` (the observed count) and ``p_value`` (``P(count <= passed)``);
    ``None`` for fewer than two configs, configs measured on different seeds or with no held-out K."""
    mine = [r for r in results if r.get("name") in measurements and r.get("held_out_depths")]
    if len(mine) < 2 or len({tuple(measurements[r["name"]].seeds) for r in mine}) != 1:
        return None
    influence = {r["name"]: [row_influence(measurements[r["name"]].s_bar(d), stat)
                             for d in r["held_out_depths"] for stat in STATISTICS] for r in mine}
    null = pass_count_null(influence)
    passed = sum(bool(r.get("passed")) for r in mine)
    return {**null, "names": [r["name"] for r in mine], "passed": passed, "p_value": null["p_at_most"][passed]}
