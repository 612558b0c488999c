"""The base of dkernel's SVM estimators: one table of parameter constraints, the kernel checks, the model files, a linear kernel's weights.

:class:`~dkernel.svm.SVC`, :class:`~dkernel.svm.ConformalSVC` and :class:`~dkernel.svm.GeneralizedBiasSVC` take
the kernel (``kernel``, ``degree``, ``gamma``, ``coef0``), the soft margin ``C`` and the solver settings (``tol``,
``shrinking``, ``max_iter``, ``working_set_size``, ``cache_size``, ``verbose``) under the names and in the ranges of
:class:`sklearn.svm.SVC`, and where the training Gram lives and runs (``store``, ``client``). Their constraints are
one table, :attr:`BaseSVM._parameter_constraints`; each estimator merges it into its own and drops or narrows what
does not apply, as scikit-learn's ``NuSVC`` does with ``BaseSVC``'s. Two ranges are narrower than scikit-learn's
because dkernel's kernels refuse the values: ``gamma = 0`` (a constant kernel) and ``degree = 0``
(:data:`KERNEL_PARAMETER_RANGES`, which the Parzen window classifier takes too).

Each estimator is saved and loaded through the one model persistence (:mod:`._persist`): ``save(path)`` writes a
zarr + JSON model with checksums, ``load(path)`` reads it back verified, and :func:`dkernel.load_model` reads any.
"""

import contextlib
import os
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets

# Each fit runs in scikit-learn's fit context (``_fit_context``), which imports its callback support (scikit-learn
# >= 1.9) on the call: imported here with every estimator, as ``sklearn.svm`` has it, not by the first fit.
with contextlib.suppress(ImportError):
    import sklearn.callback._callback_support  # noqa: F401

from .._runtime.client_parameter import ClientParameterMixin
from ..kernels._kernels import Kernel, LinearKernel
from ._inputs import single_class_message
from ._model_files import ModelFileMixin

__all__ = ["EXPECTED_FAILED_CHECKS", "KERNEL_PARAMETER_RANGES", "BaseKernelSVM", "BaseSVM", "expected_failed_checks"]

#: The ranges of the numeric kernel parameters: scikit-learn's SVC ones, without ``gamma = 0`` (a constant kernel)
#: and ``degree = 0``, which dkernel's kernels refuse.
KERNEL_PARAMETER_RANGES = {
    "degree": Interval(Integral, 1, None, closed="left"),
    "gamma": Interval(Real, 0.0, None, closed="neither"),
    "coef0": Interval(Real, None, None, closed="neither"),
}

#: scikit-learn common checks that :class:`~dkernel.svm.SVC` does not pass with its defaults, with the reason;
#: scikit-learn's own SVC is expected to fail the same two. With a fixed ``gamma`` and ``tol=1e-10`` both pass.
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": (
        "gamma='scale' comes from the variance of X, which repeating samples changes and a weight does not; and "
        "the optimum is reached to the solver tolerance (tol=1e-3), not to the check's rtol=1e-7"
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "as check_sample_weight_equivalence_on_dense_data: gamma='scale' and the solver tolerance"
    ),
}


def expected_failed_checks(estimator):
    """The scikit-learn common checks ``estimator`` is expected to fail, ``{check name: reason}``.

    scikit-learn (since 1.6) reads expected failures only from the ``expected_failed_checks`` argument of its check
    runners, no longer from an estimator tag: pass this function to ``parametrize_with_checks`` as it is, or its
    value to ``check_estimator``, which then reports those checks as ``"xfail"`` instead of raising::

        check_estimator(SVC(), expected_failed_checks=expected_failed_checks(SVC()))
    """
    return dict(getattr(estimator, "_expected_failed_checks", {}))


class BaseKernelSVM(ClientParameterMixin, ModelFileMixin, BaseEstimator):
    """The shared parameters, kernel checks and model files of every dkernel SVM: classifiers, the regression SVM
    and the one-class SVM (not used on its own; :class:`BaseSVM` adds the classifiers' labels)."""

    _parameter_constraints: dict = {
        "C": [Interval(Real, 0.0, None, closed="right")],
        "kernel": [StrOptions({"linear", "poly", "rbf", "sigmoid", "precomputed"}), Kernel, dict, callable],
        "degree": [KERNEL_PARAMETER_RANGES["degree"]],
        "gamma": [StrOptions({"scale", "auto"}), KERNEL_PARAMETER_RANGES["gamma"]],
        "coef0": [KERNEL_PARAMETER_RANGES["coef0"]],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "shrinking": ["boolean"],
        "max_iter": [Interval(Integral, -1, None, closed="left")],
        "working_set_size": [Interval(Integral, 2, None, closed="left"), None],
        "cache_size": [Interval(Real, 0.0, None, closed="neither"), None],
        "store": [str, os.PathLike, None],
        "storage_options": [dict, None],
        "client": "no_validation",
        "verbose": ["verbose"],
    }

    #: scikit-learn common checks this estimator is expected to fail (:func:`expected_failed_checks`).
    _expected_failed_checks: dict = {}

    # ------------------------------------------------------------ the kernel
    @property
    def _precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    @property
    def _callable_kernel(self):
        """A user function ``kernel(A, B)`` (scikit-learn's callable kernel), not a dkernel :class:`Kernel`."""
        return callable(self.kernel) and not isinstance(self.kernel, Kernel)

    @property
    def _gram_given(self):
        """The training Gram comes from the user (precomputed, or a kernel function): no kernel object."""
        return self._precomputed or self._callable_kernel

    def _check_kernel_object(self, why):
        """Refuse ``"precomputed"`` and kernel functions where the estimator evaluates its kernel itself (``why``)."""
        if self._gram_given:
            raise ValueError(f"{type(self).__name__} {why}; kernel={self.kernel!r} gives no kernel to evaluate. Pass "
                             f"a kernel name ('rbf', 'linear', 'poly', 'sigmoid') or a dkernel Kernel.")


class BaseSVM(ClassifierMixin, BaseKernelSVM):
    """The base of dkernel's SVM classifiers: :class:`BaseKernelSVM` and the training labels."""

    # ------------------------------------------------------------ the labels
    @staticmethod
    def _training_classes(y):
        """The classes of the training labels and each label's index in them; one class is refused."""
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(single_class_message(classes[0]))
        return classes, y_index


def linear_weights(kernel, coef, support_vectors):
    """``w = Σ_i c_i x_i`` of each row of ``coef`` over the support vectors, read-only: ``coef_`` of a linear kernel.

    Sparse after a fit on sparse data; ``AttributeError`` (as scikit-learn's) for any other kernel.
    """
    linear = isinstance(kernel, LinearKernel) or (isinstance(kernel, str) and kernel == "linear")
    if not linear:
        raise AttributeError("coef_ is only available when using a linear kernel")
    w = sp.csr_matrix(coef) @ support_vectors if sp.issparse(support_vectors) else coef @ support_vectors
    (w.data if sp.issparse(w) else w).flags.writeable = False
    return w
