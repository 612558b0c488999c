"""Execution options of a Gram computation, kept together in one object.

Options tune how a Gram matrix is computed and stored (block size, dtype,
codec, progress display); they never change which matrix is computed, except
for the dtype, which is recorded in the store.
"""

import dataclasses
import math

import numpy as np

__all__ = ["GramOptions", "default_chunk", "inner_rows"]

#: Target size of one block (one zarr chunk, one Dask task): large enough that a
#: BLAS product dominates the per-task overhead, small enough that a few blocks
#: per worker thread fit in memory.
TARGET_BLOCK_BYTES = 128 * 2**20

#: Rows per inner chunk of a zarr shard (one shard per block). Uncompressed
#: stores are read row by row whatever this value; for compressed ones it is
#: the unit decoded to return one row, so small values keep scattered row
#: reads cheap, while larger ones keep the shard index and zarr's per-chunk
#: overhead small (see ``benchmarks/bench_gram.py``).
INNER_ROWS = 16

_CODECS = ("none", "lz4", "zstd")
_DTYPES = ("float32", "float64")


def default_chunk(dtype, target_bytes=TARGET_BLOCK_BYTES, n=None):
    """Side of a square block of ``dtype`` holding about ``target_bytes``.

    Without ``n``: a multiple of 256, 4096 for float64 (128 MiB) and 5632 for
    float32 (121 MiB). With ``n`` (the side of the matrix), the block count
    ``ceil(n / side)`` is kept and the side shrunk to split ``n`` into equal
    blocks, rounded up to a multiple of 8: zarr pads the edge chunks to full
    size, so a side that divides ``n`` stores no padding (float32 at
    n = 20000: 4 blocks of 5000 instead of 3 of 5632 and one of 3104 padded to
    5632, 1.6 GB on disk instead of 2.03 GB).
    """
    itemsize = np.dtype(dtype).itemsize
    side = int(math.sqrt(target_bytes / itemsize))
    side = max(256, side - side % 256)
    if n is None or n <= side:
        return side if n is None else max(int(n), 1)
    n_blocks = -(-int(n) // side)
    equal = -(-int(n) // n_blocks)
    return equal + (-equal) % 8


def inner_rows(chunk, target=None):
    """Rows per inner zarr chunk of a ``chunk``-row shard: the largest divisor of ``chunk`` <= ``target``.

    zarr requires inner chunks that tile the shard exactly.
    """
    target = INNER_ROWS if target is None else int(target)
    return next(r for r in range(min(target, int(chunk)), 0, -1) if chunk % r == 0)


@dataclasses.dataclass(frozen=True)
class GramOptions:
    """How a Gram matrix is computed and stored.

    Parameters
    ----------
    chunk : int or None, default=None
        Side of the square blocks: one block is one Dask task and one zarr
        shard. ``None`` picks :func:`default_chunk` for the dtype and ``n``:
        about 4096 for float64, shrunk to split ``n`` into equal blocks
        (4000 for n = 20000). Chunks that do not divide ``n`` are fine: the
        last block is smaller (on disk its rows are padded to the full block
        width).
    dtype : {"float32", "float64"} or None, default=None
        dtype of the Gram matrix. ``None``: float32 when the data (both X and
        Z) are float32, float64 otherwise. The data are cast to this dtype
        before the kernel is evaluated.
    codec : {"none", "lz4", "zstd"}, default="none"
        Compression of the zarr chunks. Kernel values compress poorly, and
        ``"none"`` keeps writes and random row reads fastest (see
        ``benchmarks/bench_gram.py``).
    inner_rows : int or None, default=None
        Rows per inner zarr chunk of a shard; ``None`` picks the largest
        divisor of the block side not above 16 (:func:`inner_rows`). Only
        compressed stores depend on it for reading rows: they decode whole
        inner chunks.
    progress : bool, default=True
        Show a progress bar while blocks are computed.
    to_numpy_max_bytes : int, default=2 GiB
        Size above which :meth:`GramMatrix.to_numpy` refuses unless forced.
    verify : bool, default=True
        When a computation resumes an existing store, first check the blocks
        it already holds against their checksums (one read of those blocks)
        and recompute the corrupted ones with the missing ones. ``False``
        skips the check: corrupted blocks are then left as they are (reads
        still detect them).
    checksum_bytes : int, default=16384
        Bytes per checksum segment: each row of a block is checksummed in
        segments of ``checksum_bytes // itemsize`` columns (CRC-32C). A read
        of part of a row reads the whole segments it touches, so smaller
        segments keep narrow column ranges cheap, while larger ones mean
        fewer checksum calls when blocks are written.
    """

    chunk: int | None = None
    dtype: str | None = None
    codec: str = "none"
    inner_rows: int | None = None
    progress: bool = True
    to_numpy_max_bytes: int = 2 * 2**30
    verify: bool = True
    checksum_bytes: int = 16384

    def __post_init__(self):
        if self.chunk is not None and (
            isinstance(self.chunk, bool) or not isinstance(self.chunk, (int, np.integer)) or self.chunk < 1
        ):
            raise ValueError(f"chunk must be a positive integer or None; got {self.chunk!r}.")
        if self.inner_rows is not None and (
            isinstance(self.inner_rows, bool) or not isinstance(self.inner_rows, (int, np.integer))
            or self.inner_rows < 1
        ):
            raise ValueError(f"inner_rows must be a positive integer or None; got {self.inner_rows!r}.")
        if self.dtype is not None:
            name = np.dtype(self.dtype).name if _is_dtype_like(self.dtype) else self.dtype
            if name not in _DTYPES:
                raise ValueError(f"dtype must be one of {list(_DTYPES)} or None; got {self.dtype!r}.")
            object.__setattr__(self, "dtype", name)
        if (isinstance(self.checksum_bytes, bool) or not isinstance(self.checksum_bytes, (int, np.integer))
                or self.checksum_bytes < 8):
            raise ValueError(f"checksum_bytes must be an integer >= 8; got {self.checksum_bytes!r}.")
        if self.codec not in _CODECS:
            raise ValueError(f"codec must be one of {list(_CODECS)}; got {self.codec!r}.")

    def replace(self, **overrides):
        """A copy with the fields given a value other than ``None`` replaced.

        Fields left at ``None`` keep this object's value, so a call can
        override only what its caller set.
        """
        changes = {k: v for k, v in overrides.items() if v is not None}
        return dataclasses.replace(self, **changes) if changes else self

    def resolve_chunk(self, dtype, n=None):
        """The block side for a matrix side ``n``: the option's value, else :func:`default_chunk`."""
        return int(self.chunk) if self.chunk is not None else default_chunk(dtype, n=n)

    def resolve_inner_rows(self, chunk):
        return inner_rows(chunk, self.inner_rows)

    def zarr_compressors(self):
        if self.codec == "none":
            return None
        from zarr.codecs import BloscCodec

        if self.codec == "lz4":
            return BloscCodec(cname="lz4", clevel=1, shuffle="shuffle")
        return BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")


def _is_dtype_like(value):
    try:
        np.dtype(value)
    except TypeError:
        return False
    return True
