"""ν-support vector classification, :class:`NuSVC`: libsvm's ν-SVC (Schölkopf et al. 2000; Chang & Lin 2001,
§2.2) on dkernel's solver, one-vs-one as :class:`~dkernel.SVC`.

For each pair of classes (labels ``y_i = ±1``, the first class of the pair +1) with the samples' weights ``w_i``
(1 without; ``class_weight`` does not enter, as in libsvm), libsvm's ``solve_nu_svc`` solves

.. math::

    \\min_\\alpha \\tfrac12 \\alpha^\\top Q \\alpha \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le w_i,\\;
    \\sum_{y_i = +1} \\alpha_i = \\sum_{y_i = -1} \\alpha_i = \\tfrac{\\nu}{2} \\sum_i w_i,
    \\qquad Q_{ij} = y_i y_j K_{ij},

two equality rows, one per class (the solver's ``E = [y; 1]``, ``e = E α₀``, libsvm's start ``α₀``:
:func:`nu_svc_start`). From the final gradient ``G = Q α`` libsvm's ``Solver_NU::calculate_rho`` takes ``r₁``
(``r₂``), the mean of ``G`` over the free variables of class +1 (−1), and ``ρ = (r₁ − r₂)/2``,
``r = (r₁ + r₂)/2`` (:func:`~dkernel.svm._nu.nu_rho`). The ν-SVC solution is the C-SVC solution for ``C = 1/r``
scaled by ``r``, so libsvm divides by ``r``: the expansion is

.. math::  f(x) = \\sum_i \\frac{\\alpha_i y_i}{r} K(x, x_i) - \\frac{\\rho}{r},

and the objective is reported divided by ``r²``. With ``centering`` the solver reads the Gram centered at
Meilă's origin (eq. 14); since ``yᵀα = 0`` the expansion is the same and only the intercept moves, by
``Δb = cᵀh`` (eq. 19) with ``c = α y / r``, so prediction uses the original kernel (eq. 16).
"""

import warnings
from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from ..centering._origins import delta_b
from ._base import EXPECTED_FAILED_CHECKS
from ._classes import SVC
from ..kernels._parameters import ESTIMATOR_DEFAULTS
from ._nu import nu_rho, nu_start
from ._training import (
    outer_iteration_cap,
    problem_gram,
    solve_qp,
    solver_client,
)

__all__ = ["NuSVC", "check_nu_feasible", "nu_svc_start"]

#: scikit-learn's (libsvm's) message for a ν that no pair of classes allows.
INFEASIBLE_NU = "specified nu is infeasible"


def nu_svc_start(upper, y, total):
    """libsvm's start of the ν-SVC dual: within each class, the variables in turn at their bound ``upper`` until
    the class sums to ``total / 2`` (less where the class's bounds sum to less)."""
    alpha = np.zeros(y.shape[0])
    for label in (1, -1):
        mask = y == label
        alpha[mask] = nu_start(upper[mask], total / 2)
    return alpha


def check_nu_feasible(nu, problems, weights):
    """libsvm's check of ν-SVC (``svm_check_parameter``): for each pair of classes of weighted sizes ``n₁, n₂``,
    ``ν (n₁ + n₂)/2 ≤ min(n₁, n₂)``, else ``ValueError("specified nu is infeasible")``.

    ``problems`` are the one-vs-one ``(index, y_pm)`` of :func:`~dkernel.svm._multiclass.binary_problems`.
    """
    for index, y_pm in problems:
        n1, n2 = float(weights[index][y_pm > 0].sum()), float(weights[index][y_pm < 0].sum())
        if nu * (n1 + n2) / 2 > min(n1, n2):
            raise ValueError(f"{INFEASIBLE_NU}: nu={nu} needs nu * (n1 + n2) / 2 <= min(n1, n2) for each pair of "
                             f"classes, and a pair has weighted sizes {n1:g} and {n2:g}; lower nu to at most "
                             f"{2 * min(n1, n2) / (n1 + n2):.6g}.")


