"""Solver checkpoints at an object-store URL (``s3://bucket/fit.ckpt``, any fsspec URL): written without rename.

A local checkpoint (:mod:`._checkpoint`) is written beside its folder and renamed in. An object store has no
rename, so a checkpoint at a URL is a set of states and a small manifest that names the current one, with the
helpers of every artifact at a URL (:mod:`dkernel._runtime.object_store`)::

    s3://bucket/fit.ckpt/
        dkernel.json            an estimator's checkpoint: {"format", "problems": n}
        problem-k/              the checkpoint of binary problem k (of one solver run when given to solve_qp):
            dkernel.json        the manifest: the state's version, its attributes (iteration, stop reason, ...),
                                the fingerprint of its problem and the CRC-32C of its state object. Written last.
            v-<write id>/state.npz    one state: alpha, G, kept, kept_slots, (version 3) active, held and
                                upper_sums, and the fingerprint's kernel values.

A write puts the state under a fresh ``v-<id>/`` key, then the manifest (one PUT: the commit), and only then
removes the states the manifest no longer names, so a process killed at any point leaves the previous state
committed and readable. The manifest records its own CRC-32C too (``metadata``: of the manifest as canonical JSON,
keys sorted, this one number left out). A read checks the manifest against it, then takes the state the manifest
names and checks it against its CRC-32C, then checks the values themselves as a local checkpoint's are
(:func:`._checkpoint.check_values`): an edited manifest, a changed, truncated or missing object raises
:class:`~dkernel.exceptions.CorruptStoreError`, never gives values. A manifest of version 1, written before it
recorded its own checksum, is read with an :class:`~dkernel.exceptions.UnverifiedStoreWarning` (its state object is
still checked against its CRC-32C). As for a
local checkpoint, one of another problem is refused with an error naming what differs and left as it is, and a
prefix holding anything dkernel did not write there (or another artifact: a Gram store, a model) is refused and
left as it is. Storage options (credentials) are used for the transfers only, never written.
"""

import dataclasses
import io
import json
import re
import uuid

import numpy as np

from .._runtime.integrity import bytes_crc32c, json_crc32c
from .._runtime.object_store import (
    MANIFEST,
    check_ours,
    entries,
    filesystem,
    put_json,
    read_json,
)
from ._bias import intercept_to_json
from ._checkpoint_state import shrinking_arrays

__all__ = ["checkpoint_at", "problem_checkpoints_url", "read_state_url", "write_state_url"]

FORMAT = "dkernel-checkpoint-versioned"
STATE = "state.npz"
_WHAT = "a dkernel solver checkpoint"
_ENTRIES = re.compile(r"^(v-[0-9a-f]{32}|problem-\d+)$")
_ARRAYS = ("alpha", "G", "kept", "kept_slots")


def _open(url, storage_options):
    url = url.rstrip("/")
    fs, root = filesystem(url, storage_options)
    _, manifest = check_ours(url, fs, root, FORMAT, _WHAT, names_of_ours=_ENTRIES)
    return url, fs, root, manifest


def problem_checkpoints_url(checkpoint, n_problems):
    """``(found, checkpoints)``: the number of binary problems the checkpoint at the URL ``checkpoint.path`` was
    started for (None: one solver run; ``n_problems`` when it is started now) and the checkpoints of the
    ``n_problems`` problems under it (as :func:`dkernel.svm._training.problem_checkpoints` for a folder, which
    refuses another count)."""
    url, fs, root, manifest = _open(checkpoint.path, checkpoint.storage_options)
    if manifest:
        found = manifest.get("problems")
    else:
        put_json(fs, f"{root}/{MANIFEST}", {"format": FORMAT, "problems": n_problems})
        found = n_problems
    return found, [dataclasses.replace(checkpoint, path=f"{url}/problem-{k}") for k in range(n_problems)]


def checkpoint_at(url, storage_options):
    """``(found, saved)``: whether a checkpoint is at ``url``, and whether it holds a committed state; a prefix that
    holds anything else is refused (:class:`~dkernel.exceptions.ArtifactPathError`)."""
    url, fs, root, manifest = _open(url, storage_options)
    if not manifest:
        return False, False
    if "problems" not in manifest:
        return True, True
    return True, any(read_json(fs, f"{root}/problem-{k}/{MANIFEST}") for k in range(int(manifest["problems"])))


