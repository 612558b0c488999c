"""The experimental pieces shared by the Kandola, Shawe-Taylor & Cristianini pipelines (Tables 1–6).

The data sets of §6 (the uneven Gaussian toy, Medline query 20 with a
bag-of-words kernel, the sinc function, auto-mpg), one random split per
task, the kernel before (``K``) and after adaptation (``G``, transductive:
Algorithm 1, or inductive: Algorithm 2, both from :mod:`dkernel.adaptation`),
and the measures of one split: training and test alignment, the test errors of
``dkernel.SVC`` and of the Parzen window classifier, F1 of the SVC, and the
test error of ridge regression (scikit-learn's ``KernelRidge`` on the
precomputed matrix). Hyper-parameters (the SVC's C, the ridge λ) are chosen
by cross-validation on the training part of each split.
"""

import math
import warnings

import numpy as np

from ._kandola_checks import split_checks, table_notes
from ._meila import data_home
from ._runner import task_rng

__all__ = [
    "FRACTIONS",
    "MEASURE_KEYS",
    "QUICK_REPEATS",
    "REPEATS",
    "client_data",
    "n_repeats",
    "run_split",
    "split_tasks",
]

FRACTIONS = (0.8, 0.5, 0.2)
REPEATS, QUICK_REPEATS = 10, 2
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
RIDGE_GRID = (1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0)
FOLDS = 5
MEASURE_KEYS = ("train_alignment", "test_alignment", "svc_error", "pw_error", "f1", "rr_error")

#: The data sets: their kernel, alignment target and learners.
DATASETS = {
    "toy": {"kernel": "linear", "target": "uneven", "task": "uneven"},
    "medline": {"kernel": "bag-of-words", "target": "uneven", "task": "uneven"},
    "sinc": {"kernel": "gaussian", "target": "regression", "task": "regression"},
    "auto-mpg": {"kernel": "linear", "target": "regression", "task": "regression"},
}
TOY_SHAPE, TOY_POSITIVE = (100, 10), 65
SINC_N, SINC_RANGE, SINC_NOISE, SINC_SIGMA = 100, 10.0, 0.1, 1.0
MEDLINE_QUERY = 20
#: auto-mpg's six characteristics of §6 (the UCI file's origin is left out, as in the paper).
AMPG_COLUMNS = slice(0, 6)


def n_repeats(config):
    """``--repeats``, else 10 (2 with ``--quick``)."""
    return config.repeats or (QUICK_REPEATS if config.quick else REPEATS)


# --------------------------------------------------------------------------- #
# Data, read or drawn on the client and carried by the tasks
# --------------------------------------------------------------------------- #


def _toy(rng):
    """§6: 100 points of 10 standard Gaussian inputs; 65 labels +1 and 35 labels -1 at random."""
    X = rng.normal(size=TOY_SHAPE)
    y = np.where(rng.permutation(TOY_SHAPE[0]) < TOY_POSITIVE, 1, -1)
    return X @ X.T, y


def _sinc(rng):
    """y = sin(x)/x + N(0, 0.1²) at 100 points x uniform in [-10, 10]; Gaussian kernel exp(-|x-z|²/(2σ²)), σ = 1."""
    x = rng.uniform(-SINC_RANGE, SINC_RANGE, size=SINC_N)
    y = np.sinc(x / np.pi) + SINC_NOISE * rng.normal(size=SINC_N)
    return np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * SINC_SIGMA**2)), y


def _medline():
    """Query 20: log(1 + tf) log(m / df) weights of Porter stems (stop words and punctuation removed), rows of unit
    length; the bag-of-words kernel is their inner product."""
    from sklearn.preprocessing import normalize

    from dkernel.datasets import load

    data = load("medline", query=MEDLINE_QUERY, vectorizer="log-tfidf", stem=True, data_home=data_home())
    X = normalize(data.X)
    return np.asarray((X @ X.T).todense()), np.where(data.y == 1, 1, -1)


