"""Tests of dkernel.solver against libsvm (scikit-learn), SciPy and NumPy references."""

import re
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from dkernel.gram._sources import DenseGram, KernelGram
from dkernel.solver import solve_qp
from dkernel.solver._active_set import solve_box_equality_qp
from dkernel.solver._rows import provider_for_columns, provider_submatrix
from dkernel.solver._select import candidate_lists, merge_candidates, top_k, violation_sets
from dkernel.solver._smo import select_pair, update_pair
from _streams import RecordingStream


# ---------------------------------------------------------------- data sets
def _wdbc():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), np.where(y == 1, 1, -1)


def _digits_pair():
    X, y = load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    return StandardScaler().fit_transform(X[keep]), np.where(y[keep] == 8, 1, -1)


def _synthetic(n=1500, d=10, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    return rng.normal(size=(n, d)) + 0.4 * y[:, None], y


DATASETS = {"wdbc": _wdbc, "digits-3-vs-8": _digits_pair, "synthetic-1500": _synthetic}


def _rbf_gram(X):
    return rbf_kernel(X, gamma=1.0 / X.shape[1])


def _dual_objective(K, y, alpha):
    v = alpha * y
    return 0.5 * v @ K @ v - alpha.sum()


def _sklearn_alpha(svc, n):
    """Dual variables of a binary SVC; dual_coef_ = alpha * y with classes [-1, +1]."""
    alpha = np.zeros(n)
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    return alpha


def _sklearn_decision(K, y, svc):
    """Decision values rebuilt from dual_coef_ and intercept_ (positive class +1)."""
    return K[:, svc.support_] @ svc.dual_coef_[0] + svc.intercept_[0]


def _assert_same_svm(K, y, res, svc, C_scale=1.0):
    alpha_ref = _sklearn_alpha(svc, len(y))
    obj_ref = _dual_objective(K, y, alpha_ref)
    assert abs(res.objective - obj_ref) <= 1e-5 * abs(obj_ref)
    assert abs(res.objective - _dual_objective(K, y, res.alpha)) <= 1e-9 * abs(obj_ref)
    ours = res.decision_function(K, y)
    ref = _sklearn_decision(K, y, svc)
    np.testing.assert_allclose(ours, ref, atol=1e-3, rtol=0)
    assert np.mean(np.sign(ours) == np.sign(ref)) >= 0.999


# ------------------------------------------------------- same optimum as libsvm
@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("C", [0.5, 10.0])
def test_same_optimum_as_libsvm(name, C):
    X, y = DATASETS[name]()
    K = _rbf_gram(X)
    res = solve_qp(DenseGram(K), y, C, tol=1e-6)
    svc = SVC(kernel="precomputed", C=C, tol=1e-6).fit(K, y)
    assert res.converged and res.stop_reason == "tol" and res.gap <= 1e-6
    _assert_same_svm(K, y, res, svc)


def test_intercept_sign_matches_sklearn():
    X, y = _wdbc()
    K = _rbf_gram(X)
    res = solve_qp(DenseGram(K), y, 1.0, tol=1e-6)
    svc = SVC(kernel="precomputed", C=1.0, tol=1e-6).fit(K, y)
    assert res.intercept == pytest.approx(svc.intercept_[0], abs=1e-4)
    np.testing.assert_allclose(res.gradient, np.outer(y, y) * K @ res.alpha - 1, atol=1e-10)


def test_per_sample_C_matches_class_weight():
    X, y = _digits_pair()
    K = _rbf_gram(X)
    weights = {-1: 0.3, 1: 4.0}
    C = 2.0 * np.where(y > 0, weights[1], weights[-1])
    res = solve_qp(DenseGram(K), y, C, tol=1e-6)
    svc = SVC(kernel="precomputed", C=2.0, tol=1e-6, class_weight=weights).fit(K, y)
    _assert_same_svm(K, y, res, svc)
    assert np.all(res.alpha <= C) and np.all(res.alpha >= 0)


# ------------------------------------------------------ several equality rows
def _random_equality_problem(n, n_eq, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, 8))
    K = A @ A.T / 8 + 0.2 * rbf_kernel(A, gamma=0.05)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    C = rng.uniform(0.5, 2.0, n)
    E = rng.normal(size=(n_eq, n))
    e = E @ (rng.uniform(0.0, 1.0, n) * C)
    return K, y, C, E, e


