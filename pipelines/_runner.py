"""Shared machinery of the reproduction pipelines.

A pipeline module defines

* ``NAME`` and ``DESCRIPTION``;
* ``make_tasks(config) -> list[dict]``: one small parameter dict per
  independent unit of work (a data set × kernel × repeat, ...). Data files
  are read here, on the client, and put in the tasks as ``dask.delayed``
  values (one graph key per data set, replaced by its value when the task
  runs), so that workers never read the data folder or ``$DKERNEL_DATA``;
* ``run_task(task) -> list[dict]``: the records of one unit, computed where it
  runs;
* ``write_report(result, outdir)``: ``report.md`` and the figures, written
  into ``outdir`` (a folder beside ``result.outdir`` that is moved into place
  once everything is written);
* optionally ``execute(run_task, tasks, config)``, replacing :func:`execute`
  for a pipeline whose tasks drive clusters of their own from this process
  (to time and measure them).

:func:`run_pipeline` submits the tasks through Dask (a threaded local run, a
local cluster of :func:`dkernel._runtime.client.start_local_cluster`, every server on
127.0.0.1, or any cluster spec of :mod:`dkernel._runtime.clusters`: a scheduler
address, a scheduler file, a SLURM/PBS/SSH/Kubernetes YAML file), shows a progress bar, and writes
``results.csv`` and ``results.json`` (the tidy records plus a ``summary`` of
means and standard errors). The results folder ``out/NAME`` is written under
the rules of :mod:`dkernel._runtime.artifacts`: checked before any task runs (an
existing folder that is not this kind of results is refused; full results
are replaced only with ``overwrite``, and only when the folder holds nothing
but the files their run wrote; a quick preview in the default
``results/quick`` is replaced at each quick run, and a quick run never
replaces full results, even with ``overwrite``), built beside its target and
moved into place when complete. ``results.json`` records ``format: "dkernel-results"`` and the
list of files the run wrote. Each task draws its randomness from
``numpy.random.SeedSequence(seed).spawn`` by task index, so that the same seed
gives the same results wherever the tasks run.

A run resumes: the records of each finished task are saved as it finishes
(:mod:`pipelines._resume`), so that the same command run again after an
interruption (Ctrl-C, a kill) runs only the tasks without saved records and
gives the results of an uninterrupted run. They are deleted once the results
are in place. Each saved record carries a checksum verified when the run
resumes: a record that was changed, cut short or saved without one is
reported (one line per task) and its task computed again.

``results.json`` also holds the run's provenance (``run``: the command, its
duration, the tasks resumed, the machine): what a report says of the run
that its records do not. A finished run's verdicts are re-derived from its
own records by the current rules with ``--rejudge DIR`` (:func:`pipelines._rejudge.rejudge`):
no fit runs again; ``results.json``'s settings, verdicts and sensitivity and
``report.md`` are rewritten, with its provenance as it was.
"""

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dkernel.cli._arguments import _add_cluster_arguments, _check_cluster, _cluster_choice
from dkernel.exceptions import ArtifactPathError

from ._resume import PipelineInterrupted, ResumableTask, TaskRecords
from ._resume import json_default as _json_default

__all__ = [
    "PipelineConfig",
    "PipelineResult",
    "build_parser",
    "run_pipeline",
    "command_line",
    "summarize",
    "task_rng",
]

#: Columns that identify a repeat of the same setting; everything else that is
#: not a measured value groups the summary.
REPEAT_KEYS = ("repeat", "seed_index", "trial")

#: Measured values averaged in the summary (also every key starting with one
#: of :data:`MEASURE_PREFIXES`). Booleans average to a fraction (e.g. of
#: converged fits).
MEASURES = (
    "test_error", "alignment", "n_sv", "train_error", "objective", "fit_seconds", "n_iter", "converged",
    "delta_b", "decision_gap", "kernel_max_abs", "float32_error", "kappa", "accuracy",
)  # fmt: skip
MEASURES += ("train_alignment", "test_alignment", "svc_error", "pw_error", "f1", "rr_error", "svc_C", "ridge_alpha", "rank", "g_scale")
MEASURES += ("knn_agreement",)  # li_generalized_bias
MEASURE_PREFIXES = ("test_error", "alignment", "n_sv")
MEASURE_PREFIXES += ("error", "b_relative_change", "margins_clipped")  # graf_coil

