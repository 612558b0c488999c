"""Gram matrices computed blockwise by Dask and persisted in zarr.

A :class:`GramMatrix` holds ``K(X, Z)`` (``Z = X`` by default) as a grid of
square blocks. Each block is one Dask task that evaluates the kernel on a row
block of X and a row block of Z and, with a store, writes the result straight
from the worker into its zarr chunk. For ``K(X, X)`` only the blocks on and
above the diagonal are evaluated: the task of block (i, j), i < j, also writes
its transpose into chunk (j, i), which halves the kernel work and makes the
stored matrix exactly symmetric.

Store layout (a zarr v3 group, format version 2)::

    K.zarr/
      zarr.json     attributes: kernel, shape, dtype, chunks, data fingerprint,
                    completeness summary, statistics of the last run
      K/            the Gram matrix, one shard per block (fill value NaN); a
                    shard holds inner chunks of a few full-width rows
      done/         uint8 (n_row_blocks, n_col_blocks): 1 once a block is written
      diag/         the diagonal (K(X, X) only), written by the diagonal blocks

``K`` is a standard zarr v3 sharded array that any zarr reader opens. Without
compression (the default) its shards are read and written here directly
(:class:`_ShardFiles`): a block task writes each shard with one sequential
file write, and ``rows(idx)`` reads, for each requested row, only that row's
bytes in each shard it crosses, so scattered row reads cost what they return
rather than whole blocks. Compressed stores, and stores of format version 1
(one plain chunk per block), are read and written through zarr; they give the
same values, but a row read decodes whole inner chunks (version 1: whole
blocks).

A block's ``done`` flag is written by the task that computed it, after its
chunk writes returned (both chunks of a mirrored pair), so an interrupted run
never leaves a block that claims to be finished. Re-running
:meth:`GramMatrix.compute` on the same store evaluates only the blocks not yet
flagged. On a cluster, every worker must reach the store's path: one machine,
a shared filesystem, or an object store.

The reading side is what a solver needs (``rows(idx)``, ``diag()``, ``n``,
and ``submatrix(idx, start, stop)``, the column slab of one distributed
solver worker), plus ``block(i, j)``, a lazy ``.dask`` array aligned with the zarr chunks and
``to_numpy()`` for small matrices.
"""

import contextlib
import hashlib
import os
import time
import uuid

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
import zarr

from ._buffers import block_buffer, release_pool
from ._dask import TextProgress, compute_with_progress, put_data, resolve_client, wait_with_progress
from ._options import GramOptions
from ._validation import check_data, check_same_features
from .exceptions import IncompleteStoreError, StoreMismatchError
from .kernels import RBFKernel, get_kernel, kernel_from_dict

__all__ = ["GramMatrix", "data_fingerprint", "store_size_bytes"]

STORE_FORMAT = "dkernel-gram"
STORE_VERSION = 2

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


def _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=None):
    """Block (i, j) of the Gram; into ``out`` (an array of the block's shape and dtype) where the kernel allows."""
    rows, cols = grid.rows(i), grid.cols(j)
    on_diagonal = grid.symmetric and i == j
    Zb = X[rows] if on_diagonal else Z[cols]
    if out is not None and _evaluates_into(kernel, X, Zb, out):
        K = _rbf_block_into(kernel, X[rows], Zb, on_diagonal, out)
    else:
        K = np.asarray(kernel.block(X[rows], Zb, symmetric=on_diagonal), dtype=dtype)
    if on_diagonal:
        if not K.flags.writeable:
            K = K.copy()
        _mirror_upper(K)
    return K


def _evaluates_into(kernel, X, Z, out):
    """Whether :func:`_rbf_block_into` gives this block: the built-in RBF kernel on dense data of ``out``'s dtype."""
    return (
        type(kernel) is RBFKernel
        and isinstance(X, np.ndarray)
        and isinstance(Z, np.ndarray)
        and X.dtype == Z.dtype == out.dtype
        and out.dtype in (np.float32, np.float64)
        and out.flags.c_contiguous
    )


_PASS_ROWS = 64  # rows per element-wise pass of _rbf_block_into (a few hundred KB to 2 MB: stays in L2)


