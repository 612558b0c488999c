"""What several ``dkernel`` commands share: the kernel flags and their checks, range checks of numeric options,
the flags that name library parameters in error messages, reading the user's data files, announcing a cluster.

Nothing heavy is imported here at module level: ``dkernel --help`` builds every command's parser without its
options (:class:`CommandParser`), so that it imports neither NumPy, scikit-learn nor Dask.
"""

import argparse
import re
import sys

from ._urls import (  # noqa: F401 (the commands' modules take the URL flags from here, with the others)
    STORAGE_OPTION_HELP,
    URL_FLAGS,
    _add_storage_option_argument,
    _check_urls,
    _is_url,
    _storage_options,
    _urls,
    object_store_message,
    url_failure,
)


class CommandParser(argparse.ArgumentParser):
    """The parser of one command, whose options are added only when that command is parsed or its help shown.

    ``dkernel --help`` lists the commands from their names and one-line helps;
    the options (and the modules their defaults come from) are added by
    ``arguments(parser)`` the first time the parser is used.
    """

    arguments = None

    def _add_arguments_once(self):
        arguments, self.arguments = self.arguments, None
        if arguments is not None:
            arguments(self)

    #: ``hint(namespace, extras)``: the error line of arguments the command does not know (None: argparse's own).
    unknown_hint = None

    def parse_known_args(self, args=None, namespace=None):
        self._add_arguments_once()
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self.unknown_hint is not None:
            self.error(self.unknown_hint(namespace, extras))
        return namespace, extras

    def format_help(self):
        self._add_arguments_once()
        return super().format_help()

    def format_usage(self):
        self._add_arguments_once()
        return super().format_usage()


def _nothing_saved(args):
    return "nothing was written; run the same command again to start over."


def _add_command(subparsers, name, run, arguments, *, interrupted=_nothing_saved, **kwargs):
    """Register command ``name``: ``arguments(parser)`` adds its options, ``run(args)`` runs it.

    ``interrupted(args)`` says, after Ctrl-C, what was saved and what the
    same command does when run again. The epilog is shown as written.
    """
    p = subparsers.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    p.arguments = arguments
    p.set_defaults(run=run, interrupted=interrupted)
    return p


def _gamma_help():
    from ..kernels._parameters import ESTIMATOR_DEFAULTS

    return ("float > 0, 'scale' = 1/(n_features * X.var()) or 'auto' = 1/n_features (default: "
            f"{ESTIMATOR_DEFAULTS['gamma']}, as scikit-learn's SVC)")


def _add_kernel_arguments(group):
    """--kernel, --gamma, --degree, --coef0: the same choices and defaults for 'gram' and 'fit'."""
    from ..kernels._parameters import ESTIMATOR_DEFAULTS, KERNEL_PARAMS

    group.add_argument("--kernel", default="rbf", choices=list(KERNEL_PARAMS),
                       help="kernel function (default: %(default)s); rbf is exp(-gamma |x - z|^2), poly "
                            "(gamma x'z + coef0)^degree, sigmoid tanh(gamma x'z + coef0)")
    group.add_argument("--gamma", default=None, help=_gamma_help())
    group.add_argument("--degree", type=int, default=None,
                       help=f"degree of poly (default: {ESTIMATOR_DEFAULTS['degree']})")
    group.add_argument("--coef0", type=float, default=None,
                       help=f"offset of poly and sigmoid (default: {ESTIMATOR_DEFAULTS['coef0']:g})")


def _kernel_args(args):
    """``{"gamma", "coef0", "degree"}`` of the kernel options, defaults filled in; a misused option is refused."""
    from ..kernels._parameters import ESTIMATOR_DEFAULTS, KERNEL_PARAMS

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
    "fit": (("centering_sample", 2), ("working_set_size", 2), ("workers", 1)),
    "adapt": (("workers", 1),),
}
_POSITIVE = {"fit": ("C", "tol")}


def _check_options(args):
    """Refuse out-of-range numeric options, misused kernel options, options that would be ignored and two outputs
    at one path, with a message that names the flags, before any work."""
    if args.command in ("gram", "fit"):
        _kernel_args(args)
        _check_cluster(args)
    _storage_options(args)
    _check_needs(args)
    for name, lowest in _LOWEST.get(args.command, ()):
        value = getattr(args, name)
        if value is not None and value < lowest:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= {lowest}; got {value}.")
    for name in _POSITIVE.get(args.command, ()):
        value = getattr(args, name)
        if value is not None and not (0 < value < float("inf")):
            raise ValueError(f"--{name} must be a finite number > 0; got {value:g}.")
    if args.command in ("gram", "fit", "adapt"):  # the commands of --cluster (and --workers)
        _check_workers(args)
    _check_distinct_outputs([(flag, getattr(args, flag[2:].replace("-", "_"), None))
                             for flag in OUTPUT_FLAGS.get(args.command, ())])
    _check_urls(args)


