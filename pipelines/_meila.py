"""The experimental pieces shared by the Meilă (2002) pipelines.

Kernels of the paper, the data sets of its Table 1 with their random
train/test splits (and the tasks that carry them to the workers), SVM fits
on a precomputed Gram matrix by the paper's solver (libsvm, through
:class:`sklearn.svm.SVC`) or by dkernel's own
(:class:`dkernel.SVC` on the precomputed Gram), and the values measured of each fit; one
sample of the shift experiments of §6.1 is in :mod:`pipelines._meila_shift`.
The algebra of shifting, centering and Δb lives in :mod:`dkernel.views` and
:mod:`dkernel.centering`; nothing here re-derives it.

References
----------
.. [1] M. Meilă, "Data centering in feature space", Technical Report 421,
   University of Washington, 2002 (AISTATS 2003), section 6 and Table 1.
"""

import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "DIGITS",
    "FIT_MEASURES",
    "QUICK_REPEATS",
    "REPEATS",
    "TABLE1",
    "SVMFit",
    "alignment",
    "alignment_limit",
    "client_data",
    "client_datasets",
    "data_home",
    "dataset_source",
    "digits_sentence",
    "error_rate",
    "feature_readings",
    "fit_measures",
    "fit_svm",
    "kernel_params",
    "libsvm_max_iter",
    "load_split",
    "make_kernel",
    "n_repeats",
    "scale_features",
    "seed_from",
    "split_task",
    "table1",
    "task_split",
]

#: libsvm's own iteration cap (svm.cpp of later versions: ``max(10⁷, 100 n)`` SMO
#: steps, then a warning), which scikit-learn's copy leaves out. The 2001 LIBSVM
#: of the paper had none; without one, a single ill-conditioned fit (glass,
#: poly2, centered) ran 8 × 10⁸ steps. A fit stopped by the cap is recorded as
#: not converged, and every verdict resting on it is inconclusive.
LIBSVM_MIN_MAX_ITER = 10_000_000


def libsvm_max_iter(n):
    """libsvm's iteration cap for ``n`` training points: ``max(10⁷, 100 n)`` (svm.cpp, ``Solver::Solve``)."""
    return max(LIBSVM_MIN_MAX_ITER, 100 * int(n))


#: Stopping tolerance of both solvers (libsvm's default ``-e 0.001``, on the
#: maximal violating pair gap).
TOL = 1e-3

#: Meilă (2002), Table 1: inputs, train/test sizes, kernels and SVM parameters.
#: ``positive`` is the class labelled +1 (the rest are -1); ``pair`` the two
#: digits of a "digiab" task.
TABLE1 = {
    "cmc": {"inputs": 9, "n_train": 400, "n_test": 523, "positive": 1, "sigma2": 100.0,
            "kernels": ("rbf",), "C": 1000.0},
    "glass": {"inputs": 9, "n_train": 130, "n_test": 84, "positive": 2, "sigma2": 2.0,
              "kernels": ("poly2", "rbf"), "C": 1000.0},
    "wdbc": {"inputs": 30, "n_train": 312, "n_test": 257, "positive": 1, "sigma2": 1000.0,
             "kernels": ("poly2", "rbf"), "C": 1000.0},
    "digits": {"inputs": 64, "n_train": 200, "n_test": 400, "sigma2": 1000.0,
               "kernels": ("rbf",), "C": 1000.0},
}  # fmt: skip

#: The six "digiab" tasks, a vs b with a, b in {0, 1, 2, 6}.
DIGIT_PAIRS = ((0, 1), (0, 2), (0, 6), (1, 2), (1, 6), (2, 6))

#: Random repeats of every experiment of §6 (new samples or splits each); a quick run makes two.
REPEATS, QUICK_REPEATS = 10, 2


def n_repeats(config):
    """The repeats a run makes: ``--repeats`` if given, else :data:`REPEATS` (:data:`QUICK_REPEATS` if quick)."""
    return config.repeats or (QUICK_REPEATS if config.quick else REPEATS)


# --------------------------------------------------------------------------- #
# Kernels
# --------------------------------------------------------------------------- #


