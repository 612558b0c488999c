"""Gram matrices computed blockwise by Dask and persisted in zarr.

A :class:`GramMatrix` holds ``K(X, Z)`` (``Z = X`` by default) as a grid of
square blocks. Each block is one Dask task that evaluates the kernel on a row
block of X and a row block of Z and, with a store, writes the result straight
from the worker into its zarr chunk. For ``K(X, X)`` only the blocks on and
above the diagonal are evaluated: the task of block (i, j), i < j, also writes
its transpose into chunk (j, i), which halves the kernel work and makes the
stored matrix exactly symmetric.

Store layout (a zarr v3 group)::

    K.zarr/
      zarr.json     attributes: kernel, shape, dtype, chunks, data fingerprint,
                    completeness summary, statistics of the last run
      K/            the Gram matrix, one chunk per block (fill value NaN)
      done/         uint8 (n_row_blocks, n_col_blocks): 1 once a block is written
      diag/         the diagonal (K(X, X) only), written by the diagonal blocks

A block's ``done`` flag is written by the task that computed it, after its
chunk writes returned (both chunks of a mirrored pair), so an interrupted run
never leaves a block that claims to be finished. Re-running
:meth:`GramMatrix.compute` on the same store evaluates only the blocks not yet
flagged. On a cluster, every worker must reach the store's path: one machine,
a shared filesystem, or an object store.

The reading side is what a solver needs (``rows(idx)``, ``diag()``, ``n``),
plus ``block(i, j)``, a lazy ``.dask`` array aligned with the zarr chunks and
``to_numpy()`` for small matrices.
"""

import hashlib
import os
import time

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
import zarr

from ._dask import compute_with_progress, put_data, resolve_client
from ._options import GramOptions
from ._validation import check_data, check_same_features
from .exceptions import IncompleteStoreError, StoreMismatchError
from .kernels import get_kernel, kernel_from_dict

__all__ = ["GramMatrix", "data_fingerprint", "store_size_bytes"]

STORE_FORMAT = "dkernel-gram"
STORE_VERSION = 1

_FINGERPRINT_ROWS = 65536
# Block task arrays are written with empty-chunk detection off: a chunk of zeros
# is still written, so "chunk present" and "block computed" never disagree, and
# the per-chunk scan for the fill value is skipped.
_ARRAY_CONFIG = {"write_empty_chunks": True}


# --------------------------------------------------------------------------- #
# Fingerprints
# --------------------------------------------------------------------------- #


def data_fingerprint(X):
    """SHA-256 of a data matrix: shape, dtype and values (CSR: data, indices, indptr).

    Dense arrays are hashed in row blocks without copying. Two matrices with
    the same fingerprint hold the same values in the same dtype.
    """
    h = hashlib.sha256()
    h.update(f"{type(X).__name__}:{X.shape}:{np.dtype(X.dtype).str}".encode())
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        for part in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(part).data)
    else:
        X = np.ascontiguousarray(X)
        for start in range(0, X.shape[0], _FINGERPRINT_ROWS):
            h.update(X[start : start + _FINGERPRINT_ROWS].data)
    return "sha256:" + h.hexdigest()


