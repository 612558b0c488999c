"""Gram matrices computed blockwise by Dask and persisted in zarr.

A :class:`GramMatrix` holds ``K(X, Z)`` (``Z = X`` by default) as a grid of
square blocks. Each block is one Dask task that evaluates the kernel on a row
block of X and a row block of Z and, with a store, writes the result straight
from the worker into its zarr chunk. For ``K(X, X)`` only the blocks on and
above the diagonal are evaluated: the task of block (i, j), i < j, also writes
its transpose into chunk (j, i), which halves the kernel work and makes the
stored matrix exactly symmetric.

Store layout (a zarr v3 group, format version 3)::

    K.zarr/
      zarr.json     attributes: kernel, shape, dtype, chunks, data fingerprint,
                    provenance (base kernel, data fingerprint, operator chain:
                    empty for a raw Gram), completeness summary, statistics
                    of the last run
      K/            the Gram matrix, one shard per block (fill value NaN); a
                    shard holds inner chunks of a few full-width rows
      done/         uint8 (n_row_blocks, n_col_blocks): 1 once a block is written
      diag/         the diagonal (K(X, X) only), written by the diagonal blocks
      checksums/    uint32 (n, n_col_blocks × segments per block): CRC-32C of
                    each row segment of each block, one chunk per block
      diag_checksums/  uint32 (n_row_blocks,): CRC-32C of each chunk of diag/

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

Integrity: the task of a block also writes the CRC-32C of each row of the
block (and of its mirror), cut into segments of a few KB (:class:`_Checksums`),
before the done flag. Every read (``rows``, ``submatrix``, ``block``,
``diag``, ``to_numpy``, ``in_memory``, the tasks of ``.dask``) checks the
rows it returns, reading whole segments (a row read costs one CRC-32C call
per block it crosses, at several GB/s); damaged data, a missing or truncated
shard, or a file that zarr cannot decode raise :class:`CorruptStoreError`
naming the block and the command that rewrites it, never garbage values.
:meth:`GramMatrix.verify` (``dkernel verify``) checks every block; re-running
:meth:`GramMatrix.compute` on a store first verifies the blocks it holds and
recomputes the damaged ones with the missing ones. Stores of format versions
1 and 2 have no checksums: they are read unverified, with an
:class:`UnverifiedStoreWarning`.

A store is written under the rules of :mod:`dkernel._artifacts`: a new store
is created beside its path and renamed in; a store replaced with
``overwrite`` is rebuilt beside it and swapped in only when complete; a path
holding anything but a Gram store is refused and never deleted.

The reading side is what a solver needs (``rows(idx)``, ``diag()``, ``n``,
and ``submatrix(idx, start, stop)``, the column slab of one distributed
solver worker), plus ``block(i, j)``, a lazy ``.dask`` array aligned with the zarr chunks and
``to_numpy()`` for small matrices.
"""

import contextlib
import functools
import hashlib
import os
import time
import uuid
import warnings

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
import zarr

from . import _artifacts
from ._buffers import block_buffer, release_pool
from ._dask import TextProgress, compute_with_progress, put_data, resolve_client, wait_with_progress
from ._options import GramOptions
from ._validation import check_data, check_same_features
from .exceptions import (
    CorruptStoreError,
    DKernelError,
    IncompleteStoreError,
    StoreMismatchError,
    UnverifiableStoreError,
    UnverifiedStoreWarning,
)
from .kernels import RBFKernel, get_kernel, kernel_from_dict

__all__ = ["GramMatrix", "data_fingerprint", "store_size_bytes"]

STORE_FORMAT = "dkernel-gram"
STORE_VERSION = 3  # 3: row checksums (``checksums/``); 2: one shard per block; 1: one plain chunk per block

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


def _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=None, checksums=None):
    """Block (i, j) of the Gram; into ``out`` (an array of the block's shape and dtype) where the kernel allows.

    With ``checksums`` (a :class:`_Checksums`), returns ``(K, table)``, the
    block and the checksums of its rows (:meth:`_Checksums.of_rows`): taken
    strip by strip while each strip is in cache where the block is evaluated
    into ``out`` (off the diagonal), else from the finished block.
    """
    rows, cols = grid.rows(i), grid.cols(j)
    on_diagonal = grid.symmetric and i == j
    Zb = X[rows] if on_diagonal else Z[cols]
    table = on_strip = None
    if out is not None and _evaluates_into(kernel, X, Zb, out):
        if checksums is not None and not on_diagonal:
            table = np.zeros((out.shape[0], checksums.spb), dtype=np.uint32)

            def on_strip(a, S):
                table[a : a + S.shape[0]] = checksums.of_rows(S)

        K = _rbf_block_into(kernel, X[rows], Zb, on_diagonal, out, on_strip=on_strip)
    else:
        K = np.asarray(kernel.block(X[rows], Zb, symmetric=on_diagonal), dtype=dtype)
    if on_diagonal:
        if not K.flags.writeable:
            K = K.copy()
        _mirror_upper(K)
    if checksums is None:
        return K
    return K, (checksums.of_rows(K) if table is None else table)


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


