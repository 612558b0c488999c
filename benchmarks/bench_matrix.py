"""dkernel.SVC against scikit-learn (libsvm) and oneDAL over a matrix of problems: one fit per fresh process.

Every figure is what a user's script sees: a new Python process imports
one library's ``SVC``, fits once, predicts the test set (``_fresh.py``,
``_fresh_fit.py``). The libraries take turns round by round (``--rounds``,
median over rounds; ``--tiny-rounds`` for the tiny sets); the data are
prepared once and handed to each process in a file whose reading is not
timed. The columns: dkernel (``dkernel.SVC``), sklearn (``sklearn.svm.SVC``)
and oneDAL (``sklearnex.svm.SVC``, scikit-learn-intelex: ``pip install
dkernel[bench]``; "not installed" otherwise), sklearn and oneDAL with
``cache_size=2000``; all with the same kernel, ``gamma`` (resolved once,
``"scale"`` as scikit-learn does), ``C`` and ``tol=1e-3``. Per part three
tables: the fit times and the ratios dk/sk and dk/oneDAL (below 1 when
dkernel is faster); the test set's ``predict`` and ``decision_function``
times; the solutions (test accuracy, agreement of the test predictions
with sklearn's, support vectors, the dual objective ``½ cᵀKc − Σ|c|``
computed alike for all from ``dual_coef_``, and how dkernel held its Gram).
The import is timed apart (a table of its own at the end). A fit that took
longer than ``--once-above`` seconds is not repeated (``*``); a peer whose
fit is extrapolated above ``--peer-max-seconds`` on the synthetic data is
not run, its time extrapolated from the two smaller sizes (``~``). The run
ends with the targets and whether each holds.

The parts (``--only`` runs a subset, ``--match TEXT`` the problems whose
name holds TEXT):

``tiny``
    iris, breast cancer (wdbc), three pairs of digits: fixed costs
    dominate (target: a dkernel fit ≤ 50 ms).
``usps``
    USPS, 7291 × 256, 10 classes, RBF γ = 1/32, C = 5 (target: ≤ 0.7 ×
    sklearn; ``dkernel.datasets``, ``DKERNEL_DATA``, skipped with the reason
    when the files are absent).
``news``
    20 Newsgroups subsets as sparse tf-idf (two and four groups), RBF
    γ = 1, C = 10 (skipped when absent).
``synthetic``
    ``make_classification`` at n ∈ {5000, 12000, 20000, 40000}
    (``--max-n`` caps it), 2000 test points, six variants per n: the three
    class separations (apart: few support vectors; overlap; noisy: most
    points) crossed with d from 10 to 256, dense and sparse (the sparse
    ones keep their 16 informative features and 5 % of the others: 11 % of
    the entries). Target at
    n ≥ 12000: faster than oneDAL and ≤ 0.5 × sklearn, accuracy within
    0.5 %. Left out: the full cross of separations × d × density (24
    problems per n: hours); sklearn's largest fits (extrapolated, marked ``~``).
``install``
    The first fit right after ``pip install``: this checkout installed
    once into a temporary folder (``pip install --no-deps --target``: built,
    compiled parts included, as a user's install; not timed), then per round
    a copy of that installation imported by a first fresh process and by the
    next one, dkernel only, on iris and a 2000-point problem: import and fit
    of each, and the difference (target: ≤ 1 s). Left out by ``--quick``
    (the build takes minutes).

To record, on a quiet machine (nothing else running; 2 cores, about 12 GB
free) and a committed tree with scikit-learn-intelex installed, run the
first command below (about 35–60 minutes) and save its whole output as
``benchmarks/results/bench_matrix.txt``; then ``python benchmarks/_readme.py``.
Progress goes to stderr.

    python benchmarks/bench_matrix.py > benchmarks/results/bench_matrix.txt     # everything
    python benchmarks/bench_matrix.py --quick                # a smoke run of about a minute
    python benchmarks/bench_matrix.py --only tiny usps       # a subset
    python benchmarks/bench_matrix.py --only synthetic --max-n 12000 --second-fit
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, make_classification
from sklearn.model_selection import train_test_split

from _fresh import (DISTRIBUTIONS, DKERNEL, LIBRARIES, FitFailed, PeerTimes, compare, fit_seconds,
                    format_table, print_comparison, print_imports, problem_file, resolve_gamma, run_fit,
                    seconds_text)
from _provenance import print_header, print_versions  # benchmarks/_*.py, beside this script

MEASURES = (  # the code these figures depend on: re-run and record when one changes
    "dkernel/__init__.py",
    "dkernel/svm",
    "dkernel/solver",
    "dkernel/gram",
    "dkernel/kernels",
    "dkernel/views",
    "dkernel/_runtime",
    "pyproject.toml",
    "setup.py",
    "src",
    "benchmarks/_fresh.py",
    "benchmarks/_fresh_fit.py",
)

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ("tiny", "usps", "news", "synthetic", "install")
SYNTHETIC_N = (5000, 12000, 20000, 40000)
N_TEST = 2000
#: label: (class_sep, flip_y): from few to most training points as support vectors.
SEPARATIONS = {"apart": (2.5, 0.0), "overlap": (1.0, 0.1), "noisy": (0.3, 0.4)}
#: The synthetic variants at every n: (separation, d, "dense" or "sparse").
VARIANTS = (("apart", 10, "dense"), ("overlap", 20, "dense"), ("noisy", 64, "dense"),
            ("apart", 256, "sparse"), ("overlap", 256, "dense"), ("noisy", 256, "sparse"))
#: The fraction of non-informative features kept in a sparse variant.
SPARSE_DENSITY = 0.05
#: Targets: a tiny fit (s), USPS's ratio to sklearn, the synthetic ratio to sklearn at n >= TARGET_N,
#: the accuracy gap, the extra seconds of the first fit after installing.
TINY_SECONDS, USPS_RATIO, SYNTHETIC_RATIO, TARGET_N, ACCURACY_GAP, INSTALL_SECONDS = 0.05, 0.7, 0.5, 12000, 0.005, 1.0


class Skip(Exception):
    """A problem that cannot run here, with the reason."""


# --------------------------------------------------------------------------- problems
def split(X, y, seed=0):
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def tiny_problems():
    X, y = load_iris(return_X_y=True)
    yield "iris (150 x 4, 3 classes)", split(X, y), {"gamma": "scale", "C": 1.0}
    X, y = load_breast_cancer(return_X_y=True)
    yield "wdbc (569 x 30)", split((X - X.mean(axis=0)) / X.std(axis=0), y), {"gamma": "scale", "C": 1.0}
    X, y = load_digits(return_X_y=True)
    for a, b in ((3, 8), (1, 7), (4, 9)):
        pair = (y == a) | (y == b)
        yield f"digits {a} vs {b} (8x8)", split(X[pair] / 16.0, y[pair]), {"gamma": "scale", "C": 1.0}


def _dataset(name, **options):
    from dkernel.datasets import DatasetNotFoundError, load

    try:
        return load(name, download=False, **options)
    except (DatasetNotFoundError, FileNotFoundError, OSError) as error:
        raise Skip(f"{name} data not found ({error}); set DKERNEL_DATA to the data folder") from None


def usps_problems():
    label = "usps (7291 x 256, 10 classes)"
    try:
        d = _dataset("usps")
    except Skip as skip:
        yield label, skip, None
        return
    yield label, (d.X, d.X_test, d.y, d.y_test), {"gamma": 1 / 32, "C": 5.0}


NEWS_SUBSETS = (
    ("alt.atheism", "soc.religion.christian"),
    ("comp.graphics", "rec.autos", "sci.med", "talk.politics.guns"),
)


def news_problems(subsets=NEWS_SUBSETS):
    for groups in subsets:
        try:
            d = _dataset("20newsgroups", categories=list(groups), remove=("headers", "footers", "quotes"))
        except Skip as skip:
            yield f"20news {len(groups)} groups (tf-idf)", skip, None
            continue
        label = f"20news {len(groups)} groups ({d.X.shape[0]} x {d.X.shape[1]} sparse)"
        yield label, (d.X, d.X_test, d.y, d.y_test), {"gamma": 1.0, "C": 10.0}


def synthetic_problem(n, separation, d, density, n_test=N_TEST):
    """A ``make_classification`` problem: ``(X_train, X_test, y_train, y_test)``, CSR when ``density`` is sparse."""
    sep, flip = SEPARATIONS[separation]
    informative = min(d, 10 if d <= 20 else 16)
    X, y = make_classification(n_samples=n + n_test, n_features=d, n_informative=informative, n_redundant=0,
                               class_sep=sep, flip_y=flip, shuffle=False, random_state=n + d)
    rng = np.random.default_rng(n + d)
    order = rng.permutation(n + n_test)  # shuffle=False leaves the samples sorted by class
    X, y = X[order], y[order]
    if density == "sparse":  # the informative features (first: shuffle=False) kept, 5 % of the others
        X[:, informative:] *= rng.random((n + n_test, d - informative)) < SPARSE_DENSITY
        X = sp.csr_matrix(X)
    return X[:n], X[n:], y[:n], y[n:]


def synthetic_label(n, separation, d, density):
    return f"n={n} {separation} d={d} {density}"


# --------------------------------------------------------------------------- one part
def _progress(label):
    return lambda line: print(f"[{label}] {line}", file=sys.stderr, flush=True)


def run_problem(label, data, params, args, skip=None, rounds=None):
    """``{library: Outcome}`` of one problem, each library in its own fresh processes."""
    X_tr, X_te, y_tr, y_te = data
    params = {"kernel": "rbf", "tol": 1e-3, **params, "gamma": resolve_gamma(X_tr, params.get("gamma", "scale"))}
    skip = {**{lib.label: (f"left out (--libraries {' '.join(args.libraries)})", None) for lib in LIBRARIES
               if lib.label not in args.libraries}, **(skip or {})}
    with problem_file(X_tr, y_tr, X_te, y_te) as path:
        return compare(path, params, rounds=rounds or args.rounds, once_above=args.once_above,
                       timeout=args.timeout, second_fit=args.second_fit, skip=skip, progress=_progress(label))


def run_part(title, problems, args, rounds=None):
    """Fit each problem (a :class:`Skip` is printed with its reason), print the part's tables; its results."""
    results, skipped = [], []
    for label, data, params in problems:
        if args.match and args.match not in label:
            continue
        if isinstance(data, Skip):
            skipped.append(f"{label}: skipped: {data}")
            continue
        results.append((label, data[0].shape[0], data[1].shape[0], run_problem(label, data, params, args,
                                                                               rounds=rounds)))
    if results:
        print_comparison(title, results, rounds or args.rounds, second_fit=args.second_fit)
    for line in skipped:
        print(line, flush=True)
    return results