#: The ``format`` recorded in results.json: what marks a folder as results written by a pipeline run.
RESULTS_FORMAT = "dkernel-results"


@dataclass(frozen=True)
class PipelineConfig:
    """What a pipeline run was asked to do.

    Parameters
    ----------
    quick : bool
        A reduced run (fewer repeats, shifts and data sets) that finishes in
        under a minute, for CI and smoke tests.
    repeats : int or None
        Number of random repeats; ``None`` uses the pipeline's default.
    seed : int
        Root seed; every task derives its own stream from it.
    scheduler : str
        ``"threads"`` (dask's threaded scheduler in this process),
        ``"local"`` (a :class:`distributed.LocalCluster` with worker
        processes on 127.0.0.1) or another cluster spec (``--cluster``): a
        scheduler address ``tcp://HOST:PORT``, a scheduler file, a cluster
        YAML file (:mod:`dkernel._runtime.clusters`).
    out : Path
        Output folder; results go to ``out / NAME``.
    n_workers : int or None
        Workers of the LocalCluster (default: the number of cores).
    overwrite : bool
        Replace the results of an earlier run in ``out / NAME``.
    """

    quick: bool = False
    repeats: int | None = None
    seed: int = 0
    scheduler: str = "local"
    out: Path = Path("results")
    n_workers: int | None = None
    progress: bool = True
    overwrite: bool = False


@dataclass
class PipelineResult:
    """Records and summary of one pipeline run, and where they were written."""

    name: str
    config: PipelineConfig
    records: list
    summary: list
    outdir: Path
    seconds: float = 0.0
    files: list = field(default_factory=list)
    #: Tasks whose records an earlier, interrupted run had saved (their time is not in ``seconds``).
    resumed: int = 0
    #: What the report says of the run that its records do not (:func:`provenance`): the command as run, the
    #: machine; ``rejudged``, the date its verdicts were re-derived from the records (:func:`pipelines._rejudge.rejudge`).
    provenance: dict = field(default_factory=dict)


