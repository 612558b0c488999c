"""The byte format of the shards of an uncompressed Gram store, read and written without zarr's codecs.

Without compression (the default) the shards of ``K`` are read and written
here directly (:class:`_ShardFiles`): a block task writes each shard with one
sequential file write, and ``rows(idx)`` reads, for each requested row, only
that row's bytes in each shard it crosses, so scattered row reads cost what
they return rather than whole blocks. Compressed stores, and stores of format
version 1 (one plain chunk per block), are read and written through zarr; they
give the same values, but a row read decodes whole inner chunks (version 1:
whole blocks).
"""

import os

import google_crc32c
import numpy as np
from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec

from ._corruption import _corrupt_error

__all__ = []

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
        if google_crc32c.value(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
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
            value, extend = google_crc32c.value, google_crc32c.extend
            keep = None if crcs is None else crcs.append
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
