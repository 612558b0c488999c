"""The stages of ``large_scale_centering``: its plan, its data, each timed stage, memory peaks and saved units.

A *unit* is one data set at one size on one cluster (1 or 2 worker
processes); its stages run one after the other from this process, each
timed and measured on its own (:class:`StagePeaks`). Each finished unit is
saved as JSON in ``OUT/.large_scale_centering.units/`` (:class:`UnitStore`),
so an interrupted run resumes where it stopped; a unit is measured again
when its plan changes or its data set is named in the dask config
``dkernel.large-scale.rerun``.
"""

import contextlib
import dataclasses
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import dask
import numpy as np

from dkernel._runtime.memory import PeakMemory

__all__ = [
    "RECORD_KEYS",
    "STAGES",
    "Plan",
    "StagePeaks",
    "UnitStore",
    "long_lived_objects_left_out_of_collections",
    "plan_for",
    "unit_records",
]

#: Every record has these keys (None where a value does not apply to its stage).
RECORD_KEYS = (
    "dataset", "n", "n_sample", "stage", "workers", "seconds", "peak_worker_bytes", "peak_client_bytes",
    "test_error", "alignment", "alignment_se", "exact_alignment", "h_rel_error", "sampling",
)  # fmt: skip

#: How the sampled alignment draws its points: the estimate the verdict judges first, the alternative beside it.
SAMPLINGS = {"stratified by class": "auto", "uniform": False}

