"""A symmetric Gram matrix computed into one contiguous in-memory array.

The solver reads scattered rows of K many times; one C-contiguous ``n × n``
array makes each read a plain fancy index. Row bands of the upper triangle
are evaluated by Dask's threaded scheduler (BLAS and the element-wise maps
release the GIL) and written in place, each band also writing its mirrored
column strip below the diagonal: half the kernel work and no second copy of K.
"""

import dask
import numpy as np
from threadpoolctl import threadpool_limits

from ._dask import TextProgress, _LocalProgress

__all__ = ["dense_symmetric_gram"]

#: Rows per band; small enough that bands balance over the threads.
BAND_ROWS = 1024


def _evaluate_band(K, X, kernel, start, stop):
    """Write rows ``start:stop`` of the upper triangle and their mirror below the diagonal."""
    width = stop - start
    diagonal = kernel.block(X[start:stop], X[start:stop], symmetric=True)
    # Exact symmetry of the diagonal block: rounding may differ between K_ij and K_ji.
    upper = np.triu_indices(width, 1)
    diagonal[upper[1], upper[0]] = diagonal[upper]
    K[start:stop, start:stop] = diagonal
    if stop < K.shape[0]:
        right = kernel.block(X[start:stop], X[stop:])
        K[start:stop, stop:] = right
        K[stop:, start:stop] = right.T


def dense_symmetric_gram(X, kernel, *, dtype=np.float64, band_rows=BAND_ROWS, num_workers=None, progress=False):
    """``K(X, X)`` as one C-contiguous ndarray, evaluating only the blocks on and above the diagonal.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated data (see :func:`dkernel._validation.check_data`).
    kernel : Kernel
        A kernel with its data-dependent parameters resolved.
    dtype : numpy dtype, default=float64
    band_rows : int, default=1024
    num_workers : int, default=None
        Threads of Dask's threaded scheduler (default: the number of cores).
    progress : bool, default=False
        Show the bands done on stderr (:class:`dkernel._dask.TextProgress`: an
        updating bar on a terminal, plain lines every few seconds otherwise).

    Returns
    -------
    ndarray of shape (n, n)
        Exactly symmetric.
    """
    n = X.shape[0]
    K = np.empty((n, n), dtype=dtype)
    X = X.astype(dtype, copy=False)
    tasks = [
        dask.delayed(_evaluate_band, pure=False)(K, X, kernel, start, min(start + band_rows, n))
        for start in range(0, n, band_rows)
    ]
    # One BLAS thread per band: the bands themselves run in parallel.
    bar = TextProgress(len(tasks), "row bands of the Gram", enabled=progress)
    try:
        with threadpool_limits(limits=1, user_api="blas"), _LocalProgress(bar):
            dask.compute(*tasks, scheduler="threads", num_workers=num_workers)
        bar.update(len(tasks))
    finally:
        bar.close()
    return K
