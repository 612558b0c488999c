"""OnDemandGram: rows on demand, the rest of the Gram once they would pass n/2 (where a value is costly); SVC's
choice for one binary problem."""

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import make_blobs, make_circles, make_classification, make_moons
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC as LibSVC

from dkernel import SVC
from dkernel.gram._in_memory import dense_symmetric_gram
from dkernel.gram import _in_memory
from dkernel.gram._in_memory import ON_DEMAND_MIN_SAMPLES, PROMOTE_FRACTION, OnDemandGram, promotion_threshold
from dkernel.gram._sources import DenseGram
from dkernel.kernels import PolynomialKernel, RBFKernel
from dkernel.solver import solve_qp

from _reference import assert_rounded_once


@pytest.fixture(autouse=True)
def every_value_costly(monkeypatch, request):
    """The rest of the Gram is what most tests here check: computed at n / 2 whatever the features (small X)."""
    if "cheap" not in request.node.name:
        monkeypatch.setattr(_in_memory, "PROMOTE_MIN_FEATURES", 0)


def test_rows_stay_on_demand_where_values_are_cheap_and_the_rest_is_computed_where_costly():
    rng = np.random.default_rng(0)
    narrow, wide = rng.normal(size=(300, 10)), rng.normal(size=(300, 200))
    assert promotion_threshold(narrow) == 300 and promotion_threshold(wide) == 150
    # Sparse data by the pairs of nonzeros their products compute: a few features in every row cost more
    # than all of a bag of words.
    dense_columns = scipy.sparse.hstack([scipy.sparse.csr_matrix(rng.normal(size=(300, 4))),
                                         scipy.sparse.random(300, 3000, density=0.01, random_state=0)]).tocsr()
    words = scipy.sparse.random(300, 3000, density=0.01, random_state=0, format="csr")
    assert promotion_threshold(dense_columns) == 150 and promotion_threshold(words) == 300
    gram = OnDemandGram(narrow, RBFKernel(gamma=0.1))
    whole = dense_symmetric_gram(narrow, RBFKernel(gamma=0.1))
    np.testing.assert_allclose(gram.rows(np.arange(290)), whole[:290], rtol=1e-12, atol=1e-14)
    assert gram.held == "on-demand" and gram.n_computed == 290  # past n / 2: still rows on demand
    np.testing.assert_allclose(gram.rows(np.arange(300)), whole, rtol=1e-12, atol=1e-14)
    assert gram.held == "on-demand" and gram.n_computed == 300


