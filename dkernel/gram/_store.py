"""Creating and replacing Gram stores safely: the one path by which every store is created.

A store is written under the rules of :mod:`dkernel._runtime.artifacts`: a new store
is created beside its path and renamed in (never over a store another
process created meanwhile); a store replaced with ``overwrite`` is rebuilt
beside it and swapped in only when complete, and only if it is still the
store that was to be replaced; a path holding anything but a Gram store, or
a store holding files dkernel did not write, is refused and never deleted.
A symbolic link at the path is written through (:func:`~dkernel._runtime.artifacts.target_path`).

Every store records its identity (``write_id``) and the run that writes it
(:mod:`dkernel.gram._identity`): writers hold the store they started, and
two runs never write one store together.

Two writers create stores, both through :func:`_create_store`:
:meth:`GramMatrix.compute <dkernel.gram.GramMatrix.compute>` (an empty store
whose blocks its tasks fill, resumed after an interruption:
:func:`_prepare_store`) and the ``to_zarr`` of a lazy view of
:mod:`dkernel.views` (a derived store written whole:
:func:`write_view_store`, checked first by :func:`check_output_store`).
"""

import contextlib
import errno
import os
import re
from concurrent.futures import ThreadPoolExecutor

import dask
import dask.threaded
import numpy as np
import zarr
from dask.system import CPU_COUNT

from .._runtime import artifacts
from .._runtime.object_store import is_url
from .._runtime.options import GramOptions
from ..exceptions import ArtifactPathError, CorruptStoreError, StoreMismatchError
from ._checksums import _Checksums
from ._corruption import gram_command
from ._format import (
    _ARRAY_CONFIG,
    STORE_FORMAT,
    STORE_VERSION,
    _mismatches,
    _provenance_of,
    _read_meta,
    _remove_chunk,
    attribute_checksums,
    data_fingerprint,
    describe_operators,
    matrix_form,
)
from ._grid import _BlockGrid
from ._identity import WRITE_ID, held, new_write_id
from ._metadata import create_arrays, metadata_damage, read_store_meta, repair_metadata
from ._remote import check_derived_url, write_view_into_url
from ._sources import chain_root

__all__ = ["check_output_store", "check_store_path", "kept_store_error", "write_view_store"]


def _create_store(path, meta, grid, options, *, sharded=True):
    """Create an empty store at ``path``: its arrays and attributes (``meta``), no blocks; returns its root group.

    The store gets a new identity (``write_id``) and the checksums of its
    attributes (:func:`~dkernel.gram._format.attribute_checksums`).
    """
    root = zarr.open_group(path, mode="w")
    checksums = _Checksums.spec(options, meta["dtype"], grid)
    create_arrays(root, meta["shape"], meta["dtype"], grid, options, sharded=sharded, checksums=checksums)
    attrs = {"format": STORE_FORMAT, "format_version": STORE_VERSION, **meta,
             "n_blocks": [grid.n_row_blocks, grid.n_col_blocks], "checksums": checksums, WRITE_ID: new_write_id()}
    # The attributes go last: a folder without them is not taken for a store. Their checksums are those
    # of the values as stored (JSON), which is what every later reader compares.
    root.attrs.put({**attrs, "blocks_done": 0})
    root.attrs.update({"attribute_checksums": attribute_checksums(_read_meta(path))})
    return root


def _stored_operators(stored):
    try:
        return _provenance_of(stored)["operators"]
    except Exception:  # damaged attributes: the run that opens the store names the damage
        return []


