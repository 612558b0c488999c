"""The experiments shared by the Kandola, Shawe-Taylor & Cristianini pipelines (Tables 1–6): tasks and records.

One task per data set × training fraction × repeat: one random split (the
same for every data setting and algorithm), and on it the kernel before
(``K``) and after adaptation (``G``) under each data setting, each form of
Algorithm 1's weights and each eigenvalue cut-off (:mod:`._kandola_methods`).
A record holds one matrix's measures on one split, with every fit's
convergence; the choice of ``C`` or λ, the readings of the paper's error
column and the verdicts are made from the records (:mod:`._kandola_cells`,
:mod:`._kandola_verdicts`). The regression pipeline adds the sinc
calibration: the kernel ``K`` on the same splits for every (σ, noise) of a
grid, to find the setting the paper's own K row implies.
"""

import numpy as np

from ._kandola_data import DATA_SETTINGS, DATASETS, SINC_GRID, client_arrays, grams, sinc_gram, with_spectra
from ._kandola_methods import CUTOFFS, blocks_of, inductive_variants, measure, transductive_variants

__all__ = ["CALIBRATION", "FRACTIONS", "QUICK_REPEATS", "REPEATS", "n_repeats", "run_task", "split", "split_tasks"]

FRACTIONS = (0.8, 0.5, 0.2)
REPEATS, QUICK_REPEATS = 10, 2

#: The records of the sinc calibration grid.
CALIBRATION = "sinc calibration"


def n_repeats(config):
    """``--repeats``, else 10 (2 with ``--quick``)."""
    return config.repeats or (QUICK_REPEATS if config.quick else REPEATS)


def _client_data(name, seed):
    """A data set in ``dask.delayed`` keys (None when its files are not found): its arrays, read or drawn here (the
    synthetic sets once from ``seed``: the paper's runs differ in their random splits), and the Grams and
    eigenpairs that every split shares, computed once where the tasks run."""
    import dask

    from dkernel.datasets import DatasetNotFoundError

    rng = np.random.default_rng(np.random.SeedSequence([seed, sorted(DATASETS).index(name)]))
    try:
        arrays = client_arrays(name, rng)
    except (DatasetNotFoundError, OSError):
        return None
    key = f"pipeline-data-{name}-{dask.base.tokenize(*arrays.values())}"
    return dask.delayed(with_spectra, pure=True)(name, dask.delayed(arrays, name=key, traverse=False, pure=True))


def split_tasks(pipeline, names, config, calibrate=False):
    """One task per data set × training fraction × repeat (data sets whose files are missing are left out), and
    with ``calibrate`` one per (σ, noise) of the sinc grid."""
    import sys

    tasks = []
    for name in names:
        data = _client_data(name, config.seed)
        if data is None:
            print(f"{pipeline}: skipping {name}: its data files were not found (set DKERNEL_DATA).", file=sys.stderr)
            continue
        tasks += [{"dataset": name, "train_fraction": f, "repeat": r, "data": data}
                  for f in FRACTIONS for r in range(n_repeats(config))]
        if calibrate and name == "sinc":
            tasks += [{"dataset": CALIBRATION, "sigma": s, "noise": e, "repeats": n_repeats(config), "data": data}
                      for s in SINC_GRID["sigma"] for e in SINC_GRID["noise"]]
    for index, task in enumerate(tasks):
        task["seed_index"] = index
    return tasks


