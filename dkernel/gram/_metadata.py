"""The metadata of a Gram store: its arrays as created, checked before it is read, repaired by the run that resumes it.

A store's metadata are its root ``zarr.json`` (the attributes: kernel, shape,
dtype, chunks, data fingerprint, provenance, checksum spec, format version,
identity) and the ``zarr.json`` of each of its arrays. Damage there is as
dangerous as damage to the data: a flipped ``checksums`` spec would turn the
checks off, a flipped kernel would make a store claim values it does not
hold. So, before any read (:func:`read_store_meta`):

* every attribute that never changes once the store is created is compared
  with its CRC-32C in ``attribute_checksums``; a missing, changed or unknown
  attribute is damage;
* a store of format version 3, or one with a ``checksums/`` array on disk,
  must have a valid checksum spec: its reads are always verified;
* each array's metadata must agree with the attributes (shape, dtype,
  chunks, fill value, chunk keys).

Damage raises :class:`~dkernel.exceptions.CorruptStoreError` naming the key.
The run that resumes the store (:meth:`GramMatrix.compute
<dkernel.gram.GramMatrix.compute>`, ``dkernel gram``, with the same data
and kernel) repairs it (:func:`repair_metadata`): an attribute gets back the
value whose checksum is the recorded one (the requested value, or the value
found under a damaged name), array metadata is rewritten from the
attributes, and damaged blocks are then found by their own checksums and
recomputed. What cannot be restored with certainty (an attribute whose
recorded value the request does not reproduce, an unreadable root
``zarr.json``) is refused with the same error: the store is then replaced
only with ``overwrite``.
"""

import json
import os
import tempfile
import uuid

import numpy as np
import zarr
from zarr.core.metadata import ArrayV3Metadata

from .._runtime.integrity import json_crc32c
from ..exceptions import CorruptStoreError
from ._checksums import _Checksums
from ._corruption import corruption_message
from ._format import MUTABLE_ATTRIBUTES, STORE_FORMAT, STORE_VERSION, _read_root, attribute_checksums
from ._attributes import _KNOWN, _MISSING, _ROOT_KEYS, _attribute_damage
from ._grid import _BlockGrid

__all__ = []

_ARRAY_KEYS = {"shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs", "attributes",
               "zarr_format", "node_type", "storage_transformers", "dimension_names"}
#: Attributes that say what the stored values are of: no block checksum can check them, since the values and
#: their checksums are the same whatever the kernel or data are named. A damaged one is restored only from a
#: value whose checksum is the recorded one, never taken because the request names the damaged value.
_NAMING_ATTRIBUTES = ("kernel", "fingerprint", "provenance")


def create_arrays(root, shape, dtype, grid, options, *, sharded, checksums):
    """Create the arrays of a store (no blocks) in the zarr group ``root``; ``checksums`` is their spec or None.

    ``K`` of a computed Gram has one shard per block (``sharded``), of inner
    chunks spanning the block's width: a row of a block is then one
    contiguous byte range of its shard. A derived store, written whole by one
    task per block, has one plain chunk per block.
    """
    if sharded:
        root.create_array("K", shape=tuple(shape), shards=(grid.rc, grid.cc),
                          chunks=(options.resolve_inner_rows(grid.rc), grid.cc), dtype=dtype,
                          compressors=options.zarr_compressors(), fill_value=np.nan)
    else:
        root.create_array("K", shape=tuple(shape), chunks=(grid.rc, grid.cc), dtype=dtype,
                          fill_value=np.nan, compressors=None)
    root.create_array("done", shape=(grid.n_row_blocks, grid.n_col_blocks), chunks=(1, 1), dtype="uint8",
                      fill_value=0, compressors=None)
    if grid.symmetric:
        root.create_array("diag", shape=(grid.n,), chunks=(grid.rc,), dtype=dtype, fill_value=np.nan,
                          compressors=None)
    if checksums is not None:
        _Checksums.create_arrays(root, grid, checksums)


#: Why a store whose root ``zarr.json`` cannot be read is replaced, not repaired (its attributes are lost).
_UNREADABLE_ROOT = "It cannot be repaired in place (its root metadata cannot be read)"


