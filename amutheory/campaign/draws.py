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
"""

from __future__ import annotations

import numpy as np

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
