"""The ``dkernel`` commands of a model: ``fit`` trains :class:`dkernel.SVC` and saves it, ``predict`` applies it."""

from .._runtime.client import scheduler_client
from . import _adapt
from ._arguments import (_add_cluster_arguments, _add_command, _add_kernel_arguments, _announce_cluster,
                         _cluster_choice, _kernel_args, _read_data)

_FIT_EPILOG = """\
examples:
  # an RBF SVM with Meila's class-balanced centering; the Gram is kept in K.zarr
  dkernel fit --data X.npy --labels y.npy --kernel rbf --gamma 0.01 --C 10 \\
      --centering class-balanced --store K.zarr --model model.zarr

  # an svmlight file carries its labels
  dkernel fit --data train.svmlight --kernel poly --degree 2 --coef0 1 --model model.zarr

  # on a running scheduler (the store path must be reachable by every worker)
  dkernel fit --data X.npy --labels y.npy --store K.zarr --model model.zarr --cluster tcp://127.0.0.1:8786

  # keep the solver's state in fit.ckpt; after a crash or a kill, the same command with --resume goes on
  dkernel fit --data X.npy --labels y.npy --model model.zarr --checkpoint fit.ckpt
  dkernel fit --data X.npy --labels y.npy --model model.zarr --checkpoint fit.ckpt --resume

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
    _adapt.add_learner_arguments(k)
    x = p.add_argument_group("execution")
    x.add_argument("--store", metavar="PATH",
                   help="keep the training Gram on disk: a Gram store written by 'dkernel gram' (used when it "
                        "holds this data and kernel), or a folder that keeps one store per data and kernel "
                        "(reused by the next fit of the same data)")
    _add_cluster_arguments(x, "this process")
    x.add_argument("--checkpoint", metavar="DIR",
                   help="write the solver's state to DIR as it goes (and keep it); a new folder unless --resume")
    x.add_argument("--resume", action="store_true",
                   help="continue the fit whose checkpoint is in --checkpoint DIR (same data and options)")
    x.add_argument("--checkpoint-seconds", type=float, default=30.0, metavar="S",
                   help="write the checkpoint every S seconds (default 30)")
    x.add_argument("--checkpoint-iterations", type=int, metavar="N", help="also write it every N solver iterations")
    x.add_argument("--seed", type=int, default=0, help="random seed for sampled centering")
    x.add_argument("--quiet", action="store_true", help="no progress display")


def _read_training_data(args):
    """``(X, y)`` of --data and --labels; refused without labels or with a label count other than the rows."""
    X, y = _read_data(args.data, args.labels)
    if y is None:
        raise ValueError(f"{args.data} has no labels; pass --labels FILE.")
    if len(y) != X.shape[0]:
        raise ValueError(f"--labels has {len(y)} labels but {args.data} has {X.shape[0]} rows.")
    return X, y


def _checkpoint_of(args):
    """The solver checkpoint of --checkpoint, --resume and the intervals; refused before any work when misused."""
    from .._runtime import artifacts
    from ..solver import Checkpoint

    if args.checkpoint is None:
        if args.resume:
            raise ValueError("--resume needs --checkpoint DIR, the folder of the checkpoint to resume from.")
        return None
    found = artifacts.check_target(args.checkpoint, "checkpoint", reuse=True)
    if found == "same" and not args.resume:
        raise ValueError(f"--checkpoint {args.checkpoint} already holds a checkpoint; pass --resume to continue the "
                         f"fit it belongs to, or choose another --checkpoint folder (a checkpoint is never replaced).")
    if found != "same" and args.resume:
        raise ValueError(f"--resume: there is no checkpoint in --checkpoint {args.checkpoint} to resume from.")
    if not args.checkpoint_seconds > 0 or (args.checkpoint_iterations is not None and args.checkpoint_iterations < 1):
        raise ValueError("--checkpoint-seconds must be > 0 and --checkpoint-iterations an integer >= 1.")
    return Checkpoint(args.checkpoint, every_seconds=args.checkpoint_seconds, every_iter=args.checkpoint_iterations)


def _run_fit(args):
    import os

    from .._runtime import artifacts
    from ..gram import check_store_path
    from ..svm import SVC

    # The output paths first: nothing is read or trained when the model could not be saved.
    artifacts.check_target(args.model, "model" if args.learner == "svc" else "learner", args.overwrite)
    if args.store and os.path.exists(os.path.join(args.store, "zarr.json")):
        check_store_path(args.store)  # a store used directly must hold a raw Gram
    checkpoint = _checkpoint_of(args)
    X, y = _read_training_data(args)
    if args.learner != "svc":
        return _adapt.run_learner_fit(args, X, y)
    clf = SVC(C=args.C, kernel=args.kernel, **_kernel_args(args),
              tol=args.tol, centering=args.centering, centering_sample=args.centering_sample,
              normalize=args.normalize, normalize_bias_correction=args.graf_correction, multiclass=args.multiclass,
              working_set_size=args.working_set_size, store=args.store, random_state=args.seed,
              verbose=not args.quiet, checkpoint=checkpoint)
    spec, flag = _cluster_choice(args)
    with scheduler_client(spec, option=flag) as client:
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

    from ..svm import load_model

    if _adapt.is_learner_model(args.model):
        return _adapt.run_learner_predict(args)
    model = load_model(args.model)
    X, y = _read_data(args.data, args.labels)
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


def add_commands(subparsers):
    """fit, predict."""
    _add_fit_parser(subparsers)
    _add_predict_parser(subparsers)