def _finite_end(alpha, G, y, C):
    """``(ρ, r)`` with each infinite level replaced by the finite end of its interval.

    A label whose variables all sit at their upper bound (none free, none at 0) leaves its level ``r₁`` (``r₂``)
    anywhere in ``[max G, ∞)``: every such level meets the KKT conditions, and libsvm's midpoint is infinite
    (``ρ = ∞ − ∞``, NaN). The finite end, ``max G`` over the label's variables, is the one finite choice.
    """
    from ..solver._bias import BOUND_RTOL, label_levels

    levels = list(label_levels(alpha, G, y, C))
    for k, label in enumerate((1, -1)):
        if not np.isfinite(levels[k]):
            mask = y == label
            at_upper = alpha[mask] >= C[mask] * (1 - BOUND_RTOL)
            g = G[mask]
            levels[k] = float(g[at_upper].max() if levels[k] > 0 else g[~at_upper].min())
    r1, r2 = levels
    return (r1 - r2) / 2, (r1 + r2) / 2


def _check_weighted_classes(nu, y, sample_weight):
    """libsvm's order: a class whose samples all weigh zero or less (``n₁ = 0``) makes ``ν`` infeasible, which
    libsvm says before it would find one class left. Labels and weights of other shapes are left to ``fit``'s
    validation."""
    if sample_weight is None:
        return
    w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    labels = np.asarray(y).reshape(-1)
    if w.shape != labels.shape or not np.all(np.isfinite(w)):
        return
    classes = np.unique(labels)
    totals = [float(np.maximum(w[labels == c], 0.0).sum()) for c in classes]
    if len(classes) > 1 and max(totals) > 0 and min(totals) == 0:
        empty = classes[int(np.argmin(totals))]
        raise ValueError(f"{INFEASIBLE_NU}: every sample of class {empty!r} has a weight of zero or less, so "
                         f"nu * (n1 + n2) / 2 <= min(n1, n2) = 0 fails for nu={nu}; give that class positive "
                         f"weights or leave its samples out.")


