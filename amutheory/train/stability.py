"""The largest stable rate eta_max: the divergence edge of a training run, found by bisection.

The papers' maximal-update rate is the largest rate "without causing instability"; here that is
measured under training.  For one (depth, width, seed), a run *diverges* when its record says so
(:func:`amutheory.train.run.divergence` within the cell's ``steps``), and the edge is where the
rates that do not diverge end:

* :func:`edge_bracket`: from the records of the given rates, ``hi`` = the smallest rate that
  diverged and ``lo`` = the largest rate below it that did not (so no rate tried between them);
  ``lo = None`` when the smallest rate tried diverged (the edge is below the range), ``hi = None``
  when none diverged (above it);
* :func:`bisection_rates`: from the grid's bracket, each round runs the geometric midpoint of the
  bracket and moves ``hi`` (diverged) or ``lo`` (not) to it.  The rates are a pure function of the
  records in the table (round r's rate depends only on the grid and rounds < r), so a resumed run
  recomputes the same next rate and trains no cell twice; no separate state is kept;
* :func:`next_cells`: the one cell per unfinished (depth, width, seed) that the next round trains
  (ordinary cells at new rates, stored in the sweep's table like any other);
* :func:`eta_max`: per seed the edge ``sqrt(lo hi)`` after the rounds, ``eta_max`` =
  ``exp(mean over seeds of ln edge)`` and its delete-one-seed replicates (for a jackknife CI).
  A censored seed (``below-range`` / ``above-range``) counts at the range's end (the smallest /
  largest rate tried: an upper / a lower bound on its edge) and is flagged.

Each round halves the bracket's ``ln`` width: after R rounds from a grid of log step ``d`` it is
``d / 2**R`` (``resolution``).  Only the grid and the bisection's own rates form the bracket (a
refined rate of the sweep is not used), so the sequence does not depend on the refinement.
"""

from __future__ import annotations

import math

from amutheory.train.cell import Cell

#: a seed whose every rate diverged: its edge is below the smallest rate tried
BELOW = "below-range"
#: a seed where no rate diverged: its edge is above the largest rate tried
ABOVE = "above-range"


# --------------------------------------------------------------------------- argument checks
def _check_int(name: str, v, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an integer, got {v!r}")
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v!r}")
    return v


def _check_rates(name: str, rates, unique: bool = True) -> list[float]:
    if isinstance(rates, (str, bytes)) or not hasattr(rates, "__iter__"):
        raise TypeError(f"{name} must be a list of rates, got {type(rates).__name__}")
    out = []
    for r in rates:
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            raise TypeError(f"{name} must hold numbers, got {r!r}")
        if not (math.isfinite(r) and r > 0):
            raise ValueError(f"{name} must hold finite rates > 0, got {r!r}")
        out.append(float(r))
    if not out:
        raise ValueError(f"{name} must not be empty")
    if unique and len(set(out)) != len(out):
        raise ValueError(f"{name} has a repeated rate: {out}")
    return out


def _check_ints(name: str, values, minimum: int) -> list[int]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list")
    out = [_check_int(name, v, minimum) for v in values]
    if len(set(out)) != len(out):
        raise ValueError(f"{name} has a repeated value: {out}")
    return out


def _check_common(table, template) -> None:
    if not isinstance(table, dict):
        raise TypeError(f"table must be a dict {{key: record}}, got {type(table).__name__}")
    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")


# --------------------------------------------------------------------------- records
def _at(template: Cell, depth: int, width: int):
    """``lr, seed -> key`` of the template's cell at (depth, width)."""
    base = template.with_(spec=template.spec.with_(depth=depth, width=width))
    return lambda lr, seed: base.with_(lr=lr, seed=seed).key()


def _diverged(rec: dict, lr: float) -> bool:
    d = rec.get("diverged") if isinstance(rec, dict) else None
    if not isinstance(d, bool):
        raise ValueError(f"table record at rate {lr!r} has no diverged verdict (got {d!r})")
    return d


def _bracket(outcomes: dict) -> tuple[float | None, float | None]:
    """``(lo, hi)`` of ``{rate: diverged}``."""
    bad = [r for r, d in outcomes.items() if d]
    hi = min(bad) if bad else None
    good = [r for r, d in outcomes.items() if not d and (hi is None or r < hi)]
    return (max(good) if good else None), hi


def edge_bracket(table: dict, template: Cell, depth: int, width: int, seed: int,
                 rates) -> tuple[float | None, float | None]:
    """``(lo, hi)`` of the runs of ``template`` at (``depth``, ``width``, ``seed``) at those of
    ``rates`` found in ``table`` (a rate without a record is left out): ``hi`` the smallest rate that
    diverged, ``lo`` the largest rate below ``hi`` that did not.  ``lo = None``: the smallest rate
    found diverged (edge below the range); ``hi = None``: none diverged (edge above it); both
    ``None`` when no rate has a record."""
    _check_common(table, template)
    depth, width = _check_int("depth", depth, 1), _check_int("width", width, 1)
    seed = _check_int("seed", seed, 0)
    key = _at(template, depth, width)
    outcomes = {}
    for r in set(_check_rates("rates", rates, unique=False)):
        rec = table.get(key(r, seed))
        if rec is not None:
            outcomes[r] = _diverged(rec, r)
    return _bracket(outcomes)