def _auto_mpg():
    """Six standardized characteristics (linear kernel) and the miles per gallon."""
    from dkernel.datasets import load

    data = load("auto-mpg", data_home=data_home())
    X = np.asarray(data.X, dtype=np.float64)[:, AMPG_COLUMNS]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X @ X.T, np.asarray(data.y, dtype=np.float64)


def client_data(name, seed):
    """``{"K": ..., "y": ...}`` of a data set in one ``dask.delayed`` key (None when its files are not found).

    The Gram of every point is computed here once (at most 1033 × 1033); the
    synthetic sets are drawn from ``seed``, one data set per run as in the
    paper, whose 10 runs differ in their random splits.
    """
    import dask

    from dkernel.datasets import DatasetNotFoundError

    rng = np.random.default_rng(np.random.SeedSequence([seed, sorted(DATASETS).index(name)]))
    try:
        K, y = {"toy": lambda: _toy(rng), "sinc": lambda: _sinc(rng), "medline": _medline,
                "auto-mpg": _auto_mpg}[name]()
    except (DatasetNotFoundError, OSError):
        return None
    key = f"pipeline-data-{name}-{dask.base.tokenize(K, y)}"
    return dask.delayed({"K": K, "y": y}, name=key, traverse=False, pure=True)


def split_tasks(pipeline, names, config):
    """One task per data set × training fraction × repeat; data sets whose files are missing are left out."""
    import sys

    tasks = []
    for name in names:
        data = client_data(name, config.seed)
        if data is None:
            print(f"{pipeline}: skipping {name}: its data files were not found (set DKERNEL_DATA).", file=sys.stderr)
            continue
        tasks += [{"dataset": name, "train_fraction": f, "repeat": r, "data": data}
                  for f in FRACTIONS for r in range(n_repeats(config))]
    for index, task in enumerate(tasks):
        task["seed_index"] = index
    return tasks


def _split(y, fraction, rng, stratify):
    from sklearn.model_selection import train_test_split

    index = np.arange(len(y))
    train, test = train_test_split(index, train_size=fraction, random_state=int(rng.integers(2**31 - 1)),
                                   stratify=y if stratify else None)
    return np.sort(train), np.sort(test)


# --------------------------------------------------------------------------- #
# The matrices K and G on one split
# --------------------------------------------------------------------------- #


def _blocks(M, train, test):
    return M[np.ix_(train, train)], M[np.ix_(test, train)], M[np.ix_(test, test)]


def _transductive(K, y, train, test, target):
    from dkernel.adaptation import transductive_adaptation

    G = transductive_adaptation(K, y[train], train, target=target, method="exact")
    return _blocks(G.to_numpy(), train, test), G.rank


def _inductive(K, y, train, test, target):
    from dkernel.adaptation import KernelAligner

    aligner = KernelAligner(kernel="precomputed", target=target, method="exact").fit(K[np.ix_(train, train)], y[train])
    F_train, F_test = aligner.training_gram(), aligner.transform(K[np.ix_(test, train)])
    features_train = aligner.transform(K[np.ix_(train, train)])
    return (F_train, F_test @ features_train.T, F_test @ F_test.T), len(aligner.weights_)


def _all_eigenvectors_alignment(K, y, train, target, algorithm):
    """The training alignment of G when no eigenvalue is dropped (the null space's arbitrary basis kept too)."""
    from dkernel.adaptation import transductive_adaptation

    source = K if algorithm == "transductive" else K[np.ix_(train, train)]
    rows = train if algorithm == "transductive" else np.arange(len(train))
    G = transductive_adaptation(source, y[train], rows, target=target, method="exact", tol=None)
    return G.alignment(y[train], rows, target)


def _scaled(blocks, reference):
    """``G`` scaled to the trace of ``K`` on the training points (alignment is scale-free; C's grid is not)."""
    scale = float(np.trace(reference) / np.trace(blocks[0]))
    return tuple(b * scale for b in blocks), scale


# --------------------------------------------------------------------------- #
# Learners and measures
# --------------------------------------------------------------------------- #


