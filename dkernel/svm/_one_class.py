"""The one-class SVM, :class:`OneClassSVM`: Schölkopf et al.'s support estimation in libsvm's formulation.

.. math::

    \\min_\\alpha \\tfrac12 \\alpha^\\top K \\alpha
    \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le w_i,\\; \\sum_i \\alpha_i = \\nu \\sum_i w_i,

the solver's problem with labels all +1, ``p = 0`` and ``e = ν Σ w_i`` (``w``: the sample weights, 1 without),
started where libsvm starts (the first variables at their bound until the sum is reached). The decision function
is ``f(x) = Σ_i α_i K(x, x_i) − ρ``, ``ρ`` from the final gradient; scikit-learn's ``offset_`` is ``ρ`` and
``score_samples`` is ``Σ_i α_i K(x, x_i)``.

The one-class SVM separates the data from the origin of the feature space, so, unlike the classifier's, its
solution depends on where the origin is: with ``centering`` it is trained on the Gram of the data translated to
Meilă's origin ``a = Σ γ_j φ(x_j)`` (eq. 14), and since ``Σ α_i = ν n ≠ 0`` the translation does not reduce to an
intercept: ``Σ_i α_i K_a(x, x_i) − ρ = Σ_i (α_i − ν n γ_i) K(x, x_i) − ρ − αᵀh + ν n h0`` (Meilă eqs. 11, 16–18):
the origin's points join the expansion in the original kernel. Where ``α = ν n γ`` is itself feasible (the
centre of gravity, γ = 1/n, always is; a sample of at least ``ν n`` points too) the optimum is ``w = 0``: the data
are not separated from an origin among them, and :meth:`OneClassSVM.fit` warns.
"""

import warnings
from numbers import Real

import numpy as np
from sklearn.base import OutlierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _num_samples

from ._base import EXPECTED_FAILED_CHECKS, BaseKernelSVM
from ..kernels._parameters import ESTIMATOR_DEFAULTS
from ._single import ORIGIN_CONSTRAINTS, SingleProblemSVM

__all__ = ["OneClassSVM", "libsvm_one_class_start"]


def libsvm_one_class_start(upper, total):
    """libsvm's start of the one-class dual: each variable in turn at its bound ``upper`` until they sum to
    ``total``, the last one partly, the rest zero."""
    filled_before = np.cumsum(upper) - upper
    return np.clip(total - filled_before, 0.0, upper)


