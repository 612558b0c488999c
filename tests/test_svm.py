"""dkernel.SVC against libsvm (scikit-learn's SVC), and its corrections against the explicit route."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, make_classification
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as LibSVC

from dkernel import datasets
from dkernel.centering import Centering
from dkernel.exceptions import NonFiniteInputError
from dkernel.views import graf_intercept
from dkernel.svm import SVC, load_model


def libsvm_dual_objective(ref, K):
    """½ cᵀKc − Σ|c| of a binary scikit-learn SVC (c = dual_coef_, K the training Gram)."""
    c = ref.dual_coef_[0]
    Ks = K[np.ix_(ref.support_, ref.support_)]
    return 0.5 * c @ Ks @ c - np.abs(c).sum()


def assert_same_optimum(ours, ref, X_test, K_train=None):
    dec_ours = ours.decision_function(X_test)
    dec_ref = ref.decision_function(X_test)
    assert np.max(np.abs(dec_ours - dec_ref)) <= 1e-3
    agree = np.mean(ours.predict(X_test) == ref.predict(X_test))
    assert agree >= 0.999
    if K_train is not None:
        obj_ref = libsvm_dual_objective(ref, K_train)
        obj = float(ours.objective_[0])
        assert abs(obj - obj_ref) <= 1e-5 * abs(obj_ref)


def _standardized_split(X, y, seed=0):
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), scaler.transform(X_te), y_tr, y_te


# --------------------------------------------------------------- libsvm parity
@pytest.mark.parametrize(
    "params",
    [
        dict(kernel="rbf", gamma=0.05, C=10.0),
        dict(kernel="poly", degree=2, gamma=0.1, coef0=1.0, C=1.0),
        dict(kernel="linear", C=0.5),
        dict(kernel="sigmoid", gamma=0.01, coef0=0.0, C=1.0),
    ],
)
def test_wdbc_same_optimum_as_libsvm(params):
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y)
    ours = SVC(tol=1e-6, **params).fit(X_tr, y_tr)
    ref = LibSVC(tol=1e-6, **params).fit(X_tr, y_tr)
    metric = params["kernel"]
    kparams = {k: v for k, v in params.items() if k in ("gamma", "degree", "coef0")}
    K = pairwise_kernels(X_tr, metric=metric, **kparams)
    assert_same_optimum(ours, ref, X_te, K)


def test_digits_pair_same_optimum_as_libsvm():
    X, y = load_digits(return_X_y=True)
    mask = np.isin(y, (3, 8))
    X_tr, X_te, y_tr, _ = train_test_split(X[mask], y[mask], test_size=0.3, random_state=1)
    ours = SVC(kernel="rbf", gamma=0.001, C=10, tol=1e-6).fit(X_tr, y_tr)
    ref = LibSVC(kernel="rbf", gamma=0.001, C=10, tol=1e-6).fit(X_tr, y_tr)
    assert_same_optimum(ours, ref, X_te, pairwise_kernels(X_tr, metric="rbf", gamma=0.001))


@pytest.mark.parametrize("shape", ["ovo", "ovr"])
def test_digits_ten_classes_same_as_libsvm(shape):
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, _ = train_test_split(X, y, test_size=0.3, random_state=2, stratify=y)
    ours = SVC(kernel="rbf", gamma=0.001, C=10, tol=1e-6, decision_function_shape=shape).fit(X_tr, y_tr)
    ref = LibSVC(kernel="rbf", gamma=0.001, C=10, tol=1e-6, decision_function_shape=shape).fit(X_tr, y_tr)
    assert_same_optimum(ours, ref, X_te)
    # libsvm's layout of the one-vs-one coefficients and intercepts.
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-4)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-4)


def test_glass_multiclass_same_as_libsvm(data_home):
    data = datasets.load("glass", data_home=data_home)
    X_tr, X_te, y_tr, _ = _standardized_split(data.X, data.y, seed=3)
    ours = SVC(kernel="rbf", gamma=0.2, C=10, tol=1e-6).fit(X_tr, y_tr)
    ref = LibSVC(kernel="rbf", gamma=0.2, C=10, tol=1e-6).fit(X_tr, y_tr)
    assert_same_optimum(ours, ref, X_te)


@pytest.mark.slow
def test_synthetic_5000_same_optimum_as_libsvm():
    X, y = make_classification(n_samples=6000, n_features=20, n_informative=8, flip_y=0.05,
                               class_sep=0.8, random_state=0)
    X_tr, X_te, y_tr = X[:5000], X[5000:], y[:5000]
    ours = SVC(kernel="rbf", gamma=0.05, C=1.0, tol=1e-6).fit(X_tr, y_tr)
    ref = LibSVC(kernel="rbf", gamma=0.05, C=1.0, tol=1e-6, cache_size=1000).fit(X_tr, y_tr)
    assert_same_optimum(ours, ref, X_te, pairwise_kernels(X_tr, metric="rbf", gamma=0.05))


def test_class_weight_and_sample_weight_match_libsvm():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y, seed=4)
    cw = {0: 3.0, 1: 0.5}
    ours = SVC(kernel="rbf", gamma=0.05, C=2.0, tol=1e-6, class_weight=cw).fit(X_tr, y_tr)
    ref = LibSVC(kernel="rbf", gamma=0.05, C=2.0, tol=1e-6, class_weight=cw).fit(X_tr, y_tr)
    assert_same_optimum(ours, ref, X_te)
    sw = np.random.default_rng(0).uniform(0.5, 2.0, size=y_tr.shape[0])
    ours = SVC(kernel="rbf", gamma=0.05, C=2.0, tol=1e-6).fit(X_tr, y_tr, sample_weight=sw)
    ref = LibSVC(kernel="rbf", gamma=0.05, C=2.0, tol=1e-6).fit(X_tr, y_tr, sample_weight=sw)
    assert_same_optimum(ours, ref, X_te)


def test_balanced_class_weights_equal_libsvm_class_weight():
    from dkernel.svm._classes import _upper_bounds

    X, y = load_digits(return_X_y=True)
    y = np.where(y < 3, y, 3)  # four uneven classes
    ref = LibSVC(kernel="rbf", gamma=0.001, class_weight="balanced", max_iter=1)
    with pytest.warns(Warning):  # one iteration: only the class weights are used
        ref.fit(X, y)
    classes, y_index = np.unique(y, return_inverse=True)
    C_i = _upper_bounds(2.0, "balanced", classes, y_index, None)
    np.testing.assert_array_equal(C_i, 2.0 * ref.class_weight_[y_index])
    ours = SVC(kernel="rbf", gamma=0.001, C=2.0, tol=1e-6, class_weight="balanced", client=False).fit(X, y)
    ref = LibSVC(kernel="rbf", gamma=0.001, C=2.0, tol=1e-6, class_weight="balanced").fit(X, y)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-4)


def test_precomputed_and_sparse_inputs_agree_with_dense():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y, seed=5)
    dense = SVC(kernel="rbf", gamma=0.05, C=10, tol=1e-6).fit(X_tr, y_tr)
    sparse = SVC(kernel="rbf", gamma=0.05, C=10, tol=1e-6).fit(sp.csr_matrix(X_tr), y_tr)
    K_tr = pairwise_kernels(X_tr, metric="rbf", gamma=0.05)
    K_te = pairwise_kernels(X_te, X_tr, metric="rbf", gamma=0.05)
    pre = SVC(kernel="precomputed", C=10, tol=1e-6).fit(K_tr, y_tr)
    d = dense.decision_function(X_te)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X_te)), d, atol=1e-6)
    np.testing.assert_allclose(pre.decision_function(K_te), d, atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_dense_and_sparse_fits_give_the_same_model_to_the_last_bit(kernel):
    """iris has duplicate samples and a linear kernel of rank 4: the optimum is not unique, and a solver
    fed kernel values that differ in the last bit may stop at another optimal point (2e-3 apart in
    ``dual_coef_`` before sparse data small enough were made dense for the Gram)."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    params = {"kernel": kernel, "gamma": 0.1, "C": 1.0, "client": False}
    dense = SVC(**params).fit(X, y)
    sparse = SVC(**params).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    np.testing.assert_array_equal(sparse.dual_coef_.toarray(), dense.dual_coef_)
    np.testing.assert_array_equal(sparse.intercept_, dense.intercept_)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("load, held", [(load_iris, "float64"), (load_digits, "float32")])
