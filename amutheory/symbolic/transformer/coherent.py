"""Pre-LN Transformers: two candidate depth laws, both derived, both checked by measurement.

Net (:mod:`amutheory.measure.transformer`): embedding, ``K`` pre-LN blocks (attention + MLP, two
residual additions each), final LN, token mean, linear head.  The AM average runs over the ``K``
MLP pre-activations.

1. :func:`effective_depth_law` -- the second paper's claim: the depth in the law is the effective
   depth, the shortest input -> output path, ``L_eff = 2K + 2`` for this net (embedding, two
   additions per block, head; computed by :mod:`amutheory.graph` and asserted in the tests).  The
   law is the conv-chain expansion (:mod:`amutheory.symbolic.primitives.expansion`) with ``L -> L_eff(K)``
   substituted by SymPy: ``eta* ~ K^(-3/2)``.
2. :func:`transformer_law` -- the coherent leading order of :mod:`amutheory.symbolic.resnet.coherent`
   applied to a pre-LN block.  ``LN`` reads the stream at unit scale, so every branch adds a
   bounded variance and a bounded update; both branches of a block move the stream along the
   same top gradient, which doubles ``C`` and only rescales the calibrated constants
   (``B (e0 + 2C(i-1))^2 = 4B (e0/2 + C(i-1))^2``).  For the conventions whose stream stays
   bounded (``k-last``, ``k-all``, ``k-squared``, ``sqrt-multiplier``) the block moment is that
   of a two-layer (``conv-mlp``) branch, and the law is :func:`amutheory.symbolic.resnet.coherent.mean_moment`
   with the transformer's name and assumptions.  With ``init="none"`` the pre-LN stream grows like
   ``K`` and LN divides every branch's contribution by ``q_{i-1}``; the same leading order then
   gives ``s_bar -> constant`` (``eta* ~ K^0``), but the sums are digamma functions SymPy does not
   take the limit of in reasonable time, so no closed-form law is returned for it
   (:func:`transformer_law` raises ``ValueError``; the campaign still measures it).
"""

from __future__ import annotations

import functools

import sympy as sp

from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives.law import ScalingLaw
from amutheory.symbolic.resnet.coherent import CONSTANTS, mean_moment
from amutheory.symbolic.primitives.symbols import L

#: effective depth of the pre-LN net of K blocks: embedding + 2 additions per block + head
BLOCK_WEIGHT = 2
STEM_AND_HEAD = 2

ASSUMPTIONS = [
    "pre-LN blocks x <- x + alpha Attn(LN x) W_O, x <- x + alpha phi(LN(x) W_1) W_2; no biases, LN "
    "without affine parameters",
    "AM over the K MLP pre-activations (attention logits excluded)",
    "coherent leading order: every update moves the stream along the same top gradient; both branches "
    "of a block count in C (a factor absorbed by the calibrated constants)",
    "stream bounded (k-last, k-all, k-squared, sqrt-multiplier); spectral fluctuations and token "
    "correlations (rank collapse) are left out",
]

EFFECTIVE_DEPTH_ASSUMPTIONS = [
    "the second paper's claim: the chain law holds with L replaced by the effective depth "
    f"L_eff = {sp.sstr(BLOCK_WEIGHT * sp.Symbol('K') + STEM_AND_HEAD)} (shortest input -> output path: embedding, "
    "two residual additions per block, head)",
    "chain constants a, b, e, epsilon calibrated on shallow nets (no derivation of them for attention)",
]


def _check_transformer(spec):
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    if spec.family != "transformer":
        raise ValueError(f"spec.family must be 'transformer', got {spec.family!r}")


def effective_depth_of_blocks(blocks):
    """``L_eff(K) = 2K + 2`` (SymPy or numbers)."""
    return BLOCK_WEIGHT * blocks + STEM_AND_HEAD


@functools.lru_cache(maxsize=None)
def _effective_depth_s_bar() -> sp.Expr:
    from amutheory.symbolic.primitives.expansion import mean_moment as chain_mean_moment

    return sp.expand(chain_mean_moment(False).subs(L, effective_depth_of_blocks(L)))


def effective_depth_law(spec: ArchSpec) -> ScalingLaw:
    """The chain law in the effective depth ``2K + 2`` (``L`` of the law = ``K`` blocks)."""
    _check_transformer(spec)
    from amutheory.symbolic.primitives.symbols import a, b, e, epsilon

    return ScalingLaw(_effective_depth_s_bar(), (a, b, e, epsilon), list(EFFECTIVE_DEPTH_ASSUMPTIONS),
                      f"transformer-{spec.activation}-effective-depth")


def transformer_law(spec: ArchSpec) -> ScalingLaw:
    """The coherent leading-order law of a pre-LN ``spec`` (ValueError for ``init="none"``)."""
    _check_transformer(spec)
    if spec.init == "none":
        raise ValueError("init='none': the pre-LN stream grows like K and LN reweights every block by "
                         "1/q_(i-1); the coherent leading order gives eta* ~ K^0 with digamma corrections, "
                         "which is not returned in closed form (measure it; compare effective_depth_law)")
    name = f"transformer-{spec.init}-{spec.activation}"
    return ScalingLaw(mean_moment("conv-mlp", spec.init), CONSTANTS, list(ASSUMPTIONS), name)