def task_rng(seed, index):
    """The random generator of task ``index`` under root ``seed`` (independent streams)."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(index + 1)[index])


def build_parser(name, description):
    """The command line shared by all pipelines (``dkernel run NAME ...`` and ``python -m pipelines.NAME``)."""
    parser = argparse.ArgumentParser(
        prog=f"dkernel run {name}",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            f"  dkernel run {name} --quick                 # reduced run, about a minute\n"
            f"  dkernel run {name} --repeats 10 --seed 0   # the full experiment\n"
            f"  dkernel run {name} --cluster tcp://127.0.0.1:8786\n"
            f"  dkernel run {name} --quick --cluster cluster/slurm.yaml   # workers as SLURM jobs\n"
            "\nData sets are read from $DKERNEL_DATA (or downloaded into the cache when online)."
        ),
    )
    parser.add_argument("--quick", action="store_true",
                        help="reduced run for smoke tests (under a minute); a quick run never replaces full results")
    _add_cluster_arguments(parser, "local; 'threads' runs the tasks in this process",
                           workers_help="LocalCluster workers (default: cores)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: results/, and results/quick/ with --quick)")
    parser.add_argument("--repeats", type=int, default=None, help="random repeats (default: the paper's 10)")
    parser.add_argument("--seed", type=int, default=0, help="root random seed (default: 0)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--rejudge", type=Path, default=None, metavar="DIR",
                        help="re-derive the verdicts and report.md of the finished run in DIR (DIR/results.json) from "
                        "its own records by the current rules; no fit runs again")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of an earlier run in OUT/NAME: quick previews under results/quick "
                        "are replaced at each quick run; full results only with --overwrite (and never by a quick "
                        "run; a folder holding other files is never replaced)")
    return parser


def default_out(quick):
    """``results/`` for full runs; ``results/quick/`` for quick ones, which never overwrite full results."""
    return Path("results") / "quick" if quick else Path("results")


def config_from_args(args):
    """Turn parsed arguments into a :class:`PipelineConfig`; a malformed ``--cluster`` is refused here."""
    if args.repeats is not None and args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1; got {args.repeats}.")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0 (a numpy SeedSequence entropy); got {args.seed}.")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1; got {args.workers}.")
    _check_cluster(args, default="local", accepted=("threads",))
    return PipelineConfig(
        quick=args.quick,
        repeats=args.repeats,
        seed=args.seed,
        scheduler=_cluster_choice(args, default="local")[0],
        out=args.out if args.out is not None else default_out(args.quick),
        n_workers=args.workers,
        progress=not args.no_progress,
        overwrite=args.overwrite,
    )


def command_line(name, config):
    """The ``dkernel run`` command that runs ``config`` (the options that differ from the defaults)."""
    import shlex

    words = ["dkernel", "run", name]
    if config.quick:
        words.append("--quick")
    if config.repeats is not None:
        words += ["--repeats", str(config.repeats)]
    if config.seed != 0:
        words += ["--seed", str(config.seed)]
    if config.scheduler != "local":
        words += ["--cluster", str(config.scheduler)]
    if config.n_workers is not None:
        words += ["--workers", str(config.n_workers)]
    if Path(config.out) != default_out(config.quick):
        words += ["--out", str(config.out)]
    if getattr(config, "overwrite", False):
        words.append("--overwrite")
    return " ".join(shlex.quote(word) for word in words)


# ------------------------------------------------------------------ execution
class _SynchronousInsideTasks:
    """Dask's scheduler set to ``"synchronous"`` while a task of this process runs, restored after the last one.

    Dask's configuration is one per process. Tasks run in threads (``--cluster
    threads``) that each set it on entering and restored it on leaving would
    restore one another's values: a task leaving after another that entered
    later left ``"synchronous"`` behind, and every later computation of the
    process then ran on one thread. Here the first task to enter sets it and
    the last to leave restores what was there before.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._running = 0
        self._setting = None

    def __enter__(self):
        import dask

        with self._lock:
            if self._running == 0:
                self._setting = dask.config.set(scheduler="synchronous")
            self._running += 1

    def __exit__(self, *exc):
        with self._lock:
            self._running -= 1
            if self._running == 0:
                self._setting.__exit__(None, None, None)
                self._setting = None


#: The tasks of this process (threads, or the one thread of a worker) share the process's Dask configuration.
_SYNCHRONOUS_INSIDE_TASKS = _SynchronousInsideTasks()


def _run_unit(run_task, task):
    """Run one task with Dask's synchronous scheduler for any computation inside it.

    Library calls inside a task (``origin_products``, a view's ``to_numpy``)
    compute small dask graphs; on a worker they would otherwise be sent back
    to the cluster's scheduler from inside a running task.
    """
    with _SYNCHRONOUS_INSIDE_TASKS:
        return run_task(task)


def _run_tasks(client, run_task, tasks, progress):
    """Run the tasks on ``client`` (None: threads in this process); results are gathered as they finish.

    ``run_task`` may be a :class:`ResumableTask`: the tasks whose records it
    holds are not run again, and the records of the others are saved as
    each finishes.
    """
    import dask

    from dkernel._runtime.client import compute_with_progress

    if client is None:
        _import_before_threads()
    saved = getattr(run_task, "saved", None)
    if saved is None:
        delayed = [dask.delayed(_run_unit, pure=False)(run_task, task) for task in tasks]
        return compute_with_progress(delayed, client, progress, label="tasks")
    results = [saved.load(task) for task in tasks]
    pending = [k for k, records in enumerate(results) if records is None]

    def keep(k, records):
        results[pending[k]] = saved.save(tasks[pending[k]], records)

    delayed = [dask.delayed(_run_unit, pure=False)(run_task.run_task, tasks[k]) for k in pending]
    compute_with_progress(delayed, client, progress, label="tasks", on_result=keep)
    return results


def _import_before_threads():
    """Import scikit-learn (and its modules the tasks import inside their functions) in this thread before tasks
    run in threads: a package imported for the first time by two threads at once can be seen partly initialized
    by one of them ("cannot import name 'clone' from partially initialized module 'sklearn.base'")."""
    import sklearn.base  # noqa: F401
    import sklearn.feature_extraction.text  # noqa: F401
    import sklearn.model_selection  # noqa: F401
    import sklearn.neighbors  # noqa: F401
    import sklearn.svm  # noqa: F401

    import dkernel.svm  # noqa: F401