def run_synthetic(args, sizes, variants):
    """The synthetic part: peers beyond ``--peer-max-seconds`` (extrapolated from smaller n) are not run."""
    peers = {variant: PeerTimes(max_seconds=args.peer_max_seconds) for variant in variants}
    results = []
    for n in sizes:
        for variant in variants:
            label = synthetic_label(n, *variant)
            if args.match and args.match not in label:
                continue
            data = synthetic_problem(n, *variant, n_test=min(N_TEST, n))
            outcomes = run_problem(label, data, {"gamma": "scale", "C": 1.0}, args, skip=peers[variant].skip(n))
            peers[variant].record(n, outcomes)
            results.append((label, n, data[1].shape[0], outcomes))
    if results:
        print_comparison("synthetic, make_classification, RBF gamma='scale', C=1", results, args.rounds,
                         second_fit=args.second_fit)
    return results


def pip_install(folder, timeout):
    """Install this checkout of dkernel into ``folder`` as a user would (``pip install --no-deps --target``).

    pip builds the package in its own isolated environment, compiled parts
    included, and byte-compiles it; dkernel's dependencies are this
    environment's. Raises ``RuntimeError`` with pip's last line of errors.
    """
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", folder,
                           os.path.dirname(HERE)], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"pip install failed: {lines[-1] if lines else done.returncode}")


