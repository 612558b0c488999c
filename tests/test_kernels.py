"""Kernel objects against scikit-learn's pairwise_kernels (the ground truth)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import pairwise_kernels

from dkernel.exceptions import InvalidKernelParameterError
from dkernel.kernels import (
    LinearKernel,
    NormalizedKernel,
    PolynomialKernel,
    RBFKernel,
    SigmoidKernel,
    gamma_from_sigma2,
    get_kernel,
    kernel_from_dict,
)

KERNEL_CASES = [
    ("linear", {}),
    ("poly", {"gamma": 0.1, "coef0": 1.0, "degree": 3}),
    ("poly", {"gamma": 1.0, "coef0": 1.0, "degree": 2}),
    ("rbf", {"gamma": 0.2}),
    ("sigmoid", {"gamma": 0.01, "coef0": 0.5}),
]
KERNEL_IDS = [f"{name}-{'-'.join(map(str, p.values()))}" for name, p in KERNEL_CASES]


def assert_kernel_close(K, expected):
    """float64 agreement to rounding: rtol=1e-12 plus an absolute floor relative to max|K|."""
    scale = max(np.abs(expected).max(), np.finfo(np.float64).tiny)
    np.testing.assert_allclose(K, expected, rtol=1e-12, atol=1e-12 * scale)


def normalized_reference(name, params, X, Z):
    K = pairwise_kernels(X, Z, metric=name, **params)
    dx = np.diag(pairwise_kernels(X, metric=name, **params))
    dz = np.diag(pairwise_kernels(Z, metric=name, **params))
    return K / np.sqrt(np.outer(dx, dz))


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(37, 6)), rng.normal(size=(23, 6))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize(("name", "params"), KERNEL_CASES, ids=KERNEL_IDS)
def test_blocks_match_sklearn_pairwise_kernels(name, params, sparse, data):
    X, Z = data
    if sparse:
        X = np.where(np.abs(X) > 0.8, X, 0.0)
        Z = np.where(np.abs(Z) > 0.8, Z, 0.0)
    Xin, Zin = (sp.csr_matrix(X), sp.csr_matrix(Z)) if sparse else (X, Z)
    kernel = get_kernel(name, **params)
    assert_kernel_close(kernel(Xin, Zin), pairwise_kernels(X, Z, metric=name, **params))
    assert_kernel_close(kernel(Xin), pairwise_kernels(X, metric=name, **params))


@pytest.mark.parametrize(("name", "params"), KERNEL_CASES, ids=KERNEL_IDS)
def test_normalized_kernel_matches_reference_and_has_unit_diagonal(name, params, data):
    X, Z = data
    if name == "sigmoid":
        # tanh(gamma |x|^2 + coef0) > 0 here, so the normalization is defined.
        params = {"gamma": 0.01, "coef0": 1.0}
    kernel = NormalizedKernel(get_kernel(name, **params))
    assert_kernel_close(kernel(X, Z), normalized_reference(name, params, X, Z))
    K = kernel(X)
    assert np.array_equal(np.diag(K), np.ones(len(X)))
    assert np.array_equal(kernel.diag(X), np.ones(len(X)))


def test_gamma_none_means_one_over_n_features(data):
    X, Z = data
    assert_kernel_close(RBFKernel()(X, Z), pairwise_kernels(X, Z, metric="rbf", gamma=1 / X.shape[1]))
    assert RBFKernel().resolve(X.shape[1]) == RBFKernel(gamma=1 / 6)


@pytest.mark.parametrize(("name", "params"), KERNEL_CASES, ids=KERNEL_IDS)
def test_float32_inputs_give_float32_close_to_float64(name, params, data):
    X, Z = data
    X, Z = X / 3, Z / 3
    kernel = get_kernel(name, **params)
    K32 = kernel(X.astype(np.float32), Z.astype(np.float32))
    K64 = kernel(X, Z)
    assert K32.dtype == np.float32
    np.testing.assert_allclose(K32, K64, rtol=1e-4, atol=1e-5 * np.abs(K64).max())


def test_mixed_dtypes_give_float64(data):
    X, Z = data
    assert RBFKernel(gamma=0.1)(X.astype(np.float32), Z).dtype == np.float64


@pytest.mark.parametrize(("name", "params"), KERNEL_CASES, ids=KERNEL_IDS)
@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
def test_diag_equals_gram_diagonal(name, params, normalize, data):
    X, _ = data
    kernel = get_kernel(name, **params)
    if normalize:
        kernel = NormalizedKernel(kernel)
    expected = np.diag(kernel(X))
    np.testing.assert_allclose(kernel.diag(X), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(kernel.diag(sp.csr_matrix(X)), expected, rtol=1e-12,
                               atol=1e-12 * np.abs(expected).max())


def test_rbf_symmetric_block_has_exact_unit_diagonal(data):
    X, _ = data
    assert np.array_equal(np.diag(RBFKernel(gamma=3.0)(X)), np.ones(len(X)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("symmetric", [False, True], ids=["cross", "diagonal"])
def test_rbf_block_evaluated_into_a_buffer_is_its_block_to_rounding(dtype, symmetric):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 7)).astype(dtype)  # element-wise passes over strips of 64, 64 and 22 rows
    Z = X if symmetric else rng.normal(size=(97, 7)).astype(dtype)
    kernel = RBFKernel(gamma=0.3)
    out = np.full((len(X), len(Z)), np.nan, dtype=dtype)
    strips = []
    kernel.evaluate_into(X, Z, out, symmetric=symmetric, on_strip=lambda a, S: strips.append((a, S.copy())))
    expected = kernel.block(X, Z, symmetric=symmetric)
    assert out.dtype == expected.dtype
    np.testing.assert_array_max_ulp(out, expected, maxulp=4)
    assert np.array_equal(np.signbit(out), np.signbit(expected))  # signs of zeros included
    # Strips while in cache; a symmetric block once made symmetric (its lower triangle is written after the map).
    assert [a for a, _ in strips] == ([0] if symmetric else [0, 64, 128])
    assert np.array_equal(np.concatenate([S for _, S in strips]), out)


class _OwnBlockRBFKernel(RBFKernel):
    """A subclass of the RBF kernel with a block() of its own."""

    def block(self, X, Z, *, symmetric=False, **kwargs):
        return super().block(X, Z, symmetric=symmetric, **kwargs)


@pytest.mark.parametrize("case", ["rbf", "rbf subclass", "poly", "sparse rbf", "float32 rbf into float64"])
def test_every_kernel_evaluates_into_a_buffer_as_its_block(case):
    rng = np.random.default_rng(4)
    X, Z = rng.normal(size=(150, 5)), rng.normal(size=(40, 5))
    kernel = {"rbf subclass": _OwnBlockRBFKernel(gamma=0.4), "poly": PolynomialKernel(gamma=0.5, degree=2)}.get(
        case, RBFKernel(gamma=0.4))
    if case == "sparse rbf":
        X, Z = sp.csr_matrix(X), sp.csr_matrix(Z)
    if case == "float32 rbf into float64":
        X, Z = X.astype(np.float32), Z.astype(np.float32)
    out = np.full((150, 40), np.nan)
    strips = []
    kernel.evaluate_into(X, Z, out, on_strip=lambda a, S: strips.append(a))
    np.testing.assert_allclose(out, kernel.block(X, Z), rtol=1e-6 if case.startswith("float32") else 1e-15)
    # The built-in RBF kernel on dense data of the buffer's dtype maps strip by strip; every other case is one block.
    assert strips == ([0, 64, 128] if case == "rbf" else [0])


@pytest.mark.parametrize("kernel", [RBFKernel(gamma=0.4), PolynomialKernel(gamma=0.5, degree=2), LinearKernel()])
def test_every_kernel_writes_a_block_and_its_mirror(kernel):
    X = np.random.default_rng(5).normal(size=(90, 4))
    K = np.full((90, 90), np.nan)
    kernel.evaluate_mirrored_into(X[:30], X[30:], K, 0, 30)
    np.testing.assert_allclose(K[:30, 30:], kernel.block(X[:30], X[30:]), rtol=1e-12)
    assert np.array_equal(K[30:, :30], K[:30, 30:].T) and np.isnan(K[:30, :30]).all()


@pytest.mark.parametrize(
    "kernel",
    [
        LinearKernel(),
        PolynomialKernel(gamma=0.5, coef0=2.0, degree=4),
        RBFKernel(gamma=0.25),
        RBFKernel(),
        SigmoidKernel(gamma=0.1, coef0=-1.0),
        NormalizedKernel(PolynomialKernel(gamma=1.0, coef0=1.0, degree=2)),
        NormalizedKernel("rbf"),
    ],
    ids=repr,
)
def test_json_round_trip(kernel):
    restored = kernel_from_dict(json.loads(json.dumps(kernel.to_dict())))
    assert restored == kernel
    assert type(restored) is type(kernel)
    assert restored.to_dict() == kernel.to_dict()


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("rbf", {"gamma": 0.0}, "gamma"),
        ("rbf", {"gamma": -1.0}, "gamma"),
        ("rbf", {"gamma": float("nan")}, "gamma"),
        ("rbf", {"gamma": float("inf")}, "gamma"),
        ("poly", {"gamma": -0.5}, "gamma"),
        ("poly", {"degree": 0}, "degree"),
        ("poly", {"degree": 1.5}, "degree"),
        ("poly", {"degree": True}, "degree"),
        ("poly", {"coef0": float("nan")}, "coef0"),
        ("sigmoid", {"gamma": 0}, "gamma"),
        ("rbf", {"degree": 2}, "unknown parameter"),
        ("no-such-kernel", {}, "unknown kernel"),
    ],
)
def test_bad_parameters_raise(name, params, match):
    with pytest.raises(InvalidKernelParameterError, match=match):
        get_kernel(name, **params)


def test_gamma_from_sigma2_conventions():
    assert gamma_from_sigma2(1000) == pytest.approx(0.001)
    assert gamma_from_sigma2(2.0, convention="gaussian") == pytest.approx(0.25)
    with pytest.raises(InvalidKernelParameterError):
        gamma_from_sigma2(0)


KERNEL_STRATEGY = st.sampled_from(KERNEL_CASES + [("normalized-poly", {"gamma": 0.5, "coef0": 1.0, "degree": 2})])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 30),
    m=st.integers(1, 30),
    d=st.integers(1, 8),
    case=KERNEL_STRATEGY,
    sparse=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_blocks_match_sklearn_over_shapes(n, m, d, case, sparse, seed):
    name, params = case
    rng = np.random.default_rng(seed)
    X, Z = rng.normal(size=(n, d)) / np.sqrt(d), rng.normal(size=(m, d)) / np.sqrt(d)
    if name == "normalized-poly":
        kernel = NormalizedKernel(PolynomialKernel(**params))
        expected = normalized_reference("poly", params, X, Z)
    else:
        kernel = get_kernel(name, **params)
        expected = pairwise_kernels(X, Z, metric=name, **params)
    Xin, Zin = (sp.csr_matrix(X), sp.csr_matrix(Z)) if sparse else (X, Z)
    assert_kernel_close(kernel(Xin, Zin), expected)


@pytest.mark.parametrize("kernel", [RBFKernel(gamma=0.3), PolynomialKernel(gamma=0.5, coef0=1.0, degree=3),
                                    LinearKernel(), NormalizedKernel(PolynomialKernel(gamma=1.0, degree=2))])
@pytest.mark.parametrize("layout", ["contiguous", "view"])
def test_a_symmetric_block_evaluated_into_a_buffer_is_exactly_symmetric(kernel, layout):
    X = np.random.default_rng(6).normal(size=(130, 11))
    whole = np.full((140, 140), np.nan)
    out = np.empty((130, 130)) if layout == "contiguous" else whole[5:135, 5:135]
    kernel.evaluate_into(X, X, out, symmetric=True)
    assert np.array_equal(out, out.T)
    np.testing.assert_allclose(out, kernel.block(X, X), rtol=1e-12, atol=1e-12)
    if layout == "view":
        assert np.isnan(whole[:5]).all() and np.isnan(whole[:, 135:]).all()  # nothing written around the view


# ------------------------------------------------------------------ scikit-learn's nested parameters
def test_a_grid_search_reaches_the_parameters_of_a_kernel_object():
    """``kernel__gamma`` of ``SVC(kernel=RBFKernel())`` searches what ``gamma`` of ``SVC(kernel="rbf")`` does."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import StandardScaler

    import dkernel

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    by_object = GridSearchCV(dkernel.SVC(kernel=RBFKernel()), {"kernel__gamma": [0.001, 0.01, 0.1]}).fit(X, y)
    by_name = GridSearchCV(dkernel.SVC(kernel="rbf"), {"gamma": [0.001, 0.01, 0.1]}).fit(X, y)
    assert by_object.best_params_ == {"kernel__gamma": by_name.best_params_["gamma"]}
    np.testing.assert_allclose(by_object.cv_results_["mean_test_score"], by_name.cv_results_["mean_test_score"])


def test_set_params_checks_as_the_constructor_and_clone_copies():
    from sklearn.base import clone

    import dkernel

    normalized = NormalizedKernel(RBFKernel(gamma=0.2))
    assert normalized.get_params() == {"kernel": RBFKernel(gamma=0.2), "kernel__gamma": 0.2}
    svc = dkernel.SVC(kernel=normalized)
    copy = clone(svc).set_params(kernel__kernel__gamma=0.5)
    assert copy.kernel == NormalizedKernel(RBFKernel(gamma=0.5))
    assert svc.kernel == NormalizedKernel(RBFKernel(gamma=0.2))  # the original kernel is left as it was
    assert PolynomialKernel(degree=2).set_params(degree=3, coef0=0.0) == PolynomialKernel(degree=3, coef0=0.0)
    with pytest.raises(InvalidKernelParameterError, match="RBFKernel has no parameter 'gama'"):
        RBFKernel().set_params(gama=1.0)
    with pytest.raises(InvalidKernelParameterError, match="gamma must be"):
        RBFKernel().set_params(gamma=-1.0)
