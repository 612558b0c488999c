"""Tests of dkernel.gram._sources: the Gram protocol, in memory, on the fly with a row cache, and on a subset."""

import pickle

import cloudpickle
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel

from dkernel.gram._sources import (
    ColumnSlab,
    DenseGram,
    KernelGram,
    SubsetGram,
    as_gram,
    principal_submatrix,
    source_columns,
    source_dask,
    source_diag,
    source_n,
)
from dkernel.kernels import RBFKernel
from dkernel.solver import solve_qp

from _reference import make_data


# ------------------------------------------------------------------ DenseGram
def test_dense_gram_answers_the_provider_methods():
    K = rbf_kernel(make_data(30)[0])
    gram = DenseGram(K, chunk=8)
    idx = [4, 0, 4, 29]
    np.testing.assert_array_equal(gram.rows(idx), K[idx])
    np.testing.assert_array_equal(gram.submatrix(idx, 5, 17), K[idx, 5:17])
    np.testing.assert_array_equal(gram.diag(), np.diagonal(K))
    np.testing.assert_array_equal(gram.block(3, 1), K[24:, 8:16])
    np.testing.assert_array_equal(gram.principal_submatrix([2, 7]), K[np.ix_([2, 7], [2, 7])])
    np.testing.assert_array_equal(gram.dask.compute(), K)
    assert gram.dask.chunks == ((8, 8, 8, 6), (8, 8, 8, 6))
    assert gram.n == 30 and gram.shape == (30, 30) and gram.to_numpy() is K


@pytest.mark.parametrize("dtype, kept", [(np.float32, np.float32), (np.float64, np.float64), (np.int64, np.float64)])
def test_dense_gram_keeps_float_dtypes_and_converts_others(dtype, kept):
    assert DenseGram(np.eye(3, dtype=dtype)).dtype == kept


@pytest.mark.parametrize("K", [np.ones((3, 4)), np.ones(3), sp.identity(3, format="csr")], ids=["wide", "1-D", "sparse"])
def test_dense_gram_refuses_what_is_not_a_square_dense_matrix(K):
    with pytest.raises(ValueError, match="square|sparse"):
        DenseGram(K)


def test_column_slab_holds_only_its_columns_and_pickles():
    K = rbf_kernel(make_data(20)[0])
    slab = DenseGram(K).column_slab(6, 13)
    assert isinstance(slab, ColumnSlab) and slab.K_cols.shape == (20, 7) and slab.n == 20
    np.testing.assert_array_equal(slab.submatrix([3, 1], 6, 13), K[[3, 1], 6:13])
    np.testing.assert_array_equal(slab.submatrix([3], 8, 10), K[[3], 8:10])
    with pytest.raises(ValueError, match="outside the slab"):
        slab.submatrix([3], 5, 10)
    copy = pickle.loads(pickle.dumps(slab))
    np.testing.assert_array_equal(copy.submatrix([0, 19], 6, 13), K[[0, 19], 6:13])


def test_a_slab_of_every_column_serves_whole_rows():
    K = rbf_kernel(make_data(12)[0])
    np.testing.assert_array_equal(DenseGram(K).column_slab(0, 12).rows([5, 2]), K[[5, 2]])


# ----------------------------------------------------------------- KernelGram
def test_kernel_gram_cache_returns_exact_rows():
    X = np.random.default_rng(0).normal(size=(40, 3))
    K = rbf_kernel(X)
    gram = KernelGram(X, rbf_kernel, cache_bytes=10 * 8 * 40)
    for idx in ([1, 2, 3], [3, 1, 30, 30], list(range(20)), [2, 39, 0]):
        np.testing.assert_allclose(gram.rows(idx), K[idx], rtol=1e-12)
    np.testing.assert_allclose(gram.diag(), 1.0)


def test_kernel_gram_cache_hits_compute_nothing_and_evictions_recompute():
    X = np.random.default_rng(1).normal(size=(30, 4))
    gram = KernelGram(X, "rbf", gamma=0.2, cache_bytes=4 * 8 * 30)
    assert gram._cache.capacity == 4
    gram.rows([0, 1, 2])
    assert gram.n_computed == 3
    gram.rows([2, 0, 1, 0])
    assert gram.n_computed == 3  # all hits
    gram.rows([1, 5])
    assert gram.n_computed == 4  # 5 is new, 1 is cached
    gram.rows([6, 7])  # evicts the two least recently used rows: 0 and 2
    assert gram.n_computed == 6
    gram.rows([1, 5, 6, 7])
    assert gram.n_computed == 6
    gram.rows([0])
    assert gram.n_computed == 7


