"""The conformal view D(x)K(x,z)D(z) (Williams et al. eq. 5), its factors (eqs. 7, 8) and eq. 15."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from dkernel import SVC
from dkernel.gram._sources import KernelGram
from dkernel.views import (
    ConformalFactor,
    ConformalGram,
    amari_wu_factor,
    check_kappa,
    kappa_rule,
    magnification_ratio,
    williams_factor,
)
from dkernel.gram import GramMatrix
from dkernel.kernels import RBFKernel
from dkernel.views import operator_chain


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(120, 2))
    y = np.where(X[:, 1] > 2 * np.exp(-4 * X[:, 0] ** 2) - 1, 1, -1)
    first = SVC(C=10, gamma=2.0, client=False).fit(X, y)
    return X, y, first


def _explicit(X, first, kappa, Z=None):
    """D(x)K(x,z)D(z) written out with numpy from the first pass's own decision function."""
    Z = X if Z is None else Z
    dx = np.exp(-kappa * first.decision_function(Z) ** 2)
    dz = np.exp(-kappa * first.decision_function(X) ** 2)
    K = np.exp(-2.0 * ((Z[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    return dx[:, None] * K * dz[None, :]


def test_factors_are_the_papers_formulas(problem):
    X, _, first = problem
    f = first.decision_function(X)
    # exp amplifies the rounding of its argument (|0.3 f²| up to 6 here): a few ulp apart at most
    np.testing.assert_allclose(williams_factor(f, 0.3), np.exp(-0.3 * f**2), rtol=4e-15)
    assert kappa_rule(f) == pytest.approx(1 / np.abs(f).max())
    sv = first.support_vectors_
    expected = np.exp(-0.7 * ((X[:, None, :] - sv[None]) ** 2).sum(-1)).sum(1)
    np.testing.assert_allclose(amari_wu_factor(X, sv, 0.7), expected, rtol=1e-12)
    factor = ConformalFactor.from_svc(first, "williams", X_kappa=X)
    assert factor.kappa == pytest.approx(1 / np.abs(f).max())
    np.testing.assert_allclose(factor.decision(X), f, atol=1e-12)
    assert ConformalFactor.from_svc(first, "amari-wu").kappa == 2.0  # the RBF's gamma


def test_view_equals_the_explicit_matrix_through_rows_blocks_stores_and_new_points(problem, tmp_path):
    X, _, first = problem
    factor = ConformalFactor.from_svc(first, "williams", X_kappa=X)
    explicit = _explicit(X, first, factor.kappa)
    store = GramMatrix.compute(X, kernel="rbf", gamma=2.0, store=tmp_path / "K.zarr", chunk=50, progress=False)
    for base in (store, KernelGram(X, "rbf", gamma=2.0), RBFKernel(gamma=2.0).block(X, X, symmetric=True)):
        view = ConformalGram(base, factor(X), factor)
        idx = [0, 7, 119]
        np.testing.assert_allclose(view.rows(idx), explicit[idx], atol=1e-12)
        np.testing.assert_allclose(view.submatrix(idx, 30, 90), explicit[idx, 30:90], atol=1e-12)
        np.testing.assert_allclose(view.to_numpy(), explicit, atol=1e-12)
        np.testing.assert_allclose(view.diag(), np.diag(explicit), atol=1e-12)
        np.testing.assert_allclose(view.column_slab(50, 100).submatrix(idx, 50, 100), explicit[idx, 50:100],
                                   atol=1e-12)
        rc, cc = view.chunks
        np.testing.assert_allclose(view.block(0, 1), explicit[:rc, cc:2 * cc], atol=1e-12)
    Z = np.random.default_rng(1).uniform(-1, 1, size=(30, 2))
    view = ConformalGram(store, factor(X), factor)  # a store keeps no data: X_train gives it
    np.testing.assert_allclose(view.cross(Z, X_train=X), _explicit(X, first, factor.kappa, Z), atol=1e-12)
    np.testing.assert_allclose(view.cross_diag(Z, X_train=X), np.exp(-2 * factor.kappa * first.decision_function(Z) ** 2),
                               atol=1e-12)
    written = ConformalGram(store, factor(X), factor).to_zarr(tmp_path / "Kc.zarr")
    np.testing.assert_allclose(written.to_numpy(), explicit, atol=1e-12)
    assert operator_chain(written)[-1]["name"] == "conformal"


def test_magnification_ratio_is_the_determinant_of_eq_12(problem):
    # sqrt(det g~ / det g) with g = I/σ² (eq. 10) and g~ = D²/σ² I + ∇D ∇Dᵀ (eq. 12), D = exp(-κ f²).
    rng = np.random.default_rng(2)
    f, grad, kappa, sigma = rng.normal(size=5), rng.normal(size=(5, 3)), 0.4, 0.7
    D = np.exp(-kappa * f**2)
    grad_D = D[:, None] * (-2 * kappa * f[:, None] * grad)
    expected = [np.sqrt(np.linalg.det(D[i] ** 2 / sigma**2 * np.eye(3) + np.outer(grad_D[i], grad_D[i]))
                        / np.linalg.det(np.eye(3) / sigma**2)) for i in range(5)]
    np.testing.assert_allclose(magnification_ratio(f, grad, kappa, sigma), expected, rtol=1e-12)


@pytest.mark.parametrize("kappa", [0, -1.0, float("nan"), float("inf"), "a"])
def test_kappa_must_be_positive(kappa):
    with pytest.raises(ValueError, match="kappa must be"):
        check_kappa(kappa)
    with pytest.raises(ValueError, match="kappa must be"):
        williams_factor(np.ones(3), kappa)


def test_an_unfitted_or_multiclass_first_pass_is_refused(problem):
    X, y, _ = problem
    with pytest.raises(NotFittedError, match="needs a fitted first-pass SVM"):
        ConformalFactor.from_svc(SVC(), "williams", 1.0)
    three = SVC(gamma=2.0).fit(X, np.digitize(X[:, 0], [-0.3, 0.3]))
    with pytest.raises(ValueError, match="binary first pass"):
        ConformalFactor.from_svc(three, "williams", 1.0)


def test_view_refuses_factors_that_are_not_positive(problem):
    X, _, _ = problem
    K = RBFKernel(gamma=2.0).block(X, X, symmetric=True)
    with pytest.raises(ValueError, match="finite and > 0"):
        ConformalGram(K, np.zeros(X.shape[0]))
    with pytest.raises(ValueError, match="120 rows"):
        ConformalGram(K, np.ones(3))
    with pytest.raises(ValueError, match="need D"):
        ConformalGram(K, np.ones(X.shape[0])).cross(X[:2])


def test_view_is_solved_on_dask_workers_as_in_one_process(problem, tmp_path):
    distributed = pytest.importorskip("distributed")
    X, y, first = problem
    factor = ConformalFactor.from_svc(first, "williams", X_kappa=X)
    store = GramMatrix.compute(X, kernel="rbf", gamma=2.0, store=tmp_path / "K.zarr", progress=False)
    view = ConformalGram(store, factor(X), factor)
    single = SVC(kernel="precomputed", C=10, tol=1e-8, client=False).fit(view.to_numpy(), y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            with distributed.get_task_stream(client) as stream:
                model = SVC(kernel="precomputed", C=10, tol=1e-8, client=client).fit(view, y)
    assert len({t["worker"] for t in stream.data if "GradientPartition" in str(t["key"])}) == 2
    K = view.to_numpy()
    np.testing.assert_allclose(model.decision_function(K), single.decision_function(K), atol=1e-6)