def check_store_path(path, overwrite=False):
    """Refuse, before any data is read, a store path that :meth:`GramMatrix.compute` refuses whatever the data.

    That is a file, a folder that is not a Gram store, an artifact of another
    kind (:func:`dkernel._runtime.artifacts.check_target`), and, without
    ``overwrite``, a derived store (its operator chain is not empty: a
    centered or normalized store is not the raw Gram that is computed).
    Returns the store's attributes as they are (not checked: a store with
    damaged metadata is repaired or refused by the run), or None when there
    is no store yet.
    """
    if re.match(r"[A-Za-z][\w+.-]*://", os.fspath(path)):
        raise ValueError(f"store {os.fspath(path)}: a Gram store is a folder path, not a URL; on a cluster use a "
                         f"filesystem mounted at the same path on every worker (cluster/README.md).")
    path = os.path.abspath(os.fspath(path))
    if artifacts.check_target(path, "gram", reuse=True) != "same":
        return None
    stored = _read_meta(artifacts.target_path(path)) or {}
    operators = _stored_operators(stored)
    if operators and not overwrite:
        error = StoreMismatchError(
            f"the Gram store {path} holds {matrix_form(operators, stored.get('symmetric', True))}, a derived "
            f"store, not the raw Gram of a kernel: operators (store: {describe_operators(operators)}; requested: "
            f"{describe_operators([])}). Pass overwrite=True (CLI: --overwrite) to replace it, or choose another "
            f"path."
        )
        error.path, error.requested = path, None
        error.differences = [f"form: it holds {matrix_form(operators, stored.get('symmetric', True))}, a derived "
                             f"store, not the raw Gram of a kernel"]
        raise error
    return stored


def kept_store_error(error, cli=False):
    """The :class:`StoreMismatchError` ``error`` told to a fit that uses a store and never replaces it.

    ``error`` was raised by :func:`check_store_path` or
    :meth:`GramMatrix.compute` without ``overwrite``: its advice (pass
    overwrite) is not the fit's. The advice here is the fit's own: another
    store, or the store replaced first by the computation of the Gram, in
    the words of the API, or with ``cli`` of the command line. Any other
    error is returned as it is.
    """
    differences = getattr(error, "differences", None)
    if not isinstance(error, StoreMismatchError) or not differences:
        return error
    path, requested = error.path, getattr(error, "requested", None)
    what = "; ".join(differences)
    if cli:
        command = gram_command(requested, path) if requested else None
        command = f"{command} --overwrite" if command else f"dkernel gram --input DATA ... --out {path} --overwrite"
        kept = StoreMismatchError(
            f"the Gram store {path} given with --store does not hold the Gram of this fit: {what}. 'dkernel fit' "
            f"uses such a store only when it holds the fit's data and kernel, and never replaces it (its "
            f"--overwrite replaces the model only): choose another --store, or first replace this store with "
            f"`{command}` (DATA being the --data file)."
        )
    else:
        kept = StoreMismatchError(
            f"the Gram store {path} (store=) does not hold the Gram of this fit: {what}. A fit uses such a store "
            f"only when it holds the fit's data and kernel, and never replaces it: pass another store, or first "
            f"replace this one with GramMatrix.compute(X, kernel, store={path!r}, overwrite=True)."
        )
    kept.path, kept.differences, kept.requested = path, differences, requested
    return kept


def _create_beside(dest, meta, grid, options):
    """Create an empty store at ``dest`` (built beside it, then renamed in); returns its ``write_id``.

    Raises :class:`ArtifactPathError` when another process created something
    at ``dest`` meanwhile (nothing is replaced).
    """
    with artifacts.writing(dest, "gram") as tmp:
        write_id = _create_store(tmp, meta, grid, options).attrs[WRITE_ID]
    return write_id


def _checked_store(path, meta, grid, overwrite, options):
    """The attributes of the store at ``path``, its damaged metadata repaired; None if damaged beyond repair.

    Damage the run cannot repair (:func:`~dkernel.gram._metadata.repair_metadata`)
    raises :class:`CorruptStoreError`, unless ``overwrite``: the store is then
    replaced.
    """
    _, damage = metadata_damage(path)
    if damage:
        try:
            repair_metadata(path, meta, grid, options)
        except CorruptStoreError:
            if overwrite:
                return None
            raise
    return read_store_meta(path)


