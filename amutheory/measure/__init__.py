"""The torch side: the built-in families' models, the one-step probe and the measurements.

Importing this package (any of its modules) registers each built-in family's model with
:mod:`amutheory.families` (:mod:`amutheory.measure.family_models`): a family never imports this package.
"""

from amutheory.measure import family_models  # noqa: F401
