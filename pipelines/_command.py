"""A pipeline's command line: ``python -m pipelines NAME`` and ``dkernel run NAME``.

:func:`main_for` parses the options (:func:`pipelines._runner.build_parser`) and either runs the pipeline
(:func:`pipelines._runner.run_pipeline`) or, with ``--rejudge DIR``, re-derives a finished run's verdicts and
report from its own records (:func:`pipelines._rejudge.rejudge`); errors are told in the flags' words, with exit
code 2, and Ctrl-C says what was kept and how to resume (exit code 130).
"""

import sys

from dkernel.cli._arguments import _in_flags, _output_named
from dkernel.exceptions import ArtifactPathError, DKernelError

from ._rejudge import rejudge
from ._runner import build_parser, config_from_args, run_pipeline

__all__ = ["main_for", "run_as_script"]


def main_for(module, argv=None):
    """Command-line entry point of a pipeline module; returns an exit code."""
    parser = build_parser(module.NAME, module.DESCRIPTION)
    args = parser.parse_args(argv)
    if args.rejudge is not None:
        try:
            result = rejudge(module, args.rejudge)
        except (ValueError, OSError, DKernelError) as exc:
            print(f"dkernel run {module.NAME} --rejudge: error: {exc}", file=sys.stderr)
            return 2
        moved = sum(old is not None and old != new for old, new in result.moved)
        unmatched = sum(old is None for old, _ in result.moved)
        print(f"{module.NAME}: {len(result.moved)} verdicts re-derived from {len(result.records)} records, "
              f"{moved} changed" + (f", {unmatched} on claims the run's results.json words otherwise" if unmatched
                                    else ""))
        print(f"report: {result.outdir / 'report.md'}")
        return 0
    try:
        config = config_from_args(args)
        result = run_pipeline(module, config)
    except (ValueError, OSError, DKernelError) as exc:
        message = _in_flags(str(exc), {})
        if isinstance(exc, ArtifactPathError):  # the results folder: told with the flag that named it
            message = _output_named(message, [("--out", args.out)])
        print(f"dkernel run {module.NAME}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        if getattr(stop, "complete", None):
            advice = f"the results were complete: {stop.complete}; the records kept in {stop.folder} may be deleted."
        elif getattr(stop, "saved", 0):
            left = stop.total - stop.saved
            advice = (f"the records of {stop.saved} of {stop.total} tasks are saved in {stop.folder}; run the same "
                      f"command again to resume ({f'only the other {left} tasks run' if left else 'no task runs again'}"
                      f").")
        elif hasattr(stop, "saved"):
            advice = "no task had finished, so nothing was saved; run the same command again to start over."
        else:
            advice = "no task had run yet; run the same command again."
        print(f"dkernel run {module.NAME}: interrupted; {advice}", file=sys.stderr)
        return 130
    print(f"{module.NAME}: {len(result.records)} records in {result.seconds:.1f} s")
    print(f"report: {result.outdir / 'report.md'}")
    return 0


def run_as_script(name):
    """``python -m pipelines.NAME``: run the importable module ``pipelines.NAME`` and exit with its code.

    The module run as a script is ``__main__``; its tasks refer to the
    functions of ``pipelines.NAME`` instead, which workers can import.
    """
    import importlib

    sys.exit(main_for(importlib.import_module(f"{__package__}.{name}")))