def test_rows_on_demand_until_n_over_2_then_the_rest_of_the_gram():
    X = np.random.default_rng(0).normal(size=(400, 6))
    kernel = RBFKernel(gamma=0.2)
    gram = OnDemandGram(X, kernel)
    whole = dense_symmetric_gram(X, kernel)
    assert gram.threshold == int(PROMOTE_FRACTION * 400) == 200
    order = np.random.default_rng(1).permutation(400)
    first = order[:199]
    np.testing.assert_allclose(gram.rows(first), whole[first], rtol=1e-12, atol=1e-14)
    matrix, positions, columns = gram.row_source(first)
    assert columns is None
    np.testing.assert_array_equal(positions, np.arange(199))  # the first rows of one array, in the order asked
    assert gram.held == "on-demand" and gram.n_computed == 199
    # A request of mostly new rows would pass n / 2: the rest of the Gram is computed into the same array.
    busy = np.r_[order[199:300], 7]
    np.testing.assert_allclose(gram.rows(busy), whole[busy], rtol=1e-12, atol=1e-14)
    assert gram.held == "float64" and gram.n_computed == 199  # the rest is not counted as rows on demand
    again, kept, _ = gram.row_source(first)
    assert again is matrix and np.array_equal(kept, positions)  # rows held by the solver stay where they were
    np.testing.assert_allclose(gram.rows(np.arange(400)), whole, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(np.sort(gram.row_source(np.arange(400))[1]), np.arange(400))
    np.testing.assert_array_equal(gram.diag(), np.ones(400))


def test_the_rest_is_computed_only_where_the_requests_show_most_rows_still_to_come():
    X = np.random.default_rng(0).normal(size=(400, 6))
    kernel = RBFKernel(gamma=0.2)
    whole = dense_symmetric_gram(X, kernel)
    # Requests that ask again for rows held, 5 new rows in 90: the rows needed are about n / 2 (a solve near its
    # end): rows stay on demand, to the end.
    settled = OnDemandGram(X, kernel)
    settled.rows(np.arange(170))  # 170 >= 0.8 · 200: the rows asked from here show what is to come
    for k in range(170, 230, 5):
        np.testing.assert_allclose(settled.rows(np.r_[0:170:2, k : k + 5]), whole[np.r_[0:170:2, k : k + 5]],
                                   rtol=1e-12, atol=1e-14)
    assert settled.held == "on-demand" and settled.n_computed == 230 and settled.threshold == 400
    np.testing.assert_allclose(settled.rows(np.arange(400)), whole, rtol=1e-12, atol=1e-14)
    assert settled.held == "on-demand" and settled.n_computed == 400
    # Requests of mostly new rows (30 in 50): most of the Gram is to come, and the rest is computed past n / 2.
    busy = OnDemandGram(X, kernel)
    busy.rows(np.arange(170))
    for k in range(170, 230, 30):
        busy.rows(np.r_[0:20, k : k + 30])
    assert busy.held == "float64" and busy.n_computed == 200
    np.testing.assert_allclose(busy.rows(np.arange(400)), whole, rtol=1e-12, atol=1e-14)


def test_a_sample_asked_twice_in_one_request_is_computed_once():
    X = np.random.default_rng(3).normal(size=(100, 4))
    kernel = RBFKernel(gamma=0.3)
    gram = OnDemandGram(X, kernel)
    idx = np.array([5, 9, 5, 2, 9, 9])
    np.testing.assert_allclose(gram.rows(idx), kernel.block(X[idx], X), rtol=1e-14)
    positions = gram.row_source(idx)[1]
    assert gram.n_computed == 3 and sorted(set(positions.tolist())) == [0, 1, 2]
    assert positions[0] == positions[2] and positions[1] == positions[4] == positions[5]
    np.testing.assert_array_equal(gram.row_source([2, 5, 9, 11])[1][:3], positions[[3, 0, 1]])  # held: not again
    assert gram.n_computed == 4


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_threads_of_a_request_split_its_columns_and_each_evaluates_every_row(monkeypatch, dtype, sparse):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 24)) * (rng.random((3000, 24)) < 0.5)  # more features than a direct evaluation's
    data = scipy.sparse.csr_matrix(X) if sparse else X
    kernel = RBFKernel(gamma=0.05)
    shapes = []
    evaluate_into = RBFKernel.evaluate_into

    def recorded(self, A, Z, out, **options):
        shapes.append((A.shape[0], Z.shape[0]))
        return evaluate_into(self, A, Z, out, **options)

    monkeypatch.setattr(RBFKernel, "evaluate_into", recorded)
    gram = OnDemandGram(data, kernel, dtype=dtype, threads=3)
    idx = rng.choice(3000, 30, replace=False)
    rows = gram.rows(idx)
    # Three threads, each over a third of the columns, with the 30 rows in one block.
    assert sorted(shapes) == [(30, 1000)] * 3
    np.testing.assert_allclose(rows, rbf_kernel(X[idx], X, gamma=0.05), rtol=1e-6 if dtype == np.float32 else 1e-13)
    shapes.clear()
    gram.rows(rng.choice(np.setdiff1d(np.arange(3000), idx), 7, replace=False))
    assert shapes == [(7, 3000)]  # a request of fewer than 16 rows: one thread
    gram.close()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_over_few_features_are_evaluated_directly_by_each_thread_over_its_columns(monkeypatch, dtype):
    """Up to DIRECT_MAX_FEATURES dense features no product: each thread sums the distances of every row over its
    own columns, and the rows are the kernel's to rounding (1 exactly at a row's own sample)."""
    from dkernel.kernels._blocks import DIRECT_MAX_FEATURES

    rng = np.random.default_rng(9)
    calls = []
    evaluate_direct_into = RBFKernel.evaluate_direct_into

    def recorded(self, A, Zt, out):
        calls.append((A.shape[0], Zt.shape[1], out.shape))
        return evaluate_direct_into(self, A, Zt, out)

    monkeypatch.setattr(RBFKernel, "evaluate_direct_into", recorded)
    for d, direct in [(1, True), (DIRECT_MAX_FEATURES, True), (DIRECT_MAX_FEATURES + 1, False)]:
        X = rng.normal(size=(3000, d))
        gram = OnDemandGram(X, RBFKernel(gamma=0.5 / d), dtype=dtype, threads=3)
        idx = rng.choice(3000, 30, replace=False)
        rows = gram.rows(idx)
        assert calls == ([(30, 1000, (30, 1000))] * 3 if direct else [])
        np.testing.assert_allclose(rows, rbf_kernel(X[idx], X, gamma=0.5 / d),
                                   rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-7 if dtype == np.float32 else 0)
        assert np.all(rows[np.arange(30), idx] == 1.0)
        calls.clear()
        gram.close()
    # Sparse data, float32 data and other kernels keep the product.
    X = rng.normal(size=(3000, 4))
    for data, kernel in [(scipy.sparse.csr_matrix(X), RBFKernel(gamma=0.1)),
                         (X.astype(np.float32), RBFKernel(gamma=0.1)), (X, PolynomialKernel(degree=2, gamma=0.1))]:
        assert kernel.direct_columns(data) is None
        OnDemandGram(data, kernel, dtype=dtype).rows(np.arange(20))
    assert calls == []


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kernel", [RBFKernel(gamma=0.2), PolynomialKernel(degree=2, gamma=0.1, coef0=1.0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_rest_of_the_gram_equals_the_whole_gram(kernel, dtype, sparse):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1300, 7))
    if sparse:
        X[rng.random(X.shape) < 0.7] = 0.0
        X = scipy.sparse.csr_matrix(X)
    gram = OnDemandGram(X, kernel, dtype=dtype)
    whole = dense_symmetric_gram(X, kernel, dtype=dtype)
    # Requests of 40 rows, some asked again, until the rest is computed (several bands and tiles of it,
    # over 650 computed rows in scattered order).
    for _ in range(40):
        idx = rng.choice(1300, 40)
        np.testing.assert_allclose(gram.rows(idx), whole[idx], rtol=1e-6 if dtype == np.float32 else 1e-12,
                                   atol=1e-7 if dtype == np.float32 else 1e-14)
    assert gram.held == np.dtype(dtype).name and gram.rows(np.arange(4)).dtype == dtype
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gram.rows(np.arange(1300)), whole, rtol=rtol, atol=rtol / 10)


