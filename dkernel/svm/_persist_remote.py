"""Models at an object-store URL (``s3://bucket/model``, any fsspec URL): written without rename.

A model at a URL is the model folder of :mod:`._persist` (zarr + JSON, its arrays and attributes with their
checksums) kept under a versioned prefix and committed by a manifest, as a Gram store at a URL
(:mod:`dkernel.gram._remote`; the helpers of :mod:`dkernel._runtime.object_store`)::

    s3://bucket/model/
        dkernel.json        the manifest: the committed version, the model's format, the metadata checksum of its
                            attributes and the CRC-32C of every object of the version. Written last.
        v-<write id>/       one version: the model's zarr group, exactly as a local model folder holds it.

A save writes the model into a fresh ``v-<id>/`` prefix, then puts the manifest (one PUT: the commit), then removes
the version it replaced. A load reads the manifest, fetches the objects it names, checks each against its CRC-32C
(a changed, truncated or missing object raises :class:`~dkernel.exceptions.CorruptModelError` naming it), then
reads the model with every check of :func:`._persist.read_model`. ``overwrite`` replaces only a model of the same
format; a prefix holding anything else (a Gram store, objects dkernel did not write) is refused and left as it is.
Storage options (credentials) are used for the transfers only, never written.
"""

import os
import tempfile
import uuid

from .._runtime.integrity import bytes_crc32c
from .._runtime.object_store import (
    GRAM_FORMAT,
    MANIFEST,
    check_ours,
    filesystem,
    is_url,
    put_json,
    read_json,
)
from ..exceptions import ArtifactPathError, CorruptModelError, ModelFormatError
from . import _persist

__all__ = ["FORMAT", "check_model_url", "load_model", "read_model", "save_model"]

FORMAT = "dkernel-model-versioned"


def save_model(model, path, overwrite=False, storage_options=None):
    """Write ``model`` to the folder or URL ``path`` (:func:`._persist.save_model` for a folder); return where."""
    if is_url(path):
        return save_model_url(model, path, overwrite, storage_options)
    return _persist.save_model(model, path, overwrite)


def read_model(path, estimator_class=None, storage_options=None):
    """The model at the folder or URL ``path`` (:func:`._persist.read_model` for a folder)."""
    if is_url(path):
        return read_model_url(path, estimator_class, storage_options)
    return _persist.read_model(path, estimator_class)


def load_model(path, storage_options=None):
    """The estimator saved at ``path`` by its ``save`` (SVC, ConformalSVC, ...), its data verified first.

    ``path`` is a model folder, or an fsspec URL (``s3://bucket/model``) with its ``storage_options``.

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    CorruptModelError
        The model is damaged (its arrays or metadata do not match their checksums, an object or file is missing or
        cannot be decoded), or ``path`` holds no dkernel model.
    """
    return read_model(path, storage_options=storage_options)


def check_model_url(url, kind, overwrite, storage_options):
    """Raise :class:`ArtifactPathError` unless a model of artifact ``kind`` may be saved at ``url``; return
    ``(fs, root, manifest)`` (the manifest of the model it replaces, or None)."""
    name, description = _persist.artifacts.KINDS[kind]
    url = url.rstrip("/")
    fs, root = filesystem(url, storage_options)
    _, manifest = check_ours(url, fs, root, FORMAT, "a dkernel model")
    if manifest:
        if manifest.get("model") != name:
            held = next((d for n, d in _persist.artifacts.KINDS.values() if n == manifest.get("model")),
                        f"a model of format {manifest.get('model')!r}")
            raise ArtifactPathError(f"{url} holds {held}, not {description}; it is never replaced. Choose "
                                    f"another URL.")
        if not overwrite:
            raise ArtifactPathError(f"{url} holds {description} already; pass overwrite=True to replace it "
                                    f"(CLI: --overwrite).")
    return fs, root, manifest


def save_model_url(model, url, overwrite, storage_options):
    """Write the fitted ``model`` at ``url`` by the versioned protocol above; return the URL."""
    import zarr

    tree = _persist._state_tree(model)  # taken apart before anything is written, as a local save
    fmt = tree[0]
    url = url.rstrip("/")
    fs, root, manifest = check_model_url(url, fmt.kind, overwrite, storage_options)
    write_id = uuid.uuid4().hex
    version = f"v-{write_id}"
    files = {}
    with tempfile.TemporaryDirectory(prefix="dkernel-model-") as tmp:
        local = os.path.join(tmp, "model")
        metadata = _persist._write(zarr.open_group(local, mode="w"), tree)
        for folder, _, names in os.walk(local):
            for name in names:
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, local).replace(os.sep, "/")
                with open(path, "rb") as fh:
                    files[rel] = bytes_crc32c(fh.read())
                fs.put_file(path, f"{root}/{version}/{rel}")
    put_json(fs, f"{root}/{MANIFEST}", {"format": FORMAT, "model": fmt.name, "version": version,
                                         "write_id": write_id, "metadata": metadata, "objects": files})
    if manifest and manifest.get("version") not in (None, version):
        now = read_json(fs, f"{root}/{MANIFEST}")
        if now and now.get("write_id") == write_id:  # removed only by the save whose commit replaced it
            fs.rm(f"{root}/{manifest['version']}", recursive=True)
    return url


def _manifest(url, fs, root):
    manifest = read_json(fs, f"{root}/{MANIFEST}")
    if manifest is None:
        if not fs.exists(root):
            raise FileNotFoundError(f"no model at {url}.")
        raise _persist._not_a_model(url, f"the prefix has no {MANIFEST}")
    if manifest.get("format") == GRAM_FORMAT:
        raise _persist._not_a_model(url, "it holds a Gram store")
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("objects"), dict):
        raise _persist._not_a_model(url, f"its {MANIFEST} is not the manifest of a dkernel model")
    return manifest


def read_model_url(url, estimator_class, storage_options):
    """The model committed at ``url``, every object checked against the manifest, then read as a local model."""
    url = url.rstrip("/")
    fs, root = filesystem(url, storage_options)
    manifest = _manifest(url, fs, root)
    version = manifest["version"]
    with tempfile.TemporaryDirectory(prefix="dkernel-model-") as tmp:
        local = os.path.join(tmp, "model")
        for rel, crc in sorted(manifest["objects"].items()):
            try:
                data = fs.cat_file(f"{root}/{version}/{rel}")
            except FileNotFoundError:
                raise _persist._damaged(url, None, f"the object {version}/{rel} is missing") from None
            if bytes_crc32c(data) != crc:
                raise _persist._damaged(url, None, f"the object {version}/{rel} does not match its checksum "
                                                   f"(changed or truncated)")
            path = os.path.join(local, *rel.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        try:
            model = _persist.read_model(local, estimator_class)
        except CorruptModelError as exc:
            detail = (exc.detail or "").replace(local, url)
            raise _persist._damaged(url, None, detail) from None
        except ModelFormatError as exc:
            raise ModelFormatError(str(exc).replace(local, url)) from None
    return model
