"""Safe writing of the folders dkernel writes: Gram stores, models, pipeline results.

Every such folder (an *artifact*) records its kind in its own metadata:

=========== ========================================== ==============================
kind        folder                                     recorded in
=========== ========================================== ==============================
``gram``    a Gram store (raw or derived), zarr v3     ``format: "dkernel-gram"`` in
                                                       the root group's attributes
``model``   a fitted :class:`dkernel.SVC`, zarr v3      ``format: "dkernel-svc"``
(models)    one kind per model format (ConformalSVC,   the format of the model
            GeneralizedBiasSVC, the Parzen/ridge       (:data:`dkernel.svm.FORMATS`)
            learners): :data:`KINDS`
``results`` a pipeline's ``results/NAME/`` folder      ``format: "dkernel-results"``
                                                       in ``results.json``
=========== ========================================== ==============================

A solver checkpoint (kind ``checkpoint``, :mod:`dkernel.solver._checkpoint`)
is a zarr group with ``format: "dkernel-checkpoint"``. Single files a command
writes (labels, factors) follow the same rule: :mod:`dkernel._runtime.outputs`.

The rule applied by every writer:

* a path that exists and is not a dkernel artifact of the same kind (a file,
  a folder of other files, an artifact of another kind) is refused, never
  deleted; an empty folder is used;
* an existing artifact of the same kind is replaced only with ``overwrite``,
  and only when it holds nothing but the files dkernel wrote in it (a zarr
  artifact: the zarr hierarchy of its kind; a results folder: the files its
  run wrote; :mod:`.contents`): a folder holding a file of the user is
  refused, naming that file;
* nothing is written inside the folder of another artifact: it holds only
  the layout dkernel writes for its kind (a model's nested models, an
  estimator's checkpoint the checkpoint of each binary problem). An
  artifact found inside another (put there by hand, or by an older dkernel)
  is foreign to it: the outer one is not replaced, even with overwrite;
* a symbolic link at the path is written through: the artifact is written,
  resumed or replaced at the link's target (beside it, on its filesystem);
  the link itself is never replaced or deleted;
* a new artifact is written in a sibling folder of its target
  (``.NAME.dkernel-tmp-MACHINE-PID-XXXXXXXX``, same filesystem) and renamed into place
  when complete, never over anything another process put there meanwhile.
  An artifact being replaced must still be the one its writer decided to
  replace (its :func:`identity`); it is swapped with the new one in one
  atomic step where the system allows (Linux ``renameat2(RENAME_EXCHANGE)``),
  else renamed aside (``.NAME.dkernel-replaced-XXXXXXXX``) first; only then
  is it deleted. A failed write leaves the previous artifact intact; a
  process killed at the wrong moment may leave a hidden sibling folder
  behind, which is never read, and which the next write beside it on the
  same machine deletes (:func:`remove_abandoned`: its writer's process is
  gone).

Deletion goes through :func:`remove_own` only: it deletes a folder created by
the running write, or one whose metadata names it an artifact of the
expected kind and which holds nothing but what dkernel wrote; nothing else,
and never a symbolic link.
"""

import contextlib
import ctypes
import errno
import functools
import os
import re
import shutil
import sys
import time
import uuid
import warnings

from ..exceptions import ArtifactPathError
from .contents import foreign_files, layout
from .contents import read_json as _read_json
from .siblings import _sibling, new_sibling, partial_path, remove_abandoned, target_path  # noqa: F401 (re-exported)

__all__ = [
    "KINDS",
    "artifact_kind",
    "check_replaceable",
    "check_target",
    "creation_refused",
    "discard",
    "foreign_files",
    "identity",
    "install",
    "new_sibling",
    "partial_path",
    "remove_abandoned",
    "remove_own",
    "target_path",
    "writing",
]

