"""``python -m pipelines NAME [options]``: run one reproduction pipeline (``--list`` lists them)."""

import sys

from . import PIPELINES, get_pipeline
from ._command import main_for


def main(argv=None):
    """Run the pipeline named by the first argument; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: python -m pipelines NAME [--quick] [--cluster SPEC|threads] [--out DIR] "
              "[--repeats R] [--seed S] [--rejudge DIR]\n\npipelines:")  # fmt: skip
        for name in PIPELINES:
            print(f"  {name:<24} {get_pipeline(name).DESCRIPTION}")
        return 0
    try:
        module = get_pipeline(argv[0])
    except ValueError as exc:
        print(f"python -m pipelines: error: {exc}", file=sys.stderr)
        return 2
    return main_for(module, argv[1:])


if __name__ == "__main__":
    sys.exit(main())
