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

Exit status: 0 on success; 1 from ``verify`` when blocks are damaged or
missing; 3 on an unexpected error (a defect, reported in one line too); 2 on an error: one line ``dkernel: error: ...`` naming the problem in
flags (the library parameters a message names are replaced by the flags that
set them, ``n_sample=5``: ``--sample 5``), with the fix, and never a Python
traceback; a damaged store is reported with the ``dkernel gram`` command that
repairs it. Ctrl-C exits with status 130 after one line saying what was saved
and what running the same command again does (each command says it: ``gram``
resumes from its blocks, ``fit --checkpoint`` from its checkpoint, ``run``
from its saved tasks; elsewhere the command starts over), from the very start
of :func:`main` (a Ctrl-C while the options are added says that nothing was
written). A reader of the output that goes away (``dkernel info K.zarr | head
-1``) ends the command quietly with status 141, as a Unix tool killed by SIGPIPE.

Every single-file output (``predict --out``, ``adapt --factors``) is written
under the rule of :mod:`dkernel._runtime.outputs`: a file of the user is never
replaced. A store, model, checkpoint or results folder refused at its output
path is told with the flag and the path as typed (``--out K.zarr: ...``);
nothing at the path is changed. Two output flags of one command at one path,
or one inside the other (``fit --store same.zarr --model same.zarr``), are
refused before any work, as is an option that would do nothing without another
(``align --repeats`` without ``--sample``: ``_arguments._NEEDS``). Every URL of
a command (``--out s3://bucket/K.zarr``) is reached once before any work:
missing credentials, an endpoint that does not answer or a refused access is
one line with the flag and the URL (status 2), mid-way too. ``dkernel --help`` imports no command's
dependencies (NumPy, Dask, scikit-learn): each command's options are added
when it runs.
"""

import argparse
import sys
import warnings

__all__ = ["build_parser", "main"]

#: The modules of the commands, in the order ``dkernel --help`` lists them.
_COMMAND_MODULES = ("_store", "_views", "_adapt", "_model", "_pipelines")


def build_parser():
    """The ``dkernel`` argument parser with one subparser per command."""
    import importlib

    from .. import __version__
    from ._arguments import CommandParser

    parser = argparse.ArgumentParser(
        prog="dkernel",
        description="Kernel methods at scale on Dask: Gram matrices in zarr stores.",
        epilog="Run 'dkernel <command> --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"dkernel {__version__}")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="<command>",
                                       parser_class=CommandParser)
    subparsers.required = True
    for name in _COMMAND_MODULES:
        importlib.import_module(f".{name}", __name__).add_commands(subparsers)
    return parser


def _error_line(exc, command, args=None):
    """The one line that reports the error ``exc`` of ``command`` (run with ``args``), in flags."""
    from ..exceptions import ArtifactPathError, CorruptStoreError, DKernelError
    from ._arguments import _FLAG_NAMES, OUTPUT_FLAGS, _in_flags, _output_named, _write_failure

    if isinstance(exc, CorruptStoreError) and exc.path:
        from ..gram import corruption_message

        return " ".join(corruption_message(exc.path, exc.blocks, exc.detail, cli=True).split())
    outputs = [(flag, getattr(args, flag[2:].replace("-", "_"), None)) for flag in OUTPUT_FLAGS.get(command, ())]
    if isinstance(exc, OSError) and not isinstance(exc, DKernelError):  # the system's, on a path we write?
        failure = _write_failure(exc, outputs)
        if failure is not None:
            return failure
    message = _in_flags(" ".join(str(exc).split()), _FLAG_NAMES.get(command, {}))
    if isinstance(exc, ArtifactPathError):  # a path the user named: told with the flag that named it
        message = _output_named(message, outputs)
    return message


def main(argv=None):
    """Run ``dkernel`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Ctrl-C at any point, the building of the parser included, is one line and status 130; a reader of the output
    that went away (``dkernel info K.zarr | head -1``) ends the command quietly with status 141, as a Unix tool
    killed by SIGPIPE.
    """
    args = None
    try:
        args = build_parser().parse_args(argv)
        return _run(args)
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:  # from a line of dkernel itself (_run reports the command's own) to a closed pipe
        return _closed_pipe()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning on the command line: ``dkernel: warning: ...`` on one line (its category named), no source line."""
    text = " ".join(str(message).split())
    kind = "" if category is UserWarning else f" ({category.__name__})"
    print(f"dkernel: warning{kind}: {text}", file=sys.stderr if file is None else file)


def _run(args):
    """Check the options of ``args`` and run its command; an error is one line ``dkernel: error: ...``."""
    from ..exceptions import DKernelError
    from ._arguments import _check_options

    try:
        _check_options(args)
        with warnings.catch_warnings():  # a warning is one line, as an error is
            warnings.showwarning = _show_warning
            status = args.run(args)
        if sys.stdout is not None:  # (None: the command was started with stdout closed)
            sys.stdout.flush()  # a closed pipe is found here, not at exit (Python's note on SIGPIPE)
        return status
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError as exc:
        if _stdout_is_closed():
            return _closed_pipe()
        return _report(exc, args)
    except (DKernelError, ValueError, OSError) as exc:
        return _report(exc, args)
    except Exception as exc:  # noqa: BLE001 (a defect of dkernel: still one line, and a status of its own)
        if _from_an_interrupt(exc):
            return _interrupted(args)
        failure = _url_failure(exc, args)
        if failure is not None:  # the object store of a URL flag (credentials, endpoint, access), mid-way
            print(f"dkernel: error: {failure}", file=sys.stderr)
            return 2
        print(f"dkernel: error: unexpected {type(exc).__name__}: {' '.join(str(exc).split())} (a defect of dkernel; "
              f"please report it with the command that gave it).", file=sys.stderr)
        return 3


def _report(exc, args):
    if _from_an_interrupt(exc):
        return _interrupted(args)
    failure = _url_failure(exc, args)
    print(f"dkernel: error: {failure or _error_line(exc, args.command, args)}", file=sys.stderr)
    return 2


def _url_failure(exc, args):
    """The line of a failure of the object store of a URL flag (botocore's errors told by their class, without
    importing it), or None."""
    from ._arguments import url_failure

    try:
        return url_failure(exc, args)
    except Exception:  # noqa: BLE001 (the report of an error never fails on its own)
        return None


def _from_an_interrupt(exc):
    """Whether ``exc`` stands for a Ctrl-C: compiled code interrupted by it raises ``SystemError`` from it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _interrupted(args):
    """The line of a Ctrl-C: what was saved and what the same command does; nothing yet before the options are
    parsed (``args`` None)."""
    said = "nothing was written; run the same command again to start over." if args is None else \
        args.interrupted(args)
    print(f"dkernel: interrupted; {said}", file=sys.stderr)
    return 130


#: The exit status of a command whose output pipe was closed: 128 + SIGPIPE, as a shell reports a tool it killed.
CLOSED_PIPE_STATUS = 141


def _stdout_is_closed():
    """Whether the reader of stdout went away (a pipe whose other end is closed).

    Where that cannot be told (stdout is no file of the system, e.g. replaced in a test), a ``BrokenPipeError`` is
    taken to come from it, as in Python's note on SIGPIPE.
    """
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return True
    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _closed_pipe():
    """End quietly after the reader of stdout went away: what is left to write goes to devnull (Python's note on
    SIGPIPE, https://docs.python.org/3/library/signal.html#note-on-sigpipe), so that the exit writes nothing."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # stdout is no file of the system: nothing is flushed to it
        pass
    return CLOSED_PIPE_STATUS
