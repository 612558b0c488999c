"""The Parzen window classifier (dkernel.svm) against the explicit sum; ridge regression through KernelRidge."""

import numpy as np
import pytest

from dkernel import RBFKernel
from dkernel.alignment import KernelAligner
from dkernel.svm import ParzenWindowClassifier


def _data(seed=0, n=90):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(rng.random(n) < 0.3, "rel", "other")
    return X, y


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_parzen_window_is_the_explicit_sum(class_weight):
    X, y = _data()
    train, test = np.arange(60), np.arange(60, 90)
    kernel = RBFKernel(gamma=0.2)
    clf = ParzenWindowClassifier(kernel=kernel, class_weight=class_weight).fit(X[train], y[train])
    pos = y[train] == "rel"  # the larger label, second in classes_
    n_pos, n_neg = pos.sum(), (~pos).sum()
    w_pos, w_neg = (1.0 / n_pos, 1.0 / n_neg) if class_weight == "balanced" else (1.0, 1.0)
    for a in test:
        f = sum((w_pos if pos[j] else -w_neg) * float(kernel.block(X[[a]], X[[train[j]]])[0, 0])
                for j in range(len(train)))
        assert abs(clf.decision_function(X[[a]])[0] - f) < 1e-10
        assert clf.predict(X[[a]])[0] == ("rel" if f >= 0 else "other")


def test_parzen_window_on_a_precomputed_and_an_adapted_kernel():
    X, y = _data(1)
    K = RBFKernel(gamma=0.2).block(X, X[:60]).astype(np.float64)
    by_kernel = ParzenWindowClassifier(kernel="rbf", gamma=0.2).fit(X[:60], y[:60])
    precomputed = ParzenWindowClassifier(kernel="precomputed").fit(K[:60], y[:60])
    np.testing.assert_allclose(precomputed.decision_function(K[60:]), by_kernel.decision_function(X[60:]),
                               rtol=0, atol=1e-12)
    aligner = KernelAligner(kernel="rbf", gamma=0.2, target="uneven").fit(X[:60], y[:60])
    adapted = ParzenWindowClassifier(kernel=aligner.adapted_kernel_).fit(X[:60], y[:60])
    G = aligner.gram(X[60:], X[:60])
    np.testing.assert_allclose(adapted.decision_function(X[60:]), G @ adapted.dual_coef_, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="precomputed"):
        precomputed.decision_function(K[60:, :10])


def test_parzen_window_refuses_more_than_two_classes():
    X, _ = _data()
    with pytest.raises(ValueError, match="two classes"):
        ParzenWindowClassifier().fit(X, np.arange(len(X)) % 3)


def test_ridge_regression_is_sklearns_kernel_ridge_on_the_adapted_gram():
    from sklearn.kernel_ridge import KernelRidge

    rng = np.random.default_rng(2)
    X = rng.uniform(-5, 5, size=(80, 1))
    y = np.sinc(X[:, 0] / np.pi) + 0.05 * rng.normal(size=80)
    aligner = KernelAligner(kernel="rbf", gamma=0.5, target="regression").fit(X[:60], y[:60])
    G_train, G_test = aligner.gram(X[:60]), aligner.gram(X[60:], X[:60])
    model = KernelRidge(kernel="precomputed", alpha=1e-3).fit(G_train, y[:60])
    # The dual solution of ridge regression, (G + λI)⁻¹ y.
    dual = np.linalg.solve(G_train + 1e-3 * np.eye(60), y[:60])
    np.testing.assert_allclose(model.predict(G_test), G_test @ dual, rtol=0, atol=1e-8)


@pytest.mark.parametrize("bad", [{"class_weight": "uneven"}, {"gamma": -1.0}, {"gamma": "scale"}, {"degree": 0},
                                 {"coef0": np.nan}, {"kernel": 3}])
def test_parameters_are_validated_in_the_ranges_of_the_svm_estimators(bad):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = _data()
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(bad))}' parameter of ParzenWindowClassifier"):
        ParzenWindowClassifier(**bad).fit(X, y)
