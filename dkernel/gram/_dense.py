"""A symmetric Gram matrix computed into one contiguous in-memory array.

The solver reads scattered rows of K many times; one C-contiguous ``n × n``
array makes each read a plain fancy index. Up to :data:`BAND_ROWS` samples
the Gram is one BLAS product evaluated straight into the array, with no task
graph: a single band has nothing to run in parallel, and a graph costs more
than a small Gram. Above, row bands of the upper triangle are evaluated by
a pool of threads (BLAS and the element-wise maps release the GIL)
and written in place, each band also writing its mirrored column strip below
the diagonal: half the kernel work and no second copy of K. Either way BLAS
runs one thread per evaluation (:class:`~dkernel._runtime.threads.BlasThreads`).

Memory
------
A whole Gram is written once, then read many times; its first write touches
every page. With 4 KiB pages that is one page fault per 4 KiB, and on a
virtual machine a fault costs microseconds: a 12000² float32 Gram (576 MB)
spends about 0.75 s faulting, longer than evaluating its kernel. Anonymous
memory mapped with ``MADV_HUGEPAGE`` is faulted 2 MiB at a time (0.16 s for
the same array). NumPy asks for huge pages on its own large allocations, but
through ``malloc``, whose mappings do not start on a 2 MiB boundary, and the
kernel then gives none; a mapping of our own does (:func:`empty_gram`).
Nothing is kept from one array to the next: the mapping is unmapped with
the last view of its array.
"""

import mmap
import os

import numpy as np

from .._runtime.progress import TextProgress
from .._runtime.threads import BlasThreads

__all__ = ["HUGE_PAGE_MIN_BYTES", "dense_symmetric_gram", "empty_gram", "mirror_upper_triangle", "run_bands"]

#: Rows per band; small enough that bands balance over the threads. A Gram of
#: at most this many samples is evaluated directly, without a task graph.
BAND_ROWS = 1024

#: Rows of the sub-bands of a band's diagonal block (:func:`_evaluate_band`).
DIAGONAL_ROWS = 256

#: Arrays of at least this many bytes are mappings of their own, on huge pages (:func:`empty_gram`).
HUGE_PAGE_MIN_BYTES = 2**23

_HUGE_PAGE_BYTES = 2**21


