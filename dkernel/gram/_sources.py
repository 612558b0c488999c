"""The Gram protocol and its in-memory, on-the-fly and subset implementations.

A *Gram source* is any object with

``n`` : int
    Number of training points (rows and columns of the square matrix ``K``).
``rows(idx) -> ndarray of shape (len(idx), n)``
    The rows ``K[idx, :]``.
``diag() -> ndarray of shape (n,)``
    The diagonal ``K[i, i]``.
``block(i, j) -> ndarray``
    Block ``(i, j)`` of the grid of ``chunks``.
``columns(indices) -> dask array of shape (n, len(indices))``
    The columns ``K[:, indices]``, lazily, in row blocks (no ``n × n`` array).
``.dask``
    The whole matrix as a lazy Dask array.
``on_workers(client)`` (optional)
    The same, its inputs sent to a distributed ``client``'s workers once
    (scattered) rather than carried in every graph that reads it.

and optionally ``submatrix(idx, start, stop)`` (``K[idx, start:stop]``, what a
solver worker reads of the columns it owns), ``column_slab(start, stop)``
(a small picklable source of the columns ``start:stop`` only, shipped to that
worker instead of the whole matrix), and, for a source whose rows lie in a
matrix held in memory, ``rows_in_memory = True`` and ``row_source(idx)``
(where the rows lie: ``(M, positions, columns)``, the rows being
``M[positions][:, columns]``, ``columns`` None for all; None where they do not
lie in ``M`` yet), which let the solver read rows in place, and ``threads``
(the threads the solver's reads of ``M`` may be split between: a source that
serves one problem alone; 1 where absent).

The same objects are the row providers of :mod:`dkernel.solver`, which reads
only ``n``, ``rows``, ``diag``, ``submatrix``, ``row_source`` and ``threads``: :class:`DenseGram` wraps a
matrix held in memory, :class:`KernelGram` evaluates a kernel on the fly from
``X`` through a row cache (:mod:`dkernel.gram._on_the_fly`), :class:`SubsetGram` is a principal submatrix of
another source. :class:`dkernel.gram.GramMatrix` (a zarr store) and the lazy
views of :mod:`dkernel.views` follow the protocol too.

The functions :func:`source_n`, :func:`source_dask`, :func:`source_columns`,
:func:`source_diag`, :func:`principal_submatrix` and :func:`weighted_column_sums`
(``K[:, S] w``, by BLAS in memory or one task per row block) read any source,
a dask array or a small ndarray alike.
"""

import inspect

import numpy as np
import scipy.sparse as sp

from .._runtime.client import client_for, compute_with_progress, is_dask_array, put_data, scatter
from ._on_the_fly import DEFAULT_CHUNK, KernelColumnSlab, KernelGram, RowCache

__all__ = [
    "ColumnSlab",
    "DEFAULT_CHUNK",
    "DenseGram",
    "DerivedGram",
    "KernelColumnSlab",
    "KernelGram",
    "RowCache",
    "SubsetGram",
    "as_gram",
    "chain_root",
    "held_in_process",
    "principal_submatrix",
    "row_provider",
    "source_columns",
    "source_dask",
    "source_diag",
    "source_n",
    "subset_gram",
    "weighted_column_sums",
]


# --------------------------------------------------------------------------- #
# Reading any source (Gram-protocol object, dask array, ndarray)
# --------------------------------------------------------------------------- #


def source_n(source):
    """The number of rows of a square Gram source."""
    if isinstance(source, np.ndarray) or is_dask_array(source):
        if source.ndim != 2 or source.shape[0] != source.shape[1]:
            raise ValueError(f"a Gram matrix must be square; got shape {source.shape}.")
        return source.shape[0]
    return int(source.n)


def source_dask(source, client=None):
    """The whole matrix as a lazy Dask array.

    With a distributed ``client``, a source's inputs are sent to the workers
    once (its ``on_workers``: a Gram computed on the fly scatters its data, a
    matrix in memory its row blocks) rather than carried in the graph; a
    zarr store is read by the workers themselves.
    """
    import dask.array as da

    if is_dask_array(source):
        return source
    if isinstance(source, np.ndarray):
        if client is not None:
            return DenseGram(source).on_workers(client)
        return da.from_array(source, chunks=(min(source.shape[0], DEFAULT_CHUNK),) * 2)
    if client is not None and hasattr(source, "on_workers"):
        return source.on_workers(client)
    return source.dask


