"""Shared primitives of the symbolic side: the symbols, the one-step expansion's moments, planar
pairings (scalar and kernel-valued), the seed spread, the :class:`ScalingLaw` container and the
width rules.  Every family (``chain``, ``resnet``, ``transformer``) builds on these."""