def _give_identity(path, stored):
    """Give the store ``path`` (attributes ``stored``), written before identities, one; returns its ``write_id``.

    With it, the checksums of its attributes: they were just compared with
    the request of the run that resumes the store.
    """
    attrs = {key: value for key, value in stored.items() if key not in ("blocks_done", "last_run", "writer")}
    attrs[WRITE_ID] = new_write_id()
    group = zarr.open_group(path, mode="r+")
    group.attrs.put({**stored, **attrs, "attribute_checksums": attribute_checksums(attrs)})
    return attrs[WRITE_ID]


def _mismatch_error(path, diffs, partial, meta):
    pending = _read_meta(partial) if os.path.isdir(partial) else None
    hint = ""
    if pending is not None and not _mismatches(pending, meta):
        hint = (f" An interrupted replacement with the requested data and kernel waits in {partial}; "
                f"overwrite=True (CLI: --overwrite) finishes it.")
    error = StoreMismatchError(
        f"the Gram store {path} was built with another " + "; ".join(diffs)
        + ". Pass overwrite=True (CLI: --overwrite) to replace it, or choose another path." + hint
    )
    error.path, error.requested = path, meta
    error.differences = [f"it was built with another {diff}" for diff in diffs]
    return error


def _prepare_store(target, meta, grid, overwrite, options):
    """Choose where this run writes its blocks; returns ``(store_path, write_id, replacing)``.

    * A store of the same data, kernel and provenance at ``target`` (or at
      the target of the link there) is resumed in place (its damaged
      metadata repaired first; with ``overwrite``, one written without
      checksums is rebuilt as below).
    * No store there (or an empty folder): a new empty store is created
      beside it and renamed in, then filled in place (an interrupted run is
      resumed by the same call). A replacement of the requested store left
      at the :func:`~dkernel._runtime.artifacts.partial_path` by a killed run
      is moved in first and resumed. When another process created a store there
      meanwhile, the choice is made again with that store.
    * A store of other data, kernel or provenance (or with metadata damaged
      beyond repair) is refused unless ``overwrite``; with ``overwrite`` the
      new store is built at the fixed sibling
      :func:`~dkernel._runtime.artifacts.partial_path` (resumed there if it
      matches) and swapped in by the caller once every block is written, so
      the old store stays readable until then; ``replacing`` is then the
      :func:`~dkernel._runtime.artifacts.identity` of the store to replace
      (else None). A store holding files dkernel did not write is not
      replaced.
    * Anything that is not a Gram store is refused and never deleted.
    """
    path = artifacts.target_path(target)
    partial = artifacts.partial_path(path)
    for _ in range(3):
        if check_store_path(path, overwrite=True) is not None:
            stored = _checked_store(path, meta, grid, overwrite, options)
            diffs = ["metadata (damaged beyond repair)"] if stored is None else _mismatches(stored, meta)
            if not diffs and overwrite and _Checksums.of(stored, path) is None:
                # A store written without checksums is resumed as it is, or rebuilt with them on overwrite.
                diffs = [f"format (store: version {stored.get('format_version')}, without checksums)"]
            if not diffs:
                write_id = stored[WRITE_ID] if WRITE_ID in stored else _give_identity(path, stored)
                return path, write_id, None
            if not overwrite:
                raise _mismatch_error(target, diffs, partial, meta)
            artifacts.check_replaceable(path, "gram")
            replacing = artifacts.identity(path)
            return partial, _prepare_partial(partial, meta, grid, options), replacing
        try:
            pending = _pending_replacement(partial, meta)
            if pending is not None:
                artifacts.install(partial, path, "gram")
                return path, pending, None
            return path, _create_beside(path, meta, grid, options), None
        except ArtifactPathError:
            if not os.path.lexists(path):
                raise  # not a race with another process: a real refusal
    raise StoreMismatchError(f"the Gram store {target} keeps being replaced by other processes while this run "
                             f"starts; stop them, then run again.")


def _pending_replacement(partial, meta):
    """The ``write_id`` of a replacement of the requested store left at ``partial`` (by a killed run), or None."""
    if not os.path.isdir(partial) or artifacts.artifact_kind(partial) != "gram":
        return None
    try:
        pending = read_store_meta(partial)
    except CorruptStoreError:
        return None
    if pending is None or _mismatches(pending, meta) or WRITE_ID not in pending:
        return None
    return pending[WRITE_ID]


