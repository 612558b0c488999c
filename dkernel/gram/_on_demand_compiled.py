"""The rest of an on-demand Gram's rows, written around the rows already computed: compiled, outside the GIL.

Rows computed on demand fill the first rows of the on-demand Gram's matrix
``M`` (in the order they were computed, each over all columns). The row of a
remaining sample ``u`` then needs its values at the columns of the samples
computed, which the Gram's symmetry gives from their rows (``K[u, s] =
K[s, u]``, :func:`copy_computed_columns`): copied, not computed again, for
the solver has read those values already and a value computed in another
block may differ in the last bit (:func:`dkernel.kernels._blocks.dot_block`). Its
values at the columns of the remaining samples come from their Gram,
computed tile by tile, each tile written with its mirror
(:func:`write_remaining_tile`). Both are loops compiled at install time
(:mod:`_dkernel_compiled.on_demand`): gathers and scatters through index
arrays, which threads run on bands of rows in parallel.
"""

from _dkernel_compiled.on_demand import (
    TILE,
    copy_computed_columns,
    write_remaining_tile,
)

__all__ = ["TILE", "copy_computed_columns", "write_remaining_tile"]