def _slsqp_reference(K, y, C, E, e, start):
    Q = np.outer(y, y) * K
    res = minimize(
        lambda a: 0.5 * a @ Q @ a - a.sum(),
        start,
        jac=lambda a: Q @ a - 1.0,
        method="SLSQP",
        bounds=list(zip(np.zeros_like(C), C)),
        constraints=[{"type": "eq", "fun": lambda a: E @ a - e, "jac": lambda a: E}],
        options={"maxiter": 2000, "ftol": 1e-15},
    )
    return res.fun


@pytest.mark.parametrize("n_eq, n, seed", [(2, 60, 0), (2, 150, 1), (5, 120, 2), (5, 200, 3)])
def test_several_equality_rows_match_slsqp(n_eq, n, seed):
    K, y, C, E, e = _random_equality_problem(n, n_eq, seed)
    res = solve_qp(DenseGram(K), y, C, E=E, e=e, tol=1e-8)
    assert res.converged
    alpha = res.alpha
    np.testing.assert_allclose(E @ alpha, e, atol=1e-8, rtol=0)
    assert alpha.min() >= 0 and np.all(alpha <= C)
    ref = _slsqp_reference(K, y, C, E, e, start=np.clip(np.linalg.lstsq(E, e, rcond=None)[0], 0, C))
    assert res.objective <= ref + 1e-5 * abs(ref)
    assert res.objective == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("n_eq", [2, 5])
def test_multipliers_satisfy_kkt(n_eq):
    K, y, C, E, e = _random_equality_problem(120, n_eq, seed=7)
    res = solve_qp(DenseGram(K), y, C, E=E, e=e, tol=1e-8)
    lam = np.atleast_1d(res.intercept)
    assert lam.shape == (n_eq,)
    reduced = res.gradient + E.T @ lam
    a = res.alpha
    free = (a > 0) & (a < C)
    assert np.abs(reduced[free]).max() <= 1e-6
    assert reduced[a == 0].min(initial=0.0) >= -1e-6
    assert reduced[a == C].max(initial=0.0) <= 1e-6


def test_generalized_bias_decision_function():
    """With E[q, i] = y_i phi_q(x_i), f(x) = sum alpha y K + sum lambda phi gives y f = 1 on free vectors."""
    X, y = _synthetic(n=300, d=4, seed=5)
    K = _rbf_gram(X)
    phi = np.column_stack([np.ones(len(y)), X[:, 0]])
    E = (y[:, None] * phi).T
    res = solve_qp(DenseGram(K), y, 1.0, E=E, tol=1e-8)
    f = K @ (res.alpha * y) + phi @ res.intercept
    free = (res.alpha > 1e-8) & (res.alpha < 1.0 - 1e-8)
    np.testing.assert_allclose(y[free] * f[free], 1.0, atol=1e-6)


def test_single_general_row_and_nonzero_e():
    K, y, C, E, e = _random_equality_problem(80, 1, seed=11)
    res = solve_qp(DenseGram(K), y, C, E=E, e=e, tol=1e-8)
    assert np.ndim(res.intercept) == 0
    np.testing.assert_allclose(E @ res.alpha, e, atol=1e-8)
    ref = _slsqp_reference(K, y, C, E, e, start=np.clip(np.linalg.lstsq(E, e, rcond=None)[0], 0, C))
    assert res.objective == pytest.approx(ref, rel=1e-5)


def test_active_set_subproblem_matches_slsqp():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(12, 3))
    H = A @ A.T  # singular: rank 3
    g = rng.normal(size=12)
    lower, upper = -rng.uniform(0, 1, 12), rng.uniform(0, 1, 12)
    lower[:3] = 0.0
    upper[3:5] = 0.0
    Aeq = rng.normal(size=(2, 12))
    d, _ = solve_box_equality_qp(H, g, lower, upper, Aeq, kkt_tol=1e-12)
    np.testing.assert_allclose(Aeq @ d, 0.0, atol=1e-12)
    assert np.all(d >= lower) and np.all(d <= upper)
    ref = minimize(
        lambda x: 0.5 * x @ H @ x + g @ x, np.zeros(12), jac=lambda x: H @ x + g, method="SLSQP",
        bounds=list(zip(lower, upper)), constraints=[{"type": "eq", "fun": lambda x: Aeq @ x}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert 0.5 * d @ H @ d + g @ d <= ref.fun + 1e-8


# ------------------------------------------------------------ solver options
@pytest.fixture(scope="module")
def wdbc_problem():
    X, y = _wdbc()
    K = _rbf_gram(X)
    return X, y, K, solve_qp(DenseGram(K), y, 1.0, tol=1e-6)


@pytest.mark.parametrize("q", [2, 7, 100, 10_000])
def test_working_set_sizes_reach_the_same_optimum(wdbc_problem, q):
    _, y, K, ref = wdbc_problem
    res = solve_qp(DenseGram(K), y, 1.0, tol=1e-6, working_set_size=q)
    assert res.converged
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)
    np.testing.assert_allclose(res.decision_function(K, y), ref.decision_function(K, y), atol=1e-4)


def test_shrinking_off_reaches_the_same_optimum(wdbc_problem):
    _, y, K, ref = wdbc_problem
    res = solve_qp(DenseGram(K), y, 1.0, tol=1e-6, shrinking=False, working_set_size=64)
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)


