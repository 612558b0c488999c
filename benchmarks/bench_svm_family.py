"""dkernel's SVR, NuSVR, NuSVC and OneClassSVM against scikit-learn (libsvm) and oneDAL: one fit per fresh process.

* SVR on a regression generator: Friedman's #1 problem
  (``sklearn.datasets.make_friedman1``, d = 10, noise 1), the target
  standardized; RBF ``gamma="scale"``, C = 1, epsilon = 0.1, tol = 1e-3.
* NuSVR on the same problem: nu = 0.5, C = 1 (n ≤ 20000 by default).
* NuSVC on two classes of ``make_classification`` (d = 10, 5 informative,
  5 % of the labels flipped), standardized; RBF ``gamma="scale"``, nu = 0.5
  (n ≤ 20000 by default).
* OneClassSVM on a mixture: three Gaussian clusters in d = 10; RBF
  ``gamma="scale"``, nu = 0.1, tol = 1e-3. The test set holds points of
  the mixture (inliers, +1) and as many uniform points in the clusters'
  bounding box (outliers, −1); the accuracy is that of the sign of the
  decision function.

Each fit runs in a new Python process per library (``_fresh.py``: import
timed apart, the data read from a file outside the timing), the libraries
alternating over ``--rounds`` rounds (medians). scikit-learn's and oneDAL's
estimators run with ``cache_size=2000``; oneDAL has no one-class SVM. A peer
whose time, extrapolated from the two smaller sizes, passes
``--peer-max-seconds`` is not run and its extrapolated time is shown with
``~``. Printed: fit times and ratios, predict times, R² (regression) or
accuracy, the largest difference of the test predictions (regression, in
units of the target's standard deviation) or the fraction of predictions
equal to scikit-learn's, the support vectors and each process's peak memory
during the fit.

To record, on a quiet machine and a committed tree, run the first command
below and save its output as ``benchmarks/results/bench_svm_family.txt``.

    python benchmarks/bench_svm_family.py > benchmarks/results/bench_svm_family.txt   # n = 5000 ... 40000
    python benchmarks/bench_svm_family.py --n 2000 5000 --rounds 1                     # a shorter run
"""

import argparse
import sys

import numpy as np
from sklearn.datasets import make_classification, make_friedman1

from _fresh import (DKERNEL, LEGEND, ONEDAL, SKLEARN, Library, PeerTimes, compare, format_table, problem_file,
                    ratio_text, time_cell)  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/__init__.py",
    "dkernel/svm",
    "dkernel/solver",
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/views",
    "dkernel/_runtime",
    "pyproject.toml",
    "setup.py",
    "src",
    "benchmarks/_fresh.py",
    "benchmarks/_fresh_fit.py",
)

N_TEST = 2000
D = 10


def _libraries(name, onedal=True):
    """The columns of one estimator: dkernel's, scikit-learn's and (where it has one) oneDAL's, same labels as SVC's."""
    columns = [Library(DKERNEL.label, f"dkernel.{name}", DKERNEL.distribution),
               Library(SKLEARN.label, f"sklearn.svm.{name}", SKLEARN.distribution, SKLEARN.options)]
    if onedal:
        columns.append(Library(ONEDAL.label, f"sklearnex.svm.{name}", ONEDAL.distribution, ONEDAL.options))
    return tuple(columns)


def regression_problem(n, rng):
    """Friedman #1 (d = 10, noise 1), the target standardized with the training part's mean and deviation."""
    X, y = make_friedman1(n_samples=n + N_TEST, n_features=D, noise=1.0, random_state=int(rng.integers(2**31)))
    mean, std = y[:n].mean(), y[:n].std()
    return X[:n], (y[:n] - mean) / std, X[n:], (y[n:] - mean) / std


def classification_problem(n, rng):
    """Two classes of ``make_classification`` (d = 10, 5 informative, 5 % flipped), standardized by the training part."""
    X, y = make_classification(n_samples=n + N_TEST, n_features=D, n_informative=5, flip_y=0.05,
                               random_state=int(rng.integers(2**31)))
    mean, std = X[:n].mean(axis=0), X[:n].std(axis=0)
    X = (X - mean) / std
    return X[:n], y[:n], X[n:], y[n:]


