"""Tests of dkernel.views (lazy centered, shifted and normalized views) and dkernel.views (Graf & Borer's b')."""

import math
import warnings

import numpy as np
import pytest
import zarr

from dkernel.centering import Centering
from dkernel.exceptions import ArtifactPathError
from dkernel.gram import GramMatrix
from dkernel.kernels import NormalizedKernel, PolynomialKernel
from dkernel.gram._sources import DenseGram, KernelGram
from dkernel.views import GrafThresholdError, graf_intercept, graf_threshold, weight_norm
from dkernel.views import CenteredGram, NormalizedGram, ShiftedGram

from _reference import make_data, poly_feature_map, translated_gram

PARAMS = dict(gamma=0.5, coef0=1.0, degree=2)


def _bases(X, tmp_path):
    K = PolynomialKernel(**PARAMS)(X)
    return {
        "dense": DenseGram(K, chunk=64),
        "kernel": KernelGram(X, "poly", chunk=64, **PARAMS),
        "memory": GramMatrix.compute(X, kernel="poly", chunk=64, progress=False, **PARAMS),
        "store": GramMatrix.compute(X, kernel="poly", store=tmp_path / "K.zarr", chunk=64, progress=False, **PARAMS),
    }


def test_views_follow_the_gram_reading_interface(tmp_path):
    X, y = make_data(150)
    for name, base in _bases(X, tmp_path).items():
        for view in (CenteredGram(base, Centering.standard(150)), NormalizedGram(base)):
            assert view.n == 150 and view.shape == (150, 150) and view.chunks == (64, 64)
            assert view.dtype == np.float64
            full = view.to_numpy()
            np.testing.assert_allclose(full, full.T, atol=1e-12)
            idx = np.array([149, 3, 3, 70])
            np.testing.assert_allclose(view.rows(idx), full[idx], atol=1e-12, err_msg=name)
            np.testing.assert_allclose(view.submatrix(idx, 60, 130), full[idx, 60:130], atol=1e-12)
            np.testing.assert_allclose(view.diag(), np.diagonal(full), atol=1e-12)
            np.testing.assert_allclose(view.block(2, 0), full[128:, :64], atol=1e-12)
            assert view.dask.chunks == ((64, 64, 22), (64, 64, 22))


def test_centered_test_kernel_equals_translated_features():
    X, y = make_data(120)
    X_test = np.random.default_rng(3).normal(size=(25, 3))
    Phi, Phi_test = poly_feature_map(X, **PARAMS), poly_feature_map(X_test, **PARAMS)
    for centering in (Centering.class_balanced(y), Centering.sampled(y, 20, random_state=0)):
        view = CenteredGram(KernelGram(X, "poly", **PARAMS), centering)
        a = centering.dense() @ Phi
        expected = translated_gram(Phi, a, Phi_test)
        np.testing.assert_allclose(view.cross(X_test), expected, atol=1e-10)
        np.testing.assert_allclose(view.cross(X_test, columns=[4, 2]), expected[:, [4, 2]], atol=1e-10)
        np.testing.assert_allclose(view.cross_diag(X_test), ((Phi_test - a) ** 2).sum(1), atol=1e-10)
        K_test = PolynomialKernel(**PARAMS)(X_test, X)
        np.testing.assert_allclose(view.center_test(K_test), expected, atol=1e-10)


def test_cross_on_a_stored_gram_needs_the_training_data(tmp_path):
    X, y = make_data(80)
    gram = GramMatrix.compute(X, kernel="poly", store=tmp_path / "K.zarr", chunk=32, progress=False, **PARAMS)
    view = CenteredGram(gram, Centering.standard(80))
    X_test = X[:5] + 0.1
    with pytest.raises(ValueError, match="pass X_train"):
        view.cross(X_test)
    expected = CenteredGram(KernelGram(X, "poly", **PARAMS), Centering.standard(80)).cross(X_test)
    np.testing.assert_allclose(view.cross(X_test, X), expected, atol=1e-10)


