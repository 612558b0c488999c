"""One fit per fresh process: the timings a user sees, library beside library, in alternating rounds.

A user's script imports an estimator and fits once. Every benchmark that
compares dkernel with a peer times exactly that: for each library a new
Python process (``_fresh_fit.py``) imports its ``SVC``, reads the problem
from a file that this process wrote once (:func:`problem_file`; reading it
is not timed), fits, predicts and prints its figures as JSON. The libraries
take turns round by round, each round starting with the next one
(:func:`schedule`), so that a slower stretch of the machine weighs on each
alike; the figures are medians over the rounds. A library whose first fit
took longer than ``once_above`` seconds is fitted once only (its figures
are marked ``*``). A peer whose fit would take minutes may be left out and
its time extrapolated from smaller problems (:func:`extrapolate`; marked
``~``), never silently.

The libraries: dkernel (``dkernel.SVC``), scikit-learn (``sklearn.svm.SVC``,
libsvm) and oneDAL (``sklearnex.svm.SVC`` of scikit-learn-intelex, the
``bench`` extra), the last two with ``cache_size=2000`` (MB); a library
that is not installed gets the column "not installed".

Every process meets the memory a script started alone meets
(:func:`settle_memory`). On a virtual machine whose host backs the guest's
memory lazily, as this one, memory that a process freed goes back to the
host within seconds, and its next first touch is slow: touching 2 GB took
0.32–0.38 s right after another process had freed 2 GB, 1.8–4.1 s after a
pause of 2–10 s. In turns, each library would start in the memory its
predecessor left: a dkernel fit at n = 20000 (overlap, d = 20) took
1.51–1.60 s right after a process that touched 1.5 GB, 1.65–2.55 s after a
pause of 8 s. So a process whose peak passed ``SETTLE_MIN_BYTES`` is
followed by ``SETTLE_SECONDS`` of rest before the next starts
(``_timing.settle_memory``).

Each library's package has its modules' bytecode written before its first
process (:func:`compile_package`), as ``pip install`` leaves a package: a
source tree used in place, where ``PYTHONDONTWRITEBYTECODE`` is set, would
otherwise compile every module it imports in every process (12 ms of a
first fit on iris, 35 ms of its import).
"""

import compileall
import contextlib
import dataclasses
import functools
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

from _fresh_fit import save_problem  # benchmarks/_*.py, beside this script
from _timing import LAST_PROCESS, process_ended, settle_memory

__all__ = ["DKERNEL", "LIBRARIES", "ONEDAL", "SKLEARN", "FitFailed", "Library", "Outcome", "PeerTimes", "compare", "extrapolate",
           "fit_seconds", "format_table", "print_comparison", "print_imports", "problem_file", "ratio_text", "resolve_gamma",
           "run_fit", "schedule", "seconds_text", "time_cell"]

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_fresh_fit.py")


@dataclasses.dataclass(frozen=True)
class Library:
    """A library's SVC as a column: its label, the estimator a fresh process imports, its distribution."""

    label: str
    estimator: str
    distribution: str
    options: tuple = ()  # parameters of this library only, as (name, value) pairs

    def installed(self):
        """Whether the estimator's package can be imported here (looked up without importing it)."""
        return importlib.util.find_spec(self.estimator.split(".")[0]) is not None


DKERNEL = Library("dkernel", "dkernel.SVC", "dkernel")
SKLEARN = Library("sklearn", "sklearn.svm.SVC", "scikit-learn", (("cache_size", 2000),))
ONEDAL = Library("oneDAL", "sklearnex.svm.SVC", "scikit-learn-intelex", (("cache_size", 2000),))
LIBRARIES = (DKERNEL, SKLEARN, ONEDAL)
#: The distributions whose versions every comparison prints (``_provenance.print_versions``).
DISTRIBUTIONS = ("scikit-learn", "scikit-learn-intelex", "daal")


class FitFailed(Exception):
    """A fresh process that did not print its figures: the reason, from its last line of stderr."""


