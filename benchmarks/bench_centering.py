"""Sampled centering at scale: h and h0 from n × n' columns only, and the error of sampling.

Part 1 computes the sampled class-balanced origin (Meilă §5) on n points with
a kernel evaluated on the fly: only K(X, X_S) is evaluated, one row block per
task, and the peak memory is printed (no n × n nor n × n' array is held).

Part 2 compares, on a subset of ``--subset`` points, the exact class-balanced
centering with its sampled versions for several n':
``‖K_a − K̃_a‖_F / ‖K_a‖_F``. The difference of two centerings of the same K
is ``−δh 1ᵀ − 1 δhᵀ + δh0``, whose Frobenius norm is O(n); ``‖K_a‖_F`` is
one streaming pass over the lazy view. A second table gives, for the same
samples, the relative error of h itself, ``‖h̃ − h‖ / ‖h‖``, and that of the
sampled kernel-target alignment (Kandola eq. 1, ``--repeats`` samples of n'
points) against the exact one.

With ``--workers N``, part 1 runs again on a LocalCluster of N one-thread
worker processes (``--memory-limit`` each): X and X_S are scattered once,
each task evaluates one row block of K(X, X_S). Prints the time, each
worker's peak resident memory and the client's (``VmHWM`` on Linux, as
``bench_out_of_core.py`` measures it), and the difference from part 1's h.

To record, on a quiet machine and a committed tree, run the first command
below (about 2 minutes) and save its output as
``benchmarks/results/bench_centering.txt``; then append the run on a
cluster, the third command (about 3 minutes), to the same file.

    python benchmarks/bench_centering.py > benchmarks/results/bench_centering.txt    # n = 200000, d = 32, n' = 2000
    python benchmarks/bench_centering.py --n 20000      # a quicker run
    python benchmarks/bench_centering.py --n 1000000 --workers 2 >> benchmarks/results/bench_centering.txt
"""

import argparse
import tracemalloc

import dask
import numpy as np

from dkernel._runtime.client import start_local_cluster
from dkernel._runtime.memory import PeakMemory, peak_memory
from dkernel.alignment import frobenius_norm, sampled_target_alignment, target_alignment
from dkernel.centering import Centering, origin_products
from dkernel import KernelGram
from dkernel.views import CenteredGram
from _problems import noisy_threshold_labels  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions
from _timing import timed

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/centering",
    "dkernel/views",
    "dkernel/gram",
    "dkernel/alignment",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)