def mixture_problem(n, rng):
    """Three Gaussian clusters (d = 10) to train on; a test set of cluster points (+1) and uniform outliers (−1)."""
    centres = rng.normal(scale=4.0, size=(3, D))

    def draw(m):
        return centres[rng.integers(3, size=m)] + rng.normal(size=(m, D))

    X = draw(n)
    inliers = draw(N_TEST // 2)
    outliers = rng.uniform(X.min(axis=0), X.max(axis=0), size=(N_TEST - N_TEST // 2, D))
    X_test = np.vstack([inliers, outliers])
    y_test = np.r_[np.ones(len(inliers)), -np.ones(len(outliers))]
    return X, np.zeros(n), X_test, y_test


CASES = {
    "SVR": {"libraries": _libraries("SVR"), "problem": regression_problem, "task": "regression",
            "params": {"kernel": "rbf", "gamma": "scale", "C": 1.0, "epsilon": 0.1, "tol": 1e-3},
            "title": "SVR, Friedman #1 (d=10, noise 1, standardized target); RBF gamma=scale, C=1, epsilon=0.1"},
    "NuSVR": {"libraries": _libraries("NuSVR"), "problem": regression_problem, "task": "regression",
              "params": {"kernel": "rbf", "gamma": "scale", "C": 1.0, "nu": 0.5, "tol": 1e-3}, "max_n": 20000,
              "title": "NuSVR, Friedman #1 (d=10, noise 1, standardized target); RBF gamma=scale, C=1, nu=0.5"},
    "NuSVC": {"libraries": _libraries("NuSVC"), "problem": classification_problem, "task": "classification",
              "params": {"kernel": "rbf", "gamma": "scale", "nu": 0.5, "tol": 1e-3}, "max_n": 20000,
              "title": "NuSVC, two classes of make_classification (d=10, 5 informative, 5% flipped); RBF "
                       "gamma=scale, nu=0.5"},
    "OneClassSVM": {"libraries": _libraries("OneClassSVM", onedal=False), "problem": mixture_problem,
                    "task": "classification", "params": {"kernel": "rbf", "gamma": "scale", "nu": 0.1, "tol": 1e-3},
                    "title": "OneClassSVM, three Gaussian clusters (d=10); RBF gamma=scale, nu=0.1"},
}


def _agreement(name, outcomes, y_test):
    """Regression: max |prediction − sklearn's| / std(y); else the fraction of predictions equal to sklearn's."""
    reference = outcomes[SKLEARN.label].predictions
    cells = {}
    for label, outcome in outcomes.items():
        if label == SKLEARN.label:
            continue
        if reference is None or outcome.predictions is None:
            cells[label] = "-"
        elif CASES[name]["task"] == "regression":
            cells[label] = f"{np.abs(outcome.predictions - reference).max() / np.std(y_test):.1e}"
        else:
            cells[label] = f"{np.mean(outcome.predictions == reference):.4f}"
    return cells


def _quality(name, outcome):
    key = "r2" if CASES[name]["task"] == "regression" else "accuracy"
    value = outcome.first(key)
    return "-" if value is None else f"{value:.4f}"


def _print_table(labels, rows):
    """A table whose first column is left-aligned and the others right-aligned."""
    columns = [(label, 0, "<" if k == 0 else ">") for k, label in enumerate(labels)]
    print("\n".join(format_table(columns, rows)))


def print_case(name, case, results, rounds):
    """The fit table (times and ratios) and the solutions table of one estimator."""
    labels = [lib.label for lib in case["libraries"]]
    dk = DKERNEL.label
    how = "one round" if rounds == 1 else f"median of {rounds} rounds"
    print(f"\n## {case['title']}: fit, one per fresh process ({how})")
    rows = []
    for n, outcomes, _ in results:
        ratios = [ratio_text(outcomes[dk], outcomes[label]) for label in labels[1:]]
        rows.append([f"n={n}", str(n), *(time_cell(outcomes[label]) for label in labels), *ratios])
    _print_table(["problem", "n", *labels, *(f"dk/{label}" for label in labels[1:])], rows)
    print(LEGEND)

    print(f"\n## {case['title']}: predict on {N_TEST} test points and the solutions (first round)")
    regression = case["task"] == "regression"
    quality = "R2" if regression else "acc"
    agree = "max|pred-sk|/std" if regression else "same as sk"
    rows = []
    for n, outcomes, y_test in results:
        agreement = _agreement(name, outcomes, y_test)
        rows.append([f"n={n}",
                     *(time_cell(outcomes[label], "predict_s") for label in labels),
                     *(_quality(name, outcomes[label]) for label in labels),
                     *(agreement[label] for label in labels if label != SKLEARN.label),
                     *(str(outcomes[label].first("n_support") or "-") for label in labels),
                     *(f"{outcomes[label].first('fit_peak_bytes') / 1e9:.2f}" if outcomes[label].runs else "-"
                       for label in labels)])
    _print_table(["problem", *(f"predict {label}" for label in labels), *(f"{quality} {label}" for label in labels),
                  *(f"{agree} {label}" for label in labels if label != SKLEARN.label),
                  *(f"nSV {label}" for label in labels), *(f"peak GB {label}" for label in labels)], rows)
    for n, outcomes, _ in results:
        for label, outcome in outcomes.items():
            if outcome.status not in ("ok", "not installed"):
                print(f"n={n} {label}: {outcome.status} ({outcome.note})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 12000, 20000, 40000],
                        help="training set sizes (up to each estimator's default limit: 20000 for NuSVR and NuSVC)")
    parser.add_argument("--only", nargs="+", choices=list(CASES), default=list(CASES),
                        help="the estimators to compare (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1, help="fresh processes per library and size (median)")
    parser.add_argument("--once-above", type=float, default=30.0,
                        help="a library whose first fit took longer is not fitted again (seconds, default: 30)")
    parser.add_argument("--peer-max-seconds", type=float, default=300.0,
                        help="a peer whose fit extrapolates above this is not run (default: 300)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a process is stopped")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print_header()
    print_versions("scikit-learn", "scikit-learn-intelex", "daal")
    for name in args.only:
        case = CASES[name]
        peers = PeerTimes(max_seconds=args.peer_max_seconds)
        results = []
        for n in sorted(n for n in args.n if n <= case.get("max_n", n)):
            X, y, X_test, y_test = case["problem"](n, np.random.default_rng([args.seed, n]))
            with problem_file(X, y, X_test, y_test) as path:
                outcomes = compare(path, case["params"], libraries=case["libraries"], rounds=args.rounds,
                                   once_above=args.once_above, timeout=args.timeout, objective=False,
                                   skip=peers.skip(n), task=case["task"],
                                   progress=lambda line, n=n, name=name: print(f"[{name} n={n}] {line}", flush=True,
                                                                    file=sys.stderr))
            peers.record(n, outcomes)
            results.append((n, outcomes, y_test))
        print_case(name, case, results, args.rounds)


if __name__ == "__main__":
    main()
