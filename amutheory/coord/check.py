"""``coord_check``: the coord check of a user's model across depth (and width) -- the records, the
reading and, with ``out``, the files ``coord.csv``, ``coord.json`` and ``coord.png``.

See :mod:`amutheory.coord.records` (what is measured and how), :mod:`amutheory.coord.reading` (the
slopes and the rule) and :mod:`amutheory.coord.expectation` (what the theory expects per kind).
"""

from __future__ import annotations

import csv
import json
import numbers
from pathlib import Path

from amutheory.coord.records import INPUT_KINDS, OPTIMIZERS, READOUT, RECORD_KEYS

#: the files ``coord_check(..., out=DIR)`` writes
FILES = ("coord.csv", "coord.json", "coord.png")


def load_factory(factory):
    """A callable factory: ``factory`` itself, or the one ``FILE.py:FACTORY`` / ``MODULE:FACTORY`` names."""
    if isinstance(factory, str):
        from amutheory.families import module_family

        factory = module_family(factory).load("model")
    if not callable(factory):
        raise TypeError(f"factory must be a callable or 'FILE.py:FACTORY', got {type(factory).__name__}")
    return factory


def build(factory, depth: int, width, seed: int):
    """``FACTORY(depth=L, width=n)`` (``FACTORY(depth=L)`` for ``width=None``) after ``torch.manual_seed(seed)``."""
    import torch
    from torch import nn

    torch.manual_seed(int(seed))
    kwargs = {"depth": depth} if width is None else {"depth": depth, "width": width}
    call = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    try:
        model = factory(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's code: one line saying what failed
        raise ValueError(f"model: factory({call}) failed: {type(exc).__name__}: {' '.join(str(exc).split())}") \
            from None
    if not isinstance(model, nn.Module):
        raise ValueError(f"model: factory({call}) returned {type(model).__name__}, not a torch.nn.Module")
    return model


def check_lr_fits(model, lr: float, name: str = "lr") -> None:
    """``lr`` is a normal number of every floating dtype of ``model``'s parameters: the optimizer's update
    ``p -= lr * grad`` takes ``lr`` in the parameters' own dtype, where a larger rate cannot be converted
    (float32 stops at 3.4e38) and a smaller one rounds to zero (no update at all)."""
    import torch

    for dtype in sorted({p.dtype for p in model.parameters() if p.dtype.is_floating_point}, key=str):
        info = torch.finfo(dtype)
        if not info.tiny <= lr <= info.max:
            raise ValueError(f"{name} {lr:g}: the model's {str(dtype).replace('torch.', '')} parameters take rates "
                             f"from {info.tiny:.3g} to {info.max:.3g} (the update is computed in their dtype)")


def _ints(name: str, values, minimum: int = 1) -> list[int]:
    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        values = [values]
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a list of integers, got {type(values).__name__}") from None
    if not values:
        raise ValueError(f"{name} must not be empty")
    from amutheory.spec import check_int

    return [check_int(name, v, minimum) for v in values]


def check_arguments(input_shape, depths, widths, steps, optimizer, lr, seeds, input_kind, vocab) -> tuple:
    """The arguments checked (``ValueError``/``TypeError`` naming the argument); ``(depths, widths, seeds)``."""
    from amutheory.spec import check_depth_list, check_int, check_rate, check_size

    shape = _ints("input_shape", input_shape)
    depths = sorted(set(check_depth_list("depths", _ints("depths", depths))))
    widths = None if widths is None else sorted(set(check_size("widths", w) for w in _ints("widths", widths)))
    check_int("steps", steps, 1, 10_000, "a coord check reads the first few steps")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    check_rate("lr", lr)
    seeds = list(range(check_int("seeds", seeds, 2, 10_000, "a seed bootstrap needs two"))) \
        if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool) else _ints("seeds", seeds, 0)
    if len(set(seeds)) < 2:
        raise ValueError(f"seeds: the bootstrap needs at least two distinct seeds, got {seeds}")
    if input_kind not in INPUT_KINDS:
        raise ValueError(f"input_kind must be one of {', '.join(INPUT_KINDS)}, got {input_kind!r}")
    if input_kind == "tokens" and vocab is None:
        raise ValueError("vocab is required with input_kind='tokens' (tokens are drawn in [0, vocab))")
    if vocab is not None:
        check_size("vocab", vocab)
    return tuple(shape), depths, widths, sorted(set(seeds))