def _sampled(args):
    return args.sample is not None


def _checkpointed(args):
    return args.checkpoint is not None


#: Per command, the options that do nothing without another: ``(option, its default, whether what it needs is
#: given, what it does, what it needs)``. Such an option given without what it needs is refused before any work,
#: naming both (:func:`_check_needs`); its attribute is None (False for a switch) when not given, and set to its
#: default by the check.
_NEEDS = {
    "align": (("uniform", False, _sampled, "says how --sample draws its submatrices; without --sample the "
               "alignment is exact", "--sample N"),
              ("repeats", 10, _sampled, "is the number of submatrices --sample draws; without --sample the "
               "alignment is exact", "--sample N"),
              ("seed", 0, _sampled, "seeds the submatrices --sample draws; without --sample the alignment is "
               "exact", "--sample N")),
    "center": (("seed", 0, _sampled, "seeds the points --sample draws; without --sample the centering is exact",
                "--sample N"),),
    "fit": (("resume", None, _checkpointed, "requires a checkpoint to resume from; without --checkpoint no solver "
             "state is read", "--checkpoint DIR, the folder of the checkpoint to resume from"),
            ("checkpoint_seconds", 30.0, _checkpointed, "says how often --checkpoint DIR is written; without "
             "--checkpoint no solver state is written", "--checkpoint DIR"),
            ("checkpoint_iterations", None, _checkpointed, "says how often --checkpoint DIR is written; without "
             "--checkpoint no solver state is written", "--checkpoint DIR"),
            ("seed", 0, lambda args: args.centering_sample is not None, "seeds the points --centering-sample draws; "
             "without --centering-sample the centering is exact", "--centering-sample N")),
    "adapt": (("seed", 0, lambda args: args.method != "exact", "seeds the randomized eigensolver; --method exact "
               "uses no randomness", "--method randomized, nystroem or auto"),),
}

#: Per command, the flags whose value may be a URL of an object store (``PATH``: the positional store), and the
#: attribute that holds it: --storage-option is refused where none is a URL, and each URL is checked before any work.
def _check_needs(args):
    """Refuse an option that would do nothing without another (:data:`_NEEDS`), and --storage-option without a
    URL, naming both; then set the options not given to their defaults."""
    for name, default, met, does, needs in _NEEDS.get(args.command, ()):
        value = getattr(args, name, None)
        if value is None or value is False:
            setattr(args, name, default)
            continue
        if not met(args):
            flag = f"--{name.replace('_', '-')}"
            shown = flag if value is True else f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
            raise ValueError(f"{shown} {does}. Add {needs}, or leave out {flag}.")
    if getattr(args, "storage_option", None) and args.command in URL_FLAGS and not _urls(args):
        flags = " or ".join(flag for flag, _ in URL_FLAGS[args.command])
        raise ValueError(f"--storage-option sets the filesystem of a store or model at a URL (s3://...), and no "
                         f"{flags} here is one: it would be unused. Give {flags} as a URL, or leave out "
                         f"--storage-option.")


def _check_workers(args):
    """--workers N is the size of the cluster that --cluster local starts; with any other choice it is refused."""
    if args.workers is None:
        return
    spec, flag = _cluster_choice(args)
    spec = None if spec is None else str(spec).strip()
    if spec == "local":
        return
    if spec is not None and re.fullmatch(r"local:\d+", spec):
        raise ValueError(f"{flag} {spec} already sets the number of worker processes; give one of --workers "
                         f"{args.workers} and {flag} {spec}.")
    where = ("without --cluster the work runs in threads of this process" if spec is None else
             f"the workers of {flag} {spec} are that cluster's own")
    raise ValueError(f"--workers {args.workers} sets the worker processes of --cluster local; {where}. Add "
                     f"--cluster local, or leave out --workers.")


def _where(path):
    """``(kind, place)`` of a path flag's value to compare with another: a URL without its trailing ``/``, or the
    absolute path with links resolved."""
    import os

    path = os.fspath(path)
    if _is_url(path):
        return "url", path.rstrip("/")
    return "local", os.path.realpath(path)


