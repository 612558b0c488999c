"""ε-support vector regression, :class:`SVR`: libsvm's 2n-variable dual on dkernel's solver.

.. math::

    \\min_{\\alpha, \\alpha^*} \\tfrac12 (\\alpha - \\alpha^*)^\\top K (\\alpha - \\alpha^*)
    + \\sum_i (\\varepsilon - y_i) \\alpha_i + \\sum_i (\\varepsilon + y_i) \\alpha^*_i
    \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i, \\alpha^*_i \\le C_i,\\;
    \\sum_i \\alpha_i - \\sum_i \\alpha^*_i = 0,

that is the solver's problem on the 2n variables ``(α, α*)`` with labels ``z = (+1, …, −1, …)``,
``p = (ε − y, ε + y)`` and ``Q = z zᵀ ∘ [[K, K], [K, K]]``. :class:`EpsilonSVRGram` gives the solver the rows of
that 2n × 2n matrix as a view of the n × n Gram (no 2n × 2n matrix is made), and the regression function is
``f(x) = Σ_i (α_i − α*_i) K(x, x_i) + b`` with ``b`` from the final gradient (libsvm's ``−ρ``).
"""

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import column_or_1d

from ..gram._sources import DerivedGram
from ._base import EXPECTED_FAILED_CHECKS, BaseKernelSVM
from ..kernels._parameters import ESTIMATOR_DEFAULTS
from ._single import ORIGIN_CONSTRAINTS, SingleProblemSVM

__all__ = ["SVR", "EpsilonSVRGram"]


class EpsilonSVRGram(DerivedGram):
    """The rows of ``[[K, K], [K, K]]`` (2n × 2n) read from a row provider of ``K`` (n × n): the solver's view of
    the ε-SVR dual.

    Variable ``i`` and variable ``i + n`` are the same training point (``α_i`` and ``α*_i``), so row ``i`` of the
    view is row ``i mod n`` of ``K`` written twice; each base row asked for is read once. Where the base's rows lie
    in a matrix in memory (``row_source``), so do the view's: the solver reads them there in place and shrinks.
    """

    #: Two variables read each row of ``K``: the solver's default working set, which counts rows, holds twice
    #: as many variables (:func:`dkernel.solver._qp.prepare_problem`).
    variables_per_row = 2

    def __init__(self, base):
        self.base = base
        self.n_base = int(base.n)

    @property
    def n(self):
        return 2 * self.n_base

    @property
    def dtype(self):
        return np.dtype(getattr(self.base, "dtype", np.float64))

    @property
    def threads(self):
        """The base's threads: the view serves the one problem its base serves."""
        return getattr(self.base, "threads", 1)

    def _base_rows(self, idx):
        return np.asarray(idx, dtype=np.intp) % self.n_base

    def rows(self, idx):
        base_rows, inverse = np.unique(self._base_rows(idx), return_inverse=True)
        K = np.asarray(self.base.rows(base_rows))
        return np.concatenate([K, K], axis=1)[inverse]

    def diag(self):
        d = np.asarray(self.base.diag())
        return np.concatenate([d, d])

    def submatrix(self, idx, start, stop):
        """``[[K, K], [K, K]][idx, start:stop]``, reading the base's columns that span them."""
        columns = np.arange(start, stop) % self.n_base
        if columns.size == 0:
            return np.empty((len(idx), 0))
        lo, hi = int(columns.min()), int(columns.max()) + 1
        base_rows = self._base_rows(idx)
        if hasattr(self.base, "submatrix"):
            K = self.base.submatrix(base_rows, lo, hi)
        else:
            K = np.asarray(self.base.rows(base_rows))[:, lo:hi]
        return np.asarray(K)[:, columns - lo]

    def row_source(self, idx):
        """Where the rows ``idx`` lie: the base's matrix, positions of ``idx mod n``, and its columns twice."""
        source = getattr(self.base, "row_source", None)
        found = None if source is None else source(self._base_rows(idx))
        if found is None:
            return None
        matrix, positions, columns = found
        columns = np.arange(self.n_base) if columns is None else np.asarray(columns)
        return matrix, positions, np.concatenate([columns, columns])

    def __repr__(self):
        return f"EpsilonSVRGram(n={self.n}, base={self.base!r})"


