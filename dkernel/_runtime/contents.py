"""What dkernel writes inside an artifact folder (:mod:`.artifacts`), and what it did not write there.

The layout of each kind of artifact:

* a zarr artifact (a Gram store, a model, a checkpoint) holds its zarr
  hierarchy: the arrays of its kind (a Gram store's ``K``, ``done``,
  ``diag`` and checksums; the arrays a model's checksums record) and the
  nested groups of its kind only: the nested models of a model (the two
  passes of a ConformalSVC), the checkpoint of each binary problem in an
  estimator's checkpoint (``problem-K``);
* a results folder holds the files its run wrote (listed in its
  ``results.json``, or the names of the results written before that list).

Anything else is foreign (:func:`foreign_files`): a file of the user, a
symbolic link, another program's zarr store, a dkernel artifact of its own
inside the folder (put there by hand, or by an older dkernel). An artifact
holding foreign files is never replaced or deleted.
"""

import fnmatch
import json
import os
import re

__all__ = ["MODEL_PARTS", "foreign_files", "layout", "read_json"]

#: Files a results folder written before results.json listed its files may hold.
_LEGACY_RESULT_FILES = ("results.csv", "results.json", "report.md", "*.png")

#: What zarr leaves of a write it did not finish (``<name>.<uuid hex>.partial``, renamed in place when complete).
_ZARR_PARTIAL = re.compile(r"^.*\.[0-9a-f]{32}\.partial$")


def read_json(path):
    """The JSON object in the file ``path``, or None (no such file, not JSON, not an object)."""
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _foreign_result_files(path):
    """Files of a results folder that its run did not write (listed in results.json, or the legacy names)."""
    results = read_json(os.path.join(path, "results.json")) or {}
    listed = results.get("files")
    found = []
    for root, dirs, files in os.walk(path):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            found.append(os.path.relpath(os.path.join(root, name), path))
    if isinstance(listed, list):
        own = set(listed) | {"results.json"}
        return sorted(f for f in found if f not in own)
    return sorted(f for f in found if not any(fnmatch.fnmatchcase(f, p) for p in _LEGACY_RESULT_FILES))


def _everything(folder, rel):
    """Every file, link and empty folder under ``folder`` (named ``rel``), as relative names."""
    found = []
    for root, dirs, files in os.walk(folder):
        here = os.path.normpath(os.path.join(rel, os.path.relpath(root, folder)))
        found += [os.path.join(here, name) for name in files + [d for d in dirs
                                                                 if os.path.islink(os.path.join(root, d))]]
        if not dirs and not files:
            found.append(here + "/")
    return found


def _is_chunk_tree(folder):
    """Whether ``folder`` holds chunk files and nothing else: folders ``c`` and integers, files of integers."""
    has_chunks = False
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            if os.path.islink(os.path.join(root, name)) or not (name.isdigit() or name == "c"):
                return False
        for name in files:
            if not (name.isdigit() or _ZARR_PARTIAL.match(name)):
                return False
            has_chunks = True
    return has_chunks


#: The arrays of a Gram store (:func:`dkernel.gram._metadata.create_arrays`; ``diag`` and the checksums when used).
_GRAM_ARRAYS = frozenset({"K", "done", "diag", "checksums", "diag_checksums"})

#: The layout (:func:`layout`) of a node without nested groups whose arrays may have any name.
_ANY_ARRAYS = ({}, None)

#: The nested models (name -> kind) of the model kinds that have some, as the registry of model formats
#: declares them (``parts`` of :data:`dkernel.svm.FORMATS`, which imports :mod:`.artifacts`; a test checks them).
MODEL_PARTS = {"conformal-model": {"first_pass": "model", "second_pass": "model"}}


