"""scikit-learn estimators on top of the dkernel solver.

:class:`SVC` composes the pieces of dkernel in the order the data flow:
X → kernel → Gram (in memory, in a zarr store, or rows on the fly) → lazy
operator views (normalization, Graf & Borer eq. 2; centering, Meilă eq. 14)
→ block-coordinate solver → corrected intercepts → prediction through the
original kernel (Meilă eq. 16, Graf & Borer eq. 3).
"""

import json
import os
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _artifacts
from ._dask import client_for
from ._dense import dense_symmetric_gram
from ._validation import check_finite
from .centering import Centering, delta_b
from .kernels import ESTIMATOR_DEFAULTS, Kernel, NormalizedKernel, estimator_kernel, get_kernel, kernel_from_dict
from .operators import CenteredGram, KernelGram, NormalizedGram, graf_intercept
from ._sources import DenseGram
from .solver import solve_qp

__all__ = ["SVC", "load_model"]

MODEL_FORMAT = "dkernel-svc"
MODEL_VERSION = 1

#: Fraction of the available memory that a whole in-memory training Gram may
#: take when ``cache_size`` is not given; above it, kernel rows are computed on
#: the fly with a row cache.
GRAM_MEMORY_FRACTION = 0.5


def _gram_memory_budget(cache_size_mb):
    """Bytes allowed for a whole in-memory Gram: ``cache_size`` MB, or half the available memory."""
    if cache_size_mb is not None:
        return cache_size_mb * 2**20
    import psutil

    return GRAM_MEMORY_FRACTION * psutil.virtual_memory().available

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

#: Test rows evaluated per block in prediction.
PREDICT_BLOCK_ROWS = 4096

#: Bytes of a stored test kernel ``K(X_test, X_train)`` read at once in prediction.
PREDICT_BLOCK_BYTES = 2**28


