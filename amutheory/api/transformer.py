"""The Transformer laws' numbers (they live in :mod:`amutheory.laws.transformer_values`)."""

from amutheory.laws.transformer_values import transformer_law_values, transformer_predictor, transformer_values

__all__ = ["transformer_law_values", "transformer_predictor", "transformer_values"]
