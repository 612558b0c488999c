"""Command line interface: ``dkernel <command> ...``.

Argument parsing only; every command calls the library. Each subcommand is a
pair ``_add_<name>_parser(subparsers)`` / ``_run_<name>(args)`` registered in
:func:`build_parser`.
"""

import argparse
import json
import re
import sys

from ._dask import scheduler_client
from ._labels import load_labels
from .exceptions import CorruptStoreError, DKernelError
from .svm._kernel import ESTIMATOR_DEFAULTS, KERNEL_PARAMS

__all__ = ["build_parser", "main"]

DEMO_SHAPE = (4000, 16)


# ------------------------------------- options shared by commands, and their checks

#: The kernel parameters that each kernel of --kernel takes.

_GAMMA_HELP = ("float > 0, 'scale' = 1/(n_features * X.var()) or 'auto' = 1/n_features (default: "
               f"{ESTIMATOR_DEFAULTS['gamma']}, as scikit-learn's SVC)")


def _add_command(subparsers, name, run, **kwargs):
    """The subparser of command ``name``, which runs ``run(args)``; its epilog is shown as written."""
    p = subparsers.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    p.set_defaults(run=run)
    return p


def _add_kernel_arguments(group):
    """--kernel, --gamma, --degree, --coef0: the same choices and defaults for 'gram' and 'fit'."""
    group.add_argument("--kernel", default="rbf", choices=list(KERNEL_PARAMS),
                       help="kernel function (default: %(default)s); rbf is exp(-gamma |x - z|^2), poly "
                            "(gamma x'z + coef0)^degree, sigmoid tanh(gamma x'z + coef0)")
    group.add_argument("--gamma", default=None, help=_GAMMA_HELP)
    group.add_argument("--degree", type=int, default=None,
                       help=f"degree of poly (default: {ESTIMATOR_DEFAULTS['degree']})")
    group.add_argument("--coef0", type=float, default=None,
                       help=f"offset of poly and sigmoid (default: {ESTIMATOR_DEFAULTS['coef0']:g})")


def _kernel_args(args):
    """``{"gamma", "coef0", "degree"}`` of the kernel options, defaults filled in; a misused option is refused."""
    given = [name for name in ("gamma", "degree", "coef0") if getattr(args, name) is not None]
    unused = [name for name in given if name not in KERNEL_PARAMS[args.kernel]]
    if unused:
        takes = ", ".join(f"--{name}" for name in KERNEL_PARAMS[args.kernel]) or "no parameter"
        raise ValueError(f"{', '.join(f'--{name}' for name in unused)}: unknown parameter of the {args.kernel} "
                         f"kernel, which takes {takes}.")
    values = {name: ESTIMATOR_DEFAULTS[name] if getattr(args, name) is None else getattr(args, name)
              for name in ("gamma", "degree", "coef0")}  # fmt: skip
    gamma = values["gamma"]
    if gamma not in ("scale", "auto"):
        try:
            gamma = float(gamma)
        except ValueError:
            gamma = None
        if gamma is None or not (0 < gamma < float("inf")):
            raise ValueError(f"--gamma must be a number > 0, 'scale' or 'auto'; got {values['gamma']!r}.")
        values["gamma"] = gamma
    if values["degree"] < 1:
        raise ValueError(f"--degree must be an integer >= 1; got {values['degree']}.")
    return values


#: Per command: (option, lowest allowed value) of its numeric options, checked before any work.
_LOWEST = {
    "gram": (("chunk", 1), ("workers", 1)),
    "center": (("sample", 1),),
    "align": (("sample", 2), ("repeats", 2)),
    "fit": (("centering_sample", 2), ("working_set_size", 2)),
}
_POSITIVE = {"fit": ("C", "tol")}


def _check_options(args):
    """Refuse out-of-range numeric options and misused kernel options with a message that names the flag."""
    if args.command in ("gram", "fit"):
        _kernel_args(args)
    for name, lowest in _LOWEST.get(args.command, ()):
        value = getattr(args, name)
        if value is not None and value < lowest:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= {lowest}; got {value}.")
    for name in _POSITIVE.get(args.command, ()):
        value = getattr(args, name)
        if not (0 < value < float("inf")):
            raise ValueError(f"--{name} must be a finite number > 0; got {value:g}.")