def source_columns(source, indices):
    """Lazy ``K[:, indices]`` chunked by row blocks (never the full matrix)."""
    if hasattr(source, "columns"):
        return source.columns(indices)
    return source_dask(source)[:, indices]


def source_diag(source):
    """The diagonal as a float64 ndarray."""
    if isinstance(source, np.ndarray):
        return np.diagonal(source).astype(np.float64)
    if is_dask_array(source):
        import dask.array as da

        return np.asarray(da.diagonal(source).compute(), dtype=np.float64)
    return np.asarray(source.diag(), dtype=np.float64)


def principal_submatrix(source, indices):
    """``K[indices][:, indices]`` as a float64 ndarray.

    A source that reads its own submatrices (a store, a kernel with its data) gives the rows ``indices`` of the
    column blocks holding ``indices``, one at a time: ``len(indices) × n`` values read, never a whole block.
    """
    indices = np.asarray(indices, dtype=np.intp)
    if isinstance(source, np.ndarray):
        return np.asarray(source[np.ix_(indices, indices)], dtype=np.float64)
    if hasattr(source, "principal_submatrix"):
        return np.asarray(source.principal_submatrix(indices), dtype=np.float64)
    if hasattr(source, "submatrix") and hasattr(source, "chunks"):
        out = np.empty((indices.size, indices.size))
        cc, n = int(source.chunks[1]), source_n(source)
        column_block = indices // cc
        for b in np.unique(column_block):
            at = np.flatnonzero(column_block == b)
            start = int(b) * cc
            out[:, at] = source.submatrix(indices, start, min(start + cc, n))[:, indices[at] - start]
        return out
    return np.asarray(source_dask(source)[indices][:, indices].compute(), dtype=np.float64)


_MISSING = object()


def _has_attribute(source, name):
    """``hasattr`` that does not evaluate a property: ``dask`` builds a task graph (a matrix in memory hashed whole)."""
    if inspect.getattr_static(source, name, _MISSING) is not _MISSING:
        return True
    return inspect.getattr_static(type(source), "__getattr__", None) is not None and hasattr(source, name)


def as_gram(source):
    """A Gram-protocol object for ``source`` (an ndarray becomes a :class:`DenseGram`)."""
    if isinstance(source, np.ndarray):
        return DenseGram(source)
    for attr in ("n", "rows", "diag", "dask"):
        if not _has_attribute(source, attr):
            raise TypeError(
                f"{type(source).__name__} is not a Gram matrix: it has no '{attr}'. Pass a GramMatrix, a "
                f"lazy view, a KernelGram(X, kernel) or a square ndarray."
            )
    return source


def subset_gram(base, index, *, copy=True):
    """``base`` restricted to the samples ``index`` (``base`` itself when they are all of its samples, in order).

    An in-memory ``base`` is copied (``copy``), or else read in place: the
    solver then gathers only the rows it asks for, in one fancy index each
    (a one-vs-one problem needs fewer rows than it has samples).
    """
    n_total = base.shape[0] if isinstance(base, np.ndarray) else base.n
    if index.shape[0] == n_total and np.array_equal(index, np.arange(n_total)):
        return base
    if isinstance(base, np.ndarray):
        return base[np.ix_(index, index)] if copy else SubsetGram(DenseGram(base), index)
    return SubsetGram(base, index)


def row_provider(gram):
    """What the solver reads rows of Q from: an in-memory matrix as a :class:`DenseGram`, any other source as is."""
    return DenseGram(gram) if isinstance(gram, np.ndarray) else gram


# --------------------------------------------------------------------------- #
# In memory
# --------------------------------------------------------------------------- #