def _prepare_partial(partial, meta, grid, options):
    """Resume the replacement store at ``partial`` if it matches ``meta``, else (re)create it; returns its write id."""
    if os.path.lexists(partial):
        if artifacts.artifact_kind(partial) != "gram":
            raise StoreMismatchError(
                f"{partial} (where dkernel builds the replacement of a Gram store) exists and is not a dkernel "
                f"Gram store; it is not deleted: move it away to replace the store."
            )
        try:
            pending = read_store_meta(partial)
        except CorruptStoreError:
            pending = None
        if pending is not None and not _mismatches(pending, meta) and WRITE_ID in pending:
            return pending[WRITE_ID]
        artifacts.remove_own(partial, "gram")
    return _create_beside(partial, meta, grid, options)


def check_output_store(path, overwrite=False, source=None, storage_options=None):
    """Check, before any work, that a derived store may be written at ``path``.

    ``path`` must be free, an empty folder, or (with ``overwrite``) a Gram
    store (:func:`dkernel._runtime.artifacts.check_target`). When it is the store that
    ``source`` (a view, or the Gram a view will be built on) reads, it is
    accepted only with ``overwrite``: the derived store is then written
    beside it and swapped in once complete. Returns the stored Gram of
    ``source`` that reads ``path`` (or None).

    At a URL (``storage_options`` as for :meth:`GramMatrix.compute`) the same
    rules hold for its prefix (:func:`dkernel.gram._remote.check_derived_url`).

    Raises
    ------
    ArtifactPathError
    """
    if is_url(path):
        reader = _url_reader(path.rstrip("/"), overwrite, source) if source is not None else None
        check_derived_url(path, overwrite, storage_options)
        return reader
    path = os.path.abspath(os.fspath(path))
    root = chain_root(source) if source is not None else None
    root_path = getattr(root, "path", None)
    same = root_path and artifacts.target_path(root_path) == artifacts.target_path(path)
    reader = root if same else None
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


