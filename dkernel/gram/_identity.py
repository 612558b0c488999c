"""The identity of a Gram store, and how the runs that write it and the objects that read it hold it.

Every store records, when it is created, a random ``write_id``: the store
folder at a path is replaced (``overwrite``, a derived store written in
place) only by another store, of another ``write_id``.

Writers hold the store they started. A run that writes blocks into a store
first *claims* it: it records its own run id in the store's ``writer``
attribute (:func:`claim`); a later run on the same store takes the claim
over, and the earlier one stops at its next block with a clear error, so two
runs never write one store together. Each block task then holds the store's
folder open (:func:`held`): it opens the folder, checks through that handle
that it is still the store of its ``write_id`` claimed by its run, and
writes every file through the handle (``/proc/self/fd/N`` on Linux), not by
the store's path. A store swapped out by another process while a task writes
therefore only ever receives that task's writes in the old folder, being
deleted, never in the store that replaced it: kernels are never mixed. (Where
the system has no such handles, the files are written by path, checked
before every block.)

Readers hold the store they opened: a :class:`~dkernel.gram.GramMatrix`
remembers the ``write_id`` of its store and checks, before and after every
read, that its path still holds that store (:class:`StoreStamp`: one
``stat`` of the root ``zarr.json``; the ``write_id`` is read again only when
that file changed). A store replaced under a reader raises
:class:`~dkernel.exceptions.StoreMismatchError`; values of the new store are
never returned as values of the old.
"""

import contextlib
import json
import os
import socket
import time
import uuid
from typing import NamedTuple

from ..exceptions import DKernelError, StoreMismatchError

__all__ = []

WRITE_ID = "write_id"
WRITER = "writer"


def new_write_id():
    """A new random store identity."""
    return uuid.uuid4().hex


class Claim(NamedTuple):
    """The store a run writes: its folder, its identity and the run's id (what every block task carries)."""

    path: str
    write_id: str
    run: str


class StoreLostError(StoreMismatchError):
    """The store a run or a reader holds is no longer the store at its path, or another run took it over."""


def replaced_message(path, reading=True):
    """The error text for the store ``path`` found replaced under a reader (``reading``) or a writer."""
    if reading:
        return (f"the Gram store {path} was replaced (another store was written there, e.g. with overwrite) after "
                f"this object opened it; it no longer reads the matrix it was opened on and returns nothing from the "
                f"new store: open it again with GramMatrix.open(path).")
    return (f"the Gram store {path} was replaced by another run (with overwrite, or a derived store written there) "
            f"while this run wrote it; this run stopped, and none of its blocks went into the new store. Run it "
            f"again to resume (with overwrite=True (CLI: --overwrite) to replace the new store).")


def _claim_text(claim):
    if not isinstance(claim, dict):
        return "another run"
    return f"another run (process {claim.get('pid')} on {claim.get('host')}, since {claim.get('since')})"


def taken_over_message(path, claim):
    """The error text of a run whose store ``path`` was claimed by a later run (``claim``)."""
    return (f"{_claim_text(claim)} took over the Gram store {path} and now writes it; this run stopped so that "
            f"the two never write it together. Nothing is lost: the blocks this run wrote are kept, and the other "
            f"run finishes the store.")


# --------------------------------------------------------------------------- #
# The root metadata, read and written through a held folder
# --------------------------------------------------------------------------- #


def _read_root_meta(fd):
    """The root ``zarr.json`` document of the folder open as ``fd``; FileNotFoundError when it is gone."""
    handle = os.open("zarr.json", os.O_RDONLY, dir_fd=fd)
    with os.fdopen(handle, "rb") as fh:
        meta = json.loads(fh.read().decode("utf-8"))
    if not isinstance(meta, dict) or not isinstance(meta.get("attributes"), dict):
        raise ValueError("the root zarr.json holds no attributes")
    return meta


def _write_root_meta(fd, meta):
    """Replace the root ``zarr.json`` of the folder open as ``fd`` in one step (a new file renamed over it)."""
    partial = f"zarr.{uuid.uuid4().hex}.partial"
    handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666, dir_fd=fd)
    try:
        with os.fdopen(handle, "wb") as fh:
            fh.write(json.dumps(meta, indent=2, allow_nan=True).encode("utf-8"))
        os.replace(partial, "zarr.json", src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial, dir_fd=fd)
        raise


def _through(fd, path):
    """A path that reaches the folder open as ``fd`` whatever is renamed: ``/proc/self/fd/N`` on Linux, else ``path``."""
    proc = f"/proc/self/fd/{fd}"
    return proc if os.path.isdir(proc) else path


