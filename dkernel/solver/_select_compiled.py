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

Over many active variables (:data:`HEAP_MIN_ACTIVE` or more) the scan is
one pass that keeps the ``k`` most violating variables of each end in a
bounded heap: past the first few hundred variables a new one rarely beats
the ``k``-th kept, so the pass costs about a comparison per variable, and
``O(log k)`` where one does (variables in the worst order). Measured over
12000 variables, ``k = 128``: 0.24 ms against 0.36 ms for a partition
and a sort of each end in random order, 0.56 ms against 0.12 ms in the
worst order. Over fewer variables (the problems of a one-vs-one fit) the
partition is faster (25 µs against 31 µs over 1460) and is kept, as it is
for ``k`` above :data:`HEAP_MAX_K`.
"""

import numpy as np

from .._runtime.jit import njit

__all__ = ["HEAP_MAX_K", "HEAP_MIN_ACTIVE", "active_candidates"]

#: Active variables from which the candidates are kept in a bounded heap during the scan.
HEAP_MIN_ACTIVE = 8192

#: Largest ``k`` kept in a bounded heap.
HEAP_MAX_K = 256


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
def _after(key_a, at_a, key_b, at_b):
    """Whether ``(key_a, at_a)`` comes after ``(key_b, at_b)``: a larger key, or an equal key at a later index."""
    return key_a > key_b or (key_a == key_b and at_a > at_b)


@njit(cache=True, nogil=True)
def _keep_smallest(keys, at, size, key, position):
    """Keep ``(key, position)`` in the max-heap ``keys, at`` of the ``keys.size`` smallest pairs; the new size."""
    capacity = keys.size
    if size < capacity:  # not full: sift the new pair up from the end
        j = size
        while j > 0 and _after(key, position, keys[(j - 1) // 2], at[(j - 1) // 2]):
            keys[j], at[j] = keys[(j - 1) // 2], at[(j - 1) // 2]
            j = (j - 1) // 2
        keys[j], at[j] = key, position
        return size + 1
    if not _after(keys[0], at[0], key, position):  # not smaller than the largest kept
        return size
    j = 0  # replace the largest kept: sift the new pair down from the root
    while 2 * j + 1 < capacity:
        child = 2 * j + 1
        if child + 1 < capacity and _after(keys[child + 1], at[child + 1], keys[child], at[child]):
            child += 1
        if not _after(keys[child], at[child], key, position):
            break
        keys[j], at[j] = keys[child], at[child]
        j = child
    keys[j], at[j] = key, position
    return size


@njit(cache=True, nogil=True)
def _in_order(keys, at, size):
    """The kept pairs by key, ties by index: sorted by index, then stably by key."""
    by_index = np.argsort(at[:size])
    keys, at = keys[:size][by_index], at[:size][by_index]
    by_key = np.argsort(keys, kind="mergesort")
    return keys[by_key], at[by_key]


@njit(cache=True, nogil=True)
def active_candidates(alpha, y, C, G, active, k):
    """``(m, M, up_idx, up_v, low_idx, low_v)`` over the variables ``active`` (sorted global indices).

    ``v_i = -y_i G_i``; ``m`` the largest ``v`` over ``I_up``, ``M`` the
    smallest over ``I_low`` (Fan, Chen & Lin 2005, eq. 6); the ``k`` most
    violating variables of each end, most violating first, as global indices
    with their ``v``.
    """
    if k <= 0 or k > HEAP_MAX_K or active.size < HEAP_MIN_ACTIVE:
        return _candidates_by_partition(alpha, y, C, G, active, k)
    slots = min(k, active.size)
    up_key, low_key = np.empty(slots), np.empty(slots)  # -v over I_up, v over I_low: the smallest kept
    up_at, low_at = np.empty(slots, dtype=np.intp), np.empty(slots, dtype=np.intp)
    n_up = n_low = 0
    m, M = -np.inf, np.inf
    for a in range(active.size):
        i = active[a]
        below_upper = alpha[i] < C[i]
        above_lower = alpha[i] > 0
        positive = y[i] > 0
        v = -y[i] * G[i]
        if below_upper if positive else above_lower:  # I_up
            m = max(m, v)
            n_up = _keep_smallest(up_key, up_at, n_up, -v, i)
        if above_lower if positive else below_upper:  # I_low
            M = min(M, v)
            n_low = _keep_smallest(low_key, low_at, n_low, v, i)
    up_key, up_at = _in_order(up_key, up_at, n_up)
    low_key, low_at = _in_order(low_key, low_at, n_low)
    return m, M, up_at, -up_key, low_at, low_key


@njit(cache=True, nogil=True)
def _candidates_by_partition(alpha, y, C, G, active, k):
    """:func:`active_candidates` by a partition and a stable sort of each end (few variables, or large ``k``)."""
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