class _SubsetGram:
    """The principal submatrix ``K[index][:, index]`` of a Gram source, read on demand."""

    def __init__(self, base, index):
        self.base = base
        self.index = np.asarray(index, dtype=np.intp)
        self._diag = None

    @property
    def n(self):
        return self.index.shape[0]

    @property
    def shape(self):
        return (self.n, self.n)

    @property
    def dtype(self):
        return np.dtype(np.float64)

    @property
    def chunks(self):
        return getattr(self.base, "chunks", (min(self.n, 4096),) * 2)

    @property
    def kernel(self):
        return getattr(self.base, "kernel", None)

    def rows(self, idx):
        return np.asarray(self.base.rows(self.index[np.asarray(idx, dtype=np.intp)]))[:, self.index]

    def diag(self):
        if self._diag is None:
            self._diag = np.asarray(self.base.diag())[self.index]
        return self._diag

    @property
    def dask(self):
        if hasattr(self.base, "columns"):
            # Only the columns of the subset: n × m kernel work, not n × n.
            return self.base.columns(self.index)[self.index]
        return self.base.dask[self.index][:, self.index]


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
        Run the Gram computation (and the solver's gradient updates, without
        ``centering``/``normalize``) on this cluster: a client, or a
        scheduler address (``"tcp://127.0.0.1:8786"``; the client opened for
        it is closed when ``fit`` returns). ``None`` uses the current client
        if one exists, else this process; ``False`` always runs in this
        process.
    random_state : int, RandomState or None, default=None
        Sampling of ``centering_sample``.
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
        X = _materialize(X)
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
        X = _materialize(X)
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

    # ------------------------------------------------------------ the kernel
    def _resolve_kernel(self, X):
        if self._precomputed:
            return None
        if isinstance(self.kernel, (Kernel, dict)):
            return get_kernel(self.kernel).resolve(X.shape[1])
        return estimator_kernel(self.kernel, X, gamma=self.gamma, coef0=self.coef0, degree=self.degree)

    def _training_gram(self, X, kernel, client):
        """The Gram source of the training data, before views; records how it is held in ``gram_dtype_``."""
        if self._precomputed:
            self.gram_dtype_ = "precomputed"
            return X
        from .gram import GramMatrix

        n = X.shape[0]
        if self.store is not None:
            self.gram_dtype_ = "store"
            self.store_path_ = self._store_path(X, kernel)
            return GramMatrix.compute(X, kernel=kernel, store=self.store_path_, client=client,
                                      progress=bool(self.verbose))
        budget = _gram_memory_budget(self.cache_size)
        if client is None:
            # float64 when it fits; else float32, as libsvm's single-precision kernel cache.
            for dtype in (np.float64, np.float32):
                if n * n * np.dtype(dtype).itemsize <= budget:
                    self.gram_dtype_ = np.dtype(dtype).name
                    return dense_symmetric_gram(X, kernel, dtype=dtype, progress=bool(self.verbose))
        self.gram_dtype_ = "on-the-fly"
        # On a cluster without a store, each worker computes the kernel columns of its own
        # row range from X (shipped once), so no Gram matrix travels over the network.
        return KernelGram(X, kernel)

    def _store_path(self, X, kernel):
        """The Gram store of ``K(X, X)`` that ``store`` designates.

        ``store`` itself when it is a zarr store (a Gram written by ``dkernel
        gram`` or :meth:`GramMatrix.compute`: used when it holds this Gram,
        refused otherwise); else the subfolder ``gram-<fingerprint>.zarr`` of
        the folder ``store``, named by a digest of the data, their dtype and
        the resolved kernel, so that each training set (a cross-validation
        fold) has its own store and fitting the same data again reuses it.
        """
        import hashlib

        from .gram import data_fingerprint

        path = os.path.abspath(os.fspath(self.store))
        if os.path.exists(os.path.join(path, "zarr.json")):
            return path
        key = json.dumps({"X": data_fingerprint(X), "kernel": kernel.to_dict()}, sort_keys=True)
        return os.path.join(path, f"gram-{hashlib.sha256(key.encode()).hexdigest()[:16]}.zarr")

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
        n = y.shape[0]
        C_i = self._upper_bounds(y_index, n, sample_weight)

        kernel = self._resolve_kernel(X)
        self._kernel = kernel
        # A zero weight removes the sample, as in libsvm.
        keep = np.flatnonzero(C_i > 0)
        if np.unique(y_index[keep]).shape[0] < 2:
            raise ValueError("the samples with non-zero weight contain a single class; an SVM needs two.")
        problems = self._binary_problems(y_index, classes.shape[0], keep)
        rng = np.random.default_rng(_seed_from(self.random_state))
        with client_for(self.client) as client:
            base = self._training_gram(X, kernel, client)
            if self.normalize:
                base = NormalizedGram(base)
            fits = [self._fit_binary(base, index, y_pm, C_i[index], client, rng) for index, y_pm in problems]
        self._store_fits(X, problems, fits, y_index)
        return self

    def _upper_bounds(self, y_index, n, sample_weight):
        C_i = np.full(n, float(self.C))
        if self.class_weight is not None:
            n_classes = int(y_index.max()) + 1
            if self.class_weight == "balanced":
                counts = np.bincount(y_index, minlength=n_classes)
                weights = n / (n_classes * counts)
            else:
                weights = np.ones(n_classes)
                for label, w in self.class_weight.items():
                    matches = np.flatnonzero(self.classes_ == label)
                    if matches.size == 0:
                        raise ValueError(f"class_weight names the label {label!r}, which is not in y.")
                    weights[matches[0]] = float(w)
            C_i *= weights[y_index]
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

    def _binary_problems(self, y_index, n_classes, keep):
        """``(index, y_pm)`` for each binary problem, in scikit-learn's order and sign convention."""
        if n_classes == 2:
            # Binary: +1 is the second class, as scikit-learn's decision_function.
            return [(keep, np.where(y_index[keep] == 1, 1.0, -1.0))]
        if self.multiclass == "ovr":
            return [(keep, np.where(y_index[keep] == k, 1.0, -1.0)) for k in range(n_classes)]
        problems = []
        for i in range(n_classes):
            for j in range(i + 1, n_classes):
                index = keep[(y_index[keep] == i) | (y_index[keep] == j)]
                # One-vs-one: a positive value votes for the first class of the pair (libsvm).
                problems.append((index, np.where(y_index[index] == i, 1.0, -1.0)))
        return problems

    def _centering_for(self, y_pm, rng):
        if self.centering is None:
            return None
        if isinstance(self.centering, Centering):
            return self.centering
        scheme = self.centering
        if self.centering_sample is not None:
            seed = int(rng.integers(2**31 - 1))
            return Centering.sampled(y_pm, self.centering_sample, scheme=scheme, random_state=seed)
        if scheme == "standard":
            return Centering.standard(y_pm.shape[0])
        return Centering.class_balanced(y_pm)

    def _fit_binary(self, base, index, y_pm, C, client, rng):
        n_total = base.shape[0] if isinstance(base, np.ndarray) else base.n
        whole = index.shape[0] == n_total and np.array_equal(index, np.arange(n_total))
        gram = base if whole else (base[np.ix_(index, index)] if isinstance(base, np.ndarray)
                                   else _SubsetGram(base, index))
        centering = self._centering_for(y_pm, rng)
        h = None
        if centering is not None:
            gram = CenteredGram(gram, centering)
            h = gram.h
        rows = self._row_provider(gram)
        max_iter = self._outer_iteration_cap(rows.n) if self.max_iter == -1 else self.max_iter
        kwargs = dict(tol=self.tol, working_set_size=self.working_set_size, max_iter=max_iter,
                      verbose=bool(self.verbose))
        if client is not None and centering is None and not self.normalize and hasattr(rows, "rows"):
            kwargs["client"] = client
        result = solve_qp(rows, y_pm, C, **kwargs)
        coef = result.alpha * y_pm
        b = float(result.intercept)
        db = delta_b(coef, h) if h is not None else 0.0
        intercept = b - db
        if self.normalize_bias_correction:
            # ‖w‖² = αᵀQα = 2 (objective + Σα) for the C-SVC dual (p = -1); translation-invariant.
            w_norm = float(np.sqrt(max(2.0 * (result.objective + result.alpha.sum()), 0.0)))
            if w_norm > 0:
                intercept = graf_intercept(intercept, w_norm)
        return {
            "coef": coef,
            "intercept": intercept,
            "uncorrected": b,
            "delta_b": db,
            "objective": result.objective,
            "n_iter": result.n_iter,
            "converged": result.converged,
        }

    def _outer_iteration_cap(self, n):
        """libsvm's cap of max(10⁷, 100 n) two-variable steps, in outer iterations of q variables."""
        q = self.working_set_size or min(n, 512)
        return max(1000, max(10**7, 100 * n) // max(q, 2))

    def _row_provider(self, gram):
        if isinstance(gram, np.ndarray):
            return DenseGram(gram)
        if isinstance(gram, KernelGram):
            cache = 2**30 if self.cache_size is None else int(self.cache_size * 2**20)
            return KernelGram(gram.X, gram.kernel, cache_bytes=cache)
        return gram

    def _store_fits(self, X, problems, fits, y_index):
        n_classes = self.classes_.shape[0]
        sv_mask = np.zeros(y_index.shape[0], dtype=bool)
        for (index, _), fit in zip(problems, fits):
            sv_mask[index[fit["coef"] != 0]] = True
        # Support vectors grouped by class, as libsvm.
        support = np.concatenate([np.flatnonzero(sv_mask & (y_index == k)) for k in range(n_classes)])
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.array([np.sum(sv_mask & (y_index == k)) for k in range(n_classes)], dtype=np.int32)
        position = np.full(y_index.shape[0], -1, dtype=np.intp)
        position[support] = np.arange(support.shape[0])
        self._pair_coef = np.zeros((len(fits), support.shape[0]))
        for row, ((index, _), fit) in enumerate(zip(problems, fits)):
            nz = fit["coef"] != 0
            self._pair_coef[row, position[index[nz]]] = fit["coef"][nz]
        self.dual_coef_ = self._libsvm_dual_coef(y_index, support) if self._is_ovo_multiclass else self._pair_coef
        self.intercept_ = np.array([fit["intercept"] for fit in fits])
        self.uncorrected_intercept_ = np.array([fit["uncorrected"] for fit in fits])
        self.delta_b_ = np.array([fit["delta_b"] for fit in fits])
        self.objective_ = np.array([fit["objective"] for fit in fits])
        self.n_iter_ = np.array([fit["n_iter"] for fit in fits], dtype=np.int64)
        self.fit_status_ = int(not all(fit["converged"] for fit in fits))
        if self._precomputed:
            self.support_vectors_ = np.empty((0, 0))
        else:
            sv = X[support]
            self.support_vectors_ = sv
        self.shape_fit_ = (y_index.shape[0], self.n_features_in_)

    @property
    def _is_ovo_multiclass(self):
        return self.classes_.shape[0] > 2 and self.multiclass == "ovo"

    def _libsvm_dual_coef(self, y_index, support):
        """One-vs-one coefficients in libsvm's layout ((n_classes-1) × n_SV)."""
        n_classes = self.classes_.shape[0]
        sv_class = y_index[support]
        dual = np.zeros((n_classes - 1, support.shape[0]))
        row = 0
        for i in range(n_classes):
            for j in range(i + 1, n_classes):
                coef = self._pair_coef[row]
                dual[j - 1, sv_class == i] = coef[sv_class == i]
                dual[i, sv_class == j] = coef[sv_class == j]
                row += 1
        return dual

    # ----------------------------------------------------------- prediction
    def _prediction_kernel(self):
        return NormalizedKernel(self._kernel) if self.normalize else self._kernel

    def _pairwise_decision(self, X):
        """Decision values of every binary problem, shape (n_test, n_problems), blockwise over test rows."""
        if self._precomputed and _is_gram_source(X):
            # A stored K(X_test, X_train): read by row blocks of at most PREDICT_BLOCK_BYTES.
            n_test, n_train = X.shape
            step = max(1, min(PREDICT_BLOCK_ROWS, PREDICT_BLOCK_BYTES // (8 * n_train)))
            out = np.empty((n_test, self._pair_coef.shape[0]))
            for start in range(0, n_test, step):
                stop = min(start + step, n_test)
                K = np.asarray(X.rows(np.arange(start, stop)), dtype=np.float64)[:, self.support_]
                check_finite(K, name="the precomputed test kernel", what="predicting")
                out[start:stop] = K @ self._pair_coef.T + self.intercept_
            return out
        if self._precomputed:
            K = np.asarray(X, dtype=np.float64)[:, self.support_]
            return K @ self._pair_coef.T + self.intercept_
        kernel = self._prediction_kernel()
        sv = self.support_vectors_
        out = np.empty((X.shape[0], self._pair_coef.shape[0]))
        for start in range(0, X.shape[0], PREDICT_BLOCK_ROWS):
            stop = min(start + PREDICT_BLOCK_ROWS, X.shape[0])
            K = kernel.block(X[start:stop], sv)
            out[start:stop] = np.asarray(K, dtype=np.float64) @ self._pair_coef.T + self.intercept_
        return out

    def _validate_predict_data(self, X):
        check_is_fitted(self)
        if self._precomputed and _is_gram_source(X):
            n_train = self.shape_fit_[0]
            if len(X.shape) != 2 or X.shape[1] != n_train:
                raise ValueError(
                    f"X should be a kernel matrix of shape (n_test, {n_train}) between test and training "
                    f"points; got a Gram matrix of shape {tuple(X.shape)}."
                )
            return X
        if self._precomputed:
            X = validate_data(self, _materialize(X), dtype=np.float64, reset=False, ensure_all_finite=False)
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

    def _lazy(self, X, fn, n_out):
        """Apply ``fn`` to each row block of a dask array, keeping it lazy."""
        X = X.rechunk({1: -1})
        if n_out is None:
            return X.map_blocks(fn, drop_axis=1, dtype=self.classes_.dtype)
        return X.map_blocks(fn, chunks=(X.chunks[0], (n_out,)), dtype=np.float64)

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
        if _is_dask(X):
            check_is_fitted(self)
            n_out = self._decision_width()
            fn = self.decision_function
            if n_out == 1:
                return self._lazy(X, lambda b: fn(b)[:, None], 1)[:, 0]
            return self._lazy(X, fn, n_out)
        X = self._validate_predict_data(X)
        dec = self._pairwise_decision(X)
        if self.classes_.shape[0] == 2:
            return dec[:, 0]
        if self._is_ovo_multiclass and self.decision_function_shape == "ovr":
            return _ovr_decision(dec, self.classes_.shape[0])
        return dec

    def _decision_width(self):
        k = self.classes_.shape[0]
        if k == 2:
            return 1
        if self._is_ovo_multiclass and self.decision_function_shape == "ovo":
            return k * (k - 1) // 2
        return k

    def predict(self, X):
        """Class labels of ``X`` (a dask array stays lazy; a precomputed ``GramMatrix`` is read by row blocks)."""
        if _is_dask(X):
            check_is_fitted(self)
            return self._lazy(X, self.predict, None)
        X = self._validate_predict_data(X)
        dec = self._pairwise_decision(X)
        k = self.classes_.shape[0]
        if k == 2:
            return self.classes_[(dec[:, 0] > 0).astype(np.intp)]
        if self.multiclass == "ovr":
            return self.classes_[np.argmax(dec, axis=1)]
        votes = np.zeros((dec.shape[0], k), dtype=np.int64)
        row = 0
        for i in range(k):
            for j in range(i + 1, k):
                votes[:, i] += dec[:, row] > 0
                votes[:, j] += dec[:, row] <= 0
                row += 1
        return self.classes_[np.argmax(votes, axis=1)]

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
        import zarr

        check_is_fitted(self)
        path = os.path.abspath(os.fspath(path))
        with _artifacts.writing(path, "model", overwrite) as tmp:
            group = zarr.open_group(tmp, mode="w")
            arrays = {
                "support": self.support_,
                "n_support": self.n_support_,
                "pair_coef": self._pair_coef,
                "intercept": self.intercept_,
                "uncorrected_intercept": self.uncorrected_intercept_,
                "delta_b": self.delta_b_,
                "objective": self.objective_,
                "n_iter": self.n_iter_,
            }
            sv = self.support_vectors_
            if sp.issparse(sv):
                sv = sp.csr_matrix(sv)
                arrays.update(sv_data=sv.data, sv_indices=sv.indices, sv_indptr=sv.indptr)
            else:
                arrays["support_vectors"] = np.asarray(sv)
            for name, value in arrays.items():
                value = np.asarray(value)
                group.create_array(name, data=value if value.size else value.reshape(value.shape), overwrite=True)
            classes = self.classes_
            group.attrs.update({
                "format": MODEL_FORMAT,
                "version": MODEL_VERSION,
                "params": _json_params(self.get_params(deep=False)),
                "kernel": None if self._kernel is None else self._kernel.to_dict(),
                "classes": classes.tolist(),
                "classes_dtype": classes.dtype.str,
                "n_features_in": int(self.n_features_in_),
                "shape_fit": list(self.shape_fit_),
                "sparse_support_vectors": bool(sp.issparse(self.support_vectors_)),
                "sv_shape": list(self.support_vectors_.shape),
                "centering": _centering_description(self.centering),
                "fit_status": int(self.fit_status_),
            })
        return path

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`."""
        return load_model(path)


def load_model(path):
    """Read an :class:`SVC` written by :meth:`SVC.save`."""
    import zarr

    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"no model at {path}.")
    group = zarr.open_group(path, mode="r")
    attrs = dict(group.attrs)
    if attrs.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path} is not a dkernel SVC model (format {attrs.get('format')!r}).")
    params = attrs["params"]
    if isinstance(params.get("kernel"), dict):
        params["kernel"] = kernel_from_dict(params["kernel"])
    if isinstance(params.get("centering"), dict):
        params["centering"] = Centering.from_dict(params["centering"])
    model = SVC(**params)
    model._kernel = None if attrs["kernel"] is None else kernel_from_dict(attrs["kernel"])
    model.classes_ = np.asarray(attrs["classes"], dtype=np.dtype(attrs["classes_dtype"]))
    model.n_features_in_ = attrs["n_features_in"]
    model.shape_fit_ = tuple(attrs["shape_fit"])
    read = lambda name: np.asarray(group[name][...])  # noqa: E731
    model.support_ = read("support")
    model.n_support_ = read("n_support")
    model._pair_coef = read("pair_coef")
    model.intercept_ = read("intercept")
    model.uncorrected_intercept_ = read("uncorrected_intercept")
    model.delta_b_ = read("delta_b")
    model.objective_ = read("objective")
    model.n_iter_ = read("n_iter")
    if attrs["sparse_support_vectors"]:
        model.support_vectors_ = sp.csr_matrix(
            (read("sv_data"), read("sv_indices"), read("sv_indptr")), shape=tuple(attrs["sv_shape"])
        )
    else:
        model.support_vectors_ = read("support_vectors").reshape(attrs["sv_shape"])
    if model._is_ovo_multiclass:
        y_sv = np.repeat(np.arange(model.classes_.shape[0]), model.n_support_)
        y_index = np.full(model.shape_fit_[0], -1)
        y_index[model.support_] = y_sv
        model.dual_coef_ = model._libsvm_dual_coef(y_index, model.support_)
    else:
        model.dual_coef_ = model._pair_coef
    # Models written before the status was saved carry no record of it: 0, as they were reported.
    model.fit_status_ = int(attrs.get("fit_status", 0))
    return model


# ------------------------------------------------------------------ helpers
def _kernel_fn(kernel):
    def evaluate(A, B):
        return kernel.block(A, B)

    return evaluate


def _is_dask(X):
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is a dependency
        return False
    return isinstance(X, da.Array)


def _is_gram_source(X):
    """A Gram matrix read by rows (:class:`~dkernel.gram.GramMatrix` or an operator view), not an array."""
    return hasattr(X, "rows") and hasattr(X, "shape") and not isinstance(X, np.ndarray) and not sp.issparse(X)


def _materialize(X):
    """Compute a dask array (training data must fit in memory; its Gram need not)."""
    if _is_dask(X):
        return X.compute()
    return X


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


def _ovr_decision(dec, n_classes):
    """One-vs-rest shaped decision values from one-vs-one values (scikit-learn's transform)."""
    votes = np.zeros((dec.shape[0], n_classes))
    confidence = np.zeros((dec.shape[0], n_classes))
    k = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            confidence[:, i] += dec[:, k]
            confidence[:, j] -= dec[:, k]
            votes[dec[:, k] > 0, i] += 1
            votes[dec[:, k] <= 0, j] += 1
            k += 1
    return votes + confidence / (3 * (np.abs(confidence) + 1))


def _centering_description(centering):
    if isinstance(centering, Centering):
        return centering.to_dict()
    return centering


def _json_params(params):
    out = {}
    for key, value in params.items():
        if key == "client":
            continue
        if isinstance(value, Kernel):
            value = value.to_dict()
        elif isinstance(value, Centering):
            value = value.to_dict()
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif isinstance(value, np.random.RandomState):
            value = None
        try:
            json.dumps(value)
        except TypeError:
            warnings.warn(f"parameter {key}={value!r} cannot be saved as JSON; it is stored as None.",
                          UserWarning, stacklevel=3)
            value = None
        out[key] = value
    return out