class DenseGram:
    """A square Gram matrix held in memory.

    float32 and float64 matrices are kept as they are; other dtypes become
    float64.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric kernel matrix (dense; a sparse matrix is refused).
    chunk : int, default=2048
        Block side of ``block(i, j)`` and ``.dask``.
    kernel : Kernel, optional
        The kernel that produced ``K``, if known.

    Examples
    --------
    >>> import numpy as np
    >>> DenseGram(np.eye(3)).rows([2]).tolist()
    [[0.0, 0.0, 1.0]]
    """

    def __init__(self, K, *, chunk=DEFAULT_CHUNK, kernel=None):
        if sp.issparse(K):
            raise ValueError("K is a sparse matrix; a Gram matrix is dense: pass K.toarray().")
        K = np.asarray(K)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"a Gram matrix must be square; got shape {K.shape}.")
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        self.K = K
        self.kernel = kernel
        c = min(int(chunk), K.shape[0])
        self.chunks = (c, c)

    n = property(lambda self: self.K.shape[0])
    shape = property(lambda self: self.K.shape)
    dtype = property(lambda self: self.K.dtype)
    rows_in_memory = True

    def rows(self, idx):
        """``K[idx, :]``."""
        return self.K[np.asarray(idx, dtype=np.intp)]

    def row_source(self, idx):
        """The rows ``idx`` lie in ``K`` itself: ``(K, idx, None)``; None for a subclass that reads its rows
        otherwise (its rows are not ``K``'s)."""
        if type(self).rows is not DenseGram.rows:
            return None
        return self.K, np.asarray(idx, dtype=np.intp), None

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``."""
        return self.K[np.asarray(idx, dtype=np.intp), start:stop]

    def block(self, i, j):
        c = self.chunks[0]
        return self.K[i * c : (i + 1) * c, j * c : (j + 1) * c]

    def diag(self):
        return np.diagonal(self.K).copy()

    @property
    def dask(self):
        import dask.array as da

        return da.from_array(self.K, chunks=self.chunks)

    def on_workers(self, client):
        """The matrix as a Dask array of row blocks, each scattered to ``client``'s workers once: the graphs that
        read it refer to them by key."""
        import dask.array as da

        n = self.n
        bounds = list(range(0, n, self.chunks[0])) + [n]
        parts = scatter(client, [self.K[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
        return da.concatenate([da.from_delayed(part, shape=(b - a, n), dtype=self.dtype)
                               for part, a, b in zip(parts, bounds[:-1], bounds[1:])])

    def principal_submatrix(self, indices):
        return self.K[np.ix_(indices, indices)]

    def column_slab(self, start, stop):
        """The columns ``start:stop`` alone, as a :class:`ColumnSlab` (what one solver worker reads); all: ``self``."""
        if (start, stop) == (0, self.n):
            return self
        return ColumnSlab(np.ascontiguousarray(self.K[:, start:stop]), start, self.n)

    def to_numpy(self, force=False):
        return self.K

    def __repr__(self):
        return f"DenseGram(n={self.n}, dtype={self.dtype.name})"


class ColumnSlab:
    """The columns ``start:start + K_cols.shape[1]`` of an ``n × n`` matrix held in memory.

    Answers ``submatrix(idx, a, b)`` for ``a:b`` within its columns; it is
    small and picklable, so a worker receives only its share of the matrix.
    """

    def __init__(self, K_cols, start, n):
        self.K_cols = K_cols
        self.start = int(start)
        self.n = int(n)

    @property
    def stop(self):
        return self.start + self.K_cols.shape[1]

    @property
    def dtype(self):
        return self.K_cols.dtype

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``; ``start:stop`` must lie within the slab."""
        if start < self.start or stop > self.stop:
            raise ValueError(f"columns {start}:{stop} lie outside the slab {self.start}:{self.stop}.")
        return self.K_cols[np.asarray(idx, dtype=np.intp), start - self.start : stop - self.start]

    def rows(self, idx):
        """Whole rows ``K[idx, :]``, for a slab that holds every column."""
        return self.submatrix(idx, 0, self.n)

    def __repr__(self):
        return f"ColumnSlab(columns={self.start}:{self.stop}, n={self.n})"


# --------------------------------------------------------------------------- #
# A subset of the training points
# --------------------------------------------------------------------------- #


class DerivedGram:
    """A row provider derived from the Gram source ``base``: the base's kernel and where its rows lie.

    A subclass sets ``base`` and defines ``n`` (its rows); its shape is ``(n, n)``.
    """

    @property
    def shape(self):
        return (self.n, self.n)

    @property
    def kernel(self):
        return getattr(self.base, "kernel", None)

    @property
    def rows_in_memory(self):
        return getattr(self.base, "rows_in_memory", False)