def test_a_fit_from_a_store_gives_the_model_of_a_fit_in_memory(tmp_path, load, held):
    """The store written for a fit holds the kernel values in the precision the solver reads in memory
    (float32 above 16 MiB, as libsvm's cache): the same values, the same solver path, the same model."""
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    params = {"kernel": "rbf", "gamma": 0.05, "C": 1.0, "client": False}
    memory = SVC(**params).fit(X, y)
    stored = SVC(store=tmp_path, **params).fit(X, y)
    assert memory.gram_dtype_ == held and stored.gram_dtype_ == "store"
    from dkernel.gram import GramMatrix

    assert GramMatrix.open(stored.store_path_).dtype == held
    np.testing.assert_array_equal(stored.support_, memory.support_)
    np.testing.assert_allclose(stored.dual_coef_, memory.dual_coef_, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(stored.intercept_, memory.intercept_, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(stored.decision_function(X), memory.decision_function(X), rtol=1e-7, atol=1e-12)


def test_sparse_data_too_large_to_copy_dense_keep_the_sparse_product(monkeypatch):
    from dkernel.svm import _training

    X, y = make_classification(n_samples=300, n_features=40, random_state=2)
    X[np.abs(X) < 1] = 0
    monkeypatch.setattr(_training, "DENSE_COPY_BYTES", X.size * 8 - 1)
    monkeypatch.setattr(_training, "DENSE_COPY_MEMORY_FRACTION", 0.0)
    assert sp.issparse(_training.kernel_input(sp.csr_matrix(X)))
    sparse = SVC(kernel="rbf", gamma=0.02, tol=1e-8, client=False).fit(sp.csr_matrix(X), y)
    dense = SVC(kernel="rbf", gamma=0.02, tol=1e-8, client=False).fit(X, y)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X), atol=1e-7)


