"""The ``dkernel`` commands of a Gram store: ``gram`` computes one, ``info`` describes it, ``verify`` checks it."""

from ._arguments import (_add_cluster_arguments, _add_command, _add_kernel_arguments, _add_storage_option_argument,
                         _announce_cluster, _cluster_choice, _is_url, _kernel_from_args, _open_gram, _read_data,
                         _storage_options)

DEMO_SHAPE = (4000, 16)


_GRAM_EPILOG = """\
examples:
  # first run on a fresh machine: a 4000x16 two-class demo data set,
  # computed by a local cluster of worker processes
  dkernel gram --demo --cluster local --out /tmp/K.zarr

  # an RBF Gram of your data, exp(-0.5 |x - z|^2), in float32
  dkernel gram --input X.npy --kernel rbf --gamma 0.5 --dtype float32 --out K.zarr

  # a normalized polynomial kernel of an svmlight file, on a running scheduler
  dkernel gram --input train.svmlight --kernel poly --degree 2 --coef0 1 \\
      --normalize --cluster tcp://127.0.0.1:8786 --out K.zarr

  # on SLURM: the workers are batch jobs (cluster/slurm.yaml)
  dkernel gram --input X.npy --gamma 0.5 --cluster cluster/slurm.yaml --out /shared/K.zarr

An interrupted run (Ctrl-C, a kill of the command or of a worker) is resumed
by running the same command again: only the missing blocks are computed. A store built from other
data or another kernel, or a derived (e.g. centered) store, is refused unless
--overwrite is given; the replacement is built beside it and swapped in when
complete. A folder that is not a Gram store is never replaced.

With a --cluster other than local every worker must reach the --out path (one
machine, or a shared filesystem mounted at the same path everywhere), or --out
is an object-store URL that every worker reaches, written without rename:

  dkernel gram --input X.npy --cluster cluster/kubernetes.yaml --out s3://bucket/K.zarr \
      --storage-option endpoint_url=http://minio:9000
"""


def _add_gram_parser(subparsers):
    _add_command(
        subparsers, "gram", _run_gram, _gram_arguments, interrupted=_gram_interrupted,
        help="compute a kernel Gram matrix K(X, X) into a zarr store",
        description="Compute the Gram matrix K(X, X) of a data file blockwise with Dask and write it "
        "to a zarr store (only the blocks on and above the diagonal are evaluated).",
        epilog=_GRAM_EPILOG,
    )


def _gram_interrupted(args):
    if not _store_written(args):
        return (f"nothing was kept yet at --out {args.out} (no block was written); running the same command again "
                f"starts over.")
    return (f"the blocks computed so far are kept with --out {args.out}; run the same command again to resume "
            f"(only the missing blocks are computed).")


def _store_written(args):
    """Whether a Gram store is at --out (its blocks are kept): a local store's ``zarr.json``, a URL's manifest."""
    import os

    if not _is_url(args.out):
        return os.path.isfile(os.path.join(args.out, "zarr.json"))
    from .._runtime.object_store import MANIFEST, entries, filesystem

    try:
        fs, root = filesystem(args.out, _storage_options(args))
        return MANIFEST in entries(fs, root)
    except Exception:  # noqa: BLE001 (the message of an interruption never fails on a read of the store)
        return True


def _stored_codec(path):
    """The codec (``none``, ``lz4``, ``zstd``) of the Gram of the local store at ``path``; None without one."""
    import json
    import os

    try:
        with open(os.path.join(path, "K", "zarr.json"), encoding="utf-8") as fh:
            text = json.dumps(json.load(fh))
    except (OSError, ValueError):
        return None
    for cname in ("lz4", "zstd"):
        if f'"cname": "{cname}"' in text:
            return cname
    return "none"


def _gram_arguments(p):
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="FILE",
                        help="data matrix, one sample per row: .npy, .npz (array 'X'), .svmlight/.libsvm, .csv "
                             "(a first line that is not numbers is a header, skipped)")
    source.add_argument("--demo", action="store_true",
                        help=f"use a generated {DEMO_SHAPE[0]}x{DEMO_SHAPE[1]} two-class blob data set")
    p.add_argument("--out", required=True, metavar="PATH",
                   help="folder of the zarr store to write (e.g. K.zarr), or a URL (s3://bucket/K.zarr)")
    k = p.add_argument_group("kernel (the defaults of 'dkernel fit' and scikit-learn's SVC)")
    _add_kernel_arguments(k)
    k.add_argument("--normalize", action="store_true",
                   help="normalize in feature space: K(x,z) / sqrt(K(x,x) K(z,z)) (Graf & Borer 2001)")
    e = p.add_argument_group("execution")
    e.add_argument("--chunk", type=int, default=None, metavar="N",
                   help="block side in rows (default: ~128 MB per block, 4096 for float64)")
    e.add_argument("--dtype", choices=["float32", "float64"], default=None,
                   help="dtype of the Gram (default: float32 for float32 data, else float64)")
    e.add_argument("--codec", choices=["none", "lz4", "zstd"], default=None,
                   help="compression of the stored chunks (default: none, fastest); a store written with another "
                        "codec is refused, as one of another --chunk")
    _add_cluster_arguments(e, "threads in this process")
    e.add_argument("--overwrite", action="store_true",
                   help="replace a Gram store built from other data, kernel or provenance (never another folder)")
    _add_storage_option_argument(e)
    e.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    e.add_argument("--no-verify", action="store_true",
                   help="on an existing store, do not check the blocks already written (by default they are read "
                        "once and the damaged ones recomputed with the missing ones)")


