"""The ``dkernel run`` command: a reproduction pipeline (an experiment of the papers) and its report.

The library does not import its pipelines: they are found by name through the
entry points of the group ``dkernel.pipelines`` (the ``pipelines`` package of
this project registers one in ``pyproject.toml``). An entry point names a
registry with ``PIPELINES`` (the names), ``describe(name)`` (one line) and
``run(name, argv)`` (the pipeline's own command line; an exit status).
"""

import argparse
import sys

from ._arguments import _add_command

_RUN_EPILOG = """\
examples:
  dkernel run --list                                # the reproduction pipelines
  dkernel run meila_centering_real --quick          # reduced run on a local cluster, about a minute
  dkernel run meila_shift_synthetic --repeats 10    # the full experiment, into results/
  dkernel run meila_shift_uci --cluster tcp://127.0.0.1:8786 --out /tmp/results
  dkernel run meila_centering_real --quick --cluster cluster/slurm.yaml   # workers as SLURM jobs
  dkernel run meila_imbalanced --help               # the options of one pipeline

Each pipeline writes results/NAME/ (results/quick/NAME/ with --quick, DIR/NAME/
with --out DIR): results.csv, results.json, report.md and figures. An
interrupted run (Ctrl-C, a kill) keeps the records of its finished tasks beside
that folder; the same command run again resumes: only the other tasks run.
"""


def _add_run_parser(subparsers):
    p = _add_command(
        subparsers, "run", _run_run, _run_arguments,
        help="run a reproduction pipeline (an experiment of the papers) and write its report",
        description="Run a reproduction pipeline: its tasks go to Dask (a local cluster by default) and its "
        "results, report and figures to results/NAME/ (results/quick/NAME/ with --quick). Options after NAME "
        "belong to the pipeline: [--quick] [--cluster SPEC|threads] [--out DIR] [--repeats R] [--seed S] "
        "[--overwrite] (--out DIR writes DIR/NAME/; quick previews under results/quick are replaced at each quick "
        "run; full results only with --overwrite, never by a quick run).",
        epilog=_RUN_EPILOG,
    )
    p.unknown_hint = _options_before_the_name


def _options_before_the_name(namespace, extras):
    """The error of options given before the pipeline's NAME (the run command has none of its own but --list)."""
    given = " ".join(extras)
    return (f"unrecognized arguments: {given}; options of a pipeline go after its name: dkernel run "
            f"{getattr(namespace, 'name', None) or 'NAME'} {given}")


def _run_arguments(p):
    p.add_argument("--list", action="store_true", help="list the pipelines and exit")
    p.add_argument("name", nargs="?", metavar="NAME", help="pipeline to run (see --list); without it the list is "
                   "printed with an error, status 2")
    p.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


#: The entry-point group of pipeline registries.
PIPELINE_GROUP = "dkernel.pipelines"


def pipeline_registries():
    """``{pipeline name: registry}`` over the installed entry points of :data:`PIPELINE_GROUP`."""
    from importlib.metadata import entry_points

    registries = {}
    for entry in entry_points(group=PIPELINE_GROUP):
        registry = entry.load()
        registries.update(dict.fromkeys(registry.PIPELINES, registry))
    return registries


def _run_run(args):
    registries = pipeline_registries()
    if args.list or args.name is None:
        if not registries:
            print("no pipelines are installed (the 'pipelines' package of this project registers them: "
                  "pip install it).", file=sys.stderr)
        for name, registry in registries.items():
            print(f"{name:<24} {registry.describe(name)}")
        if args.list:
            return 0
        raise ValueError("give the NAME of a pipeline to run: dkernel run NAME [options] (the pipelines are listed "
                         "above; 'dkernel run --list' lists them alone).")
    if args.name not in registries:
        import difflib

        known = ", ".join(registries) or "none installed"
        close = difflib.get_close_matches(args.name, list(registries), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown pipeline {args.name!r}; {hint}available pipelines are {known} (dkernel run "
                         f"--list).")
    return registries[args.name].run(args.name, args.options)


def add_commands(subparsers):
    """run."""
    _add_run_parser(subparsers)