def read_state_url(url, fingerprint, storage_options, differences, state_class, bounds=None):
    """The state committed at ``url`` for the problem ``fingerprint`` (None when there is none), its manifest and its
    state object checked against their CRC-32C and its values against ``bounds`` (:func:`._checkpoint.read_state`);
    ``differences`` names what differs from another problem (:func:`._checkpoint._differences`)."""
    from ._checkpoint_state import (
        check_kernel_shapes,
        check_values,
        check_version,
        damaged,
        state_arrays,
        state_from,
        unverified,
    )

    url, fs, root, manifest = _open(url, storage_options)
    if not manifest:
        return None
    if "problems" in manifest:
        raise ValueError(f"{url} holds the checkpoints of an estimator's {manifest['problems']} binary problems, "
                         f"not the checkpoint of one solver run; pass the estimator the same checkpoint URL.")
    outer = _outer_checkpoint(url, fs, root)
    if "metadata" in manifest and manifest["metadata"] != json_crc32c(manifest, leave_out="metadata"):
        raise damaged(url, f"its manifest ({MANIFEST}) does not match its checksum: edited or altered", outer)
    if not check_version(url, manifest.get("checkpoint_version"), "metadata" in manifest, outer):
        # Its state object is checked against its CRC-32C below, as every version's.
        unverified(url, f"its manifest ({MANIFEST}: the iteration, stop reason and intercept)")
    name = f"{manifest.get('version')}/{STATE}"
    try:
        data = fs.cat_file(f"{root}/{name}")
    except FileNotFoundError:
        data = None
    if data is None or bytes_crc32c(data) != manifest.get("crc"):
        raise damaged(url, f"its state object {name} is "
                           f"{'missing' if data is None else 'changed or truncated (it does not match its checksum)'}",
                      outer)
    names = (*state_arrays(manifest.get("checkpoint_version")), *fingerprint[1])
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as stored:
            arrays = {key: stored[key] for key in names}
    except Exception as exc:  # noqa: BLE001 (an object that matches its checksum but is no state: written wrong)
        raise damaged(url, f"its state object {name} cannot be read ({type(exc).__name__}: {exc})", outer) from exc
    check_kernel_shapes(url, manifest.get("problem"), arrays, fingerprint, outer)
    found = differences(url, manifest.get("problem", {}), {k: arrays[k] for k in fingerprint[1]}, *fingerprint)
    if found:
        raise ValueError(
            f"the checkpoint at {url} was written for another problem; these differ: {', '.join(found)}. It is "
            f"left as it is; resume with the same data and parameters, or choose another checkpoint URL."
        )
    return check_values(url, state_from(url, manifest, arrays, outer), fingerprint, bounds, outer)


def _outer_checkpoint(url, fs, root):
    """The URL of the estimator's checkpoint holding the problem checkpoint ``url`` (its ``problem-K``), or None."""
    parent, _, name = root.rpartition("/")
    if not re.match(r"^problem-\d+$", name):
        return None
    try:
        manifest = read_json(fs, f"{parent}/{MANIFEST}")
    except Exception:  # noqa: BLE001 (only the wording of an error depends on it)
        return None
    if isinstance(manifest, dict) and manifest.get("format") == FORMAT and "problems" in manifest:
        return url.rpartition("/")[0]
    return None


def write_state_url(url, fingerprint, state, storage_options, version):
    """Write ``state`` at ``url``: a new state object, then the manifest naming it (with its own checksum), then the
    older states removed."""
    url, fs, root, manifest = _open(url, storage_options)
    if manifest and "problems" in manifest:
        raise ValueError(f"{url} holds the checkpoints of an estimator's binary problems; it is left as it is.")
    attrs, kernel = fingerprint
    buffer = io.BytesIO()
    np.savez(buffer, alpha=np.asarray(state.alpha), G=np.asarray(state.G),
             kept=np.asarray(state.kept, dtype=np.int64), kept_slots=np.asarray(state.kept_slots, dtype=np.int64),
             **shrinking_arrays(state), **{k: np.asarray(v) for k, v in kernel.items()})
    data = buffer.getvalue()
    write_id = uuid.uuid4().hex
    name = f"v-{write_id}"
    fs.pipe_file(f"{root}/{name}/{STATE}", data)
    committed = json.loads(json.dumps({
        "format": FORMAT, "version": name, "write_id": write_id, "checkpoint_version": version, "problem": attrs,
        "iteration": int(state.iteration), "n_kernel_rows": int(state.n_kernel_rows),
        "stop_reason": state.stop_reason, "gap": None if state.gap is None else float(state.gap),
        "intercept": intercept_to_json(state.intercept), "crc": bytes_crc32c(data),
    }))
    committed["metadata"] = json_crc32c(committed, leave_out="metadata")
    put_json(fs, f"{root}/{MANIFEST}", committed)
    # A checkpoint has one writer: every state but the committed one (the previous, one a killed write left) goes.
    for old in entries(fs, root):
        if old.startswith("v-") and old != name:
            fs.rm(f"{root}/{old}", recursive=True)
