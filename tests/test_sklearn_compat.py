"""``dkernel.SVC`` as a drop-in for ``sklearn.svm.SVC``: the same assertions hold for both classes.

Every test taking the ``SVC`` fixture runs once on scikit-learn's class and
once on dkernel's. Then the probability model against libsvm's formulas (the
sigmoid fit, the pairwise coupling) and against scikit-learn's probabilities,
``CalibratedClassifierCV`` around dkernel's SVC, and scikit-learn's common
checks with ``probability=True``.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration
from sklearn.datasets import load_breast_cancer, load_iris, make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as LibSVC
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.class_weight import compute_class_weight

from dkernel import SVC as DkSVC
from dkernel.svm._probability import pairwise_coupling, sigmoid_predict, sigmoid_train

# scikit-learn 1.9 deprecates probability=True and probA_/probB_ (FutureWarning); the code under test uses them.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The `probability` parameter:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Attribute `prob:FutureWarning"),
]

#: Parameters whose defaults differ on purpose (README, "Compatibility with scikit-learn").
DOCUMENTED_DEFAULTS = {"probability": ("deprecated", False), "cache_size": (200, None)}


@pytest.fixture(params=[LibSVC, DkSVC], ids=["sklearn", "dkernel"])
def SVC(request):
    return request.param


def _binary():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::3]
    return X, y[::3]


def _multiclass():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


DATA = {"binary": _binary, "multiclass": _multiclass}


@pytest.fixture(params=["binary", "multiclass"])
def data(request):
    return DATA[request.param]()


@pytest.fixture(params=["dense", "sparse"])
def fmt(request):
    return request.param


def _as(fmt, X):
    return sp.csr_matrix(X) if fmt == "sparse" else X


# ------------------------------------------------------------- parameters
def test_every_parameter_of_sklearn_exists_with_its_default_or_a_documented_one():
    ours, theirs = DkSVC().get_params(), LibSVC().get_params()
    assert set(theirs) <= set(ours)
    differ = {k: (theirs[k], ours[k]) for k in theirs if theirs[k] != ours[k]}
    assert differ == DOCUMENTED_DEFAULTS


def test_every_public_method_and_attribute_of_sklearn_exists():
    X, y = _multiclass()
    theirs = LibSVC(kernel="linear", probability=True, random_state=0).fit(X, y)
    ours = DkSVC(kernel="linear", probability=True, random_state=0).fit(X, y)
    # nu and epsilon are libsvm settings that SVC fixes and does not document; unused_param leaks from a class body.
    public = {name for name in dir(theirs) if not name.startswith("_")} - {"nu", "epsilon", "unused_param"}
    missing = {name for name in public if not hasattr(ours, name)}
    assert missing == set()


def test_get_set_params_clone_and_pickle(SVC):
    X, y = _multiclass()
    clf = SVC(C=3.0, kernel="poly", degree=2, class_weight="balanced", break_ties=True)
    assert clone(clf).get_params() == clf.get_params()
    assert clf.set_params(C=0.5, shrinking=False) is clf and clf.C == 0.5 and clf.shrinking is False
    clf.fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))
    np.testing.assert_allclose(again.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("bad", [
    {"C": 0.0}, {"C": -1.0}, {"kernel": "foo"}, {"gamma": -1.0}, {"gamma": "x"}, {"degree": -1},
    {"degree": 1.5}, {"tol": 0.0}, {"shrinking": "yes"}, {"probability": "x"}, {"cache_size": 0},
    {"class_weight": "x"}, {"max_iter": -2}, {"decision_function_shape": "x"}, {"break_ties": 1},
    {"verbose": "x"}, {"random_state": "x"},
])
def test_bad_parameters_raise_the_same_error(SVC, bad):
    X, y = _binary()
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(bad))}' parameter of SVC must be"):
        SVC(**bad).fit(X, y)


def test_tags(SVC):
    for kernel, pairwise, sparse in [("rbf", False, True), ("precomputed", True, False)]:
        tags = SVC(kernel=kernel).__sklearn_tags__()
        assert (tags.input_tags.pairwise, tags.input_tags.sparse) == (pairwise, sparse)
        assert tags.estimator_type == "classifier" and tags.classifier_tags.multi_class


# ------------------------------------------------------- fitted attributes
def test_fitted_attributes(SVC, data, fmt):
    X, y = data
    n_classes = np.unique(y).shape[0]
    n_problems = n_classes * (n_classes - 1) // 2
    clf = SVC(kernel="rbf", gamma=0.1).fit(_as(fmt, X), y)
    np.testing.assert_array_equal(clf.classes_, np.unique(y))
    np.testing.assert_array_equal(clf.class_weight_, np.ones(n_classes))
    assert clf.class_weight_.dtype == np.float64
    assert clf.support_.dtype == np.int32 and clf.n_support_.dtype == np.int32
    assert clf.n_support_.shape == (n_classes,) and clf.n_support_.sum() == clf.support_.shape[0]
    np.testing.assert_array_equal(clf._n_support, clf.n_support_)
    n_sv = clf.support_.shape[0]
    assert clf.dual_coef_.shape == (n_classes - 1, n_sv)
    assert clf.support_vectors_.shape == (n_sv, X.shape[1])
    assert sp.issparse(clf.dual_coef_) == sp.issparse(clf.support_vectors_) == (fmt == "sparse")
    if fmt == "sparse":
        assert type(clf.dual_coef_) is sp.csr_matrix and type(clf.support_vectors_) is sp.csr_matrix
    assert clf.intercept_.shape == (n_problems,)
    assert clf.n_iter_.dtype == np.int32 and clf.n_iter_.shape == (n_problems,)
    assert clf.fit_status_ == 0 and clf.shape_fit_ == X.shape and clf.n_features_in_ == X.shape[1]
    assert clf.probA_.shape == clf.probB_.shape == (0,)
    assert not hasattr(clf, "feature_names_in_")
    assert not hasattr(clf, "predict_proba")


def test_unfitted_estimator(SVC):
    clf = SVC(kernel="linear")
    assert not hasattr(clf, "n_support_") and not hasattr(clf, "coef_")
    with pytest.raises(NotFittedError):
        clf.predict(np.zeros((1, 2)))


@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_feature_names_in(SVC):
    pd = pytest.importorskip("pandas")
    X, y = _binary()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    clf = SVC().fit(frame, y)
    np.testing.assert_array_equal(clf.feature_names_in_, frame.columns)
    np.testing.assert_array_equal(clf.predict(frame), clf.predict(X))
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(frame.rename(columns={"f0": "other"}))
    with pytest.raises(ValueError, match=f"X has 3 features, but SVC is expecting {X.shape[1]} features"):
        clf.predict(X[:, :3])


def test_coef_for_the_linear_kernel_only(SVC, data, fmt):
    X, y = data
    clf = SVC(kernel="linear").fit(_as(fmt, X), y)
    coef = clf.coef_
    n_classes = clf.classes_.shape[0]
    assert coef.shape == (n_classes * (n_classes - 1) // 2, X.shape[1])
    assert sp.issparse(coef) == (fmt == "sparse")
    dense = coef.toarray() if sp.issparse(coef) else coef
    if n_classes == 2:
        np.testing.assert_allclose(X @ dense[0] + clf.intercept_[0], clf.decision_function(X), atol=1e-8)
    else:
        ovo = clf.set_params(decision_function_shape="ovo").decision_function(X)
        np.testing.assert_allclose(X @ dense.T + clf.intercept_, ovo, atol=1e-8)
    with pytest.raises(ValueError, match="read-only"):
        (coef.data if sp.issparse(coef) else coef)[0] = 1.0
    with pytest.raises(AttributeError, match="only available when using a linear kernel"):
        SVC(kernel="rbf").fit(X, y).coef_


def test_decision_function_shape_and_break_ties(SVC):
    X, y = _multiclass()
    clf = SVC(kernel="rbf", gamma=2.0, C=0.5).fit(X, y)
    assert clf.decision_function(X).shape == (150, 3)
    assert clf.set_params(decision_function_shape="ovo").decision_function(X).shape == (150, 3)
    with pytest.raises(ValueError, match="break_ties must be False when decision_function_shape is 'ovo'"):
        clf.set_params(break_ties=True).predict(X)
    clf.set_params(decision_function_shape="ovr")
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(clf.decision_function(X), axis=1)])
    Xb, yb = _binary()
    assert SVC().fit(Xb, yb).decision_function(Xb).shape == (Xb.shape[0],)


def test_sparse_input_to_a_model_fitted_on_dense_data_is_refused(SVC):
    X, y = _binary()
    clf = SVC().fit(X, y)
    with pytest.raises(ValueError, match="cannot use sparse input in 'SVC' trained on dense data"):
        clf.predict(sp.csr_matrix(X))
    sparse = SVC().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.predict(X), clf.predict(X))


# ------------------------------------------------------------ C and weights
def test_infinite_C_is_the_hard_margin(SVC):
    X, y = make_blobs(120, centers=[[0, 0], [5, 5]], random_state=0)
    clf = SVC(C=np.inf, kernel="linear", tol=1e-6).fit(X, y)
    assert clf.score(X, y) == 1.0
    margins = (2 * y - 1) * clf.decision_function(X)
    assert margins.min() > 1 - 1e-3  # every point on or outside the margin
    np.testing.assert_allclose(margins[clf.support_], 1.0, atol=1e-3)


def test_class_weight_(SVC):
    X, y = _multiclass()
    y = np.where(np.arange(150) < 130, y, 2)  # uneven classes
    balanced = SVC(class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(balanced.class_weight_, compute_class_weight("balanced", classes=np.unique(y), y=y))
    np.testing.assert_array_equal(SVC(class_weight={0: 2.0}).fit(X, y).class_weight_, [2.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="not in class_weight"):
        SVC(class_weight={5: 2.0}).fit(X, y)


def test_negative_and_zero_sample_weights_remove_the_samples(SVC):
    X, y = _binary()
    sw = np.ones(y.shape[0])
    sw[:40] = -1.0
    sw[40:60] = 0.0
    gamma = 1.0 / X.shape[1]  # "scale" would read the variance of the removed samples too
    weighted = SVC(tol=1e-6, gamma=gamma).fit(X, y, sample_weight=sw)
    reference = SVC(tol=1e-6, gamma=gamma).fit(X[60:], y[60:])
    np.testing.assert_allclose(weighted.decision_function(X), reference.decision_function(X), atol=1e-4)
    np.testing.assert_array_equal(weighted.support_vectors_, reference.support_vectors_)
    if SVC is DkSVC:  # libsvm numbers support_ among the kept samples; dkernel among all (README)
        np.testing.assert_array_equal(weighted.support_, reference.support_ + 60)
        np.testing.assert_array_equal(X[weighted.support_], weighted.support_vectors_)


@pytest.mark.parametrize("weights, labels, message", [
    (np.zeros(90), None, "Invalid input - all samples have zero or negative weights"),
    (-np.ones(90), None, "Invalid input - all samples have zero or negative weights"),
    (np.r_[np.ones(30), -np.ones(60)], None, "Invalid input - all samples with positive weights belong to the same"),
    (None, np.zeros(90), "The number of classes has to be greater than one; got 1 class"),
])
def test_degenerate_weights_and_labels(SVC, weights, labels, message):
    X, y = _multiclass()
    X, y = X[:90], y[:90]
    with pytest.raises(ValueError, match=message):
        SVC().fit(X, y if labels is None else labels, sample_weight=weights)


def test_shrinking_changes_the_path_not_the_model(SVC):
    X, y = _binary()
    on = SVC(tol=1e-6, shrinking=True).fit(X, y)
    off = SVC(tol=1e-6, shrinking=False).fit(X, y)
    np.testing.assert_allclose(on.decision_function(X), off.decision_function(X), atol=1e-4)


# ---------------------------------------------------------------- kernels
def test_callable_kernel(SVC):
    X, y = _multiclass()
    linear = SVC(kernel="linear", tol=1e-7).fit(X, y)
    clf = SVC(kernel=lambda A, B: np.asarray(A) @ np.asarray(B).T, tol=1e-7).fit(X.tolist(), y)
    assert clf.support_vectors_.shape == (0, 0) and clf.shape_fit_ == (150,)
    np.testing.assert_allclose(clf.decision_function(X.tolist()), linear.decision_function(X), atol=1e-6)
    sparse_gram = SVC(kernel=lambda A, B: sp.csr_matrix(A @ B.T)).fit(X, y)
    assert sparse_gram.shape_fit_ == X.shape
    np.testing.assert_array_equal(sparse_gram.predict(X), linear.predict(X))


def test_precomputed_kernel_shape_checks(SVC):
    X, y = _binary()
    K = X @ X.T
    with pytest.raises(ValueError, match="square"):
        SVC(kernel="precomputed").fit(K[:, :-1], y)
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
        SVC(kernel="precomputed").fit(sp.csr_matrix(K), y)
    clf = SVC(kernel="precomputed").fit(K, y)
    np.testing.assert_array_equal(clf.predict(K[:7]), SVC(kernel="linear").fit(X, y).predict(X[:7]))
    with pytest.raises(ValueError):
        clf.predict(K[:7, :-1])
    assert clf.shape_fit_ == K.shape and clf.support_vectors_.shape == (0, 0)


# ------------------------------------------------------------ probabilities
def test_predict_proba_with_probability_true(SVC, data, fmt):
    X, y = data
    clf = SVC(probability=True, random_state=0).fit(_as(fmt, X), y)
    n_classes = clf.classes_.shape[0]
    P = clf.predict_proba(_as(fmt, X))
    assert P.shape == (X.shape[0], n_classes) and (P > 0).all() and (P < 1).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(clf.predict_log_proba(_as(fmt, X)), np.log(P))
    assert clf.probA_.shape == clf.probB_.shape == (n_classes * (n_classes - 1) // 2,)
    assert (clf.probA_ < 0).all()  # larger decision values, larger probabilities of the first class
    assert (P.argmax(axis=1) == np.searchsorted(clf.classes_, clf.predict(_as(fmt, X)))).mean() > 0.95
    if n_classes == 2:  # Platt's sigmoid is monotone in the decision value
        order = np.argsort(clf.decision_function(X), kind="stable")
        assert (np.diff(P[order, 1]) >= -1e-12).all()
    again = SVC(probability=True, random_state=0).fit(_as(fmt, X), y)
    np.testing.assert_array_max_ulp(again.predict_proba(_as(fmt, X)), P, maxulp=4)  # random_state fixes the folds


def test_probabilities_with_dkernel_views_one_vs_rest_and_dask_input():
    """Centering leaves the classifier, hence its cross-validated sigmoids, unchanged; ovr problems are normalized."""
    da = pytest.importorskip("dask.array")
    X, y = _multiclass()
    plain = DkSVC(gamma=0.1, probability=True, random_state=0, tol=1e-6).fit(X, y)
    centered = DkSVC(gamma=0.1, probability=True, random_state=0, tol=1e-6, centering="class-balanced").fit(X, y)
    np.testing.assert_allclose(centered.predict_proba(X), plain.predict_proba(X), atol=1e-3)
    ovr = DkSVC(gamma=0.1, probability=True, random_state=0, multiclass="ovr").fit(X, y)
    P = ovr.predict_proba(X)
    assert ovr.probA_.shape == (3,) and (P.argmax(axis=1) == ovr.predict(X)).mean() > 0.95
    lazy = plain.predict_proba(da.from_array(X, chunks=40))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), plain.predict_proba(X))


def test_predict_proba_needs_probability_at_fit_time(SVC):
    X, y = _binary()
    clf = SVC().fit(X, y)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    with pytest.raises(NotFittedError, match="fitted with probability=False"):
        clf.set_params(probability=True).predict_proba(X)


def test_sigmoid_fit_is_libsvms_optimum():
    """libsvm's Newton iteration reaches the minimum of its prior-corrected cross-entropy (Lin, Lin & Weng)."""
    rng = np.random.default_rng(0)
    labels = np.where(rng.random(300) < 0.4, 1, -1)
    dec = labels * 0.8 + rng.normal(scale=1.0, size=300)
    A, B = sigmoid_train(dec, labels)
    n_pos, n_neg = (labels > 0).sum(), (labels < 0).sum()
    t = np.where(labels > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    residual = t - sigmoid_predict(dec, A, B)  # the gradient of the loss in (A, B) is (Σ f r, Σ r)
    assert abs(residual @ dec) < 1e-5 and abs(residual.sum()) < 1e-5
    # scikit-learn's Platt fit minimizes the same loss with the same targets by L-BFGS.
    A_ref, B_ref = _sigmoid_calibration(dec, (labels > 0).astype(int))
    np.testing.assert_allclose([A, B], [A_ref, B_ref], rtol=1e-4, atol=1e-5)
    assert sigmoid_train(np.zeros(10), np.r_[np.ones(5), -np.ones(5)]) == (0.0, 0.0)


def test_pairwise_coupling_solves_wu_lin_weng_method_2():
    """min ½ pᵀQp subject to Σ p = 1 (eq. 21): the fixed point agrees with the KKT system to the stopping tolerance."""
    rng = np.random.default_rng(1)
    k, n = 4, 50
    upper = rng.uniform(0.05, 0.95, size=(n, k, k))
    r = np.triu(upper, 1) + np.tril(1.0 - np.swapaxes(upper, 1, 2), -1)
    p = pairwise_coupling(r)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    for i in range(n):
        Q = -r[i].T * r[i]
        np.fill_diagonal(Q, (r[i] ** 2).sum(axis=0) - np.diag(r[i]) ** 2)
        kkt = np.block([[Q, np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
        exact = np.linalg.solve(kkt, np.r_[np.zeros(k), 1.0])[:k]
        np.testing.assert_allclose(p[i], exact, atol=0.01)
    consistent = np.array([0.5, 0.3, 0.2])  # r_ij = p_i / (p_i + p_j) is reproduced exactly
    r3 = consistent[:, None] / (consistent[:, None] + consistent[None, :])
    np.fill_diagonal(r3, 0.0)
    np.testing.assert_allclose(pairwise_coupling(r3[None])[0], consistent, atol=1e-3)


@pytest.mark.parametrize("name", ["binary", "multiclass"])
def test_probabilities_agree_with_libsvm_within_its_own_fold_to_fold_spread(name):
    """Folds are drawn differently (libsvm uses C's rand()), so the probabilities differ as libsvm's own do between
    two seeds: dkernel's distance to libsvm (seed 0) must stay within 3× the largest distance between libsvm's
    seeds 0 and 1..4, and the two models must be equally well calibrated (log-loss within 5 %)."""
    X, y = DATA[name]()
    params = dict(kernel="rbf", gamma=0.1, C=1.0, probability=True)
    libsvm = [LibSVC(random_state=seed, **params).fit(X, y).predict_proba(X) for seed in range(5)]
    ours = DkSVC(random_state=0, **params).fit(X, y).predict_proba(X)
    spread = max(np.abs(libsvm[s] - libsvm[0]).mean() for s in range(1, 5))
    assert np.abs(ours - libsvm[0]).mean() <= 3 * spread + 1e-3
    log_loss = lambda P: -np.mean(np.log(P[np.arange(y.shape[0]), np.searchsorted(np.unique(y), y)]))  # noqa: E731
    assert log_loss(ours) <= 1.05 * log_loss(libsvm[0]) + 1e-3


def test_calibrated_classifier_cv_around_dkernel_svc():
    """scikit-learn ≥ 1.9's documented route: CalibratedClassifierCV(SVC(), ensemble=False)."""
    X, y = _multiclass()
    ours = CalibratedClassifierCV(DkSVC(gamma=0.1), ensemble=False).fit(X, y)
    theirs = CalibratedClassifierCV(LibSVC(gamma=0.1), ensemble=False).fit(X, y)
    P = ours.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(P, theirs.predict_proba(X), atol=0.02)  # the same folds, the same SVMs to tol


def test_check_estimator_with_probability():
    from sklearn.utils.estimator_checks import check_estimator

    from dkernel.svm import expected_failed_checks

    clf = DkSVC(probability=True, random_state=0)
    check_estimator(clf, expected_failed_checks=expected_failed_checks(clf))


def test_saved_model_keeps_the_probability_model_and_refuses_a_kernel_function(tmp_path):
    X, y = _multiclass()
    clf = DkSVC(probability=True, random_state=0, class_weight="balanced").fit(sp.csr_matrix(X), y)
    again = DkSVC.load(clf.save(tmp_path / "model.zarr"))
    np.testing.assert_array_max_ulp(again.predict_proba(X), clf.predict_proba(X), maxulp=4)
    np.testing.assert_array_equal(again.class_weight_, clf.class_weight_)
    assert type(again.dual_coef_) is sp.csr_matrix
    with pytest.raises(ValueError, match="kernel is a Python function"):
        DkSVC(kernel=lambda A, B: A @ B.T).fit(X, y).save(tmp_path / "function.zarr")
