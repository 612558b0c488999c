"""An exact centered SVM at scale: ``dkernel.SVC(centering="standard")`` beside ``sklearn.svm.SVC``.

Two overlapping Gaussian classes in d = 64 dimensions (the problem of
``bench_svm.py``: about three quarters of the points are support vectors),
RBF gamma = 1/64, C = 1, tol = 1e-3, test set of 2000 points. dkernel runs
with its defaults: the training Gram whole in memory where it fits half the
available memory (float64, else float32), else kernel rows computed on the
fly with a row cache (n = 100000: the 40 GB float32 Gram is never formed).
Its time includes everything a user waits for: the Gram (or its rows), the
exact origin products h = K 1/n (one streaming pass over the Gram, Meilă
eq. 14), the solve on the centered Gram K_a and Δb (eq. 19). scikit-learn
(libsvm, ``cache_size=2000``) solves the uncentered problem: with the
equality constraint yᵀα = 0 the centered and uncentered duals have the same
solution (Meilă's translation invariance), so the dual objectives, accuracies
and predictions are compared directly. Where scikit-learn is not run (above
``--sklearn-max``), its time is extrapolated from the two largest sizes it
ran at with the measured slope of log t against log n (printed).

    python benchmarks/bench_centered_fit.py                       # n = 20000, 50000, 100000
    python benchmarks/bench_centered_fit.py --n 20000 --sklearn-max 20000
"""

import argparse
import math

import numpy as np
from sklearn.svm import SVC as LibSVC

from dkernel._runtime.memory import peak_memory, reset_peak_memory
from dkernel.kernels import RBFKernel
from dkernel.svm import SVC
from _problems import overlapping_classes  # benchmarks/_*.py, beside this script
from _provenance import print_header
from _timing import timed
from bench_svm import libsvm_dual_objective

MEASURES = (  # the modules these figures depend on: re-run and record when one changes
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
    "dkernel/centering/_origins.py",
    "dkernel/_runtime/client.py",
    "dkernel/_runtime/validation.py",
)

N_TEST = 2000


def fit_dkernel(X_tr, y_tr, X_te, y_te, gamma):
    reset_peak_memory()
    clf, seconds = timed(lambda: SVC(kernel="rbf", gamma=gamma, C=1.0, tol=1e-3, centering="standard").fit(X_tr, y_tr))
    return {
        "dk_s": seconds,
        "dk_peak_gb": peak_memory() / 1e9,
        "dk_acc": clf.score(X_te, y_te),
        "dk_obj": float(clf.objective_[0]),
        "dk_nsv": int(clf.support_.shape[0]),
        "gram": clf.gram_dtype_,
        "dk_pred": clf.predict(X_te),
    }


def fit_sklearn(X_tr, y_tr, X_te, y_te, gamma):
    clf, seconds = timed(lambda: LibSVC(kernel="rbf", gamma=gamma, C=1.0, tol=1e-3, cache_size=2000).fit(X_tr, y_tr))
    return {
        "sk_s": seconds,
        "sk_acc": clf.score(X_te, y_te),
        "sk_obj": libsvm_dual_objective(clf, X_tr, RBFKernel(gamma=gamma)),
        "sk_nsv": int(clf.support_.shape[0]),
        "sk_pred": clf.predict(X_te),
    }


def extrapolate(measured, n):
    """scikit-learn's time at ``n`` from its two largest measured sizes: ``(seconds, slope)`` of log t vs log n."""
    (n1, t1), (n2, t2) = sorted(measured.items())[-2:]
    slope = math.log(t2 / t1) / math.log(n2 / n1)
    return t2 * (n / n2) ** slope, slope


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[20000, 50000, 100000])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sklearn-max", type=int, default=50000,
                        help="run scikit-learn up to this n; above it, extrapolate its time")
    args = parser.parse_args(argv)
    print_header()
    gamma = 1.0 / args.d
    X_w, y_w = overlapping_classes(500, args.d, np.random.default_rng(args.seed + 1))
    _, t_warm = timed(lambda: SVC(kernel="rbf", gamma=gamma, centering="standard").fit(X_w, y_w))
    print(f"warm-up (numba cache load, once per process): dkernel {t_warm:.2f} s")
    print(f"RBF gamma={gamma:.4g}, C=1, tol=1e-3, d={args.d}, test n={N_TEST}; dkernel centered (standard origin), "
          f"scikit-learn uncentered (same solution)")
    print(f"{'n':>7} {'dkernel s':>10} {'sklearn s':>10} {'ratio':>6} {'acc dk':>7} {'acc sk':>7} {'same pred':>9} "
          f"{'obj rel diff':>12} {'nSV dk':>7} {'nSV sk':>7} {'dk peak GB':>10}  dkernel Gram")
    measured = {}
    for n in sorted(args.n):
        X, y = overlapping_classes(n + N_TEST, args.d, np.random.default_rng(args.seed))
        X_tr, y_tr, X_te, y_te = X[:n], y[:n], X[n:], y[n:]
        r = fit_dkernel(X_tr, y_tr, X_te, y_te, gamma)
        if n <= args.sklearn_max:
            r.update(fit_sklearn(X_tr, y_tr, X_te, y_te, gamma))
            measured[n] = r["sk_s"]
            sk_time = f"{r['sk_s']:>10.2f}"
            same = f"{np.mean(r['dk_pred'] == r['sk_pred']):>9.4f}"
            rel = f"{abs(r['dk_obj'] - r['sk_obj']) / abs(r['sk_obj']):>12.2e}"
            sk_acc, sk_nsv = f"{r['sk_acc']:>7.4f}", f"{r['sk_nsv']:>7}"
            ratio = r["dk_s"] / r["sk_s"]
        elif len(measured) >= 2:
            t_sk, slope = extrapolate(measured, n)
            sk_time = f"~{t_sk:>9.0f}"
            same, rel, sk_acc, sk_nsv = f"{'':>9}", f"{'':>12}", f"{'':>7}", f"{'':>7}"
            ratio = r["dk_s"] / t_sk
        else:
            sk_time, ratio = f"{'':>10}", float("nan")
            same, rel, sk_acc, sk_nsv = f"{'':>9}", f"{'':>12}", f"{'':>7}", f"{'':>7}"
        print(f"{n:>7} {r['dk_s']:>10.2f} {sk_time} {ratio:>6.3f} {r['dk_acc']:>7.4f} {sk_acc} {same} {rel} "
              f"{r['dk_nsv']:>7} {sk_nsv} {r['dk_peak_gb']:>10.2f}  {r['gram']}", flush=True)
    if len(measured) >= 2 and max(args.n) > max(measured):
        _, slope = extrapolate(measured, max(args.n))
        print(f"scikit-learn beyond n = {max(measured)}: extrapolated (~) with t ∝ n^{slope:.2f}, "
              f"the slope between its two largest measured sizes")


if __name__ == "__main__":
    main()
