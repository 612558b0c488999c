"""The ``dkernel`` commands of a model: ``fit`` trains an SVM of :mod:`dkernel.svm` (``SVC``, ``NuSVC``, ``SVR``,
``NuSVR``, ``OneClassSVM``) or a Parzen window or ridge learner and saves it, ``predict`` applies any saved model.
"""

from . import _adapt
from ._arguments import (_add_cluster_arguments, _add_command, _add_kernel_arguments, _add_storage_option_argument,
                         _announce_cluster, _cluster_choice, _is_url, _kernel_args, _read_data, _storage_options)

_FIT_EPILOG = """\
examples:
  # an RBF SVM with Meila's class-balanced centering; the Gram is kept in K.zarr
  dkernel fit --data X.npy --labels y.npy --kernel rbf --gamma 0.01 --C 10 \\
      --centering class-balanced --store K.zarr --model model.zarr

  # an svmlight file carries its labels
  dkernel fit --data train.svmlight --kernel poly --degree 2 --coef0 1 --model model.zarr

  # on a running scheduler (the store path must be reachable by every worker)
  dkernel fit --data X.npy --labels y.npy --store K.zarr --model model.zarr --cluster tcp://127.0.0.1:8786

  # the Gram and the model in an object store (no shared volume): the workers
  # read and write the bucket; credentials from the environment (AWS_*)
  dkernel fit --data X.npy --labels y.npy --store s3://bucket/grams --model s3://bucket/model \
      --storage-option endpoint_url=http://minio:9000 --cluster tcp://127.0.0.1:8786

  # a regression (epsilon-SVR) on numeric --labels, and a one-class SVM (no labels)
  dkernel fit --data X.npy --labels values.npy --learner svr --C 10 --epsilon 0.05 --model svr.zarr
  dkernel fit --data X.npy --learner one-class --nu 0.05 --model novelty.zarr

  # keep the solver's state in fit.ckpt: after Ctrl-C, a crash or a kill, the
  # same command resumes from it
  dkernel fit --data X.npy --labels y.npy --model model.zarr --checkpoint fit.ckpt

The model is a zarr store with JSON attributes (no pickle). Fitting again with
the same --store reuses the Gram blocks already computed. Without --checkpoint
an interrupted fit saves no solver state: the same command starts it over.
"""

#: The SVMs of ``dkernel fit --learner`` and their estimators in :mod:`dkernel.svm`; "parzen" and "ridge" are
#: Kandola's other two learners (:mod:`._adapt`).
SVM_LEARNERS = {"svc": "SVC", "nusvc": "NuSVC", "svr": "SVR", "nusvr": "NuSVR", "one-class": "OneClassSVM",
                "conformal": "ConformalSVC"}
LEARNERS = (*SVM_LEARNERS, "parzen", "ridge")
_CLASSIFIERS = ("svc", "nusvc", "conformal")
#: The SVMs that take Meila's centering and a solver checkpoint (ConformalSVC trains twice, on K and on D K D).
_CENTERED = ("svc", "nusvc", "svr", "nusvr", "one-class")

#: The options that not every learner takes (their attribute: None unless given) -> the learners that take them.
_LEARNER_OPTIONS = {
    "C": ("svc", "svr", "nusvr", "conformal"),
    "nu": ("nusvc", "nusvr", "one-class"),
    "epsilon": ("svr",),
    "alpha": ("ridge",),
    **{name: ("conformal",) for name in ("kappa", "bias", "conformal_factor")},
    **{name: ("svc",) for name in ("normalize", "graf_correction", "multiclass")},
    **{name: _CENTERED for name in ("centering", "centering_sample", "checkpoint", "resume")},
    **{name: tuple(SVM_LEARNERS) for name in ("tol", "working_set_size", "store", "cluster", "scheduler")},
}