#: kind -> (format recorded in the metadata, description used in messages)
KINDS = {
    "gram": ("dkernel-gram", "a dkernel Gram store"),
    "model": ("dkernel-svc", "a dkernel model of an SVC"),
    "conformal-model": ("dkernel-conformal-svc", "a dkernel model of a ConformalSVC"),
    "generalized-bias-model": ("dkernel-generalized-bias-svc", "a dkernel model of a GeneralizedBiasSVC"),
    "svr-model": ("dkernel-svr", "a dkernel model of an SVR"),
    "nu-svr-model": ("dkernel-nu-svr", "a dkernel model of a NuSVR"),
    "nu-svc-model": ("dkernel-nu-svc", "a dkernel model of a NuSVC"),
    "one-class-model": ("dkernel-one-class-svm", "a dkernel model of a OneClassSVM"),
    "results": ("dkernel-results", "dkernel pipeline results"),
    "checkpoint": ("dkernel-checkpoint", "a dkernel solver checkpoint"),
    "learner": ("dkernel-learner", "a dkernel ridge model (or a Parzen window model of the learner format)"),
    "parzen-model": ("dkernel-parzen", "a dkernel model of a ParzenWindowClassifier"),
    "kernel-pca-model": ("dkernel-kernel-pca", "a dkernel model of a KernelPCA"),
}

_FORMATS = {fmt: kind for kind, (fmt, _) in KINDS.items()}

#: How long :func:`remove_own` waits for tasks still writing into a folder it deletes (seconds).
REMOVE_PATIENCE = 60.0


def _describe(kind):
    return KINDS[kind][1]


def _damaged_format(path, meta):
    """The dkernel format still told by a damaged root ``zarr.json`` (``meta``: parsed, or None), or None.

    From the raw text of a file that is no longer valid JSON, from attributes
    found under a damaged name, or from the recorded checksum of a damaged
    ``format`` attribute (``attribute_checksums``).
    """
    if meta is None:
        try:
            with open(path, "rb") as fh:
                found = re.search(r'"format"\s*:\s*"(dkernel-[\w-]+)"', fh.read(1 << 20).decode(errors="replace"))
        except OSError:
            return None
        return found.group(1) if found else None
    from .integrity import json_crc32c

    for attrs in (v for v in meta.values() if isinstance(v, dict)):
        sums = attrs.get("attribute_checksums")
        recorded = sums.get("format") if isinstance(sums, dict) else None
        for fmt in _FORMATS:
            if attrs.get("format") == fmt or recorded == json_crc32c(fmt):
                return fmt
    return None


def artifact_kind(path):
    """The kind of dkernel artifact at ``path`` (``"gram"``, ``"model"``, ``"results"``), or None.

    Read from the folder's own metadata: the root ``zarr.json`` attribute
    ``format`` (also from a damaged ``zarr.json`` where it can still be told,
    :func:`_damaged_format`), or ``results.json`` (its ``format``, or, for
    results written before it was recorded, its ``pipeline`` and ``records``
    keys).
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        return None
    zarr_json = os.path.join(path, "zarr.json")
    if os.path.isfile(zarr_json):
        meta = _read_json(zarr_json)
        attrs = (meta or {}).get("attributes")
        if meta is not None and meta.get("node_type") == "group" and isinstance(attrs, dict) and attrs.get(
                "format") in _FORMATS:
            return _FORMATS[attrs["format"]]
        return _FORMATS.get(_damaged_format(zarr_json, meta))
    results = _read_json(os.path.join(path, "results.json"))
    if results is not None:
        if results.get("format") == KINDS["results"][0]:
            return "results"
        if "format" not in results and "pipeline" in results and "records" in results:
            return "results"
    return None


def identity(path):
    """What distinguishes the artifact folder at ``path`` from any other: device, inode and recorded write id.

    ``None`` when nothing is there. The write id is the ``write_id``
    attribute of a Gram store (None for other kinds); the inode follows the
    folder through renames, so an artifact swapped aside keeps its identity.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    meta = _read_json(os.path.join(path, "zarr.json")) or {}
    attrs = meta.get("attributes")
    write_id = attrs.get("write_id") if isinstance(attrs, dict) else None
    return (st.st_dev, st.st_ino, write_id)


def _shown(names):
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _annotated(path, foreign):
    """The names ``foreign`` (in the folder ``path``), each nested dkernel artifact told with its kind."""
    shown = []
    for name in foreign:
        found = artifact_kind(os.path.join(path, name)) if name.endswith("/") else None
        shown.append(f"{name.rstrip('/')} ({_describe(found)})" if found else name)
    return shown


