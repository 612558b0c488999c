"""The scikit-learn estimator :class:`SVC`: its parameters, fit orchestration and prediction.

:class:`SVC` composes the pieces of dkernel in the order the data flow:
X → kernel → Gram (in memory, in a zarr store, or rows on the fly) → lazy
operator views (normalization, Graf & Borer eq. 2; centering, Meilă eq. 14)
→ block-coordinate solver → corrected intercepts → prediction through the
original kernel (Meilă eq. 16, Graf & Borer eq. 3). The training Gram and
the binary problems are in :mod:`._training`, the multiclass schemes in
:mod:`._multiclass`, prediction in :mod:`._predict`; the parameters shared
with the other SVM estimators, and the model files, in :mod:`._base`.
"""

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.exceptions import NotFittedError
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._runtime.threads import BlasThreads
from .._runtime.client import client_for, is_dask_array
from ..centering._origins import Centering
from ..gram._sources import row_provider
from ..kernels._kernels import NormalizedKernel
from ._base import EXPECTED_FAILED_CHECKS, BaseSVM, linear_weights
from ..kernels._parameters import ESTIMATOR_DEFAULTS, resolve_kernel
from . import _multiclass, _probability
from ._inputs import callable_test_gram, check_labels, class_weights, kept_samples, seed_from
from ._inputs import check_params_consistency, single_class_message, sklearn_sparse, validate_fit_data, validate_predict_data
from ._inputs import upper_bounds as _upper_bounds  # noqa: F401 (its former home)
from ._probability import PlattProbabilityMixin
from ._predict import map_row_blocks, pairwise_decision
from ._training import (
    centered_whole,
    centering_for,
    estimator_gram,
    fit_binary,
    problem_checkpoints,
    whole_data_origin,
)

__all__ = ["SVC"]


