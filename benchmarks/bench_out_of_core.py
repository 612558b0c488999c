"""Out-of-core SVM: a Gram store larger than each worker's memory, solved on a local cluster.

A two-class problem (``make_classification``, moderately separable) with
n = 30000 training points in d = 16 dimensions. The float64 RBF Gram
(n² × 8 bytes = 7.2 GB) is computed into a zarr store by a LocalCluster of 2
worker processes with a 2 GB memory limit each; then

* ``SVC(kernel="precomputed", client=client).fit(GramMatrix.open(path), y)``
  solves on the cluster: the Gram stays on disk and each worker reads the
  working-set rows of its own column slab (``GramMatrix.submatrix``);
* ``SVC(kernel="rbf", cache_size=1000).fit(X, y)`` solves in this process,
  computing float64 kernel rows on the fly (1 GB holds no whole Gram);
* ``OneClassSVM(kernel="precomputed", nu=0.1, client=client).fit(stored)``
  estimates the support of the same points from the same store on the
  cluster, beside ``OneClassSVM(kernel="rbf", nu=0.1)`` in this process.

Both use C = 1 and the same tol. Prints the Gram time and size on disk, both
fit times, the peak resident memory of each worker during the cluster fits,
the number of support vectors and the largest difference of the decision
values on the test points (target <= 1e-6; both solvers stop at ``tol``, so
the difference is of the order of ``tol``, not of the rounding).

The peak memory is that of a single worker process (``dkernel._runtime.memory.PeakMemory``:
the kernel's ``VmHWM`` on Linux), not the cluster's: ``distributed``'s
``MemorySampler`` samples the scheduler's memory summed over all workers,
which cannot be compared with one worker's memory limit.

To record, on a quiet machine (8 GB of free disk) and a committed tree, run
the first command below (about 2 minutes here before; up to 20 on slower
disks) and save its output as ``benchmarks/results/bench_out_of_core.txt``.

    python benchmarks/bench_out_of_core.py > benchmarks/results/bench_out_of_core.txt    # n = 30000, ~8 GB disk
    python benchmarks/bench_out_of_core.py --n 5000         # quick
"""

import argparse
import os
import shutil
import tempfile

import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import pairwise_kernels

