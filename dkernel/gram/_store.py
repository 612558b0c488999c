"""Creating and replacing Gram stores safely: the one path by which every store is created.

A store is written under the rules of :mod:`dkernel._runtime.artifacts`: a new store
is created beside its path and renamed in; a store replaced with
``overwrite`` is rebuilt beside it and swapped in only when complete; a path
holding anything but a Gram store is refused and never deleted.

Two writers create stores, both through :func:`_create_store`:
:meth:`GramMatrix.compute <dkernel.gram.GramMatrix.compute>` (an empty store
whose blocks its tasks fill, resumed after an interruption:
:func:`_prepare_store`) and the ``to_zarr`` of a lazy view of
:mod:`dkernel.views` (a derived store written whole:
:func:`write_view_store`, checked first by :func:`check_output_store`).
"""

import os
import re

import dask
import numpy as np
import zarr

from .._runtime import artifacts
from .._runtime.options import GramOptions
from ..exceptions import ArtifactPathError, StoreMismatchError
from ._checksums import _Checksums
from ._format import (
    _ARRAY_CONFIG,
    STORE_FORMAT,
    STORE_VERSION,
    _mismatches,
    _provenance_of,
    _read_meta,
    _remove_chunk,
    data_fingerprint,
    describe_operators,
    matrix_form,
)
from ._grid import _BlockGrid

__all__ = ["check_output_store", "check_store_path", "write_view_store"]


def _create_store(path, meta, grid, options, *, sharded=True):
    """Create an empty store at ``path``: its arrays and attributes (``meta``), no blocks; returns its root group.

    ``K`` of a computed Gram has one shard per block (``sharded``), of inner
    chunks spanning the block's width: a row of a block is then one
    contiguous byte range of its shard. A derived store, written whole by one
    task per block, has one plain chunk per block.
    """
    root = zarr.open_group(path, mode="w")
    if sharded:
        root.create_array("K", shape=tuple(meta["shape"]), shards=(grid.rc, grid.cc),
                          chunks=(options.resolve_inner_rows(grid.rc), grid.cc), dtype=meta["dtype"],
                          compressors=options.zarr_compressors(), fill_value=np.nan)
    else:
        root.create_array("K", shape=tuple(meta["shape"]), chunks=(grid.rc, grid.cc), dtype=meta["dtype"],
                          fill_value=np.nan, compressors=None)
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
    return root


def check_store_path(path, overwrite=False):
    """Refuse, before any data is read, a store path that :meth:`GramMatrix.compute` refuses whatever the data.

    That is a file, a folder that is not a Gram store, an artifact of another
    kind (:func:`dkernel._runtime.artifacts.check_target`), and, without
    ``overwrite``, a derived store (its operator chain is not empty: a
    centered or normalized store is not the raw Gram that is computed).
    Returns the store's attributes, or None when there is no store yet.
    """
    if re.match(r"[A-Za-z][\w+.-]*://", os.fspath(path)):
        raise ValueError(f"store {os.fspath(path)}: a Gram store is a folder path, not a URL; on a cluster use a "
                         f"filesystem mounted at the same path on every worker (cluster/README.md).")
    path = os.path.abspath(os.fspath(path))
    if artifacts.check_target(path, "gram", reuse=True) != "same":
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
    with artifacts.writing(dest, "gram") as tmp:
        _create_store(tmp, meta, grid, options)


def _prepare_store(path, meta, grid, overwrite, options):
    """Choose where this run writes its blocks; returns ``(store_path, replacing)``.

    * A store of the same data, kernel and provenance at ``path`` is resumed
      in place (with ``overwrite``, one written without checksums is rebuilt
      as below).
    * No store at ``path`` (or an empty folder): a new empty store is created
      beside it and renamed in, then filled in place (an interrupted run is
      resumed by the same call). A complete replacement left at the
      :func:`~dkernel._runtime.artifacts.partial_path` by a run killed during its
      swap is moved in first.
    * A store of other data, kernel or provenance is refused unless
      ``overwrite``; with ``overwrite`` the new store is built at the fixed
      sibling :func:`~dkernel._runtime.artifacts.partial_path` (resumed there if it
      matches) and swapped in by the caller once every block is written
      (``replacing`` is True), so the old store stays readable until then.
    * Anything that is not a Gram store is refused and never deleted.
    """
    partial = artifacts.partial_path(path)
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
    if os.path.isdir(partial) and artifacts.artifact_kind(partial) == "gram":
        pending = _read_meta(partial)
        if pending is not None and not _mismatches(pending, meta):
            artifacts.install(partial, path, "gram")
            return path, False
    _create_beside(path, meta, grid, options)
    return path, False


def _prepare_partial(partial, meta, grid, options):
    """Resume the replacement store at ``partial`` if it matches ``meta``, else (re)create it there."""
    if os.path.lexists(partial):
        if artifacts.artifact_kind(partial) != "gram":
            raise StoreMismatchError(
                f"{partial} (where dkernel builds the replacement of a Gram store) exists and is not a dkernel "
                f"Gram store; it is not deleted: move it away to replace the store."
            )
        pending = _read_meta(partial)
        if pending is not None and not _mismatches(pending, meta):
            return
        artifacts.remove_own(partial, "gram")
    _create_beside(partial, meta, grid, options)