def _demo_data():
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n_samples=DEMO_SHAPE[0], n_features=DEMO_SHAPE[1], centers=2, cluster_std=2.0,
                      random_state=0)
    return X


def _run_gram(args):
    from .._runtime.client import scheduler_client
    from .._runtime.options import GramOptions
    from ..gram import GramMatrix, check_store_path
    from ..gram._summary import computation_summary

    if not _is_url(args.out):
        check_store_path(args.out, args.overwrite)  # a path refused whatever the data: before reading them
        stored = _stored_codec(args.out)
        if args.codec is not None and stored is not None and stored != args.codec:  # kept even with --overwrite
            raise ValueError(f"the Gram store {args.out} was built with another --codec (store: {stored}, requested: "
                             f"{args.codec}); its blocks are all written with --codec {stored}. Give --codec "
                             f"{stored}, or choose another path (or remove {args.out}) for --codec {args.codec}.")

    if args.demo:
        X, source = _demo_data(), f"demo blobs {DEMO_SHAPE[0]}x{DEMO_SHAPE[1]}"
    else:
        from .._runtime.validation import check_data

        X, _ = _read_data(args.input, name="--input")
        X = check_data(X, name=f"--input {args.input}")
        source = args.input
    kernel = _kernel_from_args(args, X)
    chunk = args.chunk
    if chunk is None and args.demo:
        chunk = DEMO_SHAPE[0] // 4  # 4 x 4 blocks, so that the demo shows the blockwise computation
    options = GramOptions(chunk=chunk, dtype=args.dtype, codec=args.codec or "none", progress=not args.no_progress,
                          verify=not args.no_verify)
    spec, flag = _cluster_choice(args)
    with scheduler_client(spec, n_workers=args.workers, option=flag) as client:
        _announce_cluster(client)
        gram = GramMatrix.compute(X, kernel=kernel, store=args.out, overwrite=args.overwrite,
                                  client=client, options=options, storage_options=_storage_options(args))
    print(f"dkernel: {computation_summary(gram, source)}")
    return 0


# ------------------------------------------------------------------------ info

_INFO_EPILOG = """\
example:
  dkernel info /tmp/K.zarr
  dkernel info /tmp/K.zarr --json
"""


def _add_info_parser(subparsers):
    _add_command(
        subparsers, "info", _run_info, _info_arguments,
        help="describe a Gram store: kernel, shape, dtype, chunks, completeness, size",
        description="Describe a Gram store written by 'dkernel gram'.",
        epilog=_INFO_EPILOG,
    )


def _info_arguments(p):
    p.add_argument("store", metavar="PATH", help="folder of the zarr store (e.g. K.zarr), or its URL")
    p.add_argument("--json", action="store_true", help="print the description as JSON")
    _add_storage_option_argument(p)


def _run_info(args):
    import json

    from ..gram._summary import store_summary

    info = _open_gram(args).info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    for key, value in store_summary(info):
        print(f"{key + ':':<9} {value}")
    return 0


# ---------------------------------------------------------------------- verify

_VERIFY_EPILOG = """\
example:
  dkernel verify K.zarr

Every computed block is read once (the whole store when it is complete) and
each of its rows compared with the CRC-32C written with it; the store's
metadata (attributes and array layout) are checked first. Exit status: 0
when every block is computed and intact; 1 when blocks or metadata are
damaged, or blocks missing (they are named, with the 'dkernel gram' command
that rewrites exactly them); 2 on an error (not a Gram store, a store written
without checksums, or a store replaced while it was read).
"""


def _add_verify_parser(subparsers):
    _add_command(
        subparsers, "verify", _run_verify, _verify_arguments,
        help="check every block of a Gram store against its checksums",
        description="Check every computed block of a Gram store written by 'dkernel gram' against the "
                    "checksums written with it, and name the damaged blocks and the command that repairs them.",
        epilog=_VERIFY_EPILOG,
    )


def _verify_arguments(p):
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr), or its URL")
    p.add_argument("--no-progress", action="store_true", help="do not show progress while the blocks are read")
    _add_storage_option_argument(p)


def _run_verify(args):
    import warnings

    from ..exceptions import CorruptStoreError, UnverifiedStoreWarning
    from ..gram import corruption_message
    from ..gram._summary import verification_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnverifiedStoreWarning)  # verify() says it, as an error
        try:
            gram = _open_gram(args)
        except CorruptStoreError as exc:  # damaged metadata: a finding of verify, reported as damage
            if exc.blocks or not exc.path:
                raise
            print(f"dkernel: {exc.path}: DAMAGED metadata: "
                  + " ".join(corruption_message(exc.path, [], exc.detail, cli=True).split()))
            return 1
    bad = gram.verify(progress=not args.no_progress)
    intact, lines = verification_report(gram, bad)
    print("\n".join(f"dkernel: {line}" for line in lines))
    return 0 if intact else 1


def add_commands(subparsers):
    """gram, info, verify."""
    _add_gram_parser(subparsers)
    _add_info_parser(subparsers)
    _add_verify_parser(subparsers)
