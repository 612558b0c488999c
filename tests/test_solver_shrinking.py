"""Shrinking: the gradient restricted to the active variables, rebuilt exactly before the final test."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC as LibSVC

import dkernel.solver._shrinking as shrinking_module
from dkernel.gram._sources import DenseGram, KernelGram, SubsetGram
from dkernel.kernels import RBFKernel
from dkernel.solver import solve_qp


def _problem(n=1500, flip=0.2, seed=0):
    X, y = make_classification(n_samples=n, n_features=8, class_sep=0.8, flip_y=flip, random_state=seed)
    return X, np.where(y == 1, 1.0, -1.0)


@pytest.fixture
def shrink_log(monkeypatch):
    """The sizes of the active set after each shrinking test and each rebuild, in order."""
    log = []
    shrink, unshrink = shrinking_module.ShrinkingGradients.shrink, shrinking_module.ShrinkingGradients.unshrink

    def logged_shrink(self, m, M):
        dropped = shrink(self, m, M)
        log.append(("shrink", self.active.size, dropped))
        return dropped

    def logged_unshrink(self):
        rebuilt = unshrink(self)
        log.append(("unshrink", self.active.size, rebuilt))
        return rebuilt

    monkeypatch.setattr(shrinking_module.ShrinkingGradients, "shrink", logged_shrink)
    monkeypatch.setattr(shrinking_module.ShrinkingGradients, "unshrink", logged_unshrink)
    return log


def test_shrinking_drops_variables_and_reaches_the_same_optimum(shrink_log):
    X, y = _problem()
    K = rbf_kernel(X, gamma=0.1)
    shrunk = solve_qp(DenseGram(K), y, 1.0, tol=1e-3, shrinking=True, working_set_size=32)
    assert any(kind == "shrink" and dropped > 0 for kind, _, dropped in shrink_log), shrink_log
    assert ("unshrink", len(y), True) in shrink_log  # the final test is made over every variable
    full = solve_qp(DenseGram(K), y, 1.0, tol=1e-3, shrinking=False, working_set_size=32)
    assert shrunk.converged and full.converged and shrunk.gap <= 1e-3
    # A shrunk variable's stale gradient changes the order of the steps, not the optimum: both stop within
    # the tolerance of it, with the same support vectors.
    assert abs(shrunk.objective - full.objective) <= 1e-7 * abs(full.objective)
    np.testing.assert_array_equal(shrunk.alpha > 0, full.alpha > 0)
    np.testing.assert_allclose(shrunk.alpha, full.alpha, atol=1e-2)


def test_the_final_gradient_is_exact_for_shrunk_variables(shrink_log):
    X, y = _problem(seed=1)
    K = rbf_kernel(X, gamma=0.1)
    result = solve_qp(DenseGram(K), y, 1.0, tol=1e-3, shrinking=True, working_set_size=32)
    assert any(dropped for kind, _, dropped in shrink_log if kind == "shrink")
    exact = y * (K @ (y * result.alpha)) - 1.0
    # The KKT conditions over all samples, with the exact gradient (libsvm's gap, eq. of Fan et al. 2005).
    v = -y * exact
    up = np.where(y > 0, result.alpha < 1.0, result.alpha > 0)
    low = np.where(y > 0, result.alpha > 0, result.alpha < 1.0)
    assert v[up].max() - v[low].min() <= 1e-3 + 1e-9


@pytest.mark.parametrize("held", ["subset of a matrix in memory", "rows computed on the fly"])
def test_shrinks_where_rows_are_in_memory_and_matches_libsvm(shrink_log, held):
    X, y = _problem(n=1200, flip=0.3, seed=2)
    if held == "subset of a matrix in memory":
        rows = SubsetGram(DenseGram(rbf_kernel(np.vstack([X, X[:50]]), gamma=0.1)), np.arange(1200))
    else:
        rows = KernelGram(X, RBFKernel(gamma=0.1))
    result = solve_qp(rows, y, 1.0, tol=1e-3, shrinking=True, working_set_size=32)
    # Rows computed again for the final rebuild would cost more than shrinking saves: no shrinking then.
    assert any(dropped for kind, _, dropped in shrink_log if kind == "shrink") == (held != "rows computed on the fly")
    ref = LibSVC(kernel="rbf", gamma=0.1, C=1.0, tol=1e-3).fit(X, y)
    alpha_ref = np.zeros(len(y))
    alpha_ref[ref.support_] = np.abs(ref.dual_coef_[0])
    K = rbf_kernel(X, gamma=0.1)
    Q = np.outer(y, y) * K

    def objective(a):
        return 0.5 * a @ Q @ a - a.sum()

    assert abs(objective(result.alpha) - objective(alpha_ref)) <= 1e-4 * abs(objective(alpha_ref))
    np.testing.assert_array_equal(np.flatnonzero(result.alpha > 1e-8), np.sort(ref.support_))


def test_a_variable_held_in_the_working_set_is_never_shrunk():
    X, y = _problem(n=300, seed=3)
    K = rbf_kernel(X, gamma=0.1)
    from dkernel.solver._qp import prepare_problem

    prob, q = prepare_problem(DenseGram(K), y, 1.0, None, None, None, None, tol=1e-3, working_set_size=16,
                              max_iter=1000)
    gradients = shrinking_module.ShrinkingGradients(DenseGram(K), prob, q)
    gradients.fill_rows(np.arange(16), np.arange(16))
    # Every variable is at its lower bound, so in one end only; with m = -inf and M = +inf each is stuck.
    dropped = gradients.shrink(-np.inf, np.inf)
    assert dropped == 300 - 16
    np.testing.assert_array_equal(gradients.active, np.arange(16))
    assert gradients.unshrink() and gradients.active.size == 300
    np.testing.assert_array_equal(gradients.held_rows(np.arange(16)), K[:16])
    np.testing.assert_allclose(gradients.G, -np.ones(300))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_rebuild_reads_a_matrix_in_memory_directly(dtype):
    rng = np.random.default_rng(5)
    K = rbf_kernel(rng.normal(size=(300, 4)), gamma=0.3).astype(dtype)
    rows, columns = rng.choice(300, 40, replace=False), rng.choice(300, 70, replace=False)
    weights = rng.normal(size=40)
    expected = weights @ K[np.ix_(rows, columns)].astype(np.float64)
    products = np.full(columns.size, np.nan)
    shrinking_module.weighted_rows_step(K, rows, weights, columns, False, products)
    np.testing.assert_allclose(products, expected, rtol=1e-12)
    index = np.sort(rng.choice(300, 120, replace=False))
    held, positions, held_columns = shrinking_module.row_source(DenseGram(K), rows)
    assert held is K and np.array_equal(positions, rows) and held_columns is None
    held, positions, held_columns = shrinking_module.row_source(SubsetGram(DenseGram(K), index), np.arange(5))
    assert held is K and np.array_equal(positions, index[:5]) and np.array_equal(held_columns, index)
    assert shrinking_module.row_source(KernelGram(np.eye(3), RBFKernel(gamma=1.0)), np.arange(2)) is None
    assert shrinking_module.rows_read_from_memory(SubsetGram(DenseGram(K), index))
    assert not shrinking_module.rows_read_from_memory(KernelGram(np.eye(3), RBFKernel(gamma=1.0)))


def test_a_view_over_a_matrix_in_memory_is_not_shrunk(shrink_log):
    from dkernel.centering import Centering
    from dkernel.views import CenteredGram

    X, y = _problem(n=1000, seed=6)
    view = CenteredGram(DenseGram(rbf_kernel(X, gamma=0.1)), Centering.standard(1000))
    # Its rows are not the matrix's: the final rebuild would correct every entry of the support rows again.
    assert shrinking_module.row_source(view, np.arange(3)) is None
    assert not shrinking_module.rows_read_from_memory(view)
    result = solve_qp(view, y, 1.0, tol=1e-3, shrinking=True, working_set_size=32)
    assert result.converged and all(kind == "unshrink" and not rebuilt for kind, _, rebuilt in shrink_log)


def test_the_rebuild_through_rows_equals_the_compiled_pass():
    X, y = _problem(n=400, seed=7)
    K = rbf_kernel(X, gamma=0.1)
    from dkernel.solver._qp import prepare_problem

    prob, q = prepare_problem(DenseGram(K), y, 1.0, None, None, None, None, tol=1e-3, working_set_size=16,
                              max_iter=1000)
    gradients = shrinking_module.ShrinkingGradients(KernelGram(X, RBFKernel(gamma=0.1)), prob, q)
    support = np.arange(0, 400, 3)
    weights = np.random.default_rng(8).normal(size=support.size)
    columns = np.arange(1, 400, 2)
    through_rows = gradients._support_products(support, weights, columns)  # KernelGram: no matrix in memory
    compiled = np.empty(columns.size)
    shrinking_module.weighted_rows_step(K, support, weights, columns, False, compiled)
    np.testing.assert_allclose(through_rows, compiled, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gradient_step_reads_the_rows_of_nonzero_weight_in_place(dtype):
    rng = np.random.default_rng(8)
    K = rbf_kernel(rng.normal(size=(500, 4)), gamma=0.3).astype(dtype)
    K[7] = np.nan  # held with a zero weight: never read (0 * NaN is not 0)
    positions = rng.choice(np.arange(8, 500), 40, replace=False)
    positions[3], positions[5] = 7, -1  # an empty slot has position -1
    weights = rng.normal(size=40)
    weights[[3, 5, 11]] = 0.0
    live = weights != 0
    columns = np.sort(rng.choice(500, 90, replace=False))  # the active columns of a subset's rows
    step = np.full(90, np.nan)
    shrinking_module.weighted_rows_step(K, positions, weights, columns, False, step)
    np.testing.assert_allclose(step, weights[live] @ K[np.ix_(positions[live], columns)].astype(np.float64),
                               rtol=1e-12)
    whole = np.full(500, np.nan)
    shrinking_module.weighted_rows_step(K, positions, weights, np.arange(500), True, whole)
    np.testing.assert_allclose(whole, weights[live] @ K[positions[live]].astype(np.float64), rtol=1e-12)


def test_held_rows_stay_in_place_when_the_rest_of_an_on_demand_gram_is_computed(monkeypatch):
    from dkernel.gram import _in_memory
    from dkernel.gram._in_memory import OnDemandGram
    from dkernel.solver._qp import prepare_problem

    monkeypatch.setattr(_in_memory, "PROMOTE_MIN_FEATURES", 0)  # the rest at n / 2, whatever the features
    X, y = _problem(n=400, seed=10)
    gram = OnDemandGram(X, RBFKernel(gamma=0.1))
    prob, q = prepare_problem(gram, y, 1.0, None, None, None, None, tol=1e-3, working_set_size=64, max_iter=1000)
    gradients = shrinking_module.ShrinkingGradients(gram, prob, q)
    assert gradients.in_place and q >= 50
    gradients.fill_rows(np.arange(20, 40), np.arange(20))  # 20 rows < 400 / 2: computed on demand
    assert gram.held == "on-demand" and gradients._matrix is gram.M
    positions = gradients.position_in_slot[:20].copy()
    gram.rows(np.arange(200, 400))  # 220 rows would pass 400 / 2: the rest of the Gram is computed
    assert gram.held == "float64"
    gradients.fill_rows(np.arange(100, 130), np.arange(20, 50))
    assert gradients._matrix is gram.M
    np.testing.assert_array_equal(gradients.position_in_slot[:20], positions)
    expected = rbf_kernel(X[np.r_[20:40, 100:130]], X, gamma=0.1)
    np.testing.assert_allclose(gradients.held_rows(np.arange(50)), expected, rtol=1e-12)


def test_shrunk_gradients_read_the_same_rows_from_a_matrix_as_from_its_rows():
    X, y = _problem(n=300, seed=9)
    K = rbf_kernel(X, gamma=0.1)
    from dkernel.solver._qp import prepare_problem

    index = np.arange(10, 310)
    base = DenseGram(rbf_kernel(np.vstack([X[-10:], X]), gamma=0.1))  # the problem's samples are rows 10..309
    states = []
    for rows in (SubsetGram(base, index), KernelGram(X, RBFKernel(gamma=0.1))):
        prob, q = prepare_problem(rows, y, 1.0, None, None, None, None, tol=1e-3, working_set_size=16,
                                  max_iter=1000)
        gradients = shrinking_module.ShrinkingGradients(rows, prob, q)
        gradients.fill_rows(np.arange(16), np.arange(16))
        gradients.shrink(-np.inf, np.inf)  # only the 16 held variables stay active
        gradients.fill_rows(np.arange(8), np.arange(8))
        states.append((gradients.held_rows(np.arange(16)), gradients.active.copy()))
    np.testing.assert_allclose(states[0][0], states[1][0], rtol=1e-13)
    np.testing.assert_array_equal(states[0][1], states[1][1])
    np.testing.assert_allclose(states[0][0][:8], K[np.ix_(np.arange(8), np.arange(16))], rtol=1e-13)


def _numpy_candidates(alpha, y, C, G, active, k):
    """The selection of ``_select`` in NumPy, as a distributed partition makes it."""
    from dkernel.solver._gradient import merge_partition_candidates
    from dkernel.solver._select import (
        candidate_lists,
        extreme_violations,
        violation_sets,
    )

    up, low = violation_sets(alpha[active], y[active], C[active])
    v = -y[active] * G[active]
    m, M = extreme_violations(v, up, low)
    up_pos, up_v, low_pos, low_v = candidate_lists(v, up, low, k)
    return merge_partition_candidates([(m, M, active[up_pos], up_v, active[low_pos], low_v)], k)


@pytest.mark.parametrize("n", [3000, 9000])  # a partition, and a bounded heap from HEAP_MIN_ACTIVE variables
@pytest.mark.parametrize("k", [1, 7, 64, 256, 257, 5000])
def test_compiled_candidates_are_the_numpy_selection_with_ties(k, n):
    from dkernel.solver._select_compiled import (
        HEAP_MAX_K,
        HEAP_MIN_ACTIVE,
        active_candidates,
    )

    assert 3000 < HEAP_MIN_ACTIVE <= 9000 and 7 < HEAP_MAX_K < 257
    rng = np.random.default_rng(k)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    C = np.full(n, 2.0)
    alpha = rng.choice([0.0, 2.0, 0.5, 1.5], size=n)
    G_ties = rng.integers(-20, 20, size=n) / 8.0  # many exact ties, both signs of zero
    G_worst = y * np.sort(G_ties)[::-1]  # y G decreasing: each variable of I_up more violating than those before it
    for active, G in ((np.arange(n), G_ties), (np.sort(rng.choice(n, 900, replace=False)), G_ties),
                      (np.arange(0), G_ties), (np.arange(n), G_worst)):
        got = active_candidates(alpha, y, C, G, active, k)
        expected = _numpy_candidates(alpha, y, C, G, active, k)
        assert got[:2] == expected[:2]
        for a, b in zip(got[2:], expected[2:]):  # positions exactly, violations to rounding
            assert a.dtype.kind == b.dtype.kind
            if a.dtype.kind == "f":
                np.testing.assert_array_max_ulp(a, b, maxulp=4)
            else:
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_start_with_support_vectors_reads_their_rows_in_place(monkeypatch, dtype):
    """The one-class and ν problems start with ν n support vectors: their gradient ``Q α0 + p`` is read from the
    on-demand Gram where its rows lie, without a float64 copy of them (the block path is refused here), and it is
    the gradient recomputed with numpy."""
    from dkernel.gram._in_memory import OnDemandGram
    from dkernel.solver._gradient import initial_gradient, starting_support
    from dkernel.solver._qp import prepare_problem

    X, y = _problem(n=2400, seed=3)
    gram = OnDemandGram(X, RBFKernel(gamma=0.1), dtype=dtype)
    alpha0 = np.zeros(len(y))
    start = np.random.default_rng(0).choice(len(y), 240, replace=False)
    alpha0[start] = 0.5
    p = -np.ones(len(y))
    prob, q = prepare_problem(gram, y, np.ones(len(y)), p, y[None, :], np.array([y @ alpha0]), alpha0, tol=1e-3,
                              working_set_size=None, max_iter=1000)
    expected = initial_gradient(gram, y, p, *starting_support(y, alpha0), 0, len(y))

    def refused(*args, **kwargs):
        raise AssertionError("the starting gradient copied the support's rows")

    monkeypatch.setattr(shrinking_module, "initial_gradient", refused)
    G = shrinking_module.ShrinkingGradients(gram, prob, q, shrinks=True).G
    np.testing.assert_allclose(G, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    exact = p + y * (rbf_kernel(X, X[start], gamma=0.1).astype(dtype).astype(np.float64) @ (y[start] * 0.5))
    rounding = 1e-6 if dtype == np.float32 else 1e-10  # a float32 value may round the other way (one ulp)
    np.testing.assert_allclose(G, exact, rtol=0, atol=rounding * np.abs(exact).max())
    assert gram.n_computed == start.size and not gram.whole  # only the support's rows were computed


def test_a_rebuild_reads_only_the_free_support_rows_and_equals_the_exact_gradient(monkeypatch):
    """libsvm's G_bar: the part of the gradient from the variables at C is kept as they reach C or leave it, so
    rebuilding the shrunk variables' gradient reads no row of a variable at C, and gives the exact gradient."""
    X, y = _problem(n=1500, flip=0.3, seed=3)
    K = rbf_kernel(X, gamma=0.1)
    asked, rebuilding = [], []
    unshrink = shrinking_module.ShrinkingGradients.unshrink

    class Recorded(DenseGram):
        def row_source(self, idx):
            if rebuilding:
                asked.append(np.asarray(idx).copy())
            return super().row_source(idx)

    def recorded_unshrink(self):
        rebuilding.append(self.alpha.copy())
        try:
            return unshrink(self)
        finally:
            rebuilding.clear()

    monkeypatch.setattr(shrinking_module.ShrinkingGradients, "unshrink", recorded_unshrink)
    captured = []
    state = shrinking_module.ShrinkingGradients.state
    monkeypatch.setattr(shrinking_module.ShrinkingGradients, "state",
                        lambda self: captured.append(self) or state(self))
    result = solve_qp(Recorded(K), y, 1.0, tol=1e-3, shrinking=True, working_set_size=32)
    at_C = np.flatnonzero(result.alpha >= 1.0)
    assert result.converged and at_C.size > 100 and asked  # many variables at C; rebuilds happened
    read = np.unique(np.concatenate(asked))
    # Rows asked while rebuilding: the free support vectors' and the working set's held rows, never those at C
    # other than held ones (at most one working set of them).
    assert np.intersect1d(read, at_C).size <= 32, (np.intersect1d(read, at_C).size, at_C.size)
    gradients = captured[-1]
    exact = y * (K @ (y * gradients.alpha)) - 1.0
    np.testing.assert_allclose(gradients.G, exact, rtol=1e-9, atol=1e-9)
    # The kept part is the sum over the variables at C, to rounding.
    upper = gradients.alpha >= 1.0
    np.testing.assert_allclose(gradients._upper_sums, K[:, upper] @ y[upper], rtol=1e-9, atol=1e-9)