def test_large_sparse_data_are_made_dense_where_their_products_cost_more_than_blas(monkeypatch):
    # Above DENSE_COPY_BYTES, by what a sparse product computes per value: pairs of nonzeros in common. A few
    # features nonzero in every row (tabular data with sparse columns) cost more than d features of BLAS; a bag of
    # words (many features, few in common) costs less and stays sparse.
    from dkernel.svm import _training

    rng = np.random.default_rng(0)
    tabular = sp.hstack([sp.csr_matrix(rng.normal(size=(400, 16))),
                         sp.random(400, 240, density=0.05, random_state=1)]).tocsr()
    words = sp.random(400, 5000, density=0.002, random_state=2, format="csr")
    monkeypatch.setattr(_training, "DENSE_COPY_BYTES", 1024)
    made = _training.kernel_input(tabular)
    assert isinstance(made, np.ndarray) and np.array_equal(made, tabular.toarray())
    assert sp.issparse(_training.kernel_input(words))
    y = (tabular[:, 0].toarray().ravel() > 0).astype(int)
    from_sparse = SVC(kernel="rbf", gamma=0.05, tol=1e-8, client=False).fit(tabular, y)
    from_dense = SVC(kernel="rbf", gamma=0.05, tol=1e-8, client=False).fit(tabular.toarray(), y)
    np.testing.assert_array_equal(from_sparse.dual_coef_.toarray(), from_dense.dual_coef_)  # the same BLAS products


def test_dask_input_stays_lazy_in_prediction():
    da = pytest.importorskip("dask.array")
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y, seed=6)
    clf = SVC(kernel="rbf", gamma=0.05, C=10).fit(da.from_array(X_tr, chunks=(100, -1)), y_tr)
    lazy = da.from_array(X_te, chunks=(50, 10))
    dec = clf.decision_function(lazy)
    pred = clf.predict(lazy)
    assert isinstance(dec, da.Array) and isinstance(pred, da.Array)
    np.testing.assert_allclose(dec.compute(), clf.decision_function(X_te))
    np.testing.assert_array_equal(pred.compute(), clf.predict(X_te))


@pytest.mark.parametrize("method", ["predict", "decision_function", "predict_proba"])
def test_nan_in_a_lazy_test_block_is_reported_at_its_row_of_the_whole_array(method):
    """Each block of a Dask array is checked alone: its error names the block's rows and the row of the whole
    array (row 350 of X, not row 50 of the block starting at row 300)."""
    da = pytest.importorskip("dask.array")
    X, y = load_breast_cancer(return_X_y=True)
    clf = SVC(kernel="rbf", gamma=1e-6, probability=True, random_state=0).fit(X, y)
    X_bad = X.copy()
    X_bad[350, 2] = np.nan
    lazy = getattr(clf, method)(da.from_array(X_bad, chunks=(100, 30)))
    with pytest.raises(NonFiniteInputError, match=r"X has 1 NaN value in its rows 300 to 399 \(first in row 350\)"):
        lazy.compute(scheduler="sync")


def test_one_vs_rest_winner_take_all():
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=7, stratify=y)
    clf = SVC(kernel="rbf", gamma=0.001, C=10, multiclass="ovr").fit(X_tr, y_tr)
    dec = clf.decision_function(X_te)
    assert dec.shape == (X_te.shape[0], 10)
    np.testing.assert_array_equal(clf.predict(X_te), clf.classes_[dec.argmax(axis=1)])
    # Each column is the binary SVM of that class against the rest.
    ref = LibSVC(kernel="rbf", gamma=0.001, C=10, tol=1e-3).fit(X_tr, (y_tr == 4).astype(int))
    assert np.max(np.abs(dec[:, 4] - ref.decision_function(X_te))) < 1e-2
    assert clf.score(X_te, y_te) > 0.95


# ------------------------------------------- corrections against the explicit route
def _centered(K, gamma):
    h = K @ gamma
    return K - h[:, None] - h[None, :] + gamma @ h, h


@pytest.mark.parametrize("scheme", ["class-balanced", "standard"])
def test_centering_predicts_through_original_kernel(scheme):
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y, seed=8)
    params = dict(kernel="poly", degree=2, gamma=1.0, coef0=1.0)
    clf = SVC(C=1.0, tol=1e-8, centering=scheme, **params).fit(X_tr, y_tr)
    # Explicit route: centre the Gram, solve with libsvm, then correct b by Δb (Meilă eq. 19).
    y_pm = np.where(y_tr == 1, 1.0, -1.0)
    centering = Centering.class_balanced(y_pm) if scheme == "class-balanced" else Centering.standard(len(y_pm))
    K = pairwise_kernels(X_tr, metric="poly", degree=2, gamma=1.0, coef0=1.0)
    K_a, h = _centered(K, centering.dense())
    ref = LibSVC(kernel="precomputed", C=1.0, tol=1e-8).fit(K_a, y_tr)
    c = ref.dual_coef_[0]
    b = ref.intercept_[0] - c @ h[ref.support_]
    K_te = pairwise_kernels(X_te, X_tr[ref.support_], metric="poly", degree=2, gamma=1.0, coef0=1.0)
    dec_ref = K_te @ c + b
    dec = clf.decision_function(X_te)
    assert np.max(np.abs(dec - dec_ref)) <= 1e-3 * max(1.0, np.abs(dec_ref).max())
    # Centering leaves the classifier unchanged (translation invariance).
    plain = SVC(C=1.0, tol=1e-8, **params).fit(X_tr, y_tr)
    assert np.mean(plain.predict(X_te) == clf.predict(X_te)) >= 0.99
    assert clf.delta_b_[0] != 0.0


