"""Safe writing of the folders dkernel writes: Gram stores, models, pipeline results.

Every such folder (an *artifact*) records its kind in its own metadata:

=========== ========================================== ==============================
kind        folder                                     recorded in
=========== ========================================== ==============================
``gram``    a Gram store (raw or derived), zarr v3     ``format: "dkernel-gram"`` in
                                                       the root group's attributes
``model``   a fitted :class:`dkernel.SVC`, zarr v3      ``format: "dkernel-svc"``
``results`` a pipeline's ``results/NAME/`` folder      ``format: "dkernel-results"``
                                                       in ``results.json``
=========== ========================================== ==============================

A solver checkpoint (kind ``checkpoint``, :mod:`dkernel.solver._checkpoint`)
is a zarr group with ``format: "dkernel-checkpoint"``.

The rule applied by every writer:

* a path that exists and is not a dkernel artifact of the same kind (a file,
  a folder of other files, an artifact of another kind) is refused, never
  deleted; an empty folder is used;
* an existing artifact of the same kind is replaced only with ``overwrite``;
  a results folder is replaced only when it holds nothing but the files its
  run wrote;
* a new artifact is written in a sibling folder of its target
  (``.NAME.dkernel-tmp-XXXXXXXX``, same parent, hence same filesystem) and
  moved into place with ``rename`` only when complete. An artifact being
  replaced is swapped with the new one in one atomic step where the system
  allows (Linux ``renameat2(RENAME_EXCHANGE)``: the path always holds the
  old or the new artifact, never nothing), else first renamed aside
  (``.NAME.dkernel-replaced-XXXXXXXX``) and the new one renamed in; only
  then is the old one deleted. An interrupted or failed write therefore
  leaves the previous artifact intact; a process killed at the wrong moment
  may leave a hidden sibling folder behind, which is never read and may be
  deleted.

Deletion goes through :func:`remove_own` only: it deletes a folder created by
the running write, or one whose metadata names it an artifact of the
expected kind, and nothing else.
"""

import contextlib
import ctypes
import errno
import fnmatch
import functools
import json
import os
import shutil
import sys
import uuid

from ..exceptions import ArtifactPathError

__all__ = [
    "KINDS",
    "artifact_kind",
    "check_target",
    "install",
    "new_sibling",
    "partial_path",
    "remove_own",
    "writing",
]

#: kind -> (format recorded in the metadata, description used in messages)
KINDS = {
    "gram": ("dkernel-gram", "a dkernel Gram store"),
    "model": ("dkernel-svc", "a dkernel model"),
    "results": ("dkernel-results", "dkernel pipeline results"),
    "checkpoint": ("dkernel-checkpoint", "a dkernel solver checkpoint"),
    "learner": ("dkernel-learner", "a dkernel Parzen window or ridge model"),
}

_FORMATS = {fmt: kind for kind, (fmt, _) in KINDS.items()}

#: Files a results folder written before results.json listed its files may hold.
_LEGACY_RESULT_FILES = ("results.csv", "results.json", "report.md", "*.png")