#: The stages in the order they run within a unit.
STAGES = (
    "gram", "centering_exact", "centering_sampled", "alignment_exact", "alignment_sampled", "svc_fit",
    "svc_predict", "sklearn_fit",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a run measures: data sets, sizes, sample sizes n', workers and where each stage stops.

    Parameters
    ----------
    synthetic_sizes : tuple of int
        n of the synthetic two-class data (d = ``d``), every stage up to its limit below.
    sampled_only_sizes : tuple of int
        n of the synthetic data measured by the sampled stages alone.
    samples : tuple of int
        The sample sizes n' of sampled centering and sampled alignment.
    workers : tuple of int
        Worker processes (one thread each) of the LocalClusters.
    store_max_n, exact_max_n, svc_max_n : int
        Largest n whose Gram is written to zarr (above: the Gram on the fly), whose exact centering and
        alignment are computed, whose SVMs are fitted.
    store_max_bytes : int
        A store is written only when its float32 size is below this and half the free disk.
    sklearn_sizes : tuple of int
        n at which ``sklearn.svm.SVC`` is fitted (in this process, once).
    usps_subset, newsgroups_subset : (int, int) or None
        Training and test points kept of USPS and 20 Newsgroups (None: all).
    skip : tuple of str
        ``"LABEL:STAGE"`` pairs not run (``"synthetic-100000:centering_exact"``).
    datasets : tuple of str or None
        Unit labels to run (None: all).
    """

    synthetic_sizes: tuple = (20_000, 50_000, 100_000, 200_000)
    sampled_only_sizes: tuple = (1_000_000,)
    d: int = 64
    n_test: int = 2000
    samples: tuple = (500, 1000, 2000, 4000)
    alignment_repeats: int = 10
    workers: tuple = (1, 2)
    store_max_n: int = 50_000
    store_max_bytes: int = 12 * 2**30
    exact_max_n: int = 50_000
    svc_max_n: int = 20_000
    sklearn_sizes: tuple = (5000, 10_000, 20_000)
    usps_subset: tuple | None = None
    newsgroups_subset: tuple | None = None
    newsgroups_query: str = "sci.med"
    chunk: int = 4096
    skip: tuple = ()
    datasets: tuple | None = None

    def to_dict(self):
        return dataclasses.asdict(self)


QUICK_PLAN = Plan(
    synthetic_sizes=(1000, 2000), sampled_only_sizes=(8000,), n_test=500, samples=(50, 150, 450),
    alignment_repeats=5, store_max_n=2000, exact_max_n=2000, svc_max_n=2000, sklearn_sizes=(1000, 2000),
    usps_subset=(400, 200), newsgroups_subset=(400, 200), chunk=1024, skip=("20newsgroups:svc_fit",),
)  # fmt: skip


def plan_for(config):
    """The full or quick plan, with the dask config ``dkernel.large-scale.{datasets,skip}`` applied."""
    plan = QUICK_PLAN if config.quick else Plan()
    datasets = dask.config.get("dkernel.large-scale.datasets", None)
    skip = dask.config.get("dkernel.large-scale.skip", None)
    return dataclasses.replace(plan, datasets=tuple(datasets) if datasets else plan.datasets,
                               skip=tuple(skip) if skip else plan.skip)  # fmt: skip


# --------------------------------------------------------------------------- #
# Records
# --------------------------------------------------------------------------- #


def record(task, stage, **values):
    """One record: every key of :data:`RECORD_KEYS` (None where absent) and the unit's setting."""
    rec = dict.fromkeys(RECORD_KEYS)
    rec.update(dataset=task["dataset"], n=task["n"], workers=task["workers"], stage=stage, label=task["label"],
               kernel=task["kernel"], n_test=task.get("n_test"), n_classes=task.get("n_classes"))  # fmt: skip
    rec.update(values)
    return rec


def not_run(task, stage, reason):
    """The record of a stage that did not run, and why."""
    return record(task, stage, note=reason)


# --------------------------------------------------------------------------- #
# Memory
# --------------------------------------------------------------------------- #


class StagePeaks:
    """Peak memory during a ``with`` block: each worker's, the cluster's and this process's.

    ``worker_bytes`` is the largest peak resident memory of one worker
    process (their ``VmHWM``, reset on entry: no short peak is missed);
    ``cluster_bytes`` the largest total of the workers' process memory that
    :class:`distributed.diagnostics.MemorySampler` recorded (sampled every
    0.1 s); ``client_bytes`` this process's own peak. Without a client the
    worker figures are None; on systems without ``/proc/self/clear_refs``
    the resident peaks are None too.
    """

    def __init__(self, client):
        self.client = client
        self.worker_bytes = self.cluster_bytes = self.client_bytes = None
        self._peaks = PeakMemory(client)
        self._sampler = self._sampling = None

    def __enter__(self):
        self._peaks.__enter__()
        if self.client is not None:
            from distributed.diagnostics import MemorySampler

            self._sampler = MemorySampler()
            self._sampling = self._sampler.sample("stage", client=self.client, measure="process", interval=0.1)
            self._sampling.__enter__()
        return self

    def __exit__(self, *exc):
        if self.client is not None:
            self._sampling.__exit__(*exc)
            samples = self._sampler.samples.get("stage") or []
            self.cluster_bytes = max((int(nbytes) for _, nbytes in samples), default=None)
        self._peaks.__exit__(*exc)
        if self._peaks.exact:
            self.worker_bytes = self._peaks.largest_worker_bytes
            self.client_bytes = self._peaks.client_bytes

    def values(self):
        return {"peak_worker_bytes": self.worker_bytes, "peak_client_bytes": self.client_bytes,
                "peak_cluster_bytes": self.cluster_bytes}  # fmt: skip


@contextlib.contextmanager
def long_lived_objects_left_out_of_collections():
    """Within the block, the objects alive on entry (modules, data sets, the client) are not traversed by the
    garbage collector (:func:`gc.freeze`), so that the collection before each stage (:func:`measured`) costs
    milliseconds, not the 0.2–0.3 s of a full one; they are handed back to it on exit."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def measured(client, fn):
    """``(fn(), seconds, peaks)``: one call of ``fn`` timed, with its :class:`StagePeaks`, after the garbage of
    the stages before is collected."""
    gc.collect()
    with StagePeaks(client) as peaks:
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
    return result, seconds, peaks.values()


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def overlapping_classes(n, d, rng):
    """Two unit Gaussians in ``d`` dimensions whose means are 1 apart along the first axis; labels ±1."""
    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = rng.normal(size=(n, d))
    X[:, 0] += 0.5 * y
    return X, y


def _subset(X, y, size, rng):
    if size is None or size >= len(y):
        return X, y
    keep = np.sort(rng.choice(len(y), size=size, replace=False))
    return X[keep], y[keep]


def unit_data(task, rng):
    """``(X, y, X_test, y_test)`` of a unit (X_test None for the sampled-only sizes)."""
    if task["dataset"] == "synthetic":
        X, y = overlapping_classes(task["n"] + task["n_test"], task["d"], rng)
        n = task["n"]
        return (X[:n], y[:n], X[n:], y[n:]) if task["n_test"] else (X, y, None, None)
    data = task["data"]
    train, test = task.get("subset") or (None, None)
    X, y = _subset(data.X, data.y, train, rng)
    X_test, y_test = _subset(data.X_test, data.y_test, test, rng)
    if task["dataset"] == "20newsgroups-1vsrest":
        query = task["query_class"]
        y, y_test = np.where(y == query, 1, -1), np.where(y_test == query, 1, -1)
    return X, y, X_test, y_test


# --------------------------------------------------------------------------- #
# Saved units
# --------------------------------------------------------------------------- #


class UnitStore:
    """The finished units of a run, one JSON file each in ``OUT/.NAME.units/`` (what a resumed run reuses)."""

    def __init__(self, out, name):
        self.folder = Path(out) / f".{name}.units"

    def _path(self, key):
        return self.folder / f"{key}.json"

    def load(self, key, fingerprint):
        """The records saved for ``key`` under the same plan ``fingerprint``, else None."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return saved["records"] if saved.get("fingerprint") == fingerprint else None

    def save(self, key, fingerprint, records):
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self._path(key).with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"fingerprint": fingerprint, "records": records}, default=_plain))
        tmp.replace(self._path(key))