def _folds(y, task):
    from sklearn.model_selection import KFold, StratifiedKFold

    if task == "regression":
        return KFold(FOLDS, shuffle=True, random_state=0)
    return StratifiedKFold(max(2, min(FOLDS, int(np.bincount(y > 0).min()))), shuffle=True, random_state=0)


def _svc(M_train, M_test, y_train):
    """``dkernel.SVC`` on the precomputed matrix, C chosen by cross-validation on the training points."""
    from sklearn.model_selection import GridSearchCV

    from dkernel import SVC

    search = GridSearchCV(SVC(kernel="precomputed", client=False), {"C": list(C_GRID)}, cv=_folds(y_train, "uneven"))
    search.fit(M_train, y_train)
    return search.best_estimator_.predict(M_test), float(search.best_params_["C"])


def _ridge(M_train, M_test, y_train):
    """scikit-learn's ``KernelRidge`` on the precomputed matrix, λ chosen by cross-validation.

    It fits ``y - ȳ`` (the regression target of eq. 7, ȳ over the training points) and adds ȳ back: an
    unpenalized intercept, which ``KernelRidge`` has not.
    """
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    mean = float(np.mean(y_train))
    search = GridSearchCV(KernelRidge(kernel="precomputed"), {"alpha": list(RIDGE_GRID)},
                          cv=_folds(y_train, "regression"), scoring="neg_mean_squared_error")
    search.fit(M_train, y_train - mean)
    return search.best_estimator_.predict(M_test) + mean, float(search.best_params_["alpha"])


def _uneven_measures(blocks, y_train, y_test):
    from sklearn.metrics import f1_score

    from dkernel.parzen import ParzenWindowClassifier

    M_train, M_test_train, _ = blocks
    predicted, C = _svc(M_train, M_test_train, y_train)
    parzen = ParzenWindowClassifier(kernel="precomputed", class_weight="balanced").fit(M_train, y_train)
    return {"svc_error": float(np.mean(predicted != y_test)),
            "pw_error": float(np.mean(parzen.predict(M_test_train) != y_test)),
            "f1": float(f1_score(y_test, predicted, pos_label=1, zero_division=0.0)), "rr_error": None,
            "svc_C": C, "ridge_alpha": None}  # fmt: skip


def _regression_measures(blocks, y_train, y_test):
    M_train, M_test_train, _ = blocks
    predicted, alpha = _ridge(M_train, M_test_train, y_train)
    return {"svc_error": None, "pw_error": None, "f1": None,
            "rr_error": float(np.mean((predicted - y_test) ** 2)), "svc_C": None, "ridge_alpha": alpha}  # fmt: skip


def _alignments(blocks, y_train, y_test, target):
    from dkernel.alignment import target_alignment

    M_train, _, M_test = blocks
    return {"train_alignment": target_alignment(M_train, y_train, target, client=False),
            "test_alignment": target_alignment(M_test, y_test, target, client=False)}


def _measures(blocks, y, train, test, spec):
    learners = _uneven_measures if spec["task"] == "uneven" else _regression_measures
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return {**_alignments(blocks, y[train], y[test], spec["target"]), **learners(blocks, y[train], y[test])}