def kernel_params(name, sigma2=None):
    """Parameters of a kernel of the paper, by its short name.

    ``linear`` is ``xᵀz``; ``polyD`` is ``(1 + xᵀz)^D`` (Meilă's "poly2" for
    D = 2); ``rbf`` is ``exp(-|x - z|²/σ²)``, i.e. ``gamma = 1/σ²``.

    Returns
    -------
    dict
        ``kernel`` (the short name), ``gamma``, ``degree``, ``coef0`` and
        ``sigma2`` (None where they do not apply), ready to go into a record.
    """
    if name == "linear":
        return {"kernel": name, "gamma": None, "degree": None, "coef0": None, "sigma2": None}
    if name.startswith("poly"):
        return {"kernel": name, "gamma": 1.0, "degree": int(name[4:]), "coef0": 1.0, "sigma2": None}
    if name == "rbf":
        if sigma2 is None:
            raise ValueError("the rbf kernel needs sigma2 (Meilă's width, exp(-|x - z|²/σ²)).")
        from dkernel.kernels import gamma_from_sigma2

        return {"kernel": name, "gamma": gamma_from_sigma2(float(sigma2)), "degree": None, "coef0": None,
                "sigma2": float(sigma2)}  # fmt: skip
    raise ValueError(f"unknown kernel {name!r}; use 'linear', 'poly2', 'poly3' or 'rbf'.")


def make_kernel(params):
    """The :class:`dkernel.kernels.Kernel` of :func:`kernel_params` output."""
    from dkernel.kernels import get_kernel

    name = params["kernel"]
    if name == "linear":
        return get_kernel("linear")
    if name.startswith("poly"):
        return get_kernel("poly", gamma=params["gamma"], coef0=params["coef0"], degree=params["degree"])
    return get_kernel("rbf", gamma=params["gamma"])


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def data_home():
    """The data folder: ``$DKERNEL_DATA``, else ``../shared/data`` beside the repository, else None.

    None leaves the look-up to :func:`dkernel.datasets.load` (its cache folder,
    then a download). A relative ``$DKERNEL_DATA`` is taken from the current
    directory.
    """
    env = os.environ.get("DKERNEL_DATA")
    if env:
        return Path(env).absolute()
    beside = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return beside if beside.is_dir() else None


def dataset_source(name):
    """Where ``name`` will be read from: ``"file"``, ``"usps"``, ``"sklearn"`` or None when it is unavailable.

    ``digits`` is the paper's USPS (:data:`DIGITS`), from the data folder, and
    scikit-learn's bundled 8 × 8 digits where no USPS file is found;
    ``digits-8x8`` is always scikit-learn's. wdbc falls back to
    scikit-learn's ``load_breast_cancer``, the same 569 × 30 values and labels
    as the UCI file. cmc and glass need the UCI files (data folder, cache or
    download).
    """
    return client_data(name)[0]


#: The digits of Table 1 ("handwritten digits from the USPS", 64 inputs), and the alternative run beside them.
DIGITS = {
    "usps": "USPS (the 7291 training images), 16 × 16 pixels mapped to [−1, 1] (2x − 1 of the stored [0, 1], the "
            "scale USPS was distributed in) and reduced to 8 × 8 = 64 inputs by averaging 2 × 2 patches",
    "sklearn": "scikit-learn's bundled 8 × 8 digits (UCI optdigits, 1797 images, values 0 … 16, 64 inputs; about "
               "180 per digit)",
}  # fmt: skip


def table1(name):
    """Table 1's row of a data set (``digits-8x8``, the alternative digits, shares the row of ``digits``)."""
    return TABLE1["digits" if name.startswith("digits") else name]