def check_replaceable(path, kind):
    """Refuse to replace the artifact at ``path`` when it holds files dkernel did not write (naming them).

    Also refused: an artifact inside the folder of another one
    (:func:`_check_not_nested`), whose replacement would write there.
    """
    _check_not_nested(path, kind)
    foreign = foreign_files(path, kind)
    if not foreign:
        return
    if kind == "results":
        raise ArtifactPathError(
            f"{path} holds files that its pipeline run did not write ({_shown(foreign)}); it is not replaced: move "
            f"them away or choose another output folder."
        )
    shown = _annotated(path, foreign)
    if shown != foreign:
        raise ArtifactPathError(
            f"{path} holds {_describe(kind)} and, inside its folder, artifacts or files that dkernel did not write "
            f"in it ({_shown(shown)}); it is not replaced, even with overwrite (that would delete them): move them "
            f"out of {path}, or choose another path."
        )
    raise ArtifactPathError(
        f"{path} holds {_describe(kind)} and files that dkernel did not write in it ({_shown(foreign)}); it is not "
        f"replaced, even with overwrite: move those files away, or choose another path."
    )


# --------------------------------------------------------------------------- #
# Checking a target
# --------------------------------------------------------------------------- #


def check_target(path, kind, overwrite=False, *, reuse=False):
    """Check that an artifact of ``kind`` may be written at ``path``; return what is there.

    A symbolic link at ``path`` is followed: its target is checked
    (:func:`target_path`).

    Parameters
    ----------
    path : str or path-like
    kind : {"gram", "model", "results"}
    overwrite : bool
        An existing artifact of the same kind may be replaced.
    reuse : bool
        An existing artifact of the same kind is accepted without
        ``overwrite`` (a Gram store that is resumed or checked by its writer).

    Returns
    -------
    {"absent", "empty", "same"}
        Nothing at ``path``, an empty folder, or an artifact of ``kind``.

    Raises
    ------
    ArtifactPathError
        If ``path`` is a file, a folder that is not a dkernel artifact, an
        artifact of another kind, an artifact holding files dkernel did not
        write (with ``overwrite``), an artifact of ``kind`` while neither
        ``overwrite`` nor ``reuse`` is set, or (to write, not ``reuse``) a
        path inside the folder of another artifact. Nothing is deleted.
    """
    path = target_path(path)
    what = _describe(kind)
    if not os.path.lexists(path):
        if not reuse:
            _check_not_nested(path, kind)
        _check_parent_folder(path, what)
        return "absent"
    if not os.path.isdir(path):
        raise ArtifactPathError(f"{path} exists and is a file, not {what}; it is not replaced: choose another path.")
    found = artifact_kind(path)
    if found is None:
        try:
            empty = not os.listdir(path)
        except OSError as exc:
            raise ArtifactPathError(f"{path} exists and cannot be listed ({exc}); choose another path.") from None
        if empty:
            if not reuse:
                _check_not_nested(path, kind)
            return "empty"
        if os.path.isfile(os.path.join(path, "zarr.json")):
            raise ArtifactPathError(
                f"{path} exists and holds a zarr store whose root zarr.json does not say what wrote it (unreadable, or "
                f"another program's); dkernel does not delete what it cannot identify, even with overwrite: remove "
                f"the folder yourself (a damaged dkernel store's metadata are lost), or choose another path.")
        raise ArtifactPathError(
            f"{path} exists and is not {what} (it holds other files); it is not deleted or replaced, even with "
            f"overwrite: choose another path, or move its files away yourself."
        )
    if found != kind:
        raise ArtifactPathError(
            f"{path} holds {_describe(found)}, not {what}; overwrite replaces only {what}: choose another path."
        )
    if reuse:
        return "same"
    if not overwrite:
        raise ArtifactPathError(
            f"{path} already holds {what}; pass overwrite=True (CLI: --overwrite) to replace it, or choose "
            f"another path."
        )
    check_replaceable(path, kind)
    return "same"