def run_split(task, algorithms=("transductive", "inductive")):
    """One random split of one data set: the records of K and of G for each algorithm."""
    spec = DATASETS[task["dataset"]]
    K, y = task["data"]["K"], task["data"]["y"]
    rng = task_rng(task["seed"], task["seed_index"])
    train, test = _split(y, task["train_fraction"], rng, stratify=spec["task"] == "uneven")
    setting = {"dataset": task["dataset"], "kernel": spec["kernel"], "target": spec["target"],
               "train_fraction": task["train_fraction"], "n_train": len(train), "n_test": len(test),
               "positive_fraction": float(np.mean(y == 1)) if spec["task"] == "uneven" else None}  # fmt: skip
    K_blocks = _blocks(K, train, test)
    K_measures = _measures(K_blocks, y, train, test, spec)
    records, blocks = [], []
    for algorithm in algorithms:
        G_blocks, rank = (_transductive if algorithm == "transductive" else _inductive)(K, y, train, test,
                                                                                         spec["target"])
        G_blocks, scale = _scaled(G_blocks, K_blocks[0])
        records.append({**setting, "algorithm": algorithm, "matrix": "K", **K_measures, "rank": None,
                        "g_scale": 1.0})
        records.append({**setting, "algorithm": algorithm, "matrix": "G", **_measures(G_blocks, y, train, test, spec),
                        "rank": rank, "g_scale": scale,
                        "alignment_all_eigenvectors": _all_eigenvectors_alignment(K, y, train, spec["target"],
                                                                                  algorithm)})
        blocks += [K_blocks, G_blocks]
    checks = {}  # K's checks once per split, though each algorithm records K
    for rec, b in zip(records, blocks):
        key = (rec["matrix"] if rec["matrix"] == "K" else rec["algorithm"])
        checks.setdefault(key, split_checks(rec, b, K, y, train, test))
    return [{**rec, **checks[rec["matrix"] if rec["matrix"] == "K" else rec["algorithm"]],
             "repeat": task["repeat"]} for rec in records]