def check_output_store(path, overwrite=False, source=None):
    """Check, before any work, that a derived store may be written at ``path``.

    ``path`` must be free, an empty folder, or (with ``overwrite``) a Gram
    store (:func:`dkernel._runtime.artifacts.check_target`). When it is the store that
    ``source`` (a view, or the Gram a view will be built on) reads, it is
    accepted only with ``overwrite``: the derived store is then written
    beside it and swapped in once complete. Returns the stored Gram of
    ``source`` that reads ``path`` (or None).

    Raises
    ------
    ArtifactPathError
    """
    path = os.path.abspath(os.fspath(path))
    root = _chain_root(source) if source is not None else None
    root_path = getattr(root, "path", None)
    reader = root if root_path and os.path.abspath(root_path) == path else None
    if reader is not None and not overwrite:
        raise ArtifactPathError(
            f"{path} is the Gram store this view reads; writing the derived store there replaces it. Pass "
            f"overwrite=True (CLI: --overwrite) to replace it once the derived store is complete, or choose "
            f"another path."
        )
    artifacts.check_target(path, "gram", overwrite)
    return reader


class _ReplacedStore:
    """The blocks of a stored Gram whose store was replaced in place by a derived store: reading raises."""

    def __init__(self, path):
        self.path = path

    def __getattr__(self, name):
        raise StoreMismatchError(
            f"the Gram store {self.path} was replaced by the derived store written there, so this object no longer "
            f"reads the matrix it was opened on; open the new store with GramMatrix.open(path)."
        )


def _chain_root(source):
    """The Gram at the root of a chain of lazy views: each view keeps the Gram source it reads in ``base``."""
    while getattr(source, "base", None) is not None:
        source = source.base
    return source


def write_view_store(view, path, *, operators, dtype=None, overwrite=False):
    """Write a lazy view blockwise into a new Gram store at ``path`` (a derived store); returns its path.

    The store has the layout of a computed Gram store, with one plain chunk
    per block of the view's ``chunks``, each written with its checksums by one
    task. Its ``kernel`` and ``fingerprint`` attributes are those of the
    underlying raw Gram; its ``provenance`` attribute adds ``operators``, the
    view's operator chain (:func:`dkernel.views.operator_chain`), and its
    ``operator`` attribute is the view's ``describe()``.

    The store is written beside ``path`` and moved into place when complete
    (:mod:`dkernel._runtime.artifacts`). ``path`` may be the store the view reads only
    with ``overwrite`` (:func:`check_output_store`): the Gram opened on it then
    refuses every read, since its store now holds the derived matrix.
    """
    kernel = view.kernel
    if kernel is None:
        raise ValueError(
            "to_zarr writes a Gram store, which records its kernel; this view is built on a matrix without "
            "one. Build it on a GramMatrix or a KernelGram(X, kernel)."
        )
    path = os.path.abspath(os.fspath(path))
    reader = check_output_store(path, overwrite, view)
    root_base = _chain_root(view)
    dtype = np.dtype(dtype or getattr(root_base, "dtype", np.float64))
    grid = _BlockGrid((view.n, view.n), view.chunks, symmetric=True)
    fingerprint = getattr(root_base, "fingerprint", None)
    if fingerprint is None and hasattr(root_base, "X"):
        fingerprint = {"X": data_fingerprint(root_base.X), "Z": None}
    meta = {
        "kernel": kernel.to_dict(),
        "shape": [grid.n, grid.n],
        "dtype": dtype.name,
        "chunks": [grid.rc, grid.cc],
        "symmetric": True,
        "fingerprint": fingerprint,
        "provenance": {"kernel": kernel.to_dict(), "fingerprint": fingerprint, "operators": operators},
        "operator": view.describe(),
    }
    with artifacts.writing(path, "gram", overwrite) as tmp:
        root = _create_store(tmp, meta, grid, GramOptions(), sharded=False)
        # Dask chunks equal the zarr chunks, so every task writes whole chunks (and their checksums).
        values = view.dask.rechunk((grid.rc, grid.cc)).astype(dtype)
        _write_checked_blocks(tmp, grid, values, view.diag().astype(dtype), root.attrs["checksums"])
        root["done"][:] = np.ones((grid.n_row_blocks, grid.n_col_blocks), dtype="uint8")
        root.attrs["blocks_done"] = grid.n_blocks
    if reader is not None:
        # Its store now holds the derived matrix: reading it as the base would give wrong values.
        reader._blocks = _ReplacedStore(path)
        reader._diag = None
    return path


def _write_checked_blocks(path, grid, values, diagonal, checksums_spec):
    """Write a Dask array of the grid's chunks into ``K`` of the store at ``path``, each block with its checksums.

    One task per block writes the block, then its checksums; then
    ``diagonal`` is written with its checksums.
    """
    blocks = values.to_delayed()
    columns = checksums_spec["segment_columns"]
    tasks = [dask.delayed(_write_checked_block, pure=False)(blocks[i, j], path, grid, i, j, columns)
             for i in range(grid.n_row_blocks) for j in range(grid.n_col_blocks)]
    dask.compute(tasks)
    root = zarr.open_group(path, mode="r+")
    diagonal = np.asarray(diagonal, dtype=root["K"].dtype)
    root["diag"][:] = diagonal
    checksums = _Checksums(path, grid, diagonal.dtype.itemsize, columns)
    for i in range(grid.n_row_blocks):
        checksums.write_diagonal(i, diagonal[grid.rows(i)])


def _write_checked_block(block, path, grid, i, j, checksum_columns):
    """Write block (i, j) into ``K`` of the store at ``path`` (one chunk), then its checksums."""
    K = zarr.open_array(store=path, path="K", mode="r+", config=_ARRAY_CONFIG)
    block = np.ascontiguousarray(block, dtype=K.dtype)
    _remove_chunk(path, "K", K, (i, j))
    K[grid.rows(i), grid.cols(j)] = block
    checksums = _Checksums(path, grid, K.dtype.itemsize, checksum_columns)
    checksums.write(i, j, checksums.of_rows(block))
