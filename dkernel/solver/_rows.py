"""Row providers: the contract through which the solver sees a kernel matrix.

A row provider is any object with

``n`` : int
    Number of training samples.
``rows(idx) -> ndarray of shape (len(idx), n)``
    Kernel values ``K[idx, :]`` (not ``Q``; the solver applies the labels).
``diag() -> ndarray of shape (n,)``
    The diagonal ``K[i, i]``.

and optionally

``dtype``
    The dtype of the values.
``submatrix(idx, start, stop) -> ndarray of shape (len(idx), stop - start)``
    ``K[idx, start:stop]``. The gradient on Dask workers calls it on each
    worker so that a provider reading from a chunked store touches only the
    columns that worker owns; without it, ``rows(idx)[:, start:stop]`` is used.
``column_slab(start, stop)``
    A picklable provider of the columns ``start:stop`` (answering
    ``submatrix`` for them), sent to a worker in place of the whole provider
    so that each worker receives only its share of an in-memory matrix.

This is the seam of ThunderSVM's ``KernelMatrix`` (``get_rows``, ``diag``):
in-memory arrays, on-the-fly kernels, zarr-backed Gram matrices and lazy
centered or normalized views all plug into the solver unchanged.
"""

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ColumnBlockRows",
    "DenseRows",
    "KernelRows",
    "check_provider",
    "provider_for_columns",
    "provider_submatrix",
    "raise_nonfinite_rows",
]


class DenseRows:
    """Row provider over a kernel matrix held in memory.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric kernel matrix.

    Examples
    --------
    >>> import numpy as np
    >>> rows = DenseRows(np.eye(3))
    >>> rows.rows([2]).tolist()
    [[0.0, 0.0, 1.0]]
    """

    def __init__(self, K):
        K = np.asarray(K)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"K must be a square 2-D array; got shape {K.shape}.")
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        self.K = K

    @property
    def n(self):
        return self.K.shape[0]

    @property
    def dtype(self):
        return self.K.dtype

    def rows(self, idx):
        """Return ``K[idx, :]``."""
        return self.K[np.asarray(idx, dtype=np.intp)]

    def submatrix(self, idx, start, stop):
        """Return ``K[idx, start:stop]``."""
        return self.K[np.asarray(idx, dtype=np.intp), start:stop]

    def diag(self):
        """Return the diagonal of ``K``."""
        return np.diagonal(self.K).copy()

    def column_slab(self, start, stop):
        """Return a provider of the columns ``start:stop`` alone (the whole matrix: ``self``)."""
        if (start, stop) == (0, self.n):
            return self
        return ColumnBlockRows(np.ascontiguousarray(self.K[:, start:stop]), start, self.n)

    def __repr__(self):
        return f"DenseRows(n={self.n}, dtype={self.dtype})"


class ColumnBlockRows:
    """The columns ``start:stop`` of an in-memory kernel matrix.

    Sent to a worker in place of a :class:`DenseRows` so that each worker
    receives only its share of the matrix.
    """

    def __init__(self, K_cols, start, n):
        self.K_cols = K_cols
        self.start = start
        self.n = n

    def submatrix(self, idx, start, stop):
        """Return ``K[idx, start:stop]`` for columns inside this slab."""
        return self.K_cols[np.asarray(idx, dtype=np.intp), start - self.start : stop - self.start]


