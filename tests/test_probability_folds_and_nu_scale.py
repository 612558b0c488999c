"""A probability model's folds under a centering sample, and NuSVC's scale r within the tolerance of 0."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

import dkernel
from dkernel.centering._origins import SampleSizeError


@pytest.mark.parametrize("n_classes, n", [(2, 300), (3, 450)])
def test_a_centering_sample_that_fits_the_problem_but_not_a_fold(n_classes, n):
    # 5-fold cross-validation of libsvm's probability model: a fold trains on 4/5 of a problem (240 of 300 points),
    # fewer than the 270 a problem draws; the fold draws from its own points instead of refusing.
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, n_redundant=0, n_classes=n_classes,
                               random_state=0)
    model = dkernel.SVC(centering="class-balanced", centering_sample=270,
                        probability=True, random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (n, n_classes)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.isfinite(model.probA_)) and np.all(np.isfinite(model.probB_))
    assert np.mean(model.classes_[proba.argmax(axis=1)] == model.predict(X)) > 0.9


def test_a_centering_sample_larger_than_the_problem_is_still_refused():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    with pytest.raises(SampleSizeError, match="centering_sample=301 is larger than the binary problem"):
        dkernel.SVC(centering="class-balanced", centering_sample=301, probability=True).fit(X, y)


def test_folds_draw_as_before_where_the_sample_fits_them():
    # A sample that fits every fold: the probability model is the one drawn with the problem's own sample size.
    X, y = make_classification(n_samples=200, n_features=5, random_state=1)
    a = dkernel.SVC(centering="standard", centering_sample=40, probability=True, random_state=3).fit(X, y)
    b = dkernel.SVC(centering="standard", centering_sample=40, probability=True, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.probA_, b.probA_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_nu_scale_within_the_tolerance_of_zero_warns(cmc_classes_1_2):
    # Unscaled cmc, classes 1 and 2, a linear ν-SVC with ν = 0.1: r ≈ 2e-5, below tol = 1e-3. A solve within
    # the tolerance may end on either side of 0 (r = -1.5e-5 with the pairs of the more violating label first):
    # either way the fit says that r is 0 within what the solve can tell.
    X, y = cmc_classes_1_2
    said = r"(?s)r = .*( within the solver's tolerance \(tol=0\.001\)| <= 0, the classes' reduced convex hulls overlap)"
    with pytest.warns(UserWarning, match=said):
        model = dkernel.NuSVC(kernel="linear", nu=0.1).fit(X, y)
    assert np.all(np.isfinite(model.dual_coef_))


def test_nu_scale_well_above_the_tolerance_does_not_warn():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        dkernel.NuSVC(kernel="rbf", nu=0.3).fit(StandardScaler().fit_transform(X), y)
