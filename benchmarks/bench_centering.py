"""Sampled centering at scale: h and h0 from n × n' columns only, and the error of sampling.

Part 1 computes the sampled class-balanced origin (Meilă §5) on n points with
a kernel evaluated on the fly: only K(X, X_S) is evaluated, one row block per
task, and the peak memory is printed (no n × n nor n × n' array is held).

Part 2 compares, on a subset of ``--subset`` points, the exact class-balanced
centering with its sampled versions for several n':
``‖K_a − K̃_a‖_F / ‖K_a‖_F``. The difference of two centerings of the same K
is ``−δh 1ᵀ − 1 δhᵀ + δh0``, whose Frobenius norm is O(n); ``‖K_a‖_F`` is
one streaming pass over the lazy view.

    python benchmarks/bench_centering.py                # n = 200000, d = 32, n' = 2000
    python benchmarks/bench_centering.py --n 20000      # a quicker run
"""

import argparse
import resource
import tracemalloc

import dask
import numpy as np

from dkernel.alignment import frobenius_norm
from dkernel.centering import Centering, origin_products
from dkernel import KernelGram
from dkernel.operators import CenteredGram
from _problems import noisy_threshold_labels  # benchmarks/_*.py, beside this script
from _provenance import print_header
from _timing import timed

MEASURES = (  # the modules these figures depend on: re-run and record when one changes
    "dkernel/centering.py",
    "dkernel/operators.py",
    "dkernel/_sources.py",
    "dkernel/alignment.py",
    "dkernel/kernels.py",
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
    args = parser.parse_args()
    print_header()
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
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB on Linux → GB
    rate = args.n * args.n_sample / elapsed
    print(f"sampled h, h0: {elapsed:.2f} s ({rate / 1e6:.1f} M kernel entries/s), h0={h0:.6g}, "
          f"h in [{h.min():.4g}, {h.max():.4g}]")
    print(f"peak traced memory during h: {peak / 1e9:.3f} GB; process max RSS: {maxrss:.3f} GB "
          f"({'below' if max(peak / 1e9, maxrss) < 2 else 'ABOVE'} 2 GB)")

    m = min(args.subset, args.n)
    Xs, ys = X[:m], y[:m]
    sub = KernelGram(Xs, "rbf", gamma=gamma, chunk=2048)
    exact = CenteredGram(sub, Centering.class_balanced(ys))
    norm, seconds = timed(lambda: frobenius_norm(exact))
    print(f"\nsubset n={m}: exact class-balanced centering, ‖K_a‖_F = {norm:.6g} ({seconds:.1f} s)")
    print(f"{'n_sample':>9} {'rel. error':>12} {'seconds':>8}")
    for n_sample in args.samples:
        if n_sample > m:
            continue
        (h_s, h0_s), seconds = timed(lambda: origin_products(sub, Centering.sampled(ys, n_sample,
                                                                                   random_state=args.seed)))
        err = centering_difference_norm(exact.h, exact.h0, h_s, h0_s) / norm
        print(f"{n_sample:>9} {err:>12.4e} {seconds:>8.2f}")


if __name__ == "__main__":
    main()
