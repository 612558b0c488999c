"""The CRC-32C checksums of what dkernel writes: of bytes, of an array's values, of a JSON record.

One definition for every on-disk format that records them (model files, solver checkpoints, their manifests at a
URL, pipeline task records): a value written by one dkernel is verified by another, so what these functions
compute is part of those formats and must never change.
"""

import json

import google_crc32c
import numpy as np

__all__ = ["array_crc32c", "bytes_crc32c", "json_crc32c"]


def bytes_crc32c(data):
    """The CRC-32C of ``data`` (bytes or any buffer), as an ``int``."""
    return int(google_crc32c.value(bytes(data)))


def array_crc32c(value):
    """The CRC-32C of the values of the array ``value``: its elements little-endian, in C order.

    Independent of how the array is held: a big-endian, Fortran-ordered or sliced array has the checksum of the
    little-endian C-ordered copy of its values.
    """
    a = np.ascontiguousarray(value)
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return int(google_crc32c.value(a.reshape(-1).view(np.uint8)))


def json_crc32c(obj, *, leave_out=None, within=None):
    """The CRC-32C of ``obj`` as canonical JSON: keys sorted, separators ``(",", ":")``, ASCII (non-ASCII escaped).

    A record that holds its own checksum names it with ``leave_out``: the key left out of ``obj`` itself, or, with
    ``within``, of the mapping ``obj[within]`` (a model's ``attrs["checksums"]["metadata"]`` is
    ``leave_out="metadata", within="checksums"``). ``obj`` is not changed.
    """
    if within is not None:
        obj = {**obj, within: {k: v for k, v in obj[within].items() if k != leave_out}}
    elif leave_out is not None:
        obj = {k: v for k, v in obj.items() if k != leave_out}
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return int(google_crc32c.value(text.encode("ascii")))