# --------------------------------------------------------------------------- problems
@contextlib.contextmanager
def problem_file(X_train, y_train, X_test, y_test):
    """The path of a temporary ``.npz`` file holding the problem, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="dkernel-bench-") as folder:
        yield save_problem(os.path.join(folder, "problem.npz"), X_train, y_train, X_test, y_test)


def resolve_gamma(X, gamma="scale"):
    """``gamma="scale"`` as scikit-learn resolves it, ``1 / (d · Var(X))``, dense or sparse; a number as it is.

    Resolved once here, so that every library fits with the same number.
    """
    if gamma != "scale":
        return float(gamma)
    if hasattr(X, "multiply"):
        variance = X.multiply(X).mean() - X.mean() ** 2
    else:
        variance = np.asarray(X).var()
    return float(1.0 / (X.shape[1] * variance)) if variance > 0 else 1.0


# --------------------------------------------------------------------------- fresh processes
@functools.cache
def compile_package(name):
    """Write the bytecode of package ``name``'s modules where it is missing or stale (once per benchmark)."""
    spec = importlib.util.find_spec(name)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        compileall.compile_dir(folder, quiet=2)


def run_fit(library, problem, params, *, objective=False, second_fit=False, predictions=None, timeout=1800,
            env=None, task="classification"):
    """The figures of one fresh process that fits ``library``'s SVC on ``problem`` (see ``_fresh_fit.py``).

    Raises :class:`FitFailed` when the process fails, and
    :class:`subprocess.TimeoutExpired` after ``timeout`` seconds.
    """
    compile_package(library.estimator.split(".")[0])
    spec = {"estimator": library.estimator, "problem": problem, "params": {**params, **dict(library.options)},
            "objective": objective, "second_fit": second_fit, "predictions": predictions, "task": task}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    settle_memory()
    try:
        done = subprocess.run([sys.executable, WORKER, f.name], capture_output=True, text=True, timeout=timeout,
                              env=env, check=False)
    finally:
        process_ended()  # its peak unknown until its figures are read
        os.unlink(f.name)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]  # a library may print too
    if done.returncode != 0 or not lines:
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        raise FitFailed(errors[-1].strip() if errors else f"exit status {done.returncode}")
    figures = json.loads(lines[-1])
    LAST_PROCESS.peak_bytes = figures.get("fit_peak_bytes")
    return figures


def schedule(labels, rounds):
    """The order of the libraries in each round: round r starts with the r-th (modulo their number)."""
    labels = list(labels)
    return [labels[r % len(labels):] + labels[:r % len(labels)] for r in range(rounds)]


@dataclasses.dataclass
class Outcome:
    """What the fresh processes of one library gave on one problem."""

    library: Library
    runs: list = dataclasses.field(default_factory=list)
    status: str = "ok"  # "ok", "not installed", "not run", "failed", "timed out"
    note: str = ""  # why it failed or was not run
    extrapolated: float = None  # seconds of a fit not run, extrapolated (with ``status == "not run"``)
    rounds: int = 0  # the rounds it was asked to run
    predictions: np.ndarray = None  # its test predictions (first round)

    def median(self, key):
        """The median of ``key`` over the runs (None when no run gave it)."""
        values = [run[key] for run in self.runs if run.get(key) is not None]
        return float(np.median(values)) if values else None

    def first(self, key):
        """``key`` of the first run (the objective and predictions are taken there), or None."""
        return self.runs[0].get(key) if self.runs else None

    @property
    def measured_once(self):
        return len(self.runs) == 1 and self.rounds > 1

    @property
    def fallback(self):
        """Whether oneDAL handed a call of the first run to scikit-learn (scikit-learn-intelex's own log)."""
        return any("fallback" in message for message in self.first("onedal") or ())