def split(n, name, fraction, repeat, seed, labels=None):
    """The split of run ``repeat`` at ``fraction`` of ``n`` points: drawn from (seed, data set, fraction, repeat),
    stratified by ``labels`` for the uneven sets (both parts keep the classes' proportions, so both have
    positives)."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng([seed, sorted(DATASETS).index(name), FRACTIONS.index(fraction), repeat])
    train, test = train_test_split(np.arange(n), train_size=fraction, random_state=int(rng.integers(2**31 - 1)),
                                   stratify=labels)
    return np.sort(train), np.sort(test)


def _flat(measures):
    """The cross-validated choices as flat columns of results.csv (the summary's means)."""
    flat = {}
    if "svc_cv" in measures:
        k = measures["svc"]["C"].index(measures["svc_cv"]["C"])
        tp, fp, fn = (measures["svc"][c][k] for c in ("tp", "fp", "fn"))
        n = sum(measures["svc"][c][k] for c in ("tp", "fp", "fn", "tn"))
        flat.update(svc_C=measures["svc_cv"]["C"], error_svc_cv=(fp + fn) / n)
    if "pw" in measures:
        flat["error_pw"] = (measures["pw"]["fp"] + measures["pw"]["fn"]) / sum(measures["pw"].values())
    if "ridge_cv" in measures:
        k = measures["ridge"]["lambda"].index(measures["ridge_cv"]["lambda"])
        flat.update(ridge_alpha=measures["ridge_cv"]["lambda"], error_rr_cv=measures["ridge"]["mse_centered"][k])
    return flat


def _variants(algorithm, K, y, train, test, target, spectrum):
    if algorithm == "transductive":
        return transductive_variants(K, y, train, test, target, spectrum)
    return inductive_variants(K, y, train, test, target)


def run_split(task):
    """One random split of one data set: a record per data setting × algorithm × matrix variant."""
    name = task["dataset"]
    spec = DATASETS[name]
    arrays = task["data"]
    labels = arrays["y"] if spec["task"] == "uneven" else None
    n = len(arrays["x"]) if name == "sinc" else len(arrays["y"])
    train, test = split(n, name, task["train_fraction"], task["repeat"], task["seed"], labels)
    cv_seed = int(np.random.default_rng([task["seed"], task["seed_index"]]).integers(2**31 - 1))
    common = {"dataset": name, "kernel": spec["kernel"], "target": spec["target"],
              "train_fraction": task["train_fraction"], "n_train": len(train), "n_test": len(test)}
    algorithms = ("transductive", "inductive") if spec["task"] == "uneven" else ("transductive",)
    records = []
    for data, (K, K_inductive, y, spectrum) in grams(name, arrays, train).items():
        first_data = data == DATA_SETTINGS[name][0]
        setting = {**common, "data": data,
                   "positive_fraction": float(np.mean(y == 1)) if spec["task"] == "uneven" else None}
        measured_K = None
        for algorithm in algorithms:
            base = K if algorithm == "transductive" else K_inductive
            if measured_K is None or base is not K:
                measured_K = measure(blocks_of(base, train, test), y[train], y[test], spec,
                                     cv_seed if first_data else None)
            records.append({**setting, "algorithm": algorithm, "matrix": "K", "weighting": None, "cutoff": None,
                            "rank": None, "g_scale": 1.0, **measured_K, **_flat(measured_K)})
            measured = {}
            for weighting, cutoff, blocks, rank, scale, same in _variants(algorithm, base, y, train, test,
                                                                          spec["target"], spectrum):
                first = first_data and cutoff == CUTOFFS[algorithm][0]
                result = measured[same] if same else measure(blocks, y[train], y[test], spec,
                                                            cv_seed if first else None)
                measured[(weighting, cutoff)] = result
                records.append({**setting, "algorithm": algorithm, "matrix": "G", "weighting": weighting,
                                "cutoff": cutoff, "rank": rank, "g_scale": scale, **result, **_flat(result)})
    return [{**rec, "repeat": task["repeat"]} for rec in records]


def run_calibration(task):
    """The sinc kernel K at one (σ, noise) of the grid, on every split of the main runs."""
    K, y = sinc_gram(task["data"], task["sigma"], task["noise"])
    spec = DATASETS["sinc"]
    records = []
    for fraction in FRACTIONS:
        for repeat in range(task["repeats"]):
            train, test = split(len(y), "sinc", fraction, repeat, task["seed"])
            M_train, M_test_train, M_test = blocks_of(K, train, test)
            m = measure((M_train, M_test_train, M_test), y[train], y[test], spec)
            m["ridge"] = {k: v for k, v in m["ridge"].items() if not k.endswith("_raw")}  # the K row's ridge only
            records.append({"dataset": CALIBRATION, "sigma": task["sigma"], "noise": task["noise"],
                            "train_fraction": fraction, "repeat": repeat, **m})
    return records


def run_task(task):
    """The records of one task: a split of a data set, or a grid point of the sinc calibration."""
    return run_calibration(task) if task["dataset"] == CALIBRATION else run_split(task)
