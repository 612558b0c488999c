"""Checkpoints of the solver: its state on disk, written safely, and the fingerprint that makes a wrong resume an error.

A checkpoint is a zarr group (``format: "dkernel-checkpoint"``) holding the
state of the outer loop at the start of an iteration:

* ``alpha`` and ``G = Q alpha + p`` (as they are, so that a resumed run
  continues on the same path as an uninterrupted one);
* ``kept`` and ``kept_slots``: the half of the last working set kept for the
  next one and the buffer slots its kernel rows held;
* (version 3) the shrinking state: ``active`` (the active set's mask),
  ``held`` (the variable whose row each working-set slot holds) and
  ``upper_sums`` (libsvm's ``G_bar`` as the run accumulated it), ``G`` then
  being the gradient as the loop holds it (stale over the shrunk variables).
  Writing a checkpoint only reads the loop's state: a fit that writes
  checkpoints takes the path of one that writes none, and a resume restores
  all the next iterations depend on (:data:`._checkpoint_state.SHRINKING_ARRAYS`);
* the attributes ``iteration`` and ``n_kernel_rows``, and, once the loop has
  stopped, ``stop_reason``, ``gap`` and ``intercept``;
* the fingerprint of the problem: ``n``, ``q``, ``tol``, ``shrinking``,
  digests of ``y``, ``C`` and ``p``, and the kernel's diagonal and three of
  its rows (compared with a relative tolerance of 1e-9, so that the same Gram
  held another way, in memory, in a store or on the fly, still matches).

It is written into a folder beside its path and moved into place when
complete (:func:`dkernel._runtime.artifacts.writing`), so a process killed while
writing leaves the previous checkpoint readable. A checkpoint of another
problem is refused with an error naming what differs; it is never
overwritten or deleted. At an fsspec URL (``s3://bucket/fit.ckpt``) a
checkpoint is written without rename: each state under a new key, committed
by a manifest written last (:mod:`._checkpoint_remote`).

Integrity. The attributes hold ``checksums`` (as a saved model's,
:mod:`dkernel.svm._persist`): the CRC-32C of each array's values,
little-endian in C order, with its shape and dtype, and ``metadata``, the
CRC-32C of the attributes themselves as canonical JSON (keys sorted), this
one number left out. They are written with the arrays, in the folder that is
moved into place, so a state and its checksums are committed together. A
resume checks them all before any value is used, then checks the values
themselves (finite, ``0 <= alpha <= C``, indices in range): a flipped bit,
a deleted chunk file (which zarr reads as zeros), an edited attribute, a
truncated ``zarr.json`` each raise :class:`~dkernel.exceptions.CorruptStoreError`
naming the checkpoint and the damage. The checkpoint is left as it is: it is
the user's to delete (or another path to choose) to fit from the start.
Checkpoints of version 2 (without the shrinking state) are still resumed, every
variable active. Checkpoints of version 1, written before checksums existed, have the same
layout without them: they are resumed with an
:class:`~dkernel.exceptions.UnverifiedStoreWarning` (only their values' ranges
are checked), and the run's next write adds the checksums. A checkpoint
whose version says it has checksums but that has none is damaged, not old.
"""

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .._runtime import artifacts
from .._runtime.integrity import array_crc32c, json_crc32c
from .._runtime.object_store import is_url
from ..exceptions import DKernelError
from ._bias import intercept_to_json
from ._checkpoint_state import (  # noqa: F401 (the checkpoint's names, read from here)
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    KERNEL_RTOL,
    STATE_ARRAYS,
    SolverState,
    shrinking_arrays,
    check_kernel_shapes,
    check_values,
    check_version,
    damaged,
    state_arrays,
    state_from,
    unverified,
)
from ._rows import provider_submatrix

__all__ = ["Checkpoint", "CheckpointWriter", "SolverState", "as_checkpoint", "problem_fingerprint", "read_state"]

logger = logging.getLogger("dkernel.solver")


@dataclass(frozen=True)
class Checkpoint:
    """Where and how often the solver writes its state.

    Parameters
    ----------
    path : str or path-like
        The checkpoint's folder (a zarr group), or an fsspec URL
        (``s3://bucket/fit.ckpt``). When it holds a checkpoint of the same
        problem, the solver resumes from it; when it holds one of another
        problem, the solver refuses to start.
    every_seconds : float or None, default=30
        Write at the first iteration at least this long after the last write.
    every_iter : int or None, default=None
        Write every this many iterations (either condition triggers a write).
    storage_options : dict, default=None
        The filesystem's options for a URL (credentials, ``endpoint_url``);
        never written, printed or logged.

    Examples
    --------
    >>> from dkernel.solver import Checkpoint
    >>> Checkpoint("fit.ckpt", every_iter=100)
    Checkpoint(path='fit.ckpt', every_seconds=30.0, every_iter=100)
    """

    path: object
    every_seconds: float = 30.0
    every_iter: int = None
    storage_options: dict = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.every_seconds is not None and not self.every_seconds > 0:
            raise ValueError(f"every_seconds must be > 0 or None; got {self.every_seconds!r}.")
        if self.every_iter is not None and (int(self.every_iter) != self.every_iter or self.every_iter < 1):
            raise ValueError(f"every_iter must be an integer >= 1 or None; got {self.every_iter!r}.")