def execute(run_task, tasks, config):
    """Run ``run_task`` over ``tasks`` on the configured scheduler; return the results in task order."""
    from dkernel._runtime.client import scheduler_client
    from dkernel.cli._arguments import _announce_cluster

    if config.scheduler == "threads":
        return _run_tasks(None, run_task, tasks, config.progress)
    n_workers = None
    if config.scheduler == "local":
        n_workers = config.n_workers or max(1, min(os.cpu_count() or 1, len(tasks)))
    with scheduler_client(config.scheduler, n_workers=n_workers, threads_per_worker=1) as client:
        _announce_cluster(client)
        return _run_tasks(client, run_task, tasks, config.progress)


# -------------------------------------------------------------------- summary
def _is_measure(key):
    return key in MEASURES or key.startswith(MEASURE_PREFIXES)


def summarize(records):
    """Means and standard errors of the measured values over repeats of each setting.

    Records that differ only in ``repeat`` (and measured values) form one
    group. The standard error is ``std(ddof=1) / sqrt(count)`` (0 for a single
    repeat).
    """
    groups = {}
    for rec in records:
        setting = tuple(
            (k, v) for k, v in rec.items() if k not in REPEAT_KEYS and not _is_measure(k) and _hashable(v)
        )
        groups.setdefault(setting, []).append(rec)
    summary = []
    for setting, recs in groups.items():
        row = dict(setting)
        row["count"] = len(recs)
        measures = sorted({k for rec in recs for k in rec if _is_measure(k)})
        for key in measures:
            values = np.array(
                [float(rec[key]) for rec in recs if _is_number(rec.get(key)) or isinstance(rec.get(key), bool)]
            )
            if values.size == 0:
                continue
            row[f"{key}_mean"] = float(values.mean())
            row[f"{key}_se"] = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
        summary.append(row)
    return summary


def _hashable(value):
    return isinstance(value, (str, int, float, bool, type(None)))


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and math.isfinite(value)


def _clean(value):
    """JSON has no NaN: write non-finite numbers as null."""
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return None
    return value


def machine_text():
    """This machine in a few words: cores, memory, system, Python."""
    import platform

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else None
    return (f"{os.cpu_count()} cores, {memory / 2**30:.0f} GiB of memory" if memory else f"{os.cpu_count()} cores") \
        + f", {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def provenance(name, config, seconds, resumed=0):
    """What a report says of a run that its records do not, as results.json's ``run`` keeps it: the ``command``
    as run, its duration (``seconds``), the tasks ``resumed`` from an earlier run's saved records, the
    ``machine`` and the process's ``niceness`` (a lowered priority)."""
    return {"command": command_line(name, config), "seconds": float(seconds), "resumed": int(resumed),
            "machine": machine_text(), "niceness": os.nice(0) if hasattr(os, "nice") else 0}


def fidelity_of(module, records, config):
    """``{"settings": [...], "verdicts": [...], "sensitivity": [...]}`` of a run, from the pipeline's own
    ``settings(config)``, ``verdicts(records, config)`` and ``sensitivity(records, config)`` where it has them."""
    parts = {"settings": lambda: module.settings(config), "verdicts": lambda: module.verdicts(records, config),
             "sensitivity": lambda: module.sensitivity(records, config)}
    return {key: list(make()) for key, make in parts.items() if hasattr(module, key)}


def write_tables(name, config, records, summary, outdir, fidelity=None, run=None):
    """Write ``results.csv`` (one row per record) and ``results.json`` (the run's provenance ``run``, records,
    summary and the ``fidelity`` lists: the run's settings, verdicts and sensitivity rows,
    :mod:`pipelines._fidelity`)."""
    fidelity = {key: [dataclasses.asdict(item) for item in items] for key, items in (fidelity or {}).items()}
    outdir.mkdir(parents=True, exist_ok=True)
    columns = []
    for rec in records:
        for key in rec:
            if key not in columns:
                columns.append(key)
    csv_path = outdir / "results.csv"
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for rec in records:
            writer.writerow(rec)
    json_path = outdir / "results.json"
    payload = {
        "format": RESULTS_FORMAT,
        "pipeline": name,
        "config": {
            "quick": config.quick,
            "repeats": config.repeats,
            "seed": config.seed,
        },
        **({"run": run} if run is not None else {}),
        "records": [{k: _clean(v) for k, v in rec.items()} for rec in records],
        "summary": [{k: _clean(v) for k, v in row.items()} for row in summary],
        **fidelity,
    }
    tmp = json_path.with_suffix(".json.tmp")
    tmp.write_text(results_json(payload))
    tmp.replace(json_path)
    return [csv_path, json_path]


