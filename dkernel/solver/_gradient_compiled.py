"""The gradient step ``G += y (K_B^T w)`` compiled, outside the GIL: one order of summation for every partition.

The gradient of a problem solved in this process
(:class:`~._shrinking.ShrinkingGradients`, reading the working set's rows
where they lie) and that of the partitions on Dask workers
(:class:`~._gradient.GradientPartition`, over their copies of those rows)
sum the same products in the same order, so both select the same working
sets to the bit.
"""

import numpy as np

from .._runtime.jit import njit

__all__ = ["add_gradient_step", "weighted_rows_step"]


@njit(cache=True, nogil=True)
def weighted_rows_step(M, positions, weights, columns, all_columns, step):
    """``step[a] = sum_s weights[s] M[positions[s], columns[a]]`` in float64 over the rows of nonzero weight.

    Each row is read once, in place (float32 or float64); ``all_columns``:
    ``columns`` is ``0 .. step.size - 1`` and the rows are read contiguously.
    """
    step[:] = 0.0
    for s in range(positions.size):
        w = weights[s]
        if w == 0.0 or positions[s] < 0:
            continue
        row = M[positions[s]]
        if all_columns:
            for a in range(step.size):
                step[a] += w * row[a]
        else:
            for a in range(step.size):
                step[a] += w * row[columns[a]]


@njit(cache=True, nogil=True)
def add_gradient_step(G, y, active, step):
    """``G[active] += y[active] * step``; whether ``step`` is finite."""
    finite = True
    for a in range(active.size):
        i = active[a]
        G[i] += y[i] * step[a]
        finite &= np.isfinite(step[a])
    return finite