def test_a_bounded_row_cache_drops_rows_and_the_fit_is_that_of_a_whole_gram(monkeypatch):
    """Rows on demand in a cache smaller than the rows the solver reads: rows are dropped and computed again,
    held rows follow their moves, and the solution is the whole Gram's."""
    from dkernel.gram import _in_memory
    from dkernel.gram._in_memory import OnDemandGram

    monkeypatch.setattr(_in_memory, "MIN_CACHED_ROWS", 200)
    monkeypatch.setattr(_in_memory, "ROW_CACHE_BYTES", 1)
    X, y = _problem(n=2000, flip=0.3, seed=4)
    gram = OnDemandGram(X, RBFKernel(gamma=0.1))
    assert gram.capacity == 200
    computed = []
    evaluate = OnDemandGram._evaluate_rows
    monkeypatch.setattr(OnDemandGram, "_evaluate_rows",
                        lambda self, idx, out: computed.append(idx.copy()) or evaluate(self, idx, out))
    bounded = solve_qp(gram, y, 1.0, tol=1e-6, shrinking=True, working_set_size=32)
    whole = solve_qp(DenseGram(rbf_kernel(X, gamma=0.1)), y, 1.0, tol=1e-6, shrinking=True, working_set_size=32)
    assert bounded.converged and whole.converged
    computed = np.concatenate(computed)
    assert np.count_nonzero(bounded.alpha) > 400 and computed.size > np.unique(computed).size  # dropped, computed again
    assert abs(bounded.objective - whole.objective) <= 1e-9 * abs(whole.objective)
    np.testing.assert_allclose(bounded.alpha, whole.alpha, atol=1e-3)  # the same optimum, to the tolerance


