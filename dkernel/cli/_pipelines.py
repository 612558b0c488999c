"""The ``dkernel run`` command: a reproduction pipeline (an experiment of the papers) and its report."""

import argparse

from ._arguments import _add_command

_RUN_EPILOG = """\
examples:
  dkernel run --list                                # the reproduction pipelines
  dkernel run meila_centering_real --quick          # reduced run on a local cluster, about a minute
  dkernel run meila_shift_synthetic --repeats 10    # the full experiment, into results/
  dkernel run meila_shift_uci --cluster tcp://127.0.0.1:8786 --out /tmp/results
  dkernel run meila_centering_real --quick --cluster cluster/slurm.yaml   # workers as SLURM jobs
  dkernel run meila_imbalanced --help               # the options of one pipeline

Each pipeline writes results/NAME/: results.csv, results.json, report.md and figures.
"""


def _add_run_parser(subparsers):
    p = _add_command(
        subparsers, "run", _run_run,
        help="run a reproduction pipeline (an experiment of the papers) and write its report",
        description="Run a reproduction pipeline: its tasks go to Dask (a local cluster by default) and its "
        "results, report and figures to results/NAME/. Options after NAME belong to the pipeline: "
        "[--quick] [--cluster SPEC|threads] [--out DIR] [--repeats R] [--seed S] [--overwrite] "
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


def add_commands(subparsers):
    """run."""
    _add_run_parser(subparsers)
