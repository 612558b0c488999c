"""ν-SVC's degenerate optima (a class entirely at its bounds, w = 0) and libsvm's rule for decision values of 0."""

import warnings

import numpy as np
import pytest
import sklearn.svm
from sklearn.datasets import load_iris

import dkernel
from dkernel.svm import _multiclass


# --- a class entirely at its bounds: libsvm's r is infinite and scikit-learn refuses the fit ---------------------

def _equal_classes():
    X = np.random.default_rng(0).normal(size=(200, 5))
    return X, np.arange(200) % 2


@pytest.mark.parametrize("probability", [False, True])
def test_nu_one_with_equal_classes_raises_like_sklearn(probability):
    X, y = _equal_classes()
    with pytest.raises(ValueError):
        sklearn.svm.NuSVC(nu=1.0, probability=probability).fit(X, y)
    with pytest.raises(ValueError, match=r"nu=1\.0"):
        dkernel.NuSVC(nu=1.0, probability=probability).fit(X, y)


def test_nu_below_one_still_fits_finite():
    X, y = _equal_classes()
    model = dkernel.NuSVC(nu=0.9, probability=True, random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.intercept_)) and np.all(np.isfinite(model.dual_coef_))
    assert np.all(np.isfinite(model.decision_function(X)))
    assert np.all(np.isfinite(model.predict_proba(X)))


# --- w = 0 at the optimum: r = 0, nothing to rescale by; fit warns -----------------------------------------------

def test_w_zero_optimum_warns():
    # A linear kernel on identical points: K = 0, so the gradient Q α is 0 and libsvm's r = (r₁ + r₂)/2 = 0.
    X, y = np.zeros((20, 2)), np.arange(20) % 2
    with pytest.warns(UserWarning, match=r"(?s)nu=0\.5.*w = 0"):
        model = dkernel.NuSVC(kernel="linear", nu=0.5).fit(X, y)
    assert np.all(np.isfinite(model.dual_coef_)) and np.all(np.isfinite(model.intercept_))


def test_regular_fit_does_not_warn():
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        dkernel.NuSVC(kernel="linear", nu=0.5).fit(X, y)


def test_cmc_overlapping_classes_warn(cmc_classes_1_2):
    from sklearn.preprocessing import StandardScaler

    X, y = cmc_classes_1_2
    X = StandardScaler().fit_transform(X)
    with pytest.warns(UserWarning, match="w = 0"):
        dkernel.NuSVC(kernel="linear", nu=0.1).fit(X, y)


# --- decision values of exactly 0: libsvm's vote (dec > 0 for the first class, else the second) -------------------

def test_binary_zero_decision_predicts_second_class_as_sklearn():
    X, y = np.zeros((10, 2)), np.arange(10) % 2
    ours = dkernel.SVC(kernel="linear").fit(X, y)
    theirs = sklearn.svm.SVC(kernel="linear").fit(X, y)
    assert ours.decision_function(X[:1])[0] == 0
    assert theirs.predict(X[:1])[0] == 1
    assert ours.predict(X[:1])[0] == theirs.predict(X[:1])[0]


def _tied_three_classes():
    # Classes 0 and 1 on the same points (their pair's decision value is 0 there), class 2 far away.
    a = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    X = np.vstack([a, a, a + 10.0])
    y = np.repeat([0, 1, 2], 4)
    return X, y


@pytest.mark.parametrize("shape", ["ovo", "ovr"])
def test_three_classes_with_ties_match_sklearn(shape):
    X, y = _tied_three_classes()
    test = np.vstack([X, np.zeros((1, 2)), np.full((1, 2), 0.5)])
    ours = dkernel.SVC(kernel="linear", decision_function_shape=shape).fit(X, y)
    theirs = sklearn.svm.SVC(kernel="linear", decision_function_shape=shape).fit(X, y)
    pair = dkernel.SVC(kernel="linear", decision_function_shape="ovo").fit(X, y).decision_function(test)
    assert np.any(pair[:, 0] == 0)  # the ties are exact
    np.testing.assert_array_equal(ours.predict(test), theirs.predict(test))
    np.testing.assert_allclose(ours.decision_function(test), theirs.decision_function(test), atol=1e-6)


def test_all_zero_three_classes_match_sklearn():
    X, y = np.zeros((12, 2)), np.arange(12) % 3
    for shape in ("ovo", "ovr"):
        ours = dkernel.SVC(kernel="linear", decision_function_shape=shape).fit(X, y)
        theirs = sklearn.svm.SVC(kernel="linear", decision_function_shape=shape).fit(X, y)
        np.testing.assert_array_equal(ours.predict(X[:1]), theirs.predict(X[:1]))
        np.testing.assert_allclose(ours.decision_function(X[:1]), theirs.decision_function(X[:1]), atol=1e-9)


def test_vote_rule_on_ties():
    # Binary: decision values are scikit-learn's (the negation of libsvm's), so 0 goes to class 1.
    assert _multiclass.predicted_class(np.array([[0.0], [-0.0], [-1.0], [1.0]]), 2, "ovo").tolist() == [1, 1, 0, 1]
    # ovo: libsvm's values, +1 for the first class of the pair; 0 votes for the second.
    dec = np.array([[0.0, 1.0, 1.0]])  # pairs (0,1), (0,2), (1,2)
    assert _multiclass.predicted_class(dec, 3, "ovo").tolist() == [1]


def test_normal_data_predictions_unchanged():
    X, y = load_iris(return_X_y=True)
    for model, theirs in [(dkernel.SVC(kernel="linear").fit(X, y), sklearn.svm.SVC(kernel="linear").fit(X, y)),
                          (dkernel.SVC().fit(X, y == 1), sklearn.svm.SVC().fit(X, y == 1))]:
        pred = model.predict(X)
        np.testing.assert_array_equal(pred, theirs.predict(X))
        dec = model.decision_function(X) if len(model.classes_) == 2 else None
        if dec is not None:
            assert np.all(dec != 0)
            np.testing.assert_array_equal(pred, model.classes_[(dec > 0).astype(int)])
