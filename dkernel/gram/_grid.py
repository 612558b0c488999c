"""The block grid of a Gram: the square blocks that are its Dask tasks, zarr shards and units of work.

A Gram ``K(X, Z)`` of shape ``n × m`` is cut into row blocks of X (``rc``
rows) and column blocks of Z (``cc`` columns). For ``K(X, X)`` only the blocks
on and above the diagonal are evaluated; block (i, j), i < j, also gives its
mirror (j, i).
"""

import numpy as np

__all__ = []


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

    def gather(self, block, sorted_idx, start, stop, dtype):
        """``K[sorted_idx, start:stop]`` gathered from the blocks that hold it, ``block(i, j)`` reading block (i, j)."""
        out = np.empty((len(sorted_idx), stop - start), dtype=dtype)
        bands = sorted_idx // self.rc
        for i in np.unique(bands):
            sel = np.flatnonzero(bands == i)
            local = sorted_idx[sel] - i * self.rc
            for j in range(start // self.cc, -(-stop // self.cc)):
                c0, c1 = max(start, j * self.cc), min(stop, (j + 1) * self.cc)
                out[sel, c0 - start : c1 - start] = block(i, j)[local, c0 - j * self.cc : c1 - j * self.cc]
        return out

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


def block_shape(options, dtype, shape, symmetric, memory_limit=None):
    """The blocks' shape for a matrix of ``shape``: ``options.chunk`` when given, else
    :func:`~dkernel._runtime.options.default_chunk` of blocks of at most 128 MiB and an eighth of ``memory_limit``
    (the smallest worker's, in bytes; a task holds its block, the kernel's temporaries and the worker's own memory,
    about 150 MB)."""
    from .._runtime.options import TARGET_BLOCK_BYTES, default_chunk

    def side(n):
        if options.chunk is not None:
            return min(int(options.chunk), n)
        target = TARGET_BLOCK_BYTES if memory_limit is None else min(TARGET_BLOCK_BYTES, memory_limit // 8)
        return min(default_chunk(dtype, target_bytes=target, n=n), n)

    rows = side(shape[0])
    return (rows, rows) if symmetric else (rows, side(shape[1]))
