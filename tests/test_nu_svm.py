"""``dkernel.NuSVR`` and ``dkernel.NuSVC`` against libsvm (scikit-learn's ``NuSVR`` and ``NuSVC``).

As for ``SVR`` (``test_svm_family.py``): libsvm's solver reads float32 kernel rows, so trained on its own kernel
dkernel reaches libsvm's dual objective to 1e-6, and trained on the Gram rounded as libsvm rounds it, libsvm's
decision values.

The ν-SVC's scale ``r`` and offset ``ρ`` (libsvm's ``Solver_NU::calculate_rho``) are unique only when each class
has a free variable. With unit weights and ``ν l / 2`` a whole number (ν = 0.3 on 100 samples) a class may have
none: every ``r₁`` between the bounds' gradients then satisfies the KKT conditions, and libsvm's pick depends on
its rounding (a variable left 1e-16 off its bound counts as free). The comparisons take ``ν = 0.35``, where each
class has a free variable, and compare the unscaled objective, which is unique, where it is not.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import svm
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_iris,
    load_wine,
    make_blobs,
    make_classification,
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
    "wine": lambda: (StandardScaler().fit_transform(load_wine(return_X_y=True)[0]), load_wine(return_X_y=True)[1]),
    "make_classification": lambda: make_classification(150, 20, n_informative=5, n_classes=3, random_state=0),
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


# ------------------------------------------------------------------------------------------------- NuSVC
NU = 0.35


def _pair_coefficients(model, n):
    """The coefficients ``c = α y / r`` of each binary problem of a one-vs-one model, over all ``n`` samples."""
    n_classes = model.classes_.shape[0]
    n_sv = np.concatenate([[0], np.cumsum(model.n_support_)])
    dual = model.dual_coef_.toarray() if sp.issparse(model.dual_coef_) else model.dual_coef_
    out = []
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            c = np.zeros(n)
            si, sj = slice(n_sv[i], n_sv[i + 1]), slice(n_sv[j], n_sv[j + 1])
            c[model.support_[si]] = dual[j - 1, si] if n_classes > 2 else dual[0, si]
            c[model.support_[sj]] = dual[i, sj] if n_classes > 2 else dual[0, sj]
            out.append(c)
    return out


def _objectives(model, K, y, nu, w=None):
    """Each binary problem's dual objective ``½ cᵀKc`` as reported (libsvm's ``obj / r²``) and unscaled
    (``½ αᵀQα`` with ``α = |c| r``, ``r`` from ``Σ_{class} α = ν Σ w / 2``)."""
    w = np.ones(len(y)) if w is None else w
    classes = np.unique(y)
    scaled, unscaled = [], []
    pairs = [(i, j) for i in range(len(classes)) for j in range(i + 1, len(classes))]
    for (i, j), c in zip(pairs, _pair_coefficients(model, len(y))):
        pair = (y == classes[i]) | (y == classes[j])
        r = nu * w[pair].sum() / 2 / np.abs(c[y == classes[i]]).sum()
        scaled.append(0.5 * c @ K @ c)
        unscaled.append(0.5 * c @ K @ c * r * r)
    return np.array(scaled), np.array(unscaled)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
@pytest.mark.parametrize("dataset", ["iris", "wine", "breast_cancer", "make_classification"])
def test_nu_svc_dual_objective_and_decision_values_equal_libsvm(dataset, kernel):
    X, y = CLASSIFICATION[dataset]()
    params = dict(nu=NU, tol=TOL, decision_function_shape="ovo", kernel=kernel, **KERNELS[kernel])
    ref = svm.NuSVC(**params).fit(X, y)
    ours = dkernel.NuSVC(**params).fit(X, y)
    assert ref.fit_status_ == 0 and ours.fit_status_ == 0
    K = _gram(ours, X)
    (scaled_ref, unscaled_ref), (scaled_ours, unscaled_ours) = _objectives(ref, K, y, NU), _objectives(ours, K, y, NU)
    np.testing.assert_allclose(unscaled_ours, unscaled_ref, rtol=RTOL)
    np.testing.assert_allclose(scaled_ours, scaled_ref, rtol=1e-5)  # 1/r² from libsvm's float32 rows
    np.testing.assert_allclose(ours.objective_, scaled_ours, rtol=1e-6)
    dec_ref = ref.decision_function(X)
    scale = np.abs(dec_ref).max()
    np.testing.assert_allclose(ours.decision_function(X), dec_ref, rtol=0, atol=1e-5 * scale)
    # On the Gram rounded as libsvm rounds it, libsvm's decision values.
    precise = dkernel.NuSVC(**{**params, "kernel": "precomputed"}).fit(_libsvm_precision(K), y)
    np.testing.assert_allclose(precise.decision_function(K), dec_ref, rtol=0, atol=RTOL * scale)
    np.testing.assert_allclose(precise.intercept_, ref.intercept_, rtol=0, atol=RTOL * scale)
    np.testing.assert_array_equal(precise.predict(K), ref.predict(X))


def test_nu_svc_whole_number_nu_l_gives_libsvm_optimum_and_predictions():
    # ν l / 2 = 15 on the 100 samples of each pair: the scale r is not unique (the module's docstring).
    X, y = CLASSIFICATION["iris"]()
    params = dict(nu=0.3, tol=TOL, kernel="linear", decision_function_shape="ovo")
    ref, ours = svm.NuSVC(**params).fit(X, y), dkernel.NuSVC(**params).fit(X, y)
    K = _gram(ours, X)
    np.testing.assert_allclose(_objectives(ours, K, y, 0.3)[1], _objectives(ref, K, y, 0.3)[1], rtol=RTOL)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def _coefficients_per_distinct_point(model, X):
    """The dual coefficients summed over the copies of each point: iris holds duplicates (rows 101 and 142), and
    how an optimal solution splits a coefficient between two copies is not unique."""
    _, first = np.unique(X, axis=0, return_inverse=True)
    first = first.reshape(-1)
    dual = model.dual_coef_.toarray() if sp.issparse(model.dual_coef_) else model.dual_coef_
    out = np.zeros((dual.shape[0], first.max() + 1))
    np.add.at(out.T, first[model.support_], dual.T)
    return out


def test_nu_svc_attributes_as_scikit_learn():
    X, y = CLASSIFICATION["iris"]()
    for shape in ("ovr", "ovo"):
        ref = svm.NuSVC(nu=NU, tol=TOL, decision_function_shape=shape, class_weight="balanced").fit(X, y)
        ours = dkernel.NuSVC(nu=NU, tol=TOL, decision_function_shape=shape, class_weight="balanced").fit(X, y)
        np.testing.assert_array_equal(ours.classes_, ref.classes_)
        np.testing.assert_allclose(ours.class_weight_, ref.class_weight_)
        coef, coef_ref = _coefficients_per_distinct_point(ours, X), _coefficients_per_distinct_point(ref, X)
        np.testing.assert_allclose(coef, coef_ref, rtol=0, atol=1e-6 * np.abs(coef_ref).max())
        # The support vectors as scikit-learn's, up to the copy of a duplicate point that carries the coefficient.
        assert abs(int(ours.n_support_.sum()) - int(ref.n_support_.sum())) <= 1
        np.testing.assert_array_equal(np.flatnonzero(np.any(coef != 0, axis=0)),
                                      np.flatnonzero(np.any(coef_ref != 0, axis=0)))
        assert ours.support_.dtype == np.int32 and ours.n_support_.dtype == np.int32
        assert ours.dual_coef_.shape[0] == ref.dual_coef_.shape[0] and ours.intercept_.shape == ref.intercept_.shape
        assert ours.dual_coef_.shape[1] == ours.support_.size == ours.support_vectors_.shape[0]
        assert ours.support_vectors_.shape[1] == ref.support_vectors_.shape[1]
        dec = ref.decision_function(X)
        assert ours.decision_function(X).shape == dec.shape
        np.testing.assert_allclose(ours.decision_function(X), dec, rtol=0, atol=1e-5 * np.abs(dec).max())
        assert ours.score(X, y) == ref.score(X, y)
        assert ours.fit_status_ == 0 and ours.n_iter_.shape == (3,)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_nu_svc_sample_weight_and_sparse_input_as_libsvm(kernel):
    X, y = CLASSIFICATION["breast_cancer"]()
    w = np.random.RandomState(0).uniform(0.2, 2.0, len(y))
    params = dict(nu=NU, kernel=kernel, tol=TOL)
    ref = svm.NuSVC(**params).fit(X, y, sample_weight=w)
    ours = dkernel.NuSVC(**params).fit(X, y, sample_weight=w)
    K = _gram(ours, X)
    np.testing.assert_allclose(_objectives(ours, K, y, NU, w)[1], _objectives(ref, K, y, NU, w)[1], rtol=RTOL)
    dec = ref.decision_function(X)
    np.testing.assert_allclose(ours.decision_function(X), dec, rtol=0, atol=1e-5 * np.abs(dec).max())
    sparse = dkernel.NuSVC(**params).fit(sp.csr_matrix(X), y, sample_weight=w)
    assert sp.issparse(sparse.dual_coef_) and sp.issparse(sparse.support_vectors_)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)), ours.decision_function(X), rtol=0,
                               atol=1e-7 * np.abs(dec).max())
    zero = w.copy()
    zero[:10] = 0.0  # removed, as libsvm removes them
    np.testing.assert_array_equal(dkernel.NuSVC(**params).fit(X, y, sample_weight=zero).predict(X),
                                  svm.NuSVC(**params).fit(X, y, sample_weight=zero).predict(X))


def test_nu_svc_infeasible_nu_refused_as_libsvm():
    X, y = CLASSIFICATION["iris"]()
    keep = np.r_[0:50, 50:60, 100:150]  # 50 and 10: ν (50 + 10) / 2 <= 10 needs ν <= 1/3
    for cls in (svm.NuSVC, dkernel.NuSVC):
        with pytest.raises(ValueError, match="specified nu is infeasible"):
            cls(nu=0.5).fit(X[keep], y[keep])
    with pytest.raises(ValueError, match="specified nu is infeasible"):  # weights count, as in libsvm
        dkernel.NuSVC(nu=0.3).fit(X[:100], y[:100], sample_weight=np.r_[np.ones(50), np.full(50, 0.1)])
    dkernel.NuSVC(nu=0.3).fit(X[keep], y[keep])


def test_nu_svc_centered_probability_and_saved_model(tmp_path):
    X, y = CLASSIFICATION["wine"]()
    plain = dkernel.NuSVC(nu=NU, kernel="poly", degree=2, coef0=1.0, tol=TOL).fit(X, y)
    for centering in ("standard", "class-balanced", "multiclass"):
        centered = dkernel.NuSVC(nu=NU, kernel="poly", degree=2, coef0=1.0, tol=TOL, centering=centering).fit(X, y)
        # Meilă eq. 19: the same classifier through the original kernel, the intercept moved by Δb.
        np.testing.assert_allclose(centered.decision_function(X), plain.decision_function(X), rtol=0, atol=1e-6)
        assert np.any(centered.delta_b_ != 0)
    prob = dkernel.NuSVC(nu=NU, probability=True, random_state=0).fit(X, y)
    assert prob.predict_proba(X).shape == (len(y), 3) and np.allclose(prob.predict_proba(X).sum(axis=1), 1)
    path = prob.save(tmp_path / "nu.zarr")
    loaded = dkernel.load_model(path)
    assert type(loaded) is dkernel.NuSVC and loaded.get_params() == {**prob.get_params(), "client": None}
    np.testing.assert_array_equal(loaded.decision_function(X), prob.decision_function(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), prob.predict_proba(X))
    with pytest.raises(dkernel.ModelFormatError):
        dkernel.SVR.load(path)


def test_nu_svc_store_and_client_give_the_in_memory_model(tmp_path):
    from distributed import Client, LocalCluster

    X, y = CLASSIFICATION["iris"]()
    params = dict(nu=NU, tol=1e-8, kernel="rbf")
    ref = dkernel.NuSVC(**params).fit(X, y)
    stored = dkernel.NuSVC(store=tmp_path / "grams", **params).fit(X, y)
    assert stored.gram_dtype_ == "store"
    # In memory the solver shrinks its active set (rows read in place); from a store it does not: the two reach
    # the optimum by different paths, each to tol.
    np.testing.assert_allclose(stored.decision_function(X), ref.decision_function(X), rtol=0, atol=1e-7)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster, Client(cluster) as client:
        distributed = dkernel.NuSVC(client=client, store=tmp_path / "grams", **params).fit(X, y)
    np.testing.assert_allclose(distributed.decision_function(X), ref.decision_function(X), rtol=0, atol=1e-7)


@pytest.mark.parametrize("name", ["NuSVR", "NuSVC"])
def test_every_parameter_and_public_name_of_scikit_learn_exists(name):
    ref, ours = getattr(svm, name)(), getattr(dkernel, name)()
    # As dkernel.SVC's: None is half the available memory; probabilities supported without a warning.
    documented = {"cache_size": (200, None), "probability": ("deprecated", False)}
    for param, default in ref.get_params().items():
        assert param in ours.get_params(), param
        assert ours.get_params()[param] == documented.get(param, (default, default))[1], param
    public = {n for n in dir(type(ref)) if not n.startswith("_") and callable(getattr(type(ref), n))}
    assert public <= set(dir(type(ours))), sorted(public - set(dir(type(ours))))

