"""The Gram store format: layout, version, attributes, provenance and the data fingerprint.

Store layout (a zarr v3 group, format version 4)::

    K.zarr/
      zarr.json     attributes: kernel, shape, dtype, chunks, data fingerprint,
                    provenance (base kernel, data fingerprint, operator chain:
                    empty for a raw Gram), completeness summary, statistics
                    of the last run
      K/            the Gram matrix, one shard per block (fill value NaN); a
                    shard holds inner chunks of a few full-width rows
      done/         uint8 (n_row_blocks, n_col_blocks): 1 once a block is written
      diag/         the diagonal (K(X, X) only), written by the diagonal blocks
      checksums/    uint32 (n, n_col_blocks × segments per block): CRC-32C of
                    each row segment of each block, one chunk per block
      diag_checksums/  uint32 (n_row_blocks,): CRC-32C of each chunk of diag/

``K`` is a standard zarr v3 sharded array that any zarr reader opens. A store
derived from a Gram (``to_zarr`` of a lazy view) has one plain chunk per block
instead of a shard. Stores of format version 1 have one plain chunk per block
and no checksums; version 2 has shards and no checksums; version 3 has checksums that are the plain CRC-32C of
each row segment. From version 4 each stored checksum is that CRC XOR a key of the store's ``write_id``, the block
(i, j), the segment and the row (:mod:`dkernel.gram._checksums`): a block copied with its checksums from another
store, or from another place in this one, fails its checks as any damaged block does.

The attributes also hold the store's identity, ``write_id`` (random, given
when the store is created; see :mod:`dkernel.gram._identity`), the claim of
the run writing it (``writer``), and ``attribute_checksums``: the CRC-32C of
every attribute that does not change once the store is created
(:func:`attribute_checksums`), so that a damaged attribute is found, named
and repaired like a damaged block (:mod:`dkernel.gram._metadata`).

The provenance says what a store holds: the base kernel, the fingerprint of
the data (:func:`data_fingerprint`) and the chain of operators applied to the
raw Gram before it was stored (:func:`matrix_form`, :func:`describe_operators`).
"""

import contextlib
import hashlib
import json
import os

import numpy as np
import scipy.sparse as sp

from .._runtime.integrity import json_crc32c
from ..kernels._kernels import describe_kernel

__all__ = [
    "STORE_FORMAT",
    "STORE_VERSION",
    "CHECKSUMMED_VERSIONS",
    "KEYED_CHECKSUMS_VERSION",
    "data_fingerprint",
    "describe_operators",
    "describe_step",
    "matrix_form",
    "store_size_bytes",
]

STORE_FORMAT = "dkernel-gram"
#: 4: row checksums keyed by the store's identity and each block's place; 3: row checksums (``checksums/``); 2: one
#: shard per block; 1: one plain chunk per block.
STORE_VERSION = 4
#: The versions whose rows carry checksums (each read verified), and the first whose checksums are keyed.
CHECKSUMMED_VERSIONS = (3, 4)
KEYED_CHECKSUMS_VERSION = 4

_FINGERPRINT_ROWS = 65536
# Block task arrays are written with empty-chunk detection off: a chunk of zeros
# is still written, so "chunk present" and "block computed" never disagree, and
# the per-chunk scan for the fill value is skipped.
_ARRAY_CONFIG = {"write_empty_chunks": True}


def data_fingerprint(X):
    """SHA-256 of a data matrix: shape, dtype and values (CSR: data, indices, indptr).

    Dense arrays are hashed in row blocks without copying. Two matrices with
    the same fingerprint hold the same values in the same dtype.
    """
    h = hashlib.sha256()
    h.update(f"{type(X).__name__}:{X.shape}:{np.dtype(X.dtype).str}".encode())
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        for part in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(part).data)
    else:
        X = np.ascontiguousarray(X)
        for start in range(0, X.shape[0], _FINGERPRINT_ROWS):
            h.update(X[start : start + _FINGERPRINT_ROWS].data)
    return "sha256:" + h.hexdigest()


