"""Gram matrix throughput: dkernel in memory, dkernel into zarr, scikit-learn.

Prints kernel entries per second (n² entries of an RBF Gram K(X, X)) on the
same data for each dtype, and the ratios:

* ``memory / sklearn``: speed of dkernel's in-memory Gram relative to
  :func:`sklearn.metrics.pairwise_kernels` (target >= 1.0: dkernel evaluates
  only the blocks on and above the diagonal);
* ``zarr / memory``: time of a run that writes the store relative to the
  in-memory run (target <= 1.5), for each chunk codec;

and, as the floor of any store, the time to write the same number of bytes
from an already computed array. Each figure is the median of ``--repeat``
interleaved runs; by default each run starts after touching twice the Gram's
size of memory (``--pages warm``, see ``touch_free_memory`` in ``_timing.py``).

It also times ``rows(idx)`` on the store for scattered indices, the access
pattern of the SVM solver, and ``submatrix(idx, n // 2, n)``, the column slab
that one of two distributed solver workers reads. Uncompressed stores read
only the requested rows' bytes; compressed ones decode whole inner chunks of
``--inner-rows`` rows.

Usage::

To record, on a quiet machine (about 8 GB free) and a committed tree, run the
first command below (about 5 minutes) and save its output as
``benchmarks/results/bench_gram.txt``.

Usage::

    python benchmarks/bench_gram.py > benchmarks/results/bench_gram.txt    # n=20000, d=64 (~8 GB RAM)
    python benchmarks/bench_gram.py --n 5000 --d 32    # quick
    python benchmarks/bench_gram.py --inner-rows 4     # rows per inner zarr chunk
    python benchmarks/bench_gram.py --pages as-is      # no memory touched between runs
"""

import argparse
import os
import shutil
import tempfile

import numpy as np
from sklearn.metrics import pairwise_kernels

from dkernel._runtime.options import GramOptions
from dkernel._runtime.options import inner_rows as inner_rows_of
from dkernel.gram import GramMatrix, store_size_bytes
from _provenance import print_header, print_versions  # benchmarks/_*.py, beside this script
from _timing import timed

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)


