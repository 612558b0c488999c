"""dkernel.SVC against sklearn.svm.SVC (libsvm), side by side in one process.

Two overlapping Gaussian classes in d = 64 dimensions (many support vectors),
RBF kernel, C = 1, tol = 1e-3 for both, scikit-learn with cache_size=2000.
dkernel's time includes computing the Gram matrix (or its rows). Prints wall
times, their ratio (dkernel / scikit-learn), test accuracies and dual
objectives. Before the timed runs, both estimators fit a 500-point problem
once: dkernel's inner solver is compiled by numba and loaded from its cache
once per process (the printed warm-up time).

    python benchmarks/bench_svm.py                    # n = 5000, 20000, 50000
    python benchmarks/bench_svm.py --n 5000 20000     # a shorter run
"""

import argparse

import numpy as np
from sklearn.svm import SVC as LibSVC

from dkernel.kernels import RBFKernel
from dkernel.svm import SVC
from _problems import overlapping_classes  # benchmarks/_*.py, beside this script
from _provenance import print_header
from _timing import timed

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
    "dkernel/_runtime/client.py",
    "dkernel/_runtime/validation.py",
)

N_TEST = 2000


def libsvm_dual_objective(clf, X_train, kernel, block=4096):
    """½ cᵀKc − Σ|c| for scikit-learn's binary SVC, with K over the support vectors in row blocks."""
    c = clf.dual_coef_[0]
    sv = X_train[clf.support_]
    quad = 0.0
    for start in range(0, sv.shape[0], block):
        K = kernel(sv[start:start + block], sv)
        quad += c[start:start + block] @ (K @ c)
    return 0.5 * quad - np.abs(c).sum()


def run(n, d, gamma, seed, skip_libsvm_above):
    rng = np.random.default_rng(seed)
    X, y = overlapping_classes(n + N_TEST, d, rng)
    X_tr, y_tr, X_te, y_te = X[:n], y[:n], X[n:], y[n:]
    kernel = RBFKernel(gamma=gamma)

    ours, t_ours = timed(lambda: SVC(kernel="rbf", gamma=gamma, C=1.0, tol=1e-3).fit(X_tr, y_tr))
    acc_ours = ours.score(X_te, y_te)
    row = {
        "gram": ours.gram_dtype_,
        "n": n,
        "dkernel_s": t_ours,
        "dkernel_acc": acc_ours,
        "dkernel_obj": float(ours.objective_[0]),
        "dkernel_nsv": int(ours.support_.shape[0]),
    }
    if n <= skip_libsvm_above:
        ref, t_ref = timed(
            lambda: LibSVC(kernel="rbf", gamma=gamma, C=1.0, tol=1e-3, cache_size=2000).fit(X_tr, y_tr)
        )
        row.update(
            sklearn_s=t_ref,
            sklearn_acc=ref.score(X_te, y_te),
            sklearn_obj=libsvm_dual_objective(ref, X_tr, kernel),
            sklearn_nsv=int(ref.support_.shape[0]),
            ratio=t_ours / t_ref,
        )
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 20000, 50000])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--gamma", type=float, default=None, help="RBF gamma (default 1/d)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-libsvm-above", type=int, default=10**9,
                        help="do not run scikit-learn above this n (it is quadratic-to-cubic in time)")
    args = parser.parse_args(argv)
    print_header()
    gamma = args.gamma or 1.0 / args.d
    X_w, y_w = overlapping_classes(500, args.d, np.random.default_rng(args.seed + 1))
    _, t_warm = timed(lambda: SVC(kernel="rbf", gamma=gamma).fit(X_w, y_w))
    LibSVC(kernel="rbf", gamma=gamma).fit(X_w, y_w)
    print(f"warm-up (numba cache load, once per process): dkernel {t_warm:.2f} s")
    header = (f"{'n':>7} {'dkernel s':>10} {'sklearn s':>10} {'ratio':>6} {'acc dk':>7} {'acc sk':>7} "
              f"{'obj dk':>12} {'obj sk':>12} {'rel diff':>9} {'nSV dk':>7} {'nSV sk':>7}  dkernel Gram")
    print(f"RBF gamma={gamma:.4g}, C=1, tol=1e-3, d={args.d}, test n={N_TEST}")
    print(header)
    for n in args.n:
        r = run(n, args.d, gamma, args.seed, args.skip_libsvm_above)
        sk = "sklearn_s" in r
        rel = abs(r["dkernel_obj"] - r["sklearn_obj"]) / abs(r["sklearn_obj"]) if sk else float("nan")
        print(
            f"{r['n']:>7} {r['dkernel_s']:>10.2f} {r.get('sklearn_s', float('nan')):>10.2f} "
            f"{r.get('ratio', float('nan')):>6.3f} {r['dkernel_acc']:>7.4f} {r.get('sklearn_acc', float('nan')):>7.4f} "
            f"{r['dkernel_obj']:>12.3f} {r.get('sklearn_obj', float('nan')):>12.3f} {rel:>9.2e} "
            f"{r['dkernel_nsv']:>7} {r.get('sklearn_nsv', 0):>7}  {r['gram']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