def results_json(payload):
    """``results.json``'s text: its keys one per line, each item of a list (a record, a verdict) on a line of its
    own, so that a diff of two runs shows the records that changed and a record's lists take one line."""
    def dumps(value):
        return json.dumps(value, default=_json_default, allow_nan=False, ensure_ascii=False)

    parts = []
    for key, value in payload.items():
        if isinstance(value, list) and value:
            items = ",\n  ".join(dumps(item) for item in value)
            parts.append(f"{dumps(key)}: [\n  {items}\n ]")
        else:
            parts.append(f"{dumps(key)}: {dumps(value)}")
    return "{\n " + ",\n ".join(parts) + "\n}\n"


def _record_files(folder):
    """List in ``results.json`` every file the run wrote into ``folder`` (what a later overwrite may replace)."""
    json_path = folder / "results.json"
    payload = json.loads(json_path.read_text())
    payload["files"] = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    json_path.write_text(results_json(payload))


def _refuse_full_results(outdir):
    """Refuse to let a quick run replace the full results at ``outdir`` (``overwrite`` or not)."""
    from dkernel._runtime import artifacts

    path = Path(artifacts.target_path(outdir))
    if artifacts.artifact_kind(path) != "results":
        return  # nothing there, or not results: artifacts.check_target decides
    try:
        quick = json.loads((path / "results.json").read_text()).get("config", {}).get("quick")
    except (OSError, ValueError, AttributeError):
        quick = None
    if quick is not True:  # full results (or results that do not say): never replaced by a quick run
        said = '"quick": false' if quick is False else 'not marked "quick": true'
        raise ArtifactPathError(
            f"{path} holds the full results of an earlier run (results.json: {said}); a quick run never "
            f"replaces full results, even with overwrite: choose another --out for the quick run (by default it "
            f"writes {default_out(quick=True)}/).")


def _describe_task(task):
    """A task in a few words: its plain parameters (``dataset=cmc, kernel=rbf, repeat=0``)."""
    words = [f"{key}={value}" for key, value in task.items()
             if key != "seed" and isinstance(value, (str, int, float, bool)) and value != ""]
    text = ", ".join(words)
    return text if len(text) <= 120 else text[:117] + "..."


def _check_saved(name, saved, tasks):
    """How many ``tasks`` have verified saved records; a saved record that fails its checks (changed, cut short,
    without a checksum) is reported on one line, deleted, and its task runs again."""
    n_saved = 0
    for index, task in enumerate(tasks):
        records, problem = saved.inspect(task)
        if problem is not None:
            path = saved.path(task)
            print(f"{name}: the record saved for task {index + 1} of {len(tasks)} ({_describe_task(task)}) "
                  f"{problem}; that task is recomputed (record {path})", file=sys.stderr)
            saved.discard(task)
        n_saved += records is not None
    return n_saved


def _tell_other_records(name, saved, n_saved):
    """Say, before any task runs, that records saved by an unfinished run of other tasks (another seed, other
    options or data) are not used, and that they are deleted with the others when this run completes."""
    others = saved.count() - n_saved
    if others > 0:
        print(f"{name}: {others} task record{'' if others == 1 else 's'} in {saved.folder} {'was' if others == 1 else 'were'} saved by "
              f"an unfinished run with other options, seed or data and {'is' if others == 1 else 'are'} not used "
              f"here; {'it is' if others == 1 else 'they are'} deleted when this run completes (stop it now to keep "
              f"{'it' if others == 1 else 'them'}, and finish that run with its own command).", file=sys.stderr)


