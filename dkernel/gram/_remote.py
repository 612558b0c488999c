"""Gram stores at an object-store URL (``s3://bucket/K.zarr``, any fsspec URL): written without rename.

A local store is built in a hidden folder and renamed into place (:mod:`dkernel._runtime.artifacts`).
An object store has no rename, so a store at a URL is a set of **versions** and a **manifest**::

    s3://bucket/K.zarr/
        dkernel.json                 the manifest: the committed version, its write identity, the Gram's
                                     metadata and the CRC-32C of every stored block. Written last.
        v-<write id>/                one version: a zarr v3 array (chunk = block, uncompressed) ...
            zarr.json, c/...
            dkernel-pending.json     ... its metadata and write identity, written first ...
            dkernel-blocks/I.J       ... and one small object per evaluated block (its CRC-32C and its
                                     mirror's), written by the worker after the block's chunks.

The protocol:

* **Write.** A run draws a fresh write identity (a UUID) and writes everything under ``v-<id>/``,
  a prefix no other run writes (except a run that resumes it, with the same data and kernel, so
  the same values). Each block task writes its chunks, then its ``dkernel-blocks/I.J`` object:
  that object is the block's done flag. When every block is done, the run puts ``dkernel.json``,
  one PUT of a small object, which S3 and the other object stores make visible whole or not at
  all: that PUT is the commit.
* **Read.** :meth:`GramMatrix.open` reads the manifest and opens only the version it names; it
  never lists or guesses versions, so an uncommitted or half-written version is never read. Every
  block read is checked against the manifest's CRC-32C; a mismatch (a changed, truncated or missing
  object) raises :class:`~dkernel.exceptions.CorruptStoreError`, never returns the values. When the
  manifest names another version by then, the store was replaced under the reader:
  :class:`~dkernel.gram._identity.StoreLostError`.
* **Overwrite.** A new version is written beside the committed one, committed by its manifest, and
  only then is the old version removed. A reader of the old version reads it intact until it is
  removed, then gets ``StoreLostError``: old values or an error, never a mix.
* **Resume.** A run that finds an uncommitted version of the same Gram (its ``dkernel-pending.json``
  holds the same metadata) adopts it: the blocks whose ``dkernel-blocks`` object exists and whose
  chunks match its CRC-32C are kept, the others are evaluated again, then the manifest is committed.
  A committed store of the same Gram is checked block by block; damaged blocks are rewritten in
  place (same values) and the manifest put again.
* **Foreign prefixes.** A prefix that holds anything besides ``dkernel.json`` and ``v-<id>/``
  folders was not written by dkernel: it is refused (:class:`~dkernel.exceptions.ArtifactPathError`),
  with or without ``overwrite``, and nothing is written or removed there.

Why it is safe under concurrent writers and readers: writers never share a prefix of values
(a resumed version receives the same values from either writer, and a block's flag follows its
chunks); the commit is one atomic PUT of a manifest that names a complete version and its
checksums, so a reader sees the old committed version or the new one, never a partial one; the
last commit wins and the other committed version is left (never removed by a writer that did not
commit over it), and a reader checks each block against the checksums of the version it opened,
so a version removed or damaged under it raises instead of returning other values. Conditional
PUTs (``If-None-Match``) are not used: fsspec does not offer them on every store, and the
version isolation plus the reader's check make them unnecessary for correctness.

What the checks turn into errors rather than prevent: two runs resuming the same version at once,
or a repair of a committed version under a reader, may leave a block whose chunk comes from one
evaluation and whose checksum from another (they can differ in the last bit under another BLAS
thread count). Such a block reads as damaged, never as values, and the next run on the store
rewrites it. Uncommitted versions of another Gram (an interrupted run on other data) are left in
place, since a run may still be writing them.

Credentials come only from ``storage_options`` and the usual environment and configuration of the
filesystem (s3fs: ``AWS_*`` variables, ``~/.aws``); they travel to the workers inside the tasks, and
are never written into the manifest, records or messages (messages name the URL only).
"""

import time
import uuid

import dask
import numpy as np

from .._runtime.client import scatter
from .._runtime.integrity import array_crc32c
from .._runtime.object_store import (
    GRAM_FORMAT,
    MANIFEST,
    VERSION,
    check_ours,
    entries,
    filesystem,
    put_json,
    read_json,
)
from ..exceptions import (
    ArtifactPathError,
    CorruptStoreError,
    IncompleteStoreError,
    StoreMismatchError,
)
from ._grid import _BlockGrid
from ._identity import StoreLostError