def install_runs(label, data, params, site, args):
    """``{"after install": [runs], "later": [runs]}`` of dkernel installed in ``site``.

    Each round copies the untouched installation, runs the first process
    that imports it (whatever it caches on the way, such as numba's
    compiled functions, is written then) and the next one.
    """
    X_tr, X_te, y_tr, y_te = data
    runs = {"after install": [], "later": []}
    with problem_file(X_tr, y_tr, X_te, y_te) as path, tempfile.TemporaryDirectory(prefix="dkernel-site-") as tmp:
        for r in range(args.rounds):
            copy = shutil.copytree(site, os.path.join(tmp, f"round-{r}"))
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (copy, os.environ.get("PYTHONPATH"))))}
            for state in ("after install", "later"):
                run = run_fit(DKERNEL, path, params, timeout=args.timeout, env=env)
                if not run["module_file"].startswith(copy):
                    raise RuntimeError(f"the process imported dkernel from {run['module_file']}, not from {copy}")
                runs[state].append(run)
                _progress(label)(f"round {r + 1}/{args.rounds} {state}: import "
                                 f"{seconds_text(run['import_s'])}, fit {seconds_text(run['fit_s'])}")
            shutil.rmtree(copy)
    return runs


def run_install(args, problems):
    """dkernel's first fit right after ``pip install`` against the next fresh process."""
    problems = [(label, data, params) for label, data, params in problems if not args.match or args.match in label]
    if not problems:
        return []
    rows, results = [], []
    with tempfile.TemporaryDirectory(prefix="dkernel-install-") as site:
        try:
            pip_install(site, args.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"\ndkernel right after install: skipped: {error}", flush=True)
            return []
        for label, data, params in problems:
            params = {"kernel": "rbf", "tol": 1e-3, **params, "gamma": resolve_gamma(data[0], params["gamma"])}
            try:
                runs = install_runs(label, data, params, site, args)
            except (FitFailed, RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"{label}: dkernel right after install failed: {error}", flush=True)
                continue
            med = {state: {key: float(np.median([run[key] for run in values])) for key in ("import_s", "fit_s")}
                   for state, values in runs.items()}
            extra = sum(med["after install"].values()) - sum(med["later"].values())
            rows.append([label, *(seconds_text(med[state][key]) for state in ("after install", "later")
                                  for key in ("import_s", "fit_s")), f"{extra:+.2f} s"])
            results.append((label, extra))
    if rows:
        how = f"median of {args.rounds} installations" if args.rounds > 1 else "one installation"
        print(f"\n## dkernel right after pip install: the first fresh process, and the next ({how})")
        print("\n".join(format_table([("problem", 34, "<"), ("import after install", 10, ">"),
                                      ("fit after install", 10, ">"), ("import later", 10, ">"),
                                      ("fit later", 10, ">"), ("extra, import + fit", 10, ">")], rows)), flush=True)
    return results