def test_kernel_gram_without_cache_computes_every_row():
    X = make_data(25)[0]
    gram = KernelGram(X, "rbf", gamma=0.5, cache_bytes=0)
    for _ in range(3):
        np.testing.assert_allclose(gram.rows([3, 4]), rbf_kernel(X[[3, 4]], X, gamma=0.5), rtol=1e-12)
    assert gram.n_computed == 6


@pytest.mark.parametrize("kernel", ["object", "function"])
def test_kernel_gram_rows_blocks_and_diagonal_equal_the_kernel(kernel):
    X = make_data(50)[0]
    K = rbf_kernel(X, gamma=0.3)
    spec = RBFKernel(gamma=0.3) if kernel == "object" else (lambda A, B: rbf_kernel(A, B, gamma=0.3))
    gram = KernelGram(X, spec, chunk=16, cache_bytes=20 * 8 * 50)
    np.testing.assert_allclose(gram.rows([49, 0, 7]), K[[49, 0, 7]], rtol=1e-12)
    np.testing.assert_allclose(gram.submatrix([3, 9], 10, 40), K[[3, 9], 10:40], rtol=1e-12)
    np.testing.assert_allclose(gram.block(1, 3), K[16:32, 48:], rtol=1e-12)
    np.testing.assert_allclose(gram.diag(), np.ones(50), rtol=1e-12)
    np.testing.assert_allclose(gram.dask.compute(), K, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gram.columns([4, 30]).compute(), K[:, [4, 30]], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gram.principal_submatrix([1, 5]), K[np.ix_([1, 5], [1, 5])], rtol=1e-12)
    assert (gram.kernel is None) == (kernel == "function")


def test_kernel_gram_with_a_function_takes_no_kernel_parameters():
    with pytest.raises(TypeError, match="kernel function"):
        KernelGram(np.eye(3), rbf_kernel, gamma=1.0)


def test_kernel_gram_refuses_a_negative_cache():
    with pytest.raises(ValueError, match="cache_bytes"):
        KernelGram(np.eye(3), "linear", cache_bytes=-1)


def test_kernel_gram_pickles_without_its_cache():
    X = make_data(30)[0]
    gram = KernelGram(X, lambda A, B: rbf_kernel(A, B, gamma=0.4), cache_bytes=10 * 8 * 30)
    gram.rows(list(range(10)))
    payload = cloudpickle.dumps(gram)
    assert len(payload) < X.nbytes + 10 * 8 * 30  # the cached rows do not travel
    copy = cloudpickle.loads(payload)
    assert copy._cache.capacity == 10 and (copy._cache._slot_of == -1).all()
    np.testing.assert_allclose(copy.rows([2, 29]), rbf_kernel(X[[2, 29]], X, gamma=0.4), rtol=1e-12)
    named = pickle.loads(pickle.dumps(KernelGram(X, "rbf", gamma=0.4)))
    np.testing.assert_allclose(named.rows([2, 29]), rbf_kernel(X[[2, 29]], X, gamma=0.4), rtol=1e-12)


def test_views_over_a_kernel_gram_read_rows_through_its_cache():
    from dkernel.centering import Centering
    from dkernel.views import CenteredGram

    X, y = make_data(40)
    base = KernelGram(X, "rbf", gamma=0.3, cache_bytes=40 * 8 * 40)
    view = CenteredGram(base, Centering.class_balanced(y))
    view.rows([1, 2, 3])
    computed = base.n_computed
    view.rows([3, 2, 1])
    assert base.n_computed == computed


