"""Top-k eigenpairs for alignment adaptation at scale versus the exact eigendecomposition.

Kandola et al. call a full eigendecomposition of the Gram prohibitive for large
n. dkernel's transductive adaptation needs only the top k eigenpairs: a
randomized range finder whose products ``K Q`` are computed blockwise by Dask
workers from a lazy RBF Gram (``KernelGram``: the kernel evaluated on the fly,
the n × n matrix never formed nor stored). This script prints, on a local
cluster of 2 workers:

* the randomized top-k at ``--n`` points (default 50000): wall time, peak
  resident memory of each worker and of this process, the mass of the trace
  the k eigenvalues carry, and the training alignment of the adapted G;
* the exact method (``numpy.linalg.eigh`` of the dense Gram) timed at the
  smaller sizes ``--exact-n`` and extrapolated as O(n³) to ``--n`` (with the
  n² × 8 bytes its Gram alone would take), beside the randomized method at the
  same sizes, and the gap between the two methods' alignments.

To record, on a quiet machine and a committed tree, run the first command
below (about 3 minutes) and save its output as
``benchmarks/results/bench_adaptation.txt``.

    python benchmarks/bench_adaptation.py > benchmarks/results/bench_adaptation.txt    # n = 50000, k = 100
    python benchmarks/bench_adaptation.py --n 5000 --exact-n 1000 2000
"""

import argparse

import numpy as np

from _problems import noisy_threshold_labels  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions
from _timing import timed
from dkernel import KernelGram, RBFKernel
from dkernel._runtime.client import start_local_cluster
from dkernel._runtime.memory import PeakMemory
from dkernel.alignment import transductive_adaptation

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/alignment",
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)


def _exact_and_randomized(n, d, rank, seed):
    """Time eigh and the randomized range finder (in this process) on the same dense n × n Gram."""
    X, y = noisy_threshold_labels(n, d, seed, threshold=0.5)
    K = RBFKernel(gamma=1.0 / d).block(X, X, symmetric=True).astype(np.float64)
    exact, exact_seconds = timed(lambda: transductive_adaptation(K, y, method="exact"))
    approx, approx_seconds = timed(lambda: transductive_adaptation(K, y, rank=rank, method="randomized",
                                                                   random_state=seed, client=False))
    return exact_seconds, approx_seconds, exact.alignment(y), approx.alignment(y), approx.mass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50_000, help="points of the randomized run (default: 50000)")
    parser.add_argument("--d", type=int, default=8, help="features (default: 8)")
    parser.add_argument("--rank", type=int, default=100, help="k, eigenpairs kept (default: 100)")
    parser.add_argument("--chunk", type=int, default=2500, help="rows per block of the lazy Gram (default: 2500)")
    parser.add_argument("--exact-n", type=int, nargs="+", default=[2000, 4000],
                        help="sizes at which the exact method is timed (default: 2000 4000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GB", help="per worker (default: 4GB)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print_header()
    print_versions("dask", "distributed")

    print(f"exact eigh vs randomized top-{args.rank} (dense Gram in this process):")
    rows = []
    for n in args.exact_n:
        exact_s, approx_s, a_exact, a_approx, mass = _exact_and_randomized(n, args.d, args.rank, args.seed)
        rows.append((n, exact_s))
        print(f"  n={n}: eigh {exact_s:.2f} s, randomized {approx_s:.2f} s; alignment of G exact {a_exact:.6f}, "
              f"top-{args.rank} {a_approx:.6f} (gap {abs(a_exact - a_approx):.2e}, mass {mass:.4f})")
    # O(n³) from the largest measured size.
    n_ref, s_ref = rows[-1]
    extrapolated = s_ref * (args.n / n_ref) ** 3
    print(f"exact at n={args.n}, extrapolated as n³ from n={n_ref}: {extrapolated:.0f} s "
          f"({extrapolated / 3600:.1f} h), its dense Gram alone {args.n**2 * 8 / 1e9:.1f} GB")

    X, y = noisy_threshold_labels(args.n, args.d, args.seed, threshold=0.5)
    source = KernelGram(X, "rbf", gamma=1.0 / args.d, chunk=args.chunk)
    cluster, client = start_local_cluster(n_workers=args.workers, threads_per_worker=1,
                                          memory_limit=args.memory_limit)
    try:
        with PeakMemory(client) as memory:
            G, seconds = timed(lambda: transductive_adaptation(source, y, rank=args.rank, method="randomized",
                                                               random_state=args.seed, client=client))
        peaks = ", ".join(f"{rss / 1e9:.2f} GB" for _, rss in sorted(memory.worker_bytes.items()))
    finally:
        client.close()
        cluster.close()
    client_peak = memory.client_bytes
    print(f"randomized top-{args.rank} at n={args.n} on {args.workers} workers (lazy RBF Gram, chunk {args.chunk}, "
          f"4 passes over K): {seconds:.1f} s; peak worker memory {peaks}; this process {client_peak / 1e9:.2f} GB; "
          f"mass {G.mass:.4f}; training alignment of G {G.alignment(y):.6f}; "
          f"{extrapolated / seconds:.0f}x faster than the extrapolated exact method")


if __name__ == "__main__":
    main()