#: What each learner has in place of the options it does not take (the end of the message refusing one).
_LEARNER_INSTEAD = {
    "svc": "is regularized by --C",
    "nusvc": "is regularized by --nu",
    "svr": "is regularized by --C, with a tube of width --epsilon",
    "nusvr": "is regularized by --C, with --nu",
    "one-class": "is regularized by --nu and learns from --data alone",
    "parzen": "has no parameter but its kernel (its coefficients are the class weights 1/n+ and 1/n-, Kandola eq. 9)",
    "ridge": "is regularized by --alpha",
    "conformal": "is regularized by --C and trained twice (on K, then on D K D: Williams et al.), without centering "
                 "or a checkpoint",
}

#: The default of each learner's own number (the estimators' defaults, as scikit-learn's).
_LEARNER_DEFAULTS = {"C": 1.0, "nu": 0.5, "epsilon": 0.1, "tol": 1e-3}


def _add_fit_parser(subparsers):
    _add_command(
        subparsers, "fit", _run_fit, _fit_arguments, interrupted=_fit_interrupted,
        help="train an SVM and save it as a model store",
        description="Train an SVM (dkernel.SVC by default; NuSVC, SVR, NuSVR, OneClassSVM with --learner) on a data "
                    "file and save the model (zarr + JSON attributes).",
        epilog=_FIT_EPILOG,
    )


def _fit_arguments(p):
    p.add_argument("--data", "--input", dest="data", required=True, metavar="FILE",
                   help="training data: .npy, .npz (array 'X', labels 'y'), .svmlight/.libsvm, .csv "
                        "(--input, as in 'dkernel gram', is the same flag)")
    p.add_argument("--labels", metavar="FILE", help="labels (.npy or text, one per line); optional for svmlight. "
                   "In .csv and text files a first line that is not numbers above lines of numbers is a header, "
                   "skipped, as in --data; in a file of text labels it is read as a label")
    p.add_argument("--model", required=True, metavar="PATH",
                   help="folder of the model store to write, or a URL (s3://bucket/model)")
    p.add_argument("--overwrite", action="store_true", help="replace a model at --model (never another folder)")
    k = p.add_argument_group("kernel (the defaults of 'dkernel gram') and SVM")
    _add_kernel_arguments(k)
    k.add_argument("--learner", choices=LEARNERS, default="svc",
                   help="svc (default: scikit-learn's SVC), nusvc, svr (epsilon-SVR), nusvr, one-class "
                        "(OneClassSVM: novelty detection, no labels) or conformal (ConformalSVC: two classes, the "
                        "kernel scaled by a conformal factor, Williams et al.); parzen (Parzen window with the class weights "
                        "1/n+ and 1/n-, Kandola eq. 9) or ridge (kernel ridge regression, scikit-learn's KernelRidge)")
    k.add_argument("--C", type=float, default=None, help="regularization of svc, svr and nusvr, > 0 (default 1)")
    k.add_argument("--nu", type=float, default=None,
                   help="nu of nusvc, nusvr and one-class, in (0, 1]: a bound on the fraction of margin errors and "
                        "of support vectors (default 0.5)")
    k.add_argument("--epsilon", type=float, default=None,
                   help="width of svr's insensitive tube, >= 0 (default 0.1)")
    k.add_argument("--kappa", type=float, default=None,
                   help="conformal: kappa of the factor D(x) = exp(-kappa f(x)^2), > 0 (default 1/|f|max over the "
                        "training points, Williams et al.)")
    k.add_argument("--bias", choices=("free", "scaled", "none"), default=None,
                   help="conformal: the second pass's bias (default free: eq. 1 with the scaled kernel)")
    k.add_argument("--conformal-factor", choices=("williams", "amari-wu"), default=None,
                   help="conformal: D(x) = exp(-kappa f(x)^2) (williams, default) or a sum of Gaussians at the "
                        "support vectors (amari-wu)")
    k.add_argument("--tol", type=float, default=None, help="stopping tolerance on the KKT gap (default 1e-3)")
    k.add_argument("--centering", choices=["standard", "class-balanced", "multiclass"],
                   help="feature-space centering (Meila): per binary problem, or one origin of all classes")
    k.add_argument("--centering-sample", type=int, metavar="N", help="represent the origin by N sampled points")
    k.add_argument("--normalize", action="store_true", default=None,
                   help="feature-space normalization (Graf & Borer)")
    k.add_argument("--graf-correction", action="store_true", default=None,
                   help="Graf & Borer's corrected threshold b' (needs --normalize)")
    k.add_argument("--multiclass", choices=["ovo", "ovr"], default=None,
                   help="one-vs-one (default) or one-vs-rest")
    k.add_argument("--working-set-size", type=int, metavar="Q", help="variables per solver sub-problem")
    _adapt.add_alpha_argument(k)
    x = p.add_argument_group("execution")
    x.add_argument("--store", metavar="PATH",
                   help="keep the training Gram on disk: a Gram store written by 'dkernel gram' (used when it "
                        "holds this data and kernel), or a folder that keeps one store per data and kernel "
                        "(reused by the next fit of the same data); either may be a URL (s3://bucket/grams)")
    _add_storage_option_argument(x)
    _add_cluster_arguments(x, "this process")
    x.add_argument("--checkpoint", metavar="DIR",
                   help="write the solver's state to DIR (a folder or a URL) as it goes (and keep it); when DIR "
                        "holds the state of the same fit, the fit resumes from it")
    x.add_argument("--resume", action="store_true", default=None,
                   help="require that --checkpoint DIR holds a checkpoint to resume from (without it, a matching "
                        "checkpoint is resumed all the same)")
    x.add_argument("--checkpoint-seconds", type=float, default=None, metavar="S",
                   help="with --checkpoint: write the checkpoint every S seconds (default 30)")
    x.add_argument("--checkpoint-iterations", type=int, metavar="N",
                   help="with --checkpoint: also write it every N solver iterations")
    x.add_argument("--seed", type=int, default=None,
                   help="seed of the points --centering-sample draws (default: 0); refused without it")
    x.add_argument("--quiet", action="store_true", help="no progress display")


