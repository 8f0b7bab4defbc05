"""How a sweep's or a tune's ``summary.json`` describes its network.

A training cell of a user's ``--model FILE.py:FACTORY`` keeps an :class:`~amutheory.spec.ArchSpec` for its
depth, width and input layout (its key depends on all of it, so resumed folders keep their cells); the
spec's other fields are the conv chain's defaults, which the factory never reads.  The summary says what
the network is instead:

* ``template`` (:func:`summary_template`): the cell's fixed fields, with the spec fields a factory does not
  read set to ``null`` and ``family`` set to ``module`` (every key kept);
* ``model`` (:func:`model_description`): the factory, how it is called, the kind of net its traced graph
  shows (chain, residual, Transformer: :func:`amutheory.transfer_interval.resolve_kind`, as ``transfer``
  reads it), the per-sample input, the parameters and the effective depth at each depth, and what the
  run measured.
"""

from __future__ import annotations

import dataclasses

#: the spec fields a user's factory reads: the data layout (the dataset's shape and classes)
MODULE_FIELDS = ("dim", "spatial", "input_channels", "outputs")


def summary_template(fixed: dict) -> dict:
    """The template's fixed fields (:func:`amutheory.train.sweep.fixed_fields`) as ``summary.json`` shows
    them (module docstring)."""
    if fixed.get("model") is None:
        return fixed
    spec = {k: (v if k in MODULE_FIELDS else None) for k, v in fixed["spec"].items()}
    return {**fixed, "spec": {**spec, "family": "module"}}


def model_description(template, depths, widths, measured: str) -> dict | None:
    """The user's network as the summary describes it (module docstring); ``None`` for a built-in family.
    ``measured``: what the run measured, in words."""
    if template.model is None:
        return None
    from amutheory.train.run import build_network, cell_data

    widths = list(widths)
    d = {"factory": template.model, "called_as": "FACTORY(depth=L, width=n), seeded by torch.manual_seed(seed)",
         "depth": "L: the factory's depth= argument (what the factory counts: layers, blocks, ...)",
         "measured": measured, "kind": None, "kind_because": None, "input_shape": None, "parameters": {},
         "effective_depths": {}}
    for L in sorted(set(depths)):
        cell = dataclasses.replace(template, spec=template.spec.with_(depth=L, width=min(widths)), device="cpu",
                                   seed=0)
        try:
            net = build_network(cell)
            if d["input_shape"] is None:
                d["input_shape"] = list(cell_data(cell)[0].shape[1:])
            d["parameters"][str(L)] = sum(p.numel() for p in net.parameters())
            from amutheory.graph import effective_depth

            rep = effective_depth(net, (1, *d["input_shape"]))
            d["effective_depths"][str(L)] = float(rep.effective_depth)
            if d["kind"] is None:
                from amutheory.transfer_interval import model_traits, resolve_kind

                d["kind"], d["kind_because"] = resolve_kind(model_traits(net), rep.residual_additions)
        except Exception as exc:  # noqa: BLE001 - a description is no reason to lose a finished run
            d["effective_depths"][str(L)] = None
            d.setdefault("trace_failed", f"depth {L}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    return d
