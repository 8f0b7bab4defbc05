"""The conv-chain numbers :func:`amutheory.api.predict` reads (they live in
:mod:`amutheory.laws.chain_values`, below the laws that use them)."""

from amutheory.laws.chain_values import (chain_calibration as _chain_calibration, derived_mean, kernel_mean,
                                         law_values, mlp_limit_constants, operator_mean, predicted_layer_profile,
                                         spectral_mean, zero_padding_factor)

__all__ = ["derived_mean", "kernel_mean", "law_values", "mlp_limit_constants", "operator_mean",
           "predicted_layer_profile", "spectral_mean", "zero_padding_factor", "_chain_calibration"]
