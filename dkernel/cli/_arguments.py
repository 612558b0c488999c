"""What several ``dkernel`` commands share: the kernel flags and their checks, range checks of numeric options,
the flags that name library parameters in error messages, reading the user's data files, announcing a cluster.

Nothing heavy is imported here at module level: ``dkernel --help`` builds every command's parser without its
options (:class:`CommandParser`), so that it imports neither NumPy, scikit-learn nor Dask.
"""

import argparse
import re
import sys


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

    def parse_known_args(self, args=None, namespace=None):
        self._add_arguments_once()
        return super().parse_known_args(args, namespace)

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
    from ..svm._kernel import ESTIMATOR_DEFAULTS

    return ("float > 0, 'scale' = 1/(n_features * X.var()) or 'auto' = 1/n_features (default: "
            f"{ESTIMATOR_DEFAULTS['gamma']}, as scikit-learn's SVC)")


def _add_kernel_arguments(group):
    """--kernel, --gamma, --degree, --coef0: the same choices and defaults for 'gram' and 'fit'."""
    from ..svm._kernel import ESTIMATOR_DEFAULTS, KERNEL_PARAMS

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
    from ..svm._kernel import ESTIMATOR_DEFAULTS, KERNEL_PARAMS

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
        _check_cluster(args)
    _storage_options(args)
    for name, lowest in _LOWEST.get(args.command, ()):
        value = getattr(args, name)
        if value is not None and value < lowest:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= {lowest}; got {value}.")
    for name in _POSITIVE.get(args.command, ()):
        value = getattr(args, name)
        if value is not None and not (0 < value < float("inf")):
            raise ValueError(f"--{name} must be a finite number > 0; got {value:g}.")


def _kernel_from_args(args, X):
    """The kernel of --kernel/--gamma/--degree/--coef0 (gamma 'scale' resolved on X), as 'dkernel fit' builds it."""
    from ..kernels._kernels import NormalizedKernel
    from ..svm._kernel import estimator_kernel

    kernel = estimator_kernel(args.kernel, X, **_kernel_args(args))
    return NormalizedKernel(kernel) if args.normalize else kernel


#: Per command, the library parameters that a flag sets, so that an error raised by the library names the flag.
_FLAG_NAMES = {
    "center": {"n_sample": "--sample", "random_state": "--seed", "Centering.multiclass(y)": "--scheme multiclass"},
    "align": {"n_sample": "--sample", "n_repeats": "--repeats", "random_state": "--seed"},
    "fit": {"centering_sample": "--centering-sample", "n_sample": "--centering-sample",
            "working_set_size": "--working-set-size", "normalize_bias_correction": "--graf-correction",
            "normalize": "--normalize", "random_state": "--seed"},
}


def _in_flags(message, names):
    """``message`` with the library parameter names of ``names`` replaced by flags (``n_sample=5``: ``--sample 5``).

    ``name=True`` becomes the flag alone (``normalize=True``: ``--normalize``). A key of ``names`` that is not
    a name (``Centering.multiclass(y)``) is a phrase of the library replaced as written. A library message that
    names both forms (``overwrite=True (CLI: --overwrite)``) keeps the flag only.
    """
    message = re.sub(r"\b\w+=\w+ \(CLI: (--[\w-]+)\)", r"\1", message)
    for name, flag in names.items():
        if not name.isidentifier():
            message = message.replace(name, flag)
            continue
        message = re.sub(rf"(?<![\w.-]){name}\b(?:(=True\b)|(=))?",
                         lambda m, flag=flag: flag + (" " if m.group(2) else ""), message)
    return message


#: The flags of each command whose value is a path where a dkernel artifact is written (a Gram store, a model, a
#: solver checkpoint, pipeline results): a refusal to write there is told with the flag (:func:`_output_named`).
OUTPUT_FLAGS = {"gram": ("--out",), "center": ("--out",), "adapt": ("--out",),
                "fit": ("--model", "--store", "--checkpoint"), "run": ("--out",)}

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


def _read_data(path, labels=None):
    """``(X, y)`` of the data file ``path``; ``y`` read from the file ``labels`` when given, else the file's own."""
    from ._files import load_input, load_labels

    X, y = load_input(path)
    if labels is not None:
        y = load_labels(labels)
    return X, y


#: What --cluster takes, for the help of every command that has it.
CLUSTER_HELP = ("where the work runs: 'local' (worker processes, every server on 127.0.0.1), 'local:N' (N of "
                "them), a scheduler address (tcp://HOST:PORT, tls://HOST:PORT), a scheduler file (.json) or a "
                "cluster YAML file (SLURM, PBS, SSH, Kubernetes: see cluster/README.md)")


def _add_cluster_arguments(group, default_help):
    """--cluster SPEC and its older name --scheduler (the same choice; giving both is refused)."""
    group.add_argument("--cluster", default=None, metavar="SPEC", help=f"{CLUSTER_HELP}; default: {default_help}")
    group.add_argument("--scheduler", default=None, metavar="SPEC", help="the same as --cluster (its older name)")


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


#: What --storage-option takes, for the help of every command that reads or writes a store or model at a URL.
STORAGE_OPTION_HELP = ("an option of the filesystem of a URL store or model (s3://...), KEY=VALUE, repeatable: "
                       "endpoint_url=http://HOST:9000, key=..., secret=..., client_kwargs={\"region_name\": \"...\"} "
                       "(a VALUE in {...}, [...], true, false or null is read as JSON). Credentials are better left "
                       "to the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); given here they are used, "
                       "never printed nor written")


def _add_storage_option_argument(group):
    """--storage-option KEY=VALUE (repeatable): the ``storage_options`` of a store or model at a URL."""
    group.add_argument("--storage-option", dest="storage_option", action="append", default=None,
                       metavar="KEY=VALUE", help=STORAGE_OPTION_HELP)


def _storage_options(args):
    """The ``storage_options`` dict of the --storage-option flags (None without any); a malformed one is refused.

    A message never shows a value: it may be a credential.
    """
    import json

    given = getattr(args, "storage_option", None)
    if not given:
        return None
    options = {}
    for item in given:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            shown = f" (key {key!r})" if sep and key else ""
            raise ValueError(f"--storage-option: expected KEY=VALUE with KEY a name such as endpoint_url{shown}; "
                             f"the value given is not shown, it may hold a credential.")
        if value[:1] in ("{", "[") or value in ("true", "false", "null"):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError(f"--storage-option {key}=...: the value starts as JSON but is not valid JSON; "
                                 f"quote it for the shell, e.g. {key}='{{\"name\": \"value\"}}'.") from None
        if key in options:
            raise ValueError(f"--storage-option {key} is given twice; give each key once.")
        options[key] = value
    return options


def _is_url(path):
    """Whether ``path`` (of a store or model flag) is a URL of an fsspec filesystem (``s3://...``)."""
    from .._runtime.object_store import is_url

    return is_url(path)