# ------------------------------------------------------------------------ gram

_GRAM_EPILOG = """\
examples:
  # first run on a fresh machine: a 4000x16 two-class demo data set,
  # computed by a local cluster of worker processes
  dkernel gram --demo --scheduler local --out /tmp/K.zarr

  # an RBF Gram of your data, exp(-0.5 |x - z|^2), in float32
  dkernel gram --input X.npy --kernel rbf --gamma 0.5 --dtype float32 --out K.zarr

  # a normalized polynomial kernel of an svmlight file, on a running scheduler
  dkernel gram --input train.svmlight --kernel poly --degree 2 --coef0 1 \\
      --normalize --scheduler tcp://127.0.0.1:8786 --out K.zarr

An interrupted run (Ctrl-C, a killed worker) is resumed by running the same
command again: only the missing blocks are computed. A store built from other
data or another kernel, or a derived (e.g. centered) store, is refused unless
--overwrite is given; the replacement is built beside it and swapped in when
complete. A folder that is not a Gram store is never replaced.

With --scheduler ADDRESS every worker must reach the --out path (one machine,
or a shared filesystem).
"""


def _add_gram_parser(subparsers):
    p = _add_command(
        subparsers, "gram", _run_gram,
        help="compute a kernel Gram matrix K(X, X) into a zarr store",
        description="Compute the Gram matrix K(X, X) of a data file blockwise with Dask and write it "
        "to a zarr store (only the blocks on and above the diagonal are evaluated).",
        epilog=_GRAM_EPILOG,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="FILE",
                        help="data matrix, one sample per row: .npy, .npz (array 'X'), .svmlight/.libsvm, .csv")
    source.add_argument("--demo", action="store_true",
                        help=f"use a generated {DEMO_SHAPE[0]}x{DEMO_SHAPE[1]} two-class blob data set")
    p.add_argument("--out", required=True, metavar="PATH", help="folder of the zarr store to write (e.g. K.zarr)")
    k = p.add_argument_group("kernel (the defaults of 'dkernel fit' and scikit-learn's SVC)")
    _add_kernel_arguments(k)
    k.add_argument("--normalize", action="store_true",
                   help="normalize in feature space: K(x,z) / sqrt(K(x,x) K(z,z)) (Graf & Borer 2001)")
    e = p.add_argument_group("execution")
    e.add_argument("--chunk", type=int, default=None, metavar="N",
                   help="block side in rows (default: ~128 MB per block, 4096 for float64)")
    e.add_argument("--dtype", choices=["float32", "float64"], default=None,
                   help="dtype of the Gram (default: float32 for float32 data, else float64)")
    e.add_argument("--codec", choices=["none", "lz4", "zstd"], default="none",
                   help="compression of the stored chunks (default: none, fastest)")
    e.add_argument("--scheduler", default=None, metavar="ADDR|local",
                   help="'local' starts a cluster of worker processes on 127.0.0.1; an address such as "
                   "tcp://127.0.0.1:8786 uses a running scheduler; default: threads in this process")
    e.add_argument("--workers", type=int, default=None, metavar="N",
                   help="number of worker processes with --scheduler local (default: one per core)")
    e.add_argument("--overwrite", action="store_true",
                   help="replace a Gram store built from other data, kernel or provenance (never another folder)")
    e.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    e.add_argument("--no-verify", action="store_true",
                   help="on an existing store, do not check the blocks already written (by default they are read "
                        "once and the damaged ones recomputed with the missing ones)")


def _demo_data():
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n_samples=DEMO_SHAPE[0], n_features=DEMO_SHAPE[1], centers=2, cluster_std=2.0,
                      random_state=0)
    return X


def _kernel_from_args(args, X):
    """The kernel of --kernel/--gamma/--degree/--coef0 (gamma 'scale' resolved on X), as 'dkernel fit' builds it."""
    from .kernels import NormalizedKernel
    from .svm._kernel import estimator_kernel

    kernel = estimator_kernel(args.kernel, X, **_kernel_args(args))
    return NormalizedKernel(kernel) if args.normalize else kernel