def _problem(name, n=1500):
    """Binary problems with few support vectors (rows on demand) and with many (the rest of the Gram computed)."""
    if name == "apart":
        X, y = make_classification(n_samples=n, n_features=8, class_sep=3.0, flip_y=0.0, random_state=3)
        return X, y, RBFKernel(gamma=0.02), "on-demand"
    if name == "overlap":
        X, y = make_classification(n_samples=n, n_features=8, class_sep=0.5, flip_y=0.2, random_state=3)
        return X, y, RBFKernel(gamma=0.02), "float64"
    if name == "moons":
        X, y = make_moons(n_samples=n, noise=0.2, random_state=0)
        return X, y, RBFKernel(gamma=2.0), "on-demand"
    if name == "circles, polynomial":
        X, y = make_circles(n_samples=n, noise=0.1, factor=0.5, random_state=0)
        return X, y, PolynomialKernel(degree=2, gamma=1.0, coef0=1.0), "on-demand"
    if name == "wide blobs":
        X, y = make_blobs(n_samples=n, centers=2, n_features=30, cluster_std=6.0, random_state=0)
        return 3 * X, y, RBFKernel(gamma=1e-3), "float64"
    X, y = make_classification(n_samples=n, n_features=40, n_informative=10, random_state=1)
    X[np.abs(X) < 1.0] = 0.0
    return scipy.sparse.csr_matrix(X), y, RBFKernel(gamma=0.02), "float64"


@pytest.mark.parametrize("name", ["apart", "overlap", "moons", "circles, polynomial", "wide blobs", "sparse"])
def test_a_fit_on_demand_has_the_dual_coefficients_of_a_whole_gram_fit(name):
    # Rows on demand round in the last bit otherwise than a whole Gram's (other blocks, other threads): the
    # fit solves the same problem to rounding. Solved tightly (tol 1e-10), the dual coefficients agree to far
    # better than 1e-7; a row held at the wrong place, or changed under the solver, would move them by far more.
    X, y, kernel, held = _problem(name)
    y = np.where(y == 1, 1.0, -1.0)
    gram = OnDemandGram(X, kernel)
    on_demand = solve_qp(gram, y, 1.0, tol=1e-10)
    whole = solve_qp(DenseGram(dense_symmetric_gram(X, kernel)), y, 1.0, tol=1e-10)
    assert gram.held == held  # few support vectors need few rows; many have the rest of the Gram computed
    assert on_demand.converged and whole.converged
    np.testing.assert_allclose(on_demand.alpha, whole.alpha, rtol=0, atol=1e-7 * np.abs(whole.alpha).max())
    assert abs(on_demand.intercept - whole.intercept) <= 1e-7 * max(1.0, abs(whole.intercept))
    assert abs(on_demand.objective - whole.objective) <= 1e-12 * abs(whole.objective)


