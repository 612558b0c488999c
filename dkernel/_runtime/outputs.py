"""Safe writing of the single files dkernel writes: predicted labels, decision values, the factors of a Gram.

Folders (Gram stores, models, results) follow :mod:`.artifacts`; a single
output file follows the same rule here:

* a path that holds anything but a dkernel output of the same kind (a file of
  the user, an output of another kind, a folder, a symbolic link) is refused,
  never replaced or deleted; the error names the option or parameter that
  chose the path;
* a dkernel output of the same kind is replaced only with ``overwrite``;
* the file is written to a temporary sibling (``.NAME.dkernel-tmp-MACHINE-PID-XXXXXXXX.npy``,
  :func:`.siblings.new_sibling_file`: same folder, hence same filesystem;
  deleted by the next write beside it where its writer was killed) and moved
  into place only when complete: a new file with ``link`` (which never replaces a file that
  appeared meanwhile), a replacement with ``rename``. An interrupted write
  leaves the path as it was;
* the path written is the path asked for: a suffix that the format cannot
  carry (``np.save`` would append ``.npy`` to ``notes.txt``) is refused
  before any work.

How a file is known to be ours
------------------------------
Every output carries a *mark*, the JSON object
``{"format": "dkernel-output", "kind": KIND, "writer": "dkernel predict"}``:

``.npz``
    a member ``dkernel_output`` holding the JSON text as a 0-d string array
    (``np.load(path)["vectors"]`` is unchanged; ``files`` lists the member).
``.npy``
    NumPy's header admits exactly the keys ``descr``, ``fortran_order`` and
    ``shape`` (``np.lib.format`` refuses any other), so the mark is a trailer
    after the array's data: the bytes ``\\x00dkernel-output\\x00`` and the JSON
    text. ``np.load`` (and ``mmap_mode``) read exactly ``prod(shape)`` items
    after the header and ignore what follows, so a user's ``np.load`` gives
    exactly the array written. A file counts as ours only when the trailer
    starts exactly where the header says the data end: a file of ``np.save``
    ends there, so it is never taken for ours.

Other suffixes have no mark yet and are refused (:data:`SUFFIXES`).
"""

import contextlib
import errno
import json
import os
import zipfile

from ..exceptions import ArtifactPathError
from .artifacts import creation_refused
from .siblings import new_sibling_file

__all__ = ["MARK_FORMAT", "SUFFIXES", "check_output", "output_kind", "save_npy", "save_npz", "writing"]

#: The ``format`` of the mark of every output file.
MARK_FORMAT = "dkernel-output"
#: The suffixes that can carry a mark, and what each holds.
SUFFIXES = {".npy": "a NumPy .npy file", ".npz": "a NumPy .npz archive"}

_NPY_TRAILER = b"\x00dkernel-output\x00"
_NPZ_MEMBER = "dkernel_output"
_MAX_MARK_BYTES = 4096


def _mark(kind, writer):
    return {"format": MARK_FORMAT, "kind": kind, "writer": writer}


def _parse_mark(text):
    try:
        mark = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    return mark if isinstance(mark, dict) and mark.get("format") == MARK_FORMAT else None


def _npy_mark(path):
    import numpy as np

    fmt = np.lib.format
    try:
        with open(path, "rb") as fh:
            version = fmt.read_magic(fh)
            read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _, dtype = read_header(fh)
            if dtype.hasobject:
                return None
            count = 1
            for side in shape:
                count *= side
            fh.seek(fh.tell() + count * dtype.itemsize)
            trailer = fh.read(len(_NPY_TRAILER) + _MAX_MARK_BYTES + 1)
    except (OSError, ValueError, EOFError):
        return None
    if not trailer.startswith(_NPY_TRAILER) or len(trailer) > len(_NPY_TRAILER) + _MAX_MARK_BYTES:
        return None
    return _parse_mark(trailer[len(_NPY_TRAILER):])


def _npz_mark(path):
    try:
        with zipfile.ZipFile(path) as archive:
            if f"{_NPZ_MEMBER}.npy" not in archive.namelist():
                return None
        import numpy as np

        with np.load(path, allow_pickle=False) as archive:
            text = archive[_NPZ_MEMBER]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError):
        return None
    return _parse_mark(str(text)) if text.shape == () and text.dtype.kind == "U" else None


def output_kind(path):
    """``(kind, writer)`` of the dkernel output file at ``path`` (e.g. ``("labels", "dkernel predict")``), or None."""
    path = os.fspath(path)
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    suffix = os.path.splitext(path)[1].lower()
    mark = _npy_mark(path) if suffix == ".npy" else _npz_mark(path) if suffix == ".npz" else None
    return None if mark is None else (mark.get("kind"), mark.get("writer"))