def _rbf_block_into(kernel, X, Z, symmetric, out):
    """``RBFKernel.block(X, Z, symmetric=symmetric)`` computed into ``out``: the same values, bit for bit.

    The BLAS product is written straight into ``out``, then the element-wise
    steps of :meth:`RBFKernel.block` (same operations, order and dtype) run
    on strips of ``_PASS_ROWS`` rows, all steps on one strip while it is in
    cache, instead of one pass over the whole block per step. (Bit for bit
    under the same BLAS thread count: BLAS products may differ in the last
    bit between thread counts.)
    """
    x_sq = kernel._sq_norms(X).astype(out.dtype, copy=False)
    z_sq = x_sq if symmetric else kernel._sq_norms(Z).astype(out.dtype, copy=False)
    D = np.matmul(X, Z.T, out=out)
    gamma = kernel._gamma(X.shape[1])
    z_row = z_sq.reshape(1, -1)
    for a in range(0, D.shape[0], _PASS_ROWS):
        S = D[a : a + _PASS_ROWS]
        S *= -2
        S += x_sq[a : a + _PASS_ROWS].reshape(-1, 1)
        S += z_row
        np.maximum(S, 0, out=S)
        if symmetric:
            diagonal = np.arange(a, min(a + S.shape[0], S.shape[1]))
            S[diagonal - a, diagonal] = 0
        S *= -gamma
        np.exp(S, out=S)
    return D


# --------------------------------------------------------------------------- #
# Direct I/O on the shards of an uncompressed store
# --------------------------------------------------------------------------- #

_NO_CHUNK = 2**64 - 1  # offset and length of an absent inner chunk in a shard index
_STRIP_ROWS = 256  # rows per file write of a padded or transposed shard (a few MB)
_TILE = 32  # rows of the source per copy of the tiled transpose (tens of KB: stays in L1/L2)


def _transpose_strip(src, dst, start):
    """``dst[k, :src.shape[0]] = src[:, start + k]`` for each row k of ``dst``.

    Tiled over the rows of ``src`` so that the columns read stay in cache:
    3-4 times faster than one copy of the whole transposed view. numpy
    releases the GIL during each tile's copy, so a block's mirror is written
    while another block is computed.
    """
    n = dst.shape[0]
    for i0 in range(0, src.shape[0], _TILE):
        np.copyto(dst[:, i0 : i0 + _TILE], src[i0 : i0 + _TILE, start : start + n].T)


_WRITE_BYTES = 2**30  # bytes per write call at most (Linux writes at most 2 GiB - 4 KiB per call)


def _write_all(fd, buffer):
    """Write all of ``buffer`` at the file position: one call for a block of a few hundred MB."""
    view = memoryview(buffer).cast("B")
    while view.nbytes:
        view = view[os.write(fd, view[:_WRITE_BYTES]):]


