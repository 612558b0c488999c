"""``dkernel adapt``: a Gram store adapted to its labels by alignment (Kandola et al., Algorithms 1 and 2); and the
paper's other learners behind ``dkernel fit --learner parzen|ridge`` (``dkernel predict`` applies them as any model).
"""

from ._arguments import (
    _FLAG_NAMES,
    _add_cluster_arguments,
    _add_command,
    _add_storage_option_argument,
    _announce_cluster,
    _check_target_labels,
    _cluster_choice,
    _is_url,
    _open_gram,
    _overlap,
    _storage_options,
)

_FLAG_NAMES["adapt"] = {"rank": "--rank", "mass": "--mass", "random_state": "--seed", "method": "--method",
                        "target": "--target"}

_ADAPT_EPILOG = """\
examples:
  # transductive (Algorithm 1): eigenvectors of the Gram of every point, weights from the labelled rows
  dkernel adapt K.zarr --labels y_train.npy --labelled train_idx.npy --transductive --out G.zarr

  # top 200 eigenpairs by a randomized range finder over the store's blocks, on a local cluster
  dkernel adapt K.zarr --labels y.npy --rank 200 --method randomized --cluster local --out G.zarr

  # as many eigenpairs as carry 99 % of the trace; keep only the factors (G = U diag(alpha) U')
  dkernel adapt K.zarr --labels y.npy --mass 0.99 --factors G.npz

  # inductive (Algorithm 2): eigenvectors of the labelled rows' Gram, the others projected through the kernel
  dkernel adapt K.zarr --labels y_train.npy --labelled train_idx.npy --inductive --target uneven --out G.zarr

--labels holds one label per row of the store, or one per --labelled row.
--labelled is a .npy file of row indices (or a boolean mask of the rows).
--factors writes an .npz file with 'vectors' (n x k), 'weights' (k), 'labelled'
(the labelled rows) and, for --inductive, 'projection' (|I| x k): features of a
new point x are K(x, X_I) @ projection, and G(x, z) is their inner product. Its
member 'dkernel_output' marks it as written by dkernel adapt: --overwrite
replaces only such a file, never another.

An interrupted run saves nothing: the same command run again starts over.
"""


def _add_adapt_parser(subparsers):
    _add_command(
        subparsers, "adapt", _run_adapt, _adapt_arguments,
        help="adapt a Gram store to its labels by alignment (Kandola et al.)",
        description="Reweight the eigenvectors of a Gram store to maximize its alignment with the labels: "
                    "G = sum_i alpha_i v_i v_i', alpha_i ~ <v_i, t>^2 (eqs. 2-6).",
        epilog=_ADAPT_EPILOG,
    )


def _adapt_arguments(p):
    p.add_argument("store", metavar="PATH", help="folder of the Gram store (e.g. K.zarr), or its URL")
    _add_storage_option_argument(p)
    p.add_argument("--labels", metavar="FILE", required=True, help="labels or outputs (.npy, .txt, .csv)")
    p.add_argument("--labelled", metavar="FILE", help="rows that carry the labels (.npy indices or mask; "
                   "default: every row)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--transductive", dest="algorithm", action="store_const", const="transductive",
                      help="eigenvectors of the whole Gram (Algorithm 1; the default)")
    mode.add_argument("--inductive", dest="algorithm", action="store_const", const="inductive",
                      help="eigenvectors of the labelled rows' Gram, other rows projected (Algorithm 2)")
    p.add_argument("--target", choices=("classification", "uneven", "regression"), default="classification",
                   help="t: +-1 labels, 1/n+ and -1/n- (eq. 9), or y - mean(y) (eq. 7) (default: %(default)s)")
    p.add_argument("--rank", type=int, metavar="K", help="keep the top K eigenpairs")
    p.add_argument("--mass", type=float, metavar="F", help="keep the eigenpairs that carry this fraction of the "
                   "trace (0 < F <= 1)")
    p.add_argument("--method", choices=("auto", "exact", "randomized", "nystroem"), default="auto",
                   help="eigensolver (default: exact up to 5000 rows, else randomized)")
    p.add_argument("--seed", type=int, default=None, help="seed of the randomized eigensolver (default: 0); refused "
                   "with --method exact, which uses no randomness")
    p.add_argument("--out", metavar="PATH", help="write G as a derived Gram store (a folder or a URL)")
    p.add_argument("--factors", metavar="FILE", help="write G's factors to an .npz file (never n x n)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an adapted Gram store at --out, or factors at --factors, written by an earlier "
                        "dkernel adapt (never another folder or file)")
    _add_cluster_arguments(p, "this process")
    p.set_defaults(algorithm="transductive")


