"""Resuming a pipeline run: the records of its finished tasks, saved as each finishes.

The records of a task are saved beside the results folder
(``out/.NAME.dkernel-partial/``, :class:`TaskRecords`), one JSON file per task
named by the task's fingerprint, so that the same command run again after an
interruption (Ctrl-C, a kill) runs only the tasks without saved records
(:class:`ResumableTask`). Records are saved as JSON, and every record of a run
goes through the same JSON round trip, saved or not, so that a resumed run
gives the results of an uninterrupted one.

Each saved record carries the CRC-32C of its content (``crc32c``: the
canonical JSON of the task and its records, keys sorted, as the checksums of
dkernel's model files: :func:`dkernel._runtime.integrity.json_crc32c`), verified when it is read: a record that was changed,
cut short or saved without a checksum (by an earlier dkernel) is never taken
as results; :meth:`TaskRecords.inspect` says what is wrong with it, and its
task runs again.
"""

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from dkernel._runtime.integrity import json_crc32c
from dkernel.exceptions import DKernelError

__all__ = ["PARTIAL_FORMAT", "PipelineInterrupted", "ResumableTask", "TaskRecords", "json_default"]


def json_default(value):
    """JSON for the numpy values (and paths) of records."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


class ResumableTask:
    """A pipeline's ``run_task`` with the records an earlier run of the same tasks saved (:class:`TaskRecords`).

    ``pipelines._runner._run_tasks`` runs only the tasks without saved records and saves
    the records of the others as they finish. Called directly in this
    process (by a pipeline's own ``execute``), it returns a task's saved
    records or runs it and saves them; in another process it only runs it.
    """

    def __init__(self, run_task, saved):
        self.run_task, self.saved, self.pid = run_task, saved, os.getpid()

    def __call__(self, task):
        if os.getpid() != self.pid:
            return self.run_task(task)
        records = self.saved.load(task)
        return self.saved.save(task, self.run_task(task)) if records is None else records


#: The ``format`` of the marker file of a folder of saved task records.
PARTIAL_FORMAT = "dkernel-partial-results"


class TaskRecords:
    """The records of the finished tasks of a run, saved beside its results folder until the results are in place.

    The folder (:func:`dkernel._runtime.artifacts.partial_path` of the
    results folder) holds ``partial.json`` (its marker) and
    ``tasks/<fingerprint>.json`` per finished task: the task's fingerprint
    (its parameters, a data set by the key that names its content, the
    pipeline and the dkernel version) and its records. A record is found only
    under the same fingerprint, so a run with other options or data never
    reuses it.
    """

    def __init__(self, outdir, name):
        from dkernel._runtime import artifacts

        self.folder = Path(artifacts.partial_path(outdir))
        self.name = name
        marker = self.folder / "partial.json"
        if self.folder.exists():
            try:
                ours = json.loads(marker.read_text()).get("format") == PARTIAL_FORMAT
            except (OSError, ValueError, AttributeError):
                ours = False
            if not ours:
                raise DKernelError(f"{self.folder} (where dkernel run keeps the records of an unfinished run) exists "
                                   f"and was not written by dkernel run; move it away, then run again.")

    def fingerprint(self, task):
        """What identifies a task's records: its parameters and data, the pipeline, the dkernel version."""
        import dkernel

        text = json.dumps({"pipeline": self.name, "dkernel": dkernel.__version__, "task": task}, sort_keys=True,
                          default=_task_value)
        return text, hashlib.sha256(text.encode()).hexdigest()[:32]

    def path(self, task):
        """Where the records of ``task`` are saved."""
        return self.folder / "tasks" / f"{self.fingerprint(task)[1]}.json"

    def inspect(self, task):
        """``(records, problem)`` of the record saved for ``task``.

        ``(records, None)`` for a verified record; ``(None, None)`` where none
        was saved; ``(None, problem)`` for a record that cannot be used (a few
        words: damaged, changed, without a checksum): its task must run again.
        """
        text, digest = self.fingerprint(task)
        path = self.folder / "tasks" / f"{digest}.json"
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            return None, f"cannot be read ({exc})"
        try:
            saved = json.loads(raw)
        except ValueError:
            return None, "is damaged (not complete JSON: cut short or changed)"
        if not isinstance(saved, dict) or "task" not in saved or not isinstance(saved.get("records"), list):
            return None, "is damaged (not a task record)"
        if "crc32c" not in saved:
            return None, "has no checksum (saved by an earlier dkernel) and cannot be verified"
        if saved["crc32c"] != json_crc32c(saved, leave_out="crc32c"):
            return None, "is damaged (its checksum does not match its content: changed or cut short)"
        if saved["task"] != text:
            return None, "belongs to another task"
        return saved["records"], None

    def load(self, task):
        """The verified records saved for ``task``, or None (none saved, or a record that fails its checks)."""
        return self.inspect(task)[0]

    def discard(self, task):
        """Delete the record saved for ``task`` (one that failed its checks: its task runs again)."""
        self.path(task).unlink(missing_ok=True)

    def save(self, task, records):
        """Save the records of ``task`` with their checksum (written whole, then renamed into place); return them
        as saved."""
        text, digest = self.fingerprint(task)
        folder = self.folder / "tasks"
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            (self.folder / "partial.json").write_text(json.dumps({"format": PARTIAL_FORMAT, "pipeline": self.name}))
        body = {"task": text, "records": json.loads(json.dumps(records, default=json_default))}
        payload = json.dumps({**body, "crc32c": json_crc32c(body)})
        tmp = folder / f".{digest}.json.tmp-{os.getpid()}-{time.monotonic_ns()}"
        tmp.write_text(payload)
        tmp.replace(folder / f"{digest}.json")
        return json.loads(payload)["records"]

    def count(self):
        """How many tasks have saved records."""
        folder = self.folder / "tasks"
        return sum(1 for _ in folder.glob("*.json")) if folder.is_dir() else 0

    def remove(self):
        """Delete the saved records and their folder (only the files written here)."""
        for pattern in ("*.json", ".*.json.tmp-*"):  # the records, and a write cut short by a kill
            for path in (self.folder / "tasks").glob(pattern):
                path.unlink()
        for path in (self.folder / "tasks", self.folder / "partial.json"):
            if path.is_dir():
                if not any(path.iterdir()):
                    path.rmdir()
            elif path.exists():
                path.unlink()
        if self.folder.is_dir() and not any(self.folder.iterdir()):
            self.folder.rmdir()


def _task_value(value):
    """A task value in its fingerprint: a Dask value by its key (which names the data it holds)."""
    key = getattr(value, "key", None)
    if key is not None and hasattr(value, "__dask_graph__"):
        return f"dask:{key}"
    return json_default(value) if isinstance(value, (np.generic, np.ndarray, Path)) else repr(value)


class PipelineInterrupted(KeyboardInterrupt):
    """A run interrupted (Ctrl-C): ``saved`` of its ``total`` tasks have their records in ``folder``.

    ``complete`` is the results folder when the interruption came after the results were in place.
    """

    def __init__(self, saved, total, folder, complete=None):
        super().__init__(f"{saved} of {total} tasks saved in {folder}")
        self.saved, self.total, self.folder, self.complete = saved, total, folder, complete