class _ShardFiles:
    """The shard files of an uncompressed sharded ``K``, read and written without zarr's codec pipeline.

    A shard holds the block's rows, padded to ``inner_rows × shard_cols``
    inner chunks, one after the other, followed by zarr's shard index: per
    inner chunk an (offset, length) pair of little-endian uint64 (both
    ``2**64 - 1`` for an absent chunk), then the CRC-32C of the index
    (zarr's ``sharding_indexed`` codec with ``index_location="end"``). Since
    inner chunks span the shard's width, the bytes of row ``l`` of a shard
    are one contiguous range, found from the index; the row is read with one
    ``pread`` straight into the output array.

    Only used when the array has exactly this form (sharded, inner chunks
    of whole rows, no compression, index at the end); :meth:`of` returns
    None otherwise, and zarr reads and writes the array.
    """

    def __init__(self, root, shape, shard_shape, inner_rows, dtype, chunk_key):
        self.root = root
        self.n, self.m = shape
        self.rc, self.cc = shard_shape
        self.inner_rows = inner_rows
        self.dtype = np.dtype(dtype)
        self._chunk_key = chunk_key
        self.n_inner = self.rc // inner_rows
        self.inner_nbytes = inner_rows * self.cc * self.dtype.itemsize
        self.index_nbytes = 16 * self.n_inner + 4

    @classmethod
    def of(cls, array, root):
        """The direct view of ``array`` (stored under folder ``root``), or None if it has another form."""
        from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec

        codecs = array.metadata.codecs
        if len(codecs) != 1 or not isinstance(codecs[0], ShardingCodec):
            return None
        sharding = codecs[0]
        little = BytesCodec(endian="little")
        shard_shape = tuple(int(s) for s in array.shards)
        r, width = (int(s) for s in sharding.chunk_shape)
        dtype = np.dtype(array.dtype)
        if (
            tuple(sharding.codecs) != (little,)
            or tuple(sharding.index_codecs) != (little, Crc32cCodec())
            or sharding.index_location.value != "end"
            or width != shard_shape[1]
            or dtype.byteorder == ">"
        ):
            return None
        return cls(str(root), tuple(int(s) for s in array.shape), shard_shape, r, dtype,
                   array.metadata.encode_chunk_key)

    def path(self, i, j):
        return os.path.join(self.root, *self._chunk_key((i, j)).split("/"))

    # ---------------------------------------------------------------- writing
    def write(self, i, j, K, transposed=False):
        """Write shard (i, j): the block ``K``, or ``K.T`` with ``transposed`` (no transposed copy of K is made)."""
        K = np.asarray(K, dtype=self.dtype)
        h, w = (K.shape[1], K.shape[0]) if transposed else K.shape
        n_written = -(-h // self.inner_rows)
        padded_rows = n_written * self.inner_rows
        path = self.path(i, j)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            if not transposed and w == self.cc and padded_rows == h and K.flags.c_contiguous:
                _write_all(fd, K)
            else:
                strip = np.full((min(_STRIP_ROWS, padded_rows), self.cc), np.nan, dtype=self.dtype)
                for a in range(0, padded_rows, strip.shape[0]):
                    size = min(strip.shape[0], padded_rows - a)
                    real = max(0, min(size, h - a))
                    if transposed:
                        _transpose_strip(K, strip[:real], a)
                    else:
                        strip[:real, :w] = K[a : a + real]
                    strip[real:size] = np.nan
                    _write_all(fd, strip[:size])
            _write_all(fd, self._index_bytes(n_written))
        finally:
            os.close(fd)

    def _index_bytes(self, n_written):
        import google_crc32c

        index = np.full((self.n_inner, 2), _NO_CHUNK, dtype="<u8")
        index[:n_written, 0] = np.arange(n_written, dtype="<u8") * self.inner_nbytes
        index[:n_written, 1] = self.inner_nbytes
        raw = index.tobytes()
        return raw + np.array([google_crc32c.value(raw)], dtype="<u4").tobytes()

    # ---------------------------------------------------------------- reading
    def _index(self, fd, i, j):
        size = os.fstat(fd).st_size
        raw = os.pread(fd, self.index_nbytes, size - self.index_nbytes) if size >= self.index_nbytes else b""
        if len(raw) != self.index_nbytes:
            raise OSError(f"the shard {self.path(i, j)} is truncated ({size} bytes); recompute the Gram store.")
        index = np.frombuffer(raw[:-4], dtype="<u8").reshape(self.n_inner, 2)
        present = index[:, 0] != _NO_CHUNK
        if (index[present, 1] != self.inner_nbytes).any():
            raise OSError(f"the shard {self.path(i, j)} holds inner chunks of an unexpected size; it was not "
                          f"written uncompressed. Recompute the Gram store.")
        return index

    def read(self, out, rows, i, j, local, c0, c1):
        """Read ``K[i * rc + local, c0:c1]`` of shard (i, j) into ``out[rows]`` (columns local to the shard)."""
        try:
            fd = os.open(self.path(i, j), os.O_RDONLY)
        except FileNotFoundError:
            out[rows] = np.nan
            return
        try:
            index = self._index(fd, i, j)
            chunk_offsets = index[local // self.inner_rows, 0]
            absent = chunk_offsets == _NO_CHUNK
            offsets = np.where(absent, 0, chunk_offsets).astype(np.int64)
            offsets += ((local % self.inner_rows) * self.cc + c0) * self.dtype.itemsize
            nbytes = (c1 - c0) * self.dtype.itemsize
            for k, offset, absent in zip(rows.tolist(), offsets.tolist(), absent.tolist()):
                if absent:
                    out[k] = np.nan
                elif os.preadv(fd, [out[k]], offset) != nbytes:
                    raise OSError(f"short read from the shard {self.path(i, j)}; recompute the Gram store.")
        finally:
            os.close(fd)

    def read_rows(self, sorted_idx, start, stop):
        """``K[sorted_idx, start:stop]`` reading only the requested rows' bytes of the shards crossed."""
        out = np.empty((sorted_idx.size, stop - start), dtype=self.dtype)
        bands = sorted_idx // self.rc
        bounds = np.flatnonzero(np.diff(bands)) + 1
        for sel in np.split(np.arange(sorted_idx.size), bounds):
            i = int(bands[sel[0]])
            local = sorted_idx[sel] - i * self.rc
            for j in range(start // self.cc, -(-stop // self.cc)):
                c0, c1 = max(start, j * self.cc), min(stop, (j + 1) * self.cc)
                self.read(out[:, c0 - start : c1 - start], sel, i, j, local, c0 - j * self.cc, c1 - j * self.cc)
        return out

    def read_block(self, i, j, h, w):
        """The ``h × w`` block of shard (i, j)."""
        padded = -(-h // self.inner_rows) * self.inner_rows
        out = np.empty((padded, self.cc), dtype=self.dtype)
        try:
            fd = os.open(self.path(i, j), os.O_RDONLY)
        except FileNotFoundError:
            out[:] = np.nan
            return out[:h, :w]
        try:
            index = self._index(fd, i, j)
            chunks = out.reshape(-1, self.inner_rows, self.cc)
            offsets = index[: chunks.shape[0], 0]
            if (offsets == np.arange(chunks.shape[0], dtype="<u8") * self.inner_nbytes).all():
                # Written by _ShardFiles: the inner chunks follow each other, one read.
                if os.preadv(fd, [out], 0) != out.nbytes:
                    raise OSError(f"short read from the shard {self.path(i, j)}; recompute the Gram store.")
            else:
                for chunk, offset in zip(chunks, offsets.tolist()):
                    if offset == _NO_CHUNK:
                        chunk[:] = np.nan
                    elif os.preadv(fd, [chunk], offset) != chunk.nbytes:
                        raise OSError(f"short read from the shard {self.path(i, j)}; recompute the Gram store.")
        finally:
            os.close(fd)
        return out[:h, :w]


def _write_block(X, Z, kernel, grid, i, j, dtype, path, run_id):
    """Evaluate block (i, j), write it (and its mirror) into the store, then flag it done.

    For an uncompressed store the block is evaluated into a buffer of this
    process's pool for ``run_id`` (:mod:`dkernel._buffers`), reused by the
    run's next block on this thread; the task's arguments hold no block
    memory. Returns the number of blocks evaluated (1), so a run can count
    its work.
    """
    rows, cols = grid.rows(i), grid.cols(j)
    store = zarr.open_array(store=path, path="K", mode="r+", config=_ARRAY_CONFIG)
    shards = _ShardFiles.of(store, os.path.join(path, "K"))
    mirrored = grid.symmetric and i != j
    shape = (rows.stop - rows.start, cols.stop - cols.start)
    if shards is not None:
        buffer = block_buffer(run_id, shape, dtype, grid.rc * grid.cc * np.dtype(dtype).itemsize)
    else:
        buffer = contextlib.nullcontext()
    with buffer as out:
        K = _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=out)
        if shards is not None:
            shards.write(i, j, K)
            if mirrored:
                shards.write(j, i, K, transposed=True)
        else:
            store[rows, cols] = K
            if mirrored:
                # zarr copies a transposed (Fortran-ordered) view element by element; one
                # contiguous copy first is several times faster.
                store[cols, rows] = np.ascontiguousarray(K.T)
        if grid.symmetric and i == j:
            zarr.open_array(store=path, path="diag", mode="r+", config=_ARRAY_CONFIG)[rows] = np.diagonal(K)
        del K
    # The flags come last: only chunks whose writes returned are marked complete.
    done = zarr.open_array(store=path, path="done", mode="r+", config=_ARRAY_CONFIG)
    done[i, j] = 1
    if mirrored:
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
        self.shards = _ShardFiles.of(self.K, os.path.join(self.path, "K"))
        self._done = None

    def done(self, refresh=False):
        if self._done is None or refresh:
            self._done = self.group["done"][:].astype(bool)
        return self._done

    def block(self, grid, i, j):
        rows, cols = grid.rows(i), grid.cols(j)
        if self.shards is not None:
            return self.shards.read_block(i, j, rows.stop - rows.start, cols.stop - cols.start)
        return self.K[rows, cols]

    def submatrix(self, grid, sorted_idx, start, stop):
        if self.shards is not None:
            return self.shards.read_rows(sorted_idx, start, stop)
        return self.K.get_orthogonal_selection((sorted_idx, slice(start, stop)))

    def diag(self, grid):
        if "diag" in self.group:
            return self.group["diag"][:]
        return None

    def to_dask(self, grid):
        # One Dask chunk per block (shard), not per inner chunk.
        return da.from_zarr(self.K, chunks=grid.dask_chunks())

    def to_numpy(self, grid):
        if self.shards is None:
            return self.K[:]
        out = np.empty((grid.n, grid.m), dtype=self.shards.dtype)
        for i in range(grid.n_row_blocks):
            for j in range(grid.n_col_blocks):
                out[grid.rows(i), grid.cols(j)] = self.block(grid, i, j)
        return out


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

    def submatrix(self, grid, sorted_idx, start, stop):
        out = np.empty((len(sorted_idx), stop - start), dtype=next(iter(self.blocks.values())).dtype)
        bands = sorted_idx // grid.rc
        for i in np.unique(bands):
            sel = np.flatnonzero(bands == i)
            local = sorted_idx[sel] - i * grid.rc
            for j in range(start // grid.cc, -(-stop // grid.cc)):
                c0, c1 = max(start, j * grid.cc), min(stop, (j + 1) * grid.cc)
                out[sel, c0 - start : c1 - start] = self.blocks[i, j][local, c0 - j * grid.cc : c1 - j * grid.cc]
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

    def submatrix(self, grid, sorted_idx, start, stop):
        return self._fetch(self.array[sorted_idx, start:stop])

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
        client : distributed.Client, str or False, default=None
            Client or scheduler address (``"tcp://127.0.0.1:8786"``). ``None``
            uses the current default client if any, else Dask's threaded
            scheduler; ``False`` always runs in this process (threads).
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
        shape = (X.shape[0], Z.shape[0])
        chunks = (min(options.resolve_chunk(gram_dtype, shape[0]), shape[0]),) * 2
        if not symmetric:
            chunks = (chunks[0], min(options.resolve_chunk(gram_dtype, shape[1]), shape[1]))
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

        Repeated and unsorted indices are allowed; they are read once, in
        sorted order. From an uncompressed store only the bytes of the
        requested rows are read (one contiguous range per row and block), so
        the cost follows ``len(idx) × m``, not the blocks touched.
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
        if already_sorted:
            unique, inverse = idx, None
        else:
            unique, inverse = np.unique(idx, return_inverse=True)
        grid = self._grid
        self._check_blocks(np.unique(unique // grid.rc), np.arange(start // grid.cc, -(-stop // grid.cc)))
        out = self._blocks.submatrix(grid, unique, start, stop)
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
        with _local_blas_threads(client, len(tasks)):
            results = compute_with_progress(tasks, None, options.progress, label="blocks")
        blocks = {}
        for (i, j), K in zip(pairs, results):
            blocks[i, j] = K
            if grid.symmetric and i != j:
                blocks[j, i] = K.T
        return _MemoryBlocks(blocks), len(pairs)

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
    bar = TextProgress(len(futures), "blocks", enabled=options.progress)
    try:
        wait_with_progress(client, futures, bar)
    finally:
        bar.close()
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
    # One shard per block, of inner chunks spanning the block's width: a row of a
    # block is then one contiguous byte range of its shard.
    root.create_array("K", shape=tuple(meta["shape"]), shards=(grid.rc, grid.cc),
                      chunks=(options.resolve_inner_rows(grid.rc), grid.cc), dtype=meta["dtype"],
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


def _local_blas_threads(client, n_tasks):
    """Share the cores between the block tasks that Dask's local scheduler runs at once (in memory or into a store).

    A context manager limiting BLAS to ``cores / tasks running at once``
    threads (never more than it has): each task makes one BLAS call, then
    element-wise passes and file writes, and further BLAS threads only take
    the cores from the other tasks (OpenBLAS threads also spin while they
    wait for work). Products computed with other thread counts may differ in
    the last bit, so such a store can differ from an in-memory Gram by
    rounding. A no-op with a distributed client (its workers set their own
    limits).
    """
    if client is not None:
        return contextlib.nullcontext()
    from dask.system import CPU_COUNT
    from threadpoolctl import threadpool_info, threadpool_limits

    current = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    if not current:
        return contextlib.nullcontext()
    if dask.config.get("scheduler", None) in ("sync", "synchronous", "single-threaded"):
        running = 1
    else:
        running = dask.config.get("num_workers", None) or CPU_COUNT
    share = max(1, CPU_COUNT // max(1, min(running, n_tasks)))
    return threadpool_limits(limits=min(share, max(current)), user_api="blas")


def _release_buffers(client, run_id):
    """Drop the block buffers of a finished run, in this process or on every worker."""
    if client is None:
        release_pool(run_id)
        return
    with contextlib.suppress(Exception):  # a worker that died took its buffers with it
        client.run(release_pool, run_id)


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
            run_id = "gram-run-" + uuid.uuid4().hex
            tasks = [dask.delayed(_write_block, pure=False)(Xk, Zk, kernel, grid, i, j, dtype, path, run_id)
                     for i, j in pairs]
            try:
                with _local_blas_threads(client, len(tasks)):
                    n_computed = sum(compute_with_progress(tasks, client, options.progress, label="blocks"))
            finally:
                _release_buffers(client, run_id)
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
