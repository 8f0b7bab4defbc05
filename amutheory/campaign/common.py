"""Campaign-wide conventions and JSON-safe numbers.

The statistics every config is analysed with (arithmetic and geometric mean over seeds), the level
of every interval, the learning-rate convention ``C`` of ``eta* = sqrt(C / s_bar)``, the bootstrap
size, and the helpers that turn numpy scalars and non-finite floats into plain JSON values.
"""

from __future__ import annotations

from amutheory.jsonio import finite, json_safe

STATISTICS = ("mean", "geo")
LEVEL = 0.95
C_TARGET = 1.0
N_BOOT = 2000


# the JSON helpers live in amutheory.jsonio (imported without the campaign); kept here under their old names
_f = finite
_json_safe = json_safe