def compare(problem, params, *, libraries=LIBRARIES, rounds=3, once_above=30.0, timeout=1800, objective=True,
            second_fit=False, skip=None, env=None, progress=None, task="classification"):
    """``{label: Outcome}``: each library fitted on ``problem`` in its own fresh process, ``rounds`` times.

    ``params`` are given to every library (with its own ``options``);
    ``skip`` maps a label to ``(reason, extrapolated seconds or None)`` for
    a library not to run. The objective and the test predictions come from
    the first round; a failure or a timeout ends that library's rounds.
    ``progress`` (a callable taking a line of text) hears of each process.
    """
    skip = skip or {}
    outcomes = {lib.label: Outcome(lib, rounds=rounds) for lib in libraries}
    for lib in libraries:
        if not lib.installed():
            outcomes[lib.label].status = "not installed"
        elif lib.label in skip:
            outcomes[lib.label].status = "not run"
            outcomes[lib.label].note, outcomes[lib.label].extrapolated = skip[lib.label]
    with tempfile.TemporaryDirectory(prefix="dkernel-bench-out-") as out:
        for r, order in enumerate(schedule([lib.label for lib in libraries], rounds)):
            for label in order:
                outcome = outcomes[label]
                if outcome.status != "ok" or (r > 0 and outcome.runs[0]["fit_s"] > once_above):
                    continue
                saved = os.path.join(out, f"{r}-{label}.npy") if r == 0 else None
                try:
                    run = run_fit(outcome.library, problem, params, objective=objective and r == 0,
                                  second_fit=second_fit, predictions=saved, timeout=timeout, env=env, task=task)
                except FitFailed as error:
                    outcome.status, outcome.note = "failed", str(error)
                except subprocess.TimeoutExpired:
                    outcome.status, outcome.note = "timed out", f"over {timeout:g} s"
                else:
                    outcome.runs.append(run)
                    if saved:
                        outcome.predictions = np.load(saved, allow_pickle=False)
                if progress:
                    done = seconds_text(outcome.runs[-1]["fit_s"]) if outcome.status == "ok" else outcome.status
                    progress(f"round {r + 1}/{rounds} {label}: {done}")
    return outcomes


def extrapolate(measured, n):
    """A time at ``n`` from the two largest measured ``{n: seconds}``: ``(seconds, slope)`` of log t vs log n."""
    (n1, t1), (n2, t2) = sorted(measured.items())[-2:]
    slope = math.log(t2 / t1) / math.log(n2 / n1)
    return t2 * (n / n2) ** slope, slope


class PeerTimes:
    """The peers' fit times over growing sizes of one problem: which peer to leave out at the next size.

    A peer is left out at ``n`` (:meth:`skip`) when its time extrapolated
    from its two largest measured sizes passes ``max_seconds``, when ``n``
    passes ``max_n`` (its time extrapolated where it can be), or when it was
    stopped at a smaller size.
    """

    def __init__(self, max_seconds=math.inf, max_n=math.inf, max_n_option="--peer-max"):
        self.max_seconds, self.max_n, self.max_n_option = max_seconds, max_n, max_n_option
        self.times = {lib.label: {} for lib in LIBRARIES if lib.label != DKERNEL.label}
        self.stopped = set()

    def record(self, n, outcomes):
        """Keep the median fit time at ``n`` of each peer in ``outcomes`` (``{label: Outcome}``)."""
        for label, outcome in outcomes.items():
            if label == DKERNEL.label:
                continue
            if outcome.status == "ok":
                self.times[label][n] = outcome.median("fit_s")
            elif outcome.status == "timed out":
                self.stopped.add(label)

    def skip(self, n):
        """``{label: (reason, extrapolated seconds or None)}`` of the peers not to run at ``n``."""
        skip = {label: ("stopped at a smaller n", None) for label in self.stopped}
        for label, times in self.times.items():
            if label in skip:
                continue
            seconds, slope = extrapolate(times, n) if len(times) >= 2 else (None, None)
            how = f"extrapolated (t ∝ n^{slope:.2f})" if seconds else "not extrapolated (fewer than two sizes)"
            if n > self.max_n:
                skip[label] = (f"n > {self.max_n_option} {self.max_n}, {how}", seconds)
            elif seconds and seconds > self.max_seconds:
                skip[label] = (how, seconds)
        return skip


