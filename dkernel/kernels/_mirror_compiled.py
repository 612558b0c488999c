"""The mirror of a dense Gram's upper triangle onto its lower one, compiled at install time.

A Gram evaluated as one BLAS product holds both triangles, which rounding
may make differ in the last bit; copying the upper triangle onto the lower
makes it exactly symmetric. In NumPy the copy within a diagonal block is a
fancy index (a gather and a scatter through index arrays): 0.44 ms for a
249-sample Gram, a seventh of a tiny fit. The compiled loop
(:mod:`_dkernel_compiled.mirror`) goes over tiles of :data:`MIRROR_TILE`
rows and columns, each read along its rows and written along the columns of
its mirror while both are in cache.
"""

from _dkernel_compiled.mirror import MIRROR_TILE, mirror_upper_into_lower

__all__ = ["MIRROR_TILE", "mirror_upper_into_lower"]