class NuSVC(SVC):
    """Nu-Support Vector Classification on Dask: a drop-in for :class:`sklearn.svm.NuSVC`.

    libsvm's ν-SVC on each pair of classes (one-vs-one, as :class:`~dkernel.SVC`'s), solved by dkernel's
    block-coordinate solver with the two equality rows of libsvm's ``Solver_NU`` (one per class) and rescaled as
    libsvm rescales it (the C-SVC with ``C = 1/r``). ``ν`` bounds the fraction of margin errors from above and
    the fraction of support vectors from below. The Gram is computed in memory, kept in a zarr store (``store``)
    or evaluated row by row, in this process or on a Dask cluster (``client``); with ``centering`` the solver
    works on the Gram of the data translated to Meilă's origin and the intercept is corrected by Δb.

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1]; a ``ν`` larger than ``2 min(n₁, n₂) / (n₁ + n₂)`` for a pair of classes of (weighted) sizes
        ``n₁, n₂`` is infeasible and refused with ``ValueError``, as scikit-learn refuses it.
    kernel, degree, gamma, coef0, shrinking, probability, tol, cache_size, verbose, max_iter,
    decision_function_shape, break_ties, random_state, centering, centering_sample, store, storage_options,
    working_set_size, client, checkpoint
        As :class:`~dkernel.SVC`'s. ``verbose`` shows the solver's progress; ``checkpoint`` holds one
        subfolder per pair of classes.
    class_weight : dict, "balanced" or None, default=None
        Kept in ``class_weight_``; as in libsvm's ν-SVC, it does not change the problem (``ν`` sets the scale).

    Attributes
    ----------
    classes_, class_weight_, support_, support_vectors_, n_support_, dual_coef_, coef_, intercept_, delta_b_,
    uncorrected_intercept_, objective_, n_iter_, fit_status_, shape_fit_, n_features_in_, probA_, probB_,
    gram_dtype_
        As :class:`~dkernel.SVC`'s; ``dual_coef_`` and ``intercept_`` are libsvm's rescaled ones (``α y / r``
        and ``−ρ / r``, then Δb), ``objective_`` the dual objective divided by ``r²``.

    References
    ----------
    .. [1] B. Schölkopf, A. J. Smola, R. C. Williamson and P. L. Bartlett, "New support vector algorithms",
       Neural Computation 12, 2000.
    .. [2] C.-C. Chang and C.-J. Lin, "Training ν-support vector classifiers: theory and algorithms", Neural
       Computation 13, 2001; "LIBSVM: a library for support vector machines", ACM TIST 2, 2011, §2.2 and §4.1.
    .. [3] M. Meilă, "Data centering in feature space", AISTATS 2003, eqs. 14–19.
    """

    _parameter_constraints: dict = {
        **{k: v for k, v in SVC._parameter_constraints.items()
           if k not in ("C", "multiclass", "normalize", "normalize_bias_correction")},
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
    }
    #: scikit-learn's own NuSVC fails the class-weight check for the same reason.
    _expected_failed_checks = {**EXPECTED_FAILED_CHECKS,
                               "check_class_weight_classifiers": "class_weight does not change libsvm's ν-SVC problem"}

    # SVC's options that the ν-SVC does not take: one-vs-one on the original or centered Gram.
    C = 1.0
    multiclass = "ovo"
    normalize = False
    normalize_bias_correction = False

    def __init__(
        self,
        *,
        nu=0.5,
        kernel="rbf",
        degree=ESTIMATOR_DEFAULTS["degree"],
        gamma=ESTIMATOR_DEFAULTS["gamma"],
        coef0=ESTIMATOR_DEFAULTS["coef0"],
        shrinking=True,
        probability=False,
        tol=1e-3,
        cache_size=None,
        class_weight=None,
        verbose=False,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        random_state=None,
        centering=None,
        centering_sample=None,
        store=None,
        storage_options=None,
        working_set_size=None,
        client=None,
        checkpoint=None,
    ):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.centering = centering
        self.centering_sample = centering_sample
        self.store = store
        self.storage_options = storage_options
        self.working_set_size = working_set_size
        self.client = client
        self.checkpoint = checkpoint

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the ν-SVC on ``X`` (or a precomputed Gram matrix) and labels ``y``; as :meth:`SVC.fit`.

        ``sample_weight`` gives the bounds ``w_i`` of the samples (a weight of zero or less removes the sample).
        Raises ``ValueError("specified nu is infeasible")`` as libsvm does.
        """
        _check_weighted_classes(self.nu, y, sample_weight)
        self._sample_weight = sample_weight
        try:
            return SVC.fit.__wrapped__(self, X, y, sample_weight=sample_weight)
        finally:
            del self._sample_weight

    def _fit_problems(self, base, problems, C_i, client, blas, rng, checkpoints, whole=None, labels=None):
        """libsvm's feasibility check of ``ν`` on every pair of classes, then the problems as :class:`SVC`'s."""
        n = C_i.shape[0]
        weights = (np.ones(n) if self._sample_weight is None
                   else np.maximum(np.asarray(self._sample_weight, dtype=np.float64).reshape(-1), 0.0))
        check_nu_feasible(float(self.nu), problems, weights)
        self._nu_weights = weights
        self._nu_final_fit = True  # the model's own problems, not the probability's cross-validation folds
        try:
            return super()._fit_problems(base, problems, C_i, client, blas, rng, checkpoints, whole, labels)
        finally:
            del self._nu_final_fit

    def _fit_binary(self, base, index, y_pm, C, client, blas, rng, origin=None, checkpoint=None):
        """libsvm's ``solve_nu_svc`` on the samples ``index``: bounds ``w``, one equality row per class, then the
        solution rescaled by ``1/r`` and, with an origin, the intercept corrected by Δb (Meilă eq. 19)."""
        from ._training import centering_for

        if origin is None:
            origin = centering_for(self.centering, self.centering_sample, y_pm, rng)
        rows, h = problem_gram(base, index, origin, client)
        max_iter = outer_iteration_cap(rows.n, self.working_set_size) if self.max_iter == -1 else self.max_iter
        client = solver_client(rows, client)
        upper = self._nu_weights[index]
        E = np.vstack([y_pm, np.ones(rows.n)])
        # libsvm keeps each class's sum where its start put it (less than ν Σw / 2 only in a fold of the
        # probability's cross-validation that ν does not fit).
        alpha0 = nu_svc_start(upper, y_pm, float(self.nu) * float(upper.sum()))
        result = solve_qp(rows, y_pm, upper, client=client, blas=blas, p=np.zeros(rows.n), E=E, e=E @ alpha0,
                          alpha0=alpha0, tol=self.tol, working_set_size=self.working_set_size,
                          max_iter=max_iter, verbose=bool(self.verbose), shrinking=bool(self.shrinking),
                          checkpoint=checkpoint)
        rho, r = nu_rho(result.alpha, result.gradient, y_pm, upper)
        final = getattr(self, "_nu_final_fit", False)
        if not np.isfinite(r):
            # Every variable of a class at its upper bound: libsvm's r is infinite, its α / r and ρ / r are 0 and
            # NaN, and scikit-learn refuses the fit. A cross-validation fold of the probability model (a class
            # short of ν Σw / 2) takes the finite end of the level's interval instead.
            if final:
                raise ValueError(
                    f"nu={self.nu} puts every sample of a class at its upper bound (α_i = w_i) in the ν-SVC of a "
                    f"pair of classes of weighted sizes {upper[y_pm > 0].sum():g} and {upper[y_pm < 0].sum():g}: "
                    f"the problem's only feasible point leaves libsvm's scale r infinite, so the dual coefficients "
                    f"and intercept would not be finite (scikit-learn raises as well). Use a smaller nu.")
            rho, r = _finite_end(result.alpha, result.gradient, y_pm, upper)
        if not r > 0:
            # r ≥ αᵀQα / (ν Σw) = ‖w‖² / (ν Σw) ≥ 0, with r = 0 exactly when the optimum has w = 0 (the two
            # classes' reduced convex hulls meet); then Qα = 0, ρ = 0 and libsvm's α / r, ρ / r are 0 / 0: no C
            # corresponds (C = 1/r = ∞) and no margin is there to rescale by. A computed r ≤ 0 is that case within
            # the solver's tolerance; the unscaled solution is kept (r = 1) and the fit warns.
            if final:
                warnings.warn(
                    f"NuSVC(nu={self.nu}): the optimum of the ν-SVC of a pair of classes has w = 0 (libsvm's scale "
                    f"r = {r:.3g} <= 0, the classes' reduced convex hulls overlap), so the model carries no "
                    f"separating direction and its decision values are about constant. Use a larger nu (ν-SVC "
                    f"with a small nu tends to the hard margin) or other kernel parameters.",
                    UserWarning, stacklevel=2,
                )
            r = 1.0
        elif r < self.tol and final:
            # libsvm divides by r as it is; an r within the solver's tolerance of 0 is not told apart from the
            # w = 0 case above by this solve, and α / r, ρ / r carry the tolerance's error magnified by 1 / r.
            warnings.warn(
                f"NuSVC(nu={self.nu}): libsvm's scale r = {r:.3g} of a pair of classes is within the solver's "
                f"tolerance (tol={self.tol:g}) of 0, where the optimum has w = 0 (the classes' reduced convex hulls "
                f"about meet): the dual coefficients and intercept are divided by r as libsvm does, and carry the "
                f"solver's error times 1/r = {1 / r:.3g}. Use a larger nu, a smaller tol, or other kernel parameters.",
                UserWarning, stacklevel=2,
            )
        coef = result.alpha * y_pm / r
        uncorrected = -rho / r
        db = delta_b(coef, h) if h is not None else 0.0
        return {
            "coef": coef,
            "intercept": uncorrected - db,
            "uncorrected": uncorrected,
            "delta_b": db,
            "objective": result.objective / (r * r),
            "n_iter": result.n_iter,
            "converged": result.converged,
        }