# --------------------------------------------------------------------------- cells
def seconds_text(seconds):
    """``12.34 ms`` below a second, ``1.23 s`` from there."""
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def time_cell(outcome, key="fit_s"):
    """A time of ``outcome`` as a table shows it: measured (``*`` when once), ``~`` extrapolated, or its status."""
    if outcome.status == "not installed":
        return "not installed"
    if outcome.status == "not run":
        return f"~{seconds_text(outcome.extrapolated)}" if outcome.extrapolated and key == "fit_s" else "not run"
    if outcome.status == "timed out" and not outcome.runs:
        return f">{outcome.note.split()[1]} s"
    value = outcome.median(key)
    if value is None:
        return outcome.status if outcome.status != "ok" else ""
    return seconds_text(value) + ("*" if outcome.measured_once else "") + ("!" if outcome.fallback else "")


def fit_seconds(outcome):
    """The fit time of ``outcome``, measured (median) or extrapolated; None when neither."""
    if outcome.status == "not run":
        return outcome.extrapolated
    return outcome.median("fit_s")


def ratio_text(ours, theirs):
    """``ours / theirs`` of two outcomes' fit times, ``~`` when one is extrapolated; empty when one is missing."""
    a, b = fit_seconds(ours), fit_seconds(theirs)
    if a is None or b is None or b <= 0:
        return ""
    approximate = "not run" in (ours.status, theirs.status)
    return ("~" if approximate else "") + f"{a / b:.2f}"


#: The marks a time cell may carry, explained under every table that has them.
LEGEND = ("*: fitted once (its first fit took longer than the once-above limit); ~: not run, extrapolated from "
          "smaller problems (log t against log n); >T s: stopped after T seconds; !: oneDAL handed the call to "
          "scikit-learn (its fallback)")


def format_table(columns, rows):
    """Lines of a fixed-width table: ``columns`` are ``(label, width, "<" or ">")``; two spaces between columns.

    Every cell fits its column (a column widens to its longest cell), so
    that ``_readme.py`` reads the table back cell by cell.
    """
    widths = [max([len(label), width, *(len(str(row[k])) for row in rows)]) for k, (label, width, _) in
              enumerate(columns)]

    def line(cells):
        return "  ".join(f"{cell!s:{align}{w}}" for cell, (_, _, align), w in zip(cells, columns, widths)).rstrip()

    return [line([label for label, _, _ in columns]), *(line(row) for row in rows)]


# --------------------------------------------------------------------------- tables
def _accuracy(outcome):
    value = outcome.first("accuracy")
    return "" if value is None else f"{value:.4f}"


def _same(outcome, reference):
    if outcome.predictions is None or reference.predictions is None:
        return ""
    return f"{np.mean(outcome.predictions == reference.predictions):.4f}"


def _objective_gap(outcome, reference):
    ours, theirs = reference.first("objective"), outcome.first("objective")
    if ours is None or theirs is None:
        return ""
    return f"{abs(ours - theirs) / max(abs(theirs), 1e-12):.1e}"


def _peak(outcome):
    value = outcome.first("fit_peak_bytes")
    return "" if value is None else f"{value / 1e9:.2f}"