class SubsetGram(DerivedGram):
    """The principal submatrix ``K[index][:, index]`` of a Gram source, read on demand.

    A solver worker reads ``submatrix(idx, start, stop)``: the base's columns
    spanning ``index[start:stop]`` only. ``column_slab`` narrows the base the
    same way where it has one (an in-memory base ships those columns only).
    """

    def __init__(self, base, index):
        self.base = base
        self.index = np.asarray(index, dtype=np.intp)
        self._diag = None

    @property
    def n(self):
        return self.index.shape[0]

    @property
    def dtype(self):
        return np.dtype(np.float64)

    @property
    def chunks(self):
        return getattr(self.base, "chunks", (min(self.n, 4096),) * 2)

    def rows(self, idx):
        base_rows = self.index[np.asarray(idx, dtype=np.intp)]
        if isinstance(self.base, DenseGram):  # one gather of the requested entries, no whole base rows
            return self.base.K[np.ix_(base_rows, self.index)]
        return np.asarray(self.base.rows(base_rows))[:, self.index]

    def row_source(self, idx):
        """Where the base's rows ``index[idx]`` lie, restricted to the columns ``index``; None where the base's do
        not lie in a matrix in memory."""
        source = getattr(self.base, "row_source", None)
        found = None if source is None else source(self.index[np.asarray(idx, dtype=np.intp)])
        if found is None:
            return None
        matrix, positions, columns = found
        return matrix, positions, self.index if columns is None else columns[self.index]

    def diag(self):
        if self._diag is None:
            self._diag = np.asarray(self.base.diag())[self.index]
        return self._diag

    def _base_span(self, start, stop):
        """The base's columns ``lo:hi`` spanning ``index[start:stop]``, and those columns' positions in it."""
        columns = self.index[start:stop]
        lo, hi = int(columns.min()), int(columns.max()) + 1
        return lo, hi, columns - lo

    def submatrix(self, idx, start, stop):
        """``K[index[idx]][:, index[start:stop]]``, reading only the base's columns that span them."""
        idx = np.asarray(idx, dtype=np.intp)
        if start >= stop:
            return np.empty((idx.size, 0))
        lo, hi, local = self._base_span(start, stop)
        base_rows = self.index[idx]
        if hasattr(self.base, "submatrix"):
            K = self.base.submatrix(base_rows, lo, hi)
        else:
            K = self.base.rows(base_rows)[:, lo:hi]
        return np.asarray(K)[:, local]

    def column_slab(self, start, stop):
        """The subset over the base's column slab spanning ``index[start:stop]``; ``self`` where the base has none."""
        slab = getattr(self.base, "column_slab", None)
        if slab is None or (start, stop) == (0, self.n) or start >= stop:
            return self
        lo, hi, _ = self._base_span(start, stop)
        base = slab(lo, hi)
        return self if base is self.base else SubsetGram(base, self.index)

    @property
    def dask(self):
        if hasattr(self.base, "columns"):
            # Only the columns of the subset: n × m kernel work, not n × n.
            return self.base.columns(self.index)[self.index]
        return self.base.dask[self.index][:, self.index]

    def __repr__(self):
        return f"SubsetGram(n={self.n}, base={self.base!r})"


# --------------------------------------------------------------------------- #
# Weighted sums of columns (K w), in memory or blockwise on Dask
# --------------------------------------------------------------------------- #

#: Rows per BLAS product of :func:`weighted_column_sums` on a matrix in memory (4096 rows of a 50000-column
#: float32 Gram: 0.8 GB in float64).
IN_MEMORY_PRODUCT_ROWS = 4096


def weighted_column_sums(source, weights, indices=None, *, compute=True, client=None, progress=False,
                         label="row blocks"):
    """``K[:, S] w``: the columns ``S = indices`` of a Gram source (all when None) weighted by ``weights``, summed.

    A matrix held whole in this process (an ndarray, a :class:`DenseGram`)
    is multiplied here, by BLAS on row blocks, and gives an ndarray even
    without ``compute``; so is a view or a subset over one
    (:func:`held_in_process`), its rows read in bands. Any other source is read one row block per task,
    ``K[I, S] w``, summed over its column blocks: computed on ``client``
    (:func:`~dkernel._runtime.client.client_for`; a ``KernelGram``'s ``X``
    and ``X_S`` sent to the workers once), the row blocks finished shown
    under ``label`` with ``progress``; without ``compute``, a lazy dask
    array (``client`` is not used). A task holds one block of kernel
    values, never ``n × |S|``.
    """
    in_memory = _in_memory_matrix(source)
    if in_memory is not None:
        return _in_memory_products(in_memory, *_dense_weights(in_memory.shape[0], weights, indices))
    if not is_dask_array(source) and held_in_process(source):
        return _row_band_products(source, *_dense_weights(source_n(source), weights, indices))
    if not compute:
        import dask.array as da

        K = source_dask(source) if indices is None else source_columns(source, indices)
        return da.dot(K, weights)
    with client_for(client) as client:
        tasks = _row_block_tasks(source, weights, indices, client)
        parts = compute_with_progress(tasks, client, progress, label=label)
    return np.concatenate(parts).astype(np.float64, copy=False)