def coord_check(factory, input_shape, depths, widths=None, steps: int = 3, optimizer: str = "sgd", lr: float = 0.01,
                seeds=3, layers=None, input_kind: str = "float", vocab=None, dataset=None, out=None,
                progress=None) -> dict:
    """Train ``factory``'s model at every depth (x width) and seed for ``steps`` real optimizer steps and
    record each module's activation and update size (:mod:`amutheory.coord.records`).

    ``factory``: a callable ``FACTORY(depth=, width=)`` or ``"FILE.py:FACTORY"``; ``seeds``: a count
    (seeds ``0 .. seeds-1``) or a list; ``dataset``: an ``(inputs, targets)`` batch used instead of random
    inputs and labels (``input_shape`` then only serves to read the network's kind from its traced graph).  Returns ``{"records": [...], "reading": {...}, ...}``; the records are a list of
    dicts with :data:`RECORD_KEYS` (``pandas.DataFrame(result["records"])`` gives the tidy table).  With
    ``out`` (a folder, made if missing) also writes :data:`FILES`."""
    shape, depths, widths, seeds = check_arguments(input_shape, depths, widths, steps, optimizer, lr, seeds,
                                                   input_kind, vocab)
    if dataset is not None and (not isinstance(dataset, (tuple, list)) or len(dataset) != 2):
        raise TypeError("dataset must be an (inputs, targets) pair of tensors")
    from amutheory.coord.expectation import network_kind
    from amutheory.coord.hints import model_facts
    from amutheory.coord.reading import read
    from amutheory.coord.records import make_batch, size_records

    fn = load_factory(factory)
    records, kind, facts = [], None, None
    sizes = [(L, n) for L in depths for n in (widths or [None])]
    for i, (L, n) in enumerate(sizes, start=1):
        for seed in seeds:
            model = build(fn, L, n, seed)
            if kind is None:
                check_lr_fits(model, lr)
                kind = network_kind(model, shape, input_kind)
                facts = model_facts(model, shape, input_kind)  # as built, before any step
            batch = make_batch(model, shape, seed, input_kind, vocab, dataset)
            records += size_records(model, L, n, seed, batch, steps, optimizer, lr, layers)
        if progress is not None:
            progress(i, len(sizes), L, n)
    result = {"model": factory if isinstance(factory, str) else getattr(factory, "__name__", repr(factory)),
              "input_shape": list(shape), "input_kind": input_kind, "vocab": vocab, "depths": depths,
              "widths": widths, "steps": steps, "optimizer": optimizer, "lr": lr, "seeds": seeds,
              "layers": None if layers is None else list(layers), "dataset": dataset is not None,
              "record_keys": list(RECORD_KEYS), "records": records,
              "reading": read(records, seeds, kind, READOUT, optimizer=optimizer, facts=facts)}
    if out is not None:
        result["files"] = write_outputs(result, out)
    return result


def write_outputs(result: dict, out) -> list[str]:
    """``coord.csv`` (the records), ``coord.json`` (everything, strict JSON) and ``coord.png`` in ``out``."""
    from amutheory.coord.figure import plot_coord
    from amutheory.jsonio import json_safe

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)  # preflight allowed only results/ as a missing parent
    with open(folder / "coord.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=RECORD_KEYS)
        writer.writeheader()
        writer.writerows(result["records"])
    paths = [str(folder / name) for name in FILES]
    (folder / "coord.json").write_text(json.dumps(json_safe({**result, "files": paths}), indent=1))
    plot_coord(result["records"], folder / "coord.png")
    return paths