@contextlib.contextmanager
def _one_run_at_a_time(out, name):
    """Hold ``out/.NAME.dkernel-lock`` (an exclusive ``flock``) while a run of pipeline ``name`` writes into ``out``.

    A second run of the same pipeline into the same folder is refused before any task, naming the process that
    holds it (two runs would both compute, and the later one's results be refused only at the end). The lock is
    released by the system when its process ends, however it ends; the file is removed by the run that held it.
    """
    import fcntl

    from dkernel.exceptions import DKernelError

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f".{name}.dkernel-lock"
    handle = open(path, "a+")
    handle.seek(0)
    held = handle.read()
    if held and not re.fullmatch(r"process \d+", held):  # a file of that name that no run wrote: left as it is
        handle.close()
        raise DKernelError(f"{path} exists and was not written by dkernel run (it holds other text); move it away, "
                           f"then run again.")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise DKernelError(f"{out}: another `dkernel run {name}` is writing its results there ({holder}); wait for it "
                           f"to finish, or give another --out.") from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()}")
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        handle.close()


def run_pipeline(module, config):
    """Run a pipeline module end to end and write its results; returns a :class:`PipelineResult`.

    The output folder is checked before any task runs; the results are
    written beside it and moved into place when complete
    (:mod:`dkernel._runtime.artifacts`). The records of each finished task are
    saved as it finishes (:class:`TaskRecords`): a run interrupted by Ctrl-C
    raises :class:`PipelineInterrupted`, and the next run of the same tasks
    runs only the others.
    """
    from dkernel._runtime import artifacts

    start = time.perf_counter()
    outdir = Path(config.out) / module.NAME
    # A quick run in the default results/quick/ is a preview: it replaces the previous preview of the
    # same pipeline (results only, never other files); elsewhere replacing needs --overwrite. A quick
    # run never replaces full results, even with --overwrite.
    replace = config.overwrite or (config.quick and Path(config.out) == default_out(quick=True))
    if config.quick:
        _refuse_full_results(outdir)
    artifacts.check_target(outdir, "results", replace)
    with _one_run_at_a_time(config.out, module.NAME):
        return _run_checked(module, config, start, outdir, replace)


def _run_checked(module, config, start, outdir, replace):
    """:func:`run_pipeline` once its output folder is checked and held."""
    from dkernel._runtime import artifacts

    saved = TaskRecords(outdir, module.NAME)
    tasks = module.make_tasks(config)
    for index, task in enumerate(tasks):
        task.setdefault("seed_index", index)
        task.setdefault("seed", config.seed)
    n_saved = _check_saved(module.NAME, saved, tasks)
    if n_saved:
        print(f"{module.NAME}: resuming: {n_saved} of {len(tasks)} tasks have their records in {saved.folder}",
              file=sys.stderr)
    _tell_other_records(module.NAME, saved, n_saved)
    try:
        results = getattr(module, "execute", execute)(ResumableTask(module.run_task, saved), tasks, config)
        # The records as results.json holds them (the JSON round trip of the saved ones), saved or not.
        records = json.loads(json.dumps([rec for recs in results for rec in recs], default=_json_default))
        summary = summarize(records)
        if config.quick:  # full results written there while the tasks ran are not replaced either
            _refuse_full_results(outdir)
        with artifacts.writing(outdir, "results", replace) as tmp:
            tmp = Path(tmp)
            run = provenance(module.NAME, config, time.perf_counter() - start, n_saved)
            files = write_tables(module.NAME, config, records, summary, tmp, fidelity_of(module, records, config),
                                 run=run)
            result = PipelineResult(name=module.NAME, config=config, records=records, summary=summary,
                                    outdir=outdir, seconds=run["seconds"], files=files, resumed=n_saved,
                                    provenance=run)
            result.files += list(module.write_report(result, tmp) or [])
            _record_files(tmp)
    except KeyboardInterrupt:
        raise PipelineInterrupted(saved.count(), len(tasks), saved.folder) from None
    try:
        saved.remove()
    except KeyboardInterrupt:
        raise PipelineInterrupted(saved.count(), len(tasks), saved.folder, outdir) from None
    result.files = [outdir / Path(f).relative_to(tmp) if Path(f).is_relative_to(tmp) else Path(f)
                    for f in result.files]
    return result

