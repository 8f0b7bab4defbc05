"""``FILE.py:NAME`` or ``MODULE:NAME``: import a user's model (or model factory) by name.

Shared by ``depth``/``transfer`` (a no-argument factory or a module) and ``sweep`` (a factory
called as ``FACTORY(depth=L, width=n)``).  Every failure is a ``ValueError`` of one line.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys


def import_attribute(spec: str, who: str = "model"):
    """The object ``NAME`` of ``FILE.py`` or of the importable ``MODULE`` named by ``spec``."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"{who}: model spec must be FILE.py:FACTORY or MODULE:FACTORY, got {spec!r}")
    where, name = spec.rsplit(":", 1)
    if not where or not name:
        raise ValueError(f"{who}: model spec must be FILE.py:FACTORY or MODULE:FACTORY, got {spec!r}")
    try:
        if where.endswith(".py") or os.sep in where or os.path.exists(where):
            if not os.path.isfile(where):
                raise ValueError(f"{who}: no such file {where!r}")
            ispec = importlib.util.spec_from_file_location(f"_amutheory_model_{abs(hash(where))}", where)
            module = importlib.util.module_from_spec(ispec)
            sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
            try:
                ispec.loader.exec_module(module)
            finally:
                sys.path.pop(0)
        else:
            module = importlib.import_module(where)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - any import failure is a bad spec
        raise ValueError(f"{who}: cannot import {where!r}: {type(exc).__name__}: {' '.join(str(exc).split())}")
    if not hasattr(module, name):
        raise ValueError(f"{who}: {where!r} has no attribute {name!r}")
    return getattr(module, name)
