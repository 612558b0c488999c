"""Brute-force references shared by the tests: data, an explicit polynomial feature map, NumPy formulas.

Ground truth for the Gram sources and views: the centered Gram must equal the
Gram of ``φ(x) − a`` computed from the explicit features, and the alignment
the NumPy formula on the whole matrix.
"""

import math

import numpy as np


def make_data(n=150, d=3, seed=0):
    """``n`` Gaussian points in ``d`` dimensions with ±1 labels correlated with the first feature."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0.6, 1, -1)
    return X, y


def poly_feature_map(X, gamma, coef0, degree):
    """φ(x) with ⟨φ(x), φ(z)⟩ = (γ xᵀz + c)^p: Σ_k C(p,k) c^(p-k) γ^k (xᵀz)^k, (xᵀz)^k = ⟨x^⊗k, z^⊗k⟩."""
    n, d = X.shape
    parts = []
    for k in range(degree + 1):
        coef = math.comb(degree, k) * coef0 ** (degree - k) * gamma**k
        tensor = np.ones((n, 1))
        for _ in range(k):
            tensor = (tensor[:, :, None] * X[:, None, :]).reshape(n, -1)
        parts.append(math.sqrt(coef) * tensor)
    return np.hstack(parts)


def translated_gram(Phi, a, Phi_test=None):
    """``⟨φ(x) − a, φ(x_i) − a⟩`` from explicit features (test rows ``Phi_test`` against ``Phi``)."""
    left = Phi if Phi_test is None else Phi_test
    return (left - a) @ (Phi - a).T


def numpy_target_alignment(K, t):
    """``tᵀKt / (‖t‖² ‖K‖_F)`` on the whole matrix (Kandola et al. eq. 1)."""
    return t @ K @ t / ((t @ t) * np.linalg.norm(K))


def assert_rounded_once(narrow, wide):
    """``narrow`` (float32) is ``wide`` (float64 values, to rounding) rounded once: within half a float32 ulp.

    A float32 kernel value evaluated in float64 and then stored differs from the float64 value by at most half the
    spacing of float32 numbers there (plus the float64 rounding between two evaluations); evaluated in float32
    (distances that cancel) it differs by far more.
    """
    assert narrow.dtype == np.float32 and narrow.shape == wide.shape
    error = np.abs(narrow.astype(np.float64) - wide)
    bound = 0.5 * np.spacing(narrow).astype(np.float64) + 1e-13 * np.abs(wide)
    assert (error <= bound).all(), f"{int((error > bound).sum())} values differ by more than rounding once"