def spread(records, key, **match):
    """Mean and standard deviation (ddof=1; the paper's parentheses) of ``key`` over the matching records."""
    values = [r[key] for r in records if all(r.get(k) == v for k, v in match.items())
              and isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
    if not values:
        return None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0, len(values)


# --------------------------------------------------------------------------- #
# The paper's tables beside the measured ones
# --------------------------------------------------------------------------- #

#: Tables 1–6 of the paper: {(matrix, train %): {measure: (mean, sd)}}, measures in MEASURE_KEYS order.
def _table(columns, rows):
    return {(m, pct): dict(zip(columns, cells)) for (m, pct), cells in rows.items()}


_UNEVEN = ("train_alignment", "test_alignment", "svc_error", "pw_error", "f1")
_REGRESSION = ("train_alignment", "test_alignment", "rr_error")
PAPER = {
    ("toy", "transductive"): ("Table 1", _table(_UNEVEN, {
        ("K", 80): ((0.009, 0.006), (0.080, 0.072), (0.567, 0.176), (0.617, 0.153), (0.696, 0.021)),
        ("G", 80): ((0.085, 0.005), (0.218, 0.072), (0.450, 0.087), (0.600, 0.101), (0.720, 0.008)),
        ("K", 50): ((0.027, 0.035), (0.022, 0.027), (0.493, 0.153), (0.613, 0.064), (0.587, 0.068)),
        ("G", 50): ((0.104, 0.037), (0.104, 0.022), (0.460, 0.080), (0.593, 0.046), (0.605, 0.005)),
        ("K", 20): ((0.062, 0.067), (0.007, 0.003), (0.546, 0.142), (0.642, 0.026), (0.756, 0.012)),
        ("G", 20): ((0.187, 0.066), (0.074, 0.029), (0.533, 0.138), (0.638, 0.025), (0.759, 0.026))})),
    ("medline", "transductive"): ("Table 2", _table(_UNEVEN, {
        ("K", 80): ((0.103, 0.008), (0.096, 0.020), (0.357, 0.109), (0.963, 0.014), (0.472, 0.001)),
        ("G", 80): ((0.141, 0.009), (0.110, 0.015), (0.183, 0.078), (0.916, 0.012), (0.481, 0.001)),
        ("K", 50): ((0.112, 0.023), (0.089, 0.021), (0.381, 0.208), (0.964, 0.010), (0.603, 0.014)),
        ("G", 50): ((0.175, 0.028), (0.094, 0.020), (0.139, 0.032), (0.956, 0.009), (0.615, 0.012)),
        ("K", 20): ((0.099, 0.012), (0.093, 0.003), (0.404, 0.228), (0.962, 0.003), (0.427, 0.177)),
        ("G", 20): ((0.105, 0.014), (0.100, 0.004), (0.358, 0.222), (0.957, 0.007), (0.441, 0.019))})),
    ("sinc", "transductive"): ("Table 3", _table(_REGRESSION, {
        ("K", 80): ((0.002, 0.001), (0.039, 0.013), (0.163, 0.121)),
        ("G", 80): ((0.253, 0.020), (0.191, 0.083), (0.119, 0.051)),
        ("K", 50): ((0.011, 0.016), (0.007, 0.006), (0.166, 0.063)),
        ("G", 50): ((0.274, 0.052), (0.141, 0.030), (0.123, 0.017)),
        ("K", 20): ((0.002, 0.001), (0.008, 0.006), (0.196, 0.074)),
        ("G", 20): ((0.368, 0.021), (0.086, 0.034), (0.136, 0.009))})),
    ("auto-mpg", "transductive"): ("Table 4", _table(_REGRESSION, {
        ("K", 80): ((0.531, 0.015), (0.521, 0.062), (18.23, 3.19)),
        ("G", 80): ((0.574, 0.013), (0.560, 0.049), (7.89, 1.18)),
        ("K", 50): ((0.534, 0.055), (0.524, 0.056), (16.58, 2.35)),
        ("G", 50): ((0.590, 0.054), (0.539, 0.055), (7.55, 0.69)),
        ("K", 20): ((0.491, 0.026), (0.538, 0.006), (18.57, 4.35)),
        ("G", 20): ((0.490, 0.045), (0.466, 0.009), (9.12, 3.12))})),
    ("toy", "inductive"): ("Table 5", _table(_UNEVEN, {
        ("K", 80): ((0.006, 0.003), (0.062, 0.076), (0.565, 0.170), (0.665, 0.097), (0.556, 0.012)),
        ("G", 80): ((0.198, 0.004), (0.102, 0.024), (0.535, 0.091), (0.540, 0.091), (0.750, 0.001)),
        ("K", 50): ((0.011, 0.005), (0.012, 0.005), (0.564, 0.155), (0.656, 0.038), (0.629, 0.063)),
        ("G", 50): ((0.249, 0.004), (0.044, 0.004), (0.522, 0.050), (0.524, 0.046), (0.681, 0.010)),
        ("K", 20): ((0.091, 0.073), (0.008, 0.003), (0.496, 0.138), (0.644, 0.001), (0.658, 0.012)),
        ("G", 20): ((0.375, 0.072), (0.027, 0.004), (0.491, 0.056), (0.519, 0.040), (0.714, 0.101))})),
    ("medline", "inductive"): ("Table 6", _table(_UNEVEN, {
        ("K", 80): ((0.098, 0.006), (0.109, 0.015), (0.342, 0.081), (0.960, 0.010), (0.442, 0.018)),
        ("G", 80): ((0.157, 0.006), (0.153, 0.013), (0.248, 0.042), (0.251, 0.045), (0.564, 0.005)),
        ("K", 50): ((0.104, 0.012), (0.093, 0.011), (0.394, 0.150), (0.964, 0.006), (0.448, 0.021)),
        ("G", 50): ((0.161, 0.011), (0.129, 0.012), (0.266, 0.039), (0.269, 0.039), (0.529, 0.010)),
        ("K", 20): ((0.110, 0.028), (0.097, 0.096), (0.428, 0.296), (0.963, 0.004), (0.427, 0.052)),
        ("G", 20): ((0.148, 0.025), (0.129, 0.010), (0.309, 0.074), (0.337, 0.079), (0.444, 0.012))})),
}  # fmt: skip

#: What the paper states G does to each measure against K ("+": it rises, "-": it falls).
CLAIMED = {"train_alignment": "+", "test_alignment": "+", "svc_error": "-", "pw_error": "-", "f1": "+",
           "rr_error": "-"}
HEADERS = {"train_alignment": "Train Align", "test_alignment": "Test Align", "svc_error": "SVC Error",
           "pw_error": "PW Error", "f1": "F1 (SVC)", "rr_error": "RR Error"}


def paper_g_train(dataset, algorithm, pct):
    """The paper's training alignment of G at ``pct`` % as ``mean (sd)``."""
    return _fmt(PAPER[(dataset, algorithm)][1][("G", pct)]["train_alignment"], 3)


def cell_agrees(paper, measured):
    """The paper's yardstick (§6): the means differ by at most the sum of the two standard deviations."""
    return abs(paper[0] - measured[0]) <= paper[1] + measured[1] + 1e-12


def _fmt(pair, digits):
    return f"{pair[0]:.{digits}f} ({pair[1]:.{digits}f})"


def side_by_side(records, dataset, algorithm):
    """Rows ``(matrix, %)`` with the paper's and dkernel's ``mean (sd)`` per measure and whether they agree."""
    title, paper = PAPER[(dataset, algorithm)]
    measures = list(next(iter(paper.values())))
    rows, verdicts = [], []
    for (matrix, pct), cells in paper.items():
        row = {"": f"{matrix}{pct}"}
        for key in measures:
            got = spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                         train_fraction=pct / 100)
            digits = 2 if dataset == "auto-mpg" and key == "rr_error" else 3
            ok = got is not None and cell_agrees(cells[key], got)
            verdicts.append(ok)
            row[f"{HEADERS[key]} paper"] = _fmt(cells[key], digits)
            row[f"{HEADERS[key]} dkernel"] = "–" if got is None else _fmt(got, digits) + ("" if ok else " ✗")
        rows.append(row)
    return title, rows, verdicts