def store_size_bytes(path):
    """Bytes on disk under a store folder."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


# --------------------------------------------------------------------------- #
# Block grid and block tasks
# --------------------------------------------------------------------------- #


class _BlockGrid:
    """The block layout of an ``n × m`` Gram: row blocks of X, column blocks of Z."""

    def __init__(self, shape, chunks, symmetric):
        self.n, self.m = (int(s) for s in shape)
        self.rc, self.cc = (int(c) for c in chunks)
        self.symmetric = bool(symmetric)
        self.n_row_blocks = -(-self.n // self.rc)
        self.n_col_blocks = -(-self.m // self.cc)

    @property
    def n_blocks(self):
        return self.n_row_blocks * self.n_col_blocks

    def rows(self, i):
        return slice(i * self.rc, min((i + 1) * self.rc, self.n))

    def cols(self, j):
        return slice(j * self.cc, min((j + 1) * self.cc, self.m))

    def dask_chunks(self):
        def sizes(total, size):
            return tuple(min(size, total - s) for s in range(0, total, size))

        return sizes(self.n, self.rc), sizes(self.m, self.cc)

    def evaluated_blocks(self, done=None):
        """Blocks a run evaluates: all, or (i <= j) for K(X, X), skipping those flagged in ``done``."""
        blocks = []
        for i in range(self.n_row_blocks):
            for j in range(i if self.symmetric else 0, self.n_col_blocks):
                if done is not None and done[i, j] and (not self.symmetric or done[j, i]):
                    continue
                blocks.append((i, j))
        return blocks


def _mirror_upper(K, tile=512):
    """Copy the upper triangle of a square block onto the lower one, in place.

    A diagonal block evaluated by BLAS and element-wise maps is symmetric only
    to rounding (``(a + b) + c`` differs from ``(a + c) + b``); mirroring makes
    the stored Gram exactly symmetric, like the mirrored off-diagonal blocks.
    Works tile by tile to avoid index arrays of the block's size.
    """
    size = K.shape[0]
    for a in range(0, size, tile):
        ta = slice(a, min(a + tile, size))
        for b in range(0, a, tile):
            K[ta, b : b + tile] = K[b : b + tile, ta].T
        square = K[ta, ta]
        lower = np.tril_indices(square.shape[0], -1)
        square[lower] = square.T[lower]
    return K


def _evaluate_block(X, Z, kernel, grid, i, j, dtype):
    rows, cols = grid.rows(i), grid.cols(j)
    on_diagonal = grid.symmetric and i == j
    Zb = X[rows] if on_diagonal else Z[cols]
    K = np.asarray(kernel.block(X[rows], Zb, symmetric=on_diagonal), dtype=dtype)
    if on_diagonal:
        if not K.flags.writeable:
            K = K.copy()
        _mirror_upper(K)
    return K


def _write_block(X, Z, kernel, grid, i, j, dtype, path):
    """Evaluate block (i, j), write it (and its mirror) into the store, then flag it done.

    Returns the number of blocks evaluated (1), so a run can count its work.
    """
    K = _evaluate_block(X, Z, kernel, grid, i, j, dtype)
    rows, cols = grid.rows(i), grid.cols(j)
    store = zarr.open_array(store=path, path="K", mode="r+", config=_ARRAY_CONFIG)
    store[rows, cols] = K
    if grid.symmetric and i != j:
        # zarr copies a transposed (Fortran-ordered) view element by element; one
        # contiguous copy first is several times faster.
        store[cols, rows] = np.ascontiguousarray(K.T)
    if grid.symmetric and i == j:
        zarr.open_array(store=path, path="diag", mode="r+", config=_ARRAY_CONFIG)[rows] = np.diagonal(K)
    # The flags come last: only chunks whose writes returned are marked complete.
    done = zarr.open_array(store=path, path="done", mode="r+", config=_ARRAY_CONFIG)
    done[i, j] = 1
    if grid.symmetric and i != j:
        done[j, i] = 1
    return 1


# --------------------------------------------------------------------------- #
# Where the blocks live: zarr store, local memory, cluster memory
# --------------------------------------------------------------------------- #


class _ZarrBlocks:
    def __init__(self, path, mode):
        self.path = str(path)
        self.group = zarr.open_group(self.path, mode=mode)
        self.K = self.group["K"]
        self._done = None

    def done(self, refresh=False):
        if self._done is None or refresh:
            self._done = self.group["done"][:].astype(bool)
        return self._done

    def block(self, grid, i, j):
        return self.K[grid.rows(i), grid.cols(j)]

    def rows(self, grid, sorted_idx):
        return self.K.get_orthogonal_selection((sorted_idx, slice(None)))

    def diag(self, grid):
        if "diag" in self.group:
            return self.group["diag"][:]
        return None

    def to_dask(self, grid):
        return da.from_zarr(self.K)

    def to_numpy(self, grid):
        return self.K[:]


class _MemoryBlocks:
    """Blocks in this process; a mirrored block is a transposed view of its twin (no copy)."""

    def __init__(self, blocks):
        for K in blocks.values():
            K.flags.writeable = False
        self.blocks = blocks
        self._dask = None

    def done(self, refresh=False):
        return None

    def block(self, grid, i, j):
        return self.blocks[i, j]

    def rows(self, grid, sorted_idx):
        out = np.empty((len(sorted_idx), grid.m), dtype=next(iter(self.blocks.values())).dtype)
        bands = sorted_idx // grid.rc
        for i in np.unique(bands):
            sel = np.flatnonzero(bands == i)
            local = sorted_idx[sel] - i * grid.rc
            for j in range(grid.n_col_blocks):
                out[sel, grid.cols(j)] = self.blocks[i, j][local]
        return out

    def diag(self, grid):
        return None

    def to_dask(self, grid):
        if self._dask is None:
            name = "gram-memory-" + dask.base.tokenize(id(self), grid.n, grid.m)
            self._dask = da.block(
                [
                    [
                        da.from_array(self.blocks[i, j], chunks=self.blocks[i, j].shape, name=f"{name}-{i}-{j}")
                        for j in range(grid.n_col_blocks)
                    ]
                    for i in range(grid.n_row_blocks)
                ]
            )
        return self._dask

    def to_numpy(self, grid):
        return np.block(
            [[self.blocks[i, j] for j in range(grid.n_col_blocks)] for i in range(grid.n_row_blocks)]
        )


class _ClusterBlocks:
    """A persisted Dask array whose blocks stay in the workers' memory."""

    def __init__(self, array, client, owned):
        self.array = array
        self.client = client
        self.owned = owned

    def done(self, refresh=False):
        return None

    def _fetch(self, collection):
        return self.client.compute(collection).result()

    def block(self, grid, i, j):
        return self._fetch(self.array.blocks[i, j])

    def rows(self, grid, sorted_idx):
        return self._fetch(self.array[sorted_idx])

    def diag(self, grid):
        return None

    def to_dask(self, grid):
        return self.array

    def to_numpy(self, grid):
        return self._fetch(self.array)


