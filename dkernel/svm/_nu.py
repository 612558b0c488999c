"""ν-support vector regression, :class:`NuSVR`: libsvm's ν formulation (Schölkopf et al. 2000) on dkernel's
solver, with two equality rows; :func:`nu_rho` takes ρ and r from the final gradient as libsvm does.

ν-SVR (libsvm's ``solve_nu_svr``, Chang & Lin §2.4) is ε-SVR's problem on the 2n variables ``(α, α*)``
(:class:`~dkernel.svm._svr.EpsilonSVRGram`) without ε in the linear term and with a second equality row:

.. math::

    \\min \\tfrac12 (\\alpha - \\alpha^*)^\\top K (\\alpha - \\alpha^*) - y^\\top (\\alpha - \\alpha^*)
    \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i, \\alpha^*_i \\le C_i,\\;
    \\sum_i (\\alpha_i - \\alpha^*_i) = 0,\\; \\sum_i (\\alpha_i + \\alpha^*_i) = \\nu \\sum_i C_i.
"""

from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from ._base import EXPECTED_FAILED_CHECKS, BaseKernelSVM
from ..kernels._parameters import ESTIMATOR_DEFAULTS
from ._single import ORIGIN_CONSTRAINTS
from ._svr import SVR, EpsilonSVRGram

__all__ = ["NuSVR", "nu_rho", "nu_start"]


def nu_rho(alpha, G, y, C):
    """libsvm's ``Solver_NU::calculate_rho``: ``(ρ, r)`` with ``ρ = (r₁ − r₂)/2`` and ``r = (r₁ + r₂)/2``, from the
    levels ``r₁``, ``r₂`` of the gradient on each label's free variables (:func:`dkernel.solver._bias.label_levels`,
    which says what is taken when a label has none)."""
    from ..solver._bias import label_levels  # the solver: imported when used

    r1, r2 = label_levels(alpha, G, y, C)
    return (r1 - r2) / 2, (r1 + r2) / 2


def nu_start(upper, total):
    """libsvm's start: the variables in turn at their bound ``upper`` until they sum to ``total``."""
    filled_before = np.cumsum(upper) - upper
    return np.clip(total - filled_before, 0.0, upper)


class NuSVR(SVR):
    """Nu Support Vector Regression on Dask: a drop-in for :class:`sklearn.svm.NuSVR`.

    libsvm's ν-SVR (2n variables ``α, α*`` viewed from the n × n Gram as :class:`~dkernel.SVR`'s, two equality
    rows) solved by dkernel's block-coordinate solver. ``ν`` bounds the fraction of training errors from above
    and the fraction of support vectors from below; the tube width ε is found by the fit. With ``centering``
    the solver works on the Gram translated to Meilă's origin and only the intercept moves (Δb, eq. 19).

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1].
    C : float, default=1.0
        Regularization parameter, in (0, inf].
    kernel, degree, gamma, coef0, tol, shrinking, cache_size, verbose, max_iter, centering, centering_sample,
    store, storage_options, working_set_size, client, random_state, checkpoint
        As :class:`~dkernel.SVR`'s. The solver keeps the sum of ``α`` and that of ``α*`` where libsvm's start puts
        them, taking its pairs of variables within each (libsvm's ``Solver_NU``).

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, coef_, intercept_, delta_b_, uncorrected_intercept_,
    objective_, n_iter_, fit_status_, shape_fit_, n_features_in_, gram_dtype_
        As :class:`~dkernel.SVR`'s; ``dual_coef_`` holds ``α_i − α*_i``.
    epsilon_ : float
        The tube width found (libsvm's ``−r``).

    References
    ----------
    .. [1] B. Schölkopf, A. J. Smola, R. C. Williamson and P. L. Bartlett, "New support vector algorithms",
       Neural Computation 12, 2000.
    .. [2] C.-C. Chang and C.-J. Lin, "LIBSVM: a library for support vector machines", ACM TIST 2, 2011, §2.4.
    """

    _parameter_constraints: dict = {
        **BaseKernelSVM._parameter_constraints,
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
        **ORIGIN_CONSTRAINTS,
        "random_state": ["random_state"],
        "checkpoint": "no_validation",
    }
    _expected_failed_checks = EXPECTED_FAILED_CHECKS

    def __init__(
        self,
        *,
        nu=0.5,
        C=1.0,
        kernel="rbf",
        degree=ESTIMATOR_DEFAULTS["degree"],
        gamma=ESTIMATOR_DEFAULTS["gamma"],
        coef0=ESTIMATOR_DEFAULTS["coef0"],
        shrinking=True,
        tol=1e-3,
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
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the regression on ``X`` (or a precomputed Gram matrix) and targets ``y``; as :meth:`SVR.fit`."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        return self._fit(X, y, sample_weight)

    def _problem(self, y, C):
        """libsvm's ν-SVR on ``(α, α*)``: ``p = (−y, y)``, ``Σ (α − α*) = 0``, ``Σ (α + α*) = ν Σ C_i``."""
        n = y.shape[0]
        z = np.concatenate([np.ones(n), -np.ones(n)])
        bounds = np.concatenate([C, C])
        total = float(self.nu) * float(C.sum())
        half = nu_start(C, total / 2)

        def expansion(result):
            rho, r = nu_rho(result.alpha, result.gradient, z, bounds)
            self.epsilon_ = -r
            return result.alpha[:n] - result.alpha[n:], -rho

        return {"rows": EpsilonSVRGram, "y": z, "C": bounds, "p": np.concatenate([-y, y]),
                "E": np.vstack([z, np.ones(2 * n)]), "e": np.array([0.0, total]),
                "alpha0": np.concatenate([half, half]), "expansion": expansion}