def direction_checks(records, dataset, algorithm):
    """Per training fraction and measure: does G move it the way the paper states, in dkernel's means?"""
    checks = []
    title, paper = PAPER[(dataset, algorithm)]
    for pct in (80, 50, 20):
        for key in next(iter(paper.values())):
            g = spread(records, key, dataset=dataset, algorithm=algorithm, matrix="G", train_fraction=pct / 100)
            k = spread(records, key, dataset=dataset, algorithm=algorithm, matrix="K", train_fraction=pct / 100)
            if g is None or k is None:
                continue
            paper_moves = paper[("G", pct)][key][0] - paper[("K", pct)][key][0]
            ours = g[0] - k[0]
            checks.append({"table": title, "train %": pct, "measure": HEADERS[key],
                           "paper G − K": f"{paper_moves:+.3f}", "dkernel G − K": f"{ours:+.3f}",
                           "claimed": CLAIMED[key],
                           "as claimed": (ours > 0) == (CLAIMED[key] == "+") and ours != 0,
                           "paper as claimed": (paper_moves > 0) == (CLAIMED[key] == "+") and paper_moves != 0})
    return checks


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def figure(records, tables, path, title):
    """One row per table, one panel per measure: K and G against the training fraction, paper dashed."""
    from ._report import save_figure, subplots

    rows = [(d, a) for d, a in tables if any(r["dataset"] == d for r in records)]
    n_cols = max(len(next(iter(PAPER[t][1].values()))) for t in rows)
    fig, axes = subplots(len(rows), n_cols, figsize=(3.2 * n_cols, 2.7 * len(rows)), squeeze=False)
    for ax_row, (dataset, algorithm) in zip(axes, rows):
        label, paper = PAPER[(dataset, algorithm)]
        measures = list(next(iter(paper.values())))
        for ax, key in zip(ax_row, measures):
            for matrix, color in (("K", "tab:blue"), ("G", "tab:red")):
                pcts = [80, 50, 20]
                ours = [spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                               train_fraction=p / 100) for p in pcts]
                ax.errorbar(pcts, [o[0] for o in ours], yerr=[o[1] for o in ours], color=color, marker="o",
                            capsize=2, label=f"{matrix} dkernel")
                ax.plot(pcts, [paper[(matrix, p)][key][0] for p in pcts], color=color, linestyle="--", marker="x",
                        alpha=0.7, label=f"{matrix} paper")
            ax.set_title(f"{label} ({dataset}, {algorithm[:5]}.): {HEADERS[key]}", fontsize=8)
            ax.set_xlabel("training %", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in ax_row[len(measures):]:
            ax.set_visible(False)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(title)
    return save_figure(fig, path)


def measured_only(records, dataset, algorithm, measures):
    """Rows ``(matrix, %)`` of dkernel's ``mean (sd)`` for a setting the paper has no table of."""
    rows = []
    for pct in (80, 50, 20):
        for matrix in ("K", "G"):
            row = {"": f"{matrix}{pct}"}
            for key in measures:
                got = spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                             train_fraction=pct / 100)
                row[HEADERS[key]] = "–" if got is None else _fmt(got, 2 if key == "rr_error" and dataset == "auto-mpg"
                                                                 else 3)
            rows.append(row)
    return rows