# --------------------------------------------------------------------------- the whole run
def _worst(pairs, larger_is_worse=True):
    """``(label, value)`` of the worst pair, as ``"value (label)"``."""
    label, value = (max if larger_is_worse else min)(pairs, key=lambda pair: pair[1])
    return f"{value:.3g} ({label})"


def _fit(outcomes, name):
    return fit_seconds(outcomes[name])


def target_rows(parts):
    """``[target, problems, met, worst]`` for each target that the run measured."""
    rows = []

    def add(target, checks):
        if checks:
            rows.append([target, len(checks), sum(ok for _, _, ok in checks),
                         _worst([(label, value) for label, value, _ in checks])])

    tiny = [(label, _fit(o, "dkernel"), _fit(o, "dkernel") <= TINY_SECONDS)
            for label, _, _, o in parts.get("tiny", ()) if _fit(o, "dkernel") is not None]
    add(f"tiny: a dkernel fit <= {TINY_SECONDS * 1e3:.0f} ms (seconds)", tiny)
    usps = [(label, _fit(o, "dkernel") / _fit(o, "sklearn"), _fit(o, "dkernel") / _fit(o, "sklearn") <= USPS_RATIO)
            for label, _, _, o in parts.get("usps", ()) if _fit(o, "dkernel") and _fit(o, "sklearn")]
    add(f"usps: dkernel / sklearn <= {USPS_RATIO}", usps)
    large = [(label, o) for label, n, _, o in parts.get("synthetic", ()) if n >= TARGET_N]
    for peer, bound, text in (("oneDAL", 1.0, "< 1"), ("sklearn", SYNTHETIC_RATIO, f"<= {SYNTHETIC_RATIO}")):
        checks = [(label, _fit(o, "dkernel") / _fit(o, peer), _fit(o, "dkernel") / _fit(o, peer) <= bound)
                  for label, o in large if _fit(o, "dkernel") and _fit(o, peer)]
        add(f"synthetic n >= {TARGET_N}: dkernel / {peer} {text}", checks)
    gaps = []
    for part in ("tiny", "usps", "news", "synthetic"):
        for label, _, _, o in parts.get(part, ()):
            for peer in ("sklearn", "oneDAL"):
                ours, theirs = o["dkernel"].first("accuracy"), o[peer].first("accuracy")
                if ours is not None and theirs is not None:
                    gaps.append((f"{label}, {peer}", abs(ours - theirs), abs(ours - theirs) <= ACCURACY_GAP))
    add(f"accuracy: |dkernel - peer| <= {ACCURACY_GAP}", gaps)
    add(f"install: first fit after install - later fit <= {INSTALL_SECONDS:g} s (seconds)",
        [(label, extra, extra <= INSTALL_SECONDS) for label, extra in parts.get("install", ())])
    return rows


