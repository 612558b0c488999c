"""dkernel.SVC against sklearn.svm.SVC (libsvm) over a matrix of problems, side by side in one process.

Each problem is fitted by both estimators in turn (the order alternating),
at least ``--repeats`` times and until each estimator's fits add up to
``--min-seconds`` (at most :data:`MAX_ROUNDS` rounds: a fit of a few
milliseconds is timed many times, its median steady against the machine's
noise), and the median wall times are compared: the ratio is
dkernel / scikit-learn, below 1 when dkernel is faster. Both use the same
kernel, ``C`` and ``tol=1e-3``; scikit-learn gets ``cache_size=2000`` (MB).
Printed per problem: the times, their ratio, test accuracies, support
vectors and the dual objectives summed over the binary problems
(``½ cᵀKc − Σ|c|`` from scikit-learn's ``dual_coef_``).

The parts (``--only`` runs a subset):

``tiny``
    iris, breast cancer (wdbc), pairs of digits and a 6-point toy: fixed
    costs dominate.
``usps``
    USPS, 7291 × 256, 10 classes, RBF γ = 1/32, C = 5 (``dkernel.datasets``,
    ``DKERNEL_DATA``; skipped with the reason when the files are absent).
``news``
    20 Newsgroups subsets as sparse tf-idf (a pair and four groups), RBF
    γ = 1, C = 10 (skipped when absent).
``synthetic``
    ``make_classification`` at n ∈ {5000, 12000, 20000, 50000} (``--max-n``
    caps it) with three class separations and label-flip rates, from few to
    most points as support vectors.
``fresh``
    A new process that imports the estimator and fits iris, or USPS, once:
    the import and the first fit (numba loads its compiled code then), median
    of ``--fresh-runs`` processes of each estimator, the two alternating; the
    ratio of the first fits.

    python benchmarks/bench_matrix.py                       # everything
    python benchmarks/bench_matrix.py --only tiny usps      # a subset
    python benchmarks/bench_matrix.py --only synthetic --max-n 12000
"""

import argparse
import subprocess
import sys

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, make_classification
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC as LibSVC

from dkernel import SVC
from dkernel.kernels import RBFKernel
from _provenance import print_header  # benchmarks/_*.py, beside this script
from _timing import timed

MEASURES = (  # the modules these figures depend on: re-run and record when one changes
    "dkernel/__init__.py",
    "dkernel/svm",
    "dkernel/solver",
    "dkernel/gram/_sources.py",
    "dkernel/gram/_in_memory.py",
    "dkernel/gram/_on_demand_compiled.py",
    "dkernel/gram/_on_the_fly.py",
    "dkernel/kernels/_mirror_compiled.py",
    "dkernel/kernels",
    "dkernel/kernels/_rbf_map.py",
    "dkernel/kernels/_rbf_exp.py",
    "dkernel/kernels/_rbf_compiled.py",
    "dkernel/kernels/_products.py",
    "dkernel/_runtime/jit.py",
    "dkernel/_runtime/memory.py",
    "dkernel/views/_operators.py",
    "dkernel/_runtime/client.py",
    "dkernel/_runtime/validation.py",
)

PARTS = ("tiny", "usps", "news", "synthetic", "fresh")
SYNTHETIC_N = (5000, 12000, 20000, 50000)
#: (label, class_sep, flip_y): from few to most training points as support vectors.
SEPARATIONS = (("apart", 2.5, 0.0), ("overlap", 1.0, 0.1), ("noisy", 0.3, 0.4))


class Skip(Exception):
    """A problem that cannot run here, with the reason."""


# --------------------------------------------------------------------------- problems
def split(X, y, seed=0):
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def tiny_problems():
    X, y = load_iris(return_X_y=True)
    yield "iris (150 x 4, 3 classes)", (*split(X, y),), dict(gamma="scale", C=1.0)
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    yield "wdbc (569 x 30)", (*split(X, y),), dict(gamma="scale", C=1.0)
    X, y = load_digits(return_X_y=True)
    for a, b in ((3, 8), (1, 7), (4, 9)):
        pair = (y == a) | (y == b)
        yield f"digits {a} vs {b} (8x8)", (*split(X[pair] / 16.0, y[pair]),), dict(gamma="scale", C=1.0)
    X = np.array([[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]], dtype=float)
    y = np.array([1, 1, 1, 2, 2, 2])
    yield "toy (6 x 2)", (X, X, y, y), dict(gamma="scale", C=1.0)


def _dataset(name, **options):
    from dkernel.datasets import DatasetNotFoundError, load

    try:
        return load(name, download=False, **options)
    except (DatasetNotFoundError, FileNotFoundError, OSError) as error:
        raise Skip(f"{name} data not found ({error}); set DKERNEL_DATA to the data folder") from None


