"""The ``dkernel`` commands on a view of a Gram store: ``center`` (Meila's origin, eq. 19's delta_b), ``align``
(Kandola's kernel-target alignment).
"""

from ._arguments import (
    _add_command,
    _add_storage_option_argument,
    _check_target_labels,
    _is_url,
    _open_gram,
    _storage_options,
)

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
written beside it and replaces it only once complete. An interrupted run saves
nothing: the same command run again computes the centered store from the start.
"""


def _add_center_parser(subparsers):
    _add_command(
        subparsers, "center", _run_center, _center_arguments, interrupted=_center_interrupted,
        help="center a Gram store in feature space (Meila 2002)",
        description="Translate the data in feature space to an origin a = sum_i gamma_i phi(x_i) and "
                    "write (or summarize) the centered Gram K_a = K - 1h' - h1' + h0.",
        epilog=_CENTER_EPILOG,
    )


def _center_interrupted(args):
    if not args.out:
        return "nothing was written; run the same command again to start over."
    if _is_url(args.out):
        return (f"nothing was committed at --out {args.out} (its manifest is written last); run the same command "
                f"again: it resumes the write from the blocks already there.")
    return (f"nothing was saved (the centered store is moved to --out {args.out} only once complete, and its "
            f"partial blocks are not kept); run the same command again: it computes the store from the start.")


def _center_arguments(p):
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr), or its URL")
    _add_storage_option_argument(p)
    p.add_argument("--labels", metavar="FILE", help="labels, one per row of the Gram (.npy, .txt or .csv); "
                   "required by the class schemes")
    p.add_argument("--scheme", choices=("class-balanced", "standard", "multiclass"), default="class-balanced",
                   help="origin: halfway between the class centres (two classes), the centre of gravity, or the "
                        "mean of the class centres (default: %(default)s)")
    p.add_argument("--sample", type=int, metavar="N", help="represent the origin by N sampled points "
                   "(N/c per class for the class schemes)")
    p.add_argument("--seed", type=int, default=None, help="seed of the sample, with --sample (default: 0)")
    p.add_argument("--out", metavar="PATH", help="write the centered Gram to this store (a folder or a URL); "
                   "without it, print h0 "
                   "and a summary of h")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a Gram store at --out (never another folder); --out may then be the input store, "
                        "replaced once the centered store is complete")


def _read_labels(args):
    """The labels of --labels (or None), read before any pass over the store."""
    from ._files import load_labels

    return load_labels(args.labels) if args.labels else None


def _check_label_count(y, n, store, labels=None):
    from ._files import header_hint

    if y is not None and len(y) != n:
        hint = header_hint(labels, len(y), n) if labels else ""
        raise ValueError(f"--labels has {len(y)} labels but the Gram store {store} has {n} rows{hint}; pass one "
                         f"label per row, in the order of the data the Gram was computed from.")


def _check_sample(n_sample, n, store):
    if n_sample is not None and n_sample > n:
        raise ValueError(f"--sample {n_sample} is larger than the {n} rows of the Gram store {store}; use "
                         f"--sample {n} or less.")


def _run_center(args):
    import numpy as np

    from ..centering._origins import Centering
    from ..gram import check_output_store
    from ..views._centered import CenteredGram

    storage_options = _storage_options(args)
    gram = _open_gram(args)
    if args.out:
        check_output_store(args.out, args.overwrite, gram, storage_options)  # before h = K gamma, a pass over it
    y = _read_labels(args)
    if y is None and args.scheme != "standard":
        raise ValueError(f"the {args.scheme} scheme needs labels; pass --labels FILE or use --scheme standard.")
    _check_label_count(y, gram.n, args.store, args.labels)
    _check_sample(args.sample, gram.n, args.store)
    centering = Centering.from_scheme(args.scheme, None if args.scheme == "standard" else y, n=gram.n,
                                      n_sample=args.sample, random_state=args.seed)
    view = CenteredGram(gram, centering)
    h = view.h
    print(f"dkernel: origin {centering.scheme} on {centering.n_support} of {centering.n} points: "
          f"h0 = <a, a> = {view.h0:.10g}; h = <a, x_i>: min {h.min():.6g}, mean {np.mean(h):.6g}, "
          f"max {h.max():.6g}")
    if args.out:
        out = view.to_zarr(args.out, overwrite=args.overwrite, storage_options=storage_options)
        print(f"dkernel: wrote the centered {out.shape[0]}x{out.shape[1]} {out.dtype.name} Gram to {out.path}")
    return 0


# ----------------------------------------------------------------------- align

_ALIGN_EPILOG = """\
examples:
  # exact kernel-target alignment, one streaming pass over the store
  dkernel align K.zarr --labels y.npy

  # estimated from 10 random 1000 x 1000 submatrices (points drawn class by class), with a standard error
  dkernel align K.zarr --labels y.npy --sample 1000 --repeats 10
  # the same from uniform samples
  dkernel align K.zarr --labels y.npy --sample 1000 --uniform

  # uneven classes (Kandola eq. 9) or real outputs (eq. 7)
  dkernel align K.zarr --labels y.npy --target uneven

  # more than two classes: T = YY' with the simplex code Y, or one alignment per class against the rest
  dkernel align K.zarr --labels digits.npy --target multiclass
  dkernel align K.zarr --labels digits.npy --target one-vs-rest
