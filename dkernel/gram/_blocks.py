"""Where the blocks of a Gram live: a zarr store, this process's memory, or the memory of a cluster's workers.

Each backend gives the blocks, row slabs (``submatrix``), the stored diagonal
and the whole matrix; the store's backend (:class:`_ZarrBlocks`) checks every
row it reads against the store's checksums, and finds the damaged blocks of a
store (:meth:`_ZarrBlocks.corrupt_blocks`, behind ``GramMatrix.verify``). The
store's lazy Dask array is built by :class:`~dkernel.gram.GramMatrix` itself,
whose reads each of its tasks makes. A block is evaluated by
:func:`_evaluate_block`, for every backend (the local and the bucket stores
alike).
"""

import contextlib
import os
import warnings

import dask
import dask.array as da
import numpy as np
import zarr

from .._runtime.progress import TextProgress
from ..exceptions import CorruptStoreError, DKernelError, UnverifiableStoreError, UnverifiedStoreWarning
from ._checksums import _Checksums, _row_crcs
from ._corruption import _corrupt_error, _decoding
from ._identity import WRITE_ID, StoreLostError, StoreStamp, replaced_message
from ._metadata import read_store_meta
from ._shards import _ShardFiles

__all__ = []


class _ZarrBlocks:
    """The blocks of a zarr store; reads check each row segment against the store's checksums.

    The store's metadata are checked when it is opened
    (:func:`~dkernel.gram._metadata.read_store_meta`: damage raises
    :class:`CorruptStoreError`), and ``stamp`` (a
    :class:`~dkernel.gram._identity.StoreStamp`) tells whether the path still
    holds this store: :class:`~dkernel.gram.GramMatrix` checks it around every
    read. With ``write_id``, the store at ``path`` must be that one.
    ``checksums`` is None for a store written without them (format versions
    1 and 2): its data are then read unverified.
    """

    def __init__(self, path, mode, write_id=None, attrs=None):
        self.path = str(path)
        attrs = read_store_meta(self.path) if attrs is None else attrs
        if attrs is None:
            raise StoreLostError(replaced_message(self.path))
        if write_id is not None and attrs.get(WRITE_ID) != write_id:
            raise StoreLostError(replaced_message(self.path, reading=False))
        self.stamp = StoreStamp(self.path, attrs.get(WRITE_ID))
        self.group = zarr.open_group(self.path, mode=mode)
        self.K = self.group["K"]
        self.shards = _ShardFiles.of(self.K, os.path.join(self.path, "K"))
        self.checksums = _Checksums.of(attrs, self.path)
        self.format_version = attrs.get("format_version")
        self.repaired = []
        self._done = None

    def done(self, refresh=False):
        if self._done is None or refresh:
            self._done = self._read_flags()
        return self._done

    def present(self, done):
        """``done`` (block flags) less the blocks whose chunk file of ``K`` is missing: no data is read.

        A block's task writes its chunk (a shard, or a plain chunk) before it
        flags the block done, and empty chunks are written too, so a flagged
        block without its file was deleted since. One directory listing per
        row of blocks (``K/c/<i>/``, the chunk keys the metadata checks).
        """
        done = np.array(done, dtype=bool)
        rows = os.path.join(self.path, "K", "c")
        for i in np.flatnonzero(done.any(axis=1)).tolist():
            try:
                names = set(os.listdir(os.path.join(rows, str(i))))
            except (FileNotFoundError, NotADirectoryError):
                names = set()
            for j in np.flatnonzero(done[i]).tolist():
                done[i, j] = str(j) in names
        return done

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
            version = self.format_version
            raise UnverifiableStoreError(
                f"the Gram store {self.path} (format version {version}) was written without checksums, so its "
                f"data cannot be verified; recompute it (GramMatrix.compute(..., overwrite=True), or "
                f"`dkernel gram ... --overwrite`) to get a store whose reads are checked."
            )
        self.checksums.forget()
        self.stamp.check()
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
        self.stamp.check()  # what was read is this store's, not a store that replaced it meanwhile
        return sorted(set(bad))


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
        dtype = next(iter(self.blocks.values())).dtype
        return grid.gather(lambda i, j: self.blocks[i, j], sorted_idx, start, stop, dtype)

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


def _warn_unverified(blocks):
    """Warn that the store of ``blocks`` has no checksums (its reads are not verified); returns ``blocks``."""
    if blocks.checksums is None:
        version = blocks.format_version
        warnings.warn(
            f"the Gram store {blocks.path} (format version {version}) was written without checksums: its data are "
            f"read without verification. Recompute it (overwrite=True, CLI: --overwrite) to get checked reads.",
            UnverifiedStoreWarning, stacklevel=3,
        )
    return blocks


# --------------------------------------------------------------------------- evaluating a block
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
    """Block (i, j) of the Gram; into ``out`` (an array of the block's shape and dtype) where given.

    With ``checksums`` (a :class:`_Checksums`), returns ``(K, table)``, the
    block and the checksums of its rows (:meth:`_Checksums.of_rows`): taken
    strip by strip while each strip is in cache where the block is evaluated
    into ``out`` (off the diagonal), else from the finished block.
    """
    rows, cols = grid.rows(i), grid.cols(j)
    on_diagonal = grid.symmetric and i == j
    Zb = X[rows] if on_diagonal else Z[cols]
    table = on_strip = None
    if out is not None and checksums is not None and not on_diagonal:
        table = np.zeros((out.shape[0], checksums.spb), dtype=np.uint32)

        def on_strip(a, S):
            table[a : a + S.shape[0]] = checksums.of_rows(S)

    if out is not None:
        kernel.evaluate_into(X[rows], Zb, out, symmetric=on_diagonal, on_strip=on_strip)
        K = out
    else:
        K = np.asarray(kernel.block(X[rows], Zb, symmetric=on_diagonal), dtype=dtype)
    if on_diagonal:
        if not K.flags.writeable:
            K = K.copy()
        _mirror_upper(K)
    if checksums is None:
        return K
    return K, (checksums.of_rows(K) if table is None else table)