from dkernel._runtime.client import start_local_cluster
from dkernel._runtime.memory import PeakMemory
from dkernel.gram import GramMatrix, store_size_bytes
from dkernel.solver._qp import DISTRIBUTED_WORKING_SET_SIZE
from dkernel.svm import SVC, OneClassSVM
from _provenance import print_header, print_versions  # benchmarks/_*.py, beside this script
from _timing import timed

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/gram",
    "dkernel/svm",
    "dkernel/solver",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=30000, help="training points (default: 30000)")
    parser.add_argument("--d", type=int, default=16, help="features (default: 16)")
    parser.add_argument("--n-test", type=int, default=1000, help="test points (default: 1000)")
    parser.add_argument("--tol", type=float, default=1e-3, help="stopping tolerance of both fits (default: 1e-3)")
    parser.add_argument("--memory-limit", default="2GB", help="memory limit of each worker (default: 2GB)")
    parser.add_argument("--tmpdir", default=None, help="folder of the store (default: the system temp dir)")
    args = parser.parse_args(argv)
    print_header()

    print_versions("dask", "distributed", "zarr")
    n, d = args.n, args.d
    informative = min(8, d)
    X_all, y_all = make_classification(n_samples=n + args.n_test, n_features=d, n_informative=informative,
                                       n_redundant=min(4, d - informative), class_sep=1.0, flip_y=0.05,
                                       random_state=0)
    X, y, X_test = X_all[:n], y_all[:n], X_all[n:]
    gamma = 4.0 / (d * X.var())
    print(f"data: n={n}, d={d}, test points {args.n_test}; RBF gamma={gamma:.4g}, C=1, tol={args.tol:g}")
    print(f"Gram: {n}x{n} float64 = {n * n * 8 / 1e9:.2f} GB; workers: 2 x 1 thread, "
          f"memory limit {args.memory_limit} each")

    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmpdir:
        path = os.path.join(tmpdir, "K.zarr")
        cluster, client = start_local_cluster(n_workers=2, threads_per_worker=1, memory_limit=args.memory_limit)
        with cluster, client:
            with PeakMemory(client) as memory_gram:
                gram, t_gram = timed(lambda: GramMatrix.compute(X, kernel="rbf", gamma=gamma, dtype="float64",
                                                                store=path, client=client, progress=False))
            size = store_size_bytes(path)
            print(f"\nGram into zarr on the cluster: {t_gram:.1f} s, {gram.n_blocks[0]}x{gram.n_blocks[1]} blocks "
                  f"of {gram.chunks[0]}, {size / 1e9:.2f} GB on disk")
            del gram

            stored = GramMatrix.open(path)
            with PeakMemory(client) as memory_fit:
                on_cluster, t_cluster = timed(
                    lambda: SVC(kernel="precomputed", C=1.0, tol=args.tol, client=client).fit(stored, y)
                )
            print(f"fit on the cluster from the store: {t_cluster:.1f} s, {on_cluster.n_iter_[0]} iterations, "
                  f"{on_cluster.support_.size} support vectors")
            with PeakMemory(client) as memory_one_class:
                one_class, t_one_class = timed(
                    lambda: OneClassSVM(kernel="precomputed", nu=0.1, tol=args.tol, client=client).fit(stored)
                )
            print(f"one-class SVM (nu=0.1) on the cluster from the store: {t_one_class:.1f} s, "
                  f"{one_class.support_.size} support vectors")
            for label, sampler in (("Gram", memory_gram), ("fit", memory_fit), ("one-class fit", memory_one_class)):
                peaks = ", ".join(f"{rss / 1e9:.2f} GB" for _, rss in sorted(sampler.worker_bytes.items()))
                print(f"peak worker memory during the {label}: {peaks}")

        # The working set of the fit on the cluster (one process defaults to a smaller one) and float64 rows
        # computed on the fly (a 1 GB budget holds no whole Gram; one in memory would be float32): the same path.
        single, t_single = timed(lambda: SVC(kernel="rbf", gamma=gamma, C=1.0, tol=args.tol, cache_size=1000,
                                             working_set_size=DISTRIBUTED_WORKING_SET_SIZE).fit(X, y))
        print(f"fit in this process, rows computed on the fly: {t_single:.1f} s, {single.n_iter_[0]} iterations, "
              f"{single.support_.size} support vectors")

        one_class_single, t_one_class_single = timed(
            lambda: OneClassSVM(kernel="rbf", gamma=gamma, nu=0.1, tol=args.tol, cache_size=1000).fit(X))
        print(f"one-class SVM in this process, rows computed on the fly: {t_one_class_single:.1f} s, "
              f"{one_class_single.support_.size} support vectors")

        K_test = pairwise_kernels(X_test, X, metric="rbf", gamma=gamma)
        g_cluster = one_class.decision_function(K_test)
        g_single = one_class_single.decision_function(X_test)
        f_cluster = on_cluster.decision_function(K_test)
        f_single = single.decision_function(X_test)
        diff = float(np.abs(f_cluster - f_single).max())
        same_sv = np.array_equal(on_cluster.support_, single.support_)
        print(f"\nmax |decision(cluster, store) - decision(single process)| on {args.n_test} test points: "
              f"{diff:.2e}   (both fits stop at tol={args.tol:g})")
        print(f"same support vectors: {same_sv}; test agreement of the signs: "
              f"{np.mean(np.sign(f_cluster) == np.sign(f_single)):.4f}")
        print(f"one-class: max |decision(cluster, store) - decision(single process)|: "
              f"{float(np.abs(g_cluster - g_single).max()):.2e}; agreement of inlier/outlier on the test points: "
              f"{np.mean(np.sign(g_cluster) == np.sign(g_single)):.4f}")
        shutil.rmtree(path, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