def chain_root(source):
    """The raw Gram at the bottom of a chain of views and subsets, each holding the next as ``base``."""
    while not isinstance(source, np.ndarray) and getattr(source, "base", None) is not None:
        source = source.base
    return source


def held_in_process(source):
    """Whether the raw Gram under ``source`` (:func:`chain_root`) lies in this process's memory: an ndarray, or a
    source whose rows are there (``rows_in_memory``: a :class:`DenseGram`, an on-demand Gram)."""
    root = chain_root(source)
    return isinstance(root, np.ndarray) or bool(getattr(root, "rows_in_memory", False))


def _in_memory_matrix(source):
    """The ndarray of a Gram held whole in this process (an ndarray, a :class:`DenseGram`), else None."""
    if isinstance(source, np.ndarray):
        return source
    return source.K if isinstance(source, DenseGram) else None


#: A share of the columns from which ``K[:, S] w`` is read as ``K w'`` in this process (``w'``: ``w`` spread over
#: all ``n`` columns, zero elsewhere): contiguous rows multiplied by BLAS cost less than gathering those columns.
DENSE_WEIGHTS_SHARE = 1 / 8


def _dense_weights(n, weights, indices):
    """``(weights, indices)`` of :func:`weighted_column_sums` as a product in this process reads them best: the
    columns ``indices`` of at least :data:`DENSE_WEIGHTS_SHARE` of ``n`` (all of them, in a multiclass origin) as
    one weight per column (a column named twice takes both weights), without indices."""
    if indices is None or len(indices) < DENSE_WEIGHTS_SHARE * n:
        return weights, indices
    return np.bincount(np.asarray(indices, dtype=np.intp), weights=weights, minlength=n), None


def _in_memory_products(K, weights, indices):
    """``K[:, S] w`` by BLAS on row blocks: a matrix already in this process needs no task graph.

    Row blocks keep a float32 matrix from being converted whole to float64.
    """
    h = np.empty(K.shape[0])
    for start in range(0, K.shape[0], IN_MEMORY_PRODUCT_ROWS):
        block = K[start : start + IN_MEMORY_PRODUCT_ROWS]
        if indices is not None:
            block = block[:, indices]
        h[start : start + block.shape[0]] = np.asarray(block, dtype=np.float64) @ weights
    return h


#: Bytes of float64 rows per product of :func:`_row_band_products` (a band of a view's rows, corrected when read).
ROW_BAND_PRODUCT_BYTES = 2**27


def _row_band_products(source, weights, indices):
    """``K[:, S] w`` of a view or subset over a Gram held in this process: its rows read in bands, here.

    The rows come through the source's own ``rows`` (a view corrects them as it reads them, its one block
    formula); a band takes at most :data:`ROW_BAND_PRODUCT_BYTES`. No task graph: building one over a matrix
    already in memory would cost more than the product (the matrix hashed whole to name its tasks).
    """
    n = source_n(source)
    band = max(1, ROW_BAND_PRODUCT_BYTES // (8 * n))
    h = np.empty(n)
    for start in range(0, n, band):
        block = np.asarray(source.rows(np.arange(start, min(start + band, n))), dtype=np.float64)
        if indices is not None:
            block = block[:, indices]
        h[start : start + block.shape[0]] = block @ weights
    return h


def _row_block_tasks(source, weights, indices, client):
    """One task per row block ``I`` of ``K``: ``K[I, S] w``, summed over the column blocks.

    ``w`` enters the graph once (:func:`~dkernel._runtime.client.put_data`);
    each block task slices its part, so no task carries more than its block
    bounds.
    """
    import dask

    weights = put_data(weights, client, name="column-weights-" + dask.base.tokenize(weights))
    if indices is None:
        K = source_dask(source, client)
    elif isinstance(source, KernelGram):
        K = source.columns(indices, client=client)
    else:
        K = source_columns(source, indices)
    col_bounds = np.cumsum((0,) + K.chunks[1])
    # Unoptimized: each block keeps K's graph, and with it the futures of the data scattered for it (an
    # optimized graph refers to them by key only, and the cluster may release them before the tasks ran).
    blocks = K.to_delayed(optimize_graph=False)
    return [
        dask.delayed(_summed, pure=True)(*[
            dask.delayed(_block_products, pure=True)(block, weights, int(col_bounds[j]), int(col_bounds[j + 1]))
            for j, block in enumerate(row)
        ])
        for row in blocks
    ]


def _block_products(K, weights, start, stop):
    return np.asarray(K) @ weights[start:stop]


def _summed(*parts):
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total