def test_shifted_gram_is_a_translation_by_the_requested_length():
    X, _ = make_data(90)
    X_test = np.random.default_rng(1).normal(size=(10, 3))
    Phi, Phi_test = poly_feature_map(X, **PARAMS), poly_feature_map(X_test, **PARAMS)
    view = ShiftedGram(KernelGram(X, "poly", **PARAMS), 30.0, random_state=0)
    a = view.centering.dense() @ Phi
    assert np.linalg.norm(a) == pytest.approx(30.0, rel=1e-12)
    assert view.h0 == pytest.approx(900.0)
    np.testing.assert_allclose(view.to_numpy(), translated_gram(Phi, a), atol=1e-9)
    np.testing.assert_allclose(view.cross(X_test), translated_gram(Phi, a, Phi_test), atol=1e-9)
    # The same seed gives the same direction; a sampled direction reads only n_support columns.
    again = ShiftedGram(KernelGram(X, "poly", **PARAMS), 30.0, random_state=0)
    np.testing.assert_array_equal(again.h, view.h)
    sampled = ShiftedGram(KernelGram(X, "poly", **PARAMS), 30.0, random_state=0, n_support=15)
    assert sampled.centering.n_support == 15 and sampled.h0 == pytest.approx(900.0)


def test_recentering_shifted_data_undoes_the_shift():
    X, y = make_data(100)
    X_test = X[:7] * 0.5
    base = KernelGram(X, "poly", **PARAMS)
    shifted = ShiftedGram(base, 1e3, random_state=2)
    for centering in (Centering.standard(100), Centering.class_balanced(y)):
        recentered = CenteredGram(shifted, centering)
        direct = CenteredGram(base, centering)
        # Both are the data translated to the same origin; rounding grows with |a|² = 1e6.
        np.testing.assert_allclose(recentered.to_numpy(), direct.to_numpy(), atol=1e-8)
        np.testing.assert_allclose(recentered.cross(X_test), direct.cross(X_test), atol=1e-8)
        np.testing.assert_allclose(recentered.rows([3, 4]), direct.rows([3, 4]), atol=1e-8)


def test_views_plug_into_the_solver_row_interface():
    X, y = make_data(60)
    view = CenteredGram(KernelGram(X, "rbf", gamma=0.3), Centering.class_balanced(y))
    dense = DenseGram(view.to_numpy())
    idx = [5, 1, 40]
    np.testing.assert_allclose(view.rows(idx), dense.rows(idx), atol=1e-14)
    np.testing.assert_allclose(view.diag(), dense.diag(), atol=1e-14)
    assert view.n == dense.n


def test_materialized_view_is_a_gram_store_describing_the_operator(tmp_path):
    X, y = make_data(100)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=tmp_path / "K.zarr", chunk=32, progress=False,
                              dtype="float32")
    view = NormalizedGram(CenteredGram(gram, Centering.sampled(y, 20, random_state=0)))
    stored = view.to_zarr(tmp_path / "view.zarr")
    assert stored.dtype == np.float32 and stored.chunks == (32, 32)
    np.testing.assert_allclose(stored.rows([0, 99]), view.rows([0, 99]), rtol=1e-6, atol=1e-6)
    operator = dict(zarr.open_group(str(tmp_path / "view.zarr")).attrs)["operator"]
    assert operator["name"] == "normalized" and operator["base"]["name"] == "centered"
    assert operator["base"]["centering"]["scheme"] == "sampled-class-balanced"
    with pytest.raises(ArtifactPathError, match="already holds a dkernel Gram store"):
        view.to_zarr(tmp_path / "view.zarr")


def test_normalized_gram_matches_the_normalized_kernel():
    X, _ = make_data(70)
    X_test = X[:9] + 0.3
    kernel = PolynomialKernel(**PARAMS)
    view = NormalizedGram(KernelGram(X, kernel, chunk=32))
    reference = NormalizedKernel(kernel)
    np.testing.assert_allclose(view.to_numpy(), reference(X), atol=1e-12)
    np.testing.assert_allclose(view.cross(X_test), reference(X_test, X), atol=1e-12)
    np.testing.assert_array_equal(view.diag(), np.ones(70))
    np.testing.assert_array_equal(view.cross_diag(X_test), np.ones(9))


def test_normalizing_a_centered_gram_uses_the_centered_diagonal():
    X, y = make_data(50)
    X_test = X[:4] - 0.2
    Phi, Phi_test = poly_feature_map(X, **PARAMS), poly_feature_map(X_test, **PARAMS)
    centering = Centering.class_balanced(y)
    a = centering.dense() @ Phi
    Z, Zt = Phi - a, Phi_test - a
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    Zt /= np.linalg.norm(Zt, axis=1, keepdims=True)
    view = NormalizedGram(CenteredGram(KernelGram(X, "poly", **PARAMS), centering))
    np.testing.assert_allclose(view.to_numpy(), Z @ Z.T, atol=1e-10)
    np.testing.assert_allclose(view.cross(X_test), Zt @ Z.T, atol=1e-10)