# --------------------------------------------------------------------------- #
# GramMatrix
# --------------------------------------------------------------------------- #


class GramMatrix:
    """A kernel Gram matrix ``K(X, Z)`` stored in blocks, in memory or in a zarr store.

    Build one with :meth:`compute`, reopen a store with :meth:`open`. The
    solver-facing interface is ``rows(idx)``, ``diag()`` and ``n``.

    Attributes
    ----------
    kernel : Kernel
        The kernel with its data-dependent defaults resolved (``gamma``).
    shape : tuple of int
        ``(n, m)``: rows of X, rows of Z.
    dtype : numpy.dtype
    chunks : tuple of int
        Block (and zarr chunk) shape.
    symmetric : bool
        True for ``K(X, X)``.
    fingerprint : dict
        SHA-256 of X (and Z) as computed by :func:`data_fingerprint`.
    path : str or None
        The zarr store, or None in memory.
    n_blocks_computed : int
        Blocks evaluated by the run that returned this object (0 after :meth:`open`).
    """

    def __init__(self, *, kernel, shape, dtype, chunks, symmetric, fingerprint, blocks, path=None,
                 n_blocks_computed=0, options=None):
        self.kernel = kernel
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.chunks = tuple(int(c) for c in chunks)
        self.symmetric = bool(symmetric)
        self.fingerprint = fingerprint
        self.path = path
        self.n_blocks_computed = int(n_blocks_computed)
        self.options = options or GramOptions()
        self._grid = _BlockGrid(self.shape, self.chunks, self.symmetric)
        self._blocks = blocks
        self._diag = None

    # ---------------------------------------------------------------- build
    @classmethod
    def compute(cls, X, Z=None, kernel="rbf", *, store=None, chunk=None, dtype=None, overwrite=False,
                client=None, progress=None, options=None, **kernel_params):
        """Compute ``K(X, Z)`` blockwise with Dask, in memory or into a zarr store.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
        Z : array-like or sparse matrix of shape (m, d), default=None
            ``None`` (or ``X`` itself) computes the symmetric ``K(X, X)``,
            evaluating only the blocks on and above the diagonal.
        kernel : str, dict or Kernel, default="rbf"
            See :func:`dkernel.kernels.get_kernel`; ``**kernel_params`` are
            passed with a kernel name (``gamma=0.5``).
        store : str or path-like, default=None
            Folder of the zarr store. ``None`` keeps the blocks in memory: in
            this process, or in the workers' memory with a distributed client.
        chunk : int, default=None
            Side of the square blocks; see :class:`GramOptions`.
        dtype : {"float32", "float64"}, default=None
            See :class:`GramOptions`.
        overwrite : bool, default=False
            Replace a store built from other data or another kernel instead
            of raising :class:`StoreMismatchError`.
        client : distributed.Client or str, default=None
            Client or scheduler address (``"tcp://127.0.0.1:8786"``). ``None``
            uses the current default client if any, else Dask's threaded
            scheduler.
        progress : bool, default=None
            Show a progress bar (``None``: the options' value, True by default).
        options : GramOptions, default=None
            Execution options; the keyword arguments above override its fields.

        Returns
        -------
        GramMatrix
            With ``n_blocks_computed`` set to the blocks this call evaluated:
            on an existing store only the missing ones.

        Raises
        ------
        StoreMismatchError
            If ``store`` holds a Gram of other data, kernel, dtype or chunking
            and ``overwrite`` is False. The message lists what differs.
        NonFiniteInputError, EmptyInputError, FeatureMismatchError, InvalidKernelParameterError
            For invalid data or kernel parameters, before anything is written.
        """
        options = (options or GramOptions()).replace(chunk=chunk, dtype=dtype, progress=progress)
        kernel = get_kernel(kernel, **kernel_params)
        X = check_data(X, name="X")
        symmetric = Z is None or Z is X
        if not symmetric:
            Z = check_data(Z, name="Z")
            check_same_features(X, Z)
        gram_dtype = np.dtype(options.dtype or _default_dtype(X, None if symmetric else Z))
        X = X.astype(gram_dtype, copy=False)
        Z = X if symmetric else Z.astype(gram_dtype, copy=False)
        kernel = kernel.resolve(X.shape[1])
        c = options.resolve_chunk(gram_dtype)
        shape = (X.shape[0], Z.shape[0])
        chunks = (min(c, shape[0]),) * 2 if symmetric else (min(c, shape[0]), min(c, shape[1]))
        meta = {
            "kernel": kernel.to_dict(),
            "shape": list(shape),
            "dtype": gram_dtype.name,
            "chunks": list(chunks),
            "symmetric": symmetric,
            "fingerprint": {"X": data_fingerprint(X), "Z": None if symmetric else data_fingerprint(Z)},
        }
        grid = _BlockGrid(shape, chunks, symmetric)

        client, owned = resolve_client(client)
        keep_client = False
        try:
            if store is None:
                blocks, n_computed = _compute_in_memory(X, Z, kernel, grid, gram_dtype, client, owned, options)
                keep_client = isinstance(blocks, _ClusterBlocks)
                path = None
            else:
                path = os.path.abspath(os.fspath(store))
                blocks, n_computed = _compute_into_store(
                    X, Z, kernel, grid, gram_dtype, meta, path, overwrite, client, options
                )
        finally:
            if owned and not keep_client:
                client.close()
        return cls(kernel=kernel, shape=shape, dtype=gram_dtype, chunks=chunks, symmetric=symmetric,
                   fingerprint=meta["fingerprint"], blocks=blocks, path=path, n_blocks_computed=n_computed,
                   options=options)

    @classmethod
    def open(cls, path, mode="r"):
        """Reopen a Gram store written by :meth:`compute`.

        Parameters
        ----------
        path : str or path-like
        mode : {"r", "r+"}, default="r"

        Raises
        ------
        StoreMismatchError
            If ``path`` is not a dkernel Gram store.
        FileNotFoundError
            If ``path`` does not exist.
        """
        path = os.path.abspath(os.fspath(path))
        if not os.path.exists(path):
            raise FileNotFoundError(f"no Gram store at {path}; compute one with GramMatrix.compute(..., store=path).")
        meta = _read_meta(path)
        if meta is None:
            raise StoreMismatchError(f"{path} is not a dkernel Gram store (no '{STORE_FORMAT}' attributes).")
        return cls(kernel=kernel_from_dict(meta["kernel"]), shape=meta["shape"], dtype=meta["dtype"],
                   chunks=meta["chunks"], symmetric=meta["symmetric"], fingerprint=meta["fingerprint"],
                   blocks=_ZarrBlocks(path, mode), path=path)

    # ------------------------------------------------------------ properties
    @property
    def n(self):
        """Number of rows (samples of X)."""
        return self.shape[0]

    @property
    def n_blocks(self):
        """``(n_row_blocks, n_col_blocks)``."""
        return self._grid.n_row_blocks, self._grid.n_col_blocks

    @property
    def n_blocks_done(self):
        """Blocks written so far (all of them in memory)."""
        done = self._blocks.done(refresh=True)
        return self._grid.n_blocks if done is None else int(done.sum())

    @property
    def complete(self):
        return self.n_blocks_done == self._grid.n_blocks

    def __repr__(self):
        where = f"store={self.path!r}" if self.path else "in memory"
        return (f"GramMatrix({self.kernel!r}, shape={self.shape}, dtype={self.dtype.name}, "
                f"chunks={self.chunks}, {where})")

    # ---------------------------------------------------------------- reading
    def _check_blocks(self, row_blocks, col_blocks=None):
        done = self._blocks.done()
        if done is None:
            return
        cols = slice(None) if col_blocks is None else col_blocks
        if done[row_blocks][:, cols].all():
            return
        done = self._blocks.done(refresh=True)
        if not done[row_blocks][:, cols].all():
            raise IncompleteStoreError(
                f"the Gram store {self.path} has {int(done.sum())} of {done.size} blocks computed, and the "
                f"requested rows need some of the missing ones; re-run GramMatrix.compute (or `dkernel gram`) "
                f"with the same data and kernel to finish it."
            )

    def rows(self, idx):
        """Rows ``K[idx, :]`` as a ``(len(idx), m)`` ndarray, in the order of ``idx``.

        Only the chunks of the row blocks that hold ``idx`` are read. Repeated
        and unsorted indices are allowed; they are read once, in sorted order.
        """
        idx = np.asarray(idx)
        if idx.ndim != 1 or not (idx.size == 0 or np.issubdtype(idx.dtype, np.integer)):
            raise IndexError(f"idx must be a 1-D array of integer row indices; got shape {idx.shape}, "
                             f"dtype {idx.dtype}.")
        if idx.size == 0:
            return np.empty((0, self.shape[1]), dtype=self.dtype)
        idx = idx.astype(np.intp, copy=False)
        if idx.min() < 0 or idx.max() >= self.n:
            bad = idx[(idx < 0) | (idx >= self.n)][0]
            raise IndexError(f"row index {bad} is out of range for a Gram with {self.n} rows.")
        already_sorted = idx.size == 1 or bool(np.all(idx[1:] > idx[:-1]))
        if already_sorted:
            unique, inverse = idx, None
        else:
            unique, inverse = np.unique(idx, return_inverse=True)
        self._check_blocks(np.unique(unique // self._grid.rc))
        out = self._blocks.rows(self._grid, unique)
        return out if inverse is None else out[inverse]

    def block(self, i, j):
        """Block (i, j) of the grid as an ndarray."""
        nb, mb = self.n_blocks
        if not (0 <= i < nb and 0 <= j < mb):
            raise IndexError(f"block ({i}, {j}) is outside the {nb}×{mb} block grid.")
        self._check_blocks(np.array([i]), np.array([j]))
        return self._blocks.block(self._grid, i, j)

    def diag(self):
        """The diagonal ``K(x_i, x_i)``, n values, as stored (K(X, X) only)."""
        if not self.symmetric:
            raise ValueError("diag() is defined for a square Gram K(X, X); this one is K(X, Z).")
        if self._diag is None:
            self._check_blocks(np.arange(self._grid.n_row_blocks))
            diag = self._blocks.diag(self._grid)
            if diag is None:
                diag = np.concatenate(
                    [np.diagonal(self._blocks.block(self._grid, i, i)) for i in range(self._grid.n_row_blocks)]
                )
            self._diag = np.asarray(diag, dtype=self.dtype)
        return self._diag

    @property
    def dask(self):
        """A lazy Dask array of K, with chunks aligned to the stored blocks."""
        return self._blocks.to_dask(self._grid)

    def to_numpy(self, force=False):
        """The whole matrix as one ndarray (refused above ``options.to_numpy_max_bytes`` unless ``force``)."""
        nbytes = self.shape[0] * self.shape[1] * self.dtype.itemsize
        limit = self.options.to_numpy_max_bytes
        if nbytes > limit and not force:
            raise MemoryError(
                f"K is {self.shape[0]}×{self.shape[1]} {self.dtype.name} ({_format_bytes(nbytes)}), above the "
                f"{_format_bytes(limit)} limit of to_numpy(); read rows(idx) or block(i, j), use .dask, "
                f"or pass force=True."
            )
        self._check_blocks(np.arange(self._grid.n_row_blocks))
        return self._blocks.to_numpy(self._grid)

    def in_memory(self):
        """A copy of this Gram held in this process's memory, for fast repeated ``rows(idx)``.

        For ``K(X, X)`` only the blocks on and above the diagonal are read and
        kept; the others are transposed views of them, so the copy takes about
        half of ``n² × itemsize`` bytes.
        """
        grid = self._grid
        self._check_blocks(np.arange(grid.n_row_blocks))
        blocks = {}
        for i, j in grid.evaluated_blocks():
            blocks[i, j] = np.asarray(self._blocks.block(grid, i, j))
            if grid.symmetric and i != j:
                blocks[j, i] = blocks[i, j].T
        return type(self)(kernel=self.kernel, shape=self.shape, dtype=self.dtype, chunks=self.chunks,
                          symmetric=self.symmetric, fingerprint=self.fingerprint, blocks=_MemoryBlocks(blocks),
                          options=self.options)

    def info(self):
        """A dict describing the Gram: kernel, shape, dtype, chunks, completeness, size on disk."""
        return {
            "path": self.path,
            "kernel": self.kernel.to_dict(),
            "shape": self.shape,
            "dtype": self.dtype.name,
            "chunks": self.chunks,
            "symmetric": self.symmetric,
            "blocks_done": self.n_blocks_done,
            "blocks_total": self._grid.n_blocks,
            "bytes_on_disk": store_size_bytes(self.path) if self.path else 0,
            "fingerprint": self.fingerprint,
        }

    def close(self):
        """Close a client this object opened (in-memory Gram on a cluster given by address)."""
        if isinstance(self._blocks, _ClusterBlocks) and self._blocks.owned:
            self._blocks.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------- #
# Runs
# --------------------------------------------------------------------------- #


def _default_dtype(X, Z):
    if X.dtype == np.float32 and (Z is None or Z.dtype == np.float32):
        return np.float32
    return np.float64


def _format_bytes(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def _data_keys(X, Z, grid, client):
    Xk = put_data(X, client, name="gram-X-" + dask.base.tokenize(id(X), X.shape))
    Zk = Xk if grid.symmetric else put_data(Z, client, name="gram-Z-" + dask.base.tokenize(id(Z), Z.shape))
    return Xk, Zk


def _compute_in_memory(X, Z, kernel, grid, dtype, client, owned, options):
    Xk, Zk = _data_keys(X, Z, grid, client)
    pairs = grid.evaluated_blocks()
    tasks = [dask.delayed(_evaluate_block, pure=False)(Xk, Zk, kernel, grid, i, j, dtype) for i, j in pairs]
    if client is None:
        results = compute_with_progress(tasks, None, options.progress)
        blocks = {}
        for (i, j), K in zip(pairs, results):
            blocks[i, j] = K
            if grid.symmetric and i != j:
                blocks[j, i] = K.T
        return _MemoryBlocks(blocks), len(pairs)

    from distributed import progress as distributed_progress
    from distributed import wait

    row_sizes, col_sizes = grid.dask_chunks()
    by_pair = dict(zip(pairs, tasks))
    grid_arrays = []
    for i in range(grid.n_row_blocks):
        row = []
        for j in range(grid.n_col_blocks):
            shape = (row_sizes[i], col_sizes[j])
            if (i, j) in by_pair:
                row.append(da.from_delayed(by_pair[i, j], shape=shape, dtype=dtype))
            else:
                mirrored = dask.delayed(np.transpose, pure=True)(by_pair[j, i])
                row.append(da.from_delayed(mirrored, shape=shape, dtype=dtype))
        grid_arrays.append(row)
    array = client.persist(da.block(grid_arrays))
    futures = _futures_of(array)
    if options.progress:
        distributed_progress(array, notebook=False)
    wait(futures)
    for f in futures:
        if f.status == "error":
            f.result()
    return _ClusterBlocks(array, client, owned), len(pairs)


def _futures_of(collection):
    from distributed import futures_of

    return futures_of(collection)


def _read_meta(path):
    try:
        group = zarr.open_group(path, mode="r")
    except (FileNotFoundError, zarr.errors.GroupNotFoundError, ValueError, KeyError):
        return None
    attrs = dict(group.attrs)
    if attrs.get("format") != STORE_FORMAT:
        return None
    return attrs


def _describe_kernel(spec):
    params = ", ".join(f"{k}={v}" for k, v in spec.get("params", {}).items())
    return f"{spec.get('name')}({params})"


def _mismatches(stored, meta):
    diffs = []
    if stored.get("kernel") != meta["kernel"]:
        diffs.append(f"kernel (store: {_describe_kernel(stored.get('kernel', {}))}, "
                     f"requested: {_describe_kernel(meta['kernel'])})")
    if stored.get("symmetric") != meta["symmetric"]:
        diffs.append("form (store: {}, requested: {})".format(
            *("K(X, X)" if s else "K(X, Z)" for s in (stored.get("symmetric"), meta["symmetric"]))))
    if list(stored.get("shape", [])) != meta["shape"]:
        diffs.append(f"shape (store: {stored.get('shape')}, requested: {meta['shape']})")
    if stored.get("dtype") != meta["dtype"]:
        diffs.append(f"dtype (store: {stored.get('dtype')}, requested: {meta['dtype']})")
    if list(stored.get("chunks", [])) != meta["chunks"]:
        diffs.append(f"chunks (store: {stored.get('chunks')}, requested: {meta['chunks']})")
    fp, req = stored.get("fingerprint") or {}, meta["fingerprint"]
    for name in ("X", "Z"):
        if fp.get(name) != req[name]:
            diffs.append(f"data {name} (fingerprint store: {str(fp.get(name))[:19]}…, "
                         f"requested: {str(req[name])[:19]}…)")
    return diffs


def _create_store(path, meta, grid, options):
    root = zarr.open_group(path, mode="w")
    root.create_array("K", shape=tuple(meta["shape"]), chunks=tuple(meta["chunks"]), dtype=meta["dtype"],
                      compressors=options.zarr_compressors(), fill_value=np.nan)
    root.create_array("done", shape=(grid.n_row_blocks, grid.n_col_blocks), chunks=(1, 1), dtype="uint8",
                      fill_value=0, compressors=None)
    if grid.symmetric:
        root.create_array("diag", shape=(grid.n,), chunks=(grid.rc,), dtype=meta["dtype"], fill_value=np.nan,
                          compressors=None)
    # The attributes go last: a folder without them is not taken for a store.
    root.attrs.update({"format": STORE_FORMAT, "format_version": STORE_VERSION, **meta,
                       "n_blocks": [grid.n_row_blocks, grid.n_col_blocks], "blocks_done": 0})


def _prepare_store(path, meta, grid, overwrite, options):
    """Open a matching store or create a new one; refuse a store of other data unless ``overwrite``."""
    exists = os.path.exists(path)
    if exists:
        if not os.path.isdir(path):
            raise StoreMismatchError(f"{path} exists and is a file, not a Gram store; choose another path.")
        stored = _read_meta(path)
        if stored is None:
            is_zarr = os.path.exists(os.path.join(path, "zarr.json"))
            if os.listdir(path) and not (overwrite and is_zarr):
                raise StoreMismatchError(
                    f"{path} exists and is not a dkernel Gram store; "
                    + ("pass overwrite=True (CLI: --overwrite) to replace it." if is_zarr
                       else "choose another path (it is not deleted).")
                )
        else:
            diffs = _mismatches(stored, meta)
            if not diffs:
                return
            if not overwrite:
                raise StoreMismatchError(
                    f"the Gram store {path} was built with another " + "; ".join(diffs)
                    + ". Pass overwrite=True (CLI: --overwrite) to replace it, or choose another path."
                )
    _create_store(path, meta, grid, options)


def _compute_into_store(X, Z, kernel, grid, dtype, meta, path, overwrite, client, options):
    _prepare_store(path, meta, grid, overwrite, options)
    blocks = _ZarrBlocks(path, "r+")
    done_before = blocks.done()
    pairs = grid.evaluated_blocks(done=done_before)
    n_computed = 0
    started = time.perf_counter()
    try:
        if pairs:
            Xk, Zk = _data_keys(X, Z, grid, client)
            tasks = [dask.delayed(_write_block, pure=False)(Xk, Zk, kernel, grid, i, j, dtype, path)
                     for i, j in pairs]
            n_computed = sum(compute_with_progress(tasks, client, options.progress))
    finally:
        done = blocks.done(refresh=True)
        blocks.group.attrs.update({
            "blocks_done": int(done.sum()),
            "last_run": {
                "n_blocks_computed": n_computed,
                "n_blocks_flagged": int(done.sum() - done_before.sum()),
                "n_blocks_requested": len(pairs),
                "seconds": round(time.perf_counter() - started, 3),
            },
        })
    return blocks, n_computed