__all__ = []

PENDING = "dkernel-pending.json"
FLAGS = "dkernel-blocks"
FORMAT = GRAM_FORMAT
_VERSION = VERSION
_fs, _read_json, _put_json, _entries = filesystem, read_json, put_json, entries


def has_manifest(url, storage_options):
    """Whether a committed manifest (of a Gram store) is at ``url``."""
    fs, root = _fs(url, storage_options)
    return (_read_json(fs, f"{root}/{MANIFEST}") or {}).get("format") == FORMAT


def _check_ours(url, fs, root, fmt=FORMAT, entries=_VERSION, what=None):
    """:func:`dkernel._runtime.object_store.check_ours`, named for a Gram store (``fmt``'s default) or a model."""
    what = what or ("a dkernel Gram store" if fmt == FORMAT else "a dkernel model")
    return check_ours(url, fs, root, fmt, what, names_of_ours=entries)


def _open_array(version_url, storage_options, mode, meta=None):
    import zarr
    from zarr.storage import FsspecStore

    store = FsspecStore.from_url(version_url, storage_options=dict(storage_options or {}),
                                 read_only=(mode == "r"))
    if mode == "w":
        return zarr.create_array(store=store, shape=tuple(meta["shape"]), chunks=tuple(meta["chunks"]),
                                 dtype=meta["dtype"], compressors=None, filters=None, fill_value=0,
                                 overwrite=True)
    return zarr.open_array(store=store, mode=mode)


def _write_block_task(X, Z, kernel, grid, i, j, dtype, version_url, storage_options):
    """Evaluate block (i, j), write it (and its mirror), then its flag object; return its checksums."""
    from ._blocks import _evaluate_block

    K = _evaluate_block(X, Z, kernel, grid, i, j, dtype)
    K = np.asarray(K, dtype=dtype)
    array = _open_array(version_url, storage_options, "r+")
    rows, cols = grid.rows(i), grid.cols(j)
    array[rows, cols] = K
    sums = {f"{i}.{j}": array_crc32c(K)}
    if grid.symmetric and i != j:
        array[cols, rows] = K.T
        sums[f"{j}.{i}"] = array_crc32c(np.ascontiguousarray(K.T))
    fs, root = _fs(version_url, storage_options)
    _put_json(fs, f"{root}/{FLAGS}/{i}.{j}", sums)  # the flag comes last: only written chunks are done
    return sums


def _stored_blocks(grid):
    return [(i, j) for i in range(grid.n_row_blocks) for j in range(grid.n_col_blocks)]


def _verified(array, grid, sums, read=True):
    """The blocks (i, j) whose stored values match ``sums`` (a dict "i.j" -> CRC-32C); all of them unless ``read``."""
    if not read:
        return {tuple(int(t) for t in k.split(".")) for k in sums}
    good = set()
    for (i, j) in _stored_blocks(grid):
        crc = sums.get(f"{i}.{j}")
        if crc is None:
            continue
        try:
            K = np.asarray(array[grid.rows(i), grid.cols(j)])
        except (ValueError, TypeError):  # a truncated object cannot be decoded: a damaged block
            continue
        if array_crc32c(K) == crc:
            good.add((i, j))
    return good


def _flags(fs, vroot):
    sums = {}
    fs.invalidate_cache(f"{vroot}/{FLAGS}")
    for path in fs.find(f"{vroot}/{FLAGS}"):
        got = _read_json(fs, path)
        if got:
            sums.update({k: int(v) for k, v in got.items()})
    return sums


def _pending_versions(fs, root, names, meta):
    """Uncommitted versions of the same Gram under ``root``, newest first."""
    found = []
    for name in names:
        if not _VERSION.match(name):
            continue
        pending = _read_json(fs, f"{root}/{name}/{PENDING}")
        if pending and pending.get("meta") == meta:
            found.append((pending.get("started", 0), name, pending["write_id"]))
    return [(name, wid) for _, name, wid in sorted(found, reverse=True)]