def test_a_column_slab_of_a_kernel_gram_caches_its_own_rows():
    """What one solver worker evaluates: its columns, each working-set row once while it stays cached."""
    X, y = make_data(50)
    gram = KernelGram(X, "rbf", gamma=0.3, cache_bytes=8 * 20 * 10)  # 10 rows of the 20-column slab
    slab = gram.column_slab(30, 50)
    assert gram.column_slab(0, 50) is gram
    K = rbf_kernel(X, gamma=0.3)
    np.testing.assert_allclose(slab.submatrix([4, 7, 4], 30, 50), K[[4, 7, 4], 30:50], rtol=1e-12)
    assert slab.n_computed == 2
    np.testing.assert_allclose(slab.submatrix([7, 1], 30, 50), K[[7, 1], 30:50], rtol=1e-12)
    assert slab.n_computed == 3  # row 7 came from the cache
    np.testing.assert_allclose(slab.submatrix([7], 0, 10), K[[7], 0:10], rtol=1e-12)  # other columns: evaluated
    assert slab.n_computed == 3 and gram.n_computed == 0
    copy = pickle.loads(pickle.dumps(slab))
    assert copy.n_computed == 0 and (copy._cache._slot_of == -1).all() and copy._cache._slot_of.size == 50
    np.testing.assert_allclose(copy.submatrix([49], 30, 50), K[[49], 30:50], rtol=1e-12)
    for count in range(12):  # more rows than the cache holds: evicted rows are evaluated again
        slab.submatrix([count + 10], 30, 50)
    before = slab.n_computed
    slab.submatrix([10], 30, 50)
    assert slab.n_computed == before + 1


def test_views_and_subsets_of_a_kernel_gram_ship_cached_column_slabs():
    from dkernel.centering import Centering
    from dkernel.views import CenteredGram

    X, y = make_data(60)
    gram = KernelGram(X, "rbf", gamma=0.3)
    view = CenteredGram(SubsetGram(gram, np.arange(0, 60, 2)), Centering.class_balanced(y[::2]))
    slab = view.column_slab(10, 25)
    assert type(slab.base.base).__name__ == "KernelColumnSlab"
    np.testing.assert_allclose(slab.submatrix([1, 2, 29], 10, 25), view.rows([1, 2, 29])[:, 10:25], atol=1e-12)


def test_solver_on_a_small_cache_reaches_the_dense_solution():
    X, y = make_data(120, d=4, seed=3)
    K = rbf_kernel(X, gamma=0.25)
    dense = solve_qp(DenseGram(K), y, 1.0, tol=1e-6, working_set_size=16)
    gram = KernelGram(X, lambda A, B: rbf_kernel(A, B, gamma=0.25), cache_bytes=20 * 8 * 120)
    res = solve_qp(gram, y, 1.0, tol=1e-6, working_set_size=16)
    assert gram.n_computed > 20
    assert res.objective == pytest.approx(dense.objective, rel=1e-9)
    np.testing.assert_allclose(res.alpha, dense.alpha, atol=1e-4)


def test_kernel_gram_of_float32_data_keeps_float32():
    X = make_data(20)[0].astype(np.float32)
    gram = KernelGram(X, "rbf", gamma=0.5)
    assert gram.dtype == np.float32 and gram.rows([1, 2]).dtype == np.float32


# ----------------------------------------------------------------- SubsetGram
def test_subset_gram_is_the_principal_submatrix():
    X = make_data(40)[0]
    K = rbf_kernel(X, gamma=0.5)
    index = np.array([3, 17, 5, 39, 0])
    for base in (DenseGram(K, chunk=16), KernelGram(X, "rbf", gamma=0.5, chunk=16)):
        sub = SubsetGram(base, index)
        expected = K[np.ix_(index, index)]
        assert sub.n == 5 and sub.shape == (5, 5)
        np.testing.assert_allclose(sub.rows([4, 1]), expected[[4, 1]], rtol=1e-12)
        np.testing.assert_allclose(sub.diag(), np.diagonal(expected), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(sub.dask.compute()), expected, rtol=1e-12)


# ----------------------------------------------------------- reading a source
def test_any_source_is_read_alike():
    K = rbf_kernel(make_data(30)[0])
    idx = [7, 2]
    for source in (K, DenseGram(K, chunk=8), source_dask(K)):
        assert source_n(source) == 30
        np.testing.assert_allclose(source_diag(source), np.diagonal(K))
        np.testing.assert_allclose(principal_submatrix(source, idx), K[np.ix_(idx, idx)])
        np.testing.assert_allclose(np.asarray(source_columns(source, idx)), K[:, idx])
        np.testing.assert_allclose(np.asarray(source_dask(source)), K)


def test_as_gram_wraps_an_array_and_refuses_what_is_not_a_gram():
    assert isinstance(as_gram(np.eye(3)), DenseGram)
    gram = DenseGram(np.eye(3))
    assert as_gram(gram) is gram
    with pytest.raises(TypeError, match="is not a Gram matrix"):
        as_gram(source_dask(np.eye(3)))
    with pytest.raises(ValueError, match="square"):
        source_n(np.ones((2, 3)))
