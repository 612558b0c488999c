"""The attributes of a Gram store's root ``zarr.json``: those a store may hold, those that are damaged, and those
whose values are certain (:func:`trusted_attributes`: what a repair hint may quote)."""

import os

from .._runtime.integrity import json_crc32c
from ..kernels._kernels import kernel_from_dict
from ._format import CHECKSUMMED_VERSIONS, MUTABLE_ATTRIBUTES, STORE_FORMAT, STORE_VERSION, _read_root

__all__ = ["trusted_attributes"]

_ROOT_KEYS = {"attributes", "zarr_format", "node_type", "consolidated_metadata"}
#: Every attribute a Gram store may hold.
_KNOWN = {"format", "format_version", "kernel", "shape", "dtype", "chunks", "symmetric", "fingerprint", "provenance",
          "operator", "n_blocks", "checksums", "write_id", *MUTABLE_ATTRIBUTES}
_MISSING = object()


def _pair(value):
    return isinstance(value, list) and len(value) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)


def _attribute_damage(attrs, has_checksum_array):
    """``[(key, what)]``: the attributes of a store that are damaged, missing or unknown."""
    damage = []
    sums = attrs.get("attribute_checksums")
    if sums is not None or "write_id" in attrs:
        if not isinstance(sums, dict) or not all(isinstance(v, int) for v in sums.values()):
            damage.append(("attribute 'attribute_checksums'", "is missing or not a table of checksums"))
            sums = {}
        for key, crc in sums.items():
            if key not in attrs:
                damage.append((f"attribute {key!r}", "is missing"))
            elif json_crc32c(attrs[key]) != crc:
                damage.append((f"attribute {key!r}", "does not match its checksum"))
        for key in attrs:
            if key not in sums and key not in MUTABLE_ATTRIBUTES:
                damage.append((f"attribute {key!r}", "is unknown (not recorded when the store was written)"))
        if damage:
            return damage
    version = attrs.get("format_version")
    if version not in (1, 2, *CHECKSUMMED_VERSIONS):
        return [("attribute 'format_version'", f"is {version!r}, not a format version this dkernel reads (1 to "
                                              f"{STORE_VERSION})")]
    spec = attrs.get("checksums")
    if version in CHECKSUMMED_VERSIONS or has_checksum_array or spec is not None:
        if version not in CHECKSUMMED_VERSIONS:
            damage.append(("attribute 'format_version'", f"is {version}, a version without checksums, but the store "
                                                         f"holds checksums"))
        if not (isinstance(spec, dict) and spec.get("algorithm") == "crc32c" and set(spec) == {
                "algorithm", "segment_columns"} and isinstance(spec.get("segment_columns"), int)
                and spec["segment_columns"] > 0):
            damage.append(("attribute 'checksums'", f"is {spec!r}, not a checksum spec (crc32c, segment_columns)"))
    for key, valid in (("shape", _pair(attrs.get("shape"))), ("chunks", _pair(attrs.get("chunks"))),
                       ("symmetric", isinstance(attrs.get("symmetric"), bool)),
                       ("dtype", attrs.get("dtype") in ("float32", "float64")),
                       ("fingerprint", isinstance(attrs.get("fingerprint"), dict))):
        if not valid:
            damage.append((f"attribute {key!r}", f"is {attrs.get(key, 'missing')!r}, not a valid {key}"))
    try:
        kernel_from_dict(attrs.get("kernel"))
    except Exception as exc:  # any damage of the spec: a KeyError, TypeError, an unknown kernel name
        damage.append(("attribute 'kernel'", f"cannot be read ({type(exc).__name__}: {exc})"))
    return damage


def trusted_attributes(path):
    """The attributes of the store ``path`` whose values are certain: none of them read from a damaged attribute.

    Where the store records the checksums of its attributes, an attribute is
    certain when its value (or a value found under a damaged name) has the
    recorded checksum; else (a store written before them, or a damaged
    table of checksums) every attribute not named damaged by the checks of
    :func:`read_store_meta`. The attributes that change while a store is
    written are kept as they are. None when the root ``zarr.json`` cannot be
    read (nothing is known of the store).
    """
    meta, _ = _read_root(path)
    if meta is None:
        return None
    attrs = meta.get("attributes")
    if not isinstance(attrs, dict):  # the attributes under a damaged name, as repair_metadata finds them
        found = [v for k, v in meta.items() if k not in _ROOT_KEYS and isinstance(v, dict)
                 and v.get("format") == STORE_FORMAT]
        attrs = found[0] if len(found) == 1 else {}
    sums = attrs.get("attribute_checksums")
    certain = {key: attrs[key] for key in MUTABLE_ATTRIBUTES if key in attrs and key != "attribute_checksums"}
    if isinstance(sums, dict) and sums and all(isinstance(v, int) for v in sums.values()):
        strays = [value for key, value in attrs.items() if key not in _KNOWN]
        for key, crc in sums.items():
            if key not in _KNOWN or key in MUTABLE_ATTRIBUTES:
                continue
            match = next((c for c in (attrs.get(key, _MISSING), *strays)
                          if c is not _MISSING and json_crc32c(c) == crc), _MISSING)
            if match is not _MISSING:
                certain[key] = match
        return certain
    damaged = {name for name, _ in _attribute_damage(attrs, os.path.isdir(os.path.join(path, "checksums")))}
    certain.update({key: value for key, value in attrs.items() if key in _KNOWN and key not in MUTABLE_ATTRIBUTES
                    and f"attribute {key!r}" not in damaged})
    return certain
