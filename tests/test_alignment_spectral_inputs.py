"""The Gram matrices given to the eigendecomposition behind Kandola's adaptation (Algorithms 1 and 2).

NaN and infinities are a NonFiniteInputError naming the first row holding one (as ``alignment`` names them), for
an array in memory, a dask array, a Gram source and the kernel rows given to ``transform``. A Gram that is not
symmetric beyond round-off is refused with the largest ``|K - Kᵀ|`` and its row and column; round-off (relative to
``max|K|``: 1e-8 in float64, 100 ε in float32) passes, and the adapted kernels are then those of a brute-force
NumPy computation of eqs. (5)-(6) on the symmetric Gram.
"""

import dask.array as da
import numpy as np
import pytest

from dkernel.alignment import KernelAligner, alignment, top_eigenpairs, transductive_adaptation
from dkernel.exceptions import NonFiniteInputError
from dkernel.gram._sources import DenseGram

N = 30


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=N) > 0, 1.0, -1.0)
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    return X, y, K


def _brute_force(K, t, tol):
    """Eq. (5) by NumPy: the eigenpairs of the symmetric ``K`` above ``tol · λ_max``, ``α_i ∝ ⟨v_i, t⟩²`` with
    ``Σ α_i² = 1``, ``G = V diag(α) Vᵀ``; with the alignment of eq. (6) and ``G``'s alignment with ``ttᵀ``
    computed from its entries (eq. 1)."""
    values, vectors = np.linalg.eigh(K)
    keep = values > tol * values.max()
    V = vectors[:, keep]
    p = V.T @ t
    weights = p**2 / np.sqrt(np.sum(p**4))
    G = (V * weights) @ V.T
    T = np.outer(t, t)
    return G, np.sqrt(np.sum(p**4)) / (t @ t), np.sum(G * T) / (np.sqrt(np.sum(G * G)) * np.sqrt(np.sum(T * T)))


def _with(K, value, row=7, col=12):
    K = K.copy()
    K[row, col] = value
    return K


# --------------------------------------------------------------------------- NaN and infinities


def test_transductive_adaptation_names_the_row_of_a_nan(data):
    _, y, K = data
    for method in ({}, {"rank": 5, "method": "randomized", "random_state": 0}):
        with pytest.raises(NonFiniteInputError, match=r"source has NaN or infinite entries \(1 NaN value, first in "
                                                      r"row 7\)"):
            transductive_adaptation(_with(K, np.nan), y, **method)
    with pytest.raises(NonFiniteInputError, match=r"1 infinite value, first in row 7"):
        transductive_adaptation(_with(K, np.inf), y)


def test_a_lazy_gram_with_nan_is_named_by_row_when_decomposed(data):
    _, y, K = data
    with pytest.raises(NonFiniteInputError, match=r"the Gram matrix has NaN or infinite entries \(1 NaN value, "
                                                  r"first in row 7\)"):
        transductive_adaptation(da.from_array(_with(K, np.nan), chunks=16), y)
    with pytest.raises(NonFiniteInputError, match=r"the diagonal of the Gram matrix .*1 infinite value, first in row 4"):
        top_eigenpairs(da.from_array(_with(K, np.inf, 4, 4), chunks=16), 5, method="randomized", random_state=0)
    with pytest.raises(NonFiniteInputError, match=r"the Gram matrix has NaN .*first in row 7"):
        KernelAligner(kernel="precomputed").fit(DenseGram(_with(K, np.nan)), y)


def test_kernel_rows_with_nan_given_to_transform_are_named_by_row(data):
    _, y, K = data
    aligner = KernelAligner(kernel="precomputed").fit(K, y)
    rows = K[:5].copy()
    rows[3, 2] = np.nan
    with pytest.raises(NonFiniteInputError, match=r"K\(X, X_train\) has NaN or infinite entries \(1 NaN value, first "
                                                  r"in row 3\); remove or impute them before transforming"):
        aligner.transform(rows)
    with pytest.raises(NonFiniteInputError, match="first in row 3"):
        aligner.adapted_kernel_.features(rows)


