"""KernelAligner and ParzenWindowClassifier ignore a parameter their named kernel does not take (``degree`` of
``"rbf"``), as scikit-learn's SVC does, so that one grid search varies ``kernel`` and ``degree`` together."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from dkernel.alignment import KernelAligner
from dkernel.svm import ParzenWindowClassifier


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1, -1)


@pytest.mark.parametrize("make", [lambda **p: ParzenWindowClassifier(**p), lambda **p: KernelAligner(**p)])
def test_degree_and_coef0_beside_rbf_are_ignored(data, make):
    X, y = data
    with_them = make(kernel="rbf", gamma=0.3, degree=2, coef0=1.0).fit(X, y)
    without = make(kernel="rbf", gamma=0.3).fit(X, y)
    out = "transform" if hasattr(without, "transform") else "decision_function"
    np.testing.assert_allclose(getattr(with_them, out)(X), getattr(without, out)(X), rtol=0, atol=1e-12)


def test_one_grid_varies_kernel_and_degree(data):
    X, y = data
    grid = GridSearchCV(ParzenWindowClassifier(), {"kernel": ["rbf", "poly"], "degree": [2, 3]}, cv=3,
                        error_score="raise").fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    assert np.isfinite(grid.cv_results_["mean_test_score"]).all()