def _rbf_block_into(kernel, X, Z, symmetric, out, on_strip=None):
    """``RBFKernel.block(X, Z, symmetric=symmetric)`` computed into ``out``: the same values, bit for bit.

    The BLAS product is written straight into ``out``, then the element-wise
    steps of :meth:`RBFKernel.block` (same operations, order and dtype) run
    on strips of ``_PASS_ROWS`` rows, all steps on one strip while it is in
    cache, instead of one pass over the whole block per step. (Bit for bit
    under the same BLAS thread count: BLAS products may differ in the last
    bit between thread counts.) ``on_strip(a, S)``, if given, is called with
    each finished strip ``S`` (rows ``a:a + len(S)``) while it is in cache.
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
        if on_strip is not None:
            on_strip(a, S)
    return D


# --------------------------------------------------------------------------- #
# Checksums of the stored rows
# --------------------------------------------------------------------------- #


def _crc32c():
    import google_crc32c

    return google_crc32c


@functools.lru_cache(maxsize=None)
def _crc_shift_tables(nbytes):
    """Byte tables of ``shift(v, nbytes)``, the CRC-32C register after ``nbytes`` zero bytes.

    The CRC-32C of a concatenation is ``crc(A + B) = shift(crc(A), len(B))
    ^ crc(B)``, where ``shift(v, L) = extend(v, zeros(L)) ^ value(zeros(L))``
    is linear over GF(2) in ``v``. It is evaluated on the 32 unit vectors
    and spread into four tables of 256 entries, one per byte of ``v``.
    """
    crc = _crc32c()
    zeros = bytes(int(nbytes))
    offset = crc.value(zeros)
    units = np.array([crc.extend(1 << k, zeros) ^ offset for k in range(32)], dtype=np.uint32)
    bits = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(bool)
    return np.stack([np.bitwise_xor.reduce(np.where(bits, units[8 * b : 8 * b + 8], np.uint32(0)), axis=1)
                     for b in range(4)])


def _crc_concat(crcs, nbytes):
    """The CRC-32C of each row's segments put end to end, from the segments' own CRC-32C.

    ``crcs`` is ``(rows, k)`` uint32, ``nbytes`` the k segment lengths in
    bytes; vectorized over the rows.
    """
    acc = np.array(crcs[:, 0], dtype=np.uint32)
    for q in range(1, len(nbytes)):
        if nbytes[q]:
            t = _crc_shift_tables(int(nbytes[q]))
            acc = t[0][acc & 0xFF] ^ t[1][(acc >> 8) & 0xFF] ^ t[2][(acc >> 16) & 0xFF] ^ t[3][acc >> 24]
            acc ^= crcs[:, q]
    return acc


def _row_crcs(A):
    """The CRC-32C of each row of a 2-D array (of the bytes of its values in little-endian order)."""
    A = np.asarray(A)
    A = np.asarray(A, dtype=A.dtype.newbyteorder("<"))
    if A.shape[1] and A.strides[1] != A.itemsize:
        A = np.ascontiguousarray(A)
    return np.fromiter(map(_crc32c().value, A), dtype=np.uint32, count=A.shape[0])


class _Checksums:
    """The CRC-32C checksums of a store's rows (its ``checksums`` array) and their checks.

    Each row of block (i, j) is cut into segments of ``seg`` columns (the
    last one shorter); ``checksums[r, j * spb + q]`` is the CRC-32C of
    segment ``q`` of row ``r`` (0 past the block's width), with
    ``spb = ceil(cc / seg)``: one chunk of ``checksums`` per block, written
    by the block's task after its data and before its done flag (the
    mirrored block's rows are the transposed data, checksummed as written).
    ``diag_checksums[i]`` is the CRC-32C of chunk i of the stored diagonal.

    A read of columns ``c0:c1`` of a block reads the whole segments holding
    them (:meth:`span`) and compares one CRC-32C per row with the CRC of
    those segments end to end, combined from the stored ones
    (:func:`_crc_concat`): a row read costs one checksum call per block it
    crosses. Stored checksums are cached per block once read; :meth:`forget`
    drops them.
    """

    def __init__(self, path, grid, itemsize, seg):
        self.path = path
        self.grid = grid
        self.itemsize = int(itemsize)
        self.seg = int(seg)
        self.spb = -(-grid.cc // self.seg)
        self._stored = {}
        self._whole = {}
        self._array = None
        self._chunk_key = None

    @classmethod
    def of(cls, attrs, path):
        """The checksums of the store at ``path`` (attributes ``attrs``), or None for a store without them."""
        spec = attrs.get("checksums")
        if not isinstance(spec, dict) or spec.get("algorithm") != "crc32c":
            return None
        grid = _BlockGrid(attrs["shape"], attrs["chunks"], attrs["symmetric"])
        return cls(path, grid, np.dtype(attrs["dtype"]).itemsize, spec["segment_columns"])

    @staticmethod
    def spec(options, dtype, grid):
        """The ``checksums`` attribute of a new store: algorithm and columns per segment."""
        seg = max(1, min(int(options.checksum_bytes) // np.dtype(dtype).itemsize, grid.cc))
        return {"algorithm": "crc32c", "segment_columns": seg}

    @staticmethod
    def create_arrays(root, grid, spec):
        """Create the ``checksums`` (and, for K(X, X), ``diag_checksums``) arrays of a new store."""
        spb = -(-grid.cc // spec["segment_columns"])
        root.create_array("checksums", shape=(grid.n, grid.n_col_blocks * spb), chunks=(grid.rc, spb),
                          dtype="uint32", fill_value=0, compressors=None)
        if grid.symmetric:
            root.create_array("diag_checksums", shape=(grid.n_row_blocks,), chunks=(1,), dtype="uint32",
                              fill_value=0, compressors=None)

    # ---------------------------------------------------------------- writing
    def of_rows(self, A):
        """``(h, spb)`` uint32: the checksums of the segments of each row of ``A`` (the rows of one block)."""
        A = np.asarray(A)
        h, w = A.shape
        out = np.zeros((h, self.spb), dtype=np.uint32)
        for q in range(-(-w // self.seg)):
            out[:, q] = _row_crcs(A[:, q * self.seg : (q + 1) * self.seg])
        return out

    def write(self, i, j, table):
        """Store the checksums ``table`` (from :meth:`of_rows`) of block (i, j)."""
        array = zarr.open_array(store=self.path, path="checksums", mode="r+", config=_ARRAY_CONFIG)
        _remove_chunk(self.path, "checksums", array, (i, j))
        array[self.grid.rows(i), j * self.spb : (j + 1) * self.spb] = table

    def write_diagonal(self, i, values):
        """Store the checksum of chunk i of the diagonal."""
        array = zarr.open_array(store=self.path, path="diag_checksums", mode="r+", config=_ARRAY_CONFIG)
        array[i] = _row_crcs(np.asarray(values).reshape(1, -1))[0]

    # ---------------------------------------------------------------- reading
    def width(self, j):
        cols = self.grid.cols(j)
        return cols.stop - cols.start

    def span(self, j, c0, c1):
        """``(q0, q1, e0, e1)``: segments q0:q1 of column block j hold its columns c0:c1; they span e0:e1."""
        q0, q1 = c0 // self.seg, -(-c1 // self.seg)
        return q0, q1, q0 * self.seg, min(q1 * self.seg, self.width(j))

    def cover(self, start, stop):
        """The columns ``lo:hi`` of the whole segments holding the matrix columns ``start:stop``."""
        cc = self.grid.cc
        first, last = start // cc, (stop - 1) // cc
        lo = first * cc + self.span(first, start - first * cc, start - first * cc + 1)[2]
        hi = last * cc + self.span(last, stop - 1 - last * cc, stop - last * cc)[3]
        return lo, hi

    def _nbytes(self, j, q0, q1):
        w = self.width(j)
        return [max(0, min(self.seg, w - q * self.seg)) * self.itemsize for q in range(q0, q1)]

    def stored(self, i, j):
        """The stored segment checksums of block (i, j), ``(rows of band i, spb)`` uint32.

        Read from the chunk's file directly (a few tens of KB, no zarr call)
        when the array has the plain layout this module creates; else
        through zarr.
        """
        sums = self._stored.get((i, j))
        if sums is None:
            rows = self.grid.rows(i)
            with _decoding(self.path, [(i, j)], "its checksums"):
                if self._array is None:
                    from zarr.codecs import BytesCodec

                    self._array = zarr.open_array(store=self.path, path="checksums", mode="r")
                    if (tuple(self._array.metadata.codecs) == (BytesCodec(endian="little"),)
                            and tuple(self._array.chunks) == (self.grid.rc, self.spb)):
                        self._chunk_key = self._array.metadata.encode_chunk_key
                if self._chunk_key is None:
                    sums = np.asarray(self._array[rows, j * self.spb : (j + 1) * self.spb], dtype=np.uint32)
                else:
                    sums = self._read_chunk(i, j)[: rows.stop - rows.start]
            self._stored[i, j] = sums
        return sums

    def _read_chunk(self, i, j):
        path = os.path.join(self.path, "checksums", *self._chunk_key((i, j)).split("/"))
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return np.zeros((self.grid.rc, self.spb), dtype=np.uint32)  # the fill value: never written
        if len(raw) != self.grid.rc * self.spb * 4:
            raise _corrupt_error(self.path, [(i, j)], f"its checksums file {path} has {len(raw)} bytes")
        return np.frombuffer(raw, dtype="<u4").reshape(self.grid.rc, self.spb).astype(np.uint32)

    def expected(self, i, j, local, q0, q1):
        """The CRC-32C of segments q0:q1 end to end, for the rows ``local`` (within band i) of block (i, j)."""
        n_seg = -(-self.width(j) // self.seg)
        if q0 == 0 and q1 == n_seg:
            whole = self._whole.get((i, j))
            if whole is None:
                whole = self._whole[i, j] = _crc_concat(self.stored(i, j)[:, :n_seg], self._nbytes(j, 0, n_seg))
            return whole[local]
        return _crc_concat(self.stored(i, j)[local, q0:q1], self._nbytes(j, q0, q1))

    def check(self, i, j, local, q0, q1, actual):
        """Raise :class:`CorruptStoreError` unless ``actual`` (one CRC-32C per row read) matches the stored sums."""
        bad = np.flatnonzero(np.asarray(actual, dtype=np.uint32) != self.expected(i, j, local, q0, q1))
        if bad.size:
            row = self.grid.rows(i).start + int(np.asarray(local)[bad[0]])
            more = f" (and {bad.size - 1} more of the rows read)" if bad.size > 1 else ""
            raise _corrupt_error(self.path, [(i, j)], f"row {row}{more} does not match its checksum")

    def check_block(self, i, j, B):
        """Check all rows of block (i, j), read as ``B``."""
        self.check(i, j, np.arange(B.shape[0]), 0, -(-B.shape[1] // self.seg), _row_crcs(B))

    def corrupt_diagonal_chunks(self, diagonal):
        """The chunks i of the stored diagonal ``diagonal`` that do not match their checksums."""
        with _decoding(self.path, [(i, i) for i in range(self.grid.n_row_blocks)], "the diagonal's checksums"):
            sums = zarr.open_array(store=self.path, path="diag_checksums", mode="r")[:]
        return [i for i in range(self.grid.n_row_blocks)
                if _row_crcs(np.asarray(diagonal[self.grid.rows(i)]).reshape(1, -1))[0] != sums[i]]

    def forget(self):
        """Drop the cached checksums: the next reads fetch them from the store."""
        self._stored.clear()
        self._whole.clear()


def _remove_chunk(path, name, array, coords):
    """Delete the stored chunk (or shard) ``coords`` of array ``name`` of the store at ``path``, if present.

    A block is rewritten in full: a damaged chunk must not be read back by a
    partial-chunk write (zarr reads the chunk to update part of it).
    """
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(path, name, *array.metadata.encode_chunk_key(tuple(coords)).split("/")))


@contextlib.contextmanager
def _decoding(path, blocks, what):
    """Turn an error raised while reading stored data into a :class:`CorruptStoreError` naming ``blocks``."""
    try:
        yield
    except (DKernelError, MemoryError, PermissionError):
        raise
    except Exception as exc:
        raise _corrupt_error(path, blocks, f"{what} cannot be read ({type(exc).__name__}: {exc})") from exc


def _corrupt_error(path, blocks, detail):
    """A :class:`CorruptStoreError` naming the store, the bad blocks and the command that rewrites them."""
    blocks = sorted({(int(i), int(j)) for i, j in blocks})
    return CorruptStoreError(corruption_message(path, blocks, detail), path=path, blocks=blocks, detail=detail)


def corruption_message(path, blocks, detail, cli=False):
    """The message of a :class:`CorruptStoreError`; with ``cli``, its repair told as a ``dkernel`` command only."""
    shown = ", ".join(f"({i}, {j})" for i, j in blocks[:8]) + (", ..." if len(blocks) > 8 else "")
    return (f"the Gram store {path} is corrupted in block{'s' if len(blocks) > 1 else ''} {shown}: {detail}. "
            f"{repair_hint(path, cli=cli)}")


_CLI_KERNELS = {"linear": (), "poly": ("gamma", "degree", "coef0"), "rbf": ("gamma",),
                "sigmoid": ("gamma", "coef0")}


def gram_command(attrs, path, data="DATA"):
    """The ``dkernel gram`` command line that writes (or repairs) the store ``path`` of attributes ``attrs``.

    ``data`` stands for the data file. None when the command line cannot
    express the store (a cross Gram K(X, Z), a kernel of its own class).
    """
    spec = attrs.get("kernel") or {}
    flags = []
    if spec.get("name") == "normalized":
        flags.append("--normalize")
        spec = (spec.get("params") or {}).get("kernel") or {}
    name, params = spec.get("name"), spec.get("params") or {}
    if not attrs.get("symmetric") or name not in _CLI_KERNELS or set(params) - set(_CLI_KERNELS[name]):
        return None
    words = ["dkernel", "gram", "--input", data, "--kernel", name]
    for key in _CLI_KERNELS[name]:
        if params.get(key) is not None:
            words += [f"--{key}", repr(params[key])]
    words += flags + ["--chunk", str(attrs["chunks"][0]), "--dtype", str(attrs["dtype"]), "--out", str(path)]
    return " ".join(words)


def repair_hint(path, cli=False):
    """How to rewrite the damaged and missing blocks of the store at ``path``: the API call and the command line.

    With ``cli``, only the ``dkernel`` command.
    """
    attrs = _read_meta(path) or {}
    if _provenance_of(attrs)["operators"]:
        how = "the command that derived it (dkernel center ... --out PATH --overwrite)" if cli else \
            "its source (the same to_zarr call or dkernel command, with overwrite)"
        return f"It is a derived store: write it again from {how}."
    command = gram_command(attrs, path) if attrs else None
    if cli:
        if command:
            return (f"Repair it with `{command}`, DATA being the data file it was computed from: only the damaged "
                    f"and missing blocks are recomputed.")
        return ("Repair it by re-running `dkernel gram` with the data file, kernel options, --chunk and --dtype it "
                "was computed with: only the damaged and missing blocks are recomputed.")
    cli_form = f"`{command}` with the data file it was computed from" if command else \
        "`dkernel gram` with the same data and kernel options"
    return (f"Repair it by re-running GramMatrix.compute with the same data and kernel and store={path!r} (or "
            f"{cli_form}): only the damaged and missing blocks are recomputed.")


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
    def write(self, i, j, K, transposed=False, checksums=None):
        """Write shard (i, j): the block ``K``, or ``K.T`` with ``transposed`` (no transposed copy of K is made).

        With ``checksums`` (a :class:`_Checksums`), returns the checksums of
        the rows written (:meth:`_Checksums.of_rows`), computed from the
        strips as they are written; else None.
        """
        K = np.asarray(K, dtype=self.dtype)
        h, w = (K.shape[1], K.shape[0]) if transposed else K.shape
        n_written = -(-h // self.inner_rows)
        padded_rows = n_written * self.inner_rows
        table = None
        path = self.path(i, j)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            if not transposed and w == self.cc and padded_rows == h and K.flags.c_contiguous:
                _write_all(fd, K)
                if checksums is not None:
                    table = checksums.of_rows(K)
            else:
                if checksums is not None:
                    table = np.zeros((h, checksums.spb), dtype=np.uint32)
                strip = np.full((min(_STRIP_ROWS, padded_rows), self.cc), np.nan, dtype=self.dtype)
                for a in range(0, padded_rows, strip.shape[0]):
                    size = min(strip.shape[0], padded_rows - a)
                    real = max(0, min(size, h - a))
                    if transposed:
                        _transpose_strip(K, strip[:real], a)
                    else:
                        strip[:real, :w] = K[a : a + real]
                    strip[real:size] = np.nan
                    if table is not None and real:
                        table[a : a + real] = checksums.of_rows(strip[:real, :w])
                    _write_all(fd, strip[:size])
            _write_all(fd, self._index_bytes(n_written))
        finally:
            os.close(fd)
        return table

    def _index_bytes(self, n_written):
        import google_crc32c

        index = np.full((self.n_inner, 2), _NO_CHUNK, dtype="<u8")
        index[:n_written, 0] = np.arange(n_written, dtype="<u8") * self.inner_nbytes
        index[:n_written, 1] = self.inner_nbytes
        raw = index.tobytes()
        return raw + np.array([google_crc32c.value(raw)], dtype="<u4").tobytes()

    # ---------------------------------------------------------------- reading
    @property
    def store_path(self):
        return os.path.dirname(self.root)

    def _index(self, fd, i, j):
        size = os.fstat(fd).st_size
        raw = os.pread(fd, self.index_nbytes, size - self.index_nbytes) if size >= self.index_nbytes else b""
        if len(raw) != self.index_nbytes:
            raise _corrupt_error(self.store_path, [(i, j)], f"its shard {self.path(i, j)} is truncated ({size} bytes)")
        if _crc32c().value(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
            raise _corrupt_error(self.store_path, [(i, j)],
                                 f"the index of its shard {self.path(i, j)} does not match its checksum")
        index = np.frombuffer(raw[:-4], dtype="<u8").reshape(self.n_inner, 2)
        present = index[:, 0] != _NO_CHUNK
        last = size - self.index_nbytes - self.inner_nbytes  # the last offset an inner chunk can start at
        if present.any() and (
            (index[present, 1] != self.inner_nbytes).any() or last < 0 or (index[present, 0] > np.uint64(last)).any()
        ):
            raise _corrupt_error(self.store_path, [(i, j)],
                                 f"its shard {self.path(i, j)} holds inner chunks of an unexpected size or place")
        return index

    def _short_read(self, i, j):
        return _corrupt_error(self.store_path, [(i, j)], f"its shard {self.path(i, j)} is shorter than its index says")

    def read(self, out, rows, i, j, local, c0, c1, checksums=None):
        """Read ``K[i * rc + local, c0:c1]`` of shard (i, j) into ``out[rows]`` (columns local to the shard).

        With ``checksums`` (a :class:`_Checksums`), each row's bytes of the
        whole checksum segments holding ``c0:c1`` are read (one ``preadv``
        per row: the columns outside ``c0:c1`` into scratch buffers), and
        their CRC-32C, computed right after the read, is compared with the
        stored ones: :class:`CorruptStoreError` on a mismatch or a missing
        shard.
        """
        if checksums is not None:
            q0, q1, e0, e1 = checksums.span(j, c0, c1)
        else:
            e0, e1 = c0, c1
        head, tail = np.empty(c0 - e0, dtype=self.dtype), np.empty(e1 - c1, dtype=self.dtype)
        direct = not (head.size or tail.size)
        crcs = None if checksums is None else []
        try:
            fd = os.open(self.path(i, j), os.O_RDONLY)
        except FileNotFoundError:
            if checksums is not None:
                raise _corrupt_error(self.store_path, [(i, j)], f"its shard {self.path(i, j)} is missing") from None
            out[rows] = np.nan
            return
        try:
            index = self._index(fd, i, j)
            chunk_offsets = index[local // self.inner_rows, 0]
            absent = chunk_offsets == _NO_CHUNK
            offsets = np.where(absent, 0, chunk_offsets).astype(np.int64)
            offsets += ((local % self.inner_rows) * self.cc + e0) * self.dtype.itemsize
            nbytes = (e1 - e0) * self.dtype.itemsize
            crc = _crc32c()
            value, extend, keep = crc.value, crc.extend, None if crcs is None else crcs.append
            for k, offset, absent in zip(rows.tolist(), offsets.tolist(), absent.tolist()):
                row = out[k]
                parts = [row] if direct else [head, row, tail]
                if absent:
                    for part in parts:
                        part[...] = np.nan
                elif os.preadv(fd, parts, offset) != nbytes:
                    raise self._short_read(i, j)
                if keep is not None:  # the row was just read: in cache
                    keep(value(row) if direct else extend(extend(value(head), row), tail))
        finally:
            os.close(fd)
        if crcs is not None:
            checksums.check(i, j, local, q0, q1, np.array(crcs, dtype=np.uint32))

    def read_rows(self, sorted_idx, start, stop, checksums=None, positions=None):
        """``K[sorted_idx, start:stop]`` reading only the requested rows' bytes of the shards crossed.

        With ``checksums``, the rows' whole checksum segments holding
        ``start:stop`` are read and verified (:meth:`read`). With
        ``positions``, row ``sorted_idx[p]`` is read straight into row
        ``positions[p]`` of the result (the caller's order, no reordering copy).
        """
        out = np.empty((sorted_idx.size, stop - start), dtype=self.dtype)
        bands = sorted_idx // self.rc
        bounds = np.flatnonzero(np.diff(bands)) + 1
        for sel in np.split(np.arange(sorted_idx.size), bounds):
            i = int(bands[sel[0]])
            local = sorted_idx[sel] - i * self.rc
            rows = sel if positions is None else positions[sel]
            for j in range(start // self.cc, -(-stop // self.cc)):
                c0, c1 = max(start, j * self.cc), min(stop, (j + 1) * self.cc)
                self.read(out[:, c0 - start : c1 - start], rows, i, j, local, c0 - j * self.cc, c1 - j * self.cc,
                          checksums)
        return out

    def read_block(self, i, j, h, w, buffer=None):
        """The ``h × w`` block of shard (i, j); read into ``buffer`` (of at least ``rc × cc`` values) if given."""
        padded = -(-h // self.inner_rows) * self.inner_rows
        if buffer is None:
            out = np.empty((padded, self.cc), dtype=self.dtype)
        else:
            out = buffer.reshape(-1)[: padded * self.cc].reshape(padded, self.cc)
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
                    raise self._short_read(i, j)
            else:
                for chunk, offset in zip(chunks, offsets.tolist()):
                    if offset == _NO_CHUNK:
                        chunk[:] = np.nan
                    elif os.preadv(fd, [chunk], offset) != chunk.nbytes:
                        raise self._short_read(i, j)
        finally:
            os.close(fd)
        return out[:h, :w]


def _write_block(X, Z, kernel, grid, i, j, dtype, path, run_id, checksum_columns=None):
    """Evaluate block (i, j), write it (and its mirror) and their checksums into the store, then flag it done.

    For an uncompressed store the block is evaluated into a buffer of this
    process's pool for ``run_id`` (:mod:`dkernel._buffers`), reused by the
    run's next block on this thread; the task's arguments hold no block
    memory. ``checksum_columns`` is the store's checksum segment width
    (None for a store written without checksums). Returns the number of
    blocks evaluated (1), so a run can count its work.
    """
    rows, cols = grid.rows(i), grid.cols(j)
    store = zarr.open_array(store=path, path="K", mode="r+", config=_ARRAY_CONFIG)
    shards = _ShardFiles.of(store, os.path.join(path, "K"))
    checksums = None if checksum_columns is None else _Checksums(path, grid, np.dtype(dtype).itemsize,
                                                                 checksum_columns)
    mirrored = grid.symmetric and i != j
    table = mirror_table = None
    shape = (rows.stop - rows.start, cols.stop - cols.start)
    if shards is not None:
        buffer = block_buffer(run_id, shape, dtype, grid.rc * grid.cc * np.dtype(dtype).itemsize)
    else:
        buffer = contextlib.nullcontext()
    with buffer as out:
        if checksums is None:
            K = _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=out)
        else:
            K, table = _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=out, checksums=checksums)
        if shards is not None:
            shards.write(i, j, K)
            if mirrored:
                mirror_table = shards.write(j, i, K, transposed=True, checksums=checksums)
        else:
            # A block is written whole: its old chunk (perhaps damaged) is not read back.
            _remove_chunk(path, "K", store, (i, j))
            store[rows, cols] = K
            if mirrored:
                # zarr copies a transposed (Fortran-ordered) view element by element; one
                # contiguous copy first is several times faster.
                KT = np.ascontiguousarray(K.T)
                _remove_chunk(path, "K", store, (j, i))
                store[cols, rows] = KT
                if checksums is not None:
                    mirror_table = checksums.of_rows(KT)
                del KT
        if grid.symmetric and i == j:
            diagonal = zarr.open_array(store=path, path="diag", mode="r+", config=_ARRAY_CONFIG)
            _remove_chunk(path, "diag", diagonal, (i,))
            diagonal[rows] = np.diagonal(K)
            if checksums is not None:
                checksums.write_diagonal(i, np.diagonal(K).astype(diagonal.dtype))
        del K
    if checksums is not None:
        checksums.write(i, j, table)
        if mirrored:
            checksums.write(j, i, mirror_table)
    # The flags come last: only chunks whose writes returned are marked complete.
    done = zarr.open_array(store=path, path="done", mode="r+", config=_ARRAY_CONFIG)
    done[i, j] = 1
    if mirrored:
        done[j, i] = 1
    return 1


def write_checked_blocks(path, values, diagonal=None, options=None):
    """Write a Dask array into the ``K`` array of the store at ``path``, each block with its checksums.

    For a store derived from a Gram (``to_zarr`` of a view), whose ``K`` has
    one chunk per block: ``values`` must have the same chunks. Creates the
    store's ``checksums`` arrays, writes each block and its checksums in one
    task, then ``diagonal`` (K(X, X)) with its checksums. Returns the
    ``checksums`` attribute to record with the store's other attributes.
    """
    path = str(path)
    root = zarr.open_group(path, mode="r+")
    K = root["K"]
    grid = _BlockGrid(K.shape, K.chunks, symmetric=diagonal is not None)
    spec = _Checksums.spec(options or GramOptions(), K.dtype, grid)
    _Checksums.create_arrays(root, grid, spec)
    blocks = values.to_delayed()
    tasks = [dask.delayed(_write_checked_block, pure=False)(blocks[i, j], path, grid, i, j, spec["segment_columns"])
             for i in range(grid.n_row_blocks) for j in range(grid.n_col_blocks)]
    dask.compute(tasks)
    if diagonal is not None:
        diagonal = np.asarray(diagonal, dtype=K.dtype)
        root["diag"][:] = diagonal
        checksums = _Checksums(path, grid, K.dtype.itemsize, spec["segment_columns"])
        for i in range(grid.n_row_blocks):
            checksums.write_diagonal(i, diagonal[grid.rows(i)])
    return spec


def _write_checked_block(block, path, grid, i, j, checksum_columns):
    """Write block (i, j) into ``K`` of the store at ``path`` (one chunk), then its checksums."""
    K = zarr.open_array(store=path, path="K", mode="r+", config=_ARRAY_CONFIG)
    block = np.ascontiguousarray(block, dtype=K.dtype)
    _remove_chunk(path, "K", K, (i, j))
    K[grid.rows(i), grid.cols(j)] = block
    checksums = _Checksums(path, grid, K.dtype.itemsize, checksum_columns)
    checksums.write(i, j, checksums.of_rows(block))


# --------------------------------------------------------------------------- #
# Where the blocks live: zarr store, local memory, cluster memory
# --------------------------------------------------------------------------- #


class _ZarrBlocks:
    """The blocks of a zarr store; reads check each row segment against the store's checksums.

    ``checksums`` is None for a store written without them (format versions
    1 and 2): its data are then read unverified.
    """

    def __init__(self, path, mode):
        self.path = str(path)
        self.group = zarr.open_group(self.path, mode=mode)
        self.K = self.group["K"]
        self.shards = _ShardFiles.of(self.K, os.path.join(self.path, "K"))
        self.checksums = _Checksums.of(dict(self.group.attrs), self.path)
        self.repaired = []
        self._done = None

    def done(self, refresh=False):
        if self._done is None or refresh:
            self._done = self._read_flags()
        return self._done

    def _read_flags(self):
        flags = self.group["done"]
        try:
            return flags[:].astype(bool)
        except (MemoryError, PermissionError):
            raise
        except Exception:
            # A damaged flag chunk: read the flags one by one; one that cannot be read counts as not done.
            done = np.zeros(flags.shape, dtype=bool)
            for i, j in np.ndindex(*flags.shape):
                with contextlib.suppress(Exception):
                    done[i, j] = bool(flags[i, j])
            return done

    def block(self, grid, i, j, buffer=None):
        """Block (i, j), checked against its checksums; read into ``buffer`` if given (uncompressed stores)."""
        rows, cols = grid.rows(i), grid.cols(j)
        with _decoding(self.path, [(i, j)], "its data"):
            if self.shards is not None:
                B = self.shards.read_block(i, j, rows.stop - rows.start, cols.stop - cols.start, buffer)
            else:
                B = self.K[rows, cols]
        if self.checksums is not None:
            self.checksums.check_block(i, j, B)
        return B

    def submatrix(self, grid, sorted_idx, start, stop, positions=None):
        """``K[sorted_idx, start:stop]``; with ``positions``, row p of that goes to row ``positions[p]``."""
        if self.shards is not None:
            return self.shards.read_rows(sorted_idx, start, stop, self.checksums, positions)
        data = self._checked_zarr_rows(grid, sorted_idx, start, stop)
        if positions is None:
            return data
        out = np.empty_like(data)
        out[positions] = data
        return out

    def _checked_zarr_rows(self, grid, sorted_idx, start, stop):
        checksums = self.checksums
        if checksums is None:
            return self._zarr_rows(grid, sorted_idx, start, stop)
        # Read the whole checksum segments holding start:stop, check each row per block, then cut.
        lo, hi = checksums.cover(start, stop)
        data = self._zarr_rows(grid, sorted_idx, lo, hi)
        bands = sorted_idx // grid.rc
        bounds = [0, *(np.flatnonzero(np.diff(bands)) + 1).tolist(), sorted_idx.size]
        for a, b in zip(bounds[:-1], bounds[1:]):
            i = int(bands[a])
            local = sorted_idx[a:b] - i * grid.rc
            for j in range(lo // grid.cc, -(-hi // grid.cc)):
                c0, c1 = max(lo, j * grid.cc), min(hi, (j + 1) * grid.cc)
                q0, q1, _, _ = checksums.span(j, c0 - j * grid.cc, c1 - j * grid.cc)
                checksums.check(i, j, local, q0, q1, _row_crcs(data[a:b, c0 - lo : c1 - lo]))
        if (lo, hi) != (start, stop):
            data = np.ascontiguousarray(data[:, start - lo : stop - lo])
        return data

    def _zarr_rows(self, grid, sorted_idx, start, stop):
        """``K[sorted_idx, start:stop]`` through zarr; a decoding error names the blocks that fail alone."""
        try:
            return self.K.get_orthogonal_selection((sorted_idx, slice(start, stop)))
        except (DKernelError, MemoryError, PermissionError):
            raise
        except Exception as exc:
            crossed, failed = [], []
            for i in np.unique(sorted_idx // grid.rc).tolist():
                rows = sorted_idx[sorted_idx // grid.rc == i]
                for j in range(start // grid.cc, -(-stop // grid.cc)):
                    crossed.append((i, j))
                    cols = slice(max(start, j * grid.cc), min(stop, (j + 1) * grid.cc))
                    try:
                        self.K.get_orthogonal_selection((rows, cols))
                    except Exception:
                        failed.append((i, j))
            raise _corrupt_error(self.path, failed or crossed,
                                 f"its data cannot be read ({type(exc).__name__}: {exc})") from exc

    def diag(self, grid):
        if "diag" not in self.group:
            return None
        with _decoding(self.path, [(i, i) for i in range(grid.n_row_blocks)], "the stored diagonal"):
            values = self.group["diag"][:]
        if self.checksums is not None:
            bad = self.checksums.corrupt_diagonal_chunks(values)
            if bad:
                raise _corrupt_error(self.path, [(i, i) for i in bad],
                                     "the stored diagonal does not match its checksum")
        return values

    def to_dask(self, grid):
        # One Dask chunk per block (shard), not per inner chunk; each task reads and checks its block.
        dtype = np.dtype(self.K.dtype)
        name = "gram-store-" + dask.base.tokenize(self.path, grid.n, grid.m, grid.rc, grid.cc, dtype.str)
        return da.from_array(_StoreBlockReader(self.path, grid, dtype), chunks=grid.dask_chunks(), name=name,
                             asarray=False, fancy=False, meta=np.empty((0, 0), dtype=dtype))

    def to_numpy(self, grid):
        if self.shards is None and self.checksums is None:
            with _decoding(self.path, [(i, j) for i in range(grid.n_row_blocks) for j in range(grid.n_col_blocks)],
                           "its data"):
                return self.K[:]
        out = np.empty((grid.n, grid.m), dtype=self.K.dtype)
        for i in range(grid.n_row_blocks):
            for j in range(grid.n_col_blocks):
                out[grid.rows(i), grid.cols(j)] = self.block(grid, i, j)
        return out

    def corrupt_blocks(self, grid, progress=False, done=None):
        """The computed blocks (flagged in ``done``, default: the store's flags) whose data fail their checksums.

        Reads every such block once, and for K(X, X) the stored diagonal
        (a bad diagonal chunk i counts as block (i, i)).
        """
        if self.checksums is None:
            version = dict(self.group.attrs).get("format_version")
            raise UnverifiableStoreError(
                f"the Gram store {self.path} (format version {version}) was written without checksums, so its "
                f"data cannot be verified; recompute it (GramMatrix.compute(..., overwrite=True), or "
                f"`dkernel gram ... --overwrite`) to get a store whose reads are checked."
            )
        self.checksums.forget()
        done = self.done(refresh=True) if done is None else np.asarray(done, dtype=bool)
        todo = [(int(i), int(j)) for i, j in np.argwhere(done)]
        bad = []
        buffer = None if self.shards is None else np.empty(grid.rc * grid.cc, dtype=self.shards.dtype)
        bar = TextProgress(len(todo), "blocks verified", enabled=progress)
        try:
            for n, (i, j) in enumerate(todo, 1):
                try:
                    self.block(grid, i, j, buffer)
                except CorruptStoreError:
                    bad.append((i, j))
                if n < len(todo):
                    bar.update(n)
                else:
                    bar.done = n  # shown once, by close()
        finally:
            bar.close()
        if grid.symmetric and "diag" in self.group:
            diagonal = [i for i in range(grid.n_row_blocks) if done[i, i]]
            try:
                values = self.group["diag"][:]
                bad_chunks = self.checksums.corrupt_diagonal_chunks(values)
            except (DKernelError, MemoryError, PermissionError):
                raise
            except Exception:
                bad_chunks = diagonal
            bad += [(i, i) for i in bad_chunks if i in diagonal]
        return sorted(set(bad))


class _StoreBlockReader:
    """The blocks of a store for :func:`dask.array.from_array`: each task reads and checks the part it needs.

    Pickled as the store's path and layout; the store is opened in the
    process that reads it.
    """

    def __init__(self, path, grid, dtype):
        self.path, self.grid, self.dtype = path, grid, np.dtype(dtype)
        self.shape = (grid.n, grid.m)
        self.ndim = 2
        self._gram = None

    def __getstate__(self):
        return {"path": self.path, "grid": self.grid, "dtype": self.dtype}

    def __setstate__(self, state):
        self.__init__(state["path"], state["grid"], state["dtype"])

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
        grid = self.grid
        i, j = r0 // grid.rc, c0 // grid.cc
        if (r0, r1, c0, c1) == (grid.rows(i).start, grid.rows(i).stop, grid.cols(j).start, grid.cols(j).stop):
            return np.asarray(self._gram.block(i, j))
        return self._gram.submatrix(np.arange(r0, r1), c0, c1)


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
    provenance : dict
        What the matrix is: ``kernel`` (the base kernel, as a dict),
        ``fingerprint`` (of the data) and ``operators``, the chain of views
        applied to ``K`` before it was stored, innermost first (empty for a
        raw Gram; see :func:`dkernel.operators.steps_from_description`).
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
                client=None, progress=None, options=None, verify=None, **kernel_params):
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
            Replace a Gram store built from other data, another kernel or
            another provenance (a derived store) instead of raising
            :class:`StoreMismatchError`. The new store is built beside the old
            one (``.NAME.dkernel-partial``, resumed there after an
            interruption) and swapped in when complete, so the old store stays
            readable until then. Only a Gram store is ever replaced: any other
            folder or file raises :class:`ArtifactPathError` and is left as is.
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
            and ``overwrite`` is False. The message lists what differs.
        ArtifactPathError
            If ``store`` is a file, a folder that is not a Gram store, or a
            dkernel artifact of another kind (a model); checked before the
            data are read.
        NonFiniteInputError, EmptyInputError, FeatureMismatchError, InvalidKernelParameterError
            For invalid data or kernel parameters, before anything is written.
        """
        options = (options or GramOptions()).replace(chunk=chunk, dtype=dtype, progress=progress, verify=verify)
        if store is not None:
            check_store_path(store, overwrite)  # before the data are read: a path that is refused whatever they are
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
        meta["provenance"] = {"kernel": meta["kernel"], "fingerprint": meta["fingerprint"], "operators": []}
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
                   options=options, provenance=meta["provenance"])

    @classmethod
    def open(cls, path, mode="r"):
        """Reopen a Gram store written by :meth:`compute`, or a derived store written by a view's ``to_zarr``.

        A derived store (centered, normalized...) opens for reading like a
        raw one; its :attr:`provenance` and :attr:`operators` say what it
        holds (``is_raw`` is False). Code that needs the raw Gram of a kernel
        (``compute(store=...)``, ``SVC(store=...)``) refuses it.

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
                   blocks=_warn_unverified(_ZarrBlocks(path, mode)), path=path, provenance=_provenance_of(meta))

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

    def _read(self, read, *args):
        """``read(*args)``, once more with the checksums read afresh if it finds corrupted data.

        Cached checksums may be older than the data when the store was
        repaired since they were read (a recomputed block can differ in the
        last bit, under another BLAS thread count).
        """
        try:
            return read(*args)
        except CorruptStoreError:
            checksums = getattr(self._blocks, "checksums", None)
            if checksums is None:
                raise
            checksums.forget()
            return read(*args)

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
        return self._read(self._blocks.to_numpy, self._grid)

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
        if not isinstance(self._blocks, _ZarrBlocks):
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
            "bytes_on_disk": store_size_bytes(self.path) if self.path else 0,
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
    stored_ops = _provenance_of(stored)["operators"]
    requested_ops = meta.get("provenance", {}).get("operators", [])
    if stored_ops != requested_ops:
        diffs.append(f"operators (store: {describe_operators(stored_ops)}; "
                     f"requested: {describe_operators(requested_ops)})")
    return diffs


def _provenance_of(attrs):
    """The provenance of a store from its attributes: base kernel, data fingerprint, operator chain.

    Stores written before the ``provenance`` attribute existed are read from
    their ``kernel``, ``fingerprint`` and (derived stores) ``operator``
    attributes.
    """
    provenance = attrs.get("provenance")
    if isinstance(provenance, dict) and "operators" in provenance:
        return provenance
    operators = []
    if attrs.get("operator"):
        from .operators import steps_from_description

        operators = steps_from_description(attrs["operator"])
    return {"kernel": attrs.get("kernel"), "fingerprint": attrs.get("fingerprint"), "operators": operators}


def describe_step(step, full=False):
    """One operator step in words: ``centered (origin class-balanced on 120 of 120 points, weights sha256:…)``.

    ``full`` gives the whole weights fingerprint instead of its first characters.
    """
    name = step.get("name", "?")
    details = []
    if step.get("scheme"):
        origin = f"origin {step['scheme']}"
        if step.get("n_support") is not None and step.get("n") is not None:
            origin += f" on {step['n_support']} of {step['n']} points"
        details.append(origin)
    if step.get("length") is not None:
        details.append(f"|a| = {step['length']:g}")
    if step.get("weights"):
        details.append(f"weights {step['weights']}" if full else f"weights {str(step['weights'])[:19]}…")
    return name + (f" ({', '.join(details)})" if details else "")


def describe_operators(operators):
    """One line for an operator chain, innermost first: ``centered (...) then normalized``; ``none`` if raw."""
    if not operators:
        return "none (a raw Gram)"
    return " then ".join(describe_step(step) for step in operators)


def matrix_form(operators, symmetric=True):
    """The matrix a store holds: ``K(X, X)`` for a raw Gram, ``normalized(centered(K(X, X)))`` for a derived one."""
    form = "K(X, X)" if symmetric else "K(X, Z)"
    for step in operators:
        form = f"{step.get('name', '?')}({form})"
    return form


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
    checksums = _Checksums.spec(options, meta["dtype"], grid)
    _Checksums.create_arrays(root, grid, checksums)
    # The attributes go last: a folder without them is not taken for a store.
    root.attrs.update({"format": STORE_FORMAT, "format_version": STORE_VERSION, **meta,
                       "n_blocks": [grid.n_row_blocks, grid.n_col_blocks], "blocks_done": 0,
                       "checksums": checksums})


def check_store_path(path, overwrite=False):
    """Refuse, before any data is read, a store path that :meth:`GramMatrix.compute` refuses whatever the data.

    That is a file, a folder that is not a Gram store, an artifact of another
    kind (:func:`dkernel._artifacts.check_target`), and, without
    ``overwrite``, a derived store (its operator chain is not empty: a
    centered or normalized store is not the raw Gram that is computed).
    Returns the store's attributes, or None when there is no store yet.
    """
    path = os.path.abspath(os.fspath(path))
    if _artifacts.check_target(path, "gram", reuse=True) != "same":
        return None
    stored = _read_meta(path)
    if stored is None:  # pragma: no cover - a zarr.json naming the format but unreadable by zarr
        raise StoreMismatchError(f"{path} names itself a dkernel Gram store but cannot be opened; choose another "
                                 f"path.")
    operators = _provenance_of(stored)["operators"]
    if operators and not overwrite:
        raise StoreMismatchError(
            f"the Gram store {path} holds {matrix_form(operators, stored.get('symmetric', True))}, a derived "
            f"store, not the raw Gram of a kernel: operators (store: {describe_operators(operators)}; requested: "
            f"{describe_operators([])}). Pass overwrite=True (CLI: --overwrite) to replace it, or choose another "
            f"path."
        )
    return stored


def _create_beside(dest, meta, grid, options):
    """Create an empty store (arrays and attributes, no blocks) at ``dest``: built beside it, then renamed in."""
    with _artifacts.writing(dest, "gram") as tmp:
        _create_store(tmp, meta, grid, options)


def _prepare_store(path, meta, grid, overwrite, options):
    """Choose where this run writes its blocks; returns ``(store_path, replacing)``.

    * A store of the same data, kernel and provenance at ``path`` is resumed
      in place (with ``overwrite``, one written without checksums is rebuilt
      as below).
    * No store at ``path`` (or an empty folder): a new empty store is created
      beside it and renamed in, then filled in place (an interrupted run is
      resumed by the same call). A complete replacement left at the
      :func:`~dkernel._artifacts.partial_path` by a run killed during its
      swap is moved in first.
    * A store of other data, kernel or provenance is refused unless
      ``overwrite``; with ``overwrite`` the new store is built at the fixed
      sibling :func:`~dkernel._artifacts.partial_path` (resumed there if it
      matches) and swapped in by the caller once every block is written
      (``replacing`` is True), so the old store stays readable until then.
    * Anything that is not a Gram store is refused and never deleted.
    """
    partial = _artifacts.partial_path(path)
    stored = check_store_path(path, overwrite=True)
    if stored is not None:
        diffs = _mismatches(stored, meta)
        if not diffs and overwrite and _Checksums.of(stored, path) is None:
            # A store written without checksums is resumed as it is, or rebuilt with them on overwrite.
            diffs = [f"format (store: version {stored.get('format_version')}, without checksums)"]
        if not diffs:
            return path, False
        if not overwrite:
            pending = _read_meta(partial) if os.path.isdir(partial) else None
            hint = ""
            if pending is not None and not _mismatches(pending, meta):
                hint = (f" An interrupted replacement with the requested data and kernel waits in {partial}; "
                        f"overwrite=True (CLI: --overwrite) finishes it.")
            raise StoreMismatchError(
                f"the Gram store {path} was built with another " + "; ".join(diffs)
                + ". Pass overwrite=True (CLI: --overwrite) to replace it, or choose another path." + hint
            )
        _prepare_partial(partial, meta, grid, options)
        return partial, True
    if os.path.isdir(partial) and _artifacts.artifact_kind(partial) == "gram":
        pending = _read_meta(partial)
        if pending is not None and not _mismatches(pending, meta):
            _artifacts.install(partial, path, "gram")
            return path, False
    _create_beside(path, meta, grid, options)
    return path, False


def _prepare_partial(partial, meta, grid, options):
    """Resume the replacement store at ``partial`` if it matches ``meta``, else (re)create it there."""
    if os.path.lexists(partial):
        if _artifacts.artifact_kind(partial) != "gram":
            raise StoreMismatchError(
                f"{partial} (where dkernel builds the replacement of a Gram store) exists and is not a dkernel "
                f"Gram store; it is not deleted: move it away to replace the store."
            )
        pending = _read_meta(partial)
        if pending is not None and not _mismatches(pending, meta):
            return
        _artifacts.remove_own(partial, "gram")
    _create_beside(partial, meta, grid, options)


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


def _compute_into_store(X, Z, kernel, grid, dtype, meta, target, overwrite, client, options):
    path, replacing = _prepare_store(target, meta, grid, overwrite, options)
    blocks = _ZarrBlocks(path, "r+")
    done_before = blocks.done()
    repaired = _unflag_damaged_blocks(blocks, grid, done_before, options)
    if repaired:
        done_before = blocks.done(refresh=True)
    checksum_columns = None if blocks.checksums is None else blocks.checksums.seg
    pairs = grid.evaluated_blocks(done=done_before)
    n_computed = 0
    started = time.perf_counter()
    try:
        if pairs:
            Xk, Zk = _data_keys(X, Z, grid, client)
            run_id = "gram-run-" + uuid.uuid4().hex
            tasks = [dask.delayed(_write_block, pure=False)(Xk, Zk, kernel, grid, i, j, dtype, path, run_id,
                                                            checksum_columns)
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
                "n_blocks_repaired": len(repaired),
                "n_blocks_flagged": int(done.sum() - done_before.sum()),
                "n_blocks_requested": len(pairs),
                "seconds": round(time.perf_counter() - started, 3),
            },
        })
    if replacing:
        # Every block of the replacement is written: swap it in for the old store.
        if not blocks.done(refresh=True).all():
            raise IncompleteStoreError(
                f"the replacement of {target} in {path} is not complete; run the same computation again to "
                f"finish it (the old store is still in place)."
            )
        _artifacts.install(path, target, "gram")
        blocks = _ZarrBlocks(target, "r+")
    blocks.repaired = repaired
    return blocks, n_computed


def _unflag_damaged_blocks(blocks, grid, done, options):
    """Before a run resumes a store: find its damaged blocks and clear their done flags, so the run rewrites them.

    With ``options.verify``, every block flagged in ``done`` is read and
    checked against its checksums (:meth:`_ZarrBlocks.corrupt_blocks`).
    A store written without checksums is resumed unchecked, with a warning.
    Returns the damaged blocks.
    """
    if not done.any():
        return []
    if blocks.checksums is None:
        _warn_unverified(blocks)
        return []
    if not options.verify:
        return []
    bad = blocks.corrupt_blocks(grid, progress=options.progress, done=done)
    if bad:
        flags = zarr.open_array(store=blocks.path, path="done", mode="r+", config=_ARRAY_CONFIG)
        for i, j in bad:
            flags[i, j] = 0
    return bad


def _warn_unverified(blocks):
    """Warn that the store of ``blocks`` has no checksums (its reads are not verified); returns ``blocks``."""
    if blocks.checksums is None:
        version = dict(blocks.group.attrs).get("format_version")
        warnings.warn(
            f"the Gram store {blocks.path} (format version {version}) was written without checksums: its data are "
            f"read without verification. Recompute it (overwrite=True, CLI: --overwrite) to get checked reads.",
            UnverifiedStoreWarning, stacklevel=3,
        )
    return blocks