def _run_gram(args):
    from ._options import GramOptions
    from ._store_summary import computation_summary
    from .gram import GramMatrix, check_store_path

    check_store_path(args.out, args.overwrite)  # a path refused whatever the data: before reading them

    if args.demo:
        X, source = _demo_data(), f"demo blobs {DEMO_SHAPE[0]}x{DEMO_SHAPE[1]}"
    else:
        from ._io import load_input
        from ._validation import check_data

        X, _ = load_input(args.input)
        X = check_data(X, name=f"--input {args.input}")
        source = args.input
    kernel = _kernel_from_args(args, X)
    chunk = args.chunk
    if chunk is None and args.demo:
        chunk = DEMO_SHAPE[0] // 4  # 4 x 4 blocks, so that the demo shows the blockwise computation
    options = GramOptions(chunk=chunk, dtype=args.dtype, codec=args.codec, progress=not args.no_progress,
                          verify=not args.no_verify)
    with scheduler_client(args.scheduler, n_workers=args.workers) as client:
        _announce_cluster(client)
        gram = GramMatrix.compute(X, kernel=kernel, store=args.out, overwrite=args.overwrite,
                                  client=client, options=options)
    print(f"dkernel: {computation_summary(gram, source)}")
    return 0


# ------------------------------------------------------------------------ info

_INFO_EPILOG = """\
example:
  dkernel info /tmp/K.zarr
  dkernel info /tmp/K.zarr --json
"""


def _add_info_parser(subparsers):
    p = _add_command(
        subparsers, "info", _run_info,
        help="describe a Gram store: kernel, shape, dtype, chunks, completeness, size",
        description="Describe a Gram store written by 'dkernel gram'.",
        epilog=_INFO_EPILOG,
    )
    p.add_argument("store", metavar="PATH", help="folder of the zarr store (e.g. K.zarr)")
    p.add_argument("--json", action="store_true", help="print the description as JSON")


def _run_info(args):
    from ._store_summary import store_summary
    from .gram import GramMatrix

    info = GramMatrix.open(args.store).info()
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
each of its rows compared with the CRC-32C written with it. Exit status: 0
when every block is computed and intact; 1 when blocks are damaged or missing
(they are named, with the 'dkernel gram' command that rewrites exactly them);
2 on an error (not a Gram store, or a store written without checksums).
"""


def _add_verify_parser(subparsers):
    p = _add_command(
        subparsers, "verify", _run_verify,
        help="check every block of a Gram store against its checksums",
        description="Check every computed block of a Gram store written by 'dkernel gram' against the "
                    "checksums written with it, and name the damaged blocks and the command that repairs them.",
        epilog=_VERIFY_EPILOG,
    )
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr)")
    p.add_argument("--no-progress", action="store_true", help="do not show progress while the blocks are read")


def _run_verify(args):
    import warnings

    from .exceptions import UnverifiedStoreWarning
    from ._store_summary import verification_report
    from .gram import GramMatrix

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnverifiedStoreWarning)  # verify() says it, as an error
        gram = GramMatrix.open(args.store)
    bad = gram.verify(progress=not args.no_progress)
    intact, lines = verification_report(gram, bad)
    print("\n".join(f"dkernel: {line}" for line in lines))
    return 0 if intact else 1


# ---------------------------------------------------------------------- center

_CENTER_EPILOG = """\
examples:
  # Meila's class-balanced centering of a stored Gram, materialized in a new store
  dkernel center K.zarr --labels y.npy --scheme class-balanced --out Ka.zarr

  # the origin represented by 2000 sampled points (1000 per class); print h0 and h
  dkernel center K.zarr --labels y.npy --sample 2000 --seed 0