def check_output(path, kind, *, what, suffix, name, writer, overwrite=False):
    """Check, before any work, that the output file ``kind`` may be written at ``path``; return its absolute path.

    Parameters
    ----------
    path : str or path-like
    kind : str
        What the file holds, recorded in its mark (``"labels"``).
    what : str
        The same in words, for messages (``"the predicted labels"``).
    suffix : {".npy", ".npz"}
        The one suffix the file may have.
    name : str
        How the user chose ``path`` (``"--out"``, ``"path"``): messages name it.
    writer : str
        Who writes it (``"dkernel predict"``), recorded in the mark.
    overwrite : bool
        Replace an output of the same kind written by dkernel.

    Raises
    ------
    ArtifactPathError
        If ``path`` does not end in ``suffix``, is a folder or a link, lies
        in a folder that cannot be written, or holds a file that is not a
        dkernel output of ``kind`` (or is one, without ``overwrite``).
    """
    shown = os.fspath(path)
    path = os.path.abspath(shown)
    label = f"{name} {shown}"
    if os.path.isdir(path):
        raise ArtifactPathError(f"{label} is a folder; {writer} writes {what} to one file: name a file ending in "
                                f"{suffix}.")
    if os.path.splitext(path)[1].lower() != suffix:
        stem = os.path.splitext(os.path.basename(shown))[0] or "out"
        raise ArtifactPathError(f"{label}: {writer} writes {what} as {SUFFIXES[suffix]}; name a path ending in "
                                f"{suffix} (e.g. {stem}{suffix}).")
    if os.path.islink(path):
        raise ArtifactPathError(f"{label} is a symbolic link; it is not replaced: choose another path.")
    if os.path.lexists(path):
        found = output_kind(path)
        if found is None:
            raise ArtifactPathError(f"{label} exists and was not written by {writer}; choose another path or "
                                    f"remove it.")
        if found[0] != kind:
            raise ArtifactPathError(f"{label} holds another output of {found[1]}, not {what}; choose another path.")
        if not overwrite:
            raise ArtifactPathError(f"{label} holds {what} written by an earlier {found[1]}; pass overwrite=True "
                                    f"(CLI: --overwrite) to replace it, or choose another path.")
        return path
    parent, entry = os.path.dirname(path), os.path.basename(path)
    while not os.path.lexists(parent):
        parent, entry = os.path.dirname(parent), os.path.basename(parent)
    reason = "not a folder" if not os.path.isdir(parent) else creation_refused(parent, entry)
    if reason is not None:
        raise ArtifactPathError(f"{label}: {parent} is not a folder this process can write into ({reason}); "
                                f"choose another path.")
    return path


@contextlib.contextmanager
def writing(path, kind, *, what, suffix, name, writer, overwrite=False):
    """Write the output file ``kind`` at ``path`` safely: yields ``(temporary path, mark)`` to write into.

    ``path`` is checked first (:func:`check_output`, same parameters). The
    caller writes the complete file, with ``mark``, at the temporary path;
    when the block exits normally the file is moved into place (checked
    again, so that a file that appeared meanwhile is never replaced); when
    it raises, the temporary file is deleted and ``path`` is left as it was.
    """
    path = check_output(path, kind, what=what, suffix=suffix, name=name, writer=writer, overwrite=overwrite)
    tmp = new_sibling_file(path, suffix)
    try:
        yield tmp, _mark(kind, writer)
        _install(tmp, path, kind, what=what, suffix=suffix, name=name, writer=writer, overwrite=overwrite)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _install(tmp, path, kind, **check):
    """Move the complete file ``tmp`` to ``path``: never onto a file that is not ours of the same kind."""
    if os.path.lexists(path):
        check_output(path, kind, **check)  # a file that appeared since the first check is refused
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # fails, rather than replaces, when a file appeared at path meanwhile
    except FileExistsError:
        check_output(path, kind, **check)
        os.replace(tmp, path)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        os.replace(tmp, path)  # a filesystem without hard links
    # (tmp, a second name of the file now, is removed by the caller.)


def save_npy(path, array, kind, *, what, name, writer, overwrite=False):
    """Write ``array`` to the ``.npy`` file ``path`` with its mark (:func:`writing`); return the absolute path."""
    import numpy as np

    target = writing(path, kind, what=what, suffix=".npy", name=name, writer=writer, overwrite=overwrite)
    with target as (tmp, mark), open(tmp, "wb") as fh:
        np.lib.format.write_array(fh, np.asanyarray(array), allow_pickle=False)
        fh.write(_NPY_TRAILER + json.dumps(mark).encode())
    return os.path.abspath(os.fspath(path))


def save_npz(path, arrays, kind, *, what, name, writer, overwrite=False):
    """Write the dict ``arrays`` to the ``.npz`` archive ``path`` with its mark (:func:`writing`); return the path."""
    import numpy as np

    if _NPZ_MEMBER in arrays:
        raise ValueError(f"{_NPZ_MEMBER!r} is the member that marks a dkernel output; name the array otherwise.")
    target = writing(path, kind, what=what, suffix=".npz", name=name, writer=writer, overwrite=overwrite)
    with target as (tmp, mark), open(tmp, "wb") as fh:  # a file object: np.savez appends no suffix to it
        np.savez(fh, **arrays, **{_NPZ_MEMBER: np.array(json.dumps(mark))})
    return os.path.abspath(os.fspath(path))