def write_floor(nbytes, folder, warm_bytes=0, block_bytes=2**27):
    """Seconds to write ``nbytes`` of an already computed array into files under ``folder`` (no kernel work).

    The same volume a store of the Gram holds, written from one buffer in
    pieces of a block's size: what the page cache costs on this machine
    before any kernel is evaluated.
    """
    buffer = np.random.default_rng(1).random(block_bytes // 8)
    os.makedirs(folder, exist_ok=True)

    def write_pieces():
        for k in range(-(-nbytes // buffer.nbytes)):
            piece = buffer[: min(buffer.size, (nbytes - k * buffer.nbytes) // 8)]
            with open(os.path.join(folder, f"piece-{k}"), "wb") as f:
                f.write(piece)

    _, seconds = timed(write_pieces, warm_bytes=warm_bytes)
    shutil.rmtree(folder)
    return seconds


def bench_dtype(X, dtype, codecs, chunk, tmpdir, n_rows, inner_rows, repeat, warm_pages):
    n, d = X.shape
    X = X.astype(dtype)
    gamma = 1.0 / d
    entries = float(n) * n
    itemsize = np.dtype(dtype).itemsize
    warm = 2 * n * n * itemsize if warm_pages else 0
    print(f"\n== {np.dtype(dtype).name}: n={n}, d={d}, rbf gamma={gamma:g}, chunk={chunk or 'default'}, "
          f"median of {repeat} runs, " + (f"{warm / 1e9:.1f} GB of memory touched before each run ==" if warm
                                          else "memory as left by the previous run =="))

    options = GramOptions(chunk=chunk, progress=False)
    times = {"sklearn": [], "memory": [], "floor": [], **{codec: [] for codec in codecs}}
    sizes, reads = {}, {}
    # The runs are interleaved (scikit-learn, memory, each store, the raw write, then again), so
    # that a change of the machine's state during the benchmark affects every column alike.
    for run in range(repeat):
        K, t = timed(lambda: pairwise_kernels(X, metric="rbf", gamma=gamma), warm_bytes=warm)
        assert K.dtype == dtype
        times["sklearn"].append(t)
        del K
        gram, t = timed(lambda: GramMatrix.compute(X, kernel="rbf", gamma=gamma, options=options), warm_bytes=warm)
        times["memory"].append(t)
        chunks = gram.chunks
        del gram
        for codec in codecs:
            path = os.path.join(tmpdir, f"bench-{codec}.zarr")
            shutil.rmtree(path, ignore_errors=True)
            codec_options = GramOptions(chunk=chunk, progress=False, codec=codec, inner_rows=inner_rows)
            _, t = timed(lambda: GramMatrix.compute(X, kernel="rbf", gamma=gamma, store=path,
                                                     options=codec_options), warm_bytes=warm)
            times[codec].append(t)
            if run == repeat - 1:
                sizes[codec] = store_size_bytes(path)
                idx = np.random.default_rng(0).choice(n, size=min(n_rows, n), replace=False)
                reader = GramMatrix.open(path)
                _, t_rows = timed(lambda: reader.rows(idx))
                _, t_slab = timed(lambda: reader.submatrix(idx, n // 2, n))
                reads[codec] = (t_rows, t_slab, len(idx))
                reader = None
            shutil.rmtree(path, ignore_errors=True)
        times["floor"].append(write_floor(n * n * itemsize, os.path.join(tmpdir, "floor"), warm))

    med = {key: float(np.median(values)) for key, values in times.items()}
    spread = {key: f"{min(values):.2f}-{max(values):.2f}" for key, values in times.items()}
    print(f"blocks: {chunks[0]}x{chunks[1]}, inner chunks of {inner_rows_of(chunks[0], inner_rows)} rows")
    print(f"{'':34s} {'seconds':>8s} {'(range)':>11s} {'entries/s':>11s}")
    rows = [("scikit-learn pairwise_kernels", "sklearn", ""), ("dkernel in memory", "memory", "")]
    rows += [(f"dkernel into zarr ({codec})", codec, f"{sizes[codec] / 1e9:.2f} GB on disk") for codec in codecs]
    for label, key, note in rows:
        print(f"{label:34s} {med[key]:8.2f} {spread[key]:>11s} {entries / med[key]:11.3e}  {note}")
    print(f"{'write the same bytes (no kernel)':34s} {med['floor']:8.2f} {spread['floor']:>11s} "
          f"{n * n * itemsize / med['floor'] / 1e9:8.2f} GB/s")
    print(f"ratio memory / sklearn (speed):  {med['sklearn'] / med['memory']:.2f}   (target >= 1.0)")
    for codec in codecs:
        print(f"ratio zarr({codec}) / memory (time): {med[codec] / med['memory']:.2f}   (target <= 1.5); "
              f"(memory + writing the bytes) / memory: {(med['memory'] + med['floor']) / med['memory']:.2f}")
    for codec, (t_rows, t_slab, n_idx) in reads.items():
        print(f"rows({n_idx} random indices) from zarr({codec}): {t_rows:.3f} s "
              f"({n_idx * n * itemsize / t_rows / 1e9:.2f} GB/s of rows returned); "
              f"submatrix(same, {n // 2}, {n}): {t_slab:.3f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20000, help="samples (default: 20000)")
    parser.add_argument("--d", type=int, default=64, help="features (default: 64)")
    parser.add_argument("--dtypes", default="float64,float32", help="comma-separated (default: float64,float32)")
    parser.add_argument("--codecs", default="none,lz4", help="zarr codecs to time (default: none,lz4)")
    parser.add_argument("--chunk", type=int, default=None, help="block side (default: dkernel's default)")
    parser.add_argument("--rows", type=int, default=1024, help="indices per rows() call (default: 1024)")
    parser.add_argument("--inner-rows", type=int, default=None,
                        help="rows per inner zarr chunk (default: dkernel's default, at most 16)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are printed "
                        "(default: 3)")
    parser.add_argument("--pages", choices=("warm", "as-is"), default="warm",
                        help="warm: touch 2 n² itemsize bytes of memory before each timed run (see "
                        "touch_free_memory); as-is: time each run in the memory state the previous one left "
                        "(default: warm)")
    parser.add_argument("--tmpdir", default=None, help="folder for the stores (default: the system temp dir)")
    args = parser.parse_args(argv)
    print_header()

    from threadpoolctl import threadpool_info

    blas = ", ".join(f"{i['internal_api']} {i.get('version')} x{i['num_threads']}" for i in threadpool_info()
                     if i["user_api"] == "blas")
    print_versions("dask", "zarr", "scikit-learn")
    print(f"{os.cpu_count()} CPUs, BLAS: {blas}, load average before: {os.getloadavg()[0]:.2f}")
    X = np.random.default_rng(0).normal(size=(args.n, args.d))
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmpdir:
        for dtype in args.dtypes.split(","):
            bench_dtype(X, np.dtype(dtype), args.codecs.split(","), args.chunk, tmpdir, args.rows, args.inner_rows,
                        args.repeat, args.pages == "warm")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