def test_sampled_centering_is_reproducible_and_equivalent():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y, seed=9)
    a = SVC(kernel="rbf", gamma=0.05, C=10, tol=1e-8, centering="class-balanced", centering_sample=40,
            random_state=0).fit(X_tr, y_tr)
    b = SVC(kernel="rbf", gamma=0.05, C=10, tol=1e-8, centering="class-balanced", centering_sample=40,
            random_state=0).fit(X_tr, y_tr)
    plain = SVC(kernel="rbf", gamma=0.05, C=10, tol=1e-8).fit(X_tr, y_tr)
    np.testing.assert_array_max_ulp(a.decision_function(X_te), b.decision_function(X_te), maxulp=4)
    np.testing.assert_allclose(a.decision_function(X_te), plain.decision_function(X_te), atol=1e-3)


def test_normalization_matches_explicit_route_with_graf_correction():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, _ = _standardized_split(X, y, seed=10)
    params = dict(kernel="poly", degree=3, gamma=0.5, coef0=1.0)
    clf = SVC(C=5.0, tol=1e-8, normalize=True, normalize_bias_correction=True, **params).fit(X_tr, y_tr)
    K = pairwise_kernels(X_tr, metric="poly", degree=3, gamma=0.5, coef0=1.0)
    d = np.sqrt(np.diag(K))
    ref = LibSVC(kernel="precomputed", C=5.0, tol=1e-8).fit(K / np.outer(d, d), y_tr)
    c = ref.dual_coef_[0]
    Kn_sv = (K / np.outer(d, d))[np.ix_(ref.support_, ref.support_)]
    w_norm = np.sqrt(c @ Kn_sv @ c)
    b_prime = graf_intercept(ref.intercept_[0], w_norm)
    K_te = pairwise_kernels(X_te, X_tr[ref.support_], metric="poly", degree=3, gamma=0.5, coef0=1.0)
    d_te = np.sqrt(pairwise_kernels(X_te, metric="poly", degree=3, gamma=0.5, coef0=1.0).diagonal())
    dec_ref = (K_te / np.outer(d_te, d[ref.support_])) @ c + b_prime
    # Both solved to 1e-8: decision values agree to 2e-7. Graf's shift b' − b is 4e-5 here, and ‖w‖ off by √2
    # moves it by 2e-5 to 4e-5: the shift itself is compared, and the decision values to what the solvers support.
    np.testing.assert_allclose(clf.decision_function(X_te), dec_ref, rtol=0, atol=1e-6)
    shift = clf.intercept_[0] - clf.uncorrected_intercept_[0]
    assert shift == pytest.approx(b_prime - ref.intercept_[0], rel=1e-4) and abs(shift) > 1e-5


# ---------------------------------------------------------- scikit-learn tools
def test_pipeline_grid_search_and_cross_validation():
    X, y = load_breast_cancer(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), SVC(kernel="rbf"))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.mean() > 0.9
    grid = GridSearchCV(pipe, {"svc__C": [0.1, 10.0], "svc__centering": [None, "class-balanced"]}, cv=3)
    grid.fit(X, y)
    assert grid.best_score_ > 0.9


def test_precomputed_cross_validation_slices_the_gram():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    K = pairwise_kernels(X, metric="rbf", gamma=0.05)
    ours = cross_val_score(SVC(kernel="precomputed", C=10), K, y, cv=3)
    ref = cross_val_score(LibSVC(kernel="precomputed", C=10), K, y, cv=3)
    np.testing.assert_allclose(ours, ref, atol=0.01)


