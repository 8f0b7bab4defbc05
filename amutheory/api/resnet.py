"""The calibrated residual laws' numbers and the selection criterion (they live in
:mod:`amutheory.laws.resnet_values`, below the laws that use them)."""

from amutheory.laws.resnet_values import (DENSE_SHAPE_CONSTANTS, LIMIT_SHAPE_CONSTANTS, RESNET_CONSTANTS, RESNET_LAWS,
                                          RESNET_SIGNED, SELECTION_CRITERION, _dropped_parts, calibrated_values,
                                          pick_resnet_law, resnet_law_name, resnet_law_values, resnet_predictor)

__all__ = ["DENSE_SHAPE_CONSTANTS", "LIMIT_SHAPE_CONSTANTS", "RESNET_CONSTANTS", "RESNET_LAWS", "RESNET_SIGNED",
           "SELECTION_CRITERION", "_dropped_parts", "calibrated_values", "pick_resnet_law", "resnet_law_name",
           "resnet_law_values", "resnet_predictor"]
