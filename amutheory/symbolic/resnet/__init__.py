"""Residual nets (K blocks): the coherent leading-order law (``coherent``), the exact dense law
(``dense``, ``preact``), the mode-by-mode law of linear circular nets (``spectral``), the law over
the points (``operator``) and the init conventions (``init``).

The coherent law's names are re-exported here, so ``from amutheory.symbolic.resnet import
resnet_law`` keeps working as it did when this package was one module."""

from amutheory.symbolic.resnet.coherent import (  # noqa: F401
    ASSUMPTIONS, CONSTANTS, block_moment, branch_coefficients, forward_analysis, is_forward_stable, law_predictor,
    mean_moment, preactivations_per_block, read_moment, read_profile, resnet_law, weighted_predictor)