# --------------------------------------------------------------------------- symmetry


def test_a_gram_that_is_not_symmetric_is_refused_with_where(data):
    _, y, K = data
    K_bad = _with(K, K[3, 9] + 0.5, 3, 9)
    where = r"the largest \|K - Kᵀ\| is 0.5, at row 3, column 9"
    for method in ({}, {"rank": 5, "method": "randomized", "random_state": 0}):
        with pytest.raises(ValueError, match="source is not symmetric: " + where):
            transductive_adaptation(K_bad, y, **method)
    with pytest.raises(ValueError, match="X, the precomputed Gram matrix, is not symmetric: " + where):
        KernelAligner(kernel="precomputed").fit(K_bad, y)
    with pytest.raises(ValueError, match="the Gram matrix is not symmetric: " + where):
        top_eigenpairs(da.from_array(K_bad, chunks=16))
    with pytest.raises(ValueError, match="the Gram matrix is not symmetric: " + where):
        KernelAligner(kernel="precomputed").fit(DenseGram(K_bad), y)
    with pytest.raises(ValueError, match="the Gram matrix on the sampled points is not symmetric: " + where):
        top_eigenpairs(K_bad, 5, method="nystroem", n_landmarks=N, random_state=0)


def test_the_symmetry_tolerance_is_relative_to_the_grams_scale(data):
    _, y, K = data
    scaled = 1e6 * K
    above = _with(scaled, scaled[3, 9] + 2e-8 * scaled.max(), 3, 9)
    with pytest.raises(ValueError, match=r"above the tolerance 0.01 \(1e-08 · max\|K\|\)"):
        transductive_adaptation(above, y)
    below = _with(scaled, scaled[3, 9] + 0.5e-8 * scaled.max(), 3, 9)
    G, *_ = _brute_force((below + below.T) / 2, y, 1e-10)
    np.testing.assert_allclose(transductive_adaptation(below, y).to_numpy(), G, rtol=0, atol=1e-9 * np.abs(G).max())


def test_float32_round_off_passes_and_adapts_as_the_float64_gram(data):
    _, y, K = data
    K32 = K.astype(np.float32)
    ulps = np.random.default_rng(1).integers(-4, 5, size=K.shape).astype(np.float32)
    K32 = K32 + ulps * np.spacing(K32)  # a few ulps, different on either side of the diagonal
    assert np.abs(K32 - K32.T).max() > 1e-8 * np.abs(K32).max()
    G, optimum, aligned = _brute_force(K, y, 1e-6)
    np.testing.assert_allclose(transductive_adaptation(K32, y, tol=1e-6).to_numpy(), G, rtol=0, atol=1e-4)
    aligner = KernelAligner(kernel="precomputed").fit(K32, y)
    np.testing.assert_allclose(aligner.training_gram(), G, rtol=0, atol=1e-4)
    np.testing.assert_allclose(aligner.alignment_, optimum, rtol=1e-4)


# --------------------------------------------------------------------------- the values on a valid Gram


def test_the_adaptations_are_the_brute_force_eq5_on_a_valid_gram(data):
    _, y, K = data
    G, optimum, aligned = _brute_force(K, y, 1e-10)
    adapted = transductive_adaptation(K, y)
    np.testing.assert_allclose(adapted.to_numpy(), G, rtol=0, atol=1e-10)
    np.testing.assert_allclose(alignment(adapted.to_numpy(), np.outer(y, y)), aligned, rtol=1e-10)
    np.testing.assert_allclose(optimum, aligned, rtol=1e-10)  # eq. (6) is G's alignment when every row is labelled
    G6, optimum6, _ = _brute_force(K, y, 1e-6)
    aligner = KernelAligner(kernel="precomputed").fit(K, y)
    np.testing.assert_allclose(aligner.training_gram(), G6, rtol=0, atol=1e-10)
    np.testing.assert_allclose(aligner.alignment_, optimum6, rtol=1e-10)
    np.testing.assert_allclose(aligner.gram(K), G6, rtol=0, atol=1e-8)  # Algorithm 2's G(I, I) from K(I, I)