def _labelled_rows(args, n, n_labels):
    import numpy as np

    if args.labelled is None:
        if n_labels != n:
            from ._files import header_hint

            raise ValueError(f"--labels has {n_labels} labels but the Gram store {args.store} has {n} rows"
                             f"{header_hint(args.labels, n_labels, n)}; pass one label per row, or --labelled FILE "
                             f"naming the rows they belong to.")
        return np.arange(n)
    from ._files import load_npy

    rows = load_npy(args.labelled, "--labelled")
    if rows.ndim != 1 or rows.dtype.kind not in "biu":
        raise ValueError(f"--labelled {args.labelled} holds an array of shape {rows.shape} and dtype {rows.dtype}; "
                         f"pass a 1-D array of row indices or a boolean mask of the rows.")
    rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.intp)
    if len(rows) == 0 or rows.min() < 0 or rows.max() >= n or len(np.unique(rows)) != len(rows):
        raise ValueError(f"--labelled {args.labelled} must name distinct rows in [0, {n}) of the Gram store.")
    if n_labels not in (n, len(rows)):
        raise ValueError(f"--labels has {n_labels} labels but --labelled names {len(rows)} rows (and the store has "
                         f"{n}); pass one label per labelled row or per row.")
    return rows


#: How ``dkernel adapt --factors`` marks and describes its output file (:mod:`dkernel._runtime.outputs`).
_FACTORS = {"kind": "factors", "what": "the factors of an adapted Gram", "name": "--factors",
            "writer": "dkernel adapt"}


def _check_outputs(args, gram, storage_options=None):
    from .._runtime import outputs
    from ..gram import check_output_store

    if not args.out and not args.factors:
        raise ValueError("pass --out PATH (a Gram store) or --factors FILE (the low-rank factors), or both.")
    _check_not_the_input(args, gram)
    if args.out:
        # Whether the store at --out may be replaced at all first: the advice of check_output_store (pass
        # --overwrite) holds only for an adapted store.
        _check_replaces_an_adapted_store(args.out, storage_options)
        check_output_store(args.out, args.overwrite, gram, storage_options)
    if args.factors:
        outputs.check_output(args.factors, suffix=".npz", overwrite=args.overwrite, **_FACTORS)
    if args.rank is not None and not 1 <= args.rank <= gram.n:
        raise ValueError(f"--rank {args.rank} must lie in [1, {gram.n}], the rows of the Gram store {args.store}.")
    if args.mass is not None and not 0 < args.mass <= 1:
        raise ValueError(f"--mass must be a fraction of the spectrum in (0, 1]; got {args.mass}.")


def _store_kind(operators):
    """What a Gram store of the operator chain ``operators`` is, in words, against an adapted one."""
    if not operators:
        return "a raw Gram store, not an adapted one"
    if operators[-1].get("name") != "alignment-adapted":
        return f"a Gram store derived by {operators[-1].get('name')!r}, not an adapted one"
    return "an adapted Gram store"


def _check_not_the_input(args, gram):
    """--out and --factors neither at the input store (PATH) nor inside it, nor around it: adapt never replaces,
    nor writes into, the store it reads."""
    for flag, value in (("--out", args.out), ("--factors", args.factors)):
        found = None if value is None else _overlap(value, args.store)
        if found == "same" and flag == "--out":
            raise ValueError(f"--out {value} holds {_store_kind(gram.operators)}: it is the store dkernel adapt "
                             f"reads (the PATH argument), and it is not replaced, even with --overwrite; choose "
                             f"another --out for G.")
        if found == "same":
            raise ValueError(f"{flag} {value} is the Gram store dkernel adapt reads (the PATH argument); choose "
                             f"another {flag}.")
        if found == "inside":
            raise ValueError(f"{flag} {value} lies inside the Gram store {args.store} that dkernel adapt reads; "
                             f"choose a path outside it.")
        if found == "contains":
            raise ValueError(f"{flag} {value} holds the Gram store {args.store} that dkernel adapt reads; choose "
                             f"another {flag}.")


def _check_replaces_an_adapted_store(path, storage_options=None):
    """``--overwrite`` replaces only a store written by ``dkernel adapt``, never another Gram (the input's included).

    A path that holds no Gram store is left to :func:`~dkernel.gram.check_output_store`, which tells it.
    """
    import os

    from ..exceptions import CorruptStoreError, StoreMismatchError
    from ..gram import GramMatrix
    from ..gram._remote import has_manifest

    if _is_url(path):
        if not has_manifest(path, storage_options):
            return
    elif not os.path.isdir(path) or not os.listdir(path):
        return
    try:
        operators = GramMatrix.open(path, storage_options=storage_options).operators
    except (StoreMismatchError, CorruptStoreError):  # not a Gram store (or a damaged one): told by the next check
        return
    if not operators or operators[-1].get("name") != "alignment-adapted":
        raise ValueError(f"--out {path} holds {_store_kind(operators)}; it is not replaced, even with --overwrite, "
                         f"which replaces only a store written by dkernel adapt. Choose another path for G.")