def test_values_read_before_the_rest_is_computed_are_kept_and_mirrored():
    # The solver's gradient holds the values it has read: computing the rest of the Gram changes none of them, and
    # the remaining samples' values at the columns computed are those values (K[u, s] = K[s, u]), not values
    # computed again, which BLAS may round otherwise. A row's value at its own sample is the diagonal the solver
    # reads: large norms make a point's evaluated distance to itself round above zero.
    X = np.random.default_rng(5).normal(size=(600, 5)) * 30
    kernel = RBFKernel(gamma=1e-4)
    gram = OnDemandGram(X, kernel)
    first = np.random.default_rng(6).permutation(600)[:290]
    for request in np.array_split(first, 7):  # requests of 41 or 42 rows, each split between threads
        gram.rows(request)
    read = gram.rows(first).copy()
    assert gram.held == "on-demand"
    np.testing.assert_array_equal(read[np.arange(290), first], gram.diag()[first])
    full = gram.rows(np.arange(600))  # the rest
    assert gram.held == "float64"
    np.testing.assert_array_equal(full[first], read)
    rest = np.setdiff1d(np.arange(600), first)
    np.testing.assert_array_equal(full[np.ix_(rest, first)], read[:, rest].T)
    np.testing.assert_array_equal(np.diag(full), gram.diag())
    np.testing.assert_allclose(full, rbf_kernel(X, gamma=1e-4), rtol=1e-12)


def test_svc_solves_one_large_binary_problem_on_demand_as_libsvm():
    X, y = make_blobs(n_samples=ON_DEMAND_MIN_SAMPLES + 100, centers=2, n_features=4, cluster_std=2.0,
                      random_state=0)
    ours = SVC(kernel="rbf", gamma=0.05, C=1.0, client=False).fit(X, y)
    ref = LibSVC(kernel="rbf", gamma=0.05, C=1.0).fit(X, y)
    assert ours.gram_dtype_ == "on-demand" and ours.support_.shape[0] < 0.1 * X.shape[0]
    np.testing.assert_array_equal(np.sort(ours.support_), np.sort(ref.support_))
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-2)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def test_several_problems_and_small_problems_keep_the_whole_gram():
    X, y = make_blobs(n_samples=ON_DEMAND_MIN_SAMPLES + 100, centers=3, n_features=4, random_state=1)
    # Above 16 MiB of float64 the whole Gram is held in float32, as libsvm's kernel cache.
    assert SVC(kernel="rbf", gamma=0.5, client=False).fit(X, y).gram_dtype_ == "float32"
    assert SVC(kernel="rbf", gamma=0.5, client=False).fit(X[:500], y[:500] == 0).gram_dtype_ == "float64"
    centered = SVC(kernel="rbf", gamma=0.5, centering="standard", client=False).fit(X, y == 0)
    assert centered.gram_dtype_ == "float64"  # centering subtracts means of K: float32 would lose digits


def test_a_float32_gram_is_the_float64_gram_rounded_once():
    X = np.random.default_rng(4).normal(size=(2100, 5)) * 30  # large norms: float32 distances would cancel
    kernel = RBFKernel(gamma=1e-3)
    expected = rbf_kernel(X, gamma=1e-3)
    assert_rounded_once(dense_symmetric_gram(X, kernel, dtype=np.float32), expected)
    gram = OnDemandGram(X, kernel, dtype=np.float32)
    gram.rows(np.arange(0, 2100, 2))  # 1050 rows on demand, then the rest
    gram.rows(np.arange(1, 2100, 2))
    assert gram.held == "float32"
    assert_rounded_once(gram.rows(np.arange(2100)), expected)


def test_svc_on_a_float32_gram_matches_libsvm():
    X, y = make_classification(n_samples=1600, n_features=10, flip_y=0.1, random_state=5)
    ours = SVC(kernel="rbf", gamma=0.05, C=1.0, client=False).fit(X, y)
    ref = LibSVC(kernel="rbf", gamma=0.05, C=1.0).fit(X, y)
    assert ours.gram_dtype_ == "float32"
    np.testing.assert_array_equal(np.sort(ours.support_), np.sort(ref.support_))
    # Both stop at a KKT tolerance of 1e-3: decision values agree to a few times that.
    decision = ref.decision_function(X)
    np.testing.assert_allclose(ours.decision_function(X), decision, atol=5e-3)
    clear = np.abs(decision) > 5e-3  # the same labels wherever the decision is not within that of zero
    np.testing.assert_array_equal(ours.predict(X)[clear], ref.predict(X)[clear])
    assert clear.mean() > 0.99


