"""The selection of :mod:`._select` over the active variables of one process, compiled.

:meth:`~._shrinking.ShrinkingGradients.candidates` runs once per outer
iteration. With NumPy it is some twenty calls on arrays of a few thousand
values, each holding the GIL: the binary problems of a one-vs-one fit, solved
in parallel threads, then wait on each other for it (USPS, 45 problems of
about 1500 samples, solved no faster on two threads than on one). Here it is
one call that releases the GIL, with the same result to the bit and in the
same order as :func:`~._select.violation_sets`,
:func:`~._select.extreme_violations` and :func:`~._select.candidate_lists`
(ties broken by the sample index), which tests check.
"""

import numpy as np

from .._numba import njit

__all__ = ["active_candidates"]


@njit(cache=True, nogil=True)
def _most_extreme(keys, k):
    """Positions of the ``k`` smallest ``keys``, in order, ties by position (:func:`~._select.top_k`)."""
    n = keys.size
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    if k < n:
        threshold = np.partition(keys, k - 1)[k - 1]
        pool = np.flatnonzero(keys <= threshold)
    else:
        pool = np.arange(n)
    order = np.argsort(keys[pool], kind="mergesort")[:k]  # stable: ties keep the position order
    return pool[order]


@njit(cache=True, nogil=True)
def active_candidates(alpha, y, C, G, active, k):
    """``(m, M, up_idx, up_v, low_idx, low_v)`` over the variables ``active`` (sorted global indices).

    ``v_i = -y_i G_i``; ``m`` the largest ``v`` over ``I_up``, ``M`` the
    smallest over ``I_low`` (Fan, Chen & Lin 2005, eq. 6); the ``k`` most
    violating variables of each end, most violating first, as global indices
    with their ``v``.
    """
    n = active.size
    v = np.empty(n)
    up = np.empty(n, dtype=np.bool_)
    low = np.empty(n, dtype=np.bool_)
    m, M = -np.inf, np.inf
    for a in range(n):
        i = active[a]
        below_upper = alpha[i] < C[i]
        above_lower = alpha[i] > 0
        positive = y[i] > 0
        up[a] = below_upper if positive else above_lower
        low[a] = above_lower if positive else below_upper
        v[a] = -y[i] * G[i]
        if up[a]:
            m = max(m, v[a])
        if low[a]:
            M = min(M, v[a])
    up_pos = np.flatnonzero(up)
    low_pos = np.flatnonzero(low)
    up_sel = up_pos[_most_extreme(-v[up_pos], k)]
    low_sel = low_pos[_most_extreme(v[low_pos], k)]
    return m, M, active[up_sel], v[up_sel], active[low_sel], v[low_sel]
