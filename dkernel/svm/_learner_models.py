"""Model files of the paper's other learners: the Parzen window classifier and kernel ridge regression.

Kandola et al. (§6) measure a kernel by a Parzen window estimator, an SVM and
ridge regression. ``dkernel fit --learner parzen|ridge`` trains the first or
the last through the one model persistence (:mod:`._persist`, with checksums):

* ``parzen``: a :class:`dkernel.svm.ParzenWindowClassifier`, saved as itself (format ``"dkernel-parzen"``), so that
  :func:`dkernel.load_model` gives back the scikit-learn classifier (``score``, ``get_params``, ``classes_``);
* ``ridge``: scikit-learn's ``KernelRidge`` on the precomputed Gram (dkernel has no ridge estimator of its own),
  kept as a :class:`KernelExpansion` (format ``"dkernel-learner"``): the training points ``X_fit``, the dual
  coefficients (``f(x) = Σ_i c_i K(x, x_i)``) and the kernel's JSON spec, with ``predict``, ``score`` (R²) and
  ``get_params`` as a scikit-learn regressor.

A Parzen window model of format ``"dkernel-learner"`` (written before) is read as a ParzenWindowClassifier.
:func:`load_learner` (or :func:`dkernel.load_model`) rebuilds a predictor.
"""

import numpy as np

from .._runtime import artifacts
from . import _persist_remote

__all__ = ["LEARNERS", "LEARNER_KINDS", "KernelExpansion", "fit_learner", "is_learner_model", "load_learner",
           "save_learner"]

LEARNERS = ("parzen", "ridge")
#: The artifact kind of each learner's model (:data:`dkernel._runtime.artifacts.KINDS`).
LEARNER_KINDS = {"parzen": "parzen-model", "ridge": "learner"}


class KernelExpansion:
    """A saved learner: ``f(x) = Σ_i c_i K(x, x_i)``; a classifier predicts ``classes[f(x) >= 0]``.

    A regression (``classes=None``, the ridge learner) is scored by R² as a scikit-learn regressor, a classifier by
    its accuracy; ``get_params`` gives the learner, the kernel and the ridge's ``alpha`` (None when not recorded).
    """

    def __init__(self, learner, kernel, X_fit, dual_coef, classes=None, alpha=None):
        self.learner = learner
        self.kernel = kernel
        self.X_fit = X_fit
        self.dual_coef = np.asarray(dual_coef, dtype=np.float64)
        self.classes = None if classes is None else np.asarray(classes)
        self.alpha = alpha

    @property
    def n_features_in_(self):
        return self.X_fit.shape[1]

    @property
    def dual_coef_(self):
        """The dual coefficients (scikit-learn's name)."""
        return self.dual_coef

    @property
    def X_fit_(self):
        """The training points (scikit-learn's ``KernelRidge`` name)."""
        return self.X_fit

    def get_params(self, deep=True):
        """The learner, its kernel and ``alpha`` (the ridge's regularization), as scikit-learn's ``get_params``."""
        return {"learner": self.learner, "kernel": self.kernel, "alpha": self.alpha}

    def decision_function(self, X):
        from .._runtime.validation import check_data

        return np.asarray(self.kernel.block(check_data(X), self.X_fit), dtype=np.float64) @ self.dual_coef

    def predict(self, X):
        f = self.decision_function(X)
        return f if self.classes is None else self.classes[(f >= 0).astype(int)]

    def score(self, X, y, sample_weight=None):
        """R² of a regression (scikit-learn's regressors' score), the accuracy of a classifier."""
        from sklearn.metrics import accuracy_score, r2_score

        metric = r2_score if self.classes is None else accuracy_score
        return float(metric(y, self.predict(X), sample_weight=sample_weight))

    def save(self, path, *, overwrite=False, storage_options=None):
        """Write the model to the folder or URL ``path`` (replacing only a learner model, with ``overwrite``)."""
        return _persist_remote.save_model(self, path, overwrite, storage_options)

    @classmethod
    def load(cls, path, *, storage_options=None):
        """Read a model written by :meth:`save`, after checking its checksums (a Parzen window one comes back as the
        ParzenWindowClassifier it is)."""
        return _persist_remote.read_model(path, cls, storage_options)


def fit_learner(learner, X, y, kernel, *, alpha=1.0, class_weight="balanced"):
    """Train ``"parzen"`` (a :class:`~dkernel.svm.ParzenWindowClassifier`, unequal class weights of eq. 9 by default)
    or ``"ridge"`` (``KernelRidge(alpha)`` on the Gram, kept as a :class:`KernelExpansion`)."""
    from .._runtime.validation import check_data

    X = check_data(X)
    kernel = kernel.resolve(X.shape[1])
    if learner == "parzen":
        from ._parzen import ParzenWindowClassifier

        return ParzenWindowClassifier(kernel=kernel, class_weight=class_weight).fit(X, y)
    if learner == "ridge":
        return _fit_ridge(X, y, kernel, alpha)
    raise ValueError(f"learner must be one of {list(LEARNERS)}; got {learner!r}.")


def _fit_ridge(X, y, kernel, alpha):
    from sklearn.kernel_ridge import KernelRidge

    y = np.asarray(y)
    if y.dtype.kind not in "iuf":
        raise ValueError(f"ridge regression needs numeric outputs; the labels have dtype {y.dtype}.")
    K = np.asarray(kernel.block(X, X, symmetric=True), dtype=np.float64)
    model = KernelRidge(kernel="precomputed", alpha=alpha).fit(K, y.astype(np.float64))
    return KernelExpansion("ridge", kernel, X, np.ravel(model.dual_coef_), alpha=float(alpha))


def save_learner(model, path, *, overwrite=False, storage_options=None):
    """Write ``model`` to the folder or URL ``path`` (replacing only a learner model, with ``overwrite``)."""
    return model.save(path, overwrite=overwrite, storage_options=storage_options)


def is_learner_model(path):
    """Whether ``path`` holds a model written by :func:`save_learner`."""
    return artifacts.artifact_kind(path) in ("learner", *LEARNER_KINDS.values())


def load_learner(path):
    """The model saved at ``path`` by :func:`save_learner`, verified: a ParzenWindowClassifier or a
    :class:`KernelExpansion`."""
    return _persist_remote.load_model(path)