def _wdbc_standardized():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_store_folder_under_cross_validation_equals_the_storeless_run(tmp_path):
    from sklearn.model_selection import KFold, cross_validate

    from dkernel.gram import GramMatrix

    X, y = _wdbc_standardized()
    params = {"kernel": "rbf", "gamma": 0.05, "C": 10.0}
    folder = tmp_path / "grams"
    cv = KFold(5, shuffle=True, random_state=0)
    stored = cross_validate(SVC(store=folder, **params), X, y, cv=cv, return_estimator=True)
    plain = cross_validate(SVC(**params), X, y, cv=cv, return_estimator=True)
    np.testing.assert_array_equal(stored["test_score"], plain["test_score"])
    for (train, test), a, b in zip(cv.split(X, y), stored["estimator"], plain["estimator"]):
        assert a.gram_dtype_ == "store" and b.gram_dtype_ != "store"
        np.testing.assert_allclose(a.decision_function(X[test]), b.decision_function(X[test]), rtol=0, atol=1e-6)
        # The fold's store holds the Gram of exactly its training rows.
        K = GramMatrix.open(a.store_path_)
        np.testing.assert_allclose(K.rows([0, 5]), pairwise_kernels(X[train][[0, 5]], X[train], metric="rbf",
                                                                    gamma=0.05), rtol=1e-12, atol=1e-12)
    stores = sorted(folder.iterdir())
    assert len(stores) == 5 and {e.store_path_ for e in stored["estimator"]} == {str(p) for p in stores}
    # Fitting a fold's data again finds its store; scores agree with cross_val_score as well.
    train0 = next(iter(cv.split(X, y)))[0]
    again = SVC(store=folder, **params).fit(X[train0], y[train0])
    assert again.store_path_ == stored["estimator"][0].store_path_ and len(list(folder.iterdir())) == 5
    np.testing.assert_array_equal(cross_val_score(SVC(store=folder, **params), X, y, cv=cv), plain["test_score"])


def test_store_folder_under_grid_search_and_an_existing_gram_store(tmp_path):
    from dkernel.exceptions import StoreMismatchError
    from dkernel.gram import GramMatrix

    X, y = _wdbc_standardized()
    folder = tmp_path / "grams"
    grid = GridSearchCV(SVC(store=folder, C=10.0), {"gamma": [0.01, 0.05]}, cv=3).fit(X, y)
    plain = GridSearchCV(SVC(C=10.0), {"gamma": [0.01, 0.05]}, cv=3).fit(X, y)
    np.testing.assert_array_equal(grid.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"])
    assert len(list(folder.iterdir())) == 2 * 3 + 1  # two kernels x three folds, and the refit on all data
    # A path that is itself a Gram store is used as it is when it holds this Gram, refused otherwise.
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, kernel="rbf", gamma=0.05, store=path, progress=False)
    clf = SVC(kernel="rbf", gamma=0.05, C=10.0, store=path).fit(X, y)
    assert clf.store_path_ == str(path)
    np.testing.assert_allclose(clf.decision_function(X), SVC(kernel="rbf", gamma=0.05, C=10.0).fit(X, y)
                               .decision_function(X), rtol=0, atol=1e-6)
    with pytest.raises(StoreMismatchError, match="gamma"):
        SVC(kernel="rbf", gamma=0.01, C=10.0, store=path).fit(X, y)


def test_saved_model_keeps_its_convergence_status(tmp_path):
    from sklearn.exceptions import ConvergenceWarning

    X, y = _wdbc_standardized()
    with pytest.warns(ConvergenceWarning):
        stopped = SVC(kernel="rbf", gamma=0.05, C=10.0, max_iter=1, working_set_size=2).fit(X, y)
    converged = SVC(kernel="rbf", gamma=0.05, C=10.0).fit(X, y)
    assert (stopped.fit_status_, converged.fit_status_) == (1, 0)
    assert load_model(stopped.save(tmp_path / "stopped.zarr")).fit_status_ == 1
    assert load_model(converged.save(tmp_path / "converged.zarr")).fit_status_ == 0