def _run_tasks(X, Z, kernel, grid, dtype, version_url, storage_options, blocks, client):
    if not blocks:
        return {}
    if client is not None:
        [Xf] = scatter(client, [X], broadcast=True)
        Zf = Xf if Z is X else scatter(client, [Z], broadcast=True)[0]
        futures = [client.submit(_write_block_task, Xf, Zf, kernel, grid, i, j, dtype, version_url,
                                 storage_options, pure=False) for i, j in blocks]
        results = client.gather(futures)
    else:
        tasks = [dask.delayed(_write_block_task)(X, Z, kernel, grid, i, j, dtype, version_url, storage_options)
                 for i, j in blocks]
        results = dask.compute(*tasks, scheduler="threads")
    sums = {}
    for r in results:
        sums.update(r)
    return sums


def compute_into_url(X, Z, kernel, grid, dtype, meta, url, overwrite, client, options, storage_options):
    """Write the Gram at ``url`` by the versioned protocol above; return ``(blocks, n_computed)``."""
    dtype = np.dtype(dtype)

    def run(vurl, todo):
        return _run_tasks(X, Z, kernel, grid, dtype, vurl, storage_options, todo, client)

    return write_versions(url, meta, grid, run, grid.evaluated_blocks(), overwrite=overwrite, verify=options.verify,
                          storage_options=storage_options, mirrored=grid.symmetric)


def write_versions(url, meta, grid, run, blocks, *, overwrite, verify, storage_options, mirrored, derived=False):
    """Write the store ``meta`` at ``url`` by the protocol above; return ``(RemoteBlocks, n_computed)``.

    ``run(version_url, todo)`` writes the blocks ``todo`` (of ``blocks``; with ``mirrored`` each task also
    writes its mirror) and their flags, and returns their checksums. The committed store of the same ``meta`` is
    verified and repaired; a ``derived`` store (written by a view's ``to_zarr``) refuses any committed store
    without ``overwrite``, as a local one.
    """
    url = url.rstrip("/")
    fs, root = _fs(url, storage_options)
    if derived:
        check_derived_url(url, overwrite, storage_options)
    names, manifest = _check_ours(url, fs, root)
    old_version = None
    if manifest:
        if manifest.get("meta") == meta:
            return _repair_committed(url, fs, root, manifest, grid, run, blocks, verify, storage_options, mirrored)
        if not overwrite:
            diffs = sorted(k for k in meta if manifest.get("meta", {}).get(k) != meta[k])
            raise StoreMismatchError(
                f"store {url} holds a Gram of other {', '.join(diffs)}; pass overwrite=True to replace it."
            )
        old_version = manifest.get("version")
    pending = _pending_versions(fs, root, names, meta)
    if pending:
        version, write_id = pending[0]
        vurl = f"{url}/{version}"
        array = _open_array(vurl, storage_options, "r+")
        flags = _flags(fs, f"{root}/{version}")
        good = _verified(array, grid, flags, verify)
        todo = _todo(blocks, good, mirrored)
        sums = {k: v for k, v in flags.items() if tuple(int(t) for t in k.split(".")) in good}
        repaired = [b for b in todo if f"{b[0]}.{b[1]}" in flags]
    else:
        write_id = uuid.uuid4().hex
        version = f"v-{write_id}"
        vurl = f"{url}/{version}"
        _open_array(vurl, storage_options, "w", meta)  # (zarr clears the fresh prefix first)
        _put_json(fs, f"{root}/{version}/{PENDING}",
                  {"format": FORMAT, "write_id": write_id, "meta": meta, "started": time.time()})
        todo = list(blocks)
        sums, repaired = {}, []
    sums.update(run(vurl, todo) if todo else {})
    committed = _commit(fs, root, version, write_id, meta, sums)
    if old_version and old_version != version:
        now = _read_json(fs, f"{root}/{MANIFEST}")
        if now and now.get("write_id") == write_id:  # removed only by the run whose commit replaced it
            fs.rm(f"{root}/{old_version}", recursive=True)
    return RemoteBlocks(url, storage_options, committed, repaired), len(todo)


def _todo(blocks, good, mirrored):
    return [(i, j) for i, j in blocks if (i, j) not in good or (mirrored and (j, i) not in good)]


def _commit(fs, root, version, write_id, meta, sums):
    """Put the manifest of a complete version: the commit. Returns it (the run's result reads that version)."""
    manifest = {"format": FORMAT, "version": version, "write_id": write_id, "meta": meta,
                "checksums": {k: int(v) for k, v in sums.items()}}
    _put_json(fs, f"{root}/{MANIFEST}", manifest)
    return manifest


