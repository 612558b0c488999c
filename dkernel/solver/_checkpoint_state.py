"""The state a solver checkpoint holds and what a resume verifies before using any of it.

:class:`SolverState` is the outer loop's state; every array of it is written with the CRC-32C of its values and
the attributes with their own (:mod:`dkernel._runtime.integrity`, as a saved model's). A resume reads
nothing it has not verified: a damaged checkpoint raises :func:`damaged`'s error, naming the checkpoint the user
gave and the part damaged, and is left as it is; a checkpoint written before checksums (version 1) is resumed
with a warning (:func:`unverified`), its values only checked (:func:`check_values`: finite, within ``[0, C]``).
Shared by the checkpoints in a folder (:mod:`._checkpoint`) and at a URL (:mod:`._checkpoint_remote`).
"""

import json
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._runtime.object_store import is_url
from ..exceptions import CorruptStoreError, UnverifiedStoreWarning
from ._bias import intercept_from_json

CHECKPOINT_FORMAT = "dkernel-checkpoint"
#: The version of the layout written: 2 adds the checksums to version 1, 3 the shrinking state
#: (:data:`SHRINKING_ARRAYS`) to version 2.
CHECKPOINT_VERSION = 3
#: Versions written with checksums, all read (a version 2 state resumes with every variable active).
VERIFIED_VERSIONS = (2, 3)
#: Versions written without checksums, resumed unverified (with a warning).
UNVERIFIED_VERSIONS = (1,)
#: The arrays of every state, besides the fingerprint's kernel arrays.
STATE_ARRAYS = ("alpha", "G", "kept", "kept_slots")
#: The arrays a state of version 3 adds: the loop's shrinking state, so that a resume continues on the path of an
#: uninterrupted run (each of length 0 where not recorded): ``active`` (int8, ``(n,)``: 1 for the variables of the
#: active set), ``held`` (int64, ``(q,)``: the variable whose kernel row each working-set slot holds, -1 for none)
#: and ``upper_sums`` (float64, ``(n,)``: libsvm's ``G_bar``, the gradient's part from the variables at C, as the
#: run accumulated it).
SHRINKING_ARRAYS = ("active", "held", "upper_sums")


def state_arrays(version):
    """The names of the arrays of a state of ``version`` (besides the fingerprint's kernel arrays)."""
    return (*STATE_ARRAYS, *SHRINKING_ARRAYS) if version == 3 else STATE_ARRAYS
#: The stop reasons a state records (None: the loop had not stopped).
STOP_REASONS = (None, "max_iter", "callback", "tol", "stalled")
#: Relative slack of the bounds 0 <= alpha <= C checked in a resumed state.
BOUNDS_RTOL = 1e-9
#: Relative tolerance on the kernel values of the fingerprint.
KERNEL_RTOL = 1e-9
#: Stop reasons after which a checkpoint holds the solution: a resume returns it.
FINAL_REASONS = ("tol", "stalled")


@dataclass
class SolverState:
    """The outer loop's state at the start of ``iteration`` (see the module's description)."""

    iteration: int
    alpha: np.ndarray
    G: np.ndarray
    kept: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    kept_slots: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    n_kernel_rows: int = 0
    stop_reason: str = None
    gap: float = None
    intercept: float = None
    #: The shrinking state (version 3; None where not recorded: every variable active, the kept rows only held,
    #: ``upper_sums`` summed again from ``alpha``). ``G`` is then the gradient as the loop held it: exact over the
    #: active variables, as last updated over the others.
    active: np.ndarray = None
    held: np.ndarray = None
    upper_sums: np.ndarray = None

    @property
    def solved(self):
        """Whether the state is a solution (the loop stopped on the tolerance or could not improve)."""
        return self.stop_reason in FINAL_REASONS


_PROBLEM_NAME = re.compile(r"^problem-\d+$")


def _outer_checkpoint(path):
    """The folder of the estimator's checkpoint holding the problem checkpoint ``path`` (its ``problem-K``), or None."""
    parent, name = os.path.split(path)
    if not _PROBLEM_NAME.match(name):
        return None
    try:
        with open(os.path.join(parent, "zarr.json"), encoding="utf-8") as fh:
            attrs = json.load(fh).get("attributes")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(attrs, dict) and attrs.get("format") == CHECKPOINT_FORMAT and "problems" in attrs:
        return parent
    return None