def _plain(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def fingerprint(task):
    """What identifies a unit's measurement: its task without the data arrays."""
    return json.dumps({k: v for k, v in task.items() if k not in ("data",)}, sort_keys=True, default=str)


# --------------------------------------------------------------------------- #
# Stages
# --------------------------------------------------------------------------- #


def _skipped(task, stage):
    return f"{task['label']}:{stage}" in task["skip"]


def _centering(task, y, n_sample=None, rng=None):
    from dkernel.centering import Centering

    scheme = "multiclass" if task["n_classes"] > 2 else "class-balanced"
    return Centering.from_scheme(scheme, y, n_sample=n_sample, random_state=rng)


def _store_choice(task):
    """``(store it?, why not)``: a zarr store where the plan and the free disk allow."""
    n = task["n"]
    nbytes = 4 * n * n
    if n > task["store_max_n"] or nbytes > task["store_max_bytes"]:
        return False, f"the float32 store would take {nbytes / 1e9:.1f} GB; above the plan's limit (n ≤ " \
                      f"{task['store_max_n']:,})"
    free = shutil.disk_usage(task["scratch"]).free
    if nbytes > free / 2:
        return False, f"the float32 store would take {nbytes / 1e9:.1f} GB, over half the free disk " \
                      f"({free / 1e9:.0f} GB)"
    return True, None


def gram_stage(task, X, client, folder):
    """The Gram: written to a zarr store (timed) where it fits, else evaluated on the fly (a KernelGram)."""
    from dkernel import GramMatrix, KernelGram

    on_the_fly = KernelGram(X, task["kernel"], chunk=task["chunk"], **task["kernel_params"])
    if _skipped(task, "gram"):
        return on_the_fly, [not_run(task, "gram", "skipped by the plan"), ]
    store, why = _store_choice(task)
    if not store:
        return on_the_fly, [record(task, "gram", storage="on the fly", note=why)]
    path = os.path.join(folder, "K.zarr")
    gram, seconds, peaks = measured(client, lambda: GramMatrix.compute(
        X, kernel=task["kernel"], store=path, dtype="float32", chunk=task["chunk"], client=client, progress=False,
        **task["kernel_params"]))  # fmt: skip
    return gram, [record(task, "gram", storage="zarr", seconds=seconds, store_bytes=4 * task["n"] ** 2, **peaks)]


def centering_stages(task, exact_source, sampled_source, y, client, rng):
    """Exact h (one pass over the Gram) and sampled h for each n' (only K(X, X_S)): time and relative error."""
    from dkernel.centering import origin_products

    records, h = [], None
    storage = "zarr" if hasattr(exact_source, "path") and exact_source.path else "on the fly"
    if task["n"] <= task["exact_max_n"] and not _skipped(task, "centering_exact"):
        (h, _), seconds, peaks = measured(client, lambda: origin_products(exact_source, _centering(task, y),
                                                                          client=client))  # fmt: skip
        records.append(record(task, "centering_exact", seconds=seconds, storage=storage, **peaks))
    elif task["n"] <= task["exact_max_n"]:
        records.append(not_run(task, "centering_exact", "skipped by the plan"))
    if _skipped(task, "centering_sampled"):
        return records + [not_run(task, "centering_sampled", "skipped by the plan")], h
    for n_sample in task["samples"]:
        centering = _centering(task, y, n_sample, rng)
        (h_s, _), seconds, peaks = measured(client, lambda: origin_products(sampled_source, centering,
                                                                            client=client))  # fmt: skip
        error = float(np.linalg.norm(h_s - h) / np.linalg.norm(h)) if h is not None else None
        records.append(record(task, "centering_sampled", n_sample=n_sample, seconds=seconds, h_rel_error=error,
                              storage="on the fly", **peaks))  # fmt: skip
    return records, h


def alignment_stages(task, exact_source, sampled_source, y, client, rng):
    """Exact alignment (one pass) and sampled alignment with its standard error for each n', from samples drawn
    class by class and from uniform ones (:data:`SAMPLINGS`; ``sampling`` of each record says which it was).

    The unit's target: ``±1`` labels, Kandola's eq. 9 for the uneven query, or for more than two classes
    ``YYᵀ`` with the simplex code ``Y`` (``target="multiclass"`` of :func:`dkernel.alignment.target_alignment`).
    """
    from dkernel.alignment import sampled_target_alignment, target_alignment

    records, exact = [], None
    target = task["alignment_target"]
    if task["n"] <= task["exact_max_n"] and not _skipped(task, "alignment_exact"):
        exact, seconds, peaks = measured(client, lambda: target_alignment(exact_source, y, target, client=client))
        records.append(record(task, "alignment_exact", seconds=seconds, alignment=exact, exact_alignment=exact,
                              target=target, **peaks))  # fmt: skip
    if _skipped(task, "alignment_sampled"):
        return records + [not_run(task, "alignment_sampled", "skipped by the plan")]
    for n_sample in task["samples"]:
        for stratify in (SAMPLINGS[name] for name in task["alignment_samplings"]):
            est, seconds, peaks = measured(client, lambda: sampled_target_alignment(
                sampled_source, y, n_sample, n_repeats=task["alignment_repeats"], target=target, stratify=stratify,
                random_state=rng, client=client))  # fmt: skip
            records.append(record(task, "alignment_sampled", n_sample=n_sample, seconds=seconds,
                                  alignment=est.value, alignment_se=est.stderr, exact_alignment=exact, target=target,
                                  sampling="stratified by class" if est.stratified else "uniform",
                                  **peaks))  # fmt: skip
    return records


def svc_stages(task, X, y, X_test, y_test, client):
    """dkernel's SVC uncentered and centered: fit, prediction through the original kernel, decision gap.

    Meilă's translation invariance: the centered SVM with b − Δb is the
    uncentered one, so their decision values on the test points differ only
    by the solver's tolerance; the largest difference is recorded, and the
    test points one classifies right and the other wrong. Each fit's
    ``fit_status_`` is recorded (0: converged).
    """
    from dkernel import SVC

    if task["n"] > task["svc_max_n"] or X_test is None:
        return []
    if _skipped(task, "svc_fit"):
        return [not_run(task, "svc_fit", "skipped by the plan")]
    records, decisions, right = [], {}, {}
    for variant, centering in (("uncentered", None), ("centered", "class-balanced")):
        # One-vs-rest for many classes: c binary problems instead of c(c-1)/2 (Graf & Borer's COIL scheme).
        model = SVC(C=task["C"], kernel=task["kernel"], multiclass="ovr" if task["n_classes"] > 2 else "ovo",
                    centering=centering, client=client, **task["svc_params"])  # fmt: skip
        _, seconds, peaks = measured(client, lambda: model.fit(X, y))
        records.append(record(task, "svc_fit", variant=variant, seconds=seconds, solver="dkernel",
                              n_sv=int(model.support_.size), fit_status=int(model.fit_status_),
                              converged=model.fit_status_ == 0, **peaks))  # fmt: skip
        decision, seconds, peaks = measured(client, lambda: np.asarray(model.decision_function(X_test)))
        predicted = model.classes_[np.argmax(decision, axis=1)] if decision.ndim > 1 else \
            np.where(decision > 0, model.classes_[1], model.classes_[0])
        decisions[variant], right[variant] = decision, predicted == y_test
        records.append(record(task, "svc_predict", variant=variant, seconds=seconds, solver="dkernel",
                              test_error=float(np.mean(predicted != y_test)), **peaks))  # fmt: skip
    gap = float(np.max(np.abs(decisions["centered"] - decisions["uncentered"])))
    scale = float(np.max(np.abs(decisions["uncentered"])))
    # The test points the centered SVM gets right and the uncentered one wrong, and the reverse (McNemar).
    fixed = int(np.sum(right["centered"] & ~right["uncentered"]))
    broken = int(np.sum(~right["centered"] & right["uncentered"]))
    for rec in records:
        if rec["variant"] == "centered":
            rec.update(decision_max_diff=gap, decision_scale=scale, centering_fixed=fixed, centering_broken=broken)
    return records


def sklearn_stage(task, X, y, X_test, y_test):
    """``sklearn.svm.SVC`` on the same data and kernel, in this process: fit time and test error."""
    from sklearn.svm import SVC as SklearnSVC

    model = SklearnSVC(C=task["C"], kernel=task["kernel"], cache_size=2000, **task["svc_params"])
    _, seconds, peaks = measured(None, lambda: model.fit(X, y))
    error = float(np.mean(model.predict(X_test) != y_test))
    return [record(task, "sklearn_fit", seconds=seconds, solver="sklearn", test_error=error,
                   n_sv=int(model.support_.size), fit_status=int(model.fit_status_),
                   converged=model.fit_status_ == 0, **peaks)]  # fmt: skip


# --------------------------------------------------------------------------- #
# A unit
# --------------------------------------------------------------------------- #


def unit_records(task, client, rng):
    """Every stage of one unit, in order; the store it writes is removed when the unit is done."""
    from dkernel import KernelGram

    if task.get("missing"):
        return [not_run(task, "data", task["missing"])]
    X, y, X_test, y_test = unit_data(task, rng)
    task = {**task, "n": len(y), "n_test": None if y_test is None else len(y_test)}
    if task["solver"] == "sklearn":
        return sklearn_stage(task, X, y, X_test, y_test)
    sampled_source = KernelGram(X, task["kernel"], chunk=task["chunk"], **task["kernel_params"])
    with tempfile.TemporaryDirectory(prefix="large-scale-gram-", dir=task["scratch"]) as folder:
        if task["sampled_only"]:
            exact_source, records = sampled_source, [record(task, "gram", storage="on the fly",
                                                            note="sampled steps only at this n")]  # fmt: skip
        else:
            exact_source, records = gram_stage(task, X, client, folder)
        centering, _ = centering_stages(task, exact_source, sampled_source, y, client, rng)
        records += centering
        records += alignment_stages(task, exact_source, sampled_source, y, client, rng)
        if not task["sampled_only"]:
            records += svc_stages(task, X, y, X_test, y_test, client)
        del exact_source
    return records


def warm_up(client):
    """Import on every worker what the stages use (the kernels, the solver), so that no stage pays for it."""
    from dkernel import SVC, GramMatrix
    from dkernel.centering import Centering, origin_products

    rng = np.random.default_rng(0)
    X, y = overlapping_classes(64, 4, rng)
    GramMatrix.compute(X, kernel="rbf", client=client, progress=False)
    origin_products(X @ X.T, Centering.class_balanced(y), client=client)
    SVC(client=client, centering="class-balanced").fit(X, y).decision_function(X)


def log(message):
    print(f"large_scale_centering: {message}", file=sys.stderr, flush=True)