class SVR(RegressorMixin, SingleProblemSVM):
    """Epsilon-Support Vector Regression on Dask: a drop-in for :class:`sklearn.svm.SVR`.

    libsvm's ε-SVR dual (2n variables ``α, α*``, :class:`EpsilonSVRGram`) solved by dkernel's block-coordinate
    solver on a Gram matrix computed in memory, kept in a zarr store, or evaluated row by row, in this process or
    on a Dask cluster. With ``centering`` the solver works on the Gram of the data translated to Meilă's origin
    (eq. 14); since ``Σ (α_i − α*_i) = 0`` the regression function is the same and only its intercept moves, by
    Δb (eq. 19): prediction uses the original kernel.

    Parameters
    ----------
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"}, Kernel or callable, default="rbf"
        As :class:`~dkernel.SVC`: with ``"precomputed"``, ``X`` in ``fit`` is the Gram matrix (an ndarray or a
        :class:`~dkernel.gram.GramMatrix`) and in ``predict`` the kernel between test and training points.
    degree : int, default=3
    gamma : {"scale", "auto"} or float, default="scale"
    coef0 : float, default=0.0
    tol : float, default=1e-3
        Stop when libsvm's maximal violating pair gap is at most ``tol``.
    C : float, default=1.0
        Regularization parameter, in (0, inf].
    epsilon : float, default=0.1
        Width of the tube within which errors cost nothing.
    shrinking : bool, default=True
    cache_size : float, default=None
        Memory (MB) for the Gram matrix, as :class:`~dkernel.SVC`'s.
    verbose : bool, default=False
    max_iter : int, default=-1
        Outer iterations of the solver; -1 for libsvm's limit.
    centering : None, "standard" or Centering, default=None
        Origin of the feature space for training: the centre of gravity of the training points (γ = 1/n), or
        explicit weights over the samples of positive weight.
    centering_sample : int, default=None
        Represent the centre of gravity by this many sampled training points (Meilă §5).
    store : str or path-like, default=None
        Where the training Gram is kept on disk, as :class:`~dkernel.SVC`'s.
    storage_options : dict, default=None
        For a URL ``store``, as :class:`~dkernel.SVC`'s; never saved.
    working_set_size : int, default=None
    client : distributed.Client, str or False, default=None
        As :class:`~dkernel.SVC`'s: the Gram and the solver's gradient on this cluster.
    random_state : int, RandomState or None, default=None
        Sampling of ``centering_sample``.
    checkpoint : str, path-like or dkernel.solver.Checkpoint, default=None
        A folder where the solver writes its state and resumes from.

    Attributes
    ----------
    support_ : ndarray of shape (n_SV,), dtype int32
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty with ``kernel="precomputed"``.
    n_support_ : ndarray of shape (1,), dtype int32
    dual_coef_ : ndarray or sparse matrix of shape (1, n_SV)
        ``α_i − α*_i`` (sparse after a fit on sparse ``X``).
    coef_ : ndarray of shape (1, n_features)
        ``kernel="linear"`` only.
    intercept_ : ndarray of shape (1,)
        ``b`` of the regression function in the original kernel (Δb included).
    delta_b_ : float
        Meilă's Δb (0 without centering).
    uncorrected_intercept_ : float
        The intercept found on the (centered) Gram.
    objective_ : float
        The dual objective.
    n_iter_ : int
    fit_status_ : int
        0 when the solver converged to ``tol``, 1 when it stopped at ``max_iter``.
    shape_fit_ : tuple
    n_features_in_ : int
    gram_dtype_ : str
        How the training Gram was held (as :class:`~dkernel.SVC`'s).

    References
    ----------
    .. [1] C.-C. Chang and C.-J. Lin, "LIBSVM: a library for support vector machines", ACM TIST 2, 2011, §2.3.
    .. [2] M. Meilă, "Data centering in feature space", AISTATS 2003, eqs. 14–19.
    """

    _parameter_constraints: dict = {
        **BaseKernelSVM._parameter_constraints,
        "epsilon": [Interval(Real, 0.0, None, closed="left")],
        **ORIGIN_CONSTRAINTS,
        "random_state": ["random_state"],
        "checkpoint": "no_validation",
    }
    _expected_failed_checks = EXPECTED_FAILED_CHECKS

    def __init__(
        self,
        *,
        kernel="rbf",
        degree=ESTIMATOR_DEFAULTS["degree"],
        gamma=ESTIMATOR_DEFAULTS["gamma"],
        coef0=ESTIMATOR_DEFAULTS["coef0"],
        tol=1e-3,
        C=1.0,
        epsilon=0.1,
        shrinking=True,
        cache_size=None,
        verbose=False,
        max_iter=-1,
        centering=None,
        centering_sample=None,
        store=None,
        storage_options=None,
        working_set_size=None,
        client=None,
        random_state=None,
        checkpoint=None,
    ):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.centering = centering
        self.centering_sample = centering_sample
        self.store = store
        self.storage_options = storage_options
        self.working_set_size = working_set_size
        self.client = client
        self.random_state = random_state
        self.checkpoint = checkpoint

    @property
    def _upper_bound(self):
        return self.C

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the regression on ``X`` (or a precomputed Gram matrix) and targets ``y``.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            Or, with ``kernel="precomputed"``, the Gram matrix (ndarray or :class:`~dkernel.gram.GramMatrix`).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multipliers of ``C``; a sample of weight zero or less is left out, as in libsvm.

        Returns
        -------
        self
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        return self._fit(X, y, sample_weight)

    @staticmethod
    def _targets(y):
        """The regression targets as float64 (scikit-learn's ``column_or_1d``), finite."""
        y = column_or_1d(y, warn=True).astype(np.float64, copy=False)
        if not np.isfinite(y).all():
            bad = np.flatnonzero(~np.isfinite(y))
            raise ValueError(f"y has {bad.size} NaN or infinite values (first at position {bad[0]}); drop those "
                             f"samples.")
        return y

    def _problem(self, y, C):
        """libsvm's ε-SVR on the 2n variables ``(α, α*)`` (Chang & Lin §2.3)."""
        n = y.shape[0]
        eps = float(self.epsilon)

        def expansion(result):
            return result.alpha[:n] - result.alpha[n:], float(result.intercept)

        return {"rows": EpsilonSVRGram, "y": np.concatenate([np.ones(n), -np.ones(n)]), "C": np.concatenate([C, C]),
                "p": np.concatenate([eps - y, eps + y]), "e": 0.0, "alpha0": None, "expansion": expansion}

    def predict(self, X):
        """The regression function ``Σ_i (α_i − α*_i) K(x, x_i) + b`` through the original kernel.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            With ``kernel="precomputed"``, the kernel ``K(X_test, X_train)`` (an ndarray or a
            :class:`~dkernel.gram.GramMatrix`, read by row blocks). A dask array stays lazy.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision(X)
