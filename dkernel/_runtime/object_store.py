"""Objects at an fsspec URL (``s3://bucket/prefix``): the filesystem, JSON objects, the manifest rule of ownership.

An object store has no rename, so dkernel's artifacts there (Gram stores,
models, checkpoints) share one protocol: each write goes under a fresh
version prefix ``v-<32 hex digits>/`` and is committed by a small manifest,
``dkernel.json``, written last; a reader opens only what a manifest names. A
prefix belongs to dkernel when it holds nothing but that manifest and version
folders (:func:`check_ours`), and each artifact's manifest names its format.
The Gram-store side of the protocol is :mod:`dkernel.gram._remote`; models
:mod:`dkernel.svm._persist_remote`; checkpoints :mod:`dkernel.solver._checkpoint_remote`.
"""

import json
import re

from ..exceptions import ArtifactPathError

__all__ = ["GRAM_FORMAT", "MANIFEST", "VERSION", "check_ours", "entries", "filesystem", "is_url", "put_json", "read_json"]

MANIFEST = "dkernel.json"
#: The format a Gram store's manifest names (:mod:`dkernel.gram._remote`); models and checkpoints refuse it.
GRAM_FORMAT = "dkernel-gram-versioned"
#: The name of a version folder.
VERSION = re.compile(r"^v-[0-9a-f]{32}$")


def is_url(store):
    """Whether ``store`` is a URL of an fsspec filesystem (``s3://...``); local paths, ``file://`` excluded."""
    if not isinstance(store, str) or "://" not in store:
        return False
    return not store.startswith("file://")


def filesystem(url, storage_options):
    """``(fs, root)``: the fsspec filesystem of ``url`` and the path under it, without a trailing slash."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
    return fs, root.rstrip("/")


def read_json(fs, path):
    """The JSON object at ``path``; None where there is none, ``{}`` where it is not JSON."""
    try:
        return json.loads(fs.cat_file(path))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        return {}


def put_json(fs, path, obj):
    fs.pipe_file(path, json.dumps(obj, sort_keys=True).encode())


def entries(fs, root):
    """The names directly under ``root`` (empty when nothing is there)."""
    try:
        fs.invalidate_cache(root)
        return sorted({p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)})
    except FileNotFoundError:
        return []


def check_ours(url, fs, root, fmt, what, names_of_ours=VERSION):
    """``(names, manifest)`` under ``root``; raise :class:`ArtifactPathError` when it holds anything dkernel did not
    write there as ``fmt`` (``what`` names that artifact in the message), whose folders match ``names_of_ours``."""
    names = entries(fs, root)
    foreign = [n for n in names if n != MANIFEST and not names_of_ours.match(n)]
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise ArtifactPathError(
            f"store {url}: the prefix holds objects dkernel did not write ({shown}); it is never replaced, "
            f"with or without overwrite. Choose another prefix."
        )
    manifest = read_json(fs, f"{root}/{MANIFEST}") if MANIFEST in names else None
    if MANIFEST in names and (not manifest or manifest.get("format") != fmt):
        raise ArtifactPathError(f"{url}: {MANIFEST} there is not the manifest of {what}; it is never replaced.")
    return names, manifest