def test_warm_start_converges_to_the_same_optimum(wdbc_problem):
    _, y, K, ref = wdbc_problem
    rough = solve_qp(DenseGram(K), y, 1.0, tol=1e-1, working_set_size=16)
    res = solve_qp(DenseGram(K), y, 1.0, tol=1e-6, alpha0=rough.alpha, working_set_size=16)
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)
    warm = solve_qp(DenseGram(K), y, 1.0, tol=1e-6, alpha0=ref.alpha)
    assert warm.n_iter <= 1 and warm.converged


def test_max_iter_warns_with_remedy(wdbc_problem):
    _, y, K, _ = wdbc_problem
    with pytest.warns(ConvergenceWarning, match=r"Solver terminated early \(max_iter=.*increase max_iter or tol"):
        res = solve_qp(DenseGram(K), y, 1.0, tol=1e-6, working_set_size=4, max_iter=3)
    assert not res.converged and res.stop_reason == "max_iter" and res.n_iter == 3


def test_callback_can_stop(wdbc_problem):
    _, y, K, _ = wdbc_problem
    seen = []
    res = solve_qp(DenseGram(K), y, 1.0, working_set_size=8, callback=lambda it, a, gap: seen.append(gap) or it == 2)
    assert res.stop_reason == "callback" and len(seen) == 3


def test_kernel_rows_with_small_cache_give_the_same_solution(wdbc_problem):
    X, y, K, ref = wdbc_problem
    gamma = 1.0 / X.shape[1]
    rows = KernelGram(X, lambda A, B: rbf_kernel(A, B, gamma=gamma), cache_bytes=50 * 8 * X.shape[0])
    res = solve_qp(rows, y, 1.0, tol=1e-6, working_set_size=32)
    assert rows.n_computed > 50
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    np.testing.assert_allclose(res.decision_function(K, y), ref.decision_function(K, y), atol=1e-6)


def test_kernel_rows_cache_returns_exact_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    K = rbf_kernel(X)
    rows = KernelGram(X, rbf_kernel, cache_bytes=10 * 8 * 40)
    for idx in ([1, 2, 3], [3, 1, 30, 30], list(range(20)), [2, 39, 0]):
        np.testing.assert_allclose(rows.rows(idx), K[idx], rtol=1e-12)
    np.testing.assert_allclose(rows.diag(), 1.0)


# --------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"y": np.array([0, 1, 1, 0])}, "only -1 and \\+1"),
        ({"C": 0.0}, "C must be finite and > 0"),
        ({"C": np.array([1.0, 1.0, -1.0, 1.0])}, "C\\[2\\]"),
        ({"C": np.ones(3)}, "C must be a scalar or have shape"),
        ({"y": np.array([1, -1, 1])}, "y has 3"),
        ({"alpha0": np.array([1.0, 0.0, 0.0, 0.0])}, "alpha0 violates"),
        ({"E": np.ones((2, 3))}, "E must have shape"),
        ({"working_set_size": 1}, "working_set_size"),
        ({"tol": -1.0}, "tol must be"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, match):
    args = {"y": np.array([1, -1, 1, -1]), "C": 1.0}
    args.update(kwargs)
    y, C = args.pop("y"), args.pop("C")
    with pytest.raises(ValueError, match=match):
        solve_qp(DenseGram(np.eye(4)), y, C, **args)


