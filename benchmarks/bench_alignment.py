"""Streaming alignment over a stored Gram versus reading the store.

Builds (or reuses) a float32 Gram store of n points and prints entries/s for

* reading every chunk of the store (a blockwise pass that only touches the data),
* the exact kernel-target alignment (one pass: per block ``t_iᵀK_ij t_j`` and ``‖K_ij‖²``),
* the same through a lazy centered view (corrections applied per block),
* a sampled estimate (R submatrices of n' × n').

float32 halves the store (n = 30000: 3.6 GB instead of 7.2 GB) and the bytes
read per pass; the sums are accumulated in float64 strips, so the alignment
keeps float64 accuracy for the stored values.

To record, on a quiet machine (4 GB of free disk) and a committed tree, run
the first command below (about 1 minute) and save its output as
``benchmarks/results/bench_alignment.txt``.

    python benchmarks/bench_alignment.py > benchmarks/results/bench_alignment.txt    # n = 30000
    python benchmarks/bench_alignment.py --n 8000 --store /tmp/K8k.zarr
"""

import argparse
import os
import shutil
import tempfile

import dask
import dask.array as da
import numpy as np

from dkernel.alignment import sampled_target_alignment, target_alignment
from dkernel.centering import Centering
from dkernel.gram import GramMatrix
from dkernel.views import CenteredGram
from _problems import noisy_threshold_labels  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions
from _timing import timed

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/alignment",
    "dkernel/centering",
    "dkernel/views",
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)


def _touch(block):
    # Reading the chunk is the work; the reduction is a single cheap read of one value.
    return np.full((1, 1), block[0, 0], dtype=np.float64)


def read_pass(gram):
    K = gram.dask
    return da.map_blocks(_touch, K, chunks=((1,) * K.numblocks[0], (1,) * K.numblocks[1]), dtype=np.float64).sum()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--store", default=None, help="store folder (default: a temporary folder, removed)")
    parser.add_argument("--chunk", type=int, default=None)
    parser.add_argument("--n-sample", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print_header()
    print_versions("dask", "zarr")
    dask.config.set(scheduler="threads")

    X, y = noisy_threshold_labels(args.n, args.d, args.seed, threshold=0.5, dtype=np.float32)
    tmp = None
    path = args.store
    if path is None:
        tmp = tempfile.mkdtemp(prefix="bench-alignment-")
        path = os.path.join(tmp, "K.zarr")
    try:
        gram, seconds = timed(lambda: GramMatrix.compute(X, kernel="rbf", gamma=1.0 / args.d, store=path,
                                                         chunk=args.chunk, dtype="float32", progress=False))
        entries = args.n**2
        print(f"n={args.n} store={path} dtype={gram.dtype} chunks={gram.chunks} "
              f"({entries * 4 / 1e9:.2f} GB); compute: {gram.n_blocks_computed} blocks in {seconds:.1f} s")

        def print_rate(label, fn):
            value, s = timed(fn)
            print(f"{label:<34} {s:8.2f} s {entries / s / 1e6:10.1f} M entries/s   {value}")
            return s

        # Compile the numba block reduction outside the timings.
        target_alignment(np.eye(4), np.array([1, 1, -1, -1]))
        read_s = print_rate("read every chunk", lambda: float(read_pass(gram).compute()))
        align_s = print_rate("exact alignment (stream)", lambda: f"A = {target_alignment(gram, y):.6f}")
        n_center = min(2000, args.n)
        view = CenteredGram(gram, Centering.sampled(y, n_center, random_state=args.seed))
        print_rate("exact alignment of centered view", lambda: f"A = {target_alignment(view, y):.6f} "
                   f"(origin sampled on {n_center} points)")
        print(f"alignment / read time ratio: {align_s / read_s:.2f}")
        est, seconds = timed(lambda: sampled_target_alignment(gram, y, args.n_sample, n_repeats=args.repeats,
                                                              random_state=args.seed))
        print(f"{'sampled alignment':<34} {seconds:8.2f} s   {est}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