def store_size_bytes(path):
    """Bytes on disk under a store folder."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def _remove_chunk(path, name, array, coords):
    """Delete the stored chunk (or shard) ``coords`` of array ``name`` of the store at ``path``, if present.

    A block is rewritten in full: a damaged chunk must not be read back by a
    partial-chunk write (zarr reads the chunk to update part of it).
    """
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(path, name, *array.metadata.encode_chunk_key(tuple(coords)).split("/")))


#: Attributes that change while a store is written (statistics, the writer's claim): not checksummed.
MUTABLE_ATTRIBUTES = ("blocks_done", "last_run", "writer", "attribute_checksums")


def attribute_checksums(attrs):
    """``{name: CRC-32C}`` of the attributes of a store that never change once it is created."""
    return {key: json_crc32c(value) for key, value in attrs.items() if key not in MUTABLE_ATTRIBUTES}


def _read_root(path):
    """``(metadata, error)`` of the root ``zarr.json`` of the folder ``path``: the parsed document, or why not."""
    try:
        with open(os.path.join(path, "zarr.json"), "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None, "is missing"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:  # in words: a user cannot act on Python's "'utf-8' codec can't decode"
        return None, f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    except json.JSONDecodeError as exc:
        return None, (f"is not complete JSON, truncated or altered (unreadable from line {exc.lineno}, column "
                      f"{exc.colno})")
    except ValueError:
        return None, "is not complete JSON, truncated or altered"
    if not isinstance(meta, dict):
        return None, "is not a JSON object"
    return meta, None


def _read_meta(path):
    """The attributes of the Gram store at ``path`` as they are (not checked), or None if it names no Gram store."""
    meta, _ = _read_root(path)
    attrs = (meta or {}).get("attributes")
    if not isinstance(attrs, dict) or attrs.get("format") != STORE_FORMAT:
        return None
    return dict(attrs)


def _mismatches(stored, meta):
    diffs = []
    if stored.get("kernel") != meta["kernel"]:
        spec = stored.get("kernel")
        text = describe_kernel(spec) if isinstance(spec, dict) else repr(spec)
        diffs.append(f"kernel (store: {text}, "
                     f"requested: {describe_kernel(meta['kernel'])})")
    if stored.get("symmetric") != meta["symmetric"]:
        diffs.append("form (store: {}, requested: {})".format(
            *("K(X, X)" if s else "K(X, Z)" for s in (stored.get("symmetric"), meta["symmetric"]))))
    if stored.get("shape") != meta["shape"]:
        diffs.append(f"shape (store: {stored.get('shape')}, requested: {meta['shape']})")
    if stored.get("dtype") != meta["dtype"]:
        diffs.append(f"dtype (store: {stored.get('dtype')}, requested: {meta['dtype']})")
    if stored.get("chunks") != meta["chunks"]:
        diffs.append(f"chunks (store: {stored.get('chunks')}, requested: {meta['chunks']})")
    fp, req = stored.get("fingerprint"), meta["fingerprint"]
    fp = fp if isinstance(fp, dict) else {}
    for name in ("X", "Z"):
        if fp.get(name) != req[name]:
            diffs.append(f"data {name} (fingerprint store: {str(fp.get(name))[:19]}…, "
                         f"requested: {str(req[name])[:19]}…)")
    stored_ops = _provenance_of(stored)["operators"]
    requested_ops = meta.get("provenance", {}).get("operators", [])
    if stored_ops != requested_ops:
        diffs.append(f"operators (store: {describe_operators(stored_ops)}; "
                     f"requested: {describe_operators(requested_ops)})")
    return diffs


def _provenance_of(attrs):
    """The provenance of a store from its attributes: base kernel, data fingerprint, operator chain.

    Stores written before the ``provenance`` attribute existed are read from
    their ``kernel``, ``fingerprint`` and (derived stores) ``operator``
    attributes.
    """
    provenance = attrs.get("provenance")
    if isinstance(provenance, dict) and "operators" in provenance:
        return provenance
    operators = []
    if attrs.get("operator"):
        operators = steps_from_description(attrs["operator"])
    return {"kernel": attrs.get("kernel"), "fingerprint": attrs.get("fingerprint"), "operators": operators}


def weights_fingerprint(origin):
    """SHA-256 of an origin's weights: ``n``, the support indices and the weights (float64).

    ``origin`` is a :class:`~dkernel.centering.Centering` (or anything with
    its ``n``, ``indices`` and ``weights``). Two origins with the same
    fingerprint define the same ``a = Σ γ_i φ(x_i)`` on the same points
    (Meilă eq. 13 and its variants).
    """
    h = hashlib.sha256()
    h.update(f"centering:{int(origin.n)}:".encode())
    indices = origin.indices
    h.update(b"all" if indices is None else np.ascontiguousarray(indices, dtype="<i8").tobytes())
    h.update(b":")
    h.update(np.ascontiguousarray(origin.weights, dtype="<f8").tobytes())
    return "sha256:" + h.hexdigest()


def origin_step(name, origin, h0, length=None):
    """The provenance step of a centering (``name="centered"``) or a shift (``"shifted"``) by ``origin``."""
    step = {"name": name}
    if name != "shifted":
        step["scheme"] = origin.scheme
    else:
        step["length"] = float(length)
    n_support = int(origin.n) if origin.indices is None else len(origin.indices)
    step.update({"n": int(origin.n), "n_support": n_support, "weights": weights_fingerprint(origin), "h0": float(h0)})
    return step


class _RecordedOrigin:
    """An origin as a view's ``describe()`` dict recorded it (``n``, ``weights``, ``indices``, ``scheme``)."""

    def __init__(self, spec):
        indices = spec.get("indices")
        self.n = int(spec["n"])
        self.weights = np.asarray(spec["weights"], dtype=np.float64)
        self.indices = None if indices is None else np.asarray(indices, dtype=np.intp)
        self.scheme = spec.get("scheme", "user")