def as_checkpoint(checkpoint, storage_options=None):
    """``checkpoint`` as a :class:`Checkpoint` (a path gets the default intervals), or None.

    ``storage_options`` (an estimator's) are given to a checkpoint that has none.
    """
    if checkpoint is None:
        return None
    if isinstance(checkpoint, Checkpoint):
        if storage_options and checkpoint.storage_options is None:
            return replace(checkpoint, storage_options=dict(storage_options))
        return checkpoint
    if isinstance(checkpoint, (str, os.PathLike)):
        return Checkpoint(os.fspath(checkpoint), storage_options=dict(storage_options) if storage_options else None)
    raise TypeError(f"checkpoint must be a path or a dkernel.solver.Checkpoint; got {type(checkpoint).__name__}.")


def _digest(values):
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).hexdigest()


def _probe_index(n):
    return np.unique(np.array([0, n // 2, n - 1], dtype=np.intp))


def problem_fingerprint(rows, diag, prob, *, q, tol, shrinking):
    """What identifies the problem a checkpoint belongs to: ``(attributes, kernel arrays)``.

    ``diag`` is the provider's diagonal (already read by the solver's checks);
    three kernel rows are read from ``rows``.
    """
    attrs = {
        "n": int(prob.n), "q": int(q), "tol": float(tol), "shrinking": bool(shrinking),
        "y": _digest(prob.y), "C": _digest(prob.C), "p": _digest(prob.p),
    }
    if not prob.is_svc_constraint:  # the equality rows and their values (ν) besides y^T alpha = const
        attrs.update(E=_digest(prob.E), e=_digest(prob.e))
    probe = _probe_index(prob.n)
    return attrs, {"kernel_diag": np.asarray(diag, dtype=np.float64),
                   "kernel_rows": provider_submatrix(rows, probe, 0, prob.n)}


def _differences(path, stored_attrs, stored_kernel, attrs, kernel):
    names = {"n": "the number of samples n", "q": "the working-set size", "tol": "tol",
             "shrinking": "shrinking", "y": "the labels y", "C": "the bounds C (C, class or sample weights)",
             "p": "the linear term p", "E": "the equality rows E", "e": "the equality values e (nu)"}
    found = [names[key] for key in {**stored_attrs, **attrs} if key in names and stored_attrs.get(key) != attrs.get(key)]
    if stored_attrs.get("n") == attrs["n"]:
        for name in kernel:
            if not np.allclose(stored_kernel[name], kernel[name], rtol=KERNEL_RTOL, atol=0.0):
                found.append("the kernel matrix (another kernel, kernel parameter, data or view)")
                break
    return found


# --------------------------------------------------------------------------- integrity
def _local_attributes(path):
    """The attributes of the checkpoint's ``zarr.json``, read strictly: a damaged file is told, never guessed."""
    try:
        with open(os.path.join(path, "zarr.json"), "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise damaged(path, f"its zarr.json cannot be read ({exc})") from None
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise damaged(path, f"its zarr.json is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                            f"{exc.start})") from None
    except json.JSONDecodeError as exc:
        raise damaged(path, f"its zarr.json is not complete JSON, truncated or altered ({exc.msg} at line "
                            f"{exc.lineno}, column {exc.colno})") from None
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    if not isinstance(attrs, dict):
        raise damaged(path, "its zarr.json holds no attributes")
    return attrs


def _verified_arrays(path, attrs, names):
    """The arrays ``names`` of the checkpoint at ``path``, each checked against its recorded checksum (when the
    checkpoint records them: ``attrs`` verified by :func:`check_version`)."""
    import zarr

    checks = attrs.get("checksums")
    if checks is not None:
        if not isinstance(checks, dict) or checks.get("algorithm") != "crc32c" \
                or checks.get("metadata") != json_crc32c(attrs, leave_out="metadata", within="checksums"):
            raise damaged(path, "its attributes (zarr.json) do not match their checksum: edited or altered")
    verified = check_version(path, attrs.get("version"), checks is not None)
    record = checks.get("arrays") if verified else None
    if verified and not (isinstance(record, dict) and all(name in record for name in names)):
        raise damaged(path, "its checksums do not list every array of a state")
    if not verified:
        unverified(path)
    arrays, name = {}, None
    try:
        group = zarr.open_group(path, mode="r")
        for name in names:
            arrays[name] = np.asarray(group[name][...])
    except (DKernelError, MemoryError):
        raise
    except Exception as exc:  # a missing or undecodable array: damage, whatever zarr raises for it
        what = "its zarr group" if name is None else f"array {name}"
        raise damaged(path, f"{what} cannot be read ({type(exc).__name__}: {exc})") from exc
    if record is None:
        return arrays
    for name, value in arrays.items():
        expected = record[name]
        if not isinstance(expected, dict) or list(value.shape) != expected.get("shape") \
                or value.dtype.str != expected.get("dtype"):
            raise damaged(path, f"array {name} has shape {value.shape} and dtype {value.dtype.str}, not those "
                                f"written")
        if array_crc32c(value) != expected.get("crc32c"):
            raise damaged(path, f"array {name} does not match its checksum: a chunk file of it is missing or "
                                f"altered")
    return arrays


def read_state(path, fingerprint, storage_options=None, bounds=None):
    """The :class:`SolverState` stored at ``path`` (a folder or URL) for the problem ``fingerprint``; None when there
    is none.

    Its checksums are checked before any value is used, then its values (finite, ``0 <= alpha <= bounds`` where
    ``bounds``, the problem's C, is given; indices in range). A checkpoint written without checksums (version 1)
    is read with an :class:`~dkernel.exceptions.UnverifiedStoreWarning`.

    Raises
    ------
    ArtifactPathError
        If ``path`` holds anything but a checkpoint (left as it is).
    ValueError
        If the checkpoint belongs to another problem (left as it is), naming what differs.
    CorruptStoreError
        If the checkpoint is damaged: an array or its attributes do not match their checksums, a file is missing,
        truncated or undecodable, or it holds values no solver run reaches (left as it is; the message names it,
        the damage and what to do).
    """
    if is_url(path):
        from ._checkpoint_remote import read_state_url

        return read_state_url(path, fingerprint, storage_options, _differences, SolverState, bounds=bounds)
    path = os.path.abspath(os.fspath(path))
    if artifacts.check_target(path, "checkpoint", reuse=True) != "same":
        return None
    attrs = _local_attributes(path)
    if "problems" in attrs:
        raise ValueError(f"{path} holds the checkpoints of an estimator's {attrs['problems']} binary problems, "
                         f"not the checkpoint of one solver run; pass the estimator the same checkpoint path.")
    arrays = _verified_arrays(path, attrs, (*state_arrays(attrs.get("version")), *fingerprint[1]))
    stored_problem = attrs.get("problem")
    check_kernel_shapes(path, stored_problem, arrays, fingerprint)
    found = _differences(path, stored_problem if isinstance(stored_problem, dict) else {},
                         {name: arrays[name] for name in fingerprint[1]}, *fingerprint)
    if found:
        raise ValueError(
            f"the checkpoint at {path} was written for another problem; these differ: {', '.join(found)}. It is "
            f"left as it is; resume with the same data and parameters, or choose another checkpoint path."
        )
    return check_values(path, state_from(path, attrs, arrays), fingerprint, bounds)


def write_state(path, fingerprint, state, storage_options=None):
    """Write ``state`` of the problem ``fingerprint`` to ``path``, replacing a checkpoint there only when complete.

    The arrays' checksums and the attributes' own are written with them, in the folder moved into place.
    """
    import zarr

    if is_url(path):
        from ._checkpoint_remote import write_state_url

        return write_state_url(path, fingerprint, state, storage_options, CHECKPOINT_VERSION)

    attrs, kernel = fingerprint
    arrays = {"alpha": state.alpha, "G": state.G, "kept": np.asarray(state.kept, dtype=np.int64),
              "kept_slots": np.asarray(state.kept_slots, dtype=np.int64), **shrinking_arrays(state), **kernel}
    arrays = {name: np.ascontiguousarray(value) for name, value in arrays.items()}
    record = {"algorithm": "crc32c", "arrays": {
        name: {"shape": list(value.shape), "dtype": value.dtype.str, "crc32c": array_crc32c(value)}
        for name, value in arrays.items()}}
    meta = json.loads(json.dumps({
        "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "problem": attrs,
        "iteration": int(state.iteration), "n_kernel_rows": int(state.n_kernel_rows),
        "stop_reason": state.stop_reason,
        "gap": None if state.gap is None else float(state.gap),
        "intercept": intercept_to_json(state.intercept), "checksums": record,
    }))
    meta["checksums"]["metadata"] = json_crc32c(meta, leave_out="metadata", within="checksums")
    with artifacts.writing(path, "checkpoint", overwrite=True) as tmp:
        group = zarr.open_group(tmp, mode="w")
        for name, value in arrays.items():
            group.create_array(name, data=value, overwrite=True)
        group.attrs.update(meta)


class CheckpointWriter:
    """Writes the loop's state to ``checkpoint.path`` when an interval has passed (:meth:`due`)."""

    def __init__(self, checkpoint, fingerprint, start_iteration=0):
        self.checkpoint, self.fingerprint = checkpoint, fingerprint
        self.last_iteration, self.last_time = start_iteration, time.monotonic()

    def due(self, iteration):
        if iteration <= self.last_iteration:
            return False
        every_iter, every_seconds = self.checkpoint.every_iter, self.checkpoint.every_seconds
        if every_iter is not None and iteration - self.last_iteration >= every_iter:
            return True
        return every_seconds is not None and time.monotonic() - self.last_time >= every_seconds

    def write(self, state):
        write_state(self.checkpoint.path, self.fingerprint, state, self.checkpoint.storage_options)
        self.last_iteration, self.last_time = state.iteration, time.monotonic()
        logger.debug("dkernel.solver: checkpoint written to %s at iteration %d", self.checkpoint.path, state.iteration)
