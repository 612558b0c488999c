"""Gram matrix throughput: dkernel in memory, dkernel into zarr, scikit-learn.

Prints kernel entries per second (n² entries of an RBF Gram K(X, X)) on the
same data for each dtype, and the ratios:

* ``memory / sklearn``: speed of dkernel's in-memory Gram relative to
  :func:`sklearn.metrics.pairwise_kernels` (target >= 1.0: dkernel evaluates
  only the blocks on and above the diagonal);
* ``zarr / memory``: time of a run that writes the store relative to the
  in-memory run (target <= 1.5), for each chunk codec.

It also times ``rows(idx)`` on the store for scattered indices, the access
pattern of the SVM solver, and ``submatrix(idx, n // 2, n)``, the column slab
that one of two distributed solver workers reads. Uncompressed stores read
only the requested rows' bytes; compressed ones decode whole inner chunks of
``--inner-rows`` rows.

Usage::

    python benchmarks/bench_gram.py                    # n=20000, d=64 (a few minutes, ~8 GB RAM)
    python benchmarks/bench_gram.py --n 5000 --d 32    # quick
    python benchmarks/bench_gram.py --inner-rows 4     # rows per inner zarr chunk
"""

import argparse
import gc
import os
import platform
import shutil
import tempfile
import time

import numpy as np
from sklearn.metrics import pairwise_kernels

from dkernel._options import GramOptions
from dkernel._options import inner_rows as inner_rows_of
from dkernel.gram import GramMatrix, store_size_bytes


def timed(fn):
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench_dtype(X, dtype, codecs, chunk, tmpdir, n_rows, inner_rows):
    n, d = X.shape
    X = X.astype(dtype)
    gamma = 1.0 / d
    entries = float(n) * n
    print(f"\n== {np.dtype(dtype).name}: n={n}, d={d}, rbf gamma={gamma:g}, chunk={chunk or 'default'} ==")

    K, t_sklearn = timed(lambda: pairwise_kernels(X, metric="rbf", gamma=gamma))
    assert K.dtype == dtype
    del K

    options = GramOptions(chunk=chunk, progress=False)
    gram, t_memory = timed(lambda: GramMatrix.compute(X, kernel="rbf", gamma=gamma, options=options))
    chunks = gram.chunks
    del gram

    rows = [("scikit-learn pairwise_kernels", t_sklearn, ""), ("dkernel in memory", t_memory, "")]
    store_results = []
    for codec in codecs:
        path = os.path.join(tmpdir, f"bench-{codec}.zarr")
        shutil.rmtree(path, ignore_errors=True)
        codec_options = GramOptions(chunk=chunk, progress=False, codec=codec, inner_rows=inner_rows)
        _, t_store = timed(lambda: GramMatrix.compute(X, kernel="rbf", gamma=gamma, store=path,
                                                         options=codec_options))
        size = store_size_bytes(path)
        idx = np.random.default_rng(0).choice(n, size=min(n_rows, n), replace=False)
        reader = GramMatrix.open(path)
        _, t_rows = timed(lambda: reader.rows(idx))
        _, t_slab = timed(lambda: reader.submatrix(idx, n // 2, n))
        rows.append((f"dkernel into zarr ({codec})", t_store, f"{size / 1e9:.2f} GB on disk"))
        store_results.append((codec, t_store, t_rows, t_slab, len(idx)))
        reader = None
        shutil.rmtree(path, ignore_errors=True)

    print(f"blocks: {chunks[0]}x{chunks[1]}, inner chunks of {inner_rows_of(chunks[0], inner_rows)} rows")
    print(f"{'':32s} {'seconds':>8s} {'entries/s':>11s}")
    for label, seconds, note in rows:
        print(f"{label:32s} {seconds:8.2f} {entries / seconds:11.3e}  {note}")
    print(f"ratio memory / sklearn (speed):  {t_sklearn / t_memory:.2f}   (target >= 1.0)")
    for codec, t_store, _, _, _ in store_results:
        print(f"ratio zarr({codec}) / memory (time): {t_store / t_memory:.2f}   (target <= 1.5)")
    itemsize = np.dtype(dtype).itemsize
    for codec, _, t_rows, t_slab, n_idx in store_results:
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
    parser.add_argument("--tmpdir", default=None, help="folder for the stores (default: the system temp dir)")
    args = parser.parse_args(argv)

    import dask
    import sklearn
    import zarr
    from threadpoolctl import threadpool_info

    blas = ", ".join(f"{i['internal_api']} {i.get('version')} x{i['num_threads']}" for i in threadpool_info()
                     if i["user_api"] == "blas")
    print(f"python {platform.python_version()}, numpy {np.__version__}, dask {dask.__version__}, "
          f"zarr {zarr.__version__}, scikit-learn {sklearn.__version__}")
    print(f"{os.cpu_count()} CPUs, BLAS: {blas}, load average before: {os.getloadavg()[0]:.2f}")
    X = np.random.default_rng(0).normal(size=(args.n, args.d))
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmpdir:
        for dtype in args.dtypes.split(","):
            bench_dtype(X, np.dtype(dtype), args.codecs.split(","), args.chunk, tmpdir, args.rows, args.inner_rows)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
