"""The :class:`GramMatrix`: a kernel Gram matrix held in blocks, in memory or in a zarr store.

Built by :meth:`GramMatrix.compute` (:mod:`dkernel.gram._compute`), reopened
by :meth:`GramMatrix.open`. The reading side is what a solver needs
(``rows(idx)``, ``diag()``, ``n``, and ``submatrix(idx, start, stop)``, the
column slab of one distributed solver worker), plus ``block(i, j)``, a lazy
``.dask`` array aligned with the zarr chunks and ``to_numpy()`` for small
matrices. Every read from a store is checked against the store's checksums;
:meth:`GramMatrix.verify` checks every block.
"""

import os
import warnings

import dask
import dask.array as da
import numpy as np
from dask.utils import format_bytes

from .._runtime.client import resolve_client, worker_memory_limit
from .._runtime.object_store import is_url
from .._runtime.options import GramOptions
from .._runtime.validation import check_data, check_same_features
from ..exceptions import CorruptStoreError, IncompleteStoreError, StoreMismatchError, UnverifiedStoreWarning
from ..kernels._kernels import get_kernel, kernel_from_dict, output_dtype
from ._blocks import _ClusterBlocks, _MemoryBlocks, _warn_unverified, _ZarrBlocks
from ._compute import _compute_in_memory, _compute_into_store
from ._format import _provenance_of, data_fingerprint, describe_operators, matrix_form, store_size_bytes
from ._grid import _BlockGrid, block_shape
from ._identity import StoreLostError, replaced_message
from ._metadata import not_a_store, read_store_meta
from ._remote import compute_into_url, open_url
from ._store import check_store_path

__all__ = ["GramMatrix"]


