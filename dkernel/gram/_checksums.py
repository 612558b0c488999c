"""CRC-32C checksums of the stored rows of a Gram: how they are written, combined and checked.

The task of a block writes the CRC-32C of each row of the block (and of its
mirror), cut into segments of a few KB (:class:`_Checksums`), before its done
flag. Every read checks the rows it returns, reading whole segments: a row
read costs one CRC-32C call per block it crosses (several GB/s), the stored
checksums of the segments being combined into the checksum of the span read
(:func:`_crc_concat`). A mismatch raises :class:`~dkernel.exceptions.CorruptStoreError`.

From format version 4 the checksums are stored keyed (:func:`_block_key`): each is the CRC-32C XOR a key of the
store's ``write_id``, the block (i, j), the segment and the row. A CRC-32C says only that a row's bytes are the bytes
its checksum was taken of; the key says that they are this store's bytes of that place, so a block copied together
with its checksums from another store, or onto another block of this one, fails its checks like any damaged block.
Version 3 stores (plain CRC-32C) are read and resumed as they were written.
"""

import functools
import os

import google_crc32c
import numpy as np
import zarr
from zarr.codecs import BytesCodec

from ..exceptions import CorruptStoreError
from ._corruption import _corrupt_error, _decoding, corruption_message
from ._format import _ARRAY_CONFIG, KEYED_CHECKSUMS_VERSION, _remove_chunk
from ._grid import _BlockGrid

__all__ = []


@functools.lru_cache(maxsize=None)
def _crc_shift_tables(nbytes):
    """Byte tables of ``shift(v, nbytes)``, the CRC-32C register after ``nbytes`` zero bytes.

    The CRC-32C of a concatenation is ``crc(A + B) = shift(crc(A), len(B))
    ^ crc(B)``, where ``shift(v, L) = extend(v, zeros(L)) ^ value(zeros(L))``
    is linear over GF(2) in ``v``. It is evaluated on the 32 unit vectors
    and spread into four tables of 256 entries, one per byte of ``v``.
    """
    zeros = bytes(int(nbytes))
    offset = google_crc32c.value(zeros)
    units = np.array([google_crc32c.extend(1 << k, zeros) ^ offset for k in range(32)], dtype=np.uint32)
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


#: An odd 32-bit constant (the golden ratio's): the row term of a key, ``(row + 1) · c mod 2³²``, differs for every
#: row of a store of fewer than 2³² rows.
_ROW_MULTIPLIER = np.uint32(0x9E3779B1)


def _block_key(write_id, i, j, n_segments, rows):
    """``(len(rows), n_segments)`` uint32: the key XORed onto the stored checksums of block (i, j) of the store
    ``write_id``, for its matrix rows ``rows`` (a range): a CRC-32C of the store, block and segment, XOR a term of
    the row."""
    segments = np.array([google_crc32c.value(f"{write_id}:{i}:{j}:{q}".encode()) for q in range(n_segments)],
                        dtype=np.uint32)
    row_terms = (np.arange(rows.start, rows.stop, dtype=np.uint32) + np.uint32(1)) * _ROW_MULTIPLIER
    return row_terms[:, None] ^ segments[None, :]


def _diagonal_key(write_id, i):
    """The key XORed onto the stored checksum of chunk i of the diagonal of the store ``write_id``."""
    return np.uint32(google_crc32c.value(f"{write_id}:diagonal:{i}".encode()))