def _overlap(a, b):
    """``"same"`` when the paths ``a`` and ``b`` name one place, ``"inside"`` when ``a`` lies inside ``b``,
    ``"contains"`` when ``b`` lies inside ``a``, else None."""
    import os

    (kind_a, a), (kind_b, b) = _where(a), _where(b)
    if kind_a != kind_b:
        return None
    if a == b:
        return "same"
    sep = "/" if kind_a == "url" else os.sep
    if a.startswith(b.rstrip(sep) + sep):
        return "inside"
    if b.startswith(a.rstrip(sep) + sep):
        return "contains"
    return None


def _check_distinct_outputs(outputs):
    """Refuse two output flags (``(flag, value)`` pairs, value None when not given) at one path, or one inside the
    other: each is written as a whole (a store, a model, a file), and one would be refused, or damaged, by the other."""
    given = [(flag, value) for flag, value in outputs if value is not None]
    for i, (flag, value) in enumerate(given):
        for other, other_value in given[i + 1:]:
            found = _overlap(value, other_value)
            if found == "same":
                shown = value if str(value) == str(other_value) else f"{value} and {other_value}"
                raise ValueError(f"{flag} and {other} name the same path ({shown}); give each its own path.")
            if found is not None:
                (inner, inner_value), (outer, outer_value) = (((flag, value), (other, other_value))
                                                              if found == "inside" else
                                                              ((other, other_value), (flag, value)))
                raise ValueError(f"{inner} {inner_value} lies inside {outer} {outer_value}; give each its own "
                                 f"path, neither inside the other.")


def _kernel_from_args(args, X):
    """The kernel of --kernel/--gamma/--degree/--coef0 (gamma 'scale' resolved on X), as 'dkernel fit' builds it."""
    from ..kernels._kernels import NormalizedKernel
    from ..kernels._parameters import estimator_kernel

    kernel = estimator_kernel(args.kernel, X, **_kernel_args(args))
    return NormalizedKernel(kernel) if args.normalize else kernel


#: The library's words for the block side of a stored Gram, ``chunks (store: [30, 30], requested: [20, 20])``.
_CHUNKS = re.compile(r"\bchunks \(store: \[(\d+)(?:, \d+)*\], requested: \[(\d+)(?:, \d+)*\]\)")

#: Per command, the library parameters that a flag sets, so that an error raised by the library names the flag.
#: ``"*"``: the phrases of the library that every command tells in its own words (the API calls its advice names
#: become the ``dkernel`` command that does the same); a key that is a compiled pattern is replaced by its ``sub``.
_FLAG_NAMES = {
    "*": {
        re.compile(r"no Gram store at (.+?); compute one with GramMatrix\.compute\(\.\.\., store=(?:path|url)\)\."):
            r"no Gram store at \1; compute one with 'dkernel gram --input X.npy --out \1'.",
        "re-run GramMatrix.compute (or `dkernel gram`)": "re-run `dkernel gram`",
        "re-run GramMatrix.compute with the same data and kernel":
            "re-run `dkernel gram` with the same data and kernel options",
        "(GramMatrix.compute with the same data and kernel, or the same view's to_zarr)":
            "(the same `dkernel gram`, `dkernel center` or `dkernel adapt` command)",
        "recompute it (GramMatrix.compute(..., overwrite=True), or `dkernel gram ... --overwrite`)":
            "recompute it (`dkernel gram ... --overwrite`)",
        "open it again with GramMatrix.open(path).": "run the command again.",
    },
    "gram": {_CHUNKS: r"--chunk (store: \1, requested: \2)", re.compile(r"\bdtype \(store: "): "--dtype (store: "},
    "center": {"n_sample": "--sample", "random_state": "--seed", "Centering.multiclass(y)": "--scheme multiclass"},
    "align": {"n_sample": "--sample", "n_repeats": "--repeats", "random_state": "--seed"},
    "fit": {"centering_sample": "--centering-sample", "n_sample": "--centering-sample",
            "working_set_size": "--working-set-size", "normalize_bias_correction": "--graf-correction",
            "normalize": "--normalize", "random_state": "--seed", "nu": "--nu", "epsilon": "--epsilon",
            "kappa": "--kappa",
            _CHUNKS: r"block side (store: \1 rows, requested: \2)"},
}