# --------------------------------------------------------------------------- #
# Graf & Borer eq. (3)
# --------------------------------------------------------------------------- #


def test_graf_threshold_bisects_the_margin_arcs():
    assert graf_threshold(0.0, 4.0) == pytest.approx(0.0, abs=1e-15)
    b, w = 0.3, 5.0
    expected = math.cos((math.acos(b - 1 / w) + math.acos(b + 1 / w)) / 2)
    assert graf_threshold(b, w) == pytest.approx(expected)
    # The arcs from b' to the two margins are equal.
    bp = graf_threshold(b, w)
    assert math.acos(b - 1 / w) - math.acos(bp) == pytest.approx(math.acos(bp) - math.acos(b + 1 / w))
    assert graf_threshold(-b, w) == pytest.approx(-bp)
    # Large ‖w‖ (narrow margins): b' → b.
    assert graf_threshold(b, 1e6) == pytest.approx(b, abs=1e-9)


def test_graf_threshold_clips_with_a_warning_or_raises():
    with pytest.warns(RuntimeWarning, match="leave \\[-1, 1\\].*clipped"):
        value = graf_threshold(0.8, 2.0)
    assert math.isfinite(value)
    assert value == pytest.approx(math.cos((math.acos(0.3) + math.acos(1.0)) / 2))
    with pytest.raises(GrafThresholdError, match="misses the unit sphere"):
        graf_threshold(0.8, 2.0, on_invalid="raise")
    assert issubclass(GrafThresholdError, ValueError)
    with pytest.raises(ValueError, match="w_norm"):
        graf_threshold(0.1, 0.0)


def test_graf_intercept_moves_the_hyperplane_of_a_trained_svm():
    from sklearn.svm import SVC

    X, y = make_data(120, seed=6)
    view = NormalizedGram(KernelGram(X, "poly", **PARAMS))
    K = view.to_numpy()
    clf = SVC(kernel="precomputed", C=10.0, tol=1e-10).fit(K, y)
    w = weight_norm(clf.dual_coef_, K[np.ix_(clf.support_, clf.support_)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c_new = graf_intercept(clf.intercept_, w)
        b_new = graf_threshold(-clf.intercept_[0] / w, w)
    assert math.isfinite(c_new)
    assert c_new == pytest.approx(-b_new * w)


def test_kernel_gram_of_sparse_data_equals_dense():
    import scipy.sparse as sp

    X = np.random.default_rng(5).normal(size=(70, 6))
    X[np.abs(X) < 0.8] = 0
    dense, sparse = KernelGram(X, "rbf", gamma=0.3, chunk=32), KernelGram(sp.csr_matrix(X), "rbf", gamma=0.3, chunk=32)
    np.testing.assert_allclose(sparse.dask.compute(), dense.dask.compute(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sparse.columns([3, 9, 40]).compute(), dense.columns([3, 9, 40]).compute(), atol=1e-14)
    np.testing.assert_allclose(sparse.rows([5, 1]), dense.rows([5, 1]), atol=1e-14)
    np.testing.assert_array_equal(np.diag(sparse.dask.compute()), np.ones(70))


def test_normalization_refuses_a_zero_diagonal_naming_the_samples():
    from dkernel import SVC

    X, y = make_data(40, seed=3)
    X[[7, 12]] = 0.0  # all-zero rows: K(x, x) = 0 under a linear kernel, no direction in feature space
    K = X @ X.T
    with pytest.raises(ValueError, match=r"undefined for 2 of the 40 training samples: K\(x, x\) <= 0 at sample "
                                         r"index 7, 12"):
        NormalizedGram(DenseGram(K))
    with pytest.raises(ValueError, match=r"K\(x, x\) <= 0 at sample index 7, 12 \(e.g. an all-zero row"):
        SVC(kernel="linear", normalize=True).fit(X, y)
    with pytest.raises(ValueError, match="Graf & Borer eq. 2"):
        SVC(kernel="linear", normalize=True, normalize_bias_correction=True).fit(X, y)
    # The same rows under (1 + x·z)², whose K(x, x) = 1 > 0, normalize.
    assert SVC(kernel="poly", degree=2, gamma=1.0, coef0=1.0, normalize=True).fit(X, y).score(X, y) > 0.5
