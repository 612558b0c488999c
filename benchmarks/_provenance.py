"""The first lines of every benchmark's output: the commit measured, the command, the date, the machine, the versions.

A figure recorded in ``benchmarks/results/`` or ``benchmarks/README.md`` is
only as good as the code it measured; ``tests/test_benchmark_records.py``
checks that each recorded run names a commit that is not older than the last
change to the modules its script declares in ``MEASURES``.
"""

import datetime
import importlib
import importlib.metadata
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
    """``<sha>``, or ``<sha>+modified`` when the package (dkernel/, its compiled loops, its build) or benchmarks/
    differ from it; ``unknown`` outside git."""
    sha = _git("rev-parse", "HEAD")
    if not sha:
        return "unknown"
    modified = _git("status", "--porcelain", "--untracked-files=no", "--", "dkernel", "src", "setup.py",
                    "pyproject.toml", "benchmarks/*.py")
    return sha + ("+modified" if modified else "")


def machine():
    """``N CPUs (model), M GB memory, system release``: what the figures were measured on."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        model = platform.processor()
    try:
        memory = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB memory"
    except (ValueError, OSError, AttributeError):
        memory = ""
    cpus = f"{os.cpu_count()} CPUs" + (f" ({model})" if model else "")
    return f"{cpus}{memory}, {platform.system()} {platform.release()}"


def print_header(argv=None):
    """Print ``# commit SHA  DATE  python benchmarks/NAME ARGS``, then the machine, its Python and its load."""
    argv = sys.argv if argv is None else argv
    script = os.path.relpath(os.path.abspath(argv[0]), REPO)
    command = " ".join(["python", script, *argv[1:]])
    print(f"# commit {commit()}  {datetime.date.today().isoformat()}  {command}")
    print(f"# {machine()}, python {platform.python_version()}, load average before: "
          f"{os.getloadavg()[0]:.2f}", flush=True)


#: Import names of the distributions whose version is read from the module when no metadata is installed.
_IMPORT_NAMES = {"scikit-learn": "sklearn", "scikit-learn-intelex": "sklearnex"}


def version(distribution):
    """The installed version of ``distribution`` (its package metadata, else its module's ``__version__``), or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return importlib.import_module(_IMPORT_NAMES.get(distribution, distribution)).__version__
    except (ImportError, AttributeError):
        return None


def versions_line(*distributions):
    """``python X, numpy Y, dkernel Z, <distribution> V|not installed, ...``."""
    parts = [f"python {platform.python_version()}"]
    for name in dict.fromkeys(("numpy", "dkernel", *distributions)):
        found = version(name)
        parts.append(f"{name} {found}" if found else f"{name} not installed")
    return ", ".join(parts)


def print_versions(*distributions):
    """Print :func:`versions_line`: the versions the figures were measured with (numpy and dkernel always)."""
    print(versions_line(*distributions), flush=True)
