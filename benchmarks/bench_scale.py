"""Exact SVMs at scale on 2 cores: an uncentered RBF SVM at n = 1 000 000 and a centered one at n = 100 000.

The uncentered problem: ``make_classification`` with d = 20 (10
informative features), well separated classes (``class_sep=3``, no label
noise: few support vectors), RBF gamma = 1 / (d Var X), C = 1,
tol = 1e-3, 10000 test points, at each ``--n`` (default 100000 and
1000000). dkernel fits it exactly, with its defaults: for one binary
problem whose Gram does not fit in memory the kernel rows are computed as
the solver asks for them, with a row cache (the Gram column says how it was
held). scikit-learn and oneDAL (``cache_size=2000``) fit it where
n ≤ ``--peers-max``; above it they are not run (libsvm's time grows about
as n², minutes at n = 100000).

The centered problem: ``dkernel.SVC(centering="standard")`` on the two
overlapping Gaussian classes of ``bench_centered_fit.py`` (d = 64, about
three quarters of the points support vectors) at ``--centered-n`` (default
100000), dkernel only: its comparison with the peers at smaller n, and
their time extrapolated to this n, are ``bench_centered_fit.py``'s.

Every fit runs in a new process (``_fresh.py``): the time is what a user
waits for, import apart; the peak memory is that process's peak resident
memory during the fit (Linux ``VmHWM``, ``dkernel._runtime.memory``), the
data included.

To record, on a quiet machine with 2 cores and at least 8 GB free, on a
committed tree with scikit-learn-intelex installed, run the first command
below (expected: 20–60 minutes, most of it the two largest dkernel fits;
the n = 100000 centered fit took about 7 minutes before) and save its
output as ``benchmarks/results/bench_scale.txt``.

    python benchmarks/bench_scale.py > benchmarks/results/bench_scale.txt    # n = 100000, 1000000; centered 100000
    python benchmarks/bench_scale.py --n 20000 --centered-n 5000 --peers-max 20000    # a smoke run
"""

import argparse
import sys

import numpy as np
from sklearn.datasets import make_classification

from _fresh import (DISTRIBUTIONS, LIBRARIES, compare, print_comparison, print_imports, problem_file,
                    resolve_gamma)
from _problems import overlapping_classes  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions
from bench_centered_fit import CENTERED
from bench_centered_fit import N_TEST as N_TEST_CENTERED

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/__init__.py",
    "dkernel/svm",
    "dkernel/solver",
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/views",
    "dkernel/centering",
    "dkernel/_runtime",
    "pyproject.toml",
    "setup.py",
    "src",
    "benchmarks/_fresh.py",
    "benchmarks/_fresh_fit.py",
)

N_TEST = 10000
CENTERED_D = 64


def separated_problem(n, d, seed, n_test=N_TEST):
    """``(X_train, X_test, y_train, y_test)``: two well separated classes, few support vectors."""
    X, y = make_classification(n_samples=n + n_test, n_features=d, n_informative=min(d, 10), n_redundant=0,
                               class_sep=3.0, flip_y=0.0, random_state=seed)
    return X[:n], X[n:], y[:n], y[n:]


def _progress(label):
    return lambda line: print(f"[{label}] {line}", file=sys.stderr, flush=True)


def fit_all(label, data, params, libraries, skip, args):
    X_tr, X_te, y_tr, y_te = data
    with problem_file(X_tr, y_tr, X_te, y_te) as path:
        return compare(path, params, libraries=libraries, rounds=args.rounds, once_above=args.once_above,
                       timeout=args.timeout, skip=skip, progress=_progress(label))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="training set sizes of the uncentered problem")
    parser.add_argument("--d", type=int, default=20, help="features of the uncentered problem (default: 20)")
    parser.add_argument("--centered-n", type=int, nargs="*", default=[100_000],
                        help="training set sizes of the centered problem (none: skip it)")
    parser.add_argument("--peers-max", type=int, default=100_000,
                        help="fit scikit-learn and oneDAL on the uncentered problem up to this n (default: 100000)")
    parser.add_argument("--rounds", type=int, default=1, help="fresh processes per library and size (default: 1)")
    parser.add_argument("--once-above", type=float, default=30.0,
                        help="a library whose first fit took longer is not fitted again (seconds, default: 30)")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds before a process is stopped")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print_header()
    print_versions(*DISTRIBUTIONS)
    results = []
    for n in sorted(args.n):
        data = separated_problem(n, args.d, args.seed)
        params = {"kernel": "rbf", "gamma": resolve_gamma(data[0]), "C": 1.0, "tol": 1e-3}
        skip = {lib.label: (f"n > --peers-max {args.peers_max}", None) for lib in LIBRARIES[1:]
                if n > args.peers_max}
        results.append((f"n={n} d={args.d} separated", n, data[1].shape[0],
                        fit_all(f"n={n}", data, params, LIBRARIES, skip, args)))
    if results:
        print_comparison(f"uncentered RBF SVM, make_classification d={args.d}, class_sep=3, C=1", results,
                         args.rounds)
    centered = []
    for n in sorted(args.centered_n):
        X, y = overlapping_classes(n + N_TEST_CENTERED, CENTERED_D, np.random.default_rng(args.seed))
        params = {"kernel": "rbf", "gamma": 1.0 / CENTERED_D, "C": 1.0, "tol": 1e-3}
        skip = {lib.label: ("the comparison is bench_centered_fit.py's", None) for lib in LIBRARIES[1:]}
        centered.append((f"n={n} d={CENTERED_D} overlapping, centered", n, N_TEST_CENTERED,
                         fit_all(f"centered n={n}", (X[:n], X[n:], y[:n], y[n:]), params,
                                 (CENTERED, *LIBRARIES[1:]), skip, args)))
    if centered:
        print_comparison(f"centered RBF SVM (standard origin), two overlapping classes, d={CENTERED_D}, C=1",
                         centered, args.rounds)
    print_imports(results + centered)


if __name__ == "__main__":
    main()