class SVC(PlattProbabilityMixin, BaseSVM):
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
        Regularization parameter, in (0, inf]; ``np.inf`` is the hard margin.
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"}, Kernel or callable, default="rbf"
        With ``"precomputed"``, ``X`` in ``fit`` is a square Gram matrix (an
        ndarray or a :class:`~dkernel.gram.GramMatrix`) and ``X`` in
        ``predict`` is the kernel between test and training points. A
        function ``kernel(A, B)`` returning the Gram matrix between two sets
        of samples (any objects it understands) is evaluated on the training
        set in ``fit`` and between test points and support vectors in
        ``predict``, as scikit-learn's.
    degree : int, default=3
    gamma : {"scale", "auto"} or float, default="scale"
        ``"scale"``: ``1 / (n_features * X.var())``; ``"auto"``: ``1 / n_features``.
    coef0 : float, default=0.0
    shrinking : bool, default=True
        libsvm's shrinking: variables stuck at a bound leave the working
        sets and, in this process, the gradient updates until the final check.
    probability : bool, default=False
        Fit libsvm's probability model for :meth:`predict_proba`: Platt
        sigmoids on the decision values of an internal 5-fold
        cross-validation (``random_state`` draws the folds), joined by
        pairwise coupling (:mod:`._probability`). Five more fits per binary
        problem. ``CalibratedClassifierCV(SVC(), ensemble=False)`` is the
        route scikit-learn ≥ 1.9 recommends; it works with this class too.
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
    break_ties : bool, default=False
        With ``decision_function_shape="ovr"`` and more than two classes,
        :meth:`predict` returns the argmax of :meth:`decision_function`
        instead of the first class among those with the most votes.
    multiclass : {"ovo", "ovr"}, default="ovo"
        One-vs-one (libsvm's scheme) or one-vs-rest with winner-take-all (as
        in Graf & Borer's COIL experiment).
    centering : None, "standard", "class-balanced", "multiclass" or Centering, default=None
        Origin of the feature space for training: the centre of gravity
        (γ = 1/n), Meilă's class-balanced origin (eq. 13) of each binary
        problem, the mean of all the class centres of the training set
        (``"multiclass"``: one origin shared by every binary problem, each
        trained on its principal submatrix of the centered Gram), or explicit
        weights (binary problems only).
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
        ``cross_val_score`` or ``GridSearchCV`` gets a store of its own. The
        store holds the values in the precision the solver reads in memory
        (float32 above 16 MiB of float64, as libsvm's kernel cache; float64
        when centered), so a fit from it gives the model of a fit without it.
        A path that is itself a Gram store (``dkernel gram --out``,
        :meth:`GramMatrix.compute`) is used directly when it holds the Gram of
        this data and kernel, in its own blocks and precision, and refused
        otherwise. The path used is
        ``store_path_``. An fsspec URL (``"s3://bucket/gram"``) is used the
        same way, as a prefix of stores or a store itself, written without
        rename (:mod:`dkernel.gram._remote`).
    storage_options : dict, default=None
        For a URL ``store``: the filesystem's options (s3fs: ``endpoint_url``,
        ``key``, ``secret``...). They reach the workers inside the tasks and
        are never saved with the model nor written into the store.
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
        Sampling of ``centering_sample`` and the folds of ``probability``.
    checkpoint : str, path-like or dkernel.solver.Checkpoint, default=None
        A folder where the solver writes its state every 30 s (or as a
        :class:`~dkernel.solver.Checkpoint` says), one subfolder per binary
        problem. When it holds the checkpoints of this fit (same data,
        kernel, views, ``C``, weights, ``tol``, ``working_set_size``), ``fit``
        resumes from them: solved problems are skipped, the others continue
        on the path of an uninterrupted fit. Writing a checkpoint only reads
        the solver's state: a fit that writes checkpoints (whenever they
        fall) gives the same ``dual_coef_``, ``intercept_`` and ``n_iter_``,
        to the bit, as one that writes none. A checkpoint holds all the next
        iterations depend on (``alpha``, the gradient as held, the shrunk
        active set, the working-set rows held, libsvm's ``G_bar``), so a fit
        resumed without a ``client`` continues on that same path, to the bit.
        Where a piece is not in the checkpoint it is computed again from
        ``alpha`` and the result agrees within ``tol`` only: a checkpoint
        written by dkernel before version 3 of the format (no shrinking
        state), and a resume with a ``client`` of a checkpoint written
        shrunk (the workers' gradient is summed again from ``alpha``). A
        checkpoint of another fit raises ``ValueError`` and is left as it
        is; the folder stays after the fit.
    verbose : bool, default=False
        Show the solver's progress (gap and free support vectors per outer
        iteration).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        Multipliers of ``C`` per class, from ``class_weight``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.
    support_ : ndarray of shape (n_SV,)
        Training indices of the support vectors, grouped by class.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty with ``kernel="precomputed"``.
    n_support_ : ndarray of shape (n_classes,), dtype int32
    dual_coef_ : ndarray or sparse matrix
        ``α_i y_i``. One-vs-one: libsvm's layout, shape
        ``(n_classes - 1, n_SV)``; one-vs-rest: ``(n_classes, n_SV)``.
        Sparse after a fit on sparse ``X``, as scikit-learn's.
    coef_ : ndarray or sparse matrix of shape (n_problems, n_features)
        ``w`` of each binary problem (read-only), for ``kernel="linear"``
        only (centering included: prediction uses the original kernel).
    probA_, probB_ : ndarray of shape (n_problems,)
        With ``probability=True``, the sigmoid ``1 / (1 + exp(A f + B))``
        of each problem's libsvm-oriented decision value ``f`` (positive for
        the first class of a pair); empty otherwise.
    intercept_ : ndarray
        Intercepts for prediction with the original kernel, corrections
        included: one per binary problem.
    delta_b_ : ndarray
        Meilă's Δb per binary problem (zeros without centering).
    uncorrected_intercept_ : ndarray
        Intercepts as found by the solver on the (centered/normalized) Gram.
    objective_ : ndarray
        Dual objective per binary problem.
    n_iter_ : ndarray of dtype int32
        Solver outer iterations per binary problem.
    gram_dtype_ : str
        How the training Gram was held: ``"float64"`` or ``"float32"`` (whole, in memory), ``"on-demand"``
        (one binary problem: rows as needed; past n/2 of them, the rest of the Gram where the rows asked for lately
        show most rows still to come), ``"on-the-fly"`` (rows
        computed as needed), ``"store"`` (zarr) or ``"precomputed"``.
    store_path_ : str
        The Gram store used for training (only with ``store``).
    fit_status_ : int
        0 when every binary problem converged to ``tol``, 1 when one stopped
        at ``max_iter``.
    shape_fit_ : tuple
        Shape of the training ``X`` (``(n_samples,)`` for a list given to a
        kernel function).

    References
    ----------
    .. [1] M. Meilă, "Data centering in feature space", AISTATS 2003, eqs. 13–19.
    .. [2] A. B. A. Graf and S. Borer, "Normalization in support vector
       machines", DAGM 2001, eqs. 2–3.
    .. [3] R.-E. Fan, P.-H. Chen and C.-J. Lin, "Working set selection using
       second order information for training SVM", JMLR 6, 2005.
    .. [4] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's
       probabilistic outputs for support vector machines", 2007;
       T.-F. Wu, C.-J. Lin and R. C. Weng, "Probability estimates for
       multi-class classification by pairwise coupling", JMLR 5, 2004.

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
        **BaseSVM._parameter_constraints,
        "probability": ["boolean", Hidden(StrOptions({"deprecated"}))],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
        "break_ties": ["boolean"],
        "multiclass": [StrOptions({"ovo", "ovr"})],
        "centering": [StrOptions({"standard", "class-balanced", "multiclass"}), Centering, None],
        "centering_sample": [Interval(Integral, 2, None, closed="left"), None],
        "normalize": ["boolean"],
        "normalize_bias_correction": ["boolean"],
        "random_state": ["random_state"],
        "checkpoint": "no_validation",  # a path or a dkernel.solver.Checkpoint, checked when fitting
    }
    _expected_failed_checks = EXPECTED_FAILED_CHECKS

    def __init__(
        self,
        C=1.0,
        kernel="rbf",
        degree=ESTIMATOR_DEFAULTS["degree"],
        gamma=ESTIMATOR_DEFAULTS["gamma"],
        coef0=ESTIMATOR_DEFAULTS["coef0"],
        shrinking=True,
        probability=False,
        tol=1e-3,
        class_weight=None,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        multiclass="ovo",
        centering=None,
        centering_sample=None,
        normalize=False,
        normalize_bias_correction=False,
        store=None,
        storage_options=None,
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
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.multiclass = multiclass
        self.centering = centering
        self.centering_sample = centering_sample
        self.normalize = normalize
        self.normalize_bias_correction = normalize_bias_correction
        self.store = store
        self.storage_options = storage_options
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

    # -------------------------------------------------------------- fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the SVM on training data ``X`` (or a precomputed Gram matrix) and labels ``y``.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            Or, with ``kernel="precomputed"``, a Gram matrix (ndarray or
            :class:`~dkernel.gram.GramMatrix`) of shape (n_samples, n_samples);
            with a kernel function, anything it takes.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multipliers of ``C``; a sample of weight zero or less
            is left out, as in libsvm.

        Returns
        -------
        self
        """
        check_params_consistency(self)
        X_given = X
        X, y = validate_fit_data(self, X, y)
        if self._callable_kernel:  # as scikit-learn's: (n_samples,) for what a kernel function takes without a shape
            shape_fit = tuple(X_given.shape) if hasattr(X_given, "shape") else (X.shape[0],)
        else:
            shape_fit = tuple(X.shape)
        y = check_labels(y)
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(single_class_message(classes[0]))
        if isinstance(self.centering, Centering) and classes.shape[0] > 2:
            raise ValueError(
                "an explicit Centering object is defined for one binary problem; use centering='class-balanced' "
                "or 'standard' for multiclass data."
            )
        self.classes_ = classes
        self.class_weight_ = class_weights(self.class_weight, classes, y)
        C_i = _upper_bounds(self.C, self.class_weight, classes, y_index, sample_weight)
        keep = kept_samples(C_i, y_index, classes)  # a sample of weight <= 0 is removed, as in libsvm
        kernel = None if self._callable_kernel else resolve_kernel(
            self.kernel, X, gamma=self.gamma, coef0=self.coef0, degree=self.degree)
        self._kernel = kernel
        self._sparse = bool(sp.issparse(X)) and not self._gram_given
        problems = _multiclass.binary_problems(y_index, classes.shape[0], keep, self.multiclass)
        checkpoints = problem_checkpoints(self.checkpoint, len(problems), self.storage_options)
        rng = np.random.default_rng(seed_from(self.random_state))
        blas = BlasThreads()  # this fit's BLAS libraries, found once when first limited
        with client_for(self.client) as client:
            base = self._training_gram(X, kernel, client, blas,
                                       on_demand=len(problems) == 1 and self.centering is None)
            if self.normalize:
                from ..views._normalized import NormalizedGram  # imported when used: the operators bring in the zarr store

                base = NormalizedGram(base)
            whole = whole_data_origin(self.centering, self.centering_sample, y_index, keep, rng)
            if whole is not None:
                base = centered_whole(base, whole)
            fits = self._fit_problems(base, problems, C_i, client, blas, rng, checkpoints, whole, classes[y_index])
            self._probA, self._probB = (self._platt_parameters(base, problems, C_i, client, blas, rng, whole)
                                        if self._wants_probability else (np.empty(0), np.empty(0)))
        self._store_fits(X, problems, fits, y_index)
        self.shape_fit_ = shape_fit
        if self._callable_kernel:
            # Prediction evaluates the kernel function against the support vectors only.
            self._support_data = _safe_indexing(X_given, self.support_)
        return self

    def _training_gram(self, X, kernel, client, blas, on_demand=False):
        """The Gram source of the training data, before views; records how it is held in ``gram_dtype_``."""
        return estimator_gram(self, X, kernel, client, blas, on_demand=on_demand and not self.normalize)

    def _fit_problems(self, base, problems, C_i, client, blas, rng, checkpoints, whole=None, labels=None):
        """Every binary problem, in threads over the shared Gram in this process; origins drawn first, in order
        (``whole``: the one origin of the whole training set that every problem shares, else one per problem;
        ``labels``: the class of each training sample, which names a problem an origin does not fit)."""
        origins = [whole or centering_for(self.centering, self.centering_sample, y_pm, rng,
                                          labels=None if labels is None else labels[index])
                   for index, y_pm in problems]

        def solve(k):
            index, y_pm = problems[k]
            return self._fit_binary(base, index, y_pm, C_i[index], client, blas, rng, origin=origins[k],
                                    checkpoint=checkpoints[k])

        return _multiclass.solve_problems(solve, problems, parallel=client is None and not self.verbose, blas=blas)

    def _fit_binary(self, base, index, y_pm, C, client, blas, rng, origin=None, checkpoint=None):
        """One binary problem on the samples ``index``, with this estimator's views, solver settings and corrections.

        ``origin``: the problem's centering, else drawn here (:func:`centering_for`).
        """
        if origin is None:
            origin = centering_for(self.centering, self.centering_sample, y_pm, rng)
        return fit_binary(
            base, index, y_pm, C, centering=origin,
            normalized=self.normalize, bias_correction=self.normalize_bias_correction, tol=self.tol,
            working_set_size=self.working_set_size, max_iter=self.max_iter,
            client=client, verbose=self.verbose, shrinking=self.shrinking, checkpoint=checkpoint, blas=blas,
        )

    def _platt_parameters(self, base, problems, C_i, client, blas, rng, whole=None):
        """libsvm's probability model: a sigmoid per problem on 5-fold cross-validated decision values.

        A fold's own origin is drawn as the problem's was, from at most the fold's points: a
        ``centering_sample`` that fits the problem may be larger than a fold of it.
        """
        def fit_on(index, y_pm, C):
            sample = self.centering_sample
            origin = whole or centering_for(self.centering, None if sample is None else min(sample, y_pm.shape[0]),
                                            y_pm, rng)
            return self._fit_binary(base, index, y_pm, C, client, blas, rng, origin=origin)

        return _probability.platt_parameters(problems, C_i, fit_on, row_provider(base).rows, rng,
                                             binary=self.classes_.shape[0] == 2)

    def _store_fits(self, X, problems, fits, y_index):
        n_classes = self.classes_.shape[0]
        support, self._n_support, self._pair_coef = _multiclass.support_and_coefficients(
            problems, [fit["coef"] for fit in fits], y_index, n_classes)
        self.support_ = support
        self._set_dual_coef()
        self.intercept_ = np.array([fit["intercept"] for fit in fits])
        self.uncorrected_intercept_ = np.array([fit["uncorrected"] for fit in fits])
        self.delta_b_ = np.array([fit["delta_b"] for fit in fits])
        self.objective_ = np.array([fit["objective"] for fit in fits])
        self.n_iter_ = np.array([fit["n_iter"] for fit in fits], dtype=np.int32)
        self.fit_status_ = int(not all(fit["converged"] for fit in fits))
        self.support_vectors_ = np.empty((0, 0)) if self._gram_given else X[support]

    def _set_dual_coef(self):
        """``dual_coef_``: libsvm's layout for one-vs-one, sparse after a sparse fit (as scikit-learn's)."""
        dual = _multiclass.dual_coef(self._pair_coef, self._n_support, self._is_ovo_multiclass)
        self.dual_coef_ = sklearn_sparse(sp.csr_matrix(dual)) if self._sparse else dual

    @property
    def _is_ovo_multiclass(self):
        return self.classes_.shape[0] > 2 and self.multiclass == "ovo"

    # ------------------------------------------------------ fitted views
    @property
    def n_support_(self):
        """Number of support vectors of each class (int32)."""
        try:
            check_is_fitted(self)
        except NotFittedError as error:
            raise AttributeError("n_support_ is defined once the SVC is fitted.") from error
        return self._n_support

    @property
    def coef_(self):
        """Weights ``w`` of each binary problem in the input space (read-only); ``kernel="linear"`` only."""
        kernel = None if self.normalize else self.kernel  # the normalized kernel is not linear
        return linear_weights(kernel, self._pair_coef, self.support_vectors_)

    # ----------------------------------------------------------- prediction
    def _pairwise_decision(self, X):
        """Decision values of every binary problem, shape (n_test, n_problems)."""
        if self._callable_kernel:
            n_sv = self.support_.shape[0]
            K = callable_test_gram(self.kernel, X, self._support_data, n_sv)
            return pairwise_decision(K, None, None, np.arange(n_sv), self._pair_coef, self.intercept_)
        kernel = None if self._precomputed else NormalizedKernel(self._kernel) if self.normalize else self._kernel
        return pairwise_decision(X, kernel, self.support_vectors_, self.support_, self._pair_coef, self.intercept_)

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
        if is_dask_array(X):
            check_is_fitted(self)
            n_out = _multiclass.decision_width(self.classes_.shape[0], self._is_ovo_multiclass, self.decision_function_shape)
            fn = self.decision_function
            if n_out == 1:
                return map_row_blocks(X, lambda b: fn(b)[:, None], 1, self.classes_.dtype)[:, 0]
            return map_row_blocks(X, fn, n_out, self.classes_.dtype)
        X = validate_predict_data(self, X)
        dec = self._pairwise_decision(X)
        return _multiclass.decision_values(dec, self.classes_.shape[0], self._is_ovo_multiclass,
                                           self.decision_function_shape)

    def predict(self, X):
        """Class labels of ``X`` (a dask array stays lazy; a precomputed ``GramMatrix`` is read by row blocks).

        Votes of the one-vs-one problems, the first class winning a tie;
        with ``break_ties=True`` (and ``decision_function_shape="ovr"``),
        the argmax of :meth:`decision_function`.
        """
        check_is_fitted(self)
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        if is_dask_array(X):
            return map_row_blocks(X, self.predict, None, self.classes_.dtype)
        X = validate_predict_data(self, X)
        dec = self._pairwise_decision(X)
        n_classes = self.classes_.shape[0]
        if self.break_ties and self._is_ovo_multiclass:
            return self.classes_[np.argmax(_multiclass.ovr_decision(dec, n_classes), axis=1)]
        return self.classes_[_multiclass.predicted_class(dec, n_classes, self.multiclass)]
