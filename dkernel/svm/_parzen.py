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
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d, validate_data

from .._runtime.validation import check_finite, materialize
from ..alignment._measures import alignment_target
from ..exceptions import InvalidLabelsError
from ..kernels._kernels import Kernel
from ..kernels._parameters import check_kernel_object_parameters, named_kernel
from ._base import KERNEL_PARAMETER_RANGES
from ._inputs import class_weights
from ._model_files import ModelFileMixin

__all__ = ["ParzenWindowClassifier"]

#: Its kernel parameters' defaults (``None``: the kernel's own); other values beside a kernel object are refused.
_KERNEL_DEFAULTS = {"gamma": None, "coef0": None, "degree": None}


class ParzenWindowClassifier(ModelFileMixin, ClassifierMixin, BaseEstimator):
    """Two-class Parzen window classifier ``sign(Σ_i t_i K(x, x_i))``.

    Parameters
    ----------
    kernel : str, dict, Kernel, callable or "precomputed", default="rbf"
        ``"precomputed"``: ``fit`` takes ``K(X_train, X_train)`` (only its
        shape is used) and ``predict`` takes ``K(X, X_train)``. A callable
        ``k(A, B)`` returns the Gram between two sets of samples (e.g. an
        :class:`~dkernel.alignment.AdaptedKernel`); its data are passed to it
        unchecked, as scikit-learn's SVC does with a kernel function.
    gamma, coef0, degree : kernel parameters (scikit-learn's names and ranges, as :class:`dkernel.SVC`), default=None
        ``None``: the kernel's own default.
    class_weight : {None, "balanced"} or dict, default="balanced"
        ``None``: ``t_i = ±1``; ``"balanced"``: ``t_i = 1/n₊`` or ``-1/n₋`` (Kandola eq. 9);
        a dict ``{label: weight}``: ``t_i = ±weight[y_i]`` (a missing label weighs 1, as scikit-learn's).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    dual_coef_ : ndarray of shape (n_train,)
        ``t``.
    n_features_in_ : int
        Features seen in ``fit`` (the number of training points with ``kernel="precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has feature names that are all strings (a pandas DataFrame).
    X_fit_ : ndarray or sparse matrix of shape (n_train, n_features_in_), or None
        The training points (None with ``kernel="precomputed"``).

    A fitted classifier is saved by :meth:`save` (zarr + JSON, no pickle) and read back by :meth:`load` or
    :func:`dkernel.load_model`; one of a Python kernel function cannot be saved.
    """

    # The kernel parameters in the SVM estimators' ranges; the kernel is any name dkernel knows, or a callable.
    _parameter_constraints: dict = {
        "kernel": [str, dict, Kernel, callable],
        **{name: [valid, None] for name, valid in KERNEL_PARAMETER_RANGES.items()},
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }

    def __init__(self, kernel="rbf", *, gamma=None, coef0=None, degree=None, class_weight="balanced"):
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.class_weight = class_weight

    def _is_precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _is_kernel_function(self):
        """A user function ``k(A, B)`` (no dkernel ``block``): its data go to it unchecked, as in :class:`dkernel.SVC`."""
        return callable(self.kernel) and not hasattr(self.kernel, "block")

    def _validate_X(self, X, reset, y="no_validation"):
        """``X`` (and ``y``) checked as scikit-learn's estimators do; NaN and infinities as dkernel's error."""
        X = materialize(X)
        what = "fitting" if reset else "predicting"
        if self._is_kernel_function():
            return validate_data(self, X, y, reset=reset, skip_check_array=True)
        if self._is_precomputed():
            if isinstance(X, np.ndarray) and X.dtype.kind in "fc":  # NaN named before a width (as scikit-learn)
                check_finite(X, name="the precomputed kernel", what=what)
            shape = getattr(X, "shape", ())
            if not reset and len(shape) == 2 and shape[1] != self.n_features_in_:
                # scikit-learn's message, and what a test kernel is.
                raise ValueError(f"X has {shape[1]} features, but {type(self).__name__} is expecting "
                                 f"{self.n_features_in_} features as input: with kernel='precomputed' pass "
                                 f"K(X, X_train) of shape (n, {self.n_features_in_}).")
            out = validate_data(self, X, y, reset=reset, accept_sparse=False, dtype=np.float64,
                                ensure_all_finite=False)
            K = out[0] if reset else out
            check_finite(K, name="the precomputed kernel", what=what)
            return out
        out = validate_data(self, X, y, reset=reset, accept_sparse="csr", dtype=[np.float64, np.float32],
                            ensure_all_finite=False, order="C")
        check_finite(out[0] if reset else out, name="X", what=what)
        return out

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Keep the training points (or the Gram's size) and the weights ``t``."""
        X, y = self._validate_X(X, True, y)
        if self._is_kernel_function():
            y = column_or_1d(y, warn=True)
            check_consistent_length(X, y)
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise InvalidLabelsError(f"Only binary classification is supported: the Parzen window classifier needs "
                                     f"two classes; y has {len(self.classes_)} "
                                     f"class{'' if len(self.classes_) == 1 else 'es'}.")
        if isinstance(self.class_weight, dict):
            t = alignment_target(y_index, "classification")
            self.dual_coef_ = t * class_weights(self.class_weight, self.classes_, y)[y_index]
        else:
            self.dual_coef_ = alignment_target(y_index, "uneven" if self.class_weight == "balanced" else "classification")
        if self._is_precomputed():
            if X.shape[0] != X.shape[1]:
                raise ValueError(f"with kernel='precomputed' fit takes the square Gram matrix K(X_train, X_train); "
                                 f"got shape {X.shape}.")
            self.X_fit_ = None
            self._kernel = None
        else:
            check_kernel_object_parameters(self.kernel, gamma=self.gamma, coef0=self.coef0, degree=self.degree,
                                           defaults=_KERNEL_DEFAULTS)
            self.X_fit_ = X
            self._kernel = (self.kernel if self._is_kernel_function()
                            else named_kernel(self.kernel, gamma=self.gamma, coef0=self.coef0, degree=self.degree).resolve(X.shape[1]))
        return self

    def _kernel_rows(self, X):
        X = self._validate_X(X, False)
        if self._is_precomputed():
            return X
        if hasattr(self._kernel, "block"):
            return np.asarray(self._kernel.block(X, self.X_fit_), dtype=np.float64)
        return np.asarray(self._kernel(X, self.X_fit_), dtype=np.float64)

    def decision_function(self, X):
        """``f(x) = Σ_i t_i K(x, x_i)``: positive for the second class of ``classes_``."""
        check_is_fitted(self)
        return self._kernel_rows(X) @ self.dual_coef_

    def predict(self, X):
        """The class of ``sign f(x)`` (ties, ``f = 0``, go to the second class)."""
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) >= 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._is_precomputed()
        # The kernels take CSR matrices (sparse products); a precomputed Gram is dense.
        tags.input_tags.sparse = not self._is_precomputed()
        tags.classifier_tags.multi_class = False
        return tags