def client_data(name):
    """``(source, data)`` of a Table 1 data set, read in this process (the client of a cluster).

    ``source`` is as :func:`dataset_source`. ``data`` is ``{"X": ..., "y":
    ...}`` wrapped in one ``dask.delayed`` key, to be put in every task of the
    data set and passed to :func:`load_split`: the tasks then receive the
    arrays from the client (each worker fetches them once), so workers need
    neither the data folder nor ``$DKERNEL_DATA``. ``data`` is None for
    scikit-learn's bundled digits and for an unavailable data set.
    """
    import dask

    from dkernel.datasets import DatasetNotFoundError

    if name == "digits-8x8":
        return "sklearn", None
    try:
        X, y = _load_xy(name, "file")
        source = "usps" if name == "digits" else "file"
    except (DatasetNotFoundError, OSError):
        if name not in ("wdbc", "digits"):
            return None, None
        if name == "digits":
            return "sklearn", None
        source = "sklearn"
        X, y = _load_xy(name, source)
    key = f"pipeline-data-{name}-{dask.base.tokenize(X, y)}"
    return source, dask.delayed({"X": X, "y": y}, name=key, traverse=False, pure=True)


def _load_xy(name, source):
    from dkernel.datasets import binary_task, load

    if name == "wdbc" and source == "sklearn":
        from sklearn.datasets import load_breast_cancer

        bunch = load_breast_cancer()
        # scikit-learn codes malignant as 0; the UCI file (and Table 1's task) has malignant as the positive class.
        return bunch.data.astype(np.float64), np.where(bunch.target == 0, 1, -1).astype(np.int64)
    if name.startswith("digits") and source == "sklearn":
        data = load("digits")
        return np.asarray(data.X, dtype=np.float64), np.asarray(data.y)
    if name == "digits":
        from ._graf import block_average

        data = load("usps", data_home=data_home(), download=False)
        images = 2.0 * np.asarray(data.X, dtype=np.float64).reshape(-1, 16, 16) - 1.0
        return block_average(images, size=8).reshape(len(images), 64), np.asarray(data.y, dtype=np.int64)
    data = load(name, data_home=data_home())
    return data.X, binary_task(data.y, TABLE1[name]["positive"])


def load_split(name, rng, *, source="file", pair=None, n_train=None, n_test=None, data=None):
    """A random train/test split of a Table 1 task, with labels ±1.

    Parameters
    ----------
    name : {"cmc", "glass", "wdbc", "digits", "digits-8x8"}
    rng : numpy.random.Generator
        Draws the permutation.
    source : {"file", "usps", "sklearn"}
        See :func:`dataset_source`.
    pair : (int, int), optional
        The digits ``(a, b)`` of a digits task (a is +1).
    n_train, n_test : int, optional
        Default: Table 1's sizes. The test set is capped at the points left
        after the training set (scikit-learn's 8 × 8 digits have about 180
        images per class, so a pair leaves about 160 test points, not 400).
    data : dict, optional
        ``{"X": ..., "y": ...}`` already read (by :func:`client_data`);
        otherwise the data set is read here.

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarrays (the features as read, not scaled: :func:`scale_features`)
    """
    from dkernel.datasets import pair_task

    spec = table1(name)
    if data is not None:
        X, y = data["X"], data["y"]
    else:
        X, y = _load_xy(name, source)
    if name.startswith("digits"):
        X, y = pair_task(X, y, *pair)
    n_train = spec["n_train"] if n_train is None else n_train
    n_test = spec["n_test"] if n_test is None else n_test
    order = rng.permutation(X.shape[0])
    train = order[:n_train]
    test = order[n_train : n_train + n_test]
    return X[train], y[train], X[test], y[test]


def scale_features(X_train, X_test):
    """Each feature mapped linearly onto [−1, 1] by its range on the training split (libsvm's ``svm-scale``).

    The map is fitted on ``X_train`` alone and applied to both; a feature
    constant on the training split becomes 0. Test values may fall outside
    [−1, 1].
    """
    X_train, X_test = np.asarray(X_train, dtype=np.float64), np.asarray(X_test, dtype=np.float64)
    low, high = X_train.min(axis=0), X_train.max(axis=0)
    width = np.where(high > low, high - low, 1.0)

    def scaled(X):
        return np.where(high > low, 2.0 * (X - low) / width - 1.0, 0.0)

    return scaled(X_train), scaled(X_test)


def client_datasets(pipeline, names):
    """``{name: (source, data)}`` of the Table 1 data sets ``names`` that can be read, read here once each.

    See :func:`client_data`. A data set whose file is not found is left out,
    with a note on stderr naming ``pipeline``.
    """
    found = {}
    for name in dict.fromkeys(names):
        source, data = client_data(name)
        if source is None:
            print(f"{pipeline}: skipping {name}: its data file was not found (set DKERNEL_DATA to the folder "
                  "holding uci/).", file=sys.stderr)  # fmt: skip
            continue
        found[name] = (source, data)
    return found


