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

The scan is one pass that keeps the ``k`` most violating variables of each
end sorted as it goes: past the first few hundred variables a new one
rarely beats the ``k``-th, so the pass costs a comparison per variable
where a partition and a sort cost several passes and arrays (0.13 ms
against 0.47 ms over 12000 variables, ``k = 64``, on this machine). Above
:data:`INSERTION_MAX_K` the partition is kept: an insertion costs ``O(k)``.
"""

import numpy as np

from .._numba import njit

__all__ = ["INSERTION_MAX_K", "active_candidates"]

#: Largest ``k`` for which the scan keeps the ``k`` most violating variables by insertion.
INSERTION_MAX_K = 256


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
def _insert_sorted(keys, positions, key, position):
    """Insert ``key`` into the ascending ``keys`` (dropping the last), after the keys equal to it."""
    j = keys.size - 1
    while j > 0 and keys[j - 1] > key:
        keys[j] = keys[j - 1]
        positions[j] = positions[j - 1]
        j -= 1
    keys[j] = key
    positions[j] = position


@njit(cache=True, nogil=True)
def active_candidates(alpha, y, C, G, active, k):
    """``(m, M, up_idx, up_v, low_idx, low_v)`` over the variables ``active`` (sorted global indices).

    ``v_i = -y_i G_i``; ``m`` the largest ``v`` over ``I_up``, ``M`` the
    smallest over ``I_low`` (Fan, Chen & Lin 2005, eq. 6); the ``k`` most
    violating variables of each end, most violating first, as global indices
    with their ``v``.
    """
    if min(k, active.size) > INSERTION_MAX_K:
        return _candidates_by_partition(alpha, y, C, G, active, k)
    slots = max(1, min(k, active.size))
    up_key, low_key = np.full(slots, np.inf), np.full(slots, np.inf)  # -v over I_up, v over I_low, ascending
    up_at, low_at = np.zeros(slots, dtype=np.intp), np.zeros(slots, dtype=np.intp)
    m, M = -np.inf, np.inf
    for a in range(active.size):
        i = active[a]
        below_upper = alpha[i] < C[i]
        above_lower = alpha[i] > 0
        positive = y[i] > 0
        up = below_upper if positive else above_lower
        low = above_lower if positive else below_upper
        v = -y[i] * G[i]
        up_k = -v if up else np.inf
        low_k = v if low else np.inf
        m = max(m, -up_k)
        M = min(M, low_k)
        if up_k < up_key[slots - 1]:
            _insert_sorted(up_key, up_at, up_k, i)
        if low_k < low_key[slots - 1]:
            _insert_sorted(low_key, low_at, low_k, i)
    n_up = 0 if k <= 0 else np.searchsorted(up_key, np.inf)
    n_low = 0 if k <= 0 else np.searchsorted(low_key, np.inf)
    return m, M, up_at[:n_up].copy(), -up_key[:n_up], low_at[:n_low].copy(), low_key[:n_low].copy()


@njit(cache=True, nogil=True)
def _candidates_by_partition(alpha, y, C, G, active, k):
    """:func:`active_candidates` by a partition and a stable sort of each end (large ``k``)."""
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
