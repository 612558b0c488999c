"""dkernel.SVC against scikit-learn (libsvm) and oneDAL where most points are support vectors: one fit per fresh process.

Two overlapping Gaussian classes in d = 64 dimensions (about three
quarters of the points are support vectors), RBF gamma = 1/d, C = 1,
tol = 1e-3 for all, 2000 test points; sklearn and oneDAL
(``sklearn.svm.SVC``, ``sklearnex.svm.SVC``) with ``cache_size=2000``.
Each fit runs in a new Python process per library (``_fresh.py``:
import timed apart, the data read from a file outside the timing), the
libraries alternating over ``--rounds`` rounds (medians; a fit longer
than ``--once-above`` seconds is not repeated, ``*``). A peer whose time,
extrapolated from the two smaller sizes, passes ``--peer-max-seconds`` is
not run and its extrapolated time is shown with ``~``. dkernel's time
includes computing the Gram (or its rows). Printed: the fit times and
ratios, the test set's predict and decision_function times, the
accuracies, the agreement of the predictions, the dual objectives, the
support vectors and each process's peak memory during the fit.

To record, on a quiet machine and a committed tree with scikit-learn-intelex
installed, run the first command below (about 20–25 minutes: sklearn alone
takes about 7 minutes at n = 50000) and save its output as
``benchmarks/results/bench_svm.txt``.

    python benchmarks/bench_svm.py > benchmarks/results/bench_svm.txt    # n = 5000, 20000, 50000
    python benchmarks/bench_svm.py --n 5000 20000 --rounds 1             # a shorter run
"""

import argparse
import sys

import numpy as np

from _fresh import DISTRIBUTIONS, PeerTimes, compare, print_comparison, print_imports, problem_file
from _problems import overlapping_classes  # benchmarks/_*.py, beside this script
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 20000, 50000], help="training set sizes")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--gamma", type=float, default=None, help="RBF gamma (default 1/d)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per library and size (median)")
    parser.add_argument("--once-above", type=float, default=30.0,
                        help="a library whose first fit took longer is not fitted again (seconds, default: 30)")
    parser.add_argument("--peer-max-seconds", type=float, default=900.0,
                        help="a peer whose fit extrapolates above this is not run (default: 900)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a process is stopped")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print_header()
    print_versions(*DISTRIBUTIONS)
    gamma = args.gamma or 1.0 / args.d
    print(f"two overlapping Gaussian classes, d={args.d}; RBF gamma={gamma:.4g}, C=1, tol=1e-3, test n={N_TEST}")
    peers = PeerTimes(max_seconds=args.peer_max_seconds)
    results = []
    for n in sorted(args.n):
        X, y = overlapping_classes(n + N_TEST, args.d, np.random.default_rng(args.seed))
        params = {"kernel": "rbf", "gamma": gamma, "C": 1.0, "tol": 1e-3}
        with problem_file(X[:n], y[:n], X[n:], y[n:]) as path:
            outcomes = compare(path, params, rounds=args.rounds, once_above=args.once_above, timeout=args.timeout,
                               skip=peers.skip(n),
                               progress=lambda line, n=n: print(f"[n={n}] {line}", flush=True, file=sys.stderr))
        peers.record(n, outcomes)
        results.append((f"n={n}", n, N_TEST, outcomes))
    print_comparison(f"two overlapping classes, d={args.d}", results, args.rounds)
    print_imports(results)


if __name__ == "__main__":
    main()
