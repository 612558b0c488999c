"""KernelPCA as a drop-in for scikit-learn's: n_components clipped, float32 kept, inverse_transform learned."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import check_estimator

from dkernel.decomposition import KernelPCA


def _data(n=60, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _low_rank(n=80, d=6, rank=2, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, rank)) @ rng.normal(size=(rank, d))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("remove_zero_eig", [False, True])
def test_more_components_than_samples_are_clipped_as_sklearn(kernel, remove_zero_eig):
    X = _data(30, 4)
    ours = KernelPCA(50, kernel=kernel, remove_zero_eig=remove_zero_eig, client=False)
    theirs = SklearnKernelPCA(50, kernel=kernel, remove_zero_eig=remove_zero_eig)
    Z, Z_ref = ours.fit_transform(X), theirs.fit_transform(X)
    assert Z.shape == Z_ref.shape
    assert ours.eigenvalues_.shape == theirs.eigenvalues_.shape
    keep = theirs.eigenvalues_ > 1e-8 * theirs.eigenvalues_[0]  # the null space's basis is arbitrary
    np.testing.assert_allclose(Z[:, keep], Z_ref[:, keep], rtol=0, atol=1e-8)
    assert ours.n_components == 50  # the parameter is left as given


@pytest.mark.parametrize("kernel", ["rbf", "poly", "precomputed"])
def test_float32_input_keeps_float32_as_sklearn(kernel):
    X = _data().astype(np.float32)
    data = X @ X.T if kernel == "precomputed" else X
    ours = KernelPCA(3, kernel=kernel, client=False)
    theirs = SklearnKernelPCA(3, kernel=kernel)
    Z, Z_ref = ours.fit_transform(data), theirs.fit_transform(data)
    assert Z.dtype == Z_ref.dtype == np.float32
    assert ours.transform(data[:5]).dtype == theirs.transform(data[:5]).dtype == np.float32
    assert ours.eigenvalues_.dtype == theirs.eigenvalues_.dtype == np.float32
    assert ours.eigenvectors_.dtype == theirs.eigenvectors_.dtype == np.float32
    np.testing.assert_allclose(np.abs(Z), np.abs(Z_ref), rtol=0, atol=1e-3 * np.abs(Z_ref).max())
    assert KernelPCA(3, kernel=kernel, client=False).fit_transform(data.astype(np.float64)).dtype == np.float64
    assert "float32" in KernelPCA().__sklearn_tags__().transformer_tags.preserves_dtype


def test_float32_inverse_transform_dtypes_as_sklearn():
    X = _data().astype(np.float32)
    ours = KernelPCA(3, kernel="rbf", fit_inverse_transform=True, client=False)
    theirs = SklearnKernelPCA(3, kernel="rbf", fit_inverse_transform=True)
    Z, Z_ref = ours.fit_transform(X), theirs.fit_transform(X)
    for name in ("dual_coef_", "X_transformed_fit_"):
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype == np.float32
    assert ours.inverse_transform(Z).dtype == theirs.inverse_transform(Z_ref).dtype == np.float32
    assert ours.inverse_transform(Z.astype(np.float64)).dtype == np.float64


@pytest.mark.parametrize("kernel, params", [
    ("rbf", {}), ("rbf", {"gamma": 0.3}), ("poly", {}), ("poly", {"degree": 2, "gamma": 0.2, "coef0": 0.5}),
    ("sigmoid", {"gamma": 0.01}), ("linear", {}),
])
@pytest.mark.parametrize("alpha", [1.0, 0.01])
def test_inverse_transform_agrees_with_sklearn(kernel, params, alpha):
    X = _data()
    ours = KernelPCA(4, kernel=kernel, alpha=alpha, fit_inverse_transform=True, eigen_solver="dense",
                     client=False, **params)
    theirs = SklearnKernelPCA(4, kernel=kernel, alpha=alpha, fit_inverse_transform=True, eigen_solver="dense",
                              **params)
    Z, Z_ref = ours.fit_transform(X), theirs.fit_transform(X)
    np.testing.assert_allclose(Z, Z_ref, rtol=0, atol=1e-9 * np.abs(Z_ref).max())
    np.testing.assert_allclose(ours.X_transformed_fit_, theirs.X_transformed_fit_, rtol=0,
                               atol=1e-9 * np.abs(Z_ref).max())
    np.testing.assert_allclose(ours.dual_coef_, theirs.dual_coef_, rtol=0, atol=1e-6 * np.abs(theirs.dual_coef_).max())
    new = _data(9, 5, seed=3)
    for points, reference in ((Z[:7], Z_ref[:7]), (ours.transform(new), theirs.transform(new))):
        back, back_ref = ours.inverse_transform(points), theirs.inverse_transform(reference)
        assert back.shape == back_ref.shape == (len(points), 5)
        np.testing.assert_allclose(back, back_ref, rtol=0, atol=1e-6 * np.abs(back_ref).max())


def test_inverse_transform_of_fit_equals_inverse_transform_after_fit_transform():
    X = _data()
    a = KernelPCA(3, kernel="rbf", fit_inverse_transform=True, client=False).fit(X)
    b = KernelPCA(3, kernel="rbf", fit_inverse_transform=True, client=False)
    Z = b.fit_transform(X)
    np.testing.assert_allclose(a.inverse_transform(Z), b.inverse_transform(Z), rtol=0, atol=1e-12)


@pytest.mark.parametrize("params, bound", [
    ({"kernel": "linear", "n_components": 2, "alpha": 1e-8}, 1e-8),
    ({"kernel": "poly", "degree": 2, "gamma": 0.01, "n_components": 5, "alpha": 1e-6}, 1e-3),
    ({"kernel": "rbf", "gamma": 0.01, "n_components": 10, "alpha": 1e-6}, 1e-2),
])
def test_round_trip_error_is_small_on_low_rank_data(params, bound):
    data = _low_rank(n=100)
    mean = data[:80].mean(axis=0)  # the centered kernel cannot give back the mean (scikit-learn's note)
    X, new = data[:80] - mean, data[80:] - mean
    kpca = KernelPCA(fit_inverse_transform=True, client=False, **params)
    back = kpca.inverse_transform(kpca.fit_transform(X))
    assert np.linalg.norm(back - X) / np.linalg.norm(X) < bound
    if params["kernel"] == "linear":  # new points of the same plane come back exactly
        back_new = kpca.inverse_transform(kpca.transform(new))
        assert np.linalg.norm(back_new - new) / np.linalg.norm(new) < 1e-6


def test_kernel_objects_and_functions_learn_the_same_map():
    from dkernel.kernels import RBFKernel

    X = _data()
    by_name = KernelPCA(3, kernel="rbf", gamma=0.2, fit_inverse_transform=True, client=False)
    by_object = KernelPCA(3, kernel=RBFKernel(gamma=0.2), fit_inverse_transform=True, client=False)
    by_function = KernelPCA(3, kernel=lambda x, y: np.exp(-0.2 * np.sum((x - y) ** 2)),  # on pairs of samples
                            fit_inverse_transform=True, client=False)
    Z = by_name.fit_transform(X)
    expected = by_name.inverse_transform(Z)
    for other in (by_object, by_function):
        np.testing.assert_allclose(other.inverse_transform(other.fit_transform(X)), expected, rtol=0, atol=1e-9)


def test_inverse_transform_refusals_are_sklearns():
    X = _data()
    kpca = KernelPCA(3, kernel="rbf", client=False).fit(X)
    with pytest.raises(NotFittedError, match="fit_inverse_transform parameter was not set to True"):
        kpca.inverse_transform(kpca.transform(X))
    with pytest.raises(ValueError, match="Cannot fit_inverse_transform with a precomputed kernel"):
        KernelPCA(3, kernel="precomputed", fit_inverse_transform=True).fit(X @ X.T)
    with pytest.raises(NotImplementedError, match="not implemented for sparse matrices"):  # also a TypeError
        KernelPCA(3, kernel="rbf", fit_inverse_transform=True, client=False).fit(sp.csr_matrix(X))
    with pytest.raises(TypeError, match="[Ss]parse input is not supported"):  # dkernel's (and sklearn checks') refusal
        KernelPCA(3, kernel="rbf", fit_inverse_transform=True, client=False).fit(sp.csr_matrix(X))
    assert KernelPCA(fit_inverse_transform=True).__sklearn_tags__().input_tags.sparse is False
    with pytest.raises(NotFittedError):
        KernelPCA(3, fit_inverse_transform=True).inverse_transform(X[:, :3])
    fitted = KernelPCA(3, kernel="rbf", fit_inverse_transform=True, client=False).fit(X)
    with pytest.raises(ValueError, match=r"X has 5 features, but inverse_transform is expecting 3"):
        fitted.inverse_transform(X)
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="alpha"):
        KernelPCA(3, alpha=-1.0, fit_inverse_transform=True).fit(X)
    with pytest.raises(InvalidParameterError, match="fit_inverse_transform"):
        KernelPCA(3, fit_inverse_transform="yes").fit(X)


def test_parameters_are_all_of_sklearns():
    ours = KernelPCA().get_params()
    theirs = SklearnKernelPCA().get_params()
    assert set(theirs) - set(ours) == set()
    assert {key: ours[key] for key in ("kernel_params", "copy_X", "n_jobs")} == \
        {key: theirs[key] for key in ("kernel_params", "copy_X", "n_jobs")}
    doc = KernelPCA.__doc__
    assert all(f"{name} :" in doc for name in ("kernel_params", "copy_X", "n_jobs"))
    assert "no ``inverse_transform``" not in doc


def test_check_estimator_passes_with_the_inverse_transform():
    results = check_estimator(KernelPCA(kernel="rbf", fit_inverse_transform=True, client=False), on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []
