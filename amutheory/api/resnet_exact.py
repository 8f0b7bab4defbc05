"""The exact residual laws, the limit-shape law and the residual zero-padding boundary (they live in
:mod:`amutheory.laws.resnet_exact`, below the laws that use them)."""

from amutheory.laws.resnet_exact import (G_K_EXPRESSION, LIMIT_SHAPE_DRAWS, POINT_DRAWS, SEED_DRAWS, ZERO_PADDING_DRAWS,
                                         _monte_carlo_law, exact_kind, exact_resnet_law, exact_values, limit_shape,
                                         limit_shape_predictor, resnet_boundary)

__all__ = ["G_K_EXPRESSION", "LIMIT_SHAPE_DRAWS", "POINT_DRAWS", "SEED_DRAWS", "ZERO_PADDING_DRAWS", "_monte_carlo_law",
           "exact_kind", "exact_resnet_law", "exact_values", "limit_shape", "limit_shape_predictor", "resnet_boundary"]
