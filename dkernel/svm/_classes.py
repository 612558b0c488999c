"""The scikit-learn estimator :class:`SVC`: its parameters, fit orchestration and prediction.

:class:`SVC` composes the pieces of dkernel in the order the data flow:
X → kernel → Gram (in memory, in a zarr store, or rows on the fly) → lazy
operator views (normalization, Graf & Borer eq. 2; centering, Meilă eq. 14)
→ block-coordinate solver → corrected intercepts → prediction through the
original kernel (Meilă eq. 16, Graf & Borer eq. 3). The training Gram and
the binary problems are in :mod:`._training`, the multiclass schemes in
:mod:`._multiclass`, prediction in :mod:`._predict`, the model store in
:mod:`._persist`.
"""

import os
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._dask import client_for
from .._validation import check_finite
from ..centering import Centering
from ..kernels import Kernel, NormalizedKernel
from ..operators import NormalizedGram
from ..solver import Checkpoint
from ._kernel import ESTIMATOR_DEFAULTS
from . import _multiclass, _persist
from ._predict import is_dask, is_gram_source, map_row_blocks, materialize, pairwise_decision
from ._training import centering_for, fit_binary, problem_checkpoints, resolve_kernel, store_path, training_gram

__all__ = ["SVC", "load_model"]

#: scikit-learn common checks that SVC does not pass, with the reason (also
#: listed in the README). scikit-learn's own SVC marks the same check.
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": (
        "a weight w and w repeated samples give the same optimum only up to the solver tolerance "
        "(tol=1e-3), not to the check's rtol=1e-7"
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "as check_sample_weight_equivalence_on_dense_data: equal only up to the solver tolerance"
    ),
}


