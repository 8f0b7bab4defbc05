"""The Python API of amutheory, one module per job:

* :mod:`~amutheory.api.derivation`  -- :func:`derive`: spec in, symbolic law out (SymPy only);
* :mod:`~amutheory.api.measurement` -- :func:`measure`: the one-step probe over depths and seeds;
* :mod:`~amutheory.api.selection`   -- :func:`predict`: the best law by default, or the one named;
* :mod:`~amutheory.api.prediction`  -- the :class:`Prediction` record and the block-law helpers;
* :mod:`~amutheory.api.chain`, :mod:`~amutheory.api.resnet`, :mod:`~amutheory.api.resnet_exact`,
  :mod:`~amutheory.api.transformer` -- each family's predictions (calibration: :mod:`amutheory.calibrate`);
* :mod:`~amutheory.api.checks`      -- the argument checks they share.

``eta*`` is always ``sqrt(C / s_bar)``: AM-muP fixes the layer-averaged one-step second moment
``eta^2 s_bar`` to ``C`` (default 1, a convention); measured and predicted ``eta*`` use the same
``C``, so their ratio does not depend on it.  The laws themselves, with what each covers and costs,
are registered in :mod:`amutheory.laws`.
"""

import importlib

#: every public name, served by :func:`__getattr__` from the module that defines it (``import
#: amutheory.api.derivation`` then loads SymPy only, not every law's numerics)
_LAZY = {
    **dict.fromkeys(("derived_mean", "law_values", "mlp_limit_constants", "predicted_layer_profile",
                     "zero_padding_factor"), "amutheory.api.chain"),
    **dict.fromkeys(("DEFAULT_CALIBRATION_DEPTHS", "check_depths"), "amutheory.checks"),
    **dict.fromkeys(("CALIBRATED_RESNET_LAWS", "LAWS", "RESNET_LAW_CHOICES", "RESNET_LAWS", "TRANSFORMER_LAWS",
                     "derive"), "amutheory.api.derivation"),
    "SELECTION_CRITERION": "amutheory.laws.resnet_values",
    **dict.fromkeys(("Measurement", "measure"), "amutheory.api.measurement"),
    **dict.fromkeys(("Prediction", "block_law_log_sd", "block_law_s_bar", "mean_over_typical"),
                    "amutheory.api.prediction"),
    **dict.fromkeys(("DENSE_SHAPE_CONSTANTS", "LIMIT_SHAPE_CONSTANTS", "RESNET_CONSTANTS", "RESNET_SIGNED",
                     "_dropped_parts", "pick_resnet_law", "resnet_law_name", "resnet_law_values", "resnet_predictor"),
                    "amutheory.api.resnet"),
    **dict.fromkeys(("LIMIT_SHAPE_DRAWS", "POINT_DRAWS", "SEED_DRAWS", "ZERO_PADDING_DRAWS", "exact_resnet_law",
                     "limit_shape", "limit_shape_predictor", "resnet_boundary"), "amutheory.api.resnet_exact"),
    **dict.fromkeys(("CONSTANTS_CHOICES", "predict", "predict_with"), "amutheory.api.selection"),
    **dict.fromkeys(("transformer_law_values", "transformer_predictor"), "amutheory.api.transformer"),
    "Constant": "amutheory.constants",
}

__all__ = [
    "derive", "measure", "predict", "predict_with", "Measurement", "Prediction", "Constant", "check_depths",
    "DEFAULT_CALIBRATION_DEPTHS", "LAWS", "TRANSFORMER_LAWS", "RESNET_LAWS", "RESNET_LAW_CHOICES",
    "CALIBRATED_RESNET_LAWS", "SELECTION_CRITERION", "CONSTANTS_CHOICES", "derived_mean", "law_values",
    "mlp_limit_constants", "predicted_layer_profile", "zero_padding_factor", "mean_over_typical", "block_law_s_bar",
    "block_law_log_sd", "RESNET_CONSTANTS", "RESNET_SIGNED", "DENSE_SHAPE_CONSTANTS", "LIMIT_SHAPE_CONSTANTS",
    "pick_resnet_law", "resnet_law_name", "resnet_law_values", "resnet_predictor", "LIMIT_SHAPE_DRAWS",
    "POINT_DRAWS", "SEED_DRAWS", "ZERO_PADDING_DRAWS", "exact_resnet_law", "limit_shape", "limit_shape_predictor",
    "resnet_boundary", "transformer_law_values", "transformer_predictor",
]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