def empty_gram(shape, dtype=np.float64):
    """An uninitialized C-contiguous array, on transparent huge pages where it is large enough and the OS allows.

    From :data:`HUGE_PAGE_MIN_BYTES` the memory is an anonymous private
    mapping advised ``MADV_HUGEPAGE``, unmapped when the array and every view
    of it are gone; smaller arrays, and every array where the platform has no
    ``MADV_HUGEPAGE`` (macOS, Windows) or refuses the mapping, come from
    :func:`numpy.empty`.

    Examples
    --------
    >>> K = empty_gram((4096, 4096), np.float32)
    >>> K.shape, K.dtype, K.flags.c_contiguous, K.flags.writeable
    ((4096, 4096), dtype('float32'), True, True)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if nbytes < HUGE_PAGE_MIN_BYTES or advice is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=dtype)
    length = -(-nbytes // _HUGE_PAGE_BYTES) * _HUGE_PAGE_BYTES
    try:
        mapping = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mapping.madvise(advice)
    except (OSError, ValueError):
        return np.empty(shape, dtype=dtype)
    # The array holds the mapping (its buffer's owner): it is unmapped when the last view of the array is gone.
    return np.frombuffer(mapping, dtype=dtype, count=nbytes // dtype.itemsize).reshape(shape)


def mirror_upper_triangle(K):
    """Copy the strict upper triangle of the square ``K`` onto the lower one, in place: ``K`` exactly symmetric.

    Compiled (:func:`dkernel.kernels._mirror_compiled.mirror_upper_into_lower`); ``K`` may be a view (a band's
    diagonal block).
    """
    from ..kernels._mirror_compiled import mirror_upper_into_lower

    mirror_upper_into_lower(K)
    return K


def _evaluate_whole(X, kernel, dtype):
    """``K(X, X)`` as one symmetric block, written straight into the array."""
    n = X.shape[0]
    K = empty_gram((n, n), dtype)
    kernel.evaluate_into(X, X, K, symmetric=True)
    # Exact symmetry: rounding may differ between K_ij and K_ji.
    return mirror_upper_triangle(K)


def _evaluate_band(K, X, kernel, start, stop):
    """Write rows ``start:stop`` of the upper triangle and their mirror below the diagonal.

    The band's diagonal block is itself evaluated in sub-bands of
    :data:`DIAGONAL_ROWS` rows, so that of its lower triangle only the small
    diagonal blocks are computed (and overwritten by the mirror).
    """
    for a in range(start, stop, DIAGONAL_ROWS):
        b = min(a + DIAGONAL_ROWS, stop)
        K[a:b, a:b] = kernel.block(X[a:b], X[a:b], symmetric=True)
        # Exact symmetry of the diagonal block: rounding may differ between K_ij and K_ji.
        mirror_upper_triangle(K[a:b, a:b])
        if b < stop:
            kernel.evaluate_mirrored_into(X[a:b], X[b:stop], K, a, b)
    if stop < K.shape[0]:
        kernel.evaluate_mirrored_into(X[start:stop], X[stop:], K, start, stop)


def dense_symmetric_gram(X, kernel, *, dtype=np.float64, band_rows=BAND_ROWS, num_workers=None, progress=False,
                         blas=None):
    """``K(X, X)`` as one C-contiguous ndarray, evaluating only the blocks on and above the diagonal.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated data (see :func:`dkernel._runtime.validation.check_data`).
    kernel : Kernel
        A kernel with its data-dependent parameters resolved.
    dtype : numpy dtype, default=float64
        Dtype of the Gram; the kernel is evaluated in the wider of it and the data's dtype.
    band_rows : int, default=1024
    num_workers : int, default=None
        Threads evaluating the bands (default: the number of cores).
    progress : bool, default=False
        Show the bands done on stderr (:class:`dkernel._runtime.progress.TextProgress`: an
        updating bar on a terminal, plain lines every few seconds otherwise).
    blas : BlasThreads, default=None
        The BLAS libraries of the computation this Gram is part of (a fit); a new one when None.

    Returns
    -------
    ndarray of shape (n, n)
        Exactly symmetric.
    """
    n = X.shape[0]
    # The kernel is evaluated in the wider of the two precisions (float64 data, float32 Gram: squared
    # distances without float32's cancellation), then stored in ``dtype``.
    X = X.astype(np.result_type(X.dtype, dtype), copy=False)
    blas = blas or BlasThreads()
    if n <= band_rows:
        bar = TextProgress(1, "row bands of the Gram", enabled=progress)
        try:
            with blas.single():
                K = _evaluate_whole(X, kernel, dtype)
            bar.update(1)
        finally:
            bar.close()
        return K
    return _banded_gram(X, kernel, dtype, band_rows, num_workers, progress, blas)


def _banded_gram(X, kernel, dtype, band_rows, num_workers, progress, blas):
    """The Gram of :func:`dense_symmetric_gram` from row bands computed in parallel by a pool of threads.

    The bands are independent and write disjoint parts of ``K``: a thread
    pool runs them without the graph, tokenizing and first-call imports of a
    Dask scheduler (half a second in a fresh process, more than the Gram of
    a few thousand samples). The widest bands (the first) start first.
    """
    n = X.shape[0]
    K = empty_gram((n, n), dtype)
    run_bands(lambda start: _evaluate_band(K, X, kernel, start, min(start + band_rows, n)),
              range(0, n, band_rows), num_workers or os.cpu_count() or 1, "row bands of the Gram", progress, blas)
    return K


def run_bands(band, starts, threads, description, progress=False, blas=None):
    """``band(start)`` for each of ``starts`` (the first first) on a pool of ``threads`` threads, one BLAS thread
    each (the bands themselves run in parallel; ``blas``: a :class:`BlasThreads`, a new one when None), the bands
    done shown on a bar (:class:`TextProgress`)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    bar = TextProgress(len(starts), description, enabled=progress)
    try:
        with (blas or BlasThreads()).single(), ThreadPoolExecutor(max_workers=max(1, min(threads, len(starts)))) as pool:
            for done, finished in enumerate(as_completed([pool.submit(band, start) for start in starts]), 1):
                finished.result()
                bar.update(done)
    finally:
        bar.close()
