# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The working-set candidates over the active variables: :mod:`dkernel.solver._select` in one call.

``m``, ``M`` and the ``k`` most violating variables of each end, to the bit
and in the order of the NumPy selection (ties broken by the sample index):
over many active variables (:data:`HEAP_MIN_ACTIVE` or more) in one pass that
keeps them in a bounded heap; over fewer, or for ``k`` above
:data:`HEAP_MAX_K`, by a quickselect of each end and a sort of its ``k``
first. Compiled to replace some twenty NumPy calls that each hold the GIL
while the binary problems of a one-vs-one fit run in threads. Used through
:mod:`dkernel.solver._select_compiled`.
"""

from libc.math cimport INFINITY, isnan
from libc.stdlib cimport calloc, free, qsort

import numpy as np

__all__ = ["HEAP_MAX_K", "HEAP_MIN_ACTIVE", "active_candidates"]

#: Active variables from which the candidates are kept in a bounded heap during the scan.
HEAP_MIN_ACTIVE = 8192

#: Largest ``k`` kept in a bounded heap.
HEAP_MAX_K = 256


cdef struct Kept:
    double key  # -v over I_up, v over I_low: the smallest are the most violating
    Py_ssize_t at


cdef inline bint _after(double key_a, Py_ssize_t at_a, double key_b, Py_ssize_t at_b) noexcept nogil:
    """Whether ``(key_a, at_a)`` comes after ``(key_b, at_b)``: a larger key, or an equal key at a later index."""
    return (key_a > key_b) | ((key_a == key_b) & (at_a > at_b))


cdef inline bint _before(const Kept *a, const Kept *b) noexcept nogil:
    """The order of a stable sort by key of pairs in index order (NumPy's: a NaN key after every other)."""
    if a.key < b.key:
        return True
    if a.key > b.key:
        return False
    if a.key == b.key or (isnan(a.key) and isnan(b.key)):
        return a.at < b.at
    return isnan(b.key)


cdef int _compare(const void *a, const void *b) noexcept nogil:
    if _before(<const Kept *>a, <const Kept *>b):
        return -1
    return 1 if _before(<const Kept *>b, <const Kept *>a) else 0


cdef Py_ssize_t _keep_smallest(Kept *heap, Py_ssize_t capacity, Py_ssize_t size, double key,
                               Py_ssize_t position) noexcept nogil:
    """Keep ``(key, position)`` in the max-heap of the ``capacity`` smallest pairs; the new size."""
    cdef Py_ssize_t j, child
    if size < capacity:  # not full: sift the new pair up from the end
        j = size
        while j > 0 and _after(key, position, heap[(j - 1) // 2].key, heap[(j - 1) // 2].at):
            heap[j] = heap[(j - 1) // 2]
            j = (j - 1) // 2
        heap[j].key, heap[j].at = key, position
        return size + 1
    if not _after(heap[0].key, heap[0].at, key, position):  # not smaller than the largest kept
        return size
    j = 0  # replace the largest kept: sift the new pair down from the root
    while 2 * j + 1 < capacity:
        child = 2 * j + 1
        if child + 1 < capacity and _after(heap[child + 1].key, heap[child + 1].at, heap[child].key, heap[child].at):
            child += 1
        if not _after(heap[child].key, heap[child].at, key, position):
            break
        heap[j] = heap[child]
        j = child
    heap[j].key, heap[j].at = key, position
    return size


cdef Py_ssize_t _most_extreme(Kept *pairs, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """The ``k`` smallest ``pairs`` moved to the front, in order; how many (``dkernel.solver._select.top_k``).

    A quickselect of the ``k``-th pair, then a sort of those before it. As
    NumPy's partition at the ``k``-th key and stable sort of the keys at or
    below it: none where that key is NaN.
    """
    cdef Py_ssize_t lo = 0, hi = n - 1, mid, i, j
    cdef Kept pivot, swap
    k = min(k, n)
    if k <= 0:
        return 0
    while k < n and hi > lo:
        mid = lo + (hi - lo) // 2  # the median of three as the pivot
        if _before(&pairs[mid], &pairs[lo]):
            pairs[mid], pairs[lo] = pairs[lo], pairs[mid]
        if _before(&pairs[hi], &pairs[lo]):
            pairs[hi], pairs[lo] = pairs[lo], pairs[hi]
        if _before(&pairs[hi], &pairs[mid]):
            pairs[hi], pairs[mid] = pairs[mid], pairs[hi]
        pivot = pairs[mid]
        i, j = lo, hi
        while i <= j:
            while _before(&pairs[i], &pivot):
                i += 1
            while _before(&pivot, &pairs[j]):
                j -= 1
            if i <= j:
                swap = pairs[i]
                pairs[i] = pairs[j]
                pairs[j] = swap
                i += 1
                j -= 1
        if k - 1 <= j:
            hi = j
        elif k - 1 >= i:
            lo = i
        else:
            break
    qsort(pairs, k, sizeof(Kept), _compare)
    if k < n and isnan(pairs[k - 1].key):
        return 0
    return k


cdef struct Ends:
    double m  # the largest v over I_up
    double M  # the smallest v over I_low
    Py_ssize_t n_up
    Py_ssize_t n_low


cdef bint _scan(const double[:] alpha, const double[:] y, const double[:] C, const double[:] G,
                const Py_ssize_t[::1] active, Py_ssize_t k, bint heap, Kept *up, Kept *low, Ends *ends) noexcept nogil:
    """One pass over the active variables: ``m``, ``M`` and each end's pairs (all, or the ``k`` kept in a heap).

    A pair's ``at`` is the variable's global index in the heap, its position
    in ``active`` otherwise. False where ``up`` or ``low`` could not be had,
    or at an active index outside the problem (``ends.n_up = -1``). Which end
    a variable belongs to is as good as random: it is computed without
    branches, and the pass branches only where a variable enters a heap.
    """
    cdef Py_ssize_t a, i, n = active.shape[0], bound = min(alpha.shape[0], y.shape[0], C.shape[0], G.shape[0])
    cdef Py_ssize_t n_up = 0, n_low = 0
    cdef bint below_upper, above_lower, positive, in_up, in_low
    cdef double v, m = -INFINITY, M = INFINITY
    ends.m, ends.M, ends.n_up, ends.n_low = m, M, 0, 0
    if up == NULL or low == NULL:
        return False
    for a in range(n):
        i = active[a]
        if not 0 <= i < bound:
            ends.n_up = -1
            return False
        below_upper = alpha[i] < C[i]
        above_lower = alpha[i] > 0
        positive = y[i] > 0
        v = -y[i] * G[i]
        in_up = (positive & below_upper) | ((not positive) & above_lower)  # I_up
        in_low = (positive & above_lower) | ((not positive) & below_upper)  # I_low
        m = v if in_up & (v > m) else m
        M = v if in_low & (v < M) else M
        if heap:
            if in_up & ((n_up < k) | _after(up[0].key, up[0].at, -v, i)):
                n_up = _keep_smallest(up, k, n_up, -v, i)
            if in_low & ((n_low < k) | _after(low[0].key, low[0].at, v, i)):
                n_low = _keep_smallest(low, k, n_low, v, i)
        else:  # written at the end of each list, which grows where the variable is in it
            up[n_up].key, up[n_up].at = -v, a
            n_up += in_up
            low[n_low].key, low[n_low].at = v, a
            n_low += in_low
    if heap:
        qsort(up, n_up, sizeof(Kept), _compare)
        qsort(low, n_low, sizeof(Kept), _compare)
    else:
        n_up = _most_extreme(up, n_up, k)
        n_low = _most_extreme(low, n_low, k)
    ends.m, ends.M, ends.n_up, ends.n_low = m, M, n_up, n_low
    return True


def active_candidates(const double[:] alpha, const double[:] y, const double[:] C, const double[:] G,
                      const Py_ssize_t[::1] active, Py_ssize_t k):
    """``(m, M, up_idx, up_v, low_idx, low_v)`` over the variables ``active`` (sorted global indices).

    ``v_i = -y_i G_i``; ``m`` the largest ``v`` over ``I_up``, ``M`` the
    smallest over ``I_low`` (Fan, Chen & Lin 2005, eq. 6); the ``k`` most
    violating variables of each end, most violating first, as global indices
    with their ``v``.
    """
    cdef Py_ssize_t n = active.shape[0], a, slots
    cdef bint heap = 0 < k <= HEAP_MAX_K and n >= HEAP_MIN_ACTIVE
    cdef bint scanned
    cdef Kept *up
    cdef Kept *low
    cdef Ends ends
    slots = max(0, min(k, n))
    up_idx, low_idx = np.empty(slots, dtype=np.intp), np.empty(slots, dtype=np.intp)
    up_v, low_v = np.empty(slots), np.empty(slots)
    cdef Py_ssize_t[::1] up_idx_, low_idx_
    cdef double[::1] up_v_, low_v_
    up_idx_, low_idx_, up_v_, low_v_ = up_idx, low_idx, up_v, low_v
    with nogil:
        up = <Kept *>calloc(max(1, slots if heap else n), sizeof(Kept))
        low = <Kept *>calloc(max(1, slots if heap else n), sizeof(Kept))
        scanned = _scan(alpha, y, C, G, active, slots, heap, up, low, &ends)
        if scanned:
            for a in range(ends.n_up):
                up_idx_[a] = up[a].at if heap else active[up[a].at]
                up_v_[a] = -up[a].key
            for a in range(ends.n_low):
                low_idx_[a] = low[a].at if heap else active[low[a].at]
                low_v_[a] = low[a].key
        free(up)
        free(low)
    if not scanned and ends.n_up < 0:
        raise IndexError(f"an active variable is out of bounds for a problem of {alpha.shape[0]} variables")
    if not scanned:
        raise MemoryError(f"no memory for the candidates among {n} active variables")
    return ends.m, ends.M, up_idx[: ends.n_up], up_v[: ends.n_up], low_idx[: ends.n_low], low_v[: ends.n_low]