def damaged(path, detail, outer=None):
    """The :class:`~dkernel.exceptions.CorruptStoreError` of the damaged checkpoint at ``path`` (a folder or URL).

    ``outer`` is the estimator's checkpoint that holds ``path`` as its ``problem-K`` (found for a folder when
    None): the message names the checkpoint the user gave, the part damaged and what to do. The error's ``path``
    is left None: it names a Gram store to repair (``dkernel.cli``); the message names the checkpoint.
    """
    url = is_url(path)
    if outer is None and not url:
        outer = _outer_checkpoint(path)
    root = outer or path
    where = f"{path[len(outer):].strip('/')}: " if outer else ""
    remedy = (f"delete the checkpoint (every object under {root}/) or choose another checkpoint URL" if url else
              f"delete the folder {root} or choose another checkpoint path")
    return CorruptStoreError(
        f"the solver checkpoint {root} is damaged: {where}{detail}. Nothing is resumed from a damaged checkpoint, "
        f"and it is left as it is (dkernel does not delete it): {remedy} to fit from the start.",
        detail=f"{where}{detail}",
    )


def unverified(path, what="its arrays and attributes"):
    """Warn that the checkpoint at ``path``, written before checkpoints recorded checksums, is resumed unverified."""
    warnings.warn(
        f"the solver checkpoint {path} was written by an older dkernel, without checksums: it is resumed without "
        f"verifying {what} (only checked to be finite and within their bounds). The checkpoints this run writes "
        f"have them.", UnverifiedStoreWarning, stacklevel=4)


def check_version(path, version, has_checksums, outer=None):
    """Whether a state of ``version`` is verified (True) or of an older version, read with a warning (False)."""
    if has_checksums:
        if isinstance(version, int) and not isinstance(version, bool) and version > CHECKPOINT_VERSION:
            raise ValueError(f"the solver checkpoint {path} is of version {version}; this dkernel reads versions up "
                             f"to {CHECKPOINT_VERSION}: resume it with the dkernel that wrote it, or choose another "
                             f"checkpoint path to fit from the start. It is left as it is.")
        if version not in VERIFIED_VERSIONS or isinstance(version, bool):
            raise damaged(path, f"its version {version!r} is not one this dkernel writes with checksums "
                                f"({', '.join(map(str, VERIFIED_VERSIONS))})", outer)
        return True
    if version in UNVERIFIED_VERSIONS:
        return False
    raise damaged(path, f"its checksums are missing although its version {version!r} has them", outer)


def check_kernel_shapes(path, stored_problem, arrays, fingerprint, outer=None):
    """Refuse kernel arrays of a shape the fingerprint's ``n`` does not give (only a checkpoint without checksums
    can hold them): they are compared with the problem's (:func:`_differences`) only when of its shape."""
    if not isinstance(stored_problem, dict) or stored_problem.get("n") != fingerprint[0]["n"]:
        return
    for name, value in fingerprint[1].items():
        if np.shape(arrays[name]) != np.shape(value):
            raise damaged(path, f"it holds {name} of shape {np.shape(arrays[name])}, not {np.shape(value)} as its "
                                f"n = {fingerprint[0]['n']} gives", outer)


