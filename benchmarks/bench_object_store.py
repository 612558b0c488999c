"""A Gram store in an S3 bucket against one on the local disk: time and bytes of writing it, and of reading it back.

The same RBF Gram (``make_classification``, n = 20000, d = 32, float32,
blocks of 4096) is computed by a LocalCluster of 2 worker processes (one
thread each) twice, alternating over ``--rounds`` rounds:

* into a local zarr store (``store="K.zarr"``: written to a temporary
  folder, then renamed into place);
* into a bucket of an S3 endpoint (``store="s3://bucket/K.zarr"``, through
  s3fs): moto's server (``moto[server]``), started by this script in a
  process of its own on 127.0.0.1, holding the objects in its memory. No
  rename: each block goes under a versioned prefix with its checksum flag,
  and a manifest written last commits the version (``dkernel/gram/_remote.py``).

Then each store is read back in one pass by the workers (the exact
kernel-target alignment of the labels, which reads every block once and
verifies each block's checksum). Printed: the median seconds of the write
and of the read, the bytes of each store (files on disk; objects in the
bucket, manifest and flags included), the ratio bucket / local, and whether
both stores hold the same values (max |difference|, read back in this
process).

The endpoint is local: what is measured is dkernel's protocol and s3fs's
HTTP path, not a network. moto is a test server written in Python, so a
real object store (network aside) would serve the same requests faster.

To record, on a quiet machine and a committed tree (about 4 GB of free
memory for the moto process), run the first command below and save its
output as ``benchmarks/results/bench_object_store.txt``.

    python benchmarks/bench_object_store.py > benchmarks/results/bench_object_store.txt   # n = 20000
    python benchmarks/bench_object_store.py --n 2000 --rounds 1                             # quick
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import make_classification

from _fresh import format_table  # benchmarks/_*.py, beside this script
from _provenance import print_header, print_versions
from _timing import timed

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/gram",
    "dkernel/alignment",
    "dkernel/kernels",
    "dkernel/_runtime",
    "setup.py",
    "src",
)

KEY, SECRET = "bench-key", "bench-secret"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_endpoint():
    """``(process, url)``: moto's S3 server in a process of its own, on 127.0.0.1, answering."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):  # 60 s
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, url
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("moto's server did not start (pip install 'moto[server]')") from None
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("moto's server did not answer within 60 s")


def bucket_bytes(fs, prefix):
    """The bytes of every object under ``prefix``."""
    return sum(info["size"] for info in fs.find(prefix, detail=True).values())


def local_bytes(path):
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20000, help="training points (default: 20000)")
    parser.add_argument("--d", type=int, default=32, help="features (default: 32)")
    parser.add_argument("--chunk", type=int, default=4096, help="rows and columns of a block (default: 4096)")
    parser.add_argument("--rounds", type=int, default=2, help="writes of each store, alternating (default: 2)")
    parser.add_argument("--tmpdir", default=None, help="folder of the local store (default: the system temp dir)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    import boto3
    import s3fs

    from dkernel._runtime.client import start_local_cluster
    from dkernel.alignment import target_alignment
    from dkernel.gram import GramMatrix

    print_header()
    print_versions("dask", "distributed", "zarr", "s3fs", "boto3", "moto")
    X, y = make_classification(n_samples=args.n, n_features=args.d, n_informative=max(2, min(8, args.d // 2)),
                               n_redundant=0, random_state=0)
    gamma = 1.0 / (args.d * X.var())
    gram_bytes = args.n * args.n * 4
    print(f"data: n={args.n}, d={args.d}; RBF gamma={gamma:.4g}, float32, blocks of {args.chunk}; "
          f"the Gram: {gram_bytes / 1e9:.2f} GB; 2 workers x 1 thread")

    endpoint, url = start_endpoint()
    options = {"key": KEY, "secret": SECRET, "endpoint_url": url, "client_kwargs": {"region_name": "us-east-1"}}
    times = {"local": {"write": [], "read": []}, "bucket": {"write": [], "read": []}}
    sizes, stores = {}, {}
    try:  # the endpoint is stopped however this ends
        fs = s3fs.S3FileSystem(**options)
        boto3.client("s3", endpoint_url=url, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                     region_name="us-east-1").create_bucket(Bucket="bench")
        with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmpdir:
            cluster, client = start_local_cluster(n_workers=2, threads_per_worker=1)
            with cluster, client:
                GramMatrix.compute(X[:256], kernel="rbf", gamma=gamma, client=client, progress=False)  # warm up
                for r in range(args.rounds):
                    for kind in (("local", "bucket") if r % 2 == 0 else ("bucket", "local")):
                        if kind == "local":
                            where, extra = os.path.join(tmpdir, f"K{r}.zarr"), {}
                        else:
                            where, extra = f"s3://bench/K{r}.zarr", {"storage_options": options}
                        gram, seconds = timed(lambda where=where, extra=extra: GramMatrix.compute(
                            X, kernel="rbf", gamma=gamma, dtype="float32", chunk=args.chunk, store=where,
                            client=client, progress=False, **extra))
                        times[kind]["write"].append(seconds)
                        value, seconds = timed(lambda gram=gram: target_alignment(gram, y, client=client))
                        times[kind]["read"].append(seconds)
                        sizes[kind] = local_bytes(where) if kind == "local" else bucket_bytes(fs, where)
                        if r == args.rounds - 1 or args.rounds == 1:
                            stores[kind] = (gram, value)
                        print(f"round {r + 1} {kind}: write {times[kind]['write'][-1]:.1f} s, read "
                              f"{seconds:.1f} s", file=sys.stderr, flush=True)
                        if kind == "local" and r < args.rounds - 1:
                            shutil.rmtree(where)
                        elif kind == "bucket" and r < args.rounds - 1:
                            fs.rm(where, recursive=True)
            diff = float(np.max(np.abs(stores["local"][0].to_numpy() - stores["bucket"][0].to_numpy())))
    finally:
        endpoint.terminate()
        endpoint.wait(timeout=30)

    how = "one round" if args.rounds == 1 else f"median of {args.rounds} rounds, alternating"
    print(f"\n## the Gram into a store, then one pass over it ({how})")
    rows = [[label, f"{np.median(times[kind]['write']):.1f} s", f"{np.median(times[kind]['read']):.1f} s",
             f"{sizes[kind]:,}", f"{sizes[kind] / gram_bytes:.3f}"]
            for kind, label in (("local", "local folder (zarr)"), ("bucket", "S3 bucket (moto, s3fs)"))]
    columns = [("store", 0, "<"), ("write", 0, ">"), ("read", 0, ">"), ("bytes", 0, ">"), ("bytes / 4n²", 0, ">")]
    print("\n".join(format_table(columns, rows)))
    ratio_w = np.median(times["bucket"]["write"]) / np.median(times["local"]["write"])
    ratio_r = np.median(times["bucket"]["read"]) / np.median(times["local"]["read"])
    print(f"\nbucket / local: write {ratio_w:.2f}x, read {ratio_r:.2f}x, bytes {sizes['bucket'] / sizes['local']:.4f}x")
    print(f"max |K(bucket) - K(local)|: {diff:.1e}; alignment read from each: {stores['local'][1]:.10g} and "
          f"{stores['bucket'][1]:.10g}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