def _row_crcs(A):
    """The CRC-32C of each row of a 2-D array (of the bytes of its values in little-endian order)."""
    A = np.asarray(A)
    A = np.asarray(A, dtype=A.dtype.newbyteorder("<"))
    if A.shape[1] and A.strides[1] != A.itemsize:
        A = np.ascontiguousarray(A)
    return np.fromiter(map(google_crc32c.value, A), dtype=np.uint32, count=A.shape[0])


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

    def __init__(self, path, grid, itemsize, seg, key=None):
        self.path = path
        self.grid = grid
        self.itemsize = int(itemsize)
        self.seg = int(seg)
        self.spb = -(-grid.cc // self.seg)
        self.key = key  # the store's write_id from format version 4 (keyed checksums), else None
        self._stored = {}
        self._whole = {}
        self._array = None
        self._chunk_key = None

    @classmethod
    def of(cls, attrs, path):
        """The checksums of the store at ``path`` (attributes ``attrs``), or None for a store written without them.

        Only a store of format version 1 or 2 without a ``checksums``
        attribute and array has none: a store of version 3, or one holding
        checksums, whose spec is missing or unknown is damaged
        (:class:`CorruptStoreError`), never read unverified.
        """
        spec = attrs.get("checksums")
        if spec is None and attrs.get("format_version") in (1, 2) and not os.path.isdir(
                os.path.join(str(path), "checksums")):
            return None
        if not (isinstance(spec, dict) and spec.get("algorithm") == "crc32c"
                and isinstance(spec.get("segment_columns"), int) and spec["segment_columns"] > 0):
            detail = f"attribute 'checksums' is {spec!r}, not a checksum spec"
            raise CorruptStoreError(corruption_message(str(path), [], detail), path=str(path), blocks=[],
                                    detail=detail)
        key = None
        version = attrs.get("format_version")
        if isinstance(version, int) and version >= KEYED_CHECKSUMS_VERSION:
            key = attrs.get("write_id")
            if not isinstance(key, str) or not key:
                detail = f"attribute 'write_id' is {key!r}: the store's checksums are keyed by it"
                raise CorruptStoreError(corruption_message(str(path), [], detail), path=str(path), blocks=[],
                                        detail=detail)
        grid = _BlockGrid(attrs["shape"], attrs["chunks"], attrs["symmetric"])
        return cls(path, grid, np.dtype(attrs["dtype"]).itemsize, spec["segment_columns"], key)

    def _keyed(self, i, j, table):
        """``table`` (checksums of rows of block (i, j), from its first row) with the block's key XORed on: how
        they are stored, and, stored ones, how they are read back. Unchanged for an unkeyed (version 3) store."""
        if self.key is None:
            return table
        first = self.grid.rows(i).start
        return table ^ _block_key(self.key, i, j, self.spb, range(first, first + table.shape[0]))

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
        array[self.grid.rows(i), j * self.spb : (j + 1) * self.spb] = self._keyed(i, j, np.asarray(table, np.uint32))

    def write_diagonal(self, i, values):
        """Store the checksum of chunk i of the diagonal."""
        array = zarr.open_array(store=self.path, path="diag_checksums", mode="r+", config=_ARRAY_CONFIG)
        array[i] = _row_crcs(np.asarray(values).reshape(1, -1))[0] ^ self._diagonal_key(i)

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
                    self._array = zarr.open_array(store=self.path, path="checksums", mode="r")
                    if (tuple(self._array.metadata.codecs) == (BytesCodec(endian="little"),)
                            and tuple(self._array.chunks) == (self.grid.rc, self.spb)):
                        self._chunk_key = self._array.metadata.encode_chunk_key
                if self._chunk_key is None:
                    sums = np.asarray(self._array[rows, j * self.spb : (j + 1) * self.spb], dtype=np.uint32)
                else:
                    sums = self._read_chunk(i, j)[: rows.stop - rows.start]
            sums = self._stored[i, j] = self._keyed(i, j, sums)
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
                if _row_crcs(np.asarray(diagonal[self.grid.rows(i)]).reshape(1, -1))[0] ^ self._diagonal_key(i)
                != sums[i]]

    def _diagonal_key(self, i):
        return np.uint32(0) if self.key is None else _diagonal_key(self.key, i)

    def forget(self):
        """Drop the cached checksums: the next reads fetch them from the store."""
        self._stored.clear()
        self._whole.clear()
