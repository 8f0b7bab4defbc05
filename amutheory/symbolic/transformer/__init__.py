"""Pre-LN Transformers (K blocks): the coherent law and the chain law in the effective depth
``2K + 2`` (``coherent``).  Its names are re-exported here, as when this package was one module."""

from amutheory.symbolic.transformer.coherent import (  # noqa: F401
    ASSUMPTIONS, BLOCK_WEIGHT, EFFECTIVE_DEPTH_ASSUMPTIONS, STEM_AND_HEAD, effective_depth_law,
    effective_depth_of_blocks, transformer_law)