class SVC(ClassifierMixin, BaseEstimator):
    """C-Support Vector Classification on Dask, with feature-space centering and normalization.

    The dual problem is solved by dkernel's block-coordinate solver on a Gram
    matrix that is computed in memory, kept in a zarr store, or evaluated row
    by row. Optional lazy views change the feature space seen by the solver
    without copying the Gram matrix:

    * ``normalize=True`` trains on ``K(x,z)/sqrt(K(x,x)K(z,z))`` (Graf & Borer
      eq. 2); with ``normalize_bias_correction=True`` the intercept is moved
      to Graf & Borer's b' (eq. 3).
    * ``centering`` translates the origin of the feature space to
      ``a = Σ γ_i φ(x_i)`` (Meilă eq. 14) before solving; the intercept is then
      corrected by Δb (eq. 19) so that prediction uses the original kernel only
      (eq. 16). The classifier is the same in exact arithmetic; centering
      helps the solver when the origin lies far from the data.

    Parameters mirror :class:`sklearn.svm.SVC` where they exist.

    Parameters
    ----------
    C : float, default=1.0
        Regularization parameter (> 0).
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"} or Kernel, default="rbf"
        With ``"precomputed"``, ``X`` in ``fit`` is a square Gram matrix (an
        ndarray or a :class:`~dkernel.gram.GramMatrix`) and ``X`` in
        ``predict`` is the kernel between test and training points.
    degree : int, default=3
    gamma : {"scale", "auto"} or float, default="scale"
        ``"scale"``: ``1 / (n_features * X.var())``; ``"auto"``: ``1 / n_features``.
    coef0 : float, default=0.0
    tol : float, default=1e-3
        Stop when the maximal violating pair gap ``m(α) − M(α) <= tol`` (libsvm).
    class_weight : dict or "balanced", default=None
        Multiplies ``C`` per class.
    max_iter : int, default=-1
        Outer iterations of the solver per binary problem; -1 for libsvm's
        limit of ``max(10⁷, 100 n)`` two-variable steps, that is about
        ``max(10⁷, 100 n) / working_set_size`` outer iterations. A
        :class:`~sklearn.exceptions.ConvergenceWarning` is issued when it is
        reached.
    decision_function_shape : {"ovo", "ovr"}, default="ovr"
        Shape of :meth:`decision_function` for one-vs-one training, as in
        scikit-learn.
    multiclass : {"ovo", "ovr"}, default="ovo"
        One-vs-one (libsvm's scheme) or one-vs-rest with winner-take-all (as
        in Graf & Borer's COIL experiment).
    centering : None, "standard", "class-balanced" or Centering, default=None
        Origin of the feature space for training: the centre of gravity
        (γ = 1/n), Meilă's class-balanced origin (eq. 13), or explicit weights
        (binary problems only).
    centering_sample : int, default=None
        Represent the origin by a sample of this many training points (Meilă
        §5: n'/2 per class for "class-balanced"); only ``K(X, X_S)`` is needed.
    normalize : bool, default=False
        Train on the normalized kernel (Graf & Borer eq. 2).
    normalize_bias_correction : bool, default=False
        Replace the intercept by Graf & Borer's b' (eq. 3); needs ``normalize``.
    store : str or path-like, default=None
        Where the training Gram matrix is kept on disk. A folder (created
        when missing) that holds one zarr Gram store per training set and
        kernel, ``store/gram-<fingerprint>.zarr``, named by a digest of the
        data and the resolved kernel: fitting the same data again reuses its
        store (only missing blocks are computed), and each fold of
        ``cross_val_score`` or ``GridSearchCV`` gets a store of its own. A
        path that is itself a Gram store (``dkernel gram --out``,
        :meth:`GramMatrix.compute`) is used directly when it holds the Gram of
        this data and kernel, and refused otherwise. The path used is
        ``store_path_``.
    working_set_size : int, default=None
        Variables per solver sub-problem (default chosen by the solver).
    cache_size : float, default=None
        Memory (MB) for the Gram matrix. When the whole training Gram fits, it
        is computed once in memory, in float64, or in float32 when only that
        fits (as libsvm's single-precision kernel cache); otherwise rows are
        computed on the fly with a cache of this size. ``None``: half of the
        available memory for the whole Gram, 1 GiB of row cache.
    client : distributed.Client, str or False, default=None
        Run the Gram computation and the solver's gradient updates on this
        cluster (centered and normalized views too: each worker corrects the
        rows it reads for its own columns): a client, or a
        scheduler address (``"tcp://127.0.0.1:8786"``; the client opened for
        it is closed when ``fit`` returns). ``None`` uses the current client
        if one exists, else this process; ``False`` always runs in this
        process.
    random_state : int, RandomState or None, default=None
        Sampling of ``centering_sample``.
    checkpoint : str, path-like or dkernel.solver.Checkpoint, default=None
        A folder where the solver writes its state every 30 s (or as a
        :class:`~dkernel.solver.Checkpoint` says), one subfolder per binary
        problem. When it holds the checkpoints of this fit (same data,
        kernel, views, ``C``, weights, ``tol``, ``working_set_size``), ``fit``
        resumes from them: solved problems are skipped, the others continue
        on the path of an uninterrupted fit. A checkpoint of another fit
        raises ``ValueError`` and is left as it is; the folder stays after
        the fit.
    verbose : bool, default=False
        Show the solver's progress (gap and free support vectors per outer
        iteration).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    support_ : ndarray of shape (n_SV,)
        Training indices of the support vectors, grouped by class.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty with ``kernel="precomputed"``.
    n_support_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray
        ``α_i y_i``. One-vs-one: libsvm's layout, shape
        ``(n_classes - 1, n_SV)``; one-vs-rest: ``(n_classes, n_SV)``.
    intercept_ : ndarray
        Intercepts for prediction with the original kernel, corrections
        included: one per binary problem.
    delta_b_ : ndarray
        Meilă's Δb per binary problem (zeros without centering).
    uncorrected_intercept_ : ndarray
        Intercepts as found by the solver on the (centered/normalized) Gram.
    objective_ : ndarray
        Dual objective per binary problem.
    n_iter_ : ndarray
        Solver outer iterations per binary problem.
    gram_dtype_ : str
        How the training Gram was held: ``"float64"`` or ``"float32"`` (whole,
        in memory), ``"on-the-fly"`` (rows computed as needed), ``"store"``
        (zarr) or ``"precomputed"``.
    store_path_ : str
        The Gram store used for training (only with ``store``).
    fit_status_ : int
        0 when every binary problem converged to ``tol``, 1 when one stopped
        at ``max_iter``.

    References
    ----------
    .. [1] M. Meilă, "Data centering in feature space", AISTATS 2003, eqs. 13–19.
    .. [2] A. B. A. Graf and S. Borer, "Normalization in support vector
       machines", DAGM 2001, eqs. 2–3.
    .. [3] R.-E. Fan, P.-H. Chen and C.-J. Lin, "Working set selection using
       second order information for training SVM", JMLR 6, 2005.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from dkernel import SVC
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = SVC(kernel="rbf", gamma=1e-4, C=10, centering="class-balanced").fit(X, y)
    >>> round(clf.score(X, y), 2) >= 0.9
    True
    """

    _parameter_constraints: dict = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({"linear", "poly", "rbf", "sigmoid", "precomputed"}), Kernel, dict],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "max_iter": [Interval(Integral, -1, None, closed="left")],
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
        "multiclass": [StrOptions({"ovo", "ovr"})],
        "centering": [StrOptions({"standard", "class-balanced"}), Centering, None],
        "centering_sample": [Interval(Integral, 2, None, closed="left"), None],
        "normalize": ["boolean"],
        "normalize_bias_correction": ["boolean"],
        "store": [str, os.PathLike, None],
        "working_set_size": [Interval(Integral, 2, None, closed="left"), None],
        "cache_size": [Interval(Real, 0.0, None, closed="neither"), None],
        "client": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "checkpoint": [str, os.PathLike, Checkpoint, None],
    }

    def __init__(
        self,
        C=1.0,
        kernel="rbf",
        degree=ESTIMATOR_DEFAULTS["degree"],
        gamma=ESTIMATOR_DEFAULTS["gamma"],
        coef0=ESTIMATOR_DEFAULTS["coef0"],
        tol=1e-3,
        class_weight=None,
        max_iter=-1,
        decision_function_shape="ovr",
        multiclass="ovo",
        centering=None,
        centering_sample=None,
        normalize=False,
        normalize_bias_correction=False,
        store=None,
        working_set_size=None,
        cache_size=None,
        client=None,
        random_state=None,
        verbose=False,
        checkpoint=None,
    ):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.multiclass = multiclass
        self.centering = centering
        self.centering_sample = centering_sample
        self.normalize = normalize
        self.normalize_bias_correction = normalize_bias_correction
        self.store = store
        self.working_set_size = working_set_size
        self.cache_size = cache_size
        self.client = client
        self.random_state = random_state
        self.verbose = verbose
        self.checkpoint = checkpoint

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = self.kernel != "precomputed"
        return tags

    @property
    def _precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    # ------------------------------------------------------------ validation
    def _check_params_consistency(self):
        if self.normalize_bias_correction and not self.normalize:
            raise ValueError(
                "normalize_bias_correction=True needs normalize=True: Graf & Borer's b' is defined for a "
                "normalized kernel."
            )
        if self.normalize and self._precomputed:
            raise ValueError(
                "normalize=True is not available with kernel='precomputed' (prediction would need K(x, x) of "
                "the test points); normalize the Gram matrix yourself or pass a kernel."
            )
        if self.centering_sample is not None and self.centering is None:
            raise ValueError("centering_sample is set but centering is None; choose a centering scheme.")

    def _validate_fit_data(self, X, y):
        if self._precomputed:
            return self._validate_precomputed_fit(X, y)
        X = materialize(X)
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            ensure_all_finite=False,
            order="C",
        )
        check_finite(X, name="X", what="fitting or predicting")
        return X, y

    def _validate_precomputed_fit(self, X, y):
        if hasattr(X, "rows") and hasattr(X, "diag"):
            n = int(X.n)
            if tuple(X.shape) != (n, n):
                raise ValueError(
                    f"a precomputed Gram matrix must be square (n_samples, n_samples); got shape {tuple(X.shape)}."
                )
            y = np.asarray(y)
            if y.shape[0] != n:
                raise ValueError(f"y has {y.shape[0]} labels but the Gram matrix has {n} rows.")
            self.n_features_in_ = n
            return X, y
        X = materialize(X)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite=False, order="C")
        if X.shape[0] != X.shape[1]:
            raise ValueError(
                f"a precomputed Gram matrix must be square (n_samples, n_samples); got shape {X.shape}. "
                f"Pass K(X_train, X_train) to fit and K(X_test, X_train) to predict."
            )
        check_finite(X, name="the precomputed Gram matrix", what="fitting")
        scale = max(1.0, float(np.abs(X).max()))
        if not np.allclose(X, X.T, rtol=1e-10, atol=1e-10 * scale):
            raise ValueError(
                "the precomputed Gram matrix is not symmetric (max |K - Kᵀ| = "
                f"{float(np.abs(X - X.T).max()):.3g}); pass a kernel matrix K(X, X)."
            )
        return X, y

    # -------------------------------------------------------------- fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the SVM on training data ``X`` (or a precomputed Gram matrix) and labels ``y``.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            Or, with ``kernel="precomputed"``, a Gram matrix (ndarray or
            :class:`~dkernel.gram.GramMatrix`) of shape (n_samples, n_samples).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multipliers of ``C``.

        Returns
        -------
        self
        """
        self._check_params_consistency()
        X, y = self._validate_fit_data(X, y)
        y = _check_labels(y)
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"the training labels contain a single class ({_scalar(classes[0])!r}): one class is not enough, "
                f"an SVM needs at least two classes."
            )
        if isinstance(self.centering, Centering) and classes.shape[0] > 2:
            raise ValueError(
                "an explicit Centering object is defined for one binary problem; use centering='class-balanced' "
                "or 'standard' for multiclass data."
            )
        self.classes_ = classes
        C_i = _upper_bounds(self.C, self.class_weight, classes, y_index, sample_weight)

        kernel = resolve_kernel(self.kernel, X, gamma=self.gamma, coef0=self.coef0, degree=self.degree)
        self._kernel = kernel
        # A zero weight removes the sample, as in libsvm.
        keep = np.flatnonzero(C_i > 0)
        if np.unique(y_index[keep]).shape[0] < 2:
            raise ValueError("the samples with non-zero weight contain a single class; an SVM needs two.")
        problems = _multiclass.binary_problems(y_index, classes.shape[0], keep, self.multiclass)
        checkpoints = problem_checkpoints(self.checkpoint, len(problems))
        rng = np.random.default_rng(_seed_from(self.random_state))
        with client_for(self.client) as client:
            base = self._training_gram(X, kernel, client)
            if self.normalize:
                base = NormalizedGram(base)
            fits = [self._fit_binary(base, index, y_pm, C_i[index], client, rng, checkpoint)
                    for (index, y_pm), checkpoint in zip(problems, checkpoints)]
        self._store_fits(X, problems, fits, y_index)
        return self

    def _training_gram(self, X, kernel, client):
        """The Gram source of the training data, before views; records how it is held in ``gram_dtype_``."""
        if self._precomputed:
            self.gram_dtype_ = "precomputed"
            return X
        path = None
        if self.store is not None:
            path = self.store_path_ = store_path(self.store, X, kernel)
        gram, self.gram_dtype_ = training_gram(X, kernel, client, store_path=path, cache_size=self.cache_size,
                                               progress=bool(self.verbose))
        return gram

    def _fit_binary(self, base, index, y_pm, C, client, rng, checkpoint=None):
        """One binary problem on the samples ``index``, with this estimator's views, solver settings and corrections."""
        return fit_binary(
            base, index, y_pm, C, centering=centering_for(self.centering, self.centering_sample, y_pm, rng),
            normalized=self.normalize, bias_correction=self.normalize_bias_correction, tol=self.tol,
            working_set_size=self.working_set_size, max_iter=self.max_iter,
            client=client, verbose=self.verbose, checkpoint=checkpoint,
        )

    def _store_fits(self, X, problems, fits, y_index):
        n_classes = self.classes_.shape[0]
        support, self.n_support_, self._pair_coef = _multiclass.support_and_coefficients(
            problems, [fit["coef"] for fit in fits], y_index, n_classes)
        self.support_ = support
        if self._is_ovo_multiclass:
            self.dual_coef_ = _multiclass.libsvm_dual_coef(self._pair_coef, y_index[support], n_classes)
        else:
            self.dual_coef_ = self._pair_coef
        self.intercept_ = np.array([fit["intercept"] for fit in fits])
        self.uncorrected_intercept_ = np.array([fit["uncorrected"] for fit in fits])
        self.delta_b_ = np.array([fit["delta_b"] for fit in fits])
        self.objective_ = np.array([fit["objective"] for fit in fits])
        self.n_iter_ = np.array([fit["n_iter"] for fit in fits], dtype=np.int64)
        self.fit_status_ = int(not all(fit["converged"] for fit in fits))
        self.support_vectors_ = np.empty((0, 0)) if self._precomputed else X[support]
        self.shape_fit_ = (y_index.shape[0], self.n_features_in_)

    @property
    def _is_ovo_multiclass(self):
        return self.classes_.shape[0] > 2 and self.multiclass == "ovo"

    # ----------------------------------------------------------- prediction
    def _pairwise_decision(self, X):
        """Decision values of every binary problem, shape (n_test, n_problems)."""
        kernel = None if self._precomputed else NormalizedKernel(self._kernel) if self.normalize else self._kernel
        return pairwise_decision(X, kernel, self.support_vectors_, self.support_, self._pair_coef, self.intercept_)

    def _validate_predict_data(self, X):
        check_is_fitted(self)
        if self._precomputed and is_gram_source(X):
            n_train = self.shape_fit_[0]
            if len(X.shape) != 2 or X.shape[1] != n_train:
                raise ValueError(
                    f"X should be a kernel matrix of shape (n_test, {n_train}) between test and training "
                    f"points; got a Gram matrix of shape {tuple(X.shape)}."
                )
            return X
        if self._precomputed:
            X = validate_data(self, materialize(X), dtype=np.float64, reset=False, ensure_all_finite=False)
            n_train = self.shape_fit_[0]
            if X.shape[1] != n_train:
                raise ValueError(
                    f"X should be a kernel matrix of shape (n_test, {n_train}) between test and training "
                    f"points; got {X.shape}."
                )
            check_finite(X, name="the precomputed test kernel", what="predicting")
            return X
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False,
                          ensure_all_finite=False, order="C")
        check_finite(X, name="X", what="fitting or predicting")
        return X

    def decision_function(self, X):
        """Decision values through the original kernel plus the intercept corrections.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            A dask array stays lazy: the result is a dask array computed
            blockwise over its row chunks. With ``kernel="precomputed"``, the
            kernel ``K(X_test, X_train)`` of shape (n_samples, n_train): an
            ndarray, or a :class:`~dkernel.gram.GramMatrix` (e.g. a store
            computed by ``GramMatrix.compute(X_test, X_train, ...)``), read by
            row blocks.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes; (n_samples, n_classes)
        for ``decision_function_shape="ovr"`` or one-vs-rest training;
        (n_samples, n_classes * (n_classes - 1) / 2) for one-vs-one with
        ``decision_function_shape="ovo"``.
        """
        if is_dask(X):
            check_is_fitted(self)
            n_out = _multiclass.decision_width(self.classes_.shape[0], self._is_ovo_multiclass, self.decision_function_shape)
            fn = self.decision_function
            if n_out == 1:
                return map_row_blocks(X, lambda b: fn(b)[:, None], 1, self.classes_.dtype)[:, 0]
            return map_row_blocks(X, fn, n_out, self.classes_.dtype)
        X = self._validate_predict_data(X)
        dec = self._pairwise_decision(X)
        return _multiclass.decision_values(dec, self.classes_.shape[0], self._is_ovo_multiclass,
                                           self.decision_function_shape)

    def predict(self, X):
        """Class labels of ``X`` (a dask array stays lazy; a precomputed ``GramMatrix`` is read by row blocks)."""
        if is_dask(X):
            check_is_fitted(self)
            return map_row_blocks(X, self.predict, None, self.classes_.dtype)
        X = self._validate_predict_data(X)
        dec = self._pairwise_decision(X)
        return self.classes_[_multiclass.predicted_class(dec, self.classes_.shape[0], self.multiclass)]

    # ----------------------------------------------------------- persistence
    def save(self, path, *, overwrite=False):
        """Write the fitted model to a zarr store (arrays) with JSON attributes; no pickle.

        The store is written to a folder beside ``path`` and renamed into
        place when complete (:mod:`dkernel._artifacts`), so an interrupted
        save never leaves a half-written model and never loses the model it
        replaces.

        Parameters
        ----------
        path : str or path-like
        overwrite : bool, default=False
            Replace a dkernel model at ``path``. Anything else (a Gram store,
            a folder of other files, a file) is refused and left as is.

        Raises
        ------
        ArtifactPathError
            A ``FileExistsError``: ``path`` holds anything but a model, or a
            model without ``overwrite``.
        """
        check_is_fitted(self)
        return _persist.write_model(self, path, overwrite)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`."""
        return _persist.read_model(path, cls)


def load_model(path):
    """Read an :class:`SVC` written by :meth:`SVC.save`."""
    return SVC.load(path)


# ------------------------------------------------------------------ helpers
def _upper_bounds(C, class_weight, classes, y_index, sample_weight):
    """Per-sample upper bounds ``C_i = C · class weight · sample weight`` of the dual variables."""
    n = y_index.shape[0]
    C_i = np.full(n, float(C))
    if class_weight is not None:
        C_i *= _class_weights(class_weight, classes, y_index)[y_index]
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        if sw.shape[0] != n:
            raise ValueError(f"sample_weight has {sw.shape[0]} entries but there are {n} samples.")
        if not np.isfinite(sw).all() or (sw < 0).any():
            raise ValueError(
                "sample_weight must be finite and >= 0 for every sample (a zero weight removes the sample)."
            )
        C_i *= sw
    return C_i


def _class_weights(class_weight, classes, y_index):
    """The weight of each class: ``"balanced"`` as scikit-learn's SVC (``n / (n_classes · count)``), or a dict."""
    n_classes = classes.shape[0]
    if class_weight == "balanced":
        return compute_class_weight("balanced", classes=np.arange(n_classes), y=y_index)
    weights = np.ones(n_classes)
    for label, w in class_weight.items():
        matches = np.flatnonzero(classes == label)
        if matches.size == 0:
            raise ValueError(f"class_weight names the label {label!r}, which is not in y.")
        weights[matches[0]] = float(w)
    return weights


def _check_labels(y):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        bad = np.flatnonzero(~np.isfinite(y))
        raise ValueError(
            f"y has {bad.size} NaN or infinite labels (first at position {bad[0]}); drop those samples."
        )
    return y


def _scalar(value):
    """A numpy scalar as the Python value it holds (``1``, not ``np.int64(1)``, in messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _seed_from(random_state):
    if random_state is None or isinstance(random_state, (Integral, np.integer)):
        return random_state
    return int(random_state.randint(2**31 - 1))