def print_comparison(title, results, rounds, second_fit=False):
    """The fit, test-set and solution tables of ``results``: ``[(problem, n, n_test, {label: Outcome})]``.

    The fit table's columns are named by the libraries' labels, its ratios
    ``dk/sk`` and ``dk/oneDAL`` (``_readme.py`` reads them back for the
    summary). A library that failed, or a peer not run for a reason other
    than an extrapolation, is named below the tables with the reason.
    """
    dk, sk, od = (lib.label for lib in LIBRARIES)
    short = {dk: "dk", sk: "sk", od: "oneDAL"}
    fit_columns = [("problem", 34, "<"), ("n", 6, ">"), (dk, 10, ">"), (sk, 10, ">"), (od, 13, ">"),
                   ("dk/sk", 6, ">"), ("dk/oneDAL", 9, ">")]
    if second_fit:
        fit_columns += [(f"2nd fit {short[name]}, same process", 10, ">") for name in (dk, sk, od)]
    fits, tests, solutions = [], [], []
    for label, n, n_test, o in results:
        row = [label, n, *(time_cell(o[name]) for name in (dk, sk, od)), ratio_text(o[dk], o[sk]),
               ratio_text(o[dk], o[od])]
        fits.append(row + ([time_cell(o[name], "second_fit_s") for name in (dk, sk, od)] if second_fit else []))
        tests.append([label, n_test, *(time_cell(o[name], "predict_s") for name in (dk, sk, od)),
                      *(time_cell(o[name], "decision_s") for name in (dk, sk, od))])
        objective = o[dk].first("objective")
        solutions.append([label, *(_accuracy(o[name]) for name in (dk, sk, od)), _same(o[dk], o[sk]),
                          _same(o[od], o[sk]), *(o[name].first("n_support") or "" for name in (dk, sk, od)),
                          "" if objective is None else f"{objective:.6g}", _objective_gap(o[sk], o[dk]),
                          _objective_gap(o[od], o[dk]), *(_peak(o[name]) for name in (dk, sk, od)),
                          o[dk].first("gram") or ""])
    how = f"median of {rounds} rounds, alternating" if rounds > 1 else "one round"
    print(f"\n## {title}: fit, one per fresh process ({how})")
    print("\n".join(format_table(fit_columns, fits)))
    if any(cell.endswith(("*", "!")) or cell.startswith(("~", ">")) for row in fits for cell in map(str, row[2:])):
        print(LEGEND)
    print(f"\n## {title}: predict and decision_function on the test set, after the fit in the same process")
    print("\n".join(format_table([("problem", 34, "<"), ("n test", 6, ">"),
                                  *((f"predict {short[name]}", 10, ">") for name in (dk, sk, od)),
                                  *((f"decision {short[name]}", 11, ">") for name in (dk, sk, od))], tests)))
    print(f"\n## {title}: the solutions (first round)")
    print("\n".join(format_table([("problem", 34, "<"), *((f"acc {short[name]}", 6, ">") for name in (dk, sk, od)),
                                  ("same pred dk", 6, ">"), ("same pred oneDAL", 6, ">"),
                                  *((f"nSV {short[name]}", 6, ">") for name in (dk, sk, od)),
                                  ("objective dk", 12, ">"), ("rel diff sk", 9, ">"), ("rel diff oneDAL", 9, ">"),
                                  *((f"peak GB {short[name]}", 7, ">") for name in (dk, sk, od)),
                                  ("dk Gram", 9, "<")], solutions)))
    print("same pred: the fraction of test predictions equal to sklearn's; rel diff: |objective - dk's| / "
          "|objective| (equal dual objectives: the same problem solved); peak GB: the process's peak resident "
          "memory during the fit, data included", flush=True)
    for label, _, _, o in results:
        for name, outcome in o.items():
            if outcome.status in ("failed", "timed out") or (outcome.status == "not run"
                                                             and "left out" not in outcome.note):
                print(f"{label}: {name} {outcome.status}: {outcome.note}", flush=True)


def print_imports(results):
    """The import of each library's SVC, over every fresh process of this run."""
    rows = []
    for lib in LIBRARIES:
        times = [run["import_s"] for _, _, _, o in results for run in o[lib.label].runs]
        if times:
            rows.append([lib.label, lib.estimator, len(times), seconds_text(float(np.median(times))),
                         seconds_text(min(times)), seconds_text(max(times))])
    if not rows:
        return
    print("\n## import of the SVC class in a fresh process, apart from the fits above (every process of this run)")
    print("\n".join(format_table([("library", 8, "<"), ("estimator", 18, "<"), ("processes", 9, ">"),
                                  ("median", 10, ">"), ("min", 10, ">"), ("max", 10, ">")], rows)), flush=True)
