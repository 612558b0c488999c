"""OnDemandGram: kernel rows on demand, the whole Gram once they pass n/8; SVC's choice for one binary problem."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification
from sklearn.svm import SVC as LibSVC

from dkernel import SVC
from dkernel._dense import dense_symmetric_gram
from dkernel._on_demand_gram import ON_DEMAND_MIN_SAMPLES, PROMOTE_FRACTION, OnDemandGram
from dkernel._sources import DenseGram
from dkernel.kernels import RBFKernel
from dkernel.solver import solve_qp


def test_rows_on_demand_until_n_over_8_then_the_whole_gram():
    X = np.random.default_rng(0).normal(size=(400, 6))
    kernel = RBFKernel(gamma=0.2)
    gram = OnDemandGram(X, kernel)
    whole = dense_symmetric_gram(X, kernel)
    below = int(PROMOTE_FRACTION * 400) - 1
    np.testing.assert_allclose(gram.rows(np.arange(below)), whole[:below], rtol=1e-12, atol=1e-14)
    assert gram.held == "on-demand" and gram.K is None and gram.n_computed == below
    np.testing.assert_allclose(gram.rows([below, 7, below]), whole[[below, 7, below]], rtol=1e-12, atol=1e-14)
    assert gram.held == "float64" and gram.K.shape == (400, 400)
    np.testing.assert_array_equal(gram.rows([3, 399]), gram.K[[3, 399]])
    np.testing.assert_array_equal(gram.diag(), np.diagonal(gram.K))
    assert gram.n_computed == below + 1  # the whole Gram is not counted as rows on demand


@pytest.mark.parametrize("separation", ["apart", "overlap"])
def test_solution_equals_the_whole_gram(separation):
    sep, flip = (3.0, 0.0) if separation == "apart" else (0.5, 0.2)
    X, y = make_classification(n_samples=3000, n_features=8, class_sep=sep, flip_y=flip, random_state=3)
    y = np.where(y == 1, 1.0, -1.0)
    kernel = RBFKernel(gamma=0.02)
    gram = OnDemandGram(X, kernel)
    # A tight tolerance: at 1e-3 the two stop at different points of a flat optimum, whose α differ by up to 0.07
    # ("overlap") when rows evaluated in other blocks (or by another BLAS kernel) differ in the last bits.
    on_demand = solve_qp(gram, y, 1.0, tol=1e-6)
    whole = solve_qp(DenseGram(dense_symmetric_gram(X, kernel)), y, 1.0, tol=1e-6)
    # Few support vectors need few rows; many promote to the whole Gram while solving.
    assert gram.held == ("on-demand" if separation == "apart" else "float64")
    assert abs(on_demand.objective - whole.objective) <= 1e-9 * abs(whole.objective)
    np.testing.assert_array_equal(on_demand.alpha > 0, whole.alpha > 0)
    np.testing.assert_allclose(on_demand.alpha, whole.alpha, atol=1e-3)


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
    np.testing.assert_array_equal(dense_symmetric_gram(X, kernel, dtype=np.float32),
                                  dense_symmetric_gram(X, kernel).astype(np.float32))
    gram = OnDemandGram(X, kernel, dtype=np.float32)
    gram.rows(np.arange(gram.threshold))
    assert gram.held == "float32"
    np.testing.assert_array_equal(gram.K, dense_symmetric_gram(X, kernel).astype(np.float32))


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
