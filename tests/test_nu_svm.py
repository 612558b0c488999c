"""``dkernel.NuSVR`` against libsvm (scikit-learn's ``NuSVR``).

As for ``SVR`` (``test_svm_family.py``): libsvm's solver reads float32 kernel rows, so trained on its own kernel
dkernel reaches libsvm's dual objective to 1e-6, and trained on the Gram rounded as libsvm rounds it, libsvm's
decision values.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import svm
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_iris,
    make_blobs,
    make_friedman1,
    make_regression,
)
from sklearn.preprocessing import StandardScaler

import dkernel

TOL = 1e-10
RTOL = 1e-6

REGRESSION = {
    "diabetes": lambda: load_diabetes(return_X_y=True),
    "make_regression": lambda: make_regression(200, 5, noise=10.0, random_state=0),
    "friedman1": lambda: make_friedman1(200, random_state=0),
}
CLASSIFICATION = {
    "iris": lambda: (StandardScaler().fit_transform(load_iris(return_X_y=True)[0]), load_iris(return_X_y=True)[1]),
    "breast_cancer": lambda: (StandardScaler().fit_transform(load_breast_cancer(return_X_y=True)[0])[::2],
                              load_breast_cancer(return_X_y=True)[1][::2]),
    "blobs": lambda: make_blobs(240, 2, centers=4, cluster_std=2.5, random_state=0),
}
KERNELS = {
    "rbf": {},
    "linear": {},
    "poly": {"degree": 2, "coef0": 1.0},
    "sigmoid": {"gamma": 0.01, "coef0": 0.0},
}


def _gram(model, X):
    return np.asarray(model._kernel.block(X, X), dtype=np.float64)


def _libsvm_precision(K):
    return K.astype(np.float32).astype(np.float64)


def _full(model, n, row=0):
    coef = np.zeros(n)
    dual = model.dual_coef_.toarray() if sp.issparse(model.dual_coef_) else model.dual_coef_
    coef[model.support_] = dual[row]
    return coef


# ------------------------------------------------------------------------------------------------- NuSVR
def _nu_svr_objective(beta, K, y):
    return 0.5 * beta @ K @ beta - y @ beta


@pytest.mark.parametrize("dataset, kernel", [("friedman1", k) for k in KERNELS]
                         + [("make_regression", "rbf"), ("make_regression", "linear"), ("diabetes", "rbf")])
def test_nu_svr_dual_objective_and_predictions_equal_libsvm(dataset, kernel):
    X, y = REGRESSION[dataset]()
    params = dict(nu=0.3, C=10.0 * y.std(), tol=TOL, **KERNELS[kernel])
    ref = svm.NuSVR(kernel=kernel, **params).fit(X, y)
    ours = dkernel.NuSVR(kernel=kernel, **params).fit(X, y)
    assert ours.fit_status_ == 0
    K = _gram(ours, X)
    beta_ours = _full(ours, len(y))
    obj_ref = _nu_svr_objective(_full(ref, len(y)), K, y)
    obj_ours = _nu_svr_objective(beta_ours, K, y)
    assert abs(obj_ours - obj_ref) <= RTOL * abs(obj_ref)
    np.testing.assert_allclose(ours.objective_, obj_ours, rtol=1e-9)
    # Σ (α + α*) = C ν n; with α α* = 0, Σ |β| (libsvm starts both halves at the bound: the sum stays).
    assert np.abs(beta_ours).sum() <= params["C"] * params["nu"] * len(y) * (1 + 1e-9)
    pred_ref = ref.predict(X)
    np.testing.assert_allclose(ours.predict(X), pred_ref, rtol=0, atol=1e-3 * np.abs(pred_ref).max())

    if kernel == "linear":
        # The float32-rounded linear Gram of rank d (2n variables): the active-set sub-problems cycle on it and the
        # solve is too slow for a test; the float64 problem above is solved.
        return
    precise = dkernel.NuSVR(kernel="precomputed", **params).fit(_libsvm_precision(K), y)
    np.testing.assert_allclose(precise.predict(K), pred_ref, rtol=0, atol=RTOL * np.abs(pred_ref).max())
    np.testing.assert_allclose(precise.intercept_, ref.intercept_, rtol=RTOL, atol=RTOL * np.abs(pred_ref).max())


def test_nu_svr_sample_weight_sparse_and_attributes():
    X, y = REGRESSION["friedman1"]()
    w = np.random.RandomState(0).uniform(0.2, 2.0, len(y))
    ref = svm.NuSVR(nu=0.4, C=5.0, kernel="linear", tol=TOL).fit(X, y, sample_weight=w)
    ours = dkernel.NuSVR(nu=0.4, C=5.0, kernel="linear", tol=TOL).fit(X, y, sample_weight=w)
    pred = ref.predict(X)
    np.testing.assert_allclose(ours.predict(X), pred, rtol=0, atol=1e-5 * np.abs(pred).max())
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=0, atol=1e-5 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(ours.score(X, y), ref.score(X, y), rtol=1e-6)
    assert ours.support_.dtype == np.int32 and ours.n_support_.tolist() == [len(ours.support_)]
    sparse = dkernel.NuSVR(nu=0.4, C=5.0, kernel="linear", tol=TOL).fit(sp.csr_matrix(X), y, sample_weight=w)
    assert sp.issparse(sparse.dual_coef_)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(X)), ours.predict(X), rtol=1e-7)


@pytest.mark.parametrize("name", ["NuSVR"])
def test_every_parameter_and_public_name_of_scikit_learn_exists(name):
    ref, ours = getattr(svm, name)(), getattr(dkernel, name)()
    documented = {"cache_size": (200, None)}
    for param, default in ref.get_params().items():
        assert param in ours.get_params(), param
        assert ours.get_params()[param] == documented.get(param, (default, default))[1], param
    public = {n for n in dir(type(ref)) if not n.startswith("_") and callable(getattr(type(ref), n))}
    assert public <= set(dir(ours)), sorted(public - set(dir(ours)))