def _describe(kind):
    return KINDS[kind][1]


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def artifact_kind(path):
    """The kind of dkernel artifact at ``path`` (``"gram"``, ``"model"``, ``"results"``), or None.

    Read from the folder's own metadata: the root ``zarr.json`` attribute
    ``format``, or ``results.json`` (its ``format``, or, for results written
    before it was recorded, its ``pipeline`` and ``records`` keys).
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        return None
    meta = _read_json(os.path.join(path, "zarr.json"))
    if meta is not None:
        attrs = meta.get("attributes") or {}
        if meta.get("node_type") == "group" and isinstance(attrs, dict):
            return _FORMATS.get(attrs.get("format"))
        return None
    results = _read_json(os.path.join(path, "results.json"))
    if results is not None:
        if results.get("format") == KINDS["results"][0]:
            return "results"
        if "format" not in results and "pipeline" in results and "records" in results:
            return "results"
    return None


def _foreign_result_files(path):
    """Files of a results folder that its run did not write (listed in results.json, or the legacy names)."""
    results = _read_json(os.path.join(path, "results.json")) or {}
    listed = results.get("files")
    found = []
    for root, _, files in os.walk(path):
        for name in files:
            found.append(os.path.relpath(os.path.join(root, name), path))
    if isinstance(listed, list):
        own = set(listed) | {"results.json"}
        return sorted(f for f in found if f not in own)
    return sorted(f for f in found if not any(fnmatch.fnmatchcase(f, p) for p in _LEGACY_RESULT_FILES))


def check_target(path, kind, overwrite=False, *, reuse=False):
    """Check that an artifact of ``kind`` may be written at ``path``; return what is there.

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
        artifact of another kind, a results folder holding files its run did
        not write (with ``overwrite``), or an artifact of ``kind`` while
        neither ``overwrite`` nor ``reuse`` is set. Nothing is deleted.
    """
    path = os.path.abspath(os.fspath(path))
    what = _describe(kind)
    if not os.path.lexists(path):
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
            return "empty"
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
    if kind == "results":
        foreign = _foreign_result_files(path)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise ArtifactPathError(
                f"{path} holds files that its pipeline run did not write ({shown}); it is not replaced: move "
                f"them away or choose another output folder."
            )
    return "same"


def _check_parent_folder(path, what):
    """The nearest existing path above ``path`` must be a folder that can take it (else the write fails at the end)."""
    parent = os.path.dirname(path)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ArtifactPathError(f"{parent} is a file, so {what} cannot be written at {path}: choose another path.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ArtifactPathError(f"{parent} is not writable, so {what} cannot be written at {path}: choose another "
                                f"path.")


def _sibling(path, tag):
    parent, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.path.join(parent, f".{name}.dkernel-{tag}")


def partial_path(path):
    """The fixed sibling folder where a resumable writer builds the replacement of ``path``."""
    return _sibling(path, "partial")


def new_sibling(path):
    """Create and return a new empty folder beside ``path`` (same parent) for writing its replacement."""
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(parent, exist_ok=True)
    while True:
        candidate = _sibling(path, "tmp-" + uuid.uuid4().hex[:8])
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate


def remove_own(path, kind=None, *, created=False):
    """Delete a folder dkernel wrote: one this write ``created``, or a dkernel artifact of ``kind``.

    Anything else is left in place and :class:`ArtifactPathError` is raised.
    """
    path = os.fspath(path)
    if not os.path.lexists(path):
        return
    if not created and (kind is None or artifact_kind(path) != kind):
        raise ArtifactPathError(f"{path} is not {_describe(kind) if kind else 'a folder dkernel wrote'}; "
                                f"it is not deleted.")
    shutil.rmtree(path)


def install(source, path, kind):
    """Move the complete artifact folder ``source`` to ``path``.

    Nothing at ``path`` (or an empty folder): one rename. An artifact of
    ``kind`` at ``path``: it is renamed aside, ``source`` renamed in, then the
    old artifact deleted; if the second rename fails the old one is put back.
    Anything else at ``path`` raises :class:`ArtifactPathError` (the caller
    keeps ``source``).
    """
    path = os.path.abspath(os.fspath(path))
    state = check_target(path, kind, reuse=True)
    if state != "same":
        os.replace(source, path)  # onto nothing, or onto an empty folder
        return path
    if _exchange(source, path):
        remove_own(source, kind)  # now the old artifact
        return path
    aside = _sibling(path, "replaced-" + uuid.uuid4().hex[:8])
    os.rename(path, aside)
    try:
        os.rename(source, path)
    except BaseException:
        os.rename(aside, path)
        raise
    remove_own(aside, kind)
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


@contextlib.contextmanager
def writing(path, kind, overwrite=False):
    """Write an artifact of ``kind`` to ``path`` safely: yields a new sibling folder to write into.

    ``path`` is checked first (:func:`check_target`). When the block exits
    normally the folder is moved into place (:func:`install`); when it raises
    (or the process is interrupted) the sibling folder is deleted and
    ``path`` is left as it was.
    """
    path = os.path.abspath(os.fspath(path))
    check_target(path, kind, overwrite)
    tmp = new_sibling(path)
    try:
        yield tmp
        install(tmp, path, kind)
    except BaseException:
        remove_own(tmp, created=True)
        raise
