"""Centering in feature space at scale: every stage timed, its memory measured, on 1 and 2 workers.

The data: USPS (7291 training and 2007 test digits, 10 classes, RBF), 20
Newsgroups by date (sparse tf-idf, linear kernel: the 20 classes, and one
group against the rest, an uneven query), and two overlapping Gaussian
classes in d = 64 at n = 20000 … 200000 (RBF), plus n = 1000000 for the
sampled steps alone. On a LocalCluster of 1 and of 2 worker processes, each
stage is timed on its own and its peak memory recorded (each worker's, the
cluster's by ``distributed.diagnostics.MemorySampler``, and this process's):

* the Gram matrix written to a zarr store (float32) where the disk allows,
  else evaluated on the fly (:class:`dkernel.KernelGram`);
* Meilă's class-balanced origin (eq. 13; the mean of the class centres for
  more classes): exact ``h = Kγ`` (eq. 17, one pass over the Gram) against
  the sampled origin of §5 on n' points (only ``K(X, X_S)``), with the
  relative error ``‖h̃ − h‖ / ‖h‖``;
* the kernel-target alignment (Kandola eq. 1; eq. 9 for the uneven query),
  exact in one pass and sampled with its standard error;
* ``dkernel.SVC`` fitted on the original and on the centered Gram with Δb
  (eq. 19), predicting through the original kernel (eq. 16): the test
  error, and the largest difference of their decision values, which
  Meilă's translation invariance makes equal up to the solver's tolerance;
* ``sklearn.svm.SVC`` on the synthetic data at the sizes where it finishes.

Run ``dkernel run large_scale_centering`` (``--quick``: small n, few n' and
small subsets, for CI) or ``python -m pipelines.large_scale_centering``.
The dask config keys ``dkernel.large-scale.datasets`` (unit labels to run),
``dkernel.large-scale.skip`` (``"LABEL:STAGE"`` pairs),
``dkernel.large-scale.rerun`` (labels measured again instead of reused) and
``dkernel.large-scale.scratch`` (the folder of the temporary stores) change
the plan, e.g. ``DASK_DKERNEL__LARGE_SCALE__DATASETS='["usps"]'``.
"""

import time

from ._large_scale import (
    SAMPLINGS,
    UnitStore,
    fingerprint,
    log,
    long_lived_objects_left_out_of_collections,
    plan_for,
    unit_records,
    warm_up,
)
from ._large_scale_fidelity import sensitivity, settings, verdicts
from ._large_scale_report import write_report
from ._command import run_as_script
from ._runner import task_rng

__all__ = ["NAME", "DESCRIPTION", "make_tasks", "execute", "run_task", "sensitivity", "settings", "verdicts",
           "write_report"]

NAME = "large_scale_centering"
DESCRIPTION = (
    "Centering at scale: Gram to zarr, sampled vs exact centering and alignment, SVC centered vs uncentered, "
    "timed with their peak memory on 1 and 2 workers (USPS, 20 Newsgroups, synthetic up to n = 10⁶)."
)


# --------------------------------------------------------------------------- #
# The units of the plan
# --------------------------------------------------------------------------- #


def _load(name, **options):
    """A data set read without downloading; ``(dataset, None)`` or ``(None, why it is missing)``."""
    from dkernel.datasets import DatasetNotFoundError, load

    try:
        return load(name, download=False, **options), None
    except (DatasetNotFoundError, FileNotFoundError) as exc:
        return None, f"its data files were not found under DKERNEL_DATA ({str(exc).splitlines()[0]})"


def _real_units(plan):
    """The USPS and 20 Newsgroups units (one per data set and task), or a note where the files are absent."""
    import numpy as np

    units = []
    usps, missing = _load("usps")
    gamma = None if usps is None else 1.0 / (usps.X.shape[1] * float(usps.X.var()))
    units.append({"label": "usps", "dataset": "usps", "data": usps, "missing": missing, "kernel": "rbf",
                  "kernel_params": {"gamma": gamma}, "C": 10.0, "n_classes": 10, "subset": plan.usps_subset,
                  "alignment_target": "multiclass"})  # fmt: skip
    news, missing = _load("20newsgroups")
    for label, classes, target in (("20newsgroups", 20, "multiclass"), ("20newsgroups-1vsrest", 2, "uneven")):
        unit = {"label": label, "dataset": label, "data": news, "missing": missing, "kernel": "linear",
                "kernel_params": {}, "C": 1.0, "n_classes": classes, "subset": plan.newsgroups_subset,
                "alignment_target": target}  # fmt: skip
        if news is not None and classes == 2:
            unit["query_class"] = int(np.flatnonzero(np.asarray(news.target_names) == plan.newsgroups_query)[0])
            unit["query"] = plan.newsgroups_query
        units.append(unit)
    for unit in units:
        unit["n"] = 0 if unit["data"] is None else (unit["subset"] or (len(unit["data"].y),))[0]
    return units