def _fit_interrupted(args):
    """What an interrupted fit saved: the solver's checkpoints, the Gram blocks of --store, or nothing."""
    import os

    kept = f"; the Gram blocks computed so far are kept with --store {args.store} and reused" if args.store else ""
    if args.checkpoint is None:
        return (f"the solver's state was not saved{kept}; running the same command again starts the fit over. "
                f"To make a long fit resumable, add --checkpoint DIR: after an interruption the same command then "
                f"resumes from it.")
    if _is_url(args.checkpoint):
        from ..solver._checkpoint_remote import checkpoint_at

        try:
            saved = checkpoint_at(args.checkpoint, _storage_options(args))[1]
        except Exception:  # noqa: BLE001 (the message of an interruption never fails on a read of the checkpoint)
            saved = False
    else:
        saved = os.path.isdir(args.checkpoint) and _holds_solver_state(args.checkpoint)
    if saved:
        return (f"the solver's state at its last checkpoint is kept in --checkpoint {args.checkpoint}{kept}; run the "
                f"same command again to resume from it.")
    every = f"{args.checkpoint_seconds or 30:g} s" + (f" or {args.checkpoint_iterations} iterations"
                                                 if args.checkpoint_iterations else "")
    return (f"no solver state was written to --checkpoint {args.checkpoint} yet (the first after {every} of "
            f"solving){kept}; running the same command again starts the fit over.")