def write_report(result, outdir, *, name, title, tables, setup, why, extra=()):
    """``report.md`` and ``tables.png``: the paper's tables beside dkernel's, cell by cell, and the claims."""
    from ._report import count_repeats, listing, markdown_table, plural, run_line, write_markdown

    records = result.records
    present = [(d, a) for d, a in tables if any(r["dataset"] == d for r in records)]
    missing = [PAPER[t][0] for t in tables if t not in present]
    fig = figure(records, present, outdir / "tables.png", title)
    parts = [f"# {name}: {title}", "", setup, "", run_line(result) + f" {plural(count_repeats(records), 'repeat')} "
             f"per training fraction; {len(records)} records.", ""]
    if missing:
        parts += [f"Not run (data files not found): {listing(missing)}.", ""]
    parts += ["![the tables as curves: dkernel solid with ± sd, the paper dashed](tables.png)", ""]
    agreeing = total = 0
    claim_rows = []
    for dataset, algorithm in present:
        label, rows, verdicts = side_by_side(records, dataset, algorithm)
        agreeing += sum(verdicts)
        total += len(verdicts)
        checks = direction_checks(records, dataset, algorithm)
        claim_rows += checks
        full = {p: spread(records, "alignment_all_eigenvectors", dataset=dataset, algorithm=algorithm, matrix="G",
                          train_fraction=p / 100) for p in (80, 50, 20)}
        parts += [f"## {label}: {dataset}, {algorithm} ({DATASETS[dataset]['kernel']} kernel)", "",
                  "Training alignment of G when no eigenvalue is dropped (every eigenvector, an arbitrary basis of "
                  "the null space included, as in Algorithm 1): " + ", ".join(
                      f"{_fmt(full[p][:2], 3)} at {p} % (paper {paper_g_train(dataset, algorithm, p)})"
                      for p in (80, 50, 20) if full[p]) + ".", "",
                  f"mean (standard deviation over {plural(count_repeats(records), 'run')}); ✗ marks a cell whose "
                  f"mean differs from the paper's by more than the sum of the two standard deviations. "
                  f"{sum(verdicts)}/{len(verdicts)} cells agree.", "",
                  markdown_table(rows, [(k, k) for k in rows[0]]), "",
                  f"G against K as the paper states (rises for alignment and F1, falls for errors): dkernel "
                  f"{sum(c['as claimed'] for c in checks)}/{len(checks)}, the paper's own table "
                  f"{sum(c['paper as claimed'] for c in checks)}/{len(checks)}.", "",
                  *table_notes(records, dataset, algorithm)]
    parts[4:4] = [f"**Overall: {agreeing}/{total} cells agree with the paper** (within the sum of the standard "
                  f"deviations); G moves the measures as the paper states in "
                  f"{sum(c['as claimed'] for c in claim_rows)}/{len(claim_rows)} (table, fraction, measure) cases in "
                  f"dkernel's means, in {sum(c['paper as claimed'] for c in claim_rows)}/{len(claim_rows)} in the "
                  f"paper's own tables.", ""]
    parts += list(extra)
    parts += ["## Where G moves a measure against the paper's statement", "",
              markdown_table([c for c in claim_rows if not c["as claimed"]],
                             [(k, k) for k in ("table", "train %", "measure", "paper G − K", "dkernel G − K")])
              if any(not c["as claimed"] for c in claim_rows) else "Nowhere.", "",
              "## Why they differ", "", why, "",
              "Files: `results.csv`, `results.json` (records and summary), `tables.png`.", ""]
    return write_markdown(outdir, parts, [fig])