def test_a_bounded_row_cache_keeps_the_rows_asked_last_and_moves_them_in_a_new_view(monkeypatch):
    from dkernel.gram._in_memory import cached_rows

    monkeypatch.setattr(_in_memory, "MIN_CACHED_ROWS", 40)
    monkeypatch.setattr(_in_memory, "ROW_CACHE_BYTES", 1)
    monkeypatch.setattr(_in_memory, "PROMOTE_MIN_FEATURES", 10**6)  # values cheap: rows only on demand
    X = np.random.default_rng(5).normal(size=(300, 6))
    kernel = RBFKernel(gamma=0.2)
    assert cached_rows(X, np.float64) == 40 and cached_rows(X[:30], np.float64) == 30
    gram = OnDemandGram(X, kernel)
    assert gram.capacity == 40 and gram.M.shape == (300, 300)  # address space for every row, 40 of them written
    first, positions, _ = gram.row_source(np.arange(30))
    assert first is gram.M
    same, _, _ = gram.row_source(np.arange(30, 40))  # fits: nothing moves
    assert same is first and gram.n_computed == 40
    moved, positions, _ = gram.row_source(np.r_[35:40, 100:120])  # 20 new rows: the oldest dropped
    assert moved is not first and np.shares_memory(moved, gram.M)
    expected = kernel.block(X[np.r_[35:40, 100:120]], X)
    np.testing.assert_allclose(moved[positions], expected, rtol=1e-12)
    assert gram.n_computed <= 40
    kept = np.flatnonzero(gram._position >= 0)
    # The rows of this request, then the most recently asked for up to half the capacity (ties: in the order held).
    np.testing.assert_array_equal(kept, np.r_[0:10, 30:40, 100:120])
    for i in kept:  # every row held is the kernel row of its sample
        np.testing.assert_allclose(gram.M[gram._position[i]], kernel.block(X[i : i + 1], X)[0], rtol=1e-12)
    rows = gram.rows(np.arange(100, 105))  # a copy: the cache's rows move
    assert not np.shares_memory(rows, gram.M)
    with pytest.raises(ValueError, match="41 distinct rows asked at once from an on-demand Gram that holds 40"):
        gram.row_source(np.arange(200, 241))


def test_a_row_cache_that_computes_again_as_many_rows_as_it_holds_doubles(monkeypatch):
    monkeypatch.setattr(_in_memory, "MIN_CACHED_ROWS", 40)
    monkeypatch.setattr(_in_memory, "ROW_CACHE_BYTES", 1)
    monkeypatch.setattr(_in_memory, "PROMOTE_MIN_FEATURES", 10**6)
    X = np.random.default_rng(6).normal(size=(300, 6))
    kernel = RBFKernel(gamma=0.2)
    gram = OnDemandGram(X, kernel)
    computed = []
    evaluate = gram._evaluate_rows
    monkeypatch.setattr(gram, "_evaluate_rows", lambda idx, out: computed.append(idx.size) or evaluate(idx, out))
    # A solver cycling through 60 rows, 20 a request, with room for 40: every row is dropped before it is asked
    # for again. Once 40 rows were computed twice, the next request grows the cache to 80 instead of dropping
    # (its own 20 rows, dropped before, are computed a second time); after that nothing is computed again.
    cycle = [np.arange(a, a + 20) for a in (0, 20, 40)]
    for _ in range(6):
        for idx in cycle:
            M, positions, _ = gram.row_source(idx)
            np.testing.assert_allclose(M[positions], kernel.block(X[idx], X), rtol=1e-12)
    assert gram.capacity == 80
    assert computed == [20] * 6  # 60 rows once, then again: 0-19 and 20-39 in a cache of 40, 40-59 in one of 80
    assert gram.n_recomputed == 20 and gram.n_computed == 60
    for _ in range(4):  # a cycle of 200 rows grows it to the whole Gram (160 would not hold them), never past it
        for a in range(0, 200, 20):
            gram.row_source(np.arange(a, a + 20))
    assert gram.capacity == 300
    computed.clear()
    for a in range(0, 200, 20):
        gram.row_source(np.arange(a, a + 20))
    assert computed == []