def _repair_committed(url, fs, root, manifest, grid, run, blocks, verify, storage_options, mirrored):
    version = manifest["version"]
    vurl = f"{url}/{version}"
    array = _open_array(vurl, storage_options, "r+")
    sums = {k: int(v) for k, v in manifest.get("checksums", {}).items()}
    todo = _todo(blocks, _verified(array, grid, sums, verify), mirrored)
    if todo:
        sums.update(run(vurl, todo))
        manifest = _commit(fs, root, version, manifest["write_id"], manifest["meta"], sums)
    return RemoteBlocks(url, storage_options, manifest, todo), len(todo)


def open_manifest(url, storage_options):
    """The committed manifest at ``url``; raises when there is none."""
    url = url.rstrip("/")
    fs, root = _fs(url, storage_options)
    manifest = _read_json(fs, f"{root}/{MANIFEST}")
    if manifest is None:
        names = _entries(fs, root)
        if names and all(_VERSION.match(n) for n in names):
            raise IncompleteStoreError(
                f"the Gram store {url} holds a write that was interrupted before its commit; re-run the write "
                f"(GramMatrix.compute with the same data and kernel, or the same view's to_zarr) to finish it."
            )
        if names:
            raise StoreMismatchError(f"{url} holds no dkernel Gram store (no {MANIFEST}).")
        raise FileNotFoundError(f"no Gram store at {url}; compute one with GramMatrix.compute(..., store=url).")
    if manifest.get("format") != FORMAT or "meta" not in manifest:
        raise CorruptStoreError(f"the manifest {url}/{MANIFEST} is damaged or not dkernel's; compute the Gram "
                                f"again with overwrite=True at another prefix.")
    return manifest


class _Stamp:
    """The write identity a reader opened; :meth:`check` is a no-op (reads are checked by checksum)."""

    def __init__(self, write_id):
        self.write_id = write_id

    def check(self):
        return None


class RemoteBlocks:
    """The blocks of the committed version of a store at a URL, each read checked against its CRC-32C.

    Pickled as the URL, the storage options and the manifest it opened, so a
    worker reads the same version.
    """

    _CACHE = 16

    def __init__(self, url, storage_options=None, manifest=None, repaired=()):
        self.path = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.manifest = manifest or open_manifest(self.path, self.storage_options)
        meta = self.manifest["meta"]
        self.grid = _BlockGrid(meta["shape"], meta["chunks"], meta["symmetric"])
        self.dtype = np.dtype(meta["dtype"])
        self.sums = {k: int(v) for k, v in self.manifest.get("checksums", {}).items()}
        self.stamp = _Stamp(self.manifest["write_id"])
        self.repaired = sorted(tuple(b) for b in repaired)  # damaged blocks the run that wrote this found
        self._array = None
        self._cache = {}

    def __getstate__(self):
        return {"url": self.path, "storage_options": self.storage_options, "manifest": self.manifest}

    def __setstate__(self, state):
        self.__init__(state["url"], state["storage_options"], state["manifest"])

    @property
    def array(self):
        if self._array is None:
            self._array = _open_array(f"{self.path}/{self.manifest['version']}", self.storage_options, "r")
        return self._array

    def done(self, refresh=False):
        g = self.grid
        return np.array([[f"{i}.{j}" in self.sums for j in range(g.n_col_blocks)]
                         for i in range(g.n_row_blocks)], dtype=bool)

    def _recommitted(self, name):
        """After a mismatch: raise if the store was replaced; True if a repair committed a new checksum."""
        fs, root = _fs(self.path, self.storage_options)
        now = _read_json(fs, f"{root}/{MANIFEST}")
        if not now or now.get("write_id") != self.manifest["write_id"]:
            raise StoreLostError(f"the Gram store {self.path} was replaced while it was read; open it again.")
        crc = now.get("checksums", {}).get(name)
        if crc is None or int(crc) == self.sums.get(name):
            return False
        self.sums[name] = int(crc)
        return True

    def block(self, grid, i, j, retry=True):
        key, name = (i, j), f"{i}.{j}"
        if key in self._cache:
            return self._cache[key]
        crc = self.sums.get(name)
        if crc is None:
            raise IncompleteStoreError(f"the Gram store {self.path} has no block ({i}, {j}).")
        try:
            K = np.asarray(self.array[grid.rows(i), grid.cols(j)])
            ok = array_crc32c(K) == crc
        except (ValueError, TypeError):  # an object that cannot be decoded is a damaged block
            ok = False
        if not ok:
            if self._recommitted(name) and retry:  # repaired since this reader opened the store
                return self.block(grid, i, j, retry=False)
            raise CorruptStoreError(
                f"the Gram store {self.path}: block ({i}, {j}) does not match its checksum (a changed, "
                f"truncated or missing object); re-run GramMatrix.compute with the same data and kernel on "
                f"this store to rewrite it."
            )
        K.flags.writeable = False
        if len(self._cache) >= self._CACHE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = K
        return K

    def submatrix(self, grid, sorted_idx, start, stop):
        return grid.gather(lambda i, j: self.block(grid, i, j), sorted_idx, start, stop, self.dtype)

    def diag(self, grid):
        return None

    def to_dask(self, grid):
        import dask.array as da

        return da.block([[da.from_delayed(dask.delayed(self.block)(grid, i, j),
                                          shape=(grid.rows(i).stop - grid.rows(i).start,
                                                 grid.cols(j).stop - grid.cols(j).start), dtype=self.dtype)
                          for j in range(grid.n_col_blocks)] for i in range(grid.n_row_blocks)])

    def to_numpy(self, grid):
        return np.block([[self.block(grid, i, j) for j in range(grid.n_col_blocks)]
                         for i in range(grid.n_row_blocks)])

    def corrupt_blocks(self, grid, progress=False):
        return sorted(set(_stored_blocks(grid)) - _verified(self.array, grid, self.sums))


