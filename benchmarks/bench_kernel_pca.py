"""Kernel PCA beyond one machine's memory: the top components of n = 200000 points on two 2 GB workers.

A ``make_classification`` problem (n points, d = 16) and the RBF kernel: its
Gram would take n² × 8 bytes (320 GB at n = 200000), and scikit-learn's
``KernelPCA`` (which centers the whole matrix in memory, ``KernelCenterer``)
cannot start. ``dkernel.KernelPCA(eigen_solver="randomized", client=client)``
never forms it: the kernel is evaluated block by block on a LocalCluster of 2
worker processes (1 thread, a 2 GB memory limit each), each block centered as
it is read (Meilă eq. 14) and multiplied with the tall thin matrix of the
subspace iteration, so that a pass holds a few blocks per worker at a time.

The origin is the centre of gravity represented by a sample of ``n'`` points
(Meilă §5: ``h = Kγ`` costs ``n n'`` kernel values, not a pass over the
Gram); ``--exact-centering`` uses the centre of gravity of all n points (one
more pass). Prints the fit time, the peak resident memory of each worker
(``dkernel._runtime.memory.PeakMemory``: the kernel's ``VmHWM``) and of this
process, the leading eigenvalues, and the time to project test points.

Before the large run, the same script checks the solver at ``--check-n``
points against the dense eigendecomposition of the materialized centered Gram
(the largest relative difference of the top eigenvalues and of the
projections, up to sign) with the same settings.

To record, on a quiet machine and a committed tree (about 15 minutes here):

    python benchmarks/bench_kernel_pca.py > benchmarks/results/bench_kernel_pca.txt
    python benchmarks/bench_kernel_pca.py --n 20000          # quick
"""

import argparse
import os

import numpy as np
from sklearn.datasets import make_classification

from dkernel import KernelPCA
from dkernel._runtime.client import start_local_cluster
from dkernel._runtime.memory import PeakMemory
from _provenance import print_header, print_versions  # benchmarks/_*.py, beside this script
from _timing import timed

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/decomposition",
    "dkernel/views",
    "dkernel/centering",
    "dkernel/alignment",
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)


def _data(n, d, n_test):
    X, _ = make_classification(n_samples=n + n_test, n_features=d, n_informative=min(8, d),
                               n_redundant=min(4, d - min(8, d)), random_state=0)
    return X[:n], X[n:]


def _estimator(args, gamma, client, n_sample):
    return KernelPCA(args.components, kernel="rbf", gamma=gamma, eigen_solver="randomized",
                     iterated_power=args.iterated_power, n_sample=n_sample, random_state=0, client=client)


def _relative(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def check_against_dense(args, gamma, n_sample):
    """The randomized fit against the dense eigendecomposition of the same centered Gram, at ``--check-n``."""
    X, X_test = _data(args.check_n, args.d, 200)
    settings = dict(kernel="rbf", gamma=gamma, n_sample=n_sample, random_state=0, client=False)
    dense = KernelPCA(args.components, eigen_solver="dense", **settings).fit(X)
    fast = KernelPCA(args.components, eigen_solver="randomized", iterated_power=args.iterated_power,
                     **settings).fit(X)
    signs = np.sign(np.sum(dense.eigenvectors_ * fast.eigenvectors_, axis=0))
    values = np.abs(fast.eigenvalues_ - dense.eigenvalues_) / dense.eigenvalues_
    top = args.components // 2
    projections = _relative(fast.transform(X_test)[:, :top] * signs[:top], dense.transform(X_test)[:, :top])
    print(f"check at n={args.check_n}: randomized vs dense, the same sampled origin: eigenvalues rel. diff "
          f"{values[:top].max():.2e} (top {top}), {values.max():.2e} (all {args.components}); test projections on "
          f"the top {top}: {projections:.2e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200000, help="training points (default: 200000)")
    parser.add_argument("--d", type=int, default=16, help="features (default: 16)")
    parser.add_argument("--components", type=int, default=20, help="components (default: 20)")
    parser.add_argument("--iterated-power", type=int, default=1,
                        help="power iterations, two passes each (default: 1)")
    parser.add_argument("--n-sample", type=int, default=2000, help="n', the sampled origin's points (default: 2000)")
    parser.add_argument("--exact-centering", action="store_true", help="the centre of gravity of all n points")
    parser.add_argument("--n-test", type=int, default=10000, help="test points projected (default: 10000)")
    parser.add_argument("--check-n", type=int, default=3000, help="size of the check against dense (default: 3000)")
    parser.add_argument("--memory-limit", default="2GB", help="memory limit of each worker (default: 2GB)")
    args = parser.parse_args(argv)
    print_header()
    print_versions("numpy", "scipy", "scikit-learn", "dask", "distributed")
    n_sample = None if args.exact_centering else args.n_sample
    X, X_test = _data(args.n, args.d, args.n_test)
    gamma = 1.0 / (args.d * X.var())
    origin = "centre of gravity of all n points" if n_sample is None else f"centre of gravity of a sample of {n_sample}"
    print(f"data: n={args.n}, d={args.d}; RBF gamma={gamma:.4g}; {args.components} components; origin: {origin}; "
          f"randomized solver, iterated_power={args.iterated_power} ({2 * args.iterated_power + 2} passes over the "
          f"Gram, {args.components + 10} columns)")
    print(f"the Gram would take {args.n ** 2 * 8 / 1e9:.1f} GB in float64; workers: 2 x 1 thread, memory limit "
          f"{args.memory_limit} each")
    check_against_dense(args, gamma, None if n_sample is None else min(n_sample, args.check_n // 2))

    cluster, client = start_local_cluster(n_workers=2, threads_per_worker=1, memory_limit=args.memory_limit)
    with cluster, client:
        kpca = _estimator(args, gamma, client, n_sample)
        with PeakMemory(client) as memory:
            _, seconds = timed(lambda: kpca.fit(X))
        print(f"\nfit on the cluster: {seconds:.1f} s")
        peaks = ", ".join(f"{rss / 1e9:.2f} GB" for _, rss in sorted(memory.worker_bytes.items()))
        print(f"peak worker memory: {peaks} (limit {args.memory_limit}); this process: "
              f"{memory.client_bytes / 1e9:.2f} GB")
    print("eigenvalues: " + " ".join(f"{v:.4g}" for v in kpca.eigenvalues_))
    Z, seconds = timed(lambda: kpca.transform(X_test))
    print(f"transform of {args.n_test} test points in this process: {seconds:.1f} s; "
          f"variance of their first component {Z[:, 0].var():.4g} (training: {kpca.eigenvalues_[0] / args.n:.4g})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
