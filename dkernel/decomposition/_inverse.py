"""Learned pre-images: :meth:`KernelPCA.inverse_transform`, as scikit-learn's (Bakır, Weston & Schölkopf 2004).

A point of feature space has in general no exact pre-image in input space;
the map back is learned instead, by kernel ridge regression from the
training projections ``Z = X_transformed_fit_`` (``n × k``) to the training
data ``X``, with the estimator's own kernel applied to the projections:

.. math::

    (K(Z, Z) + \\alpha I)\\, D = X, \\qquad \\hat x(z) = K(z, Z)\\, D,

``D`` being ``dual_coef_``. The kernel is the fitted one, its ``gamma``
resolved on the input data (``1 / n_features`` of ``X``, as scikit-learn's
``gamma_``), not on the ``k`` components. The centered kernel of the fit
carries no information on the mean of the mapped data, so, as in
scikit-learn, a ``"linear"`` kernel does not give back the data's mean.

References
----------
.. [1] G. H. Bakır, J. Weston and B. Schölkopf, "Learning to find pre-images",
   NIPS 16, 2004.
"""

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_array, check_is_fitted

__all__ = ["SparseInverseError", "fit_preimage_map", "inverse_transform", "kernel_block", "refuse_sparse"]


class SparseInverseError(NotImplementedError, TypeError):
    """Sparse data with ``fit_inverse_transform=True``: scikit-learn's ``NotImplementedError``, and the
    ``TypeError`` by which dkernel (and scikit-learn's estimator checks) refuse sparse input."""


def refuse_sparse(X):
    """Raise :class:`SparseInverseError` for sparse training data (before any eigendecomposition)."""
    if sp.issparse(X):
        raise SparseInverseError("Inverse transform not implemented for sparse matrices! Sparse input is not "
                                 "supported with fit_inverse_transform=True: pass a dense array.")


def kernel_block(kernel, A, B=None):
    """``K(A, B)`` (``K(A, A)``, exactly symmetric, without ``B``) of a dkernel kernel or a function ``f(A, B)``."""
    if hasattr(kernel, "block"):
        return np.asarray(kernel.block(A, A if B is None else B, symmetric=B is None), dtype=np.float64)
    return np.asarray(kernel(A, A if B is None else B), dtype=np.float64)


def fit_preimage_map(kernel, X_transformed, X, alpha):
    """``dual_coef_ = (K(Z, Z) + αI)⁻¹ X``: kernel ridge regression from the projections ``Z`` to the data ``X``.

    Raises ``NotImplementedError`` (a :class:`SparseInverseError`) for sparse ``X``, as scikit-learn.
    """
    refuse_sparse(X)
    Z = np.ascontiguousarray(X_transformed, dtype=np.float64)
    K = kernel_block(kernel, Z)
    K.flat[:: Z.shape[0] + 1] += alpha
    return linalg.solve(K, np.asarray(X, dtype=np.float64), assume_a="pos", overwrite_a=True)


def inverse_transform(estimator, X):
    """``K(X, X_transformed_fit_) @ dual_coef_``: points of the component space mapped back to the input space.

    ``NotFittedError`` when the estimator was not made with ``fit_inverse_transform=True`` (scikit-learn's
    message); the width of ``X`` must be the number of components.
    """
    if not estimator.fit_inverse_transform:
        raise NotFittedError("The fit_inverse_transform parameter was not set to True when instantiating and hence "
                             "the inverse transform is not available.")
    check_is_fitted(estimator, "dual_coef_")
    X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
    fitted = estimator.X_transformed_fit_
    if X.shape[1] != fitted.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, but inverse_transform is expecting {fitted.shape[1]} "
                         f"features as input: pass points of the component space, of shape (n, {fitted.shape[1]}) "
                         f"(what transform returns).")
    A = X.astype(np.float64) if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)
    K = kernel_block(estimator._inverse_kernel, A, np.ascontiguousarray(fitted, dtype=np.float64))
    out = K @ np.asarray(estimator.dual_coef_, dtype=np.float64)
    return out.astype(np.result_type(X.dtype, estimator.dual_coef_.dtype), copy=False)