def open_url(cls, url, storage_options=None):
    """The :class:`~dkernel.gram.GramMatrix` of the committed version at ``url``."""
    from ..kernels._kernels import kernel_from_dict

    blocks = RemoteBlocks(url, storage_options)
    meta = blocks.manifest["meta"]
    return cls(kernel=kernel_from_dict(meta["kernel"]), shape=meta["shape"], dtype=meta["dtype"],
               chunks=meta["chunks"], symmetric=meta["symmetric"], fingerprint=meta["fingerprint"],
               blocks=blocks, path=blocks.path, provenance=meta.get("provenance"))


def check_derived_url(url, overwrite, storage_options):
    """Raise :class:`ArtifactPathError` unless a derived store may be written at ``url``: a foreign prefix or
    another artifact is refused, a committed Gram store is replaced only with ``overwrite``. Returns the
    committed manifest there (or None)."""
    url = url.rstrip("/")
    fs, root = _fs(url, storage_options)
    _, manifest = _check_ours(url, fs, root)
    if manifest and not overwrite:
        raise ArtifactPathError(f"{url} holds a Gram store already; pass overwrite=True (CLI: --overwrite) to "
                                f"replace it, or choose another URL.")
    return manifest


def _write_view_block_task(block, version_url, storage_options, grid, i, j):
    """Write block (i, j) of a view (its values computed by Dask), then its flag object; return its checksum."""
    array = _open_array(version_url, storage_options, "r+")
    K = np.ascontiguousarray(block, dtype=array.dtype)
    array[grid.rows(i), grid.cols(j)] = K
    sums = {f"{i}.{j}": array_crc32c(K)}
    fs, root = _fs(version_url, storage_options)
    _put_json(fs, f"{root}/{FLAGS}/{i}.{j}", sums)
    return sums


def write_view_into_url(values, meta, grid, url, overwrite, storage_options, compute):
    """Write a derived store (the Dask array ``values`` of a view, chunked as ``grid``) at ``url`` by the protocol
    above; ``compute(tasks)`` runs the block tasks and returns their results. Returns the store's URL.

    Every block is written by its own task (a view is symmetric only up to rounding, so no block is mirrored).
    Without ``overwrite`` any committed store at ``url`` is refused; with it, a store of another matrix is replaced
    by a new version, and one of the same ``meta`` verified and repaired. An interrupted write of the same view is
    resumed from its verified blocks.
    """

    def run(vurl, todo):
        delayed = values.to_delayed(optimize_graph=False)
        tasks = [dask.delayed(_write_view_block_task, pure=False)(delayed[i, j], vurl, storage_options, grid, i, j)
                 for i, j in todo]
        sums = {}
        for r in compute(tasks):
            sums.update(r)
        return sums

    write_versions(url, meta, grid, run, _stored_blocks(grid), overwrite=overwrite, verify=True,
                   storage_options=storage_options, mirrored=False, derived=True)
    return url.rstrip("/")