def split_task(name, pair, source_and_data, repeat):
    """The part of a task that names one random split of a Table 1 data set (read by :func:`task_split`).

    ``source_and_data`` is an item of :func:`client_datasets`: the tasks
    carry the arrays read on the client, so workers need no data folder.
    """
    source, data = source_and_data
    return {"dataset": name, "pair": list(pair) if pair else None, "source": source, "data": data, "repeat": repeat}


def task_split(task, rng):
    """:func:`load_split` of the data set a :func:`split_task` names, its permutation drawn from ``rng``."""
    pair = tuple(task["pair"]) if task["pair"] else None
    return load_split(task["dataset"], rng, source=task["source"], pair=pair, data=task["data"])


def feature_readings(X, X_test, features):
    """``{reading: (X, X_test)}`` for each of ``features``: ``"raw"`` (as read) and ``"scaled"``
    (:func:`scale_features`, fitted on the training split)."""
    return {f: (X, X_test) if f == "raw" else scale_features(X, X_test) for f in features}


def digits_sentence(records):
    """What the digits pairs of ``records`` (data sets ``digiab``) were: their source and split sizes."""
    digits = [r for r in records if str(r.get("dataset", "")).startswith("digi")]
    if not digits:
        return ""

    def span(values):
        values = sorted(set(values))
        return f"{values[0]}" if len(values) == 1 else f"{values[0]}–{values[-1]}"

    spec = TABLE1["digits"]
    parts = []
    for source in ("usps", "sklearn"):
        these = [r for r in digits if r.get("source") == source]
        if these:
            parts.append(f"{DIGITS[source]}: {span(r['n_train'] for r in these)} training and "
                         f"{span(r['n_test'] for r in these)} test points")  # fmt: skip
    return (f"Digits pairs: {'; '.join(parts)} (Table 1: {spec['n_train']} training and {spec['n_test']} test "
            "points).")


def seed_from(rng):
    """An integer seed drawn from ``rng``, for functions that take a legacy ``random_state``."""
    return int(rng.integers(2**31 - 1))


# --------------------------------------------------------------------------- #
# SVM fits on a precomputed Gram matrix
# --------------------------------------------------------------------------- #


@dataclass
class SVMFit:
    """A C-SVM trained on a Gram matrix: ``f(x) = Σ_i dual_coef_i K(x, x_i) + intercept``.

    Attributes
    ----------
    solver : str
        ``"libsvm"`` (scikit-learn's SVC), ``"dkernel"`` (:class:`dkernel.SVC`
        on the float64 Gram) or ``"dkernel-float32"`` (the same on the Gram
        rounded to float32, the precision of libsvm's kernel cache).
    dual_coef : ndarray of shape (n,)
        ``α_i y_i`` for every training point (0 off the support).
    intercept : float
    n_sv : int
    n_iter : int
        SMO steps (libsvm) or working-set iterations (dkernel).
    converged : bool
        Whether the stopping tolerance was met before the iteration cap: libsvm's ``fit_status_ == 0``
        (scikit-learn sets 1 when the cap stopped it), dkernel's ``converged``.
    seconds : float
    """

    solver: str
    dual_coef: np.ndarray
    intercept: float
    n_sv: int
    n_iter: int
    converged: bool
    seconds: float

    def decision(self, K_test):
        """Decision values from the kernel rows ``K_test`` (m × n) of the Gram it was trained on."""
        return np.asarray(K_test) @ self.dual_coef + self.intercept