The centered store records its provenance (the base kernel and data, the
origin's scheme, weights fingerprint and h0), shown by 'dkernel info'; 'dkernel
gram' and 'dkernel fit --store' refuse it as a raw Gram. An SVM trained on it
is evaluated with the original kernel after subtracting
delta_b = sum_i alpha_i y_i h_i from its intercept (Meila eq. 19).

--out K.zarr (the input store itself) needs --overwrite: the centered store is
written beside it and replaces it only once complete.
"""


def _add_center_parser(subparsers):
    p = _add_command(
        subparsers, "center", _run_center,
        help="center a Gram store in feature space (Meila 2002)",
        description="Translate the data in feature space to an origin a = sum_i gamma_i phi(x_i) and "
                    "write (or summarize) the centered Gram K_a = K - 1h' - h1' + h0.",
        epilog=_CENTER_EPILOG,
    )
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr)")
    p.add_argument("--labels", metavar="FILE", help="labels, one per row of the Gram (.npy, .txt or .csv); "
                   "required by the class schemes")
    p.add_argument("--scheme", choices=("class-balanced", "standard", "multiclass"), default="class-balanced",
                   help="origin: halfway between the class centres (two classes), the centre of gravity, or the "
                        "mean of the class centres (default: %(default)s)")
    p.add_argument("--sample", type=int, metavar="N", help="represent the origin by N sampled points "
                   "(N/c per class for the class schemes)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample (default: %(default)s)")
    p.add_argument("--out", metavar="PATH", help="write the centered Gram to this store; without it, print h0 "
                   "and a summary of h")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a Gram store at --out (never another folder); --out may then be the input store, "
                        "replaced once the centered store is complete")


def _check_label_count(y, n, store):
    if y is not None and len(y) != n:
        raise ValueError(f"--labels has {len(y)} labels but the Gram store {store} has {n} rows; pass one label "
                         f"per row, in the order of the data the Gram was computed from.")


def _check_sample(n_sample, n, store):
    if n_sample is not None and n_sample > n:
        raise ValueError(f"--sample {n_sample} is larger than the {n} rows of the Gram store {store}; use "
                         f"--sample {n} or less.")


def _run_center(args):
    import numpy as np

    from .centering import Centering
    from .gram import GramMatrix
    from .operators import CenteredGram

    gram = GramMatrix.open(args.store)
    if args.out:
        from .operators import check_output_store

        check_output_store(args.out, args.overwrite, gram)  # before h = K gamma, a pass over the store
    y = load_labels(args.labels) if args.labels else None
    if y is None and args.scheme != "standard":
        raise ValueError(f"the {args.scheme} scheme needs labels; pass --labels FILE or use --scheme standard.")
    _check_label_count(y, gram.n, args.store)
    _check_sample(args.sample, gram.n, args.store)
    if args.sample is not None:
        centering = Centering.sampled(gram.n if y is None or args.scheme == "standard" else y, args.sample,
                                      args.scheme, random_state=args.seed)
    elif args.scheme == "standard":
        centering = Centering.standard(gram.n)
    else:
        centering = getattr(Centering, args.scheme.replace("-", "_"))(y)
    view = CenteredGram(gram, centering)
    h = view.h
    print(f"dkernel: origin {centering.scheme} on {centering.n_support} of {centering.n} points: "
          f"h0 = <a, a> = {view.h0:.10g}; h = <a, x_i>: min {h.min():.6g}, mean {np.mean(h):.6g}, "
          f"max {h.max():.6g}")
    if args.out:
        out = view.to_zarr(args.out, overwrite=args.overwrite)
        print(f"dkernel: wrote the centered {out.shape[0]}x{out.shape[1]} {out.dtype.name} Gram to {out.path}")
    return 0


# ----------------------------------------------------------------------- align

_ALIGN_EPILOG = """\
examples:
  # exact kernel-target alignment, one streaming pass over the store
  dkernel align K.zarr --labels y.npy

  # estimated from 10 random 1000 x 1000 submatrices, with a standard error
  dkernel align K.zarr --labels y.npy --sample 1000 --repeats 10

  # uneven classes (Kandola eq. 9) or real outputs (eq. 7)
  dkernel align K.zarr --labels y.npy --target uneven
"""


def _add_align_parser(subparsers):
    p = _add_command(
        subparsers, "align", _run_align,
        help="kernel-target alignment of a Gram store (Kandola et al.)",
        description="Alignment A(K, tt') = t'Kt / (|t|^2 |K|_F) of a Gram store with its labels.",
        epilog=_ALIGN_EPILOG,
    )
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr)")
    p.add_argument("--labels", metavar="FILE", required=True, help="labels or outputs, one per row (.npy, .txt, .csv)")
    p.add_argument("--target", choices=("classification", "uneven", "regression"), default="classification",
                   help="target t: +-1 labels, 1/n+ and -1/n-, or y - mean(y) (default: %(default)s)")
    p.add_argument("--sample", type=int, metavar="N", help="estimate from random N x N submatrices")
    p.add_argument("--repeats", type=int, default=10, metavar="R", help="submatrices with --sample "
                   "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the samples (default: %(default)s)")


def _run_align(args):
    from .alignment import sampled_target_alignment, target_alignment
    from .gram import GramMatrix

    gram = GramMatrix.open(args.store)
    y = load_labels(args.labels)
    _check_label_count(y, gram.n, args.store)
    _check_sample(args.sample, gram.n, args.store)
    if args.sample is None:
        value = target_alignment(gram, y, args.target)
        print(f"alignment ({args.target}): {value:.10g}")
    else:
        est = sampled_target_alignment(gram, y, args.sample, n_repeats=args.repeats, target=args.target,
                                       random_state=args.seed)
        print(f"alignment ({args.target}, sampled): {est.value:.10g} +- {est.stderr:.3g} "
              f"(n'={est.n_sample}, {est.n_repeats} samples)")
    return 0


# --------------------------------------------------------------- fit / predict

_FIT_EPILOG = """\
examples:
  # an RBF SVM with Meila's class-balanced centering; the Gram is kept in K.zarr
  dkernel fit --data X.npy --labels y.npy --kernel rbf --gamma 0.01 --C 10 \\
      --centering class-balanced --store K.zarr --model model.zarr

  # an svmlight file carries its labels
  dkernel fit --data train.svmlight --kernel poly --degree 2 --coef0 1 --model model.zarr

  # on a running scheduler (the store path must be reachable by every worker)
  dkernel fit --data X.npy --labels y.npy --store K.zarr --model model.zarr --scheduler tcp://127.0.0.1:8786

The model is a zarr store with JSON attributes (no pickle). Fitting again with
the same --store reuses the Gram blocks already computed.
"""


def _add_fit_parser(subparsers):
    p = _add_command(
        subparsers, "fit", _run_fit,
        help="train an SVM and save it as a model store",
        description="Train dkernel.SVC on a data file and save the model (zarr + JSON attributes).",
        epilog=_FIT_EPILOG,
    )
    p.add_argument("--data", "--input", dest="data", required=True, metavar="FILE",
                   help="training data: .npy, .npz (array 'X', labels 'y'), .svmlight/.libsvm, .csv "
                        "(--input, as in 'dkernel gram', is the same flag)")
    p.add_argument("--labels", metavar="FILE", help="labels (.npy or text, one per line); optional for svmlight")
    p.add_argument("--model", required=True, metavar="PATH", help="folder of the model store to write")
    p.add_argument("--overwrite", action="store_true", help="replace a model at --model (never another folder)")
    k = p.add_argument_group("kernel (the defaults of 'dkernel gram') and SVM")
    _add_kernel_arguments(k)
    k.add_argument("--C", type=float, default=1.0, help="regularization, > 0 (default 1)")
    k.add_argument("--tol", type=float, default=1e-3, help="stopping tolerance on the KKT gap (default 1e-3)")
    k.add_argument("--centering", choices=["standard", "class-balanced"], help="feature-space centering (Meila)")
    k.add_argument("--centering-sample", type=int, metavar="N", help="represent the origin by N sampled points")
    k.add_argument("--normalize", action="store_true", help="feature-space normalization (Graf & Borer)")
    k.add_argument("--graf-correction", action="store_true", help="Graf & Borer's corrected threshold b'")
    k.add_argument("--multiclass", choices=["ovo", "ovr"], default="ovo", help="one-vs-one (default) or one-vs-rest")
    k.add_argument("--working-set-size", type=int, metavar="Q", help="variables per solver sub-problem")
    x = p.add_argument_group("execution")
    x.add_argument("--store", metavar="PATH",
                   help="keep the training Gram on disk: a Gram store written by 'dkernel gram' (used when it "
                        "holds this data and kernel), or a folder that keeps one store per data and kernel "
                        "(reused by the next fit of the same data)")
    x.add_argument("--scheduler", metavar="ADDR",
                   help="'local' (a LocalCluster of worker processes on 127.0.0.1) or a scheduler address")
    x.add_argument("--seed", type=int, default=0, help="random seed for sampled centering")
    x.add_argument("--quiet", action="store_true", help="no progress display")


def _read_training_data(args):
    from ._io import load_input

    X, y = load_input(args.data)
    if args.labels is not None:
        y = load_labels(args.labels)
    if y is None:
        raise ValueError(f"{args.data} has no labels; pass --labels FILE.")
    if len(y) != X.shape[0]:
        raise ValueError(f"--labels has {len(y)} labels but {args.data} has {X.shape[0]} rows.")
    return X, y


def _announce_cluster(client):
    """Say where a local cluster started for a command listens (its client's cluster; none for an address)."""
    cluster = getattr(client, "cluster", None)
    if cluster is not None:
        print(f"dkernel: started a local cluster at {cluster.scheduler_address}", file=sys.stderr)


def _run_fit(args):
    import os

    from . import _artifacts
    from .gram import check_store_path
    from .svm import SVC

    # The output paths first: nothing is read or trained when the model could not be saved.
    _artifacts.check_target(args.model, "model", args.overwrite)
    if args.store and os.path.exists(os.path.join(args.store, "zarr.json")):
        check_store_path(args.store)  # a store used directly must hold a raw Gram
    X, y = _read_training_data(args)
    clf = SVC(C=args.C, kernel=args.kernel, **_kernel_args(args),
              tol=args.tol, centering=args.centering, centering_sample=args.centering_sample,
              normalize=args.normalize, normalize_bias_correction=args.graf_correction, multiclass=args.multiclass,
              working_set_size=args.working_set_size, store=args.store, random_state=args.seed,
              verbose=not args.quiet)
    with scheduler_client(args.scheduler) as client:
        _announce_cluster(client)
        clf.set_params(client=client)
        clf.fit(X, y)
        clf.set_params(client=None)
        path = clf.save(args.model, overwrite=args.overwrite)
    print(
        f"dkernel: trained on {X.shape[0]} samples x {X.shape[1]} features, {len(clf.classes_)} classes, "
        f"{clf.support_.shape[0]} support vectors, training accuracy {clf.score(X, y):.4f}"
        + (f", Gram store {clf.store_path_}" if args.store else "") + f"; model saved to {path}"
    )
    return 0


def _add_predict_parser(subparsers):
    p = _add_command(
        subparsers, "predict", _run_predict,
        help="predict labels with a saved model",
        description="Predict labels of a data file with a model written by 'dkernel fit'.",
        epilog="example:\n  dkernel predict --model model.zarr --data X_test.npy --labels y_test.npy --out pred.npy",
    )
    p.add_argument("--model", required=True, metavar="PATH", help="model store written by 'dkernel fit'")
    p.add_argument("--data", "--input", dest="data", required=True, metavar="FILE",
                   help="data to classify (same formats as fit; --input is the same flag)")
    p.add_argument("--labels", metavar="FILE", help="true labels: report the accuracy")
    p.add_argument("--out", metavar="FILE", help="write the predicted labels (.npy)")
    p.add_argument("--decision", metavar="FILE", help="write the decision values (.npy)")


def _run_predict(args):
    import numpy as np

    from ._io import load_input
    from .svm import load_model

    model = load_model(args.model)
    X, y = load_input(args.data)
    if args.labels is not None:
        y = load_labels(args.labels)
    if X.shape[1] != model.n_features_in_:
        raise ValueError(f"--data {args.data} has {X.shape[1]} features but the model {args.model} was trained on "
                         f"{model.n_features_in_}.")
    if y is not None and len(y) != X.shape[0]:
        raise ValueError(f"--labels has {len(y)} labels but --data {args.data} has {X.shape[0]} rows.")
    pred = model.predict(X)
    if args.out:
        np.save(args.out, pred, allow_pickle=False)
    if args.decision:
        np.save(args.decision, model.decision_function(X), allow_pickle=False)
    message = f"dkernel: predicted {pred.shape[0]} samples"
    if y is not None:
        message += f", accuracy {np.mean(pred == np.asarray(y, dtype=pred.dtype)):.4f}"
    if args.out:
        message += f"; labels written to {args.out}"
    print(message)
    return 0


# ------------------------------------------------------------------------- run

_RUN_EPILOG = """\
examples:
  dkernel run --list                                # the reproduction pipelines
  dkernel run meila_centering_real --quick          # reduced run on a local cluster, about a minute
  dkernel run meila_shift_synthetic --repeats 10    # the full experiment, into results/
  dkernel run meila_shift_uci --scheduler tcp://127.0.0.1:8786 --out /tmp/results
  dkernel run meila_imbalanced --help               # the options of one pipeline

Each pipeline writes results/NAME/: results.csv, results.json, report.md and figures.
"""


def _add_run_parser(subparsers):
    p = _add_command(
        subparsers, "run", _run_run,
        help="run a reproduction pipeline (an experiment of the papers) and write its report",
        description="Run a reproduction pipeline: its tasks go to Dask (a local cluster by default) and its "
        "results, report and figures to results/NAME/. Options after NAME belong to the pipeline: "
        "[--quick] [--scheduler ADDR|local|threads] [--out DIR] [--repeats R] [--seed S] [--overwrite] "
        "(--overwrite replaces the results of an earlier run).",
        epilog=_RUN_EPILOG,
    )
    p.add_argument("--list", action="store_true", help="list the pipelines and exit")
    p.add_argument("name", nargs="?", metavar="NAME", help="pipeline to run (see --list)")
    p.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _run_run(args):
    from pipelines import PIPELINES, get_pipeline
    from pipelines._runner import main_for

    if args.list or args.name is None:
        for name in PIPELINES:
            print(f"{name:<24} {get_pipeline(name).DESCRIPTION}")
        return 0 if args.list else 2
    return main_for(get_pipeline(args.name), args.options)


#: Per command, the library parameters that a flag sets, so that an error raised by the library names the flag.
_FLAG_NAMES = {
    "center": {"n_sample": "--sample", "random_state": "--seed"},
    "align": {"n_sample": "--sample", "n_repeats": "--repeats", "random_state": "--seed"},
    "fit": {"centering_sample": "--centering-sample", "n_sample": "--centering-sample",
            "working_set_size": "--working-set-size", "normalize_bias_correction": "--graf-correction",
            "random_state": "--seed"},
}


def _in_flags(message, names):
    """``message`` with the library parameter names of ``names`` replaced by flags (``n_sample=5``: ``--sample 5``).

    A library message that names both forms (``overwrite=True (CLI: --overwrite)``) keeps the flag only.
    """
    message = re.sub(r"\b\w+=\w+ \(CLI: (--[\w-]+)\)", r"\1", message)
    for name, flag in names.items():
        message = re.sub(rf"(?<![\w-]){name}\b(=)?", lambda m, flag=flag: flag + (" " if m.group(1) else ""), message)
    return message


def build_parser():
    """The ``dkernel`` argument parser with one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="dkernel",
        description="Kernel methods at scale on Dask: Gram matrices in zarr stores.",
        epilog="Run 'dkernel <command> --help' for a command's options and examples.",
    )
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="<command>")
    subparsers.required = True
    _add_gram_parser(subparsers)
    _add_info_parser(subparsers)
    _add_verify_parser(subparsers)
    _add_center_parser(subparsers)
    _add_align_parser(subparsers)
    _add_fit_parser(subparsers)
    _add_predict_parser(subparsers)
    _add_run_parser(subparsers)
    return parser


def main(argv=None):
    """Run ``dkernel`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        _check_options(args)
        return args.run(args)
    except CorruptStoreError as exc:
        from .gram import corruption_message

        message = corruption_message(exc.path, exc.blocks, exc.detail, cli=True) if exc.path else str(exc)
        print(f"dkernel: error: {' '.join(message.split())}", file=sys.stderr)
        return 2
    except (DKernelError, ValueError, OSError) as exc:
        message = _in_flags(" ".join(str(exc).split()), _FLAG_NAMES.get(args.command, {}))
        print(f"dkernel: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dkernel: interrupted; run the same command again to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
