"""The Parzen window classifier of Kandola et al. (§4), with the class weights of uneven data sets.

.. math::

    f(x) = \\sum_i t_i K(x, x_i), \\qquad \\hat y(x) = \\operatorname{sign} f(x),

with ``t_i = ±1`` (``class_weight=None``: the estimator behind the alignment of
balanced classes) or ``t_i = 1/n₊, -1/n₋`` (``class_weight="balanced"``: the
unequal weights of eq. 9, the difference of the two class means of the kernel).
``t`` is :func:`dkernel.alignment.alignment_target`, so ``f`` on the training
points is ``K t``, whose agreement with ``t`` is the alignment's numerator.
Ridge regression, the paper's other learner, is scikit-learn's
``KernelRidge(kernel="precomputed")``.
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import check_is_fitted

from .._runtime.validation import check_data, check_labels
from ..alignment._measures import alignment_target
from ..exceptions import InvalidLabelsError
from ..kernels._kernels import Kernel, get_kernel
from ._base import KERNEL_PARAMETER_RANGES

__all__ = ["ParzenWindowClassifier"]


class ParzenWindowClassifier(ClassifierMixin, BaseEstimator):
    """Two-class Parzen window classifier ``sign(Σ_i t_i K(x, x_i))``.

    Parameters
    ----------
    kernel : str, dict, Kernel, callable or "precomputed", default="rbf"
        ``"precomputed"``: ``fit`` takes ``K(X_train, X_train)`` (only its
        shape is used) and ``predict`` takes ``K(X, X_train)``. A callable
        ``k(A, B)`` returns the Gram between two sets of samples (e.g. an
        :class:`~dkernel.alignment.AdaptedKernel`).
    gamma, coef0, degree : kernel parameters (scikit-learn's names and ranges, as :class:`dkernel.SVC`), default=None
        ``None``: the kernel's own default.
    class_weight : {None, "balanced"}, default="balanced"
        ``None``: ``t_i = ±1``; ``"balanced"``: ``t_i = 1/n₊`` or ``-1/n₋`` (Kandola eq. 9).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    dual_coef_ : ndarray of shape (n_train,)
        ``t``.
    """

    # The kernel parameters in the SVM estimators' ranges; the kernel is any name dkernel knows, or a callable.
    _parameter_constraints: dict = {
        "kernel": [str, dict, Kernel, callable],
        **{name: [valid, None] for name, valid in KERNEL_PARAMETER_RANGES.items()},
        "class_weight": [StrOptions({"balanced"}), None],
    }

    def __init__(self, kernel="rbf", *, gamma=None, coef0=None, degree=None, class_weight="balanced"):
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.class_weight = class_weight

    def _is_precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Keep the training points (or the Gram's size) and the weights ``t``."""
        n = np.shape(X)[0]
        y = check_labels(y, n)
        self.classes_ = unique_labels(y)
        if len(self.classes_) != 2:
            raise InvalidLabelsError(f"the Parzen window classifier needs two classes; y has {len(self.classes_)}.")
        self.dual_coef_ = alignment_target(y, "uneven" if self.class_weight == "balanced" else "classification")
        if self._is_precomputed():
            self.X_fit_ = None
            self._kernel = None
            self.n_features_in_ = n
        else:
            self.X_fit_ = check_data(X) if not callable(self.kernel) or isinstance(self.kernel, str) else X
            self._kernel = (self.kernel if callable(self.kernel) and not hasattr(self.kernel, "block")
                            else get_kernel(self.kernel, **{k: v for k, v in (("gamma", self.gamma), ("coef0", self.coef0), ("degree", self.degree)) if v is not None}).resolve(self.X_fit_.shape[1]))
            self.n_features_in_ = self.X_fit_.shape[1]
        return self

    def _kernel_rows(self, X):
        if self._is_precomputed():
            K = np.asarray(X, dtype=np.float64)
            if K.ndim != 2 or K.shape[1] != len(self.dual_coef_):
                raise ValueError(f"with kernel='precomputed' pass K(X, X_train) of shape (n, {len(self.dual_coef_)}); "
                                 f"got shape {K.shape}.")
            return K
        if hasattr(self._kernel, "block"):
            return np.asarray(self._kernel.block(check_data(X), self.X_fit_), dtype=np.float64)
        return np.asarray(self._kernel(X, self.X_fit_), dtype=np.float64)

    def decision_function(self, X):
        """``f(x) = Σ_i t_i K(x, x_i)``: positive for the second class of ``classes_``."""
        check_is_fitted(self, "dual_coef_")
        return self._kernel_rows(X) @ self.dual_coef_

    def predict(self, X):
        """The class of ``sign f(x)`` (ties, ``f = 0``, go to the second class)."""
        return self.classes_[(self.decision_function(X) >= 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._is_precomputed()
        return tags