"""


def _add_align_parser(subparsers):
    _add_command(
        subparsers, "align", _run_align, _align_arguments,
        help="kernel-target alignment of a Gram store (Kandola et al.)",
        description="Alignment A(K, tt') = t'Kt / (|t|^2 |K|_F) of a Gram store with its labels.",
        epilog=_ALIGN_EPILOG,
    )


def _align_arguments(p):
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr), or its URL")
    _add_storage_option_argument(p)
    p.add_argument("--labels", metavar="FILE", required=True, help="labels or outputs, one per row (.npy, .txt, .csv)")
    p.add_argument("--target", choices=("classification", "uneven", "regression", "multiclass", "one-vs-rest"),
                   default="classification",
                   help="target t: +-1 labels, 1/n+ and -1/n-, or y - mean(y); for c classes YY' (Y_ik = 1 in "
                        "class k, else -1/(c-1)) or each class against the rest (default: %(default)s)")
    p.add_argument("--sample", type=int, metavar="N", help="estimate from random N x N submatrices")
    p.add_argument("--repeats", type=int, default=None, metavar="R", help="submatrices with --sample "
                   "(default: 10)")
    p.add_argument("--seed", type=int, default=None, help="seed of the samples, with --sample (default: 0)")
    p.add_argument("--uniform", action="store_true",
                   help="with --sample, draw each submatrix's points uniformly; by default they are drawn class by "
                        "class (in proportion to the class sizes) for the class targets, which gives a smaller "
                        "standard error")


def _run_align(args):
    from ..alignment._measures import (
        one_vs_rest_alignment,
        sampled_target_alignment,
        target_alignment,
    )

    gram = _open_gram(args)
    y = _read_labels(args)
    _check_label_count(y, gram.n, args.store, args.labels)
    _check_sample(args.sample, gram.n, args.store)
    _check_target_labels(y, args.target, args.labels, "align")
    if args.target == "one-vs-rest":
        if args.sample is not None:
            raise ValueError("--sample estimates one alignment; with --target one-vs-rest the exact values of "
                             "every class come from one pass. Leave out --sample, or use --target multiclass.")
        classes, values = one_vs_rest_alignment(gram, y)
        for label, value in zip(classes, values):
            print(f"alignment (class {label} against the rest): {value:.10g}")
        return 0
    if args.sample is None:
        value = target_alignment(gram, y, args.target)
        print(f"alignment ({args.target}): {value:.10g}")
    else:
        est = sampled_target_alignment(gram, y, args.sample, n_repeats=args.repeats, target=args.target,
                                       stratify=False if args.uniform else "auto", random_state=args.seed)
        how = "stratified by class" if est.stratified else "uniform"
        print(f"alignment ({args.target}, sampled): {est.value:.10g} +- {est.stderr:.3g} "
              f"(n'={est.n_sample}, {est.n_repeats} samples, {how})")
    return 0


def add_commands(subparsers):
    """center, align."""
    _add_center_parser(subparsers)
    _add_align_parser(subparsers)