def fit_svm(K, y, C, solver="libsvm"):
    """Train a C-SVM on the Gram matrix ``K`` with labels ±1.

    Parameters
    ----------
    K : ndarray of shape (n, n)
    y : ndarray of shape (n,), values ±1
    C : float
    solver : {"libsvm", "dkernel", "dkernel-float32"}

    Returns
    -------
    SVMFit
    """
    from sklearn.exceptions import ConvergenceWarning

    y = np.asarray(y)
    K = np.asarray(K, dtype=np.float64)
    start = time.perf_counter()
    if solver == "libsvm":
        from sklearn.svm import SVC

        model = SVC(kernel="precomputed", C=C, tol=TOL, max_iter=libsvm_max_iter(K.shape[0]))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(K, y)
        coef = np.zeros(K.shape[0])
        # classes_ is [-1, 1]: dual_coef_ holds α_i y_i and a positive decision means +1.
        coef[model.support_] = model.dual_coef_[0]
        converged = model.fit_status_ == 0 and not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        return SVMFit(solver, coef, float(model.intercept_[0]), int(model.n_support_.sum()),
                      int(model.n_iter_[0]), bool(converged), time.perf_counter() - start)  # fmt: skip
    if solver in ("dkernel", "dkernel-float32"):
        from dkernel import SVC as DkernelSVC

        # The float32 variant rounds every entry as libsvm's kernel cache does; the arithmetic stays in float64.
        M = K.astype(np.float32).astype(np.float64) if solver == "dkernel-float32" else K
        model = DkernelSVC(kernel="precomputed", C=float(C), tol=TOL, max_iter=libsvm_max_iter(K.shape[0]),
                           client=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(M, y)
        coef = np.zeros(K.shape[0])
        coef[model.support_] = model.dual_coef_[0]
        return SVMFit(solver, coef, float(model.intercept_[0]), int(model.support_.size), int(model.n_iter_[0]),
                      model.fit_status_ == 0, time.perf_counter() - start)  # fmt: skip
    raise ValueError(f"unknown solver {solver!r}; use 'libsvm', 'dkernel' or 'dkernel-float32'.")


def error_rate(decision, y):
    """Fraction of points whose sign of ``decision`` (0 counts as -1, as in libsvm) differs from ``y``."""
    return float(np.mean(np.where(np.asarray(decision) > 0, 1, -1) != np.asarray(y)))


def alignment_limit(y):
    """``(n⁺ - n⁻)² / n²``: the alignment of a Gram shifted infinitely far from the data (Meilă eq. 34)."""
    y = np.asarray(y)
    return float(np.sum(y > 0) - np.sum(y < 0)) ** 2 / float(y.size) ** 2


def alignment(K, y):
    """Kernel-target alignment ``A(K, yyᵀ) = yᵀKy / (n ‖K‖_F)`` (Meilă eq. 21)."""
    from dkernel.alignment import target_alignment

    value = target_alignment(np.asarray(K, dtype=np.float64), y)
    return float(value) if math.isfinite(value) else float("nan")


# --------------------------------------------------------------------------- #
# What is measured of a fit
# --------------------------------------------------------------------------- #


#: What :func:`fit_measures` records of an SVM fit, in this order.
FIT_MEASURES = ("test_error", "train_error", "alignment", "n_sv", "n_iter", "converged", "kernel_max_abs",
                "float32_error", "fit_seconds")  # fmt: skip


def fit_measures(fit, K_train, y, decision, y_test, keys=FIT_MEASURES):
    """The measured values of an :class:`SVMFit` on ``K_train``, with test ``decision`` values, in ``keys`` order.

    ``keys`` is a selection of :data:`FIT_MEASURES`: the test and training
    errors, the alignment of the training Gram (eq. 21), the solver's
    support vectors, steps, convergence and seconds, the largest entry of
    ``K_train`` and its largest float32 rounding error.
    """
    K_train = np.asarray(K_train)
    measure = {
        "test_error": lambda: error_rate(decision, y_test),
        "train_error": lambda: error_rate(K_train @ fit.dual_coef + fit.intercept, y),
        "alignment": lambda: alignment(K_train, y),
        "n_sv": lambda: fit.n_sv,
        "n_iter": lambda: fit.n_iter,
        "converged": lambda: fit.converged,
        "kernel_max_abs": lambda: float(np.abs(K_train).max()),
        "float32_error": lambda: float(np.abs(K_train.astype(np.float32).astype(np.float64) - K_train).max()),
        "fit_seconds": lambda: fit.seconds,
    }
    return {key: measure[key]() for key in keys}