def test_non_finite_kernel_rows_raise():
    K = np.eye(4)
    K[1, 3] = K[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        solve_qp(DenseGram(K), np.array([1, -1, 1, -1]), 1.0)


def test_provider_without_members_is_rejected():
    with pytest.raises(TypeError, match="DenseGram"):
        solve_qp(np.eye(4), np.array([1, -1, 1, -1]), 1.0)


@pytest.mark.parametrize("several_rows", [False, True], ids=["labels", "general"])
def test_rows_of_the_wrong_shape_are_rejected(several_rows):
    class Transposed(DenseGram):
        def rows(self, idx):
            return super().rows(idx).T

    X, y = _synthetic(n=40, d=3)
    E = np.vstack([y, y * X[:, 0]]) if several_rows else None
    with pytest.raises(ValueError, match=r"returned shape \(40, \d+\)"):
        solve_qp(Transposed(_rbf_gram(X)), y, 1.0, E=E, working_set_size=2)


def test_a_worker_gets_the_column_slab_of_its_range():
    X, y = _synthetic(n=100, d=3)
    K = _rbf_gram(X)
    rows = DenseGram(K)
    slab = provider_for_columns(rows, 30, 70)
    assert slab.K_cols.shape == (100, 40)
    np.testing.assert_array_equal(provider_submatrix(slab, [3, 50, 3], 30, 70), K[[3, 50, 3], 30:70])
    # One worker holds every column: the provider itself, which also answers whole rows.
    assert provider_for_columns(rows, 0, 100) is rows
    on_the_fly = KernelGram(X, rbf_kernel)
    kernel_slab = provider_for_columns(on_the_fly, 30, 70)  # X with a row cache of the 40 columns
    assert (kernel_slab.start, kernel_slab.stop) == (30, 70) and kernel_slab.gram is on_the_fly
    np.testing.assert_allclose(provider_submatrix(kernel_slab, [3, 50], 30, 70), K[[3, 50], 30:70], rtol=1e-12)
    assert provider_for_columns(on_the_fly, 0, 100) is on_the_fly


# ------------------------------------------------ compiled kernels vs numpy
def _random_subproblem(seed, q=30):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(q, 4))
    y = np.where(rng.random(q) < 0.5, 1.0, -1.0)
    K = rbf_kernel(A)
    C = rng.uniform(0.5, 1.5, q)
    alpha = np.where(rng.random(q) < 0.3, 0.0, np.where(rng.random(q) < 0.5, C, rng.uniform(0, 1, q) * C))
    Q = np.outer(y, y) * K
    return Q, y, alpha, C, Q @ alpha - 1.0


@pytest.mark.parametrize("seed", range(5))
def test_select_pair_matches_numpy(seed):
    Q, y, alpha, C, G = _random_subproblem(seed)
    i, j, gap = select_pair(Q, y, alpha, C, G)
    up, low = violation_sets(alpha, y, C)
    v = -y * G
    assert i == np.flatnonzero(up)[np.argmax(v[up])]
    assert gap == pytest.approx(v[up].max() - v[low].min())
    b = v[i] - v
    a = Q[i, i] + np.diag(Q) - 2 * y[i] * y * Q[i]
    score = np.where(low & (b > 0), -(b**2) / np.where(a > 0, a, 1e-12), np.inf)
    assert j == int(np.argmin(score))


@pytest.mark.parametrize("seed", range(5))
def test_update_pair_is_the_exact_line_minimum(seed):
    Q, y, alpha, C, G = _random_subproblem(seed)
    i, j, _ = select_pair(Q, y, alpha, C, G)
    new = alpha.copy()
    update_pair(Q, y, new, C, G, i, j)
    assert y[i] * new[i] + y[j] * new[j] == pytest.approx(y[i] * alpha[i] + y[j] * alpha[j])
    assert 0 <= new[i] <= C[i] and 0 <= new[j] <= C[j]

    def objective(a):
        return 0.5 * a @ Q @ a - a.sum()

    # Brute force along the feasible direction d_i = y_i t, d_j = -y_j t.
    grid = np.linspace(-3, 3, 60001)
    best = np.inf
    for t in grid:
        trial = alpha.copy()
        trial[i] += y[i] * t
        trial[j] -= y[j] * t
        if 0 <= trial[i] <= C[i] and 0 <= trial[j] <= C[j]:
            best = min(best, objective(trial))
    assert objective(new) <= best + 1e-9


# ---------------------------------------------------------------- selection
def test_top_k_breaks_ties_by_index():
    values = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(top_k(values, 2, largest=True), [1, 2])
    np.testing.assert_array_equal(top_k(values, 4, largest=False), [5, 0, 3, 1])


def test_merged_partition_candidates_equal_global_candidates():
    rng = np.random.default_rng(1)
    n = 200
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    C = np.ones(n)
    alpha = rng.choice([0.0, 0.5, 1.0], size=n)
    v = np.round(rng.normal(size=n), 1)  # many ties
    up, low = violation_sets(alpha, y, C)
    whole = candidate_lists(v, up, low, 17)
    parts = [candidate_lists(v[s:t], up[s:t], low[s:t], 17, offset=s) for s, t in [(0, 70), (70, 133), (133, 200)]]
    for a, b in zip(whole, merge_candidates(parts, 17)):
        np.testing.assert_array_equal(a, b)


