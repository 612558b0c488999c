"""Model files of the paper's other learners: the Parzen window classifier and kernel ridge regression.

Kandola et al. (§6) measure a kernel by a Parzen window estimator, an SVM and
ridge regression. ``dkernel fit --learner parzen|ridge`` trains the first or
the last (:class:`dkernel.svm.ParzenWindowClassifier`, scikit-learn's
``KernelRidge``) as a :class:`KernelExpansion`, saved through the one model
persistence (:mod:`._persist`, format ``"dkernel-learner"``, with checksums):
the training points ``X_fit``, the dual coefficients (``f(x) = Σ_i c_i K(x,
x_i)``), the kernel's JSON spec and, for the classifier, its classes.
:func:`load_learner` (or :func:`dkernel.load_model`) rebuilds a predictor.
"""

import numpy as np

from .._runtime import artifacts
from . import _persist_remote

__all__ = ["LEARNERS", "KernelExpansion", "fit_learner", "is_learner_model", "load_learner", "save_learner"]

LEARNERS = ("parzen", "ridge")


class KernelExpansion:
    """A saved learner: ``f(x) = Σ_i c_i K(x, x_i)``; a classifier predicts ``classes[f(x) >= 0]``."""

    def __init__(self, learner, kernel, X_fit, dual_coef, classes=None):
        self.learner = learner
        self.kernel = kernel
        self.X_fit = X_fit
        self.dual_coef = np.asarray(dual_coef, dtype=np.float64)
        self.classes = None if classes is None else np.asarray(classes)

    @property
    def n_features_in_(self):
        return self.X_fit.shape[1]

    def decision_function(self, X):
        from .._runtime.validation import check_data

        return np.asarray(self.kernel.block(check_data(X), self.X_fit), dtype=np.float64) @ self.dual_coef

    def predict(self, X):
        f = self.decision_function(X)
        return f if self.classes is None else self.classes[(f >= 0).astype(int)]

    def save(self, path, *, overwrite=False, storage_options=None):
        """Write the model to the folder or URL ``path`` (replacing only a learner model, with ``overwrite``)."""
        return _persist_remote.save_model(self, path, overwrite, storage_options)

    @classmethod
    def load(cls, path, *, storage_options=None):
        """Read a model written by :meth:`save`, after checking its checksums."""
        return _persist_remote.read_model(path, cls, storage_options)


def fit_learner(learner, X, y, kernel, *, alpha=1.0, class_weight="balanced"):
    """Train ``"parzen"`` (unequal class weights of eq. 9 by default) or ``"ridge"`` (``KernelRidge(alpha)``)."""
    from .._runtime.validation import check_data

    X = check_data(X)
    kernel = kernel.resolve(X.shape[1])
    if learner == "parzen":
        from ._parzen import ParzenWindowClassifier

        model = ParzenWindowClassifier(kernel=kernel, class_weight=class_weight).fit(X, y)
        return KernelExpansion("parzen", kernel, X, model.dual_coef_, model.classes_)
    if learner == "ridge":
        from sklearn.kernel_ridge import KernelRidge

        y = np.asarray(y)
        if y.dtype.kind not in "iuf":
            raise ValueError(f"ridge regression needs numeric outputs; the labels have dtype {y.dtype}.")
        K = np.asarray(kernel.block(X, X, symmetric=True), dtype=np.float64)
        model = KernelRidge(kernel="precomputed", alpha=alpha).fit(K, y.astype(np.float64))
        return KernelExpansion("ridge", kernel, X, np.ravel(model.dual_coef_))
    raise ValueError(f"learner must be one of {list(LEARNERS)}; got {learner!r}.")


def save_learner(model, path, *, overwrite=False, storage_options=None):
    """Write ``model`` to the folder or URL ``path`` (replacing only a learner model, with ``overwrite``)."""
    return model.save(path, overwrite=overwrite, storage_options=storage_options)


def is_learner_model(path):
    """Whether ``path`` holds a model written by :func:`save_learner`."""
    return artifacts.artifact_kind(path) == "learner"


def load_learner(path):
    """The :class:`KernelExpansion` saved at ``path``, verified."""
    return KernelExpansion.load(path)