def steps_from_description(description):
    """The operator chain of a view from its ``describe()`` dict (how older derived stores recorded it)."""
    if not isinstance(description, dict):
        return []
    name = description.get("name")
    base = description.get("base")
    if name in ("centered", "shifted"):
        origin = _RecordedOrigin(description["centering"])
        step = origin_step(name, origin, description.get("h0", float("nan")), description.get("length"))
    elif name == "normalized":
        step = {"name": "normalized"}
    else:
        return list(description.get("operators") or [])
    return steps_from_description(base) + [step]


def describe_step(step, full=False):
    """One operator step in words: ``centered (origin class-balanced on 120 of 120 points, weights sha256:…)``.

    ``full`` gives the whole weights fingerprint instead of its first characters.
    """
    name = step.get("name", "?")
    details = []
    if step.get("scheme"):
        origin = f"origin {step['scheme']}"
        if step.get("n_support") is not None and step.get("n") is not None:
            origin += f" on {step['n_support']} of {step['n']} points"
        details.append(origin)
    if step.get("length") is not None:
        details.append(f"|a| = {step['length']:g}")
    if step.get("weights"):
        details.append(f"weights {step['weights']}" if full else f"weights {str(step['weights'])[:19]}…")
    return name + (f" ({', '.join(details)})" if details else "")


def describe_operators(operators):
    """One line for an operator chain, innermost first: ``centered (...) then normalized``; ``none`` if raw."""
    if not operators:
        return "none (a raw Gram)"
    return " then ".join(describe_step(step) for step in operators)


def matrix_form(operators, symmetric=True):
    """The matrix a store holds: ``K(X, X)`` for a raw Gram, ``normalized(centered(K(X, X)))`` for a derived one."""
    form = "K(X, X)" if symmetric else "K(X, Z)"
    for step in operators:
        form = f"{step.get('name', '?')}({form})"
    return form
