"""Command line interface: ``dkernel <command> ...``.

=========== ====================================================================
``gram``    compute a kernel Gram matrix K(X, X) into a zarr store
``info``    describe a Gram store: kernel, shape, dtype, chunks, completeness
``verify``  check every block of a Gram store against its checksums
``center``  center a Gram store in feature space (Meila 2002)
``align``   kernel-target alignment of a Gram store (Kandola et al.)
``adapt``   adapt a Gram store to its labels by alignment (Kandola et al.)
``fit``     train an SVM and save it as a model store
``predict`` predict labels with a saved model
``run``     run a reproduction pipeline and write its report
=========== ====================================================================

Argument parsing only; every command calls the library. Each subcommand is a
pair ``_add_<name>_parser(subparsers)`` / ``_run_<name>(args)`` in the module
of its concept (``_store``: gram, info, verify; ``_views``: center, align;
``_model``: fit, predict; ``_pipelines``: run), registered by that module's
``add_commands``; the flags that several commands share, and their checks,
are in ``_arguments``.

An error of the library (a :class:`~dkernel.exceptions.DKernelError`, a
``ValueError``, an ``OSError``) becomes one line ``dkernel: error: ...`` and
exit status 2; the library parameters it names are replaced by the flags that
set them (``n_sample=5``: ``--sample 5``). A damaged store is reported with
the ``dkernel gram`` command that repairs it; Ctrl-C exits with status 130.
"""

import argparse
import sys

from ..exceptions import CorruptStoreError, DKernelError
from . import _adapt, _model, _pipelines, _store, _views
from ._arguments import _FLAG_NAMES, _check_options, _in_flags

__all__ = ["build_parser", "main"]


def build_parser():
    """The ``dkernel`` argument parser with one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="dkernel",
        description="Kernel methods at scale on Dask: Gram matrices in zarr stores.",
        epilog="Run 'dkernel <command> --help' for a command's options and examples.",
    )
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="<command>")
    subparsers.required = True
    for commands in (_store, _views, _adapt, _model, _pipelines):
        commands.add_commands(subparsers)
    return parser


def main(argv=None):
    """Run ``dkernel`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        _check_options(args)
        return args.run(args)
    except CorruptStoreError as exc:
        from ..gram import corruption_message

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