def metadata_error(path, damage, cannot=None):
    """The :class:`CorruptStoreError` of the store ``path`` whose metadata has the ``damage`` ``[(key, what)]``.

    ``cannot`` says why the run that met it could not repair it.
    """
    detail = "; ".join(f"{key} {what}" for key, what in damage[:4])
    if len(damage) > 4:
        detail += f" (and {len(damage) - 4} more)"
    if cannot:
        detail += f". {cannot}"
    return CorruptStoreError(corruption_message(path, [], detail), path=path, blocks=[], detail=detail)


# --------------------------------------------------------------------------- #
# Checking
# --------------------------------------------------------------------------- #


def _root_damage(path):
    """``(attrs, [(key, what)])`` of the root ``zarr.json`` of the store ``path`` (attrs None when unreadable)."""
    meta, error = _read_root(path)
    if meta is None:
        return None, [("zarr.json", error)]
    damage = [(f"zarr.json key {key!r}", "is unknown") for key in sorted(set(meta) - _ROOT_KEYS)]
    if meta.get("zarr_format") != 3:
        damage.append(("zarr.json key 'zarr_format'", f"is {meta.get('zarr_format')!r}, not 3"))
    if meta.get("node_type") != "group":
        damage.append(("zarr.json key 'node_type'", f"is {meta.get('node_type')!r}, not 'group'"))
    attrs = meta.get("attributes")
    if not isinstance(attrs, dict):
        return None, damage + [("zarr.json key 'attributes'", "is missing")]
    return attrs, damage + _attribute_damage(attrs, os.path.isdir(os.path.join(path, "checksums")))