class GramMatrix:
    """A kernel Gram matrix ``K(X, Z)`` stored in blocks, in memory or in a zarr store.

    Build one with :meth:`compute`, reopen a store with :meth:`open`. The
    solver-facing interface is ``rows(idx)``, ``submatrix(idx, start, stop)``,
    ``diag()`` and ``n``.

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
    provenance : dict
        What the matrix is: ``kernel`` (the base kernel, as a dict),
        ``fingerprint`` (of the data) and ``operators``, the chain of views
        applied to ``K`` before it was stored, innermost first (empty for a
        raw Gram; see :func:`dkernel.gram.steps_from_description`).
    """

    def __init__(self, *, kernel, shape, dtype, chunks, symmetric, fingerprint, blocks, path=None,
                 n_blocks_computed=0, options=None, provenance=None):
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
        if provenance is None:
            provenance = {"kernel": kernel.to_dict() if kernel is not None else None, "fingerprint": fingerprint,
                          "operators": []}
        self.provenance = provenance

    # ---------------------------------------------------------------- build
    @classmethod
    def compute(cls, X, Z=None, kernel="rbf", *, store=None, chunk=None, dtype=None, overwrite=False,
                client=None, progress=None, options=None, verify=None, storage_options=None, **kernel_params):
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
            Folder of the zarr store, or an fsspec URL (``"s3://bucket/K.zarr"``, written without rename by
            the versioned protocol of :mod:`dkernel.gram._remote`). ``None`` keeps the blocks in memory: in
            this process, or in the workers' memory with a distributed client.
            A symbolic link is written through (its target is the store). The
            run holds the store it writes: a later run on the same store takes
            it over, and a store replaced meanwhile never receives its blocks
            (:mod:`dkernel.gram._identity`).
        chunk : int, default=None
            Side of the square blocks; None: blocks of about 128 MiB, at most an eighth of the smallest worker
            ``memory_limit`` of ``client`` (:func:`~dkernel.gram._grid.block_shape`); see :class:`GramOptions`.
        dtype : {"float32", "float64"}, default=None
            See :class:`GramOptions`.
        overwrite : bool, default=False
            Replace a Gram store built from other data, another kernel or
            another provenance (a derived store) instead of raising
            :class:`StoreMismatchError`. The new store is built beside the old
            one (``.NAME.dkernel-partial``, resumed there after an
            interruption) and swapped in when complete, so the old store stays
            readable until then. Only a Gram store is ever replaced: any other
            folder or file, or a store holding files dkernel did not write,
            raises :class:`ArtifactPathError` and is left as is.
        client : distributed.Client, str or False, default=None
            Client or scheduler address (``"tcp://127.0.0.1:8786"``). ``None``
            uses the current default client if any, else Dask's threaded
            scheduler; ``False`` always runs in this process (threads).
        progress : bool, default=None
            Show a progress bar (``None``: the options' value, True by default).
        options : GramOptions, default=None
            Execution options; the keyword arguments above override its fields.
        verify : bool, default=None
            On an existing store, check the blocks it holds against their
            checksums first and recompute the damaged ones with the missing
            ones (one read of the stored blocks). ``None``: the options' value,
            True by default.
        storage_options : dict, default=None
            For a URL ``store``: the filesystem's options (s3fs: ``endpoint_url``, ``key``...); never stored.

        Returns
        -------
        GramMatrix
            With ``n_blocks_computed`` set to the blocks this call evaluated:
            on an existing store only the missing and damaged ones (a block
            and its mirror are one evaluation), and ``blocks_repaired`` to the
            damaged blocks found and rewritten.

        Raises
        ------
        StoreMismatchError
            If ``store`` holds a Gram of other data, kernel, dtype, chunking
            or provenance (a centered or normalized store is not a raw Gram)
            and ``overwrite`` is False (the message lists what differs); or
            if another run replaced the store or took it over during this one.
        CorruptStoreError
            If the store's metadata are damaged beyond what this run can
            repair, without ``overwrite`` (the message names the key).
        ArtifactPathError
            If ``store`` is a file, a folder that is not a Gram store, or a
            dkernel artifact of another kind (a model); checked before the
            data are read.
        NonFiniteInputError, EmptyInputError, FeatureMismatchError, InvalidKernelParameterError
            For invalid data or kernel parameters, before anything is written.
        """
        options = (options or GramOptions()).replace(chunk=chunk, dtype=dtype, progress=progress, verify=verify)
        if store is not None and not is_url(store):
            check_store_path(store, overwrite)  # before the data are read: a path that is refused whatever they are
        kernel = get_kernel(kernel, **kernel_params)
        X = check_data(X, name="X")
        symmetric = Z is None or Z is X
        if not symmetric:
            Z = check_data(Z, name="Z")
            check_same_features(X, Z)
        gram_dtype = np.dtype(options.dtype or output_dtype(X, None if symmetric else Z))
        # The kernel is evaluated in the wider of the store's and the data's precision, then stored: a
        # float32 store of float64 data holds the float64 values rounded once (as an in-memory float32
        # Gram does), not values computed from data rounded to float32 (squared distances lose digits).
        data_dtype = np.result_type(gram_dtype, X.dtype if symmetric else np.result_type(X.dtype, Z.dtype))
        X = X.astype(data_dtype, copy=False)
        Z = X if symmetric else Z.astype(data_dtype, copy=False)
        kernel = kernel.resolve(X.shape[1])
        shape = (X.shape[0], Z.shape[0])
        client, owned = resolve_client(client)
        keep_client = False
        try:
            memory_limit = worker_memory_limit(client) if options.chunk is None else None  # asked only when used
            chunks = block_shape(options, gram_dtype, shape, symmetric, memory_limit)
            meta = {
                "kernel": kernel.to_dict(),
                "shape": list(shape),
                "dtype": gram_dtype.name,
                "chunks": list(chunks),
                "symmetric": symmetric,
                "fingerprint": {"X": data_fingerprint(X), "Z": None if symmetric else data_fingerprint(Z)},
            }
            meta["provenance"] = {"kernel": meta["kernel"], "fingerprint": meta["fingerprint"], "operators": []}
            grid = _BlockGrid(shape, chunks, symmetric)

            if store is None:
                blocks, n_computed = _compute_in_memory(X, Z, kernel, grid, gram_dtype, client, owned, options)
                keep_client = isinstance(blocks, _ClusterBlocks)
                path = None
            elif is_url(store):
                path = store
                blocks, n_computed = compute_into_url(X, Z, kernel, grid, gram_dtype, meta, store, overwrite,
                                                      client, options, storage_options)
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
                   options=options, provenance=meta["provenance"])

    @classmethod
    def open(cls, path, mode="r", storage_options=None):
        """Reopen a Gram store written by :meth:`compute`, or a derived store written by a view's ``to_zarr``.

        A derived store (centered, normalized...) opens for reading like a
        raw one; its :attr:`provenance` and :attr:`operators` say what it
        holds (``is_raw`` is False). Code that needs the raw Gram of a kernel
        (``compute(store=...)``, ``SVC(store=...)``) refuses it.

        Parameters
        ----------
        path : str or path-like
            A folder, or the URL of a store written there by :meth:`compute` (``storage_options`` as there).
        mode : {"r", "r+"}, default="r"

        The returned object holds the store it opened: if another store is
        written at ``path`` later (``overwrite``, a derived store written in
        place), its reads raise :class:`StoreMismatchError` instead of
        returning values of the new store.

        Raises
        ------
        StoreMismatchError
            If ``path`` is not a dkernel Gram store.
        CorruptStoreError
            If the store's metadata are damaged (the message names the key
            and the repair).
        FileNotFoundError
            If ``path`` does not exist.
        """
        if is_url(path):
            return open_url(cls, path, storage_options)
        path = os.path.abspath(os.fspath(path))
        if not os.path.exists(path):
            raise FileNotFoundError(f"no Gram store at {path}; compute one with GramMatrix.compute(..., store=path).")
        meta = read_store_meta(path)
        if meta is None:
            raise StoreMismatchError(not_a_store(path))
        return cls(kernel=kernel_from_dict(meta["kernel"]), shape=meta["shape"], dtype=meta["dtype"],
                   chunks=meta["chunks"], symmetric=meta["symmetric"], fingerprint=meta["fingerprint"],
                   blocks=_warn_unverified(_ZarrBlocks(path, mode, attrs=meta)), path=path,
                   provenance=_provenance_of(meta))

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
        """Blocks written so far (all of them in memory); in a store, those flagged done whose chunk file is there
        (whether their data are intact is what :meth:`verify` reads)."""
        self._check_store()
        done = self._blocks.done(refresh=True)
        if done is None:
            return self._grid.n_blocks
        present = getattr(self._blocks, "present", None)  # a store on disk: the blocks whose chunk file is there
        return int((done if present is None else present(done)).sum())

    @property
    def blocks_repaired(self):
        """The damaged blocks that the :meth:`compute` call returning this object found and rewrote."""
        return list(getattr(self._blocks, "repaired", []))

    @property
    def complete(self):
        return self.n_blocks_done == self._grid.n_blocks

    def __repr__(self):
        where = f"store={self.path!r}" if self.path else "in memory"
        return (f"GramMatrix({self.kernel!r}, shape={self.shape}, dtype={self.dtype.name}, "
                f"chunks={self.chunks}, {where})")

    # ---------------------------------------------------------------- reading
    def _check_store(self):
        """Raise :class:`StoreMismatchError` when the store this object reads was replaced at its path."""
        stamp = getattr(self._blocks, "stamp", None)
        if stamp is not None:
            stamp.check()

    def _check_blocks(self, row_blocks, col_blocks=None):
        self._check_store()
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

    def _read(self, read, *args):
        """``read(*args)``, once more with the checksums read afresh if it finds corrupted data.

        Cached checksums may be older than the data when the store was
        repaired since they were read (a recomputed block can differ in the
        last bit, under another BLAS thread count). Before and after the read
        the store is checked to be the one this object opened
        (:meth:`_check_store`): a store replaced under the reader raises,
        whatever was read, and is never taken for a repair.
        """
        self._check_store()
        try:
            values = read(*args)
        except CorruptStoreError:
            self._check_store()
            checksums = getattr(self._blocks, "checksums", None)
            if checksums is None:
                raise
            checksums.forget()
            values = read(*args)
        self._check_store()
        return values

    def rows(self, idx):
        """Rows ``K[idx, :]`` as a ``(len(idx), m)`` ndarray, in the order of ``idx``.

        Repeated and unsorted indices are allowed; they are read once, in
        sorted order (distinct rows from a store straight into their place in
        the result). From an uncompressed store only the bytes of the
        requested rows are read (one contiguous range per row and block), so
        the cost follows ``len(idx) × m``, not the blocks touched; each row
        read is checked against its checksums.
        """
        return self.submatrix(idx, 0, self.shape[1])

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``: rows ``idx``, columns ``start:stop``, in the order of ``idx``.

        Reads only the blocks of the columns ``start:stop``: a worker of the
        distributed solver reads the rows of the working set in its own
        column range.
        """
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.shape[1]:
            raise IndexError(f"columns {start}:{stop} are out of range for a Gram with {self.shape[1]} columns.")
        idx = np.asarray(idx)
        if idx.ndim != 1 or not (idx.size == 0 or np.issubdtype(idx.dtype, np.integer)):
            raise IndexError(f"idx must be a 1-D array of integer row indices; got shape {idx.shape}, "
                             f"dtype {idx.dtype}.")
        if idx.size == 0 or start == stop:
            return np.empty((idx.size, stop - start), dtype=self.dtype)
        idx = idx.astype(np.intp, copy=False)
        if idx.min() < 0 or idx.max() >= self.n:
            bad = idx[(idx < 0) | (idx >= self.n)][0]
            raise IndexError(f"row index {bad} is out of range for a Gram with {self.n} rows.")
        already_sorted = idx.size == 1 or bool(np.all(idx[1:] > idx[:-1]))
        inverse = order = None
        if already_sorted:
            unique = idx
        else:
            order = np.argsort(idx, kind="stable")
            unique = idx[order]
            if not np.all(unique[1:] > unique[:-1]):  # repeated rows: read once each, then repeat
                order = None
                unique, inverse = np.unique(idx, return_inverse=True)
        grid = self._grid
        self._check_blocks(np.unique(unique // grid.rc), np.arange(start // grid.cc, -(-stop // grid.cc)))
        if order is not None and isinstance(self._blocks, _ZarrBlocks):
            # Distinct rows from a store: each read straight into its place in the caller's order.
            return self._read(self._blocks.submatrix, grid, unique, start, stop, order)
        out = self._read(self._blocks.submatrix, grid, unique, start, stop)
        if order is not None:
            inverse = np.empty_like(order)
            inverse[order] = np.arange(order.size)
        return out if inverse is None else out[inverse]

    def block(self, i, j):
        """Block (i, j) of the grid as an ndarray."""
        nb, mb = self.n_blocks
        if not (0 <= i < nb and 0 <= j < mb):
            raise IndexError(f"block ({i}, {j}) is outside the {nb}×{mb} block grid.")
        self._check_blocks(np.array([i]), np.array([j]))
        return self._read(self._blocks.block, self._grid, i, j)

    def diag(self):
        """The diagonal ``K(x_i, x_i)``, n values, as stored (K(X, X) only)."""
        if not self.symmetric:
            raise ValueError("diag() is defined for a square Gram K(X, X); this one is K(X, Z).")
        if self._diag is None:
            self._check_blocks(np.arange(self._grid.n_row_blocks))
            diag = self._read(self._blocks.diag, self._grid)
            if diag is None:
                diag = np.concatenate(
                    [np.diagonal(self._read(self._blocks.block, self._grid, i, i))
                     for i in range(self._grid.n_row_blocks)]
                )
            self._diag = np.asarray(diag, dtype=self.dtype)
        return self._diag

    @property
    def dask(self):
        """A lazy Dask array of K, with chunks aligned to the stored blocks.

        From a store, each task reads one block and checks it against its
        checksums (:class:`CorruptStoreError` on a damaged block,
        :class:`IncompleteStoreError` on a missing one); every worker must
        reach the store's path.
        """
        if isinstance(self._blocks, _ZarrBlocks):
            return _store_dask(self._blocks, self._grid)
        return self._blocks.to_dask(self._grid)

    def to_numpy(self, force=False):
        """The whole matrix as one ndarray (refused above ``options.to_numpy_max_bytes`` unless ``force``)."""
        nbytes = self.shape[0] * self.shape[1] * self.dtype.itemsize
        limit = self.options.to_numpy_max_bytes
        if nbytes > limit and not force:
            raise MemoryError(
                f"K is {self.shape[0]}×{self.shape[1]} {self.dtype.name} ({format_bytes(nbytes)}), above the "
                f"{format_bytes(limit)} limit of to_numpy(); read rows(idx) or block(i, j), use .dask, "
                f"or pass force=True."
            )
        self._check_blocks(np.arange(self._grid.n_row_blocks))
        return self._read(self._blocks.to_numpy, self._grid)

    @property
    def held_by_cluster(self):
        """Whether the blocks are held in a Dask cluster's memory (persisted there): such a Gram cannot travel to workers."""
        return isinstance(self._blocks, _ClusterBlocks)

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
            blocks[i, j] = np.asarray(self._read(self._blocks.block, grid, i, j))
            if grid.symmetric and i != j:
                blocks[j, i] = blocks[i, j].T
        return type(self)(kernel=self.kernel, shape=self.shape, dtype=self.dtype, chunks=self.chunks,
                          symmetric=self.symmetric, fingerprint=self.fingerprint, blocks=_MemoryBlocks(blocks),
                          options=self.options, provenance=self.provenance)

    def verify(self, progress=False):
        """Check every computed block of the store against the checksums written with it.

        Reads each computed block once (the whole store when it is complete,
        at the speed of the disk or of its cache) and compares the CRC-32C
        of every row; for K(X, X) also the stored diagonal (a damaged chunk
        of it counts as its diagonal block). Blocks not computed yet are not
        checked: see :attr:`n_blocks_done` and :attr:`complete`.

        Parameters
        ----------
        progress : bool, default=False
            Show a progress line while blocks are read.

        Returns
        -------
        list of (int, int)
            The damaged blocks (i, j), sorted; empty when every computed block
            is intact (and for a Gram held in memory). Re-running
            :meth:`compute` with the same data and kernel on this store
            (``dkernel gram``) recomputes exactly these blocks, with the
            missing ones.

        Raises
        ------
        UnverifiableStoreError
            If the store was written without checksums (format version 1 or 2).
        """
        if not hasattr(self._blocks, "corrupt_blocks"):
            return []
        return self._blocks.corrupt_blocks(self._grid, progress=progress)

    @property
    def operators(self):
        """The operator chain of a derived store, innermost first; empty for a raw Gram."""
        return list(self.provenance.get("operators") or [])

    @property
    def is_raw(self):
        """True when the matrix is the kernel's Gram itself, not a derived (centered, normalized...) one."""
        return not self.operators

    def info(self):
        """A dict describing the Gram: kernel, shape, dtype, chunks, completeness, size on disk, provenance.

        ``matrix`` names what is stored (``K(X, X)``, or e.g.
        ``centered(K(X, X))``), ``operators`` describes the operator chain in
        one line, and ``provenance`` holds it in full (:attr:`provenance`).
        """
        return {
            "matrix": matrix_form(self.operators, self.symmetric),
            "operators": describe_operators(self.operators),
            "provenance": self.provenance,
            "path": self.path,
            "kernel": self.kernel.to_dict(),
            "shape": self.shape,
            "dtype": self.dtype.name,
            "chunks": self.chunks,
            "symmetric": self.symmetric,
            "blocks_done": self.n_blocks_done,
            "blocks_total": self._grid.n_blocks,
            "bytes_on_disk": store_size_bytes(self.path) if self.path and not is_url(self.path) else 0,
            "fingerprint": self.fingerprint,
            "checksums": getattr(self._blocks, "checksums", None) is not None if self.path else None,
        }

    def close(self):
        """Close a client this object opened (in-memory Gram on a cluster given by address)."""
        if isinstance(self._blocks, _ClusterBlocks) and self._blocks.owned:
            self._blocks.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _store_dask(blocks, grid):
    """The lazy Dask array of a store: one chunk per block (shard), not per inner chunk.

    Each task reads and checks its block (:class:`_StoreBlockReader`).
    """
    dtype = np.dtype(blocks.K.dtype)
    write_id = blocks.stamp.write_id
    name = "gram-store-" + dask.base.tokenize(blocks.path, write_id, grid.n, grid.m, grid.rc, grid.cc, dtype.str)
    return da.from_array(_StoreBlockReader(blocks.path, grid, dtype, write_id), chunks=grid.dask_chunks(),
                         name=name, asarray=False, fancy=False, meta=np.empty((0, 0), dtype=dtype))


class _StoreBlockReader:
    """The blocks of a store for :func:`dask.array.from_array`: each task reads and checks the part it needs.

    Pickled as the store's path, identity and layout; the store is opened in
    the process that reads it, and must still be the store of that identity.
    """

    def __init__(self, path, grid, dtype, write_id=None):
        self.path, self.grid, self.dtype, self.write_id = path, grid, np.dtype(dtype), write_id
        self.shape = (grid.n, grid.m)
        self.ndim = 2
        self._gram = None

    def __getstate__(self):
        return {"path": self.path, "grid": self.grid, "dtype": self.dtype, "write_id": self.write_id}

    def __setstate__(self, state):
        self.__init__(state["path"], state["grid"], state["dtype"], state.get("write_id"))

    def __getitem__(self, key):
        rows, cols = key
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        if r1 <= r0 or c1 <= c0:
            return np.empty((max(0, r1 - r0), max(0, c1 - c0)), dtype=self.dtype)
        if self._gram is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UnverifiedStoreWarning)
                self._gram = GramMatrix.open(self.path)
            if self._gram._blocks.stamp.write_id != self.write_id:
                self._gram = None
                raise StoreLostError(replaced_message(self.path))
        grid = self.grid
        i, j = r0 // grid.rc, c0 // grid.cc
        if (r0, r1, c0, c1) == (grid.rows(i).start, grid.rows(i).stop, grid.cols(j).start, grid.cols(j).stop):
            return np.asarray(self._gram.block(i, j))
        return self._gram.submatrix(np.arange(r0, r1), c0, c1)