def _in_flags(message, names):
    """``message`` with the library parameter names of ``names`` replaced by flags (``n_sample=5``: ``--sample 5``).

    ``name=True`` becomes the flag alone (``normalize=True``: ``--normalize``). A key of ``names`` that is not
    a name (``Centering.multiclass(y)``) is a phrase of the library replaced as written; a compiled pattern is
    replaced by its ``sub``. A library message that names both forms (``overwrite=True (CLI: --overwrite)``) keeps
    the flag only. The phrases of every command (``_FLAG_NAMES["*"]``) are replaced first.
    """
    message = re.sub(r"\b\w+=\w+ \(CLI: (--[\w-]+)\)", r"\1", message)
    for name, flag in [*_FLAG_NAMES["*"].items(), *names.items()]:
        if isinstance(name, re.Pattern):
            message = name.sub(flag, message)
            continue
        if not name.isidentifier():
            message = message.replace(name, flag)
            continue
        message = re.sub(rf"(?<![\w.-]){name}\b(?:(=True\b)|(=))?",
                         lambda m, flag=flag: flag + (" " if m.group(2) else ""), message)
    return message


#: The flags of each command whose value is a path where it writes: a dkernel artifact (a Gram store, a model, a
#: solver checkpoint, pipeline results) or an output file (``predict --out``, ``adapt --factors``). A refusal to
#: write there, or a failed write, is told with the flag (:func:`_output_named`, :func:`_write_failure`); two of
#: them at one path, or one inside the other, are refused before any work (:func:`_check_distinct_outputs`).
OUTPUT_FLAGS = {"gram": ("--out",), "center": ("--out",), "adapt": ("--out", "--factors"),
                "fit": ("--store", "--model", "--checkpoint"), "predict": ("--out", "--decision"), "run": ("--out",)}

#: The library's words for its ``overwrite`` parameter in a refused write, and the flag that sets it.
_OVERWRITE_WORDS = (("even with overwrite", "even with --overwrite"),
                    ("; overwrite replaces only", "; --overwrite replaces only"))


def _output_named(message, outputs):
    """``message`` (a refused write) opened with the flag and the value, as typed, of the output it is about.

    ``outputs`` are the ``(flag, value)`` pairs of the command's output paths. The library names a path made
    absolute (or the target of a link): ``/home/me/K.zarr exists and ...`` becomes ``--out K.zarr:
    /home/me/K.zarr exists and ...``; where several outputs are named, the longest path is the one meant. Its
    ``overwrite`` becomes ``--overwrite``.
    """
    import os

    for words, flag in _OVERWRITE_WORDS:
        message = message.replace(words, flag)
    if any(message.startswith(f"{flag} ") for flag, _ in outputs):
        return message
    found = None
    for flag, value in outputs:
        if value is None:
            continue
        for path in {os.path.abspath(os.fspath(value)), os.path.realpath(os.fspath(value))}:
            if re.search(re.escape(path) + r"(?=$|[\s/;:,)]|\.(?:\s|$))", message) and (
                    found is None or len(path) > found[0]):
                found = (len(path), flag, os.fspath(value))
    return message if found is None else f"{found[1]} {found[2]}: {message}"


def _write_failure(exc, outputs):
    """The message of ``exc``, an :class:`OSError` of the system on a file that the output ``(flag, value)`` of
    ``outputs`` writes (the path, a file inside it, or a temporary file beside it), told with the flag and the
    value as typed; None when it is about no output."""
    import os

    filename = getattr(exc, "filename", None)
    if not filename or not isinstance(filename, (str, bytes, os.PathLike)):
        return None
    filename = os.path.abspath(os.fsdecode(filename))
    for flag, value in outputs:
        if value is None or _is_url(value):
            continue
        for path in {os.path.abspath(os.fspath(value)), os.path.realpath(os.fspath(value))}:
            parent, base = os.path.split(path)
            reason = exc.strerror or type(exc).__name__
            if filename == path or (os.path.dirname(filename) == parent
                                    and os.path.basename(filename).startswith(f".{base}.")):  # it, or its temporary
                return (f"{flag} {os.fspath(value)}: cannot write it there ({reason}); choose a path in a folder "
                        f"this process can write into.")
            if filename.startswith(path + os.sep):  # a file of the store or model there (written, or read back)
                return f"{flag} {os.fspath(value)}: {reason} ({os.path.relpath(filename, path)} in it)."
    return None