def usps_problems():
    try:
        d = _dataset("usps")
    except Skip as skip:
        yield "usps (7291 x 256, 10 classes)", skip, None
        return
    yield "usps (7291 x 256, 10 classes)", (d.X, d.X_test, d.y, d.y_test), dict(gamma=1 / 32, C=5.0)


NEWS_SUBSETS = (
    ("alt.atheism", "soc.religion.christian"),
    ("comp.graphics", "rec.autos", "sci.med", "talk.politics.guns"),
)


def news_problems():
    for groups in NEWS_SUBSETS:
        label = f"20news {len(groups)} groups (tf-idf)"
        try:
            d = _dataset("20newsgroups", categories=list(groups), remove=("headers", "footers", "quotes"))
        except Skip as skip:
            yield label, skip, None
            continue
        label = f"20news {len(groups)} groups ({d.X.shape[0]} x {d.X.shape[1]} sparse)"
        yield label, (d.X, d.X_test, d.y, d.y_test), dict(gamma=1.0, C=10.0)


def synthetic_problems(max_n):
    for n in SYNTHETIC_N:
        if n > max_n:
            continue
        for label, sep, flip in SEPARATIONS:
            X, y = make_classification(n_samples=n + 2000, n_features=20, n_informative=10, class_sep=sep,
                                       flip_y=flip, random_state=n)
            yield f"make_classification n={n} {label}", (X[:n], X[n:], y[:n], y[n:]), dict(gamma="scale", C=1.0)


# --------------------------------------------------------------------------- measures
def libsvm_dual_objective(clf, X_train, kernel):
    """Σ over the one-vs-one problems of ½ cᵀKc − Σ|c|, from scikit-learn's ``dual_coef_`` layout."""
    sv = X_train[clf.support_]
    K = kernel(sv, sv)
    dual_coef = clf.dual_coef_.toarray() if hasattr(clf.dual_coef_, "toarray") else clf.dual_coef_  # sparse after a sparse fit
    start = np.concatenate([[0], np.cumsum(clf.n_support_)])
    n_classes = clf.n_support_.shape[0]
    total = 0.0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            rows = np.r_[start[i]:start[i + 1], start[j]:start[j + 1]]
            c = np.concatenate([dual_coef[j - 1, start[i]:start[i + 1]], dual_coef[i, start[j]:start[j + 1]]])
            total += 0.5 * c @ K[np.ix_(rows, rows)] @ c - np.abs(c).sum()
    return float(total)


def dense_kernel(gamma):
    rbf = RBFKernel(gamma=gamma)
    return lambda A, B: np.asarray(rbf.block(A, B))


#: Rounds of fits at most per problem, however short its fits.
MAX_ROUNDS = 51


def compare(data, params, repeats, min_seconds):
    """Median times of both estimators, fitted alternately, and what each found."""
    X_tr, X_te, y_tr, y_te = data
    make = {
        "dkernel": lambda: SVC(kernel="rbf", tol=1e-3, **params),
        "sklearn": lambda: LibSVC(kernel="rbf", tol=1e-3, cache_size=2000, **params),
    }
    times = {name: [] for name in make}
    models = {}
    r = 0
    while r < repeats or (r < MAX_ROUNDS and min(sum(t) for t in times.values()) < min_seconds):
        for name in (("dkernel", "sklearn") if r % 2 == 0 else ("sklearn", "dkernel")):
            models[name], seconds = timed(lambda: make[name]().fit(X_tr, y_tr))
            times[name].append(seconds)
        r += 1
    dk, sk = models["dkernel"], models["sklearn"]
    kernel = dense_kernel(sk._gamma)
    return {
        "dk_s": float(np.median(times["dkernel"])),
        "sk_s": float(np.median(times["sklearn"])),
        "dk_acc": dk.score(X_te, y_te),
        "sk_acc": sk.score(X_te, y_te),
        "dk_nsv": int(dk.support_.shape[0]),
        "sk_nsv": int(sk.support_.shape[0]),
        "dk_obj": float(dk.objective_.sum()),
        "sk_obj": libsvm_dual_objective(sk, X_tr, kernel),
        "n": X_tr.shape[0],
        "fits": r,
    }


HEADER = (f"{'problem':<44} {'dkernel':>9} {'sklearn':>9} {'ratio':>6} {'acc dk':>7} {'acc sk':>7} "
          f"{'nSV dk':>7} {'nSV sk':>7} {'obj dk':>12} {'obj sk':>12} {'rel diff':>9} {'fits':>5}")


