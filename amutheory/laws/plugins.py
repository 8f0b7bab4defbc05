"""Laws from outside the package: the names this module had, kept as aliases of the one plugin loader,
:mod:`amutheory.plugins` (entry-point groups ``amutheory.laws`` and ``amutheory.families``, plugin
files holding laws and families, loaded in every process)."""

from __future__ import annotations

from amutheory.plugins import LAW_GROUP as ENTRY_POINT_GROUP
from amutheory.plugins import load_entry_points, load_plugin, plugin_files

__all__ = ["ENTRY_POINT_GROUP", "load_entry_points", "load_plugin", "plugin_files"]