def _open_gram(args):
    """The Gram store of the PATH argument; a path where nothing is is told with the command that computes a store."""
    import os

    from ..gram import GramMatrix

    if not _is_url(args.store) and not os.path.lexists(args.store):
        raise ValueError(f"no Gram store at {args.store} (the PATH argument); compute one with "
                         f"'dkernel gram --input X.npy --out {args.store}'.")
    return GramMatrix.open(args.store, storage_options=_storage_options(args))


def _check_target_labels(y, target, labels, command):
    """Refuse labels that do not fit --target, in the same words for ``align`` and ``adapt`` (``command``).

    ``labels`` is the --labels file, for the messages. ``classification`` and ``uneven`` need two classes,
    ``multiclass`` and ``one-vs-rest`` two or more, ``regression`` real outputs: numbers of more than two values
    (two values are class labels, whose centred target would be a classification target in disguise).
    """
    import numpy as np

    values = np.unique(y)
    shown = f"--labels {labels}"
    if target in ("classification", "uneven") and len(values) != 2:
        more = ("For more classes use --target multiclass or --target one-vs-rest; for" if command == "align" else
                "For more classes see 'dkernel align --target one-vs-rest'; for")
        raise ValueError(f"--target {target} needs labels of two classes; {shown} holds {len(values)}. {more} real "
                         f"outputs --target regression.")
    if target in ("multiclass", "one-vs-rest") and len(values) < 2:
        raise ValueError(f"--target {target} needs labels of two classes or more; {shown} holds one.")
    if target == "regression":
        if y.dtype.kind not in "biuf":
            raise ValueError(f"--target regression needs real outputs (numbers); {shown} holds text. For class "
                             f"labels use --target classification or --target uneven.")
        if len(values) <= 2:
            held = (f"only two values ({values[0].item()!r} and {values[1].item()!r}): class labels" if len(values) == 2
                    else f"one value ({values[0].item()!r}): outputs that do not vary have no alignment")
            raise ValueError(f"--target regression needs real outputs, but {shown} holds {held}. Use --target "
                             f"classification (+-1) or --target uneven (eq. 9) for two classes.")


def _read_data(path, labels=None, name="--data"):
    """``(X, y)`` of the data file ``path`` (given with the flag ``name``); ``y`` read from the file ``labels`` when
    given, else the file's own."""
    from ._files import load_input, load_labels

    X, y = load_input(path, name=name)
    if labels is not None:
        y = load_labels(labels)
    return X, y


#: What --cluster takes, for the help of every command that has it.
CLUSTER_HELP = ("where the work runs: 'local' (worker processes, every server on 127.0.0.1), 'local:N' (N of "
                "them), a scheduler address (tcp://HOST:PORT, tls://HOST:PORT), a scheduler file (.json) or a "
                "cluster YAML file (SLURM, PBS, SSH, Kubernetes: see cluster/README.md)")


def _add_cluster_arguments(group, default_help, workers_help=None):
    """--cluster SPEC, its older name --scheduler (the same choice; giving both is refused), and --workers N of
    --cluster local."""
    group.add_argument("--cluster", default=None, metavar="SPEC", help=f"{CLUSTER_HELP}; default: {default_help}")
    group.add_argument("--scheduler", default=None, metavar="SPEC", help="the same as --cluster (its older name)")
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help=workers_help or "number of worker processes of --cluster local (default: one per core); "
                                            "refused with any other --cluster, and without one")


def _cluster_choice(args, default=None):
    """``(spec, flag)`` of --cluster or --scheduler as given (``(default, '--cluster')`` when neither is)."""
    if args.cluster is not None and args.scheduler is not None:
        raise ValueError("--cluster and --scheduler are the same option; give one of them.")
    if args.scheduler is not None:
        return args.scheduler, "--scheduler"
    return (default if args.cluster is None else args.cluster), "--cluster"


def _check_cluster(args, default=None, accepted=()):
    """Refuse a malformed --cluster spec (a missing file, an unknown kind, a missing package) before any work."""
    from .._runtime.clusters import parse_cluster_spec

    spec, flag = _cluster_choice(args, default)
    if spec is not None and spec not in accepted:
        parse_cluster_spec(spec, flag)


def _announce_cluster(client):
    """Say which cluster a command started (engine, scheduler address, workers, batch jobs); none for an address."""
    from .._runtime.client import describe_cluster

    description = describe_cluster(client) if client is not None else None
    if description is not None:
        print(f"dkernel: started {description}", file=sys.stderr)