def print_row(label, r):
    rel = abs(r["dk_obj"] - r["sk_obj"]) / max(abs(r["sk_obj"]), 1e-12)
    print(f"{label:<44} {_time(r['dk_s']):>9} {_time(r['sk_s']):>9} {r['dk_s'] / r['sk_s']:>6.2f} "
          f"{r['dk_acc']:>7.4f} {r['sk_acc']:>7.4f} {r['dk_nsv']:>7} {r['sk_nsv']:>7} "
          f"{r['dk_obj']:>12.4f} {r['sk_obj']:>12.4f} {rel:>9.1e} {r['fits']:>5}", flush=True)


def _time(seconds):
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def run_table(title, problems, repeats, min_seconds):
    print(f"\n## {title} (median of at least {repeats} fits each and {min_seconds:g} s of fits, alternating)")
    print(HEADER)
    for label, data, params in problems:
        if isinstance(data, Skip):
            print(f"{label:<44} skipped: {data}", flush=True)
            continue
        print_row(label, compare(data, params, repeats, min_seconds))


# --------------------------------------------------------------------------- fresh process
FRESH_SCRIPT = """
import time
start = time.perf_counter()
from {module} import SVC
imported = time.perf_counter()
{load}
loaded = time.perf_counter()
SVC(kernel="rbf", {params}).fit(X, y)
done = time.perf_counter()
print(imported - start, done - loaded)
"""

#: The problems of the fresh-process part: (label, code that sets X and y, SVC parameters).
FRESH_PROBLEMS = (
    ("iris", "from sklearn.datasets import load_iris\nX, y = load_iris(return_X_y=True)", ""),
    ("usps (7291 x 256, 10 classes)",
     "from dkernel.datasets import load\nd = load('usps')\nX, y = d.X, d.y", "gamma=1 / 32, C=5.0"),
)


def fresh_process(module, load, params):
    """(import seconds, first-fit seconds) of a new process that imports ``module``'s SVC and fits once."""
    script = FRESH_SCRIPT.format(module=module, load=load, params=params)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return [float(v) for v in out.split()]


def fresh_processes(modules, load, params, runs):
    """``{module: median (import seconds, first-fit seconds)}`` over ``runs`` new processes each, the modules
    alternating (so that a slower stretch of the machine weighs on each alike)."""
    samples = {module: [] for module in modules}
    for _ in range(runs):
        for module in modules:
            samples[module].append(fresh_process(module, load, params))
    return {module: np.median(np.array(times), axis=0) for module, times in samples.items()}


def run_fresh(runs):
    print(f"\n## a new process: import, then the first fit (median of {runs} processes)")
    print(f"{'problem':<32} {'estimator':<18} {'import':>9} {'first fit':>10} {'fit ratio':>9}")
    for problem, load, params in FRESH_PROBLEMS:
        if problem.startswith("usps"):
            try:
                _dataset("usps")
            except Skip as skip:
                print(f"{problem:<32} skipped: {skip}", flush=True)
                continue
        medians = fresh_processes(("dkernel", "sklearn.svm"), load, params, runs)
        for label, module in (("dkernel.SVC", "dkernel"), ("sklearn.svm.SVC", "sklearn.svm")):
            imported, first = medians[module]
            ratio = f"{medians['dkernel'][1] / first:>9.2f}" if module != "dkernel" else ""
            print(f"{problem:<32} {label:<18} {_time(imported):>9} {_time(first):>10} {ratio}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS), help="the parts to run")
    parser.add_argument("--max-n", type=int, default=max(SYNTHETIC_N), help="largest synthetic training set")
    parser.add_argument("--repeats", type=int, default=3, help="fits of each estimator per problem at least (median)")
    parser.add_argument("--min-seconds", type=float, default=0.5,
                        help=f"fit again until each estimator's fits add up to this (at most {MAX_ROUNDS} fits)")
    parser.add_argument("--fresh-runs", type=int, default=7, help="new processes for the first-fit figure")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.fresh_runs < 1:
        parser.error("--repeats and --fresh-runs must be at least 1")
    if not args.min_seconds >= 0:
        parser.error("--min-seconds must be at least 0")
    print_header()
    # Both estimators fit once before any timing: numba loads dkernel's compiled solver once per process.
    X, y = load_iris(return_X_y=True)
    SVC().fit(X, y)
    LibSVC().fit(X, y)
    tables = {
        "tiny": ("tiny sets, RBF gamma='scale', C=1", lambda: tiny_problems()),
        "usps": ("USPS, RBF gamma=1/32, C=5", lambda: usps_problems()),
        "news": ("20 Newsgroups, tf-idf, RBF gamma=1, C=10", lambda: news_problems()),
        "synthetic": ("make_classification, 20 features, RBF gamma='scale', C=1",
                      lambda: synthetic_problems(args.max_n)),
    }
    for part in PARTS:
        if part not in args.only:
            continue
        if part == "fresh":
            run_fresh(args.fresh_runs)
        else:
            title, problems = tables[part]
            run_table(title, problems(), args.repeats, args.min_seconds)


if __name__ == "__main__":
    main()