def centering_difference_norm(h_exact, h0_exact, h_sampled, h0_sampled):
    """‖K_a − K̃_a‖_F for two centerings of one Gram, from h and h0 alone."""
    # K_a − K̃_a = 1uᵀ + u1ᵀ − c with u = h̃ − h, c = h̃0 − h0 (eq. 14 for both origins).
    u = h_sampled - h_exact
    c = h0_sampled - h0_exact
    n = len(u)
    s1, s2 = u.sum(), u @ u
    # Σ_ij (u_i + u_j − c)² = 2nΣu² + 2(Σu)² − 4cnΣu + n²c²
    return float(np.sqrt(max(2 * n * s2 + 2 * s1**2 - 4 * c * n * s1 + n**2 * c**2, 0.0)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--n-sample", type=int, default=2000)
    parser.add_argument("--subset", type=int, default=10_000)
    parser.add_argument("--samples", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="samples of the sampled alignment (default: 5)")
    parser.add_argument("--workers", type=int, default=None,
                        help="also run part 1 on a LocalCluster of this many worker processes")
    parser.add_argument("--memory-limit", default="2GB", help="memory limit of each worker (default: 2GB)")
    args = parser.parse_args()
    print_header()
    print_versions("dask", "distributed")
    dask.config.set(scheduler="threads")

    X, y = noisy_threshold_labels(args.n, args.d, args.seed, threshold=0.8)
    gamma = 1.0 / args.d
    print(f"n={args.n} d={args.d} n'={args.n_sample} kernel=rbf(gamma={gamma:.4g}) chunk={args.chunk}")
    print(f"X: {X.nbytes / 1e6:.0f} MB; an n×n float64 Gram would be {args.n**2 * 8 / 1e9:.0f} GB, "
          f"n×n' {args.n * args.n_sample * 8 / 1e9:.2f} GB")

    base = KernelGram(X, "rbf", gamma=gamma, chunk=args.chunk)
    centering = Centering.sampled(y, args.n_sample, random_state=args.seed)
    tracemalloc.start()
    (h, h0), elapsed = timed(lambda: origin_products(base, centering))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss = peak_memory() / 1e9  # since the process started
    rate = args.n * args.n_sample / elapsed
    print(f"sampled h, h0: {elapsed:.2f} s ({rate / 1e6:.1f} M kernel entries/s), h0={h0:.6g}, "
          f"h in [{h.min():.4g}, {h.max():.4g}]")
    print(f"peak traced memory during h: {peak / 1e9:.3f} GB; process max RSS: {maxrss:.3f} GB "
          f"({'below' if max(peak / 1e9, maxrss) < 2 else 'ABOVE'} 2 GB)")
    if args.workers:
        on_cluster(args, base, centering, h, h0)

    m = min(args.subset, args.n)
    Xs, ys = X[:m], y[:m]
    sub = KernelGram(Xs, "rbf", gamma=gamma, chunk=2048)
    exact = CenteredGram(sub, Centering.class_balanced(ys))
    norm, seconds = timed(lambda: frobenius_norm(exact))
    print(f"\nsubset n={m}: exact class-balanced centering, ‖K_a‖_F = {norm:.6g} ({seconds:.1f} s)")
    print(f"{'n_sample':>9} {'rel. error':>12} {'seconds':>8}")
    errors_h = []
    for n_sample in args.samples:
        if n_sample > m:
            continue
        (h_s, h0_s), seconds = timed(lambda: origin_products(sub, Centering.sampled(ys, n_sample,
                                                                                   random_state=args.seed)))
        err = centering_difference_norm(exact.h, exact.h0, h_s, h0_s) / norm
        print(f"{n_sample:>9} {err:>12.4e} {seconds:>8.2f}")
        errors_h.append((n_sample, np.linalg.norm(h_s - exact.h) / np.linalg.norm(exact.h)))

    a_exact = target_alignment(sub, ys)
    print(f"\nsubset n={m}: relative error of the sampled h and of the sampled alignment "
          f"(exact A(K, yyᵀ) = {a_exact:.6g}; {args.repeats} samples of n' points)")
    print(f"{'n_sample':>9} {'h rel. error':>13} {'alignment':>10} {'± stderr':>9} {'rel. error':>11}")
    for n_sample, err_h in errors_h:
        est = sampled_target_alignment(sub, ys, n_sample, n_repeats=args.repeats, random_state=args.seed)
        print(f"{n_sample:>9} {err_h:>13.4e} {est.value:>10.6g} {est.stderr:>9.2g} "
              f"{abs(est.value - a_exact) / abs(a_exact):>11.4e}")


def on_cluster(args, base, centering, h_local, h0_local):
    """Part 1 again on a LocalCluster: time, each worker's peak memory and the client's."""
    print(f"\non a LocalCluster of {args.workers} worker processes x 1 thread, memory limit "
          f"{args.memory_limit} each:")
    cluster, client = start_local_cluster(n_workers=args.workers, threads_per_worker=1,
                                          memory_limit=args.memory_limit)
    with cluster, client:
        with PeakMemory(client) as memory:
            (h, h0), elapsed = timed(lambda: origin_products(base, centering, client=client))
        client_peak = memory.client_bytes
    limit = dask.utils.parse_bytes(args.memory_limit)
    peaks = [rss for _, rss in sorted(memory.worker_bytes.items())]
    rate = args.n * args.n_sample / elapsed
    print(f"sampled h, h0 on the cluster: {elapsed:.2f} s ({rate / 1e6:.1f} M kernel entries/s), h0={h0:.6g}")
    print(f"peak worker memory: {', '.join(f'{rss / 1e9:.3f} GB' for rss in peaks)} "
          f"({'below' if max(peaks) < limit else 'ABOVE'} the {args.memory_limit} limit); "
          f"client: {client_peak / 1e9:.3f} GB")
    diff = np.abs(h - h_local).max() / np.abs(h_local).max()
    print(f"max |h(cluster) - h(this process)| / max |h| = {diff:.2e}, "
          f"|h0(cluster) - h0(this process)| / |h0| = {abs(h0 - h0_local) / abs(h0_local):.2e}")


if __name__ == "__main__":
    main()