def _either(names):
    """``a``, ``a or b``, ``a, b or c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


#: The options of the solver's execution, which the Parzen window and ridge learners (no solver) do not take.
_SOLVER_OPTIONS = ("tol", "working_set_size", "store", "checkpoint", "resume", "cluster", "scheduler")


def _why_not(learner, given):
    """Why ``learner`` does not take the options ``given``: what it has instead of the model's own, and that the
    Parzen window and ridge learners are computed in this process without a solver."""
    reasons = []
    if any(name not in _SOLVER_OPTIONS for name in given) or learner not in ("parzen", "ridge"):
        reasons.append(_LEARNER_INSTEAD[learner])
    if learner in ("parzen", "ridge") and any(name in _SOLVER_OPTIONS for name in given):
        reasons.append("is computed in this process in closed form, without a solver, a Gram store or a cluster")
    return "; it ".join(reasons)


def _check_learner_options(args):
    """Refuse the options the chosen --learner does not take, naming each flag and the learners that take it."""
    given = [name for name, takers in _LEARNER_OPTIONS.items()
             if args.learner not in takers and getattr(args, name) is not None]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        each = "; ".join(f"--{name.replace('_', '-')}: an option of --learner {_either(_LEARNER_OPTIONS[name])} only"
                         for name in given)
        raise ValueError(f"{each}. The {args.learner} learner {_why_not(args.learner, given)}. Remove {flags}, or "
                         f"choose a learner that takes {'it' if len(given) == 1 else 'them'}.")
    if args.centering in ("class-balanced", "multiclass") and args.learner not in _CLASSIFIERS:
        raise ValueError(f"--centering {args.centering} weighs the classes of the labels; the {args.learner} learner "
                         f"has no classes: use --centering standard (the mean of the data in feature space).")
    if args.nu is not None and not 0 < args.nu <= 1:
        raise ValueError(f"--nu must be a number in (0, 1]; got {args.nu:g}.")
    if args.epsilon is not None and not 0 <= args.epsilon < float("inf"):
        raise ValueError(f"--epsilon must be a finite number >= 0; got {args.epsilon:g}.")
    if args.kappa is not None and not 0 < args.kappa < float("inf"):
        raise ValueError(f"--kappa must be a finite number > 0; got {args.kappa:g}.")


def _check_fit_options(args):
    """Options that do not go together, refused before any work with a message in flags."""
    _check_learner_options(args)
    if args.graf_correction and not args.normalize:
        raise ValueError("--graf-correction needs --normalize: Graf & Borer's b' is defined for a normalized kernel.")
    if args.centering_sample is not None and args.centering is None:
        raise ValueError("--centering-sample needs --centering standard, class-balanced or multiclass: it samples "
                         "the points that represent the centering's origin.")
    if not args.checkpoint_seconds > 0 or (args.checkpoint_iterations is not None and args.checkpoint_iterations < 1):
        raise ValueError("--checkpoint-seconds must be > 0 and --checkpoint-iterations an integer >= 1.")


def _check_finite_data(args, X, what):
    """Refuse --data with NaN or infinite values, naming the flag (the library would name its parameter X)."""
    from .._runtime.validation import check_finite

    check_finite(X, name=f"--data {args.data}", what=what)


def _read_training_data(args):
    """``(X, y)`` of --data and --labels (``y`` None for the one-class learner); refused without labels, with a
    label count other than the rows, with NaN or infinite values in either, or with labels the learner cannot learn
    (text for a regression, continuous values for a classifier)."""
    if args.learner == "one-class" and args.labels is not None:
        raise ValueError(f"--labels {args.labels}: the one-class learner learns from --data alone (novelty "
                         f"detection); remove --labels.")
    X, y = _read_data(args.data, args.labels)
    if args.learner == "one-class":
        _check_finite_data(args, X, "fitting")
        _refuse_reachable_origin(args, X.shape[0])
        return X, None  # (the labels an svmlight file carries are not read)
    if y is None:
        raise ValueError(f"--data {args.data} has no labels; pass --labels FILE.")
    if len(y) != X.shape[0]:
        from ._files import header_hint

        raise ValueError(f"--labels {args.labels} has {len(y)} labels but --data {args.data} has {X.shape[0]} rows"
                         f"{header_hint(args.labels, len(y), X.shape[0]) if args.labels else ''}; pass one label "
                         f"per row.")
    _check_finite_data(args, X, "fitting")
    source = f"--labels {args.labels}" if args.labels else f"the labels of --data {args.data}"
    if args.labels is None:  # the labels of the data file (--labels are checked as they are read)
        from .._runtime.validation import check_labels

        check_labels(y, name=source)
    _check_label_kind(args, y, source)
    return X, y


def _refuse_reachable_origin(args, n):
    """Refuse --centering standard for the one-class learner where its origin, the mean of N points, is a point
    the one-class SVM can take (α = ν n / N <= 1 on those N): the model would be w = 0, every decision value 0
    (:meth:`dkernel.svm.OneClassSVM._check_origin` warns of it in the library)."""
    nu = 0.5 if args.nu is None else args.nu
    points = n if args.centering_sample is None else min(args.centering_sample, n)
    if args.centering == "standard" and points >= nu * n:
        raise ValueError(f"--centering standard with --learner one-class: the origin is the mean of {points} training "
                         f"points, which the one-class SVM reaches (α = --nu × {n} / {points} <= 1), so the model "
                         f"would be w = 0 and every decision value 0. Give --centering-sample N with N < --nu × "
                         f"{n} = {nu * n:g}, or leave out --centering.")


def _check_label_kind(args, y, source):
    """Refuse text labels for a regression, continuous ones for a classifier and other than two classes for the
    conformal learner, naming the learners that fit."""
    import numpy as np
    from sklearn.utils.multiclass import type_of_target

    if args.learner in ("svr", "nusvr", "ridge"):
        if y.dtype.kind not in "biuf":
            raise ValueError(f"{source} holds text; --learner {args.learner} is a regression and learns numbers. "
                             f"For classes use --learner svc, nusvc or parzen.")
    elif type_of_target(y) == "continuous":
        raise ValueError(f"{source} holds continuous values; --learner {args.learner} is a classifier and learns "
                         f"classes. For a regression use --learner svr, nusvr or ridge.")
    elif args.learner == "conformal" and len(np.unique(y)) != 2:
        raise ValueError(f"{source} holds {len(np.unique(y))} classes; --learner conformal is a binary classifier "
                         f"(its factor D is built from one decision function). For more classes use --learner svc "
                         f"or nusvc.")


def _svm_estimator(args, storage_options, checkpoint):
    """The estimator of :mod:`dkernel.svm` that ``dkernel fit --learner`` trains, with the options given."""
    from .. import svm

    params = dict(kernel=args.kernel, **_kernel_args(args), working_set_size=args.working_set_size, store=args.store,
                  storage_options=storage_options, verbose=not args.quiet)
    if args.learner in _CENTERED:
        params.update(centering=args.centering, centering_sample=args.centering_sample, random_state=args.seed,
                      checkpoint=checkpoint)
    for name, value in _LEARNER_DEFAULTS.items():
        if args.learner in _LEARNER_OPTIONS[name]:
            params[name] = value if getattr(args, name) is None else getattr(args, name)
    if args.learner == "svc":
        params.update(normalize=bool(args.normalize), normalize_bias_correction=bool(args.graf_correction),
                      multiclass=args.multiclass or "ovo")
    if args.learner == "conformal":
        params.update(kappa=args.kappa, bias=args.bias or "free", conformal=args.conformal_factor or "williams")
    return getattr(svm, SVM_LEARNERS[args.learner])(**params)


def _training_summary(args, model, X, y):
    """What the trained model does on its training data: classes and accuracy, R^2, or the fraction inside."""
    import numpy as np

    if args.learner in _CLASSIFIERS:
        return f"{len(model.classes_)} classes, {model.support_.shape[0]} support vectors, training accuracy " \
               f"{model.score(X, y):.4f}"
    if args.learner == "one-class":
        inside = float(np.mean(model.predict(X) == 1))
        return f"{model.support_.shape[0]} support vectors, {inside:.4f} of the training samples inside"
    return f"{model.support_.shape[0]} support vectors, training R^2 {model.score(X, y):.4f}"


def _checkpoint_of(args):
    """The solver checkpoint of --checkpoint and the intervals (None without one), checked before any work.

    A folder holding a checkpoint is resumed (the solver refuses one of another problem, naming what differs);
    ``--resume`` only requires that there is one.
    """
    from .._runtime import artifacts

    if args.checkpoint is None:
        return None
    storage_options = _storage_options(args)
    if _is_url(args.checkpoint):
        from ..solver._checkpoint_remote import checkpoint_at

        found = "same" if checkpoint_at(args.checkpoint, storage_options)[0] else None
    else:
        found = artifacts.check_target(args.checkpoint, "checkpoint", reuse=True)
    if found != "same" and args.resume:
        raise ValueError(f"--resume: there is no checkpoint in --checkpoint {args.checkpoint} to resume from; "
                         f"run without --resume to start the fit and write one there.")
    if found == "same" and args.resume and not _is_url(args.checkpoint) and not _holds_solver_state(args.checkpoint):
        raise ValueError(f"--resume: the checkpoint in --checkpoint {args.checkpoint} holds no solver state to resume "
                         f"from (no state written in it: the fit stopped before its first write, or "
                         f"they were removed); run without --resume to start the fit again there.")
    from ..solver import Checkpoint

    return Checkpoint(args.checkpoint, every_seconds=args.checkpoint_seconds, every_iter=args.checkpoint_iterations,
                      storage_options=storage_options)


def _holds_solver_state(path):
    """Whether the checkpoint folder ``path`` holds a written solver state: an SVC's, of at least one of its binary
    problems (``problem-K``), or a single problem's (NuSVC's pairs are problems too; SVR, NuSVR and OneClassSVM write
    their one state at the root)."""
    import os

    return os.path.isfile(os.path.join(path, "alpha", "zarr.json")) or any(
        name.startswith("problem-") and os.path.isfile(os.path.join(path, name, "zarr.json"))
        for name in os.listdir(path))


def _run_fit(args):
    import os

    from .._runtime import artifacts
    from .._runtime.client import scheduler_client
    from ..exceptions import StoreMismatchError
    from ..gram import check_store_path
    from ..gram._store import kept_store_error

    _check_fit_options(args)
    # The output paths first: nothing is read or trained when the model could not be saved.
    storage_options = _storage_options(args)
    if _is_url(args.model):
        from ..svm._persist_remote import check_model_url

        check_model_url(args.model, _model_kind(args.learner), args.overwrite, storage_options)
    else:
        artifacts.check_target(args.model, _model_kind(args.learner), args.overwrite)
    if args.store and not _is_url(args.store) and os.path.exists(os.path.join(args.store, "zarr.json")):
        try:
            check_store_path(args.store)  # a store used directly must hold a raw Gram
        except StoreMismatchError as exc:  # told as fit's advice: fit --overwrite replaces the model only
            raise kept_store_error(exc, cli=True) from None
    checkpoint = _checkpoint_of(args)
    X, y = _read_training_data(args)
    if args.learner not in SVM_LEARNERS:
        return _adapt.run_learner_fit(args, X, y)
    clf = _svm_estimator(args, storage_options, checkpoint)
    spec, flag = _cluster_choice(args)
    with scheduler_client(spec, n_workers=args.workers, option=flag) as client:
        _announce_cluster(client)
        clf.set_params(client=client)
        try:
            clf.fit(X, y)
        except StoreMismatchError as exc:
            raise kept_store_error(exc, cli=True) from None
        clf.set_params(client=None)
        path = clf.save(args.model, overwrite=args.overwrite, storage_options=storage_options)
    name = type(clf).__name__
    trained = "" if args.learner == "svc" else f" {'an' if name.startswith('S') else 'a'} {name}"
    print(
        f"dkernel: trained{trained} on {X.shape[0]} samples x {X.shape[1]} features, "
        f"{_training_summary(args, clf, X, y)}"
        + (f", Gram store {clf.store_path_}" if args.store else "") + f"; model saved to {path}"
    )
    return 0


def _add_predict_parser(subparsers):
    _add_command(
        subparsers, "predict", _run_predict, _predict_arguments,
        help="predict labels with a saved model",
        description="Predict labels (or outputs) of a data file with any model written by 'dkernel fit'.",
        epilog="example:\n  dkernel predict --model model.zarr --data X_test.npy --labels y_test.npy --out pred.npy\n\n"
               "--out and --decision write .npy files (np.load reads them). A file that is not an earlier output\n"
               "of dkernel predict is never replaced; an earlier output is replaced with --overwrite.",
    )


def _predict_arguments(p):
    p.add_argument("--model", required=True, metavar="PATH",
                   help="model store written by 'dkernel fit' (a folder or a URL)")
    p.add_argument("--data", "--input", dest="data", required=True, metavar="FILE",
                   help="data to classify (same formats as fit; --input is the same flag)")
    p.add_argument("--labels", metavar="FILE", help="true labels (or outputs): report the accuracy (or the mean "
                   "squared error)")
    p.add_argument("--out", metavar="FILE", help="write the predicted labels to this .npy file")
    p.add_argument("--decision", metavar="FILE", help="write the decision values to this .npy file")
    p.add_argument("--overwrite", action="store_true",
                   help="replace files at --out and --decision written by an earlier dkernel predict (never "
                        "another file)")
    _add_storage_option_argument(p)


#: What ``dkernel predict`` writes: flag -> (kind of the output file, what it holds).
_PREDICT_OUTPUTS = {"--out": ("labels", "the predicted labels"), "--decision": ("decision", "the decision values")}


def _predict_outputs(args):
    """``{flag: path}`` of the output files, each checked before any work (:mod:`dkernel._runtime.outputs`)."""
    from .._runtime import outputs

    # (--out and --decision at one path are refused with the options: _arguments._check_distinct_outputs.)
    paths = {flag: path for flag, path in (("--out", args.out), ("--decision", args.decision)) if path}
    for flag, path in paths.items():
        kind, what = _PREDICT_OUTPUTS[flag]
        outputs.check_output(path, kind, what=what, suffix=".npy", name=flag, writer="dkernel predict",
                             overwrite=args.overwrite)
    return paths


#: The artifact kind of the model of each SVM learner (:data:`dkernel._runtime.artifacts.KINDS`).
_SVM_KINDS = {"svc": "model", "nusvc": "nu-svc-model", "svr": "svr-model", "nusvr": "nu-svr-model",
              "one-class": "one-class-model", "conformal": "conformal-model"}


def _model_kind(learner):
    """The artifact kind of the model ``dkernel fit --learner`` writes (an SVM's, or a learner's)."""
    if learner in _SVM_KINDS:
        return _SVM_KINDS[learner]
    from ..svm._learner_models import LEARNER_KINDS

    return LEARNER_KINDS[learner]


def _load_model(path, storage_options=None):
    """The model at --model (a folder or a URL): any kind ``dkernel fit`` writes."""
    import os

    missing = ValueError(f"--model {path}: no such model; train one with 'dkernel fit ... --model {path}'.")
    if not _is_url(path) and not os.path.exists(path):
        raise missing
    from .. import load_model

    try:
        model = load_model(path, storage_options=storage_options)
    except FileNotFoundError:
        raise missing from None
    if not hasattr(model, "predict"):  # a transformer the library saves (KernelPCA): no command applies it
        raise ValueError(f"--model {path} is a {type(model).__name__} model, which transforms data and predicts "
                         f"nothing; dkernel predict applies the models of dkernel fit. Apply it in Python: "
                         f"dkernel.load_model('{path}').transform(X).")
    return model


def _classes(model):
    """The classes of a classifier; None for a regression model (kernel ridge)."""
    classes = getattr(model, "classes_", None)
    return getattr(model, "classes", None) if classes is None else classes


def _score_line(args, model, pred, y, classes):
    """``accuracy a`` of a classifier (or a one-class model) or ``mean squared error e`` of a regression, against --labels."""
    import numpy as np

    if classes is None and not _predicts_values(model):  # a one-class model: +1 inside, -1 outside
        if y.dtype.kind not in "biuf" or not np.isin(y, (-1, 1)).all():
            raise ValueError(f"--labels {args.labels}: a one-class model predicts +1 (inside) or -1 (outside); pass "
                             f"labels of those two values to print its accuracy.")
        classes = np.array([-1, 1])
    if classes is None:
        if y.dtype.kind not in "biuf":
            raise ValueError(f"--labels {args.labels} holds text; this model predicts numbers (a regression).")
        return f"mean squared error {np.mean((pred - y.astype(np.float64)) ** 2):.6g}"
    if (y.dtype.kind == "U") != (np.asarray(classes).dtype.kind == "U"):
        raise ValueError(f"--labels {args.labels} holds {'text' if y.dtype.kind == 'U' else 'numbers'} but the "
                         f"model's classes are {list(np.asarray(classes).tolist())}; pass the labels in the form "
                         f"the model was trained on.")
    return f"accuracy {np.mean(pred == y.astype(pred.dtype)):.4f}"


def _run_predict(args):
    from .._runtime import outputs

    paths = _predict_outputs(args)
    model = _load_model(args.model, _storage_options(args))
    if args.decision and (not hasattr(model, "decision_function") or _predicts_values(model)):
        kind = getattr(model, "learner", None) or type(model).__name__  # (a learner model: its --learner's name)
        raise ValueError(f"--decision: the {kind} model in --model {args.model} has no decision "
                         f"values; write its predictions with --out.")
    X, y = _read_data(args.data, args.labels)
    _check_finite_data(args, X, "predicting")
    if X.shape[1] != model.n_features_in_:
        raise ValueError(f"--data {args.data} has {X.shape[1]} features but the model {args.model} was trained on "
                         f"{model.n_features_in_}.")
    if y is not None and len(y) != X.shape[0]:
        from ._files import header_hint

        source = f"--labels {args.labels}" if args.labels else f"--data {args.data}"
        raise ValueError(f"{source} has {len(y)} labels but --data {args.data} has {X.shape[0]} rows"
                         f"{header_hint(args.labels, len(y), X.shape[0]) if args.labels else ''}; pass one "
                         f"label per row of --data.")
    if not (args.out or args.decision or args.labels):  # (after the errors of the data, before predicting)
        raise ValueError("nothing to write: give --out (labels), --decision (decision values) or --labels (to print "
                         "the accuracy).")
    pred = model.predict(X)
    classes = _classes(model)
    score = None if y is None else _score_line(args, model, pred, y, classes)
    written = {}
    for flag, path in paths.items():
        kind, what = _PREDICT_OUTPUTS[flag]
        values = pred if flag == "--out" else model.decision_function(X)
        outputs.save_npy(path, values, kind, what=what, name=flag, writer="dkernel predict", overwrite=args.overwrite)
        written[flag] = path  # as given: the suffix was checked, so it is the file written
    learner = getattr(model, "learner", None)
    message = f"dkernel: predicted {pred.shape[0]} samples" + (f" with the {learner} model" if learner else "")
    if score is not None:
        message += f", {score}"
    for flag, path in written.items():
        what = "predicted values" if flag == "--out" and _predicts_values(model) else _PREDICT_OUTPUTS[flag][1]
        message += f"; {what.removeprefix('the ')} written to {path}"
    print(message)
    return 0


def _predicts_values(model):
    """Whether ``model`` predicts values rather than labels (a regressor: SVR, NuSVR, a ridge learner model)."""
    from sklearn.base import is_regressor

    try:
        return is_regressor(model)
    except (AttributeError, TypeError):  # not a scikit-learn estimator (a learner model of the command line)
        return getattr(model, "learner", None) == "ridge"


def add_commands(subparsers):
    """fit, predict."""
    _add_fit_parser(subparsers)
    _add_predict_parser(subparsers)