def _read_labels(args):
    """The labels of ``--labels``, read before any work (errors name the flag)."""
    from ._files import load_labels

    return load_labels(args.labels)


def _inductive(gram, y, rows, args, client):
    import numpy as np

    from ..alignment import AdaptedGram, KernelAligner
    from ..gram._sources import SubsetGram, source_columns

    aligner = KernelAligner(kernel="precomputed", target=args.target, rank=args.rank, mass=args.mass,
                            method=args.method, random_state=args.seed, client=client)
    if args.method in ("randomized", "nystroem"):
        aligner.fit(SubsetGram(gram, rows), y)  # the labelled rows' Gram, read blockwise
    else:
        from ..gram._sources import principal_submatrix

        aligner.fit(principal_submatrix(gram, rows), y)
    # v_i(x) = Σ_j V_ji K(x, x_j) / λ_i for every row x of the store (v_i(x_j) = V_ji on the labelled rows).
    projections = np.asarray(source_columns(gram, rows).compute()) @ (aligner.eigenvectors_ / aligner.eigenvalues_)
    G = AdaptedGram(projections, aligner.weights_, base=gram, eigenvalues=aligner.eigenvalues_,
                    target=args.target, method="inductive")
    return G, aligner


def _run_adapt(args):
    from .._runtime import outputs
    from ..alignment import transductive_adaptation
    from ..alignment._reweighting import adaptation_target

    if args.rank is not None and args.mass is not None:
        raise ValueError(f"--rank and --mass are alternatives; give one: --rank {args.rank} keeps the top "
                         f"{args.rank} eigenpairs, --mass {args.mass:g} those that carry that fraction of the trace.")
    storage_options = _storage_options(args)
    gram = _open_gram(args)
    _check_outputs(args, gram, storage_options)
    y = _read_labels(args)
    rows = _labelled_rows(args, gram.n, len(y))
    y = y[rows] if len(y) == gram.n and len(rows) != gram.n else y
    _check_target_labels(y, args.target, args.labels, "adapt")  # in the words of dkernel align
    adaptation_target(y, args.target)  # the labels fit --target, before the cluster and the eigensolver
    spec, flag = _cluster_choice(args)
    from .._runtime.client import scheduler_client

    with scheduler_client(spec, n_workers=args.workers, option=flag) as client:
        _announce_cluster(client)
        if args.algorithm == "inductive":
            G, aligner = _inductive(gram, y, rows, args, client)
            extra = {"projection": aligner.adapted_kernel_.projection, "labelled": rows}
        else:
            G = transductive_adaptation(gram, y, rows, target=args.target, rank=args.rank, mass=args.mass,
                                        method=args.method, random_state=args.seed, client=client)
            extra = {"labelled": rows}
    print(f"dkernel: {args.algorithm} adaptation of {gram.n} rows, {G.rank} eigenvectors"
          + (f" ({G.mass:.4f} of the trace)" if G.mass is not None else "")
          + f"; training alignment of G ({args.target}): {G.alignment(y, rows, args.target):.6g}")
    if args.factors:
        outputs.save_npz(args.factors, {"vectors": G.vectors, "weights": G.weights, **extra},
                         overwrite=args.overwrite, **_FACTORS)
        print(f"dkernel: wrote the factors of G ({G.n} x {G.rank}) to {args.factors}")
    if args.out:
        out = G.to_zarr(args.out, overwrite=args.overwrite, storage_options=storage_options)
        print(f"dkernel: wrote the adapted {out.shape[0]}x{out.shape[1]} Gram to {out.path}")
    return 0


# ------------------------------------------------------------- other learners


def add_alpha_argument(group):
    """``--alpha`` of ``dkernel fit --learner ridge``."""
    group.add_argument("--alpha", type=float, default=None, help="ridge regularization lambda, > 0 (default 1)")


def run_learner_fit(args, X, y):
    """Train and save the Parzen window or ridge model of ``dkernel fit --learner``."""
    from ..kernels._parameters import estimator_kernel
    from ..svm._learner_models import fit_learner, save_learner
    from ._arguments import _kernel_args, _storage_options

    alpha = 1.0 if args.alpha is None else args.alpha
    if not 0 < alpha < float("inf"):
        raise ValueError(f"--alpha must be a finite number > 0; got {alpha:g}.")
    kernel = estimator_kernel(args.kernel, X, **_kernel_args(args))  # the kernel of 'dkernel gram' and the SVC
    model = fit_learner(args.learner, X, y, kernel, alpha=alpha)
    path = save_learner(model, args.model, overwrite=args.overwrite, storage_options=_storage_options(args))
    print(f"dkernel: trained a {args.learner} model on {X.shape[0]} samples x {X.shape[1]} features; saved to {path}")
    return 0


def add_commands(subparsers):
    """adapt."""
    _add_adapt_parser(subparsers)