def test_precomputed_gram_matrix_accepted_for_prediction(tmp_path, monkeypatch):
    import dkernel.svm._predict
    from dkernel.gram import GramMatrix

    X, y = _wdbc_standardized()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    K_train = GramMatrix.compute(X_tr, kernel="rbf", gamma=0.05, store=tmp_path / "train.zarr", progress=False)
    K_test = GramMatrix.compute(X_te, X_tr, kernel="rbf", gamma=0.05, store=tmp_path / "test.zarr", chunk=64,
                                progress=False)
    clf = SVC(kernel="precomputed", C=10.0).fit(K_train, y_tr)
    direct = SVC(kernel="rbf", gamma=0.05, C=10.0).fit(X_tr, y_tr)
    dense = pairwise_kernels(X_te, X_tr, metric="rbf", gamma=0.05)
    # Several row blocks of the stored test kernel.
    monkeypatch.setattr(dkernel.svm._predict, "PREDICT_BLOCK_BYTES", 8 * X_tr.shape[0] * 7)
    decision = clf.decision_function(K_test)
    np.testing.assert_allclose(decision, clf.decision_function(dense), rtol=0, atol=1e-12)
    np.testing.assert_allclose(decision, direct.decision_function(X_te), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(clf.predict(K_test), direct.predict(X_te))
    assert clf.score(K_test, y_te) == direct.score(X_te, y_te)
    wrong = GramMatrix.compute(X_te, kernel="rbf", gamma=0.05, progress=False)  # K(X_test, X_test)
    with pytest.raises(ValueError, match=r"shape \(n_test, 398\)"):
        clf.predict(wrong)


def test_check_estimator_passes_with_the_documented_failures_reported_as_expected():
    from sklearn.utils.estimator_checks import check_estimator

    from dkernel.svm import EXPECTED_FAILED_CHECKS, expected_failed_checks

    assert expected_failed_checks(SVC()) == EXPECTED_FAILED_CHECKS
    results = check_estimator(SVC(), expected_failed_checks=expected_failed_checks(SVC()), on_fail=None, on_skip=None)
    status = {r["check_name"]: r["status"] for r in results}
    assert {name for name, s in status.items() if s == "failed"} == set()
    assert {name for name, s in status.items() if s == "xfail"} == set(EXPECTED_FAILED_CHECKS)


@pytest.mark.parametrize("check", ["check_sample_weight_equivalence_on_dense_data",
                                   "check_sample_weight_equivalence_on_sparse_data"])
def test_the_expected_failures_pass_with_a_fixed_gamma_and_a_tight_tolerance(check):
    """The documented reasons are the whole story: weights are handled as repeated samples."""
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("SVC", SVC(gamma=1.0, tol=1e-10))


def test_parametrize_with_checks_marks_the_documented_failures_xfail():
    from sklearn.utils.estimator_checks import parametrize_with_checks

    from dkernel.svm import EXPECTED_FAILED_CHECKS, expected_failed_checks

    decorator = parametrize_with_checks([SVC()], expected_failed_checks=expected_failed_checks)
    marked = {param.values[1].func.__name__: param.marks[0].kwargs["reason"]
              for param in decorator.mark.args[1] if getattr(param, "marks", None)}
    assert marked == EXPECTED_FAILED_CHECKS
    assert {param.marks[0].name for param in decorator.mark.args[1] if getattr(param, "marks", None)} == {"xfail"}


# ----------------------------------------------------- parameter constraints
#: Shared parameters an estimator narrows on purpose, with why (its docstring says so too).
NARROWED = {("GeneralizedBiasSVC", "C"): "finite: eq. (25) weighs the slacks by C"}


def _estimators():
    from dkernel import ConformalSVC, GeneralizedBiasSVC

    return [SVC, ConformalSVC, GeneralizedBiasSVC]


def test_the_svm_estimators_take_their_shared_parameters_from_one_table():
    from dkernel.svm._base import BaseSVM

    for estimator in _estimators():
        params = set(estimator().get_params())
        assert set(estimator._parameter_constraints) == params, estimator.__name__
        for name, constraint in BaseSVM._parameter_constraints.items():
            if name in params and (estimator.__name__, name) not in NARROWED:
                assert estimator._parameter_constraints[name] is constraint, (estimator.__name__, name)
    assert {"shrinking", "working_set_size"} & set(_estimators()[2]().get_params()) == set()


@pytest.mark.parametrize("bad", [
    {"C": 0.0}, {"C": -1.0}, {"kernel": "foo"}, {"gamma": -1.0}, {"gamma": "x"}, {"degree": -1}, {"degree": 1.5},
    {"coef0": np.inf}, {"tol": 0.0}, {"max_iter": -2}, {"cache_size": 0}, {"store": 3}, {"verbose": "x"},
])
def test_bad_shared_parameters_raise_the_same_error_in_every_svm_estimator(bad):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = make_classification(n_samples=30, n_features=4, random_state=0)
    for estimator in _estimators():
        with pytest.raises(InvalidParameterError, match=f"'{next(iter(bad))}' parameter of {estimator.__name__} "
                                                        f"must be"):
            estimator(**bad).fit(X, y)


def test_shared_parameters_accept_what_sklearn_svc_accepts():
    """Every value in scikit-learn's ranges passes, but gamma = 0 and degree = 0 (dkernel's kernels refuse them)."""
    from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

    from dkernel.svm._base import BaseSVM

    theirs = LibSVC._parameter_constraints
    values = {"C": [1e-9, 1.0, np.inf], "degree": [0, 1, 5], "gamma": ["scale", "auto", 0.0, 1e-9, 2.0],
              "coef0": [-3.0, 0, 2.5], "tol": [1e-12, 1.0], "max_iter": [-1, 0, 10], "cache_size": [1e-3, 200],
              "shrinking": [True, False], "verbose": [0, True], "kernel": ["linear", "poly", "rbf", "sigmoid",
                                                                          "precomputed", lambda A, B: A @ B.T]}
    refused = []
    for name, candidates in values.items():
        for value in candidates:
            validate_parameter_constraints({name: theirs[name]}, {name: value}, "sklearn")
            try:
                validate_parameter_constraints({name: BaseSVM._parameter_constraints[name]}, {name: value}, "dkernel")
            except InvalidParameterError:
                refused.append((name, value))
    assert refused == [("degree", 0), ("gamma", 0.0)]


def test_the_sklearn_parameter_validation_check_passes_for_every_svm_estimator():
    from sklearn.utils.estimator_checks import check_param_validation

    for estimator in _estimators():
        check_param_validation(estimator.__name__, estimator())


# ------------------------------------------------------------ persistence
def test_save_load_round_trip(tmp_path):
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, _ = train_test_split(X, y, test_size=0.3, random_state=11)
    clf = SVC(kernel="rbf", gamma=0.001, C=10, centering="class-balanced").fit(X_tr, y_tr)
    path = clf.save(tmp_path / "model.zarr")
    again = load_model(path)
    np.testing.assert_array_equal(again.predict(X_te), clf.predict(X_te))
    np.testing.assert_allclose(again.decision_function(X_te), clf.decision_function(X_te))
    assert not any(p.suffix == ".pkl" for p in (tmp_path / "model.zarr").rglob("*"))
    with pytest.raises(FileExistsError):
        clf.save(path)


def test_interrupted_save_leaves_no_model(tmp_path, monkeypatch):
    X, y = load_breast_cancer(return_X_y=True)
    clf = SVC(kernel="linear", C=0.01).fit(X[:100], y[:100])
    import zarr

    original = zarr.Group.create_array
    calls = {"n": 0}

    def interrupted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(zarr.Group, "create_array", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.save(tmp_path / "model.zarr")
    assert not (tmp_path / "model.zarr").exists()
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------- bad input
def test_bad_input_errors():
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(ValueError, match="single class"):
        SVC().fit(X[:20], np.zeros(20))
    y_nan = y.astype(float)
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SVC().fit(X, y_nan)
    with pytest.raises(ValueError, match="C"):
        SVC(C=0).fit(X, y)
    with pytest.raises(ValueError, match="square"):
        SVC(kernel="precomputed").fit(np.ones((10, 9)), np.arange(10) % 2)
    K = np.random.default_rng(0).normal(size=(10, 10))
    with pytest.raises(ValueError, match="not symmetric"):
        SVC(kernel="precomputed").fit(K, np.arange(10) % 2)
    K = np.eye(10)
    K[2, 2] = np.inf
    with pytest.raises(NonFiniteInputError):
        SVC(kernel="precomputed").fit(K, np.arange(10) % 2)
    X_bad = X.copy()
    X_bad[5, 2] = np.nan
    with pytest.raises(NonFiniteInputError, match="row 5"):
        SVC().fit(X_bad, y)
    with pytest.raises(ValueError, match="normalize"):
        SVC(normalize_bias_correction=True).fit(X, y)


# -------------------------------------------------------------- distributed
@pytest.fixture(scope="module")
def small_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, memory_limit="600MB") as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.mark.slow
def test_fit_on_local_cluster_matches_single_process(small_cluster):
    X, y = make_classification(n_samples=2000, n_features=20, flip_y=0.1, random_state=12)
    single = SVC(kernel="rbf", gamma=0.05, C=1.0, tol=1e-6).fit(X, y)
    on_cluster = SVC(kernel="rbf", gamma=0.05, C=1.0, tol=1e-6, client=small_cluster).fit(X, y)
    np.testing.assert_allclose(on_cluster.decision_function(X), single.decision_function(X), atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("working_set_size", [128, 512])
def test_the_workers_follow_the_solver_path_of_this_process(small_cluster, working_set_size):
    """Same kernel values (rows computed on the fly in float64), same working-set size: the fit on the
    workers takes the steps of the fit in this process, at the default tol, and gives its model to 1e-7.
    (The defaults differ: 512 variables per working set on a cluster, 128 here.)"""
    X, y = make_classification(n_samples=3000, n_features=20, random_state=0)
    X = StandardScaler().fit_transform(X)
    params = {"kernel": "rbf", "gamma": 0.05, "C": 1.0, "cache_size": 0.1, "working_set_size": working_set_size}
    local = SVC(client=False, **params).fit(X, y)
    on_cluster = SVC(client=small_cluster, **params).fit(X, y)
    assert local.gram_dtype_ == on_cluster.gram_dtype_ == "on-the-fly"
    np.testing.assert_array_equal(on_cluster.support_, local.support_)
    np.testing.assert_allclose(on_cluster.dual_coef_, local.dual_coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(on_cluster.intercept_, local.intercept_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(on_cluster.decision_function(X), local.decision_function(X), rtol=1e-7, atol=1e-10)


@pytest.mark.slow
def test_a_cluster_fit_leaves_nothing_held_on_the_cluster(small_cluster):
    X, y = make_classification(n_samples=600, n_features=8, random_state=3)
    SVC(kernel="rbf", gamma=0.1, cache_size=0.5, client=small_cluster).fit(X, y)  # rows on the workers

    def held(dask_scheduler):
        return len(dask_scheduler.tasks)

    deadline = time.monotonic() + 10
    while small_cluster.run_on_scheduler(held) and time.monotonic() < deadline:
        time.sleep(0.1)  # releases reach the scheduler asynchronously
    assert small_cluster.run_on_scheduler(held) == 0


@pytest.mark.slow
def test_client_given_as_a_scheduler_address(scheduler_address):
    X, y = make_classification(n_samples=300, n_features=8, random_state=4)
    # tol=1e-6: in this process a problem of one working set is solved by one SMO run, on the workers by the
    # block solver; both reach the optimum to tol.
    by_address = SVC(kernel="rbf", gamma=0.1, tol=1e-6, cache_size=0.1, client=scheduler_address).fit(X, y)
    local = SVC(kernel="rbf", gamma=0.1, tol=1e-6, client=False).fit(X, y)
    assert by_address.gram_dtype_ == "on-the-fly"  # solved on the workers at that address
    np.testing.assert_allclose(by_address.decision_function(X), local.decision_function(X), atol=1e-6)


@pytest.mark.slow
def test_out_of_core_store_larger_than_worker_memory(small_cluster, tmp_path):
    """The 9000 × 9000 float64 Gram (648 MB) is larger than each worker's 600 MB limit: it
    stays in zarr, the workers read their column slabs of the working-set rows, and the
    fit equals the single-process one."""
    from dkernel.gram import GramMatrix

    X, y = make_classification(n_samples=9000, n_features=16, flip_y=0.1, random_state=13)
    path = tmp_path / "K.zarr"
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.05, store=path, chunk=1000, client=small_cluster,
                              progress=False)
    assert gram.complete and 9000 * 9000 * 8 > 600e6
    stored = GramMatrix.open(path)
    on_cluster = SVC(kernel="precomputed", C=1.0, tol=1e-4, client=small_cluster).fit(stored, y)
    single = SVC(kernel="rbf", gamma=0.05, C=1.0, tol=1e-4).fit(X, y)
    K_test = pairwise_kernels(X[:500], X, metric="rbf", gamma=0.05)
    np.testing.assert_allclose(on_cluster.decision_function(K_test), single.decision_function(X[:500]), atol=1e-6)


def test_sparse_data_with_rows_computed_on_the_fly():
    X, y = make_classification(n_samples=400, n_features=40, random_state=14)
    X[np.abs(X) < 1] = 0
    # client=False: in this process even where a test above left a default client.
    dense = SVC(kernel="rbf", gamma=0.02, C=1.0, client=False).fit(X, y)
    # A 0.5 MB budget holds neither the float64 (1.3 MB) nor the float32 (0.64 MB) 400² Gram:
    # rows are computed from the CSR matrix as needed.
    on_the_fly = SVC(kernel="rbf", gamma=0.02, C=1.0, cache_size=0.5, client=False).fit(sp.csr_matrix(X), y)
    assert dense.gram_dtype_ == "float64" and on_the_fly.gram_dtype_ == "on-the-fly"
    np.testing.assert_allclose(on_the_fly.decision_function(sp.csr_matrix(X)), dense.decision_function(X),
                               atol=1e-6)
    centered = SVC(kernel="rbf", gamma=0.02, C=1.0, cache_size=0.5, centering="class-balanced",
                   normalize=True).fit(sp.csr_matrix(X), y)
    assert centered.score(sp.csr_matrix(X), y) > 0.9


def test_multiclass_centering_on_the_fly_equals_whole_gram():
    X, y = load_digits(return_X_y=True)
    X, y = X[:500], y[:500]
    whole = SVC(kernel="rbf", gamma=0.001, C=10, centering="class-balanced", client=False).fit(X, y)
    # 0.5 MB holds neither Gram of 500 points: each pair's centering reads only its columns K(X, X_pair).
    rows = SVC(kernel="rbf", gamma=0.001, C=10, centering="class-balanced", cache_size=0.5, client=False).fit(X, y)
    assert whole.gram_dtype_ == "float64" and rows.gram_dtype_ == "on-the-fly"
    np.testing.assert_allclose(rows.decision_function(X), whole.decision_function(X), atol=1e-6)


def test_a_multiclass_origin_is_shared_by_every_binary_problem():
    from sklearn.datasets import make_blobs
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = make_blobs(n_samples=240, centers=4, cluster_std=2.5, random_state=3)
    params = dict(kernel="rbf", gamma=0.05, C=2.0, tol=1e-10)
    centered = SVC(centering="multiclass", **params).fit(X, y)
    plain = SVC(**params).fit(X, y)
    # Translating the feature space does not change the classifier (Meilă §3): the same decision values.
    np.testing.assert_allclose(centered.decision_function(X), plain.decision_function(X), rtol=1e-6, atol=1e-6)
    # Δb of each problem is (αy)ᵀh over its samples, h = Kγ with γ the mean of the four class centres.
    counts = np.bincount(np.searchsorted(np.unique(y), y))
    gamma = 1.0 / (4 * counts[np.searchsorted(np.unique(y), y)])
    h = rbf_kernel(X, gamma=0.05) @ gamma
    k = 0
    for a in range(4):
        for b in range(a + 1, 4):
            index = np.flatnonzero((y == a) | (y == b))
            sv = np.isin(centered.support_, index)
            coef = centered._pair_coef[k, sv]
            np.testing.assert_allclose(centered.delta_b_[k], coef @ h[centered.support_[sv]], rtol=1e-9, atol=1e-12)
            k += 1
    np.testing.assert_allclose(centered.intercept_, centered.uncorrected_intercept_ - centered.delta_b_)


def test_a_sampled_multiclass_origin_gives_the_same_classifier():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=200, centers=3, cluster_std=2.0, random_state=4)
    params = dict(kernel="rbf", gamma=0.05, C=1.0, tol=1e-10)
    sampled = SVC(centering="multiclass", centering_sample=30, random_state=0, **params).fit(X, y)
    np.testing.assert_allclose(sampled.decision_function(X), SVC(**params).fit(X, y).decision_function(X),
                               rtol=1e-6, atol=1e-6)
    assert np.all(sampled.delta_b_ != 0)