def _expected_arrays(attrs):
    """``{name: (shape, dtype, chunks or (chunks, shards), fill)}`` of the arrays a store of ``attrs`` holds."""
    grid = _BlockGrid(attrs["shape"], attrs["chunks"], attrs["symmetric"])
    chunks = (grid.rc, grid.cc)
    arrays = {"K": ((grid.n, grid.m), attrs["dtype"], chunks, np.nan),
              "done": ((grid.n_row_blocks, grid.n_col_blocks), "uint8", (1, 1), 0)}
    if grid.symmetric:
        arrays["diag"] = ((grid.n,), attrs["dtype"], (grid.rc,), np.nan)
    spec = attrs.get("checksums")
    if isinstance(spec, dict):
        spb = -(-grid.cc // spec["segment_columns"])
        arrays["checksums"] = ((grid.n, grid.n_col_blocks * spb), "uint32", (grid.rc, spb), 0)
        if grid.symmetric:
            arrays["diag_checksums"] = ((grid.n_row_blocks,), "uint32", (1,), 0)
    return arrays


def _array_damage(path, name, expected):
    """``[(key, what)]`` of the metadata of array ``name`` of the store ``path`` against its ``expected`` form."""
    where = f"{name}/zarr.json"
    meta, error = _read_root(os.path.join(path, name))
    if meta is None:
        return [(where, error)]
    damage = [(f"{where} key {key!r}", "is unknown") for key in sorted(set(meta) - _ARRAY_KEYS)]
    if damage:
        return damage
    try:
        array = ArrayV3Metadata.from_dict(dict(meta))
        found_dtype = np.dtype(array.data_type.to_native_dtype())
        layout = tuple(int(c) for c in array.chunk_grid.chunk_shape)  # a sharded array's grid is its shards'
    except Exception as exc:  # whatever zarr raises on metadata it cannot parse
        return [(where, f"cannot be read by zarr ({type(exc).__name__}: {exc})")]
    shape, dtype, chunks, fill = expected
    encoding = meta.get("chunk_key_encoding")
    checks = [("shape", tuple(array.shape) == shape, list(array.shape)),
              ("data_type", found_dtype == np.dtype(dtype), str(found_dtype)),
              ("chunk_grid", layout == chunks, list(layout)),
              ("chunk_key_encoding", encoding == {"name": "default", "configuration": {"separator": "/"}}, encoding),
              ("fill_value", bool(np.isnan(array.fill_value)) if isinstance(fill, float) else array.fill_value == fill,
               array.fill_value)]
    return [(f"{where} key {key!r}", f"is {found!r}, which contradicts the store's attributes")
            for key, good, found in checks if not good]


def metadata_damage(path):
    """``(attrs, [(key, what)])``: the attributes of the store ``path`` and every damage of its metadata."""
    attrs, damage = _root_damage(path)
    if damage or attrs is None:
        return attrs, damage
    for name, expected in _expected_arrays(attrs).items():
        damage += _array_damage(path, name, expected)
    return attrs, damage


def read_store_meta(path):
    """The checked attributes of the Gram store at ``path``; None when ``path`` holds no Gram store.

    Raises :class:`CorruptStoreError` naming the damaged keys (:func:`metadata_damage`).
    """
    from .._runtime.artifacts import artifact_kind

    if artifact_kind(path) != "gram":
        return None
    attrs, damage = metadata_damage(path)
    if damage:
        # A root zarr.json that cannot be read is never repaired in place (repair_metadata): say how to replace it.
        unreadable = damage[0][0] == "zarr.json" and _read_root(path)[0] is None
        raise metadata_error(path, damage, _UNREADABLE_ROOT if unreadable else None)
    return attrs


def not_a_store(path):
    """Why the existing ``path`` holds no Gram store, in words a user can act on."""
    if not os.path.isdir(path):
        return f"{path} is a file, not a dkernel Gram store."
    meta, error = _read_root(path)
    if meta is None and error != "is missing":
        # Nothing in it tells a Gram store any more (a wholly damaged zarr.json): it cannot be repaired.
        return (f"{path} is not a dkernel Gram store that can be read: its zarr.json {error}. If dkernel wrote it, its "
                f"metadata are lost and it cannot be repaired: compute the Gram again at another path, or remove this "
                f"folder first.")
    from .._runtime.artifacts import _describe, artifact_kind

    kind = artifact_kind(path)
    if kind is not None:
        return f"{path} holds {_describe(kind)}, not a dkernel Gram store."
    found = "has no zarr.json" if meta is None else f"has a zarr.json that names no '{STORE_FORMAT}' format"
    return f"{path} is not a dkernel Gram store (it {found})."


# --------------------------------------------------------------------------- #
# Repairing
# --------------------------------------------------------------------------- #


def _expected_attributes(requested, grid, options):
    """The attribute values a store of the ``requested`` attributes was created with, where they are determined."""
    expected = {key: requested[key] for key in ("kernel", "shape", "dtype", "chunks", "symmetric", "fingerprint",
                                                "provenance") if key in requested}
    expected.update({"format": STORE_FORMAT, "format_version": STORE_VERSION,
                     "n_blocks": [grid.n_row_blocks, grid.n_col_blocks],
                     "checksums": _Checksums.spec(options, requested["dtype"], grid)})
    return expected


def _restored(attrs, expected):
    """``(attrs restored, [keys that cannot be])`` from damaged ``attrs`` and the ``expected`` values.

    A value is restored when its CRC-32C is the recorded one: the value
    stored, a value found under a damaged (unknown) name, or the expected
    one. A value equal to the expected one is kept when what is damaged is
    its recorded checksum (or an older store recorded none), except for the
    attributes that name what the values are of (kernel, fingerprint,
    provenance): with a recorded checksum that neither the value nor the
    request has, the store cannot tell whether the value or its checksum is
    damaged, and no block checksum would catch a relabelled store.
    ``write_id`` is an identity only: kept as found.
    """
    sums = attrs.get("attribute_checksums")
    sums = {k: v for k, v in sums.items() if k in _KNOWN} if isinstance(sums, dict) else {}
    strays = [value for key, value in attrs.items() if key not in _KNOWN]
    restored = {key: attrs[key] for key in MUTABLE_ATTRIBUTES if key in attrs and key != "attribute_checksums"}
    lost = []
    for key in sorted((_KNOWN - set(MUTABLE_ATTRIBUTES)) & (set(sums) | set(attrs) | set(expected))):
        value, wanted, crc = attrs.get(key, _MISSING), expected.get(key, _MISSING), sums.get(key)
        if crc is not None:
            match = next((c for c in (value, *strays, wanted) if c is not _MISSING and json_crc32c(c) == crc), _MISSING)
        else:
            match = next((c for c in (value, *strays) if c is not _MISSING and c == wanted), _MISSING)
            if match is _MISSING and value is not _MISSING and wanted is _MISSING:
                match = value  # an attribute nothing determines (the identity, a view's description)
        if match is _MISSING and value is not _MISSING and (value == wanted or key == "write_id"):
            # What is damaged may be the recorded checksum, not the value: the value is kept, but not for an
            # attribute that names what the values are of (the request may name a damaged value).
            if crc is None or key not in _NAMING_ATTRIBUTES:
                match = value
        if match is not _MISSING:
            restored[key] = match
        elif crc is not None or value is not _MISSING or key not in ("provenance", "n_blocks", "write_id"):
            lost.append(key)
    restored["attribute_checksums"] = attribute_checksums(restored)
    return restored, lost


def _rewrite_json(path, document):
    """Replace the JSON file ``path`` in one step (named while written as zarr names its unfinished writes)."""
    partial = os.path.join(os.path.dirname(path), f"zarr.{uuid.uuid4().hex}.partial")
    with open(partial, "w", encoding="utf-8") as fh:
        json.dump(document, fh, indent=2, allow_nan=True)
    os.replace(partial, path)


def _expected_array_meta(name, attrs, options):
    """The ``zarr.json`` document of array ``name`` of a store of ``attrs``, as :func:`create_arrays` writes it."""
    grid = _BlockGrid(attrs["shape"], attrs["chunks"], attrs["symmetric"])
    sharded = attrs.get("format_version") != 1 and not (attrs.get("provenance") or {}).get("operators")
    with tempfile.TemporaryDirectory() as scratch:
        create_arrays(zarr.open_group(scratch, mode="w"), attrs["shape"], attrs["dtype"], grid, options,
                       sharded=sharded, checksums=attrs.get("checksums"))
        with open(os.path.join(scratch, name, "zarr.json"), encoding="utf-8") as fh:
            return json.load(fh)


def repair_metadata(path, requested, grid, options):
    """Repair the damaged metadata of the store ``path`` for a run that requests ``requested``; returns the keys.

    Raises :class:`CorruptStoreError` (naming the keys) when a damaged
    attribute cannot be restored with certainty, or the root ``zarr.json``
    cannot be read at all.
    """
    attrs, damage = _root_damage(path)
    repaired = [key for key, _ in damage]
    if damage:
        meta, _ = _read_root(path)
        if meta is None:
            raise metadata_error(path, damage, _UNREADABLE_ROOT)
        if attrs is None:  # the attributes under a damaged name
            found = [v for k, v in meta.items() if k not in _ROOT_KEYS and isinstance(v, dict)
                     and v.get("format") == STORE_FORMAT]
            attrs = found[0] if len(found) == 1 else {}
        attrs, lost = _restored(attrs, _expected_attributes(requested, grid, options))
        if lost:
            why = " (the store cannot tell which kernel its values are of)" if "kernel" in lost else ""
            raise metadata_error(path, damage, f"It cannot be repaired from this request: the recorded "
                                               f"{', '.join(lost)} cannot be restored with certainty{why}")
        _rewrite_json(os.path.join(path, "zarr.json"), {"attributes": attrs, "zarr_format": 3,
                                                        "node_type": "group"})
    _, damage = metadata_damage(path)
    if damage and not damage[0][0].startswith(("zarr.json", "attribute")):
        for name in sorted({key.split("/")[0] for key, _ in damage}):
            os.makedirs(os.path.join(path, name), exist_ok=True)
            _rewrite_json(os.path.join(path, name, "zarr.json"), _expected_array_meta(name, attrs, options))
        repaired += [key for key, _ in damage]
        _, damage = metadata_damage(path)
    if damage:
        raise metadata_error(path, damage, "It cannot be repaired in place")
    return repaired
