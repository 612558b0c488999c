"""The folders a write makes beside its target: where an artifact is built before it is moved into place.

A new artifact is written in a sibling of its target (same parent, same filesystem): ``.NAME.dkernel-tmp-MACHINE-
PID-XXXXXXXX`` (:func:`new_sibling`), named by the writer's machine and process, or the fixed
``.NAME.dkernel-partial`` of a resumable writer (:func:`partial_path`); an output file is written likewise in
``.NAME.dkernel-tmp-MACHINE-PID-XXXXXXXX.SUFFIX`` (:func:`new_sibling_file`). A writer killed mid-write (``kill -9``,
a lost node) leaves its temporary sibling behind; the next write beside it on the same machine deletes it
(:func:`remove_abandoned`), and nothing else. :mod:`.artifacts` moves the finished folder into place.
"""

import functools
import os
import re
import shutil
import uuid

from ..exceptions import ArtifactPathError

__all__ = ["FILE_SUFFIXES", "new_sibling", "new_sibling_file", "partial_path", "remove_abandoned", "target_path"]


def target_path(path):
    """The folder a write at ``path`` writes: ``path`` made absolute, or the target of the symbolic link there.

    Raises :class:`ArtifactPathError` for a link that leads to itself (a loop).
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.islink(path):
        return path
    target = os.path.realpath(path)
    if os.path.islink(target):
        raise ArtifactPathError(f"{path} is a symbolic link that never reaches a folder (a loop); replace the link "
                                f"or choose another path.")
    return target


def _sibling(path, tag):
    parent, name = os.path.split(target_path(path))
    return os.path.join(parent, f".{name}.dkernel-{tag}")


def partial_path(path):
    """The fixed sibling folder where a resumable writer builds the replacement of ``path`` (of its link's target)."""
    return _sibling(path, "partial")


@functools.lru_cache(maxsize=1)
def _machine_tag():
    """8 hex digits naming this machine and its process-id space (host name and, on Linux, the PID namespace): the
    writers whose process ids this process can look up."""
    import socket
    import zlib

    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{zlib.crc32(f'{socket.gethostname()}|{namespace}'.encode()):08x}"


#: The suffixes of the output files written in a temporary sibling file (:func:`new_sibling_file`).
FILE_SUFFIXES = (".npy", ".npz")

#: The tag of a temporary sibling: the writer's machine tag and process id, a random part, and a file's suffix.
_TMP_TAG = re.compile(r"tmp-([0-9a-f]{8})-([0-9]+)-[0-9a-f]{8}(" + "|".join(re.escape(s) for s in FILE_SUFFIXES) + ")?")


def _process_gone(pid):
    """Whether no process of id ``pid`` runs on this machine (one of another user still runs)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_abandoned(path):
    """Delete the temporary siblings of ``path`` whose writer was killed mid-write (``kill -9``, a lost node).

    Only folders named as :func:`new_sibling` names them and files named as :func:`new_sibling_file` names them,
    by a writer of this machine (its :func:`_machine_tag`) whose process is gone; never a link, never another name.
    Returns the paths deleted.
    """
    parent, name = os.path.split(target_path(path))
    prefix = f".{name}.dkernel-"
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = _TMP_TAG.fullmatch(entry.name[len(prefix):]) if entry.name.startswith(prefix) else None
        if match is None or match[1] != _machine_tag() or entry.is_symlink() or not _process_gone(int(match[2])):
            continue
        if match[3] is None and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        elif match[3] is not None and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except OSError:
                continue
        else:
            continue
        removed.append(entry.path)
    return removed


def new_sibling(path):
    """Create and return a new empty folder beside ``path`` (same parent) for writing its replacement.

    Named ``.NAME.dkernel-tmp-MACHINE-PID-XXXXXXXX``; those of earlier writers killed mid-write are deleted first
    (:func:`remove_abandoned`).
    """
    parent = os.path.dirname(target_path(path))
    os.makedirs(parent, exist_ok=True)
    remove_abandoned(path)
    while True:
        candidate = _sibling(path, f"tmp-{_machine_tag()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate


def new_sibling_file(path, suffix):
    """The name of a new temporary file beside ``path`` for writing its replacement, ``suffix`` one of
    :data:`FILE_SUFFIXES`: ``.NAME.dkernel-tmp-MACHINE-PID-XXXXXXXX.SUFFIX`` (not created: the writer creates it).
    Those of earlier writers killed mid-write are deleted first (:func:`remove_abandoned`)."""
    if suffix not in FILE_SUFFIXES:
        raise ValueError(f"a temporary sibling file ends in one of {FILE_SUFFIXES}, not {suffix!r}")
    parent = os.path.dirname(target_path(path))
    os.makedirs(parent, exist_ok=True)
    remove_abandoned(path)
    return _sibling(path, f"tmp-{_machine_tag()}-{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}")
