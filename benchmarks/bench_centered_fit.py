"""An exact centered SVM: ``dkernel.SVC(centering="standard")`` beside scikit-learn and oneDAL, one fit per fresh process.

Two overlapping Gaussian classes in d = 64 dimensions (the problem of
``bench_svm.py``: about three quarters of the points are support vectors),
RBF gamma = 1/64, C = 1, tol = 1e-3, test set of 2000 points. dkernel runs
with its defaults: the training Gram whole in memory where it fits half the
available memory (float64, else float32), else kernel rows computed on the
fly with a row cache. Its time includes everything a user waits for: the
Gram (or its rows), the exact origin products h = K 1/n (one streaming pass
over the Gram, Meilă eq. 14), the solve on the centered Gram K_a and Δb
(eq. 19). scikit-learn (libsvm) and oneDAL (``sklearnex.svm.SVC``), both
with ``cache_size=2000``, solve the uncentered problem: with the equality
constraint yᵀα = 0 the centered and uncentered duals have the same solution
(Meilă's translation invariance), so the dual objectives, accuracies and
predictions are compared directly. Each fit runs in a new process per
library (``_fresh.py``), the libraries alternating over ``--rounds``
rounds; a fit longer than ``--once-above`` seconds is not repeated (``*``).
Where a peer is not run (above ``--peer-max``), its time is extrapolated
from the two largest sizes it ran at, with the slope of log t against
log n (``~``). The centered fit at n = 100000 is ``bench_scale.py``'s.

To record, on a quiet machine and a committed tree with scikit-learn-intelex
installed, run the first command below (about 15 minutes: sklearn takes
about 8 minutes at n = 50000) and save its output as
``benchmarks/results/bench_centered_fit.txt``.

    python benchmarks/bench_centered_fit.py > benchmarks/results/bench_centered_fit.txt    # n = 20000, 50000
    python benchmarks/bench_centered_fit.py --n 5000 20000 --peer-max 20000 --rounds 1
"""

import argparse
import dataclasses
import sys

import numpy as np

from _fresh import (DISTRIBUTIONS, DKERNEL, LIBRARIES, PeerTimes, compare, print_comparison, print_imports,
                    problem_file)
from _problems import overlapping_classes  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions

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

N_TEST = 2000
#: dkernel's column: the centered fit.
CENTERED = dataclasses.replace(DKERNEL, options=(("centering", "standard"),))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[20000, 50000], help="training set sizes")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peer-max", type=int, default=50000,
                        help="run scikit-learn and oneDAL up to this n; above it, extrapolate their times")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per library and size (median)")
    parser.add_argument("--once-above", type=float, default=30.0,
                        help="a library whose first fit took longer is not fitted again (seconds, default: 30)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before a process is stopped")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print_header()
    print_versions(*DISTRIBUTIONS)
    gamma = 1.0 / args.d
    print(f"RBF gamma={gamma:.4g}, C=1, tol=1e-3, d={args.d}, test n={N_TEST}; dkernel centered (standard origin), "
          f"scikit-learn and oneDAL uncentered (the same solution)")
    peers = PeerTimes(max_n=args.peer_max)
    results = []
    for n in sorted(args.n):
        X, y = overlapping_classes(n + N_TEST, args.d, np.random.default_rng(args.seed))
        params = {"kernel": "rbf", "gamma": gamma, "C": 1.0, "tol": 1e-3}
        with problem_file(X[:n], y[:n], X[n:], y[n:]) as path:
            outcomes = compare(path, params, libraries=(CENTERED, *LIBRARIES[1:]), rounds=args.rounds,
                               once_above=args.once_above, timeout=args.timeout, skip=peers.skip(n),
                               progress=lambda line, n=n: print(f"[n={n}] {line}", file=sys.stderr, flush=True))
        peers.record(n, outcomes)
        results.append((f"n={n}", n, N_TEST, outcomes))
    print_comparison(f"centered (dkernel) and uncentered (peers) fits, d={args.d}", results, args.rounds)
    print_imports(results)


if __name__ == "__main__":
    main()