def _walk(table, key, seed, grid, rounds) -> tuple[list[float], bool, bool]:
    """``(rates, finished, float_limit)``: the bisection's rates (the last one without a record
    unless ``finished``)."""
    outcomes = {}
    for r in grid:
        rec = table.get(key(r, seed))
        if rec is None:
            raise ValueError(f"table lacks the grid cell at rate {r!r} (seed {seed}): bisection starts from a "
                             "finished grid")
        outcomes[r] = _diverged(rec, r)
    lo, hi = _bracket(outcomes)
    rates = []
    for _ in range(rounds):
        if lo is None or hi is None:  # censored: nothing to bisect
            break
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:  # the bracket is as narrow as floats go
            return rates, True, True
        rates.append(mid)
        rec = table.get(key(mid, seed))
        if rec is None:
            return rates, False, False
        if _diverged(rec, mid):
            hi = mid
        else:
            lo = mid
    return rates, True, False


def bisection_rates(table: dict, template: Cell, depth: int, width: int, seed: int, grid_rates,
                    rounds: int) -> list[float]:
    """The bisection's rates at (``depth``, ``width``, ``seed``): those of the rounds done (their
    records in ``table``) and then the next one to run, if any (at most ``rounds`` rates; none for a
    censored grid).  Round r's rate is the geometric midpoint of the bracket left by the grid
    (``grid_rates``, every one of whose records must be in ``table``) and rounds < r."""
    _check_common(table, template)
    depth, width = _check_int("depth", depth, 1), _check_int("width", width, 1)
    seed, rounds = _check_int("seed", seed, 0), _check_int("rounds", rounds, 0)
    grid = _check_rates("grid_rates", grid_rates)
    return _walk(table, _at(template, depth, width), seed, grid, rounds)[0]


def next_cells(table: dict, template: Cell, depths, widths, seeds, grid_rates, rounds: int) -> list[list[Cell]]:
    """The cells of the next bisection round: one per (depth, width, seed) not finished, each its
    own group (the groups of :func:`amutheory.train.engine.run_groups`); ``[]`` when every
    bisection has had its ``rounds`` (or is censored)."""
    _check_common(table, template)
    depths, widths = _check_ints("depths", depths, 1), _check_ints("widths", widths, 1)
    seeds, rounds = _check_ints("seeds", seeds, 0), _check_int("rounds", rounds, 0)
    grid = _check_rates("grid_rates", grid_rates)
    groups = []
    for L in depths:
        for n in widths:
            base = template.with_(spec=template.spec.with_(depth=L, width=n))
            for s in seeds:
                rates, finished, _ = _walk(table, _at(template, L, n), s, grid, rounds)
                if not finished:
                    groups.append([base.with_(lr=rates[-1], seed=s)])
    return groups


def eta_max(table: dict, template: Cell, depth: int, width: int, seeds, grid_rates, rounds: int) -> dict:
    """The largest stable rate at (``depth``, ``width``) from the grid and the bisection's records
    (JSON-ready):

    * ``per_seed``: per seed its ``lo``, ``hi``, ``edge`` = ``sqrt(lo hi)``, ``ln_edge``,
      ``censored`` (``None``, ``"below-range"``: every rate tried diverged, the edge counted as the
      smallest rate, an upper bound; ``"above-range"``: none did, the largest rate, a lower bound),
      ``resolution`` (``ln(hi / lo)``), ``rounds_done`` and the bisection's ``rates``;
    * ``ln_eta_max``: the seeds' ``ln edge`` in the order of ``seeds``; ``eta_max`` =
      ``exp(mean ln edge)``;
    * ``replicates``: row j = ``exp(mean ln edge of the seeds but j)`` (``None`` for one seed);
    * ``resolution``: the largest final ``ln(hi / lo)`` over the uncensored seeds (``None`` if all
      are censored);
    * ``flags``: ``below-range`` / ``above-range`` (a censored seed), ``unfinished`` (a seed has
      fewer rounds in the table than ``rounds``: its bracket so far), ``non-monotone`` (a grid rate
      above a seed's ``hi`` did not diverge), ``single-seed``, ``float-limit`` (a bracket as narrow
      as floats allow before ``rounds``)."""
    _check_common(table, template)
    depth, width = _check_int("depth", depth, 1), _check_int("width", width, 1)
    seeds, rounds = _check_ints("seeds", seeds, 0), _check_int("rounds", rounds, 0)
    grid = _check_rates("grid_rates", grid_rates)
    key = _at(template, depth, width)
    flags, per_seed = set(), []
    for s in seeds:
        rates, finished, limit = _walk(table, key, s, grid, rounds)
        done = rates if finished else rates[:-1]
        lo, hi = edge_bracket(table, template, depth, width, s, grid + done)
        censored = BELOW if lo is None else ABOVE if hi is None else None
        edge = min(grid) if censored == BELOW else max(grid) if censored == ABOVE else math.sqrt(lo * hi)
        if censored:
            flags.add(censored)
        if not finished:
            flags.add("unfinished")
        if limit:
            flags.add("float-limit")
        if hi is not None and any(r > hi and not table[key(r, s)]["diverged"] for r in grid):
            flags.add("non-monotone")
        per_seed.append({"seed": s, "lo": lo, "hi": hi, "edge": edge, "ln_edge": math.log(edge),
                         "censored": censored, "resolution": None if censored else math.log(hi / lo),
                         "rounds_done": len(done), "rates": done})
    ln = [p["ln_edge"] for p in per_seed]
    n = len(ln)
    if n == 1:
        flags.add("single-seed")
    total = math.fsum(ln)
    replicates = None if n == 1 else [math.exp((total - v) / (n - 1)) for v in ln]
    widths = [p["resolution"] for p in per_seed if p["resolution"] is not None]
    return {"depth": depth, "width": width, "seeds": seeds, "rounds": rounds,
            "rate_range": [min(grid), max(grid)], "per_seed": per_seed, "ln_eta_max": ln,
            "eta_max": math.exp(total / n), "replicates": replicates,
            "resolution": max(widths) if widths else None, "flags": sorted(flags)}