def creation_refused(folder, name):
    """Why the existing ``folder`` cannot take the new entry ``name`` (the system's words), or None when it can.

    Tried, not guessed from the permissions alone: :func:`os.access` says yes to root everywhere, and to anyone
    for a folder whose filesystem refuses new entries (``/proc``, a read-only bind mount seen from a
    container), where a write would fail only at its end, after the work. An empty hidden folder
    ``.NAME.dkernel-probe-XXXXXXXX`` is made in ``folder`` and removed at once; nothing else is touched.
    """
    if not os.access(folder, os.W_OK | os.X_OK):
        return "permission denied"
    probe = os.path.join(folder, f".{name}.dkernel-probe-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(probe, 0o700)
    except FileExistsError:  # a name taken meanwhile: entries can be made there
        return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    with contextlib.suppress(OSError):
        os.rmdir(probe)
    return None


def _check_parent_folder(path, what):
    """The nearest existing path above ``path`` must be a folder that can take it (else the write fails at the end)."""
    parent, entry = os.path.dirname(path), os.path.basename(path)
    while not os.path.lexists(parent):
        parent, entry = os.path.dirname(parent), os.path.basename(parent)
    if not os.path.isdir(parent):
        raise ArtifactPathError(f"{parent} is a file, so {what} cannot be written at {path}: choose another path.")
    reason = creation_refused(parent, entry)
    if reason is not None:
        raise ArtifactPathError(f"{parent} is not writable ({reason}), so {what} cannot be written at {path}: "
                                f"choose another path.")


def _check_not_nested(path, kind):
    """Refuse to write an artifact of ``kind`` at ``path`` inside the folder of another artifact (any folder above).

    The folder of an artifact holds only what dkernel writes for it
    (:func:`.contents.layout`): anything else there is refused by its
    overwrite, and would be deleted with it. The one artifact written into
    another after it is the checkpoint of a binary problem in its
    estimator's checkpoint (``problem-K``). The folders above are taken as
    the system resolves them (through symbolic links).
    """
    folder = os.path.realpath(os.path.dirname(path))
    child = target = os.path.join(folder, os.path.basename(path))
    while True:
        found = artifact_kind(folder)
        if found is not None and not (found == kind == "checkpoint" and child == target
                                      and os.path.basename(child) in layout(folder, found)[0]):
            raise ArtifactPathError(
                f"{folder} holds {_describe(found)}, so {_describe(kind)} is not written inside it ({path}): the "
                f"folder of an artifact holds only what dkernel writes for it. Choose a path outside {folder}."
            )
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        child, folder = folder, parent


# --------------------------------------------------------------------------- #
# Deleting and installing
# --------------------------------------------------------------------------- #


def _remove_tree(path):
    """Delete the folder ``path``, waiting for writes still under way in it (tasks that have not stopped yet).

    A file created in a folder while it is deleted makes the folder's removal
    fail (``Directory not empty``): the deletion is tried again until the
    folder is gone, for at most :data:`REMOVE_PATIENCE` seconds.
    """
    deadline = time.monotonic() + REMOVE_PATIENCE
    while True:
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            if not os.path.lexists(path):
                return
            error = None
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EBUSY):
                raise
            error = exc
        if time.monotonic() > deadline:
            raise OSError(errno.ENOTEMPTY, f"{path} could not be deleted: something keeps writing into it "
                                           f"({error}); delete it once that stopped") from error
        time.sleep(0.05)