def state_from(path, attrs, arrays, outer=None):
    """The :class:`SolverState` of the attributes ``attrs`` and ``arrays`` of the checkpoint at ``path``."""
    try:
        return SolverState(
            iteration=_integer(attrs["iteration"]), alpha=arrays["alpha"], G=arrays["G"],
            kept=_indices(arrays["kept"]), kept_slots=_indices(arrays["kept_slots"]),
            n_kernel_rows=_integer(attrs["n_kernel_rows"]), stop_reason=attrs.get("stop_reason"),
            gap=None if attrs.get("gap") is None else float(attrs["gap"]),
            intercept=intercept_from_json(attrs.get("intercept")),
            active=_optional(arrays.get("active"), "iu"), held=_optional(arrays.get("held"), "iu"),
            upper_sums=_optional(arrays.get("upper_sums"), "f"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise damaged(path, f"its state cannot be read from its attributes and arrays ({type(exc).__name__}: {exc})",
                      outer) from None


def shrinking_arrays(state):
    """The arrays :data:`SHRINKING_ARRAYS` of ``state`` as written (length 0 where not recorded)."""
    def written(value, dtype):
        return np.empty(0, dtype=dtype) if value is None else np.ascontiguousarray(value, dtype=dtype)

    return {"active": written(state.active, np.int8), "held": written(state.held, np.int64),
            "upper_sums": written(state.upper_sums, np.float64)}


def _optional(value, kinds):
    """A recorded array of the shrinking state (1-D, of the dtype kinds ``kinds``), or None where not recorded."""
    if value is None:
        return None
    value = np.asarray(value)
    if value.ndim != 1 or value.dtype.kind not in kinds:
        raise TypeError(f"an array of shape {value.shape} and dtype {value.dtype.str}")
    if value.size == 0:
        return None
    return value.astype(np.intp) if kinds == "iu" else value.astype(np.float64)


def _integer(value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{value!r} is not an integer")
    return int(value)


def _indices(value):
    value = np.asarray(value)
    if value.ndim != 1 or value.dtype.kind not in "iu":
        raise TypeError(f"indices of shape {value.shape} and dtype {value.dtype.str}")
    return value.astype(np.intp)


def _first(bad, values):
    i = int(np.flatnonzero(bad)[0])
    return i, values[i]


def check_values(path, state, fingerprint, bounds, outer=None):
    """Refuse a resumed ``state`` that no solver run reaches: values not finite, ``alpha`` outside ``[0, C]`` (with a
    relative slack of :data:`BOUNDS_RTOL`), indices out of range. The checksums catch damage; this catches what
    they cannot see (a checkpoint without them, or values wrong when written)."""
    n, q = int(fingerprint[0]["n"]), int(fingerprint[0]["q"])
    found = None
    alpha, G = np.asarray(state.alpha), np.asarray(state.G)
    for name, value in (("alpha", alpha), ("G", G)):
        if value.shape != (n,) or value.dtype.kind != "f":
            found = f"it holds {name} of shape {value.shape} and dtype {value.dtype.str}, not ({n},) floats"
        elif not np.all(np.isfinite(value)):
            i, v = _first(~np.isfinite(value), value)
            found = f"it holds {name} values that are not finite ({name}[{i}] = {v})"
        if found:
            raise damaged(path, found, outer)
    if bounds is not None:
        C = np.broadcast_to(np.asarray(bounds, dtype=np.float64), (n,))
        slack = BOUNDS_RTOL * np.abs(C)
        bad = (alpha < -slack) | (alpha > C + slack)
        if np.any(bad):
            i, v = _first(bad, alpha)
            raise damaged(path, f"it holds alpha values outside their bounds [0, C] (alpha[{i}] = {v:.6g}, "
                                f"C[{i}] = {C[i]:.6g})", outer)
    kept, slots = state.kept, state.kept_slots
    if kept.size and (kept.min() < 0 or kept.max() >= n or np.unique(kept).size != kept.size):
        found = f"it holds kept working-set indices that are not distinct indices in [0, {n})"
    elif slots.shape != kept.shape or (slots.size and (slots.min() < 0 or slots.max() >= q
                                                       or np.unique(slots).size != slots.size)):
        found = f"it holds kept_slots that are not one distinct slot in [0, {q}) per kept index"
    elif state.iteration < 0 or state.n_kernel_rows < 0:
        found = f"it holds a negative count (iteration {state.iteration}, n_kernel_rows {state.n_kernel_rows})"
    elif state.stop_reason not in STOP_REASONS:
        found = f"it holds the unknown stop reason {state.stop_reason!r}"
    elif state.gap is not None and np.isnan(state.gap) or state.solved and state.gap is None:
        found = f"it holds the gap {state.gap!r}"
    elif state.intercept is not None and not np.all(np.isfinite(np.asarray(state.intercept, dtype=np.float64))) \
            or state.solved and state.intercept is None:
        found = f"it holds the intercept {state.intercept!r}"
    if found is None:
        found = _check_shrinking(state, n, q)
    if found:
        raise damaged(path, found, outer)
    return state


def _check_shrinking(state, n, q):
    """What is wrong with the shrinking state of ``state`` (None: nothing, or not recorded)."""
    active, held, upper = state.active, state.held, state.upper_sums
    if active is not None and (active.shape != (n,) or not np.all((active == 0) | (active == 1))):
        return f"it holds an active-set mask of shape {active.shape} that is not ({n},) zeros and ones"
    if held is not None:
        # (A row may be held twice: in a slot of the working set and, stale, in a slot of an earlier one.)
        if held.shape != (q,) or held.min() < -1 or held.max() >= n:
            return f"it holds held working-set rows that are not ({q},) indices in [0, {n}) or -1"
        if state.kept.size and not np.array_equal(held[state.kept_slots], state.kept):
            return "it holds kept working-set rows that are not held in their slots"
    if upper is not None and (upper.shape != (n,) or not np.all(np.isfinite(upper))):
        return f"it holds sums at the upper bound (upper_sums) of shape {upper.shape} that are not ({n},) finite"
    return None


# --------------------------------------------------------------------------- reading and writing