def _synthetic_units(plan):
    common = {"dataset": "synthetic", "kernel": "rbf", "kernel_params": {"gamma": 1.0 / plan.d}, "C": 1.0,
              "n_classes": 2, "d": plan.d, "alignment_target": "classification"}  # fmt: skip
    units = [{**common, "label": f"synthetic-{n}", "n": n, "n_test": plan.n_test} for n in plan.synthetic_sizes]
    units += [{**common, "label": f"synthetic-{n}", "n": n, "n_test": 0, "sampled_only": True}
              for n in plan.sampled_only_sizes]  # fmt: skip
    sklearn = [{**common, "label": f"sklearn-{n}", "n": n, "n_test": plan.n_test, "solver": "sklearn"}
               for n in plan.sklearn_sizes]  # fmt: skip
    return units, sklearn


def _worker_counts(config, plan):
    if config.scheduler == "threads":
        return (0,)
    if config.scheduler != "local":
        return (-1,)  # a remote cluster: its workers, counted when connected
    return (config.n_workers,) if config.n_workers else plan.workers


def make_tasks(config):
    """One task per unit (data set × size × cluster), each with the plan's limits and this run's scratch folder."""
    import tempfile

    import dask

    plan = plan_for(config)
    scratch = dask.config.get("dkernel.large-scale.scratch", None) or tempfile.gettempdir()
    synthetic, sklearn = _synthetic_units(plan)
    units = _real_units(plan) + synthetic
    limits = {"samples": list(plan.samples), "alignment_repeats": plan.alignment_repeats,
              "alignment_samplings": list(SAMPLINGS), "chunk": plan.chunk,
              "store_max_n": plan.store_max_n, "store_max_bytes": plan.store_max_bytes,
              "exact_max_n": plan.exact_max_n, "svc_max_n": plan.svc_max_n, "skip": list(plan.skip),
              "scratch": scratch, "quick": config.quick}  # fmt: skip
    wanted = (lambda unit: True) if plan.datasets is None else (
        lambda unit: unit["label"] in plan.datasets or unit["dataset"] in plan.datasets)
    labels = [unit["label"] for unit in units + sklearn]
    tasks = []
    for workers in _worker_counts(config, plan):
        for unit in units:
            if wanted(unit):
                tasks.append(_task(unit, limits, workers, labels))
    tasks += [_task(unit, limits, 0, labels) for unit in sklearn if wanted(unit)]
    return tasks


def _task(unit, limits, workers, labels):
    # record_format: what the records hold (2: convergence and McNemar counts); a unit saved in another format
    # is measured again.
    task = {"solver": "dkernel", "sampled_only": False, "n_test": None, "missing": None, **unit, **limits,
            "workers": workers, "seed_index": labels.index(unit["label"]), "record_format": 2}  # fmt: skip
    task["samples"] = [s for s in task["samples"] if s <= max(task["n"], 2)]
    task["svc_params"] = {k: v for k, v in task["kernel_params"].items() if v is not None}
    return task


# --------------------------------------------------------------------------- #
# Running the units: one cluster per worker count, in this process
# --------------------------------------------------------------------------- #


def _unit_key(task):
    return f"{task['label']}-w{task['workers']}"


def execute(run_task, tasks, config):
    """Run the units one at a time from this process, on one cluster per worker count; reuse saved units.

    A unit saved by an earlier run of the same plan (``OUT/.NAME.units/``) is
    not measured again, unless its label is in ``dkernel.large-scale.rerun``.
    """
    import dask

    from dkernel._runtime.client import scheduler_client

    saved = UnitStore(config.out, NAME)
    rerun = set(dask.config.get("dkernel.large-scale.rerun", None) or ())
    results = [None] * len(tasks)
    for index, task in enumerate(tasks):
        if task["label"] not in rerun and task["dataset"] not in rerun:
            results[index] = saved.load(_unit_key(task), fingerprint(task))
    for workers in dict.fromkeys(task["workers"] for task in tasks):
        pending = [i for i, task in enumerate(tasks) if task["workers"] == workers and results[i] is None]
        if not pending:
            continue
        scheduler = None if workers == 0 else config.scheduler
        with scheduler_client(scheduler, n_workers=max(workers, 1), threads_per_worker=1) as client:
            counted = workers if client is None or workers > 0 else len(client.scheduler_info()["workers"])
            if client is not None:
                warm_up(client)
            with long_lived_objects_left_out_of_collections():
                _run_units(run_task, tasks, pending, counted, client, saved, results, config)
    return results


def _run_units(run_task, tasks, pending, counted, client, saved, results, config):
    """Run the ``pending`` units on ``client`` one at a time, saving each one's records when done."""
    for index in pending:
        task = {**tasks[index], "workers": counted, "client": client}
        start = time.perf_counter()
        if config.progress:
            log(f"{_unit_key(task)}: running")
        records = run_task(task)
        if config.progress:
            log(f"{_unit_key(task)}: {len(records)} records in {time.perf_counter() - start:.1f} s")
        saved.save(_unit_key(tasks[index]), fingerprint(tasks[index]), records)
        results[index] = records


def run_task(task):
    """The records of one unit: its stages run from this process on ``task["client"]`` (None: in process)."""
    rng = task_rng(task["seed"], task["seed_index"])
    return unit_records(task, task.get("client"), rng)


if __name__ == "__main__":
    run_as_script(NAME)