def write_view_store(view, path, *, operators, dtype=None, overwrite=False, storage_options=None):
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

    At an fsspec URL (``s3://bucket/Kc.zarr``, with ``storage_options``) the store is written without rename, under
    a fresh version committed by its manifest (:func:`dkernel.gram._remote.write_view_into_url`).
    """
    kernel = view.kernel
    if kernel is None:
        raise ValueError(
            "to_zarr writes a Gram store, which records its kernel; this view is built on a matrix without "
            "one. Build it on a GramMatrix or a KernelGram(X, kernel)."
        )
    url = is_url(path)
    path = path.rstrip("/") if url else os.path.abspath(os.fspath(path))
    reader = _url_reader(path, overwrite, view) if url else check_output_store(path, overwrite, view)
    root_base = chain_root(view)
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
    if url:
        values = view.dask.rechunk((grid.rc, grid.cc)).astype(dtype)
        write_view_into_url(values, meta, grid, path, overwrite, storage_options, _compute_to_the_last)
    else:
        _write_view_folder(view, path, meta, grid, dtype, overwrite)
    if reader is not None:
        # Its store now holds the derived matrix: reading it as the base would give wrong values.
        reader._blocks = _ReplacedStore(path)
        reader._diag = None
    return path


def _url_reader(url, overwrite, source):
    """The stored Gram at the root of ``source`` when it reads the store at ``url`` (then only with ``overwrite``)."""
    root = chain_root(source)
    if getattr(root, "path", None) is None or str(root.path).rstrip("/") != url:
        return None
    if not overwrite:
        raise ArtifactPathError(
            f"{url} is the Gram store this view reads; writing the derived store there replaces it. Pass "
            f"overwrite=True (CLI: --overwrite) to replace it once the derived store is committed, or choose "
            f"another URL."
        )
    return root


def _write_view_folder(view, path, meta, grid, dtype, overwrite):
    """Write the derived store ``meta`` of ``view`` in a folder beside ``path``, moved into place when complete."""
    try:
        with artifacts.writing(path, "gram", overwrite) as tmp:
            write_id = _create_store(tmp, meta, grid, GramOptions(), sharded=False).attrs[WRITE_ID]
            # Dask chunks equal the zarr chunks, so every task writes whole chunks (and their checksums).
            values = view.dask.rechunk((grid.rc, grid.cc)).astype(dtype)
            with _stopping_writers_on_failure(tmp):
                _write_checked_blocks(tmp, write_id, grid, values, view.diag().astype(dtype))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f": {exc.filename}" if exc.filename else ""
            raise OSError(exc.errno, f"no space left on the device of {path} while the derived store was written "
                                     f"there ({exc.strerror}{where}); nothing was replaced (a store already at "
                                     f"{path} is unchanged) and the partial write was removed: free space, or "
                                     f"choose another path") from exc
        raise


@contextlib.contextmanager
def _stopping_writers_on_failure(path):
    """On a failure, make the tasks still writing into the store ``path`` stop before their next block.

    When one task of a write fails, Dask raises at once while others may
    still be running. Removing the store's root metadata first makes each of
    them find the store gone when it next checks (:func:`~dkernel.gram._identity.held`)
    and stop; the folder is then deleted, waiting for the writes under way
    (:func:`~dkernel._runtime.artifacts.remove_own`).
    """
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(path, "zarr.json"))
        raise


def _write_checked_blocks(path, write_id, grid, values, diagonal):
    """Write a Dask array of the grid's chunks into ``K`` of the store ``path``, each block with its checksums.

    One task per block holds the store (:func:`~dkernel.gram._identity.held`),
    writes the block, then its checksums; then ``diagonal`` is written with
    its checksums, and every block flagged done.
    """
    blocks = values.to_delayed(optimize_graph=False)  # keeps the futures of the data scattered for ``values``
    tasks = [dask.delayed(_write_checked_block, pure=False)(blocks[i, j], path, write_id, grid, i, j)
             for i in range(grid.n_row_blocks) for j in range(grid.n_col_blocks)]
    _compute_to_the_last(tasks)
    with held(path, write_id) as store:
        root = zarr.open_group(store.root, mode="r+")
        diagonal = np.asarray(diagonal, dtype=root["K"].dtype)
        root["diag"][:] = diagonal
        checksums = _Checksums.of(dict(root.attrs), store.root)
        for i in range(grid.n_row_blocks):
            checksums.write_diagonal(i, diagonal[grid.rows(i)])
        root["done"][:] = np.ones((grid.n_row_blocks, grid.n_col_blocks), dtype="uint8")
        store.update_attrs({"blocks_done": grid.n_blocks})


def _compute_to_the_last(tasks):
    """Compute ``tasks`` and return their results; with Dask's threads, a failure is raised only once no task
    runs any more.

    Dask raises the first error while the other tasks of its pool go on;
    here the pool is this call's own, and leaving it waits for them. On a
    cluster the tasks still running stop at their next check of the store
    (:func:`_stopping_writers_on_failure`).
    """
    if dask.base.get_scheduler() not in (None, dask.threaded.get):
        return dask.compute(tasks)[0]
    with ThreadPoolExecutor(dask.config.get("num_workers", None) or CPU_COUNT) as pool:
        return dask.compute(tasks, scheduler="threads", pool=pool)[0]


def _write_checked_block(block, path, write_id, grid, i, j):
    """Write block (i, j) into ``K`` of the store ``path`` (one chunk), then its checksums, holding the store."""
    with held(path, write_id) as store:
        K = zarr.open_array(store=store.root, path="K", mode="r+", config=_ARRAY_CONFIG)
        block = np.ascontiguousarray(block, dtype=K.dtype)
        _remove_chunk(store.root, "K", K, (i, j))
        K[grid.rows(i), grid.cols(j)] = block
        checksums = _Checksums.of(store.attrs(), store.root)
        checksums.write(i, j, checksums.of_rows(block))