def print_targets(parts):
    rows = target_rows(parts)
    if rows:
        print("\n## targets: how many problems meet each, and the worst (ratios of fresh-process fits; "
              "~ extrapolated times count)")
        print("\n".join(format_table([("target", 50, "<"), ("problems", 8, ">"), ("met", 4, ">"),
                                      ("worst", 12, "<")], rows)), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS), help="the parts to run")
    parser.add_argument("--match", default=None, help="only the problems whose name holds this text")
    parser.add_argument("--max-n", type=int, default=max(SYNTHETIC_N), help="largest synthetic training set")
    parser.add_argument("--libraries", nargs="+", choices=[lib.label for lib in LIBRARIES],
                        default=[lib.label for lib in LIBRARIES], help="the libraries to fit (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per library and problem (median)")
    parser.add_argument("--tiny-rounds", type=int, default=5, help="rounds of the tiny sets (default: 5)")
    parser.add_argument("--once-above", type=float, default=30.0,
                        help="a library whose first fit took longer is not fitted again (seconds, default: 30)")
    parser.add_argument("--peer-max-seconds", type=float, default=120.0,
                        help="a peer whose synthetic fit extrapolates above this is not run (default: 120)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a process is stopped")
    parser.add_argument("--second-fit", action="store_true",
                        help="also time a second fit in the same process (a column of its own)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run of about a minute: one round of iris, 20 Newsgroups' two groups and two "
                             "synthetic problems at n = 2000 (no USPS, no install)")
    args = parser.parse_args(argv)
    if min(args.rounds, args.tiny_rounds) < 1:
        parser.error("--rounds and --tiny-rounds must be at least 1")
    if args.quick:
        args.rounds = args.tiny_rounds = 1
    print_header()
    print_versions(*DISTRIBUTIONS)
    sizes = (2000,) if args.quick else tuple(n for n in SYNTHETIC_N if n <= args.max_n)
    variants = (VARIANTS[1], VARIANTS[5]) if args.quick else VARIANTS
    parts = {}
    if "tiny" in args.only:
        problems = list(tiny_problems())[:1] if args.quick else tiny_problems()
        parts["tiny"] = run_part("tiny sets, RBF gamma='scale', C=1", problems, args, rounds=args.tiny_rounds)
    if "usps" in args.only and not args.quick:
        parts["usps"] = run_part("USPS, RBF gamma=1/32, C=5", usps_problems(), args)
    if "news" in args.only:
        problems = news_problems(NEWS_SUBSETS[:1] if args.quick else NEWS_SUBSETS)
        parts["news"] = run_part("20 Newsgroups, tf-idf, RBF gamma=1, C=10", problems, args)
    if "synthetic" in args.only:
        parts["synthetic"] = run_synthetic(args, sizes, variants)
    if "install" in args.only and not args.quick:
        X, y = load_iris(return_X_y=True)
        problems = [("iris (150 x 4, 3 classes)", split(X, y), {"gamma": "scale", "C": 1.0}),
                    (synthetic_label(2000, "overlap", 20, "dense"), synthetic_problem(2000, "overlap", 20, "dense"),
                     {"gamma": "scale", "C": 1.0})]
        parts["install"] = run_install(args, problems)
    print_imports([r for name, part in parts.items() if name != "install" for r in part])
    print_targets(parts)


if __name__ == "__main__":
    main()