def layout(path, kind):
    """The members dkernel writes in the root group of the artifact at ``path`` (of ``kind``): ``(groups, arrays)``.

    ``groups`` maps the name of each nested group dkernel writes there to
    its kind: the nested models of a model (the two passes of a
    ConformalSVC), the checkpoint of each binary problem of an estimator's
    checkpoint (``problem-K``, its ``problems`` attribute). ``arrays`` is
    the set of its array names, or None where any name may be its own (a
    checkpoint's kernel arrays, a model that records no checksums). Any
    other subfolder is foreign: a nested artifact is never part of another.
    """
    attrs = (read_json(os.path.join(path, "zarr.json")) or {}).get("attributes")
    attrs = attrs if isinstance(attrs, dict) else {}
    if kind == "gram":
        return {}, _GRAM_ARRAYS
    if kind == "checkpoint":
        problems = attrs.get("problems")
        count = problems if isinstance(problems, int) and not isinstance(problems, bool) else 0
        return {f"problem-{k}": "checkpoint" for k in range(count)}, None
    record = attrs.get("checksums")  # a model: its parts, and the arrays its checksums record
    arrays = record.get("arrays") if isinstance(record, dict) else None
    return MODEL_PARTS.get(kind, {}), set(arrays) if isinstance(arrays, dict) else None


def _is_group(folder):
    """Whether the ``zarr.json`` of ``folder`` names a zarr group, or records a ``format`` (an artifact's, damaged)."""
    meta = read_json(os.path.join(folder, "zarr.json"))
    attrs = (meta or {}).get("attributes")
    return meta is not None and (meta.get("node_type") == "group" or isinstance(attrs, dict) and "format" in attrs)


def _foreign_member(entry, name, own):
    """The foreign files of the member ``entry`` (named ``name``, holding a zarr.json) of a group of layout ``own``.

    A nested group declared by the layout is checked with its own layout;
    any other group (a nested artifact, another program's zarr store) and
    an array the layout does not name are foreign as a whole (``name/``).
    """
    groups, arrays = own
    if entry.name in groups:
        return _foreign_zarr_files(entry.path, name, layout(entry.path, groups[entry.name]))
    if _is_group(entry.path) or (arrays is not None and entry.name not in arrays):
        return [name + "/"]
    return _foreign_zarr_files(entry.path, name)


def _foreign_zarr_files(path, rel="", own=_ANY_ARRAYS):
    """The files under the zarr node folder ``path`` that are not part of its zarr hierarchy.

    A node folder holds its ``zarr.json``; a group's subfolders are its
    members (folders with a ``zarr.json``, or an array whose metadata was
    lost: nothing but chunks), those its layout ``own`` names (:func:`layout`);
    an array's chunks are files named by integers, under ``c/`` (zarr v3's
    default keys) or at its root (``0.1`` keys). The unfinished writes zarr
    leaves (``*.<uuid>.partial``) are its own too. Anything else, and every
    symbolic link, is foreign.
    """
    foreign = []
    meta = read_json(os.path.join(path, "zarr.json")) or {}
    is_array = meta.get("node_type") == "array"
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return [rel or "."]
    for entry in entries:
        name = os.path.join(rel, entry.name)
        if entry.is_symlink():
            foreign.append(name)
        elif entry.is_dir():
            if not is_array and os.path.isfile(os.path.join(entry.path, "zarr.json")):
                foreign += _foreign_member(entry, name, own)
            elif not _is_chunk_tree(entry.path) or (is_array and not (entry.name == "c" or entry.name.isdigit())):
                foreign += _everything(entry.path, name)
        elif entry.name == "zarr.json" or _ZARR_PARTIAL.match(entry.name):
            continue
        elif not (is_array and all(part.isdigit() for part in entry.name.split("."))):
            foreign.append(name)  # (an array's chunk of ``0.1`` keys is its own)
    return foreign


def foreign_files(path, kind):
    """The files inside the artifact folder ``path`` (of ``kind``) that dkernel did not write there, sorted.

    A subfolder that is not part of the layout dkernel writes for ``kind``
    (a nested artifact, another zarr group) is named as a whole: ``name/``.
    """
    path = os.fspath(path)
    if kind == "results":
        return _foreign_result_files(path)
    return sorted(_foreign_zarr_files(path, own=layout(path, kind)))
