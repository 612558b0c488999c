"""``ConformalSVC.fit_from_first_pass``: the ``y`` given must be the one the first pass was fitted on.

The factor ``D = exp(-κ f²)`` comes from the first pass; a second pass on other labels trains a model that
no step of Williams et al.'s two-pass training describes. Ground truth: ``fit`` on the same ``X, y``.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC, ConformalSVC


@pytest.fixture(scope="module")
def fitted():
    X, y = make_classification(160, 5, random_state=0)
    return X, y, SVC(kernel="rbf", tol=1e-6).fit(X, y)


@pytest.mark.parametrize("bias", ["free", "scaled"])
def test_three_classes_are_refused_as_fit_refuses_them(fitted, bias):
    X, _, first = fitted
    with pytest.raises(ValueError, match=r"Only binary classification is supported: .*y has 3 classes\."):
        ConformalSVC(bias=bias).fit_from_first_pass(first, X, np.arange(len(X)) % 3)


@pytest.mark.parametrize("bias", ["free", "scaled"])
def test_one_class_is_refused(fitted, bias):
    X, _, first = fitted
    with pytest.raises(ValueError, match="class"):
        ConformalSVC(bias=bias).fit_from_first_pass(first, X, np.zeros(len(X), dtype=int))


def test_other_class_names_are_refused(fitted):
    X, y, first = fitted
    with pytest.raises(ValueError, match=r"y has the classes \['a', 'b'\] but the first pass was fitted on \[0, 1\]"):
        ConformalSVC().fit_from_first_pass(first, X, np.where(y == 1, "a", "b"))


def test_labels_changed_at_a_support_vector_are_refused(fitted):
    X, y, first = fitted
    changed = y.copy()
    i = int(first.support_[3])
    changed[i] = 1 - changed[i]
    with pytest.raises(ValueError, match=rf"1 of its {first.support_.size} support vectors have another label in y "
                                         rf"\(sample {i}: {changed[i]} in y, {y[i]} in the first pass\)"):
        ConformalSVC().fit_from_first_pass(first, X, changed)


@pytest.mark.parametrize("bias", ["free", "scaled"])
def test_the_first_pass_own_labels_give_fit_s_model(fitted, bias):
    X, y, first = fitted
    reused = ConformalSVC(bias=bias, tol=1e-6).fit_from_first_pass(first, X, y)
    whole = ConformalSVC(bias=bias, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(reused.decision_function(X), whole.decision_function(X), rtol=0, atol=1e-6)