class KernelRows:
    """Row provider computing kernel rows on the fly, with an LRU row cache.

    Rows missing from the cache are computed together in one call
    ``kernel_fn(X[missing], X)``, so a whole working set costs one BLAS-backed
    block evaluation.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Training data.
    kernel_fn : callable
        ``kernel_fn(A, B) -> ndarray of shape (len(A), len(B))``.
    cache_bytes : int, default=256 MiB
        Memory budget of the row cache. Rows are evicted least recently used
        first; ``0`` disables the cache.
    diag_fn : callable, optional
        ``diag_fn(X) -> ndarray of shape (n,)``. Without it the diagonal is
        taken from square blocks ``kernel_fn(X[s:e], X[s:e])``.
    block_size : int, default=256
        Rows per block when the diagonal is computed from ``kernel_fn``.
    """

    def __init__(self, X, kernel_fn, cache_bytes=256 * 2**20, *, diag_fn=None, block_size=256):
        if not sp.issparse(X):
            X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array of shape (n, d); got shape {X.shape}.")
        if not callable(kernel_fn):
            raise TypeError(f"kernel_fn must be callable kernel_fn(A, B); got {type(kernel_fn).__name__}.")
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0; got {cache_bytes}.")
        self.X = X
        self.kernel_fn = kernel_fn
        self.cache_bytes = int(cache_bytes)
        self.diag_fn = diag_fn
        self.block_size = int(block_size)
        self.n_computed = 0
        self._diag = None
        self._reset_cache()

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def dtype(self):
        return np.dtype(np.float64)

    def _reset_cache(self):
        capacity = min(self.cache_bytes // (8 * max(self.n, 1)), self.n)
        # Rows live in fixed slots of one array; `slot_of[i]` is the slot of
        # row i (-1 if absent) and `last_used` orders slots for LRU eviction.
        self._store = np.empty((capacity, self.n))
        self._slot_of = np.full(self.n, -1, dtype=np.intp)
        self._row_in_slot = np.full(capacity, -1, dtype=np.intp)
        self._last_used = np.zeros(capacity, dtype=np.int64)
        self._clock = 0

    def _compute(self, idx):
        self.n_computed += len(idx)
        return np.asarray(self.kernel_fn(self.X[idx], self.X), dtype=np.float64)

    def rows(self, idx):
        """Return ``K[idx, :]``, computing the rows missing from the cache in one block."""
        idx = np.asarray(idx, dtype=np.intp)
        capacity = self._store.shape[0]
        if capacity == 0:
            return self._compute(idx)
        self._clock += 1
        slots = self._slot_of[idx]
        hit = slots >= 0
        self._last_used[slots[hit]] = self._clock
        if hit.all():
            return self._store[slots]
        if not hit.any() and np.unique(idx).size == idx.size:
            block = self._compute(idx)
            self._insert(idx, block)
            return block
        out = np.empty((len(idx), self.n))
        out[hit] = self._store[slots[hit]]
        missing = np.unique(idx[~hit])
        block = self._compute(missing)
        out[~hit] = block[np.searchsorted(missing, idx[~hit])]
        self._insert(missing, block)
        return out

    def _insert(self, idx, block):
        capacity = self._store.shape[0]
        keep = min(len(idx), capacity)
        idx, block = idx[-keep:], block[-keep:]
        # Evict the least recently used slots, never the rows just served.
        victims = np.argpartition(self._last_used, keep - 1)[:keep] if keep < capacity else np.arange(keep)
        old_rows = self._row_in_slot[victims]
        self._slot_of[old_rows[old_rows >= 0]] = -1
        self._store[victims] = block
        self._row_in_slot[victims] = idx
        self._slot_of[idx] = victims
        self._last_used[victims] = self._clock

    def submatrix(self, idx, start, stop):
        """Return ``K[idx, start:stop]`` without touching the cache."""
        idx = np.asarray(idx, dtype=np.intp)
        return np.asarray(self.kernel_fn(self.X[idx], self.X[start:stop]), dtype=np.float64)

    def diag(self):
        """Return the diagonal ``K[i, i]``."""
        if self._diag is None:
            if self.diag_fn is not None:
                self._diag = np.asarray(self.diag_fn(self.X), dtype=np.float64)
            else:
                parts = []
                for s in range(0, self.n, self.block_size):
                    block = self.kernel_fn(self.X[s : s + self.block_size], self.X[s : s + self.block_size])
                    parts.append(np.diagonal(np.asarray(block)))
                self._diag = np.concatenate(parts).astype(np.float64)
        return self._diag

    def __getstate__(self):
        # A pickled provider (sent to a Dask worker) starts with an empty cache.
        state = self.__dict__.copy()
        for key in ("_store", "_slot_of", "_row_in_slot", "_last_used", "_clock"):
            state.pop(key)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_cache()

    def __repr__(self):
        return f"KernelRows(n={self.n}, cache_bytes={self.cache_bytes})"


def check_provider(rows, n_y):
    """Check that ``rows`` keeps the contract for ``n_y`` samples; return its diagonal as float64.

    Raises
    ------
    TypeError
        If ``rows`` lacks ``n``, ``rows`` or ``diag``.
    ValueError
        If its size differs from ``n_y`` or its diagonal is malformed or not finite.
    """
    for member in ("n", "rows", "diag"):
        if not hasattr(rows, member):
            raise TypeError(
                f"rows must provide n, rows(idx) and diag(); {type(rows).__name__} has no {member!r}. "
                "Wrap an in-memory kernel matrix with DenseRows(K)."
            )
    if rows.n != n_y:
        raise ValueError(f"The row provider has n={rows.n} samples but y has {n_y}.")
    diag = np.asarray(rows.diag(), dtype=np.float64)
    if diag.shape != (rows.n,):
        raise ValueError(f"rows.diag() must have shape ({rows.n},); got {diag.shape}.")
    if not np.isfinite(diag).all():
        first = int(np.flatnonzero(~np.isfinite(diag))[0])
        raise ValueError(
            f"The kernel diagonal contains NaN or infinite values (first at {first}); check the data "
            "and the kernel parameters."
        )
    return diag


def provider_submatrix(rows, idx, start, stop):
    """Return ``K[idx, start:stop]`` from any row provider, as float64.

    Whole rows go through ``rows(idx)`` so that a provider's row cache is used.

    Raises
    ------
    ValueError
        If the provider returns a block of another shape.
    """
    if (start, stop) == (0, rows.n):
        block = rows.rows(idx)
    elif hasattr(rows, "submatrix"):
        block = rows.submatrix(idx, start, stop)
    else:
        block = rows.rows(idx)[:, start:stop]
    block = np.asarray(block, dtype=np.float64)
    if block.shape != (len(idx), stop - start):
        raise ValueError(
            f"The row provider returned shape {block.shape} for {len(idx)} indices and the columns "
            f"{start}:{stop}; expected ({len(idx)}, {stop - start})."
        )
    return block


def provider_for_columns(rows, start, stop):
    """The provider a worker needs for the columns ``start:stop``: the column slab where there is one."""
    if hasattr(rows, "column_slab"):
        return rows.column_slab(start, stop)
    return rows


def raise_nonfinite_rows(idx, block):
    """Raise the error for non-finite kernel values, naming the first row of ``block`` (rows ``idx``) that has one.

    Where every row is finite (the gradient overflowed instead) the first of ``idx`` is named.
    """
    idx = np.asarray(idx)
    bad = ~np.isfinite(block).all(axis=1)
    first = int(idx[np.flatnonzero(bad)[0]]) if bad.any() else int(idx[0])
    raise ValueError(
        f"The kernel rows contain NaN or infinite values (first in row {first}); check the data "
        "and the kernel parameters (e.g. an overflowing polynomial degree)."
    )
