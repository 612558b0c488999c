"""A symmetric Gram matrix computed into one contiguous in-memory array.

The solver reads scattered rows of K many times; one C-contiguous ``n × n``
array makes each read a plain fancy index. Up to :data:`BAND_ROWS` samples
the Gram is one BLAS product evaluated straight into the array, with no task
graph: a single band has nothing to run in parallel, and a graph costs more
than a small Gram. Above, row bands of the upper triangle are evaluated by
a pool of threads (BLAS and the element-wise maps release the GIL)
and written in place, each band also writing its mirrored column strip below
the diagonal: half the kernel work and no second copy of K. Either way BLAS
runs one thread per evaluation (:class:`~dkernel._runtime.threads.BlasThreads`). A process's
first Gram faults in its memory and computes band products while the compiled
map loads (:func:`_while_compiled_code_loads`).
"""

import contextlib
import os
import sys
import threading

import numpy as np

from .._runtime.memory import empty_on_huge_pages, fault_in
from .._runtime.progress import TextProgress
from .._runtime.threads import BlasThreads

__all__ = ["dense_symmetric_gram", "mirror_upper_triangle", "run_bands"]

#: Rows per band; small enough that bands balance over the threads. A Gram of
#: at most this many samples is evaluated directly, without a task graph.
BAND_ROWS = 1024

#: Rows of the sub-bands of a band's diagonal block (:func:`_evaluate_band`).
DIAGONAL_ROWS = 256

#: Bytes of products computed ahead while the compiled map loads (:func:`_while_compiled_code_loads`).
PRODUCTS_AHEAD_BYTES = 256 * 2**20

def mirror_upper_triangle(K):
    """Copy the strict upper triangle of the square ``K`` onto the lower one, in place: ``K`` exactly symmetric.

    Compiled (:func:`dkernel.kernels._mirror_compiled.mirror_upper_into_lower`); ``K`` may be a view (a band's
    diagonal block).
    """
    from ..kernels._mirror_compiled import mirror_upper_into_lower

    mirror_upper_into_lower(K)
    return K


def _evaluate_whole(X, kernel, dtype):
    """``K(X, X)`` as one symmetric block, written straight into the array where the kernel can."""
    n = X.shape[0]
    K = empty_on_huge_pages((n, n), dtype)
    if not kernel.evaluate_into(X, X, K, symmetric=True):
        K[...] = kernel.block(X, X, symmetric=True)
    # Exact symmetry: rounding may differ between K_ij and K_ji.
    return mirror_upper_triangle(K)


def _evaluate_off_diagonal(K, X, kernel, start, stop, end, products=None):
    """Write ``K[start:stop, stop:end]`` (above the diagonal) and its mirror ``K[stop:end, start:stop]``
    (from their ``products`` where computed before: :func:`_while_compiled_code_loads`)."""
    if stop < end and not kernel.evaluate_mirrored_into(X[start:stop], X[stop:end], K, start, stop,
                                                        products=products):
        right = kernel.block(X[start:stop], X[stop:end])
        K[start:stop, stop:end] = right
        K[stop:end, start:stop] = right.T


def _evaluate_band(K, X, kernel, start, stop, products=None):
    """Write rows ``start:stop`` of the upper triangle and their mirror below the diagonal.

    The band's diagonal block is itself evaluated in sub-bands of
    :data:`DIAGONAL_ROWS` rows, so that of its lower triangle only the small
    diagonal blocks are computed (and overwritten by the mirror). ``products``:
    those of the band with the columns right of it, computed before.
    """
    for a in range(start, stop, DIAGONAL_ROWS):
        b = min(a + DIAGONAL_ROWS, stop)
        K[a:b, a:b] = kernel.block(X[a:b], X[a:b], symmetric=True)
        # Exact symmetry of the diagonal block: rounding may differ between K_ij and K_ji.
        mirror_upper_triangle(K[a:b, a:b])
        _evaluate_off_diagonal(K, X, kernel, a, b, stop)
    _evaluate_off_diagonal(K, X, kernel, start, stop, K.shape[0], products)


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
    K = empty_on_huge_pages((n, n), dtype)
    ahead = _while_compiled_code_loads(K, X, kernel, band_rows, blas)
    run_bands(lambda start: _evaluate_band(K, X, kernel, start, min(start + band_rows, n), ahead.pop(start, None)),
              range(0, n, band_rows), num_workers or os.cpu_count() or 1, "row bands of the Gram", progress, blas)
    return K


def _while_compiled_code_loads(K, X, kernel, band_rows, blas=None):
    """Where the compiled code that maps the kernel's products is not loaded yet (a process's first Gram), load it
    on another thread (:func:`_load_compiled_map`) and meanwhile fault in ``K``'s pages and compute the products of
    the widest bands on this one; ``{band start: the band's products with the columns right of it}``.

    Importing numba and loading its compiled code from the cache takes about
    0.6 s, most of it numba's own registries built on a process's first call
    of compiled code; neither the first writes of fresh memory (about 1 ms per
    MB here) nor the BLAS products need it. The products are computed, the
    widest bands first, for as long as the loading runs and up to
    :data:`PRODUCTS_AHEAD_BYTES` in all;
    they have the bits of the tiles they replace
    (:func:`dkernel.kernels._products.dot_block`). Empty, and nothing done, where
    the kernel maps without compiled code or it is loaded already.

    The BLAS libraries (:meth:`BlasThreads.controller`: threadpoolctl reads the
    path of each library loaded, in Python) is found before the loading
    starts: beside numba's imports, which hold the GIL, it took 0.15 s of a
    fresh USPS fit instead of 0.02 s.
    """
    module = kernel.mirrored_compiled_module(X)
    if module is None or module in sys.modules:
        return {}
    blas = blas or BlasThreads()
    blas.controller()
    loading = threading.Thread(target=_load_compiled_map, args=(kernel, X, K.dtype),
                               name="dkernel-load-compiled", daemon=True)
    loading.start()
    fault_in(K)
    n, ahead, held = X.shape[0], {}, 0
    with blas.single():
        for start in range(0, n - band_rows, band_rows):
            stop = start + band_rows
            held += band_rows * (n - stop) * X.itemsize
            if not loading.is_alive() or held > PRODUCTS_AHEAD_BYTES:
                break
            ahead[start] = kernel.mirrored_products(X[start:stop], X[stop:])
    loading.join()
    return ahead


def _load_compiled_map(kernel, X, dtype):
    """Evaluate a band of the Gram of ``X``'s first samples into a ``dtype`` array of its own: its module of
    compiled code is imported, and numba loads the code that the Gram's bands call (a diagonal block of
    :data:`DIAGONAL_ROWS` rows and a block beside it: the same types of arguments) and builds its registries on
    the way.

    An error is left to the Gram's own evaluation, which meets it again.
    """
    n = min(DIAGONAL_ROWS + 1, X.shape[0])
    with contextlib.suppress(Exception):
        _evaluate_band(np.empty((n, n), dtype), X[:n], kernel, 0, n - 1)


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