class OneClassSVM(OutlierMixin, SingleProblemSVM):
    """Unsupervised outlier detection (support estimation) on Dask: a drop-in for :class:`sklearn.svm.OneClassSVM`.

    libsvm's ν formulation solved by dkernel's block-coordinate solver on a Gram matrix computed in memory, kept
    in a zarr store, or evaluated row by row, in this process or on a Dask cluster. ``centering`` moves the origin
    of the feature space, which this method separates the data from, to Meilă's centre of gravity of the data
    (or a sample of it): that changes the support found; prediction still uses the original kernel only.

    Parameters
    ----------
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"}, Kernel or callable, default="rbf"
        As :class:`~dkernel.SVC`'s.
    degree : int, default=3
    gamma : {"scale", "auto"} or float, default="scale"
    coef0 : float, default=0.0
    tol : float, default=1e-3
        Stop when libsvm's maximal violating pair gap is at most ``tol``.
    nu : float, default=0.5
        An upper bound on the fraction of training errors and a lower bound on the fraction of support vectors,
        in (0, 1].
    shrinking : bool, default=True
    cache_size : float, default=None
        Memory (MB) for the Gram matrix, as :class:`~dkernel.SVC`'s.
    verbose : bool, default=False
    max_iter : int, default=-1
        Outer iterations of the solver; -1 for libsvm's limit.
    centering : None, "standard" or Centering, default=None
        Origin of the feature space for training: the centre of gravity of the training points (γ = 1/n), or
        explicit weights over the samples of positive weight. The one-class SVM separates the data from the
        origin: an origin that is a combination ``Σ γ_i φ(x_i)`` with ``ν n γ_i <= 1`` (the centre of gravity
        itself, or that of a sample of ``ν n`` points or more) gives ``w = 0``, and ``fit`` warns.
    centering_sample : int, default=None
        Represent the centre of gravity by this many sampled training points (Meilă §5). Fewer than ``ν n``
        is needed for a model that separates anything, but not enough: a sample's mean that a combination
        ``Σ α_i φ(x_i) / (ν n)`` with ``0 ≤ α_i ≤ 1`` reproduces still gives ``w ≈ 0`` (see
        ``docs/one_class_origin.py``).
    store : str or path-like, default=None
    storage_options : dict, default=None
        For a URL ``store``, as :class:`~dkernel.SVC`'s; never saved.
    working_set_size : int, default=None
    client : distributed.Client, str or False, default=None
    random_state : int, RandomState or None, default=None
        Sampling of ``centering_sample``.
    checkpoint : str, path-like or dkernel.solver.Checkpoint, default=None

    Attributes
    ----------
    support_ : ndarray of shape (n_SV,), dtype int32
        Training indices of the support vectors; with ``centering``, those of the expansion in the original
        kernel (support vectors and the origin's points).
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of shape (1,), dtype int32
    dual_coef_ : ndarray or sparse matrix of shape (1, n_SV)
        ``α_i`` (with ``centering``: ``α_i − ν n γ_i``, the coefficients in the original kernel).
    coef_ : ndarray of shape (1, n_features)
        ``kernel="linear"`` only.
    intercept_ : ndarray of shape (1,)
        ``−ρ``, in the original kernel.
    offset_ : ndarray of shape (1,)
        ``ρ``: ``decision_function = score_samples − offset_``.
    delta_b_ : float
        The change of the intercept by the translation (0 without centering).
    uncorrected_intercept_ : float
        ``−ρ`` on the (centered) Gram.
    objective_ : float
        The dual objective ``½ αᵀKα`` (on the centered Gram with ``centering``).
    n_iter_ : int
    fit_status_ : int
    shape_fit_ : tuple
    n_features_in_ : int
    gram_dtype_ : str

    References
    ----------
    .. [1] B. Schölkopf, J. C. Platt, J. Shawe-Taylor, A. J. Smola and R. C. Williamson, "Estimating the support
       of a high-dimensional distribution", Neural Computation 13, 2001.
    .. [2] C.-C. Chang and C.-J. Lin, "LIBSVM: a library for support vector machines", ACM TIST 2, 2011, §2.4.
    .. [3] M. Meilă, "Data centering in feature space", AISTATS 2003, §2 ("SVM extensions") and eqs. 11–18.
    """

    _parameter_constraints: dict = {
        **{k: v for k, v in BaseKernelSVM._parameter_constraints.items() if k != "C"},
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
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
        nu=0.5,
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
        self.nu = nu
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

    #: libsvm's one-class SVM bounds each α_i by the sample's weight alone.
    _upper_bound = 1.0

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Estimate the support of the distribution of ``X`` (or of the points of a precomputed Gram matrix).

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            Or, with ``kernel="precomputed"``, the Gram matrix (ndarray or :class:`~dkernel.gram.GramMatrix`).
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample bounds of ``α``; a sample of weight zero or less is left out, as in libsvm.

        Returns
        -------
        self
        """
        n = int(X.n) if hasattr(X, "rows") and hasattr(X, "diag") else _num_samples(X)
        self._fit(X, np.ones(n), sample_weight)
        self.offset_ = -self.intercept_
        return self

    @staticmethod
    def _targets(y):
        return np.asarray(y, dtype=np.float64)

    def _problem(self, y, C):
        """libsvm's one-class dual (Chang & Lin §2.4): ``Q = K``, ``p = 0``, ``Σ α = ν Σ w``."""
        total = float(self.nu) * float(C.sum())

        def expansion(result):
            return result.alpha, float(result.intercept)

        return {"rows": lambda rows: rows, "y": y, "C": C, "p": np.zeros(y.shape[0]), "e": total,
                "alpha0": libsvm_one_class_start(C, total), "expansion": expansion}

    def _check_origin(self, origin, problem):
        """Warn when the origin is one of the problem's feasible points: the solution is then ``w = 0``.

        ``α = e γ`` (``e = ν Σ w``) meets ``Σ α = e`` and, when ``e γ_i <= w_i`` for every point, the bounds; it
        gives ``Σ α_i (φ(x_i) − a) = e (a − a) = 0``, the smallest norm there is. The centre of gravity of the
        training points (γ = 1/n) always is such a point, and so is the centre of a sample of at least ``ν n``
        of them: the data are then not separated from the origin and every decision value is zero.
        """
        if origin is None:
            return
        gamma = origin.dense()
        if np.all(problem["e"] * gamma <= problem["C"] * (1 + 1e-12)):
            warnings.warn(
                f"the origin of centering={self.centering!r} is a combination of the training points with weights "
                f"that the one-class SVM may take (α = ν n γ <= 1): the solution is w = 0 and every decision value "
                f"is 0. Represent the origin by fewer points (centering_sample < nu * n_samples = "
                f"{problem['e']:.4g}) or give explicit weights outside that set.",
                UserWarning, stacklevel=4,
            )

    def decision_function(self, X):
        """Signed distance to the separating hyperplane: positive for an inlier, negative for an outlier.

        ``Σ_i α_i K(x, x_i) − ρ`` through the original kernel. ``X`` as in :meth:`predict`.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision(X)

    def score_samples(self, X):
        """The raw score ``Σ_i α_i K(x, x_i)``: :meth:`decision_function` plus ``offset_``."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for an inlier, −1 for an outlier (intp).

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            With ``kernel="precomputed"``, the kernel ``K(X_test, X_train)`` (an ndarray or a
            :class:`~dkernel.gram.GramMatrix`). A dask array stays lazy.

        Returns
        -------
        ndarray of shape (n_samples,), dtype intp
        """
        dec = self.decision_function(X)
        if hasattr(dec, "map_blocks"):
            return dec.map_blocks(lambda d: np.where(d > 0, 1, -1).astype(np.intp), dtype=np.intp)
        return np.where(dec > 0, 1, -1).astype(np.intp)