def test_a_gradient_step_split_between_threads_is_the_same_to_the_last_bit(monkeypatch):
    class ThreeThreads(DenseGram):
        threads = 3  # a provider that serves one problem alone (as an on-demand Gram)

    X, y = _problem(n=1500, flip=0.3, seed=4)
    K = rbf_kernel(X, gamma=0.1).astype(np.float32)
    parts = []
    step = shrinking_module.weighted_rows_step

    def counted(M, positions, weights, columns, all_columns, out):
        parts.append(out.size)
        return step(M, positions, weights, columns, all_columns, out)

    monkeypatch.setattr(shrinking_module, "weighted_rows_step", counted)
    monkeypatch.setattr(shrinking_module, "SPLIT_STEP_VALUES", 1500 * 4)  # 1500 columns × 8 rows: 2 parts
    results = {}
    for rows in (DenseGram(K), ThreeThreads(K)):
        parts.clear()
        results[type(rows)] = solve_qp(rows, y, 1.0, tol=1e-3, shrinking=True, working_set_size=32), list(parts)
    (one, one_parts), (three, three_parts) = results[DenseGram], results[ThreeThreads]
    # In three threads the large steps are split in 2 or 3 parts: more calls over the same columns in all.
    assert len(three_parts) > len(one_parts) and sum(three_parts) == sum(one_parts)
    assert one.converged and three.converged
    np.testing.assert_array_equal(three.alpha, one.alpha)  # the same sums, in the same order
    assert three.n_iter == one.n_iter


def test_the_threads_of_a_gradient_step_stop_with_the_solver(monkeypatch):
    from dkernel.gram._in_memory import OnDemandGram

    monkeypatch.setattr(shrinking_module, "SPLIT_STEP_VALUES", 1)
    pools = []
    close = shrinking_module.ShrinkingGradients.close

    def closing(self):
        pools.append(self._split._pool)
        close(self)
        assert self._split._pool is None

    monkeypatch.setattr(shrinking_module.ShrinkingGradients, "close", closing)
    X, y = _problem(n=600, seed=5)
    solve_qp(OnDemandGram(X, RBFKernel(gamma=0.1), threads=2), y, 1.0, tol=1e-3, working_set_size=32)
    assert len(pools) == 1 and pools[0] is not None and pools[0]._shutdown
    solve_qp(SubsetGram(DenseGram(rbf_kernel(X, gamma=0.1)), np.arange(600)), y, 1.0, tol=1e-3, working_set_size=32)
    assert len(pools) == 2 and pools[1] is None  # a subset serves one of several problems: one thread