def remove_own(path, kind=None, *, created=False):
    """Delete a folder dkernel wrote: one this write ``created``, or a dkernel artifact of ``kind``.

    An artifact of ``kind`` is deleted only when it holds nothing but what
    dkernel wrote in it (:func:`foreign_files`). Anything else, and a
    symbolic link, is left in place and :class:`ArtifactPathError` is raised.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.lexists(path):
        return
    if os.path.islink(path):
        raise ArtifactPathError(f"{path} is a symbolic link; dkernel never deletes a link: it is not deleted.")
    if not created:
        if kind is None or artifact_kind(path) != kind:
            raise ArtifactPathError(f"{path} is not {_describe(kind) if kind else 'a folder dkernel wrote'}; "
                                    f"it is not deleted.")
        foreign = foreign_files(path, kind)
        if foreign:
            raise ArtifactPathError(f"{path} holds files that dkernel did not write ({_shown(foreign)}); it is not "
                                    f"deleted: move them away, then delete it.")
    _remove_tree(path)


def _changed(path, kind):
    return ArtifactPathError(
        f"{path} changed while this write ran: another process replaced or wrote {_describe(kind)} there, and it "
        f"is not replaced by this one. Check what is there now, then write again."
    )


def _swap(source, path, kind, replacing):
    """Put ``source`` at ``path`` in place of the artifact of identity ``replacing``; return where the old one went."""
    if identity(path) != replacing:
        raise _changed(path, kind)
    if _exchange(source, path):
        if identity(source) != replacing:  # replaced by another process between the check and the exchange
            _exchange(source, path)
            raise _changed(path, kind)
        return source
    aside = _sibling(path, "replaced-" + uuid.uuid4().hex[:8])
    os.rename(path, aside)
    if identity(aside) != replacing:
        with contextlib.suppress(OSError):
            os.rename(aside, path)
        raise _changed(path, kind)
    try:
        os.rename(source, path)
    except BaseException:
        os.rename(aside, path)
        raise
    return aside


def install(source, path, kind, replacing=None):
    """Move the complete artifact folder ``source`` to ``path`` (or to the target of the link there).

    With ``replacing`` None, nothing may be at ``path`` but an empty folder:
    one rename, which fails, replacing nothing, when another process put
    something there meanwhile (:class:`ArtifactPathError`). With
    ``replacing`` (the :func:`identity` of the artifact of ``kind`` the
    caller decided to replace), that artifact must still be the one at
    ``path``: it is swapped with ``source`` (:func:`_swap`), then deleted
    (:func:`remove_own`; an old artifact that cannot be deleted, say for a
    file a user put in it meanwhile, is left beside ``path`` with a
    warning). In every failure the caller keeps ``source``.
    """
    path = target_path(path)
    if replacing is None:
        try:
            os.rename(source, path)  # onto nothing, or onto an empty folder; never onto anything else
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise _changed(path, kind) from None
            raise
        return path
    old = _swap(source, path, kind, replacing)
    try:
        remove_own(old, kind)
    except (ArtifactPathError, OSError) as exc:
        warnings.warn(f"the replaced {_describe(kind)} was left at {old}: {exc}", stacklevel=2)
    return path


#: ``renameat2``'s flag that swaps two paths atomically (Linux >= 3.15).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.lru_cache(maxsize=1)
def _renameat2():
    """libc's ``renameat2``, or None where the C library has none (not Linux, an old glibc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def _exchange(a, b):
    """Swap the paths ``a`` and ``b`` in one atomic step; False where the system or the filesystem cannot."""
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV, errno.EPERM):
        return False  # a filesystem without the exchange (NFS, some FUSE): rename aside instead
    raise OSError(error, os.strerror(error), os.fspath(b))


def discard(folder, error=None):
    """Delete the folder ``folder`` this write created; a failure to do so is noted on ``error`` (not raised over it)."""
    try:
        remove_own(folder, created=True)
    except OSError as cleanup:
        if error is None:
            raise
        error.add_note(f"dkernel: the temporary folder {folder} could not be deleted ({cleanup}); delete it.")


@contextlib.contextmanager
def writing(path, kind, overwrite=False):
    """Write an artifact of ``kind`` to ``path`` safely: yields a new sibling folder to write into.

    ``path`` (or the target of the link there) is checked first
    (:func:`check_target`). When the block exits normally the folder is moved
    into place (:func:`install`), replacing only the artifact checked; when
    it raises (or the process is interrupted) the sibling folder is deleted
    and ``path`` is left as it was. Whoever writes into the folder from other
    threads or processes must have stopped when the block exits.
    """
    path = target_path(path)
    state = check_target(path, kind, overwrite)
    replacing = identity(path) if state == "same" else None
    tmp = new_sibling(path)
    try:
        yield tmp
        install(tmp, path, kind, replacing)
    except BaseException as exc:
        discard(tmp, exc)
        raise
