"""The first line of every benchmark's output: the commit measured, the command, the date and the machine.

A figure recorded in ``benchmarks/results/`` or ``benchmarks/README.md`` is
only as good as the code it measured; ``tests/test_benchmark_records.py``
checks that each recorded run names a commit that is not older than the last
change to the modules its script declares in ``MEASURES``.
"""

import datetime
import importlib
import os
import platform
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git(*args):
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def commit():
    """``<sha>``, or ``<sha>+modified`` when dkernel/ or benchmarks/ differ from it; ``unknown`` outside git."""
    sha = _git("rev-parse", "HEAD")
    if not sha:
        return "unknown"
    modified = _git("status", "--porcelain", "--untracked-files=no", "--", "dkernel", "benchmarks/*.py")
    return sha + ("+modified" if modified else "")


def print_header(argv=None):
    """Print ``# commit SHA  DATE  python benchmarks/NAME ARGS`` and the machine's cores and load."""
    argv = sys.argv if argv is None else argv
    script = os.path.relpath(os.path.abspath(argv[0]), REPO)
    command = " ".join(["python", script, *argv[1:]])
    print(f"# commit {commit()}  {datetime.date.today().isoformat()}  {command}")
    print(f"# {os.cpu_count()} CPUs, python {platform.python_version()}, load average before: "
          f"{os.getloadavg()[0]:.2f}", flush=True)


#: Labels of the libraries whose import name differs from the name users know.
_IMPORT_NAMES = {"scikit-learn": "sklearn"}


def print_versions(*libraries):
    """Print ``python X, numpy Y, <library> Z, ...``: the versions the figures were measured with."""
    parts = [f"python {platform.python_version()}"]
    for label in ("numpy", *libraries):
        module = importlib.import_module(_IMPORT_NAMES.get(label, label))
        parts.append(f"{label} {module.__version__}")
    print(", ".join(parts))
