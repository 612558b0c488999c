"""Estimators given ``client=<distributed.Client>`` take part in scikit-learn's clone, searches and pickling."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

import dkernel
from dkernel.alignment import KernelAligner

ESTIMATORS = ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM", "ConformalSVC", "GeneralizedBiasSVC", "KernelPCA",
              "KernelAligner"]


@pytest.fixture(scope="module")
def client(nanny_cluster):
    """A client of two worker processes (``conftest.nanny_cluster``)."""
    return nanny_cluster


@pytest.fixture(scope="module")
def data():
    X = np.random.default_rng(0).normal(size=(90, 3))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_clone_shares_the_client(name, client):
    estimator = (KernelAligner if name == "KernelAligner" else getattr(dkernel, name))(client=client)
    twin = clone(estimator)
    assert twin is not estimator
    assert twin.client is client
    assert estimator.client is client
    assert twin.get_params().keys() == estimator.get_params().keys()


def test_a_search_and_cross_validation_run_with_a_client(client, data):
    X, y = data
    search = GridSearchCV(dkernel.SVC(client=client), {"C": [0.5, 2.0]}, cv=3).fit(X, y)
    assert search.best_estimator_.client is client
    scores = cross_val_score(dkernel.SVC(client=client), X, y, cv=3)
    np.testing.assert_allclose(scores, cross_val_score(dkernel.SVC(), X, y, cv=3))


@pytest.mark.parametrize("name", ["SVC", "KernelPCA"])
def test_a_fitted_estimator_with_a_client_pickles_without_it(name, client, data):
    X, y = data
    estimator = getattr(dkernel, name)(client=client).fit(X, y)
    copy = pickle.loads(pickle.dumps(estimator))
    assert copy.client is None
    assert estimator.client is client
    if name == "SVC":
        np.testing.assert_array_equal(copy.predict(X), estimator.predict(X))
    else:
        np.testing.assert_allclose(copy.transform(X), estimator.transform(X), atol=1e-12)


def test_a_client_spec_is_a_plain_value(data):
    estimator = dkernel.SVC(client="local:1")
    assert clone(estimator).client == "local:1"
    assert pickle.loads(pickle.dumps(estimator)).client == "local:1"