# -------------------------------------------------------------- distributed
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_distributed_matches_single_process():
    distributed = pytest.importorskip("distributed")
    X, y = _synthetic(n=800, d=6, seed=2)
    K = _rbf_gram(X)
    single = solve_qp(DenseGram(K), y, 1.0, working_set_size=64)
    gamma = 1.0 / X.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as cluster, distributed.Client(cluster) as client:
            dense = solve_qp(DenseGram(K), y, 1.0, working_set_size=64, client=client)
            # Without row caches every kernel row is evaluated in the same batches as in one process.
            on_the_fly = solve_qp(
                KernelGram(X, lambda A, B: rbf_kernel(A, B, gamma=gamma), cache_bytes=0), y, 1.0,
                working_set_size=64, client=client,
            )
            # With them (each worker caches the rows of its columns) a row may be evaluated in another batch,
            # equal up to the last bit of BLAS: the same optimum, within the tolerance.
            cached = solve_qp(KernelGram(X, "rbf", gamma=gamma), y, 1.0, working_set_size=64, tol=1e-9, client=client)
    # The rows evaluated in batches differ from the whole Gram's in the last bit: their reference is the
    # same provider solved in one process.
    single_on_the_fly = solve_qp(KernelGram(X, lambda A, B: rbf_kernel(A, B, gamma=gamma), cache_bytes=0), y, 1.0,
                                 working_set_size=64)
    for res, reference in ((dense, single), (on_the_fly, single_on_the_fly)):
        assert res.converged and res.n_iter == reference.n_iter
        np.testing.assert_allclose(res.alpha, reference.alpha, atol=1e-10)
        np.testing.assert_allclose(res.decision_function(K, y), reference.decision_function(K, y), atol=1e-6)
    tight = solve_qp(DenseGram(K), y, 1.0, working_set_size=64, tol=1e-9)
    assert cached.converged
    np.testing.assert_allclose(cached.decision_function(K, y), tight.decision_function(K, y), atol=1e-6)


# ---------------------------------------------------------------- progress
@pytest.mark.parametrize("several_rows", [False, True], ids=["labels", "general"])
def test_verbose_progress_is_one_updating_line_on_a_terminal(monkeypatch, several_rows):
    import sys

    X, y = _wdbc()
    K = rbf_kernel(X, gamma=0.05)
    E = np.vstack([y, y * X[:, 0]]) if several_rows else None
    tty = RecordingStream(True)
    monkeypatch.setattr(sys, "stderr", tty)
    res = solve_qp(DenseGram(K), y, 10.0, E=E, working_set_size=16, verbose=True)
    assert res.converged
    # Updated in place: every status starts with \r, and only the final line ends with a newline.
    assert tty.text.startswith("\r[dkernel.solver] iter 0  gap ") and tty.text.count("\n") == 1
    status = tty.text.split("\r")[1]
    assert re.fullmatch(r"\[dkernel\.solver\] iter 0  gap \S+ \(tol 0\.001\)  SV \d+  free SV \d+  [\d.]+ [mu]?s *",
                        status)
    final = tty.text.split("\r")[-1]
    n_free = int(np.count_nonzero((res.alpha > 0) & (res.alpha < 10.0)))
    assert final.startswith(f"[dkernel.solver] converged: gap {res.gap:.3e} <= tol 0.001 after {res.n_iter} "
                            f"iterations  SV {np.count_nonzero(res.alpha)}  free SV {n_free}  ")  # fmt: skip


def test_verbose_progress_says_when_the_solver_did_not_converge(monkeypatch):
    import sys

    X, y = _wdbc()
    plain = RecordingStream(False)
    monkeypatch.setattr(sys, "stderr", plain)
    with pytest.warns(ConvergenceWarning):
        res = solve_qp(DenseGram(rbf_kernel(X, gamma=0.05)), y, 10.0, working_set_size=2, max_iter=3, verbose=True)
    assert not res.converged and "\r" not in plain.text
    lines = plain.text.splitlines()
    assert len(lines) == 2 and lines[0].startswith("[dkernel.solver] iter 0  gap ")
    assert lines[1].startswith(f"[dkernel.solver] NOT converged: max_iter=3 reached with gap {res.gap:.3e} > tol "
                               "0.001 after 3 iterations")  # fmt: skip
