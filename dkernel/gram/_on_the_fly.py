"""A Gram matrix evaluated on the fly: a kernel on ``X``, its rows served through an LRU row cache.

:class:`KernelGram` follows the Gram protocol of :mod:`dkernel.gram._sources`
without storing the matrix: rows are kernel evaluations ``K(X[idx], X)``
kept in a :class:`RowCache`, blocks and columns are evaluated lazily in Dask
tasks, and each worker of the distributed solver gets a
:class:`KernelColumnSlab` (its columns, with a row cache of its own).
"""

import numpy as np

from .._runtime.client import put_data
from .._runtime.validation import check_data, check_new_points
from ..kernels._kernels import Kernel, get_kernel

__all__ = ["DEFAULT_CACHE_BYTES", "DEFAULT_CHUNK", "KernelColumnSlab", "KernelGram", "RowCache"]

#: Block side of ``block(i, j)`` and ``.dask`` when none is given.
DEFAULT_CHUNK = 2048

#: Memory budget of a :class:`KernelGram`'s row cache when none is given.
DEFAULT_CACHE_BYTES = 256 * 2**20

#: Rows per block when the diagonal of a kernel function is taken from square blocks.
_DIAG_BLOCK_ROWS = 256




class RowCache:
    """Least-recently-used cache of whole rows of an ``n``-column matrix.

    Rows live in fixed slots of one array; ``slot_of[i]`` is the slot of row
    ``i`` (-1 if absent) and ``last_used`` orders the slots for eviction.

    Parameters
    ----------
    n : int
        Row length.
    cache_bytes : int
        Memory budget; ``0`` disables the cache.
    dtype : numpy dtype
        Dtype of the cached rows.
    n_rows : int, optional
        Number of rows of the matrix (``n``: a square matrix).
    """

    def __init__(self, n, cache_bytes, dtype, n_rows=None):
        dtype = np.dtype(dtype)
        n_rows = n if n_rows is None else n_rows
        capacity = min(int(cache_bytes) // (dtype.itemsize * max(n, 1)), n_rows)
        self.n = n
        self._store = np.empty((capacity, n), dtype=dtype)
        self._slot_of = np.full(n_rows, -1, dtype=np.intp)
        self._row_in_slot = np.full(capacity, -1, dtype=np.intp)
        self._last_used = np.zeros(capacity, dtype=np.int64)
        self._clock = 0

    @property
    def capacity(self):
        """Number of rows the cache holds at most."""
        return self._store.shape[0]

    def rows(self, idx, compute):
        """The rows ``idx``; ``compute(missing)`` evaluates the rows not cached, in one call."""
        if self.capacity == 0:
            return compute(idx)
        self._clock += 1
        slots = self._slot_of[idx]
        hit = slots >= 0
        self._last_used[slots[hit]] = self._clock
        if hit.all():
            return self._store[slots]
        if not hit.any() and np.unique(idx).size == idx.size:
            block = compute(idx)
            self._insert(idx, block)
            return block
        out = np.empty((len(idx), self.n), dtype=self._store.dtype)
        out[hit] = self._store[slots[hit]]
        missing = np.unique(idx[~hit])
        block = compute(missing)
        out[~hit] = block[np.searchsorted(missing, idx[~hit])]
        self._insert(missing, block)
        return out

    def _insert(self, idx, block):
        keep = min(len(idx), self.capacity)
        idx, block = idx[-keep:], block[-keep:]
        # Evict the least recently used slots, never the rows just served.
        victims = np.argpartition(self._last_used, keep - 1)[:keep] if keep < self.capacity else np.arange(keep)
        old_rows = self._row_in_slot[victims]
        self._slot_of[old_rows[old_rows >= 0]] = -1
        self._store[victims] = block
        self._row_in_slot[victims] = idx
        self._slot_of[idx] = victims
        self._last_used[victims] = self._clock


class _KernelFunction:
    """A user function ``f(A, B) -> block`` with the evaluation interface of a :class:`Kernel`."""

    def __init__(self, function):
        self.function = function

    def block(self, A, B, *, symmetric=False):
        return np.asarray(self.function(A, B), dtype=np.float64)

    def diag(self, X):
        """The diagonal from square blocks ``f(X[s:e], X[s:e])``."""
        parts = [
            np.diagonal(self.block(X[s : s + _DIAG_BLOCK_ROWS], X[s : s + _DIAG_BLOCK_ROWS]))
            for s in range(0, X.shape[0], _DIAG_BLOCK_ROWS)
        ]
        return np.concatenate(parts)

    def __repr__(self):
        return f"_KernelFunction({getattr(self.function, '__name__', self.function)!r})"


def _kernel_slices(X, rows, Z, cols, kernel, symmetric):
    """``K(X[rows], Z[cols])`` for one block of a lazy Gram; ``rows``/``cols`` are (start, stop)."""
    return np.asarray(kernel.block(X[rows[0]:rows[1]], Z[cols[0]:cols[1]], symmetric=symmetric))


class _RebuildsItsCache:
    """Pickled without the caches named by ``_transient`` (rows computed in this process), rebuilt empty on arrival
    (:meth:`_reset_cache`): a worker receives the small spec, not the rows."""

    _transient = ("_cache",)

    def __getstate__(self):
        return {key: value for key, value in self.__dict__.items() if key not in self._transient}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_cache()


class KernelGram(_RebuildsItsCache):
    """The Gram matrix ``K(X, X)`` of a kernel, evaluated on the fly (nothing stored).

    Rows are kernel evaluations served through an LRU row cache: the rows of
    a request missing from the cache are computed together in one block
    ``K(X[missing], X)``, so a whole working set costs one BLAS-backed call.
    Blocks, columns and ``.dask`` bypass the cache; ``.dask`` is a lazy
    blockwise evaluation in which ``X`` is one key of the graph. Sampled
    centerings need only ``columns(S) = K(X, X_S)``, ``O(n n' d)`` work.
    A pickled KernelGram (sent to a Dask worker) starts with an empty cache.

    Parameters
    ----------
    X : array-like or CSR matrix of shape (n, d)
        Training data.
    kernel : str, dict, Kernel or callable, default="rbf"
        See :func:`dkernel.kernels.get_kernel`; ``gamma=None`` is resolved
        to ``1/d`` here. A callable ``f(A, B) -> ndarray of shape (len(A),
        len(B))`` is evaluated as given (float64; its diagonal from square
        blocks); the Gram then has no :class:`Kernel` (``kernel`` is None).
    chunk : int, default=2048
        Rows per block of ``.dask`` and ``columns``.
    cache_bytes : int, default=256 MiB
        Memory budget of the row cache; rows are evicted least recently used
        first, and ``0`` disables the cache.
    **kernel_params
        Parameters of a kernel given by name.

    Attributes
    ----------
    n_computed : int
        Number of rows computed by ``rows`` so far (cache misses).
    """

    _transient = ("_cache", "_Xd")

    def __init__(self, X, kernel="rbf", *, chunk=DEFAULT_CHUNK, cache_bytes=DEFAULT_CACHE_BYTES, **kernel_params):
        self.X = check_data(X, name="X")
        if callable(kernel) and not isinstance(kernel, (Kernel, str, dict)):
            if kernel_params:
                raise TypeError(f"kernel parameters {sorted(kernel_params)} were given with a kernel function.")
            self.kernel = None
            self._evaluator = _KernelFunction(kernel)
        else:
            self.kernel = get_kernel(kernel, **kernel_params).resolve(self.X.shape[1])
            self._evaluator = self.kernel
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0; got {cache_bytes}.")
        self.cache_bytes = int(cache_bytes)
        c = min(int(chunk), self.X.shape[0])
        self.chunks = (c, c)
        self.n_computed = 0
        self._diag = None
        self._reset_cache()

    def _reset_cache(self):
        self._cache = RowCache(self.n, self.cache_bytes, self.dtype)
        self._Xd = None

    n = property(lambda self: self.X.shape[0])
    shape = property(lambda self: (self.X.shape[0], self.X.shape[0]))

    @property
    def dtype(self):
        return self.X.dtype if self.kernel is not None else np.dtype(np.float64)

    def _compute_rows(self, idx):
        self.n_computed += len(idx)
        return np.asarray(self._evaluator.block(self.X[idx], self.X), dtype=self.dtype)

    def rows(self, idx):
        """``K[idx, :]``, computing the rows missing from the cache in one block."""
        return self._cache.rows(np.asarray(idx, dtype=np.intp), self._compute_rows)

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]`` without touching the cache."""
        return self._evaluator.block(self.X[np.asarray(idx, dtype=np.intp)], self.X[start:stop])

    def block(self, i, j):
        c = self.chunks[0]
        Xi, Xj = self.X[i * c : (i + 1) * c], self.X[j * c : (j + 1) * c]
        return self._evaluator.block(Xi, Xj, symmetric=(i == j))

    def diag(self):
        if self._diag is None:
            self._diag = self._evaluator.diag(self.X)
        return self._diag

    def _X_key(self):
        import dask

        if self._Xd is None:
            # X enters the graph once, as one key that every block task slices (dense or CSR).
            self._Xd = dask.delayed(self.X, pure=True)
        return self._Xd

    def _bounds(self):
        c = self.chunks[0]
        return [(start, min(start + c, self.n)) for start in range(0, self.n, c)]

    def _lazy_blocks(self, Z, z_bounds, symmetric, X=None):
        import dask
        import dask.array as da

        X = self._X_key() if X is None else X
        return da.block([
            [
                da.from_delayed(
                    dask.delayed(_kernel_slices)(X, r, Z, c, self._evaluator, symmetric and r == c),
                    shape=(r[1] - r[0], c[1] - c[0]), dtype=self.dtype,
                )
                for c in z_bounds
            ]
            for r in self._bounds()
        ])

    @property
    def dask(self):
        return self._lazy_blocks(self._X_key(), self._bounds(), symmetric=True)

    def on_workers(self, client):
        """The whole matrix as a lazy Dask array, ``X`` scattered to the distributed ``client`` once."""
        X = put_data(self.X, client, name="kernel-gram-X")
        return self._lazy_blocks(X, self._bounds(), symmetric=True, X=X)

    def columns(self, indices, *, client=None):
        """Lazy ``K(X, X[indices])`` in row blocks of ``chunk`` rows.

        With a distributed ``client``, ``X`` and ``X[indices]`` are scattered
        to its workers once (:func:`dkernel._runtime.client.put_data`) and every block
        task refers to them, instead of travelling in the graph.
        """
        import dask

        XS = self.X[np.asarray(indices, dtype=np.intp)]
        bounds = [(0, XS.shape[0])]
        if client is None:
            return self._lazy_blocks(dask.delayed(XS, pure=True), bounds, symmetric=False)
        X = put_data(self.X, client, name="kernel-gram-X")
        return self._lazy_blocks(put_data(XS, client, name="kernel-gram-XS"), bounds, symmetric=False, X=X)

    def column_slab(self, start, stop):
        """The columns ``start:stop`` with a row cache of their own (:class:`KernelColumnSlab`); all: ``self``.

        What one solver worker evaluates: ``K(X[idx], X[start:stop])`` for
        the working-set rows ``idx``, cached so that a row chosen again is
        not evaluated again. Each slab has the budget ``cache_bytes``.
        """
        if (start, stop) == (0, self.n):
            return self
        return KernelColumnSlab(self, start, stop)

    def principal_submatrix(self, indices):
        XS = self.X[np.asarray(indices, dtype=np.intp)]
        return self._evaluator.block(XS, XS, symmetric=True)

    def cross(self, X_new, X_train=None, columns=None):
        """``K(X_new, X[columns])`` (all training points by default)."""
        X_new = check_new_points(X_new, self.X)
        Z = self.X if columns is None else self.X[np.asarray(columns, dtype=np.intp)]
        return self._evaluator.block(X_new.astype(Z.dtype, copy=False), Z)

    def cross_diag(self, X_new, X_train=None):
        """``K(x, x)`` for each new point."""
        return self._evaluator.diag(check_new_points(X_new, self.X))

    def to_numpy(self, force=False):
        return self._evaluator.block(self.X, self.X, symmetric=True)

    def describe(self):
        kernel = None if self.kernel is None else self.kernel.to_dict()
        return {"name": "kernel", "kernel": kernel, "n": self.n}

    def __repr__(self):
        return f"KernelGram({self._evaluator!r}, n={self.n})"


class KernelColumnSlab(_RebuildsItsCache):
    """The columns ``start:stop`` of a :class:`KernelGram`, their rows served through a row cache of that width.

    A worker of the distributed solver owns the gradient of ``start:stop``
    and reads ``submatrix(idx, start, stop)`` for every new working set;
    the cache keeps the rows it evaluated (``len(idx) × (stop - start)``
    values each), least recently used out first, within the Gram's
    ``cache_bytes``. Other column ranges are evaluated without the cache.
    Pickled, it carries the Gram (its data) and starts with an empty cache.

    >>> import numpy as np
    >>> gram = KernelGram(np.arange(8.0).reshape(4, 2), "rbf", gamma=0.1)
    >>> slab = gram.column_slab(2, 4)
    >>> bool(np.allclose(slab.submatrix([0, 3], 2, 4), gram.rows([0, 3])[:, 2:4]))
    True
    """

    def __init__(self, gram, start, stop):
        self.gram, self.start, self.stop = gram, int(start), int(stop)
        self._reset_cache()

    def _reset_cache(self):
        self._cache = RowCache(self.stop - self.start, self.gram.cache_bytes, self.gram.dtype, n_rows=self.gram.n)
        self._n_computed = 0

    n = property(lambda self: self.gram.n)
    shape = property(lambda self: self.gram.shape)
    dtype = property(lambda self: self.gram.dtype)
    kernel = property(lambda self: self.gram.kernel)

    @property
    def n_computed(self):
        """Rows of the slab evaluated so far (cache misses)."""
        return self._n_computed

    def _compute(self, idx):
        self._n_computed += len(idx)
        return np.asarray(self.gram.submatrix(idx, self.start, self.stop), dtype=self.dtype)

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``: through the cache for the slab's own columns."""
        idx = np.asarray(idx, dtype=np.intp)
        if (start, stop) == (self.start, self.stop):
            return self._cache.rows(idx, self._compute)
        return self.gram.submatrix(idx, start, stop)

    def rows(self, idx):
        return self.gram.rows(idx)

    def diag(self):
        return self.gram.diag()

    def __repr__(self):
        return f"KernelColumnSlab(columns={self.start}:{self.stop}, gram={self.gram!r})"
