"""The gradient step ``G += y (K_B^T w)`` compiled, outside the GIL: one order of summation for every partition.

The gradient of a problem solved in this process
(:class:`~._shrinking.ShrinkingGradients`, reading the working set's rows
where they lie) and that of the partitions on Dask workers
(:class:`~._gradient.GradientPartition`, over their copies of those rows)
sum the same products in the same order, so both select the same working
sets to the bit. The loops, and the gather of the working set's block
(:func:`gather_block_into`), are compiled at install time
(:mod:`_dkernel_compiled.gradient`).
"""

from _dkernel_compiled.gradient import (
    add_gradient_step,
    gather_block_into,
    weighted_rows_step,
)

__all__ = ["add_gradient_step", "gather_block_into", "weighted_rows_step"]