class HeldStore:
    """A store folder held open by a writer: ``root`` is the path its files are written through."""

    def __init__(self, fd, path, write_id, run):
        self.fd, self.path, self.write_id, self.run = fd, path, write_id, run
        self.root = _through(fd, path)

    def attrs(self):
        try:
            return _read_root_meta(self.fd)["attributes"]
        except FileNotFoundError:
            raise StoreLostError(replaced_message(self.path, reading=False)) from None

    def check(self):
        """Raise :class:`StoreLostError` unless the folder is still the store ``write_id`` claimed by ``run``."""
        attrs = self.attrs()
        if attrs.get(WRITE_ID) != self.write_id:
            raise StoreLostError(replaced_message(self.path, reading=False))
        claim = attrs.get(WRITER)
        if self.run is not None and (not isinstance(claim, dict) or claim.get("run") != self.run):
            raise StoreLostError(taken_over_message(self.path, claim))
        if _stat_id(self.path) != _stat_fd(self.fd):  # the folder held is no longer the one at the path
            raise StoreLostError(replaced_message(self.path, reading=False))

    def update_attrs(self, changes):
        """Set the attributes ``changes`` of the held store (its other attributes as they are on disk now)."""
        meta = _read_root_meta(self.fd)
        meta["attributes"].update(changes)
        _write_root_meta(self.fd, meta)

    def real(self, text):
        """``text`` with the held path (``/proc/self/fd/N``) written as the store's path."""
        return text.replace(self.root, self.path) if self.root != self.path else text


def _stat_id(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _stat_fd(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


@contextlib.contextmanager
def held(path, write_id, run=None):
    """Hold the store folder ``path``: yields a :class:`HeldStore` once it is checked to be the store ``write_id``.

    With ``run``, the store must also be claimed by that run (:func:`claim`).
    Every file written through ``HeldStore.root`` lands in this folder even if
    another process renames or replaces it meanwhile. An ``OSError`` raised
    inside names the store's path, not the handle's.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise StoreLostError(replaced_message(path, reading=False)) from None
    try:
        store = HeldStore(fd, path, write_id, run)
        store.check()
        try:
            yield store
        except OSError as exc:
            if isinstance(exc, DKernelError) or store.root == path:
                raise
            raise _renamed(exc, store) from exc
    finally:
        os.close(fd)


def _renamed(exc, store):
    """The ``OSError`` ``exc`` naming the store's path instead of the held handle's."""
    try:
        if exc.errno is not None and exc.strerror:
            filename = store.real(str(exc.filename)) if exc.filename is not None else None
            return type(exc)(exc.errno, exc.strerror, filename) if filename else type(exc)(exc.errno, exc.strerror)
        return type(exc)(store.real(str(exc)))
    except TypeError:  # an OSError of another signature
        return OSError(exc.errno, store.real(str(exc)))


def claim(path, write_id):
    """Claim the store folder ``path`` (of identity ``write_id``) for a new run; returns its :class:`Claim`.

    The run's id, process, host and start time are recorded in the store's
    ``writer`` attribute, then read back: of two runs claiming at once, the one
    whose claim is not there loses at once (:class:`StoreLostError`).
    """
    run = uuid.uuid4().hex
    record = {"run": run, "pid": os.getpid(), "host": socket.gethostname(),
              "since": time.strftime("%Y-%m-%d %H:%M:%S")}
    with held(path, write_id) as store:
        store.update_attrs({WRITER: record})
        store.run = run
        store.check()
    return Claim(path, write_id, run)


# --------------------------------------------------------------------------- #
# Readers
# --------------------------------------------------------------------------- #


class StoreStamp:
    """What a reader remembers of the store it opened: its ``write_id`` and the state of its root ``zarr.json``.

    :meth:`check` costs one ``stat`` while the root metadata is unchanged;
    when it changed (a run resuming the store updates its statistics), the
    ``write_id`` is read again and compared.
    """

    def __init__(self, path, write_id):
        self.path = str(path)
        self.write_id = write_id
        self._state = self._stat()

    def _stat(self):
        try:
            st = os.stat(os.path.join(self.path, "zarr.json"))
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size

    def check(self):
        """Raise :class:`StoreLostError` when the path no longer holds the store that was opened."""
        state = self._stat()
        if state is not None and state == self._state:
            return
        try:
            with open(os.path.join(self.path, "zarr.json"), "rb") as fh:
                attrs = json.loads(fh.read().decode("utf-8")).get("attributes") or {}
        except (OSError, ValueError, AttributeError):
            attrs = None
        if not isinstance(attrs, dict) or attrs.get(WRITE_ID) != self.write_id:
            raise StoreLostError(replaced_message(self.path))
        self._state = state
