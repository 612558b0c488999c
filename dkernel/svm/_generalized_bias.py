"""The SVM with a generalized bias (Li, Leung & Lee 2007): a kernel plus unregularized predefined features.

The hypothesis space is split as ``H_K = H_0 ⊕ H_1`` with ``H_0`` spanned by
ℓ predefined features φ_1 … φ_ℓ that the regularizer leaves alone (eq. 3):

.. math::

    \\min_f \\frac1m \\sum_i (1 - y_i f(x_i))_+ + \\gamma \\|P_1 f\\|_K^2 ,
    \\qquad f(x) = \\sum_i c_i y_i \\Phi(x_i, x) + \\sum_{k} \\lambda_k \\varphi_k(x) \\quad (7).

Its dual (eqs. 23–24) is the C-SVC dual with ``C = 1 / (2 γ m)`` and one
equality row per feature, ``Σ_i α_i y_i φ_k(x_i) = 0``, which
:func:`dkernel.solver.solve_qp` solves. The feature coefficients λ are the
multipliers of those rows when the free support vectors determine them, and
otherwise come from the paper's linear program (eq. 25), solved with SciPy's
HiGHS. With the single feature φ = 1 this is the ordinary SVM and λ its bias.

:func:`virtual_samples_solution` solves the same problem in the paper's
other form (§4.2): ℓ virtual points of label 0 on which the features are the
unit vectors, the box ``0 ≤ α ≤ 1/m`` and the linear term ``-2γ``, λ from
eq. (25).
"""

from numbers import Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import nnls
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._runtime.client import client_for
from ..gram._sources import DenseGram, SubsetGram, row_provider, subset_gram
from .._runtime.validation import check_finite
from ..solver._bias import linear_program
from . import _multiclass
from ._base import BaseSVM
from ..kernels._parameters import ESTIMATOR_DEFAULTS, resolve_kernel
from ._training import (
    outer_iteration_cap,
    solver_client,
    solver_precision,
    store_path,
    training_gram,
)

__all__ = [
    "GeneralizedBiasSVC",
    "check_feature_matrix",
    "feature_coefficients",
    "held_samples",
    "hinge_feature_coefficients",
    "least_norm_separator",
    "positive_cone_point",
    "solve_generalized_bias",
    "virtual_samples_solution",
]

#: Relative singular-value threshold below which a set of features counts as linearly dependent.
RANK_RTOL = 1e-10
#: Hinge loss of eq. (25), relative to the total weight, under which the training points count as fitted exactly.
SEPARABLE_LOSS = 1e-9


def check_feature_matrix(F, n_samples, *, where="the training data"):
    """The predefined features on ``n_samples`` points as a float64 array (n, ℓ), or a clear ``ValueError``.

    Refused: NaN or infinite values, more features than points (ℓ > m,
    eq. 3 needs ℓ ≤ m), and linearly dependent features (a rank-deficient
    E of eq. 24: λ would not be unique and the equality rows redundant).
    """
    F = np.asarray(F.toarray() if sp.issparse(F) else F, dtype=np.float64)
    if F.ndim == 1:
        F = F[:, None]
    if F.ndim != 2 or F.shape[0] != n_samples:
        raise ValueError(f"the features must have shape ({n_samples}, n_features) on {where}; got shape {F.shape}.")
    bad = ~np.isfinite(F)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"the features have {int(bad.sum())} NaN or infinite values on {where} (first: feature "
                         f"{col} of sample {row}); fix the feature transformer or impute them.")
    n, ell = F.shape
    if ell == 0:
        raise ValueError("the feature transformer returned no features; give at least one (e.g. a constant).")
    if ell > n:
        raise ValueError(f"{ell} features on {n} training points: a generalized bias needs at most as many "
                         f"features as training points (ℓ ≤ m); use fewer features or more data.")
    dependent = _dependent_features(F)
    if dependent.size:
        raise ValueError(f"the features are linearly dependent on {where} (rank {ell - dependent.size} < {ell}; "
                         f"feature {int(dependent[0])} is a combination of the others): the coefficients λ would "
                         f"not be unique. Remove the redundant features.")
    return F


def _independent_features(F):
    """Columns of ``F`` forming a maximal linearly independent set (pivoted QR), in increasing order."""
    if F.shape[1] == 0:
        return np.arange(0)
    _, r, pivots = scipy.linalg.qr(F, pivoting=True, mode="economic")
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > RANK_RTOL * max(diag.max(initial=0.0), 1e-300) * max(F.shape)))
    return np.sort(pivots[:rank])


def _dependent_features(F):
    return np.setdiff1d(np.arange(F.shape[1]), _independent_features(F))


def hinge_feature_coefficients(F, y, g, weights):
    """λ of eq. (25): minimize ``Σ_i w_i ξ_i`` s.t. ``y_i (Σ_k λ_k φ_k(x_i) + g_i) ≥ 1 - ξ_i``, ``ξ ≥ 0``.

    ``g`` is the kernel part ``Σ_j c_j y_j Φ(x_j, x_i)`` at the training
    points, fixed by the QP. Rows with ``y_i = 0`` (virtual points, §4.2)
    carry the constant loss 1. Solved with SciPy's HiGHS. When the loss is
    zero its minimizers are a polyhedron; the one of least norm is returned
    (:func:`least_norm_separator`).
    """
    n, ell = F.shape
    real = y != 0
    Fr, yr, gr, wr = F[real], y[real], g[real], weights[real]
    m = yr.shape[0]
    # variables [λ (free), ξ (>= 0)]; -y_i F_i λ - ξ_i <= y_i g_i - 1
    A_ub = sp.hstack([sp.csr_matrix(-yr[:, None] * Fr), -sp.identity(m, format="csr")], format="csr")
    b_ub = yr * gr - 1.0
    cost = np.concatenate([np.zeros(ell), wr])
    bounds = [(None, None)] * ell + [(0, None)] * m
    res = linear_program(cost, "linear program of the feature coefficients (eq. 25)", A_ub=A_ub, b_ub=b_ub,
                         bounds=bounds)
    if res.fun <= SEPARABLE_LOSS * max(wr.sum(), 1e-300):
        # Zero loss: every λ with y_i (F_i λ + g_i) >= 1 is a minimizer, a whole unbounded polyhedron. The
        # slacks the LP left (rounding) keep the constraints feasible: its own λ satisfies them.
        A, h = yr[:, None] * Fr, 1.0 - yr * gr - res.x[ell:]
        try:
            lam = least_norm_separator(A, h)
        except RuntimeError:
            lam = None
        if lam is not None and np.all(A @ lam >= h - 1e-9 * (1.0 + np.abs(h).max(initial=0.0))):
            return lam
        # NNLS stopped short (its iteration cap, rounding): the LP's minimizer is a point of the same polyhedron.
    return res.x[:ell]


def least_norm_separator(A, h):
    """The λ of least Euclidean norm with ``A λ >= h``, by least distance programming (Lawson & Hanson, ch. 23).

    The NNLS problem ``min_{u >= 0} ‖[Aᵀ; hᵀ] u - e_{ℓ+1}‖`` (SciPy's
    ``nnls``) has residual ``r`` with ``λ = -r[:ℓ] / r[ℓ]``; ``r = 0``
    means the constraints are infeasible. When the loss of eq. (25) is zero
    (the features, with the kernel part, fit every training point: the
    reproduction property), its minimizers form this polyhedron; the point of
    least norm is the one that depends on no direction the data leave free,
    and it is the generating coefficients when the labels are exactly a linear
    model of the features (``y_i = Σ_k λ_k φ_k(x_i)``).
    """
    m, ell = A.shape
    M = np.vstack([A.T, h[None, :]])
    target = np.zeros(ell + 1)
    target[-1] = 1.0
    u, _ = nnls(M, target, maxiter=50 * max(m, ell + 1))
    residual = M @ u - target
    if abs(residual[-1]) <= 1e-12:
        raise RuntimeError("the constraints of the least-norm feature coefficients are infeasible.")
    return -residual[:ell] / residual[-1]


def feature_coefficients(alpha, G, C, E, F, y, K_coef):
    """λ after the QP: the equality multipliers when the free vectors determine them, else eq. (25).

    At a free ``α_i`` (``0 < α_i < C_i``) KKT gives ``G_i + (E^T λ)_i = 0``,
    i.e. ``y_i f(x_i) = 1``: least squares over the free vectors is exact
    when their features have full rank. Otherwise (few or no free vectors,
    as when the features alone separate the data, the reproduction property)
    λ is any minimizer of the hinge loss with the kernel part fixed, the
    paper's linear program (eq. 25) with ``K_coef = Σ_j c_j y_j Φ(x_j, x_i)``.
    """
    free = (alpha > 0) & (alpha < C)
    E_free = E[:, free]
    if free.sum() >= E.shape[0] and np.linalg.matrix_rank(E_free) == E.shape[0]:
        return np.linalg.lstsq(E_free.T, -G[free], rcond=None)[0], "multipliers"
    return hinge_feature_coefficients(F, y, K_coef, C), "linear program"


def positive_cone_point(E):
    """A point of ``{α ≥ 0, E α = 0}`` with the largest support, and the samples that every such point holds at 0.

    The linear program ``max Σ t_i`` s.t. ``0 ≤ t_i ≤ 1``, ``t_i ≤ α_i``,
    ``α ≥ 0``, ``E α = 0`` (HiGHS) reaches ``t_i = 1`` exactly on the samples
    that some feasible point makes positive (the set is a cone, so a sum of
    such points, scaled, has them all). A row of E whose entries all have one
    sign (a feature seen only in one class of a one-vs-one pair, common with
    indicator features), or a combination of rows, holds its samples at
    ``α_i = 0``: the features alone fit them. The solver, which moves from a
    vertex, can stall on such a degenerate set, so those samples are left out
    of the QP and the others start from the returned point, inside the box.

    Returns ``(alpha, held)``; ``alpha`` is None when HiGHS fails on this
    linear program (it has, with topic proportions spanning 270 orders of
    magnitude) and ``held`` comes from :func:`held_samples`.
    """
    ell, n = E.shape
    # variables [α (n), t (n)]: t_i - α_i <= 0
    A_ub = sp.hstack([-sp.identity(n), sp.identity(n)], format="csr")
    A_eq = sp.hstack([sp.csr_matrix(E), sp.csr_matrix((ell, n))], format="csr")
    cost = np.concatenate([np.zeros(n), -np.ones(n)])
    try:
        res = linear_program(cost, "linear program of the feasible support", A_ub=A_ub, b_ub=np.zeros(n),
                             A_eq=A_eq, b_eq=np.zeros(ell), bounds=[(0, None)] * n + [(0, 1)] * n)
    except RuntimeError:
        return None, held_samples(E)
    t = res.x[n:]
    held = t < 0.5
    alpha = np.where(held, 0.0, res.x[:n])
    return alpha, held


def held_samples(E):
    """The samples every point of ``{α ≥ 0, E α = 0}`` holds at 0, from the dual side of that cone.

    By Goldman and Tucker's theorem, some ``α`` of the cone and some ``s =
    Eᵀ λ ≥ 0`` of its dual are strictly complementary (``α + s > 0``), so
    ``α_i`` is forced to 0 exactly when some ``λ`` gives ``(Eᵀ λ)_i > 0``:
    ``max Σ s_i`` s.t. ``0 ≤ s_i ≤ 1``, ``s_i ≤ (Eᵀ λ)_i``, λ free, reaches
    ``s_i = 1`` on those samples (HiGHS). ``λ`` is then a direction of
    feature coefficients that fits them.
    """
    ell, n = E.shape
    # variables [λ (ℓ), s (n)]: s_i - (Eᵀ λ)_i <= 0
    A_ub = sp.hstack([sp.csr_matrix(-E.T), sp.identity(n)], format="csr")
    cost = np.concatenate([np.zeros(ell), -np.ones(n)])
    res = linear_program(cost, "linear program of the samples held at zero", A_ub=A_ub, b_ub=np.zeros(n),
                         bounds=[(None, None)] * ell + [(0, 1)] * n)
    return res.x[ell:] > 0.5


def solve_generalized_bias(rows, y, C, F, *, tol=1e-3, max_iter=100_000, client=None, verbose=False):
    """One binary problem of eqs. (23)–(25) on a Gram row provider.

    Features that are linearly dependent on these samples (e.g. the indicator
    of a class absent from a one-vs-one pair) are left out of the equality
    rows, and samples held at ``α_i = 0`` by the constraints
    (:func:`positive_cone_point`) out of the QP; λ then comes from eq. (25)
    over all samples and features. Given a ``client``, the solve runs on its
    workers: the gradient spread over them for one equality row, the whole
    active-set loop in a task on one worker for several
    (:func:`dkernel.solver.solve_qp`).

    Returns a dict: ``coef`` (α y, shape (n,)), ``feature_coef`` (λ, shape
    (ℓ,)), ``objective`` (dual), ``n_iter``, ``converged``, ``lambda_from``
    (``"multipliers"`` or ``"linear program"``), ``n_active_features``.
    """
    from ..solver import solve_qp

    n = y.shape[0]
    C = np.broadcast_to(np.asarray(C, dtype=np.float64), y.shape).copy()
    active = _independent_features(F)
    direction, held = positive_cone_point((y[:, None] * F[:, active]).T)
    kept = np.flatnonzero(~held)
    coef = np.zeros(n)
    result = None
    if kept.size:
        yk = y[kept]
        sub_active = _independent_features(F[np.ix_(kept, active)])
        Fk = F[np.ix_(kept, active[sub_active])]
        E = (yk[:, None] * Fk).T
        sub_rows = rows if kept.size == n else SubsetGram(rows, kept)
        # A start inside the box on every kept sample: E (scaled direction) = 0 holds exactly up to rounding.
        start = None if direction is None else direction[kept] * (0.5 * C[kept].min() / direction[kept].max())
        if start is not None and \
                np.abs(E @ start).max(initial=0.0) > 1e-9 * max(np.abs(E).sum(axis=1).max() * start.max(), 1e-300):
            start = None  # rounding of the linear program: let the solver find its own vertex
        result = solve_qp(sub_rows, yk, C[kept], E=E, e=np.zeros(E.shape[0]), tol=tol, max_iter=max_iter,
                          alpha0=start, client=client, verbose=verbose)
        coef[kept] = result.alpha * yk
    lam = np.zeros(F.shape[1])
    if result is not None and kept.size == n and sub_active.size == active.size:
        # G = Q α - 1 = y ⊙ (K α y) - 1, so the kernel part of f at the training points is y ⊙ (G + 1).
        K_coef = y * (result.gradient + 1.0)
        lam[active], source = feature_coefficients(result.alpha, result.gradient, C, E, Fk, y, K_coef)
    else:
        sv = np.flatnonzero(coef)
        K_coef = np.asarray(rows.rows(sv), dtype=np.float64).T @ coef[sv] if sv.size else np.zeros(n)
        lam[active], source = hinge_feature_coefficients(F[:, active], y, K_coef, C), "linear program"
    return {"coef": coef, "feature_coef": lam, "objective": float(result.objective) if result is not None else 0.0,
            "n_iter": int(result.n_iter) if result is not None else 0,
            "converged": bool(result.converged) if result is not None else True,
            "lambda_from": source, "n_active_features": int(active.size), "n_held_at_zero": int(held.sum())}


def virtual_samples_solution(K, F, y, gamma, *, tol=1e-8):
    """The same problem in the paper's virtual-samples form (§4.2, eq. 27).

    ℓ virtual points ``x_v1 … x_vℓ`` with ``φ_p(x_vq) = δ_pq`` and label 0
    join the m real points. On them the kernel part vanishes (``H_{x_vp} =
    0``, eq. 14), so they enter neither the quadratic term nor the equality
    rows, and their hinge loss is the constant 1. The QP is eq. (23)–(24)
    with the box ``0 ≤ α ≤ 1/m`` and the linear term ``-2γ``; then ``c =
    Y α / (2γ)`` (eq. 22) and λ from eq. (25) over all m + ℓ points.

    Returns ``(coef, feature_coef, objective)``: ``coef`` the kernel
    coefficients of the m real points (``f = Σ coef_i Φ(x_i, ·) + Σ λ_k
    φ_k``) and ``objective`` the value of ``L_v(f)`` (eq. 27), which is the
    objective of eq. (3) plus ``ℓ / m``.
    """
    from ..solver import solve_qp

    K = np.asarray(K, dtype=np.float64)
    F = check_feature_matrix(F, K.shape[0])
    m, ell = F.shape
    K_aug = np.zeros((m + ell, m + ell))
    K_aug[:m, :m] = K
    y_aug = np.concatenate([y, np.zeros(ell)])
    F_aug = np.vstack([F, np.eye(ell)])
    E_aug = (y_aug[:, None] * F_aug).T
    # The solver reads labels ±1 for Q = y yᵀ ⊙ K; the virtual rows of K_aug are zero, so their sign is immaterial.
    y_solver = np.where(y_aug == 0, 1.0, y_aug)
    result = solve_qp(DenseGram(K_aug), y_solver, 1.0 / m, p=np.full(m + ell, -2.0 * gamma), E=E_aug,
                      e=np.zeros(ell), tol=tol, max_iter=1_000_000)
    coef = y * result.alpha[:m] / (2.0 * gamma)
    g = np.concatenate([K @ coef, np.zeros(ell)])
    lam = hinge_feature_coefficients(F_aug, y_aug, g, np.full(m + ell, 1.0 / m))
    f = g + F_aug @ lam
    objective = float(np.maximum(0.0, 1.0 - y_aug * f).sum() / m + gamma * coef @ K @ coef)
    return coef, lam, objective


class GeneralizedBiasSVC(BaseSVM):
    """SVM whose bias is generalized to ℓ unregularized predefined features (Li, Leung & Lee 2007).

    ``f(x) = Σ_i c_i y_i Φ(x_i, x) + Σ_k λ_k φ_k(x)`` (eq. 7): the kernel Φ
    is regularized, the features φ are not (eq. 3). Each binary problem is
    the dual of eqs. (23)–(24), with ``C = 1 / (2 γ m)`` in the paper's
    notation and one equality row per feature; λ as in
    :func:`feature_coefficients`. Several classes: one-vs-one (libsvm's
    scheme), as in the paper; :meth:`decision_function` gives one column per
    class by default (``decision_function_shape="ovr"``), as scikit-learn's SVC.

    Parameters
    ----------
    C : float, default=1.0
        Upper bound of the dual variables (``1 / (2 γ m)``), finite: the linear program of eq. (25) weighs
        each training point's hinge loss by it.
    kernel : {"linear", "poly", "rbf", "sigmoid"}, Kernel or dict, default="rbf"
        Φ, with scikit-learn's SVC parameter conventions (not ``"precomputed"`` nor a kernel function: Φ is
        evaluated between test points and support vectors).
    degree, gamma, coef0
        Kernel parameters, as :class:`dkernel.SVC`.
    features : transformer, callable or None, default=None
        The predefined features φ_1 … φ_ℓ. A scikit-learn transformer is
        cloned and fitted on the training data (``fit(X, y)``, so it may use
        the labels), then gives the features of any ``X`` by ``transform``
        (``fit_transform`` on the training data). A callable ``features(X)``
        returns them directly. ``None``: the constant 1, the ordinary SVM.
    tol : float, default=1e-3
        Solver tolerance (maximal KKT violation).
    max_iter : int, default=100000
        Solver outer iterations per binary problem; -1 for libsvm's limit, as :class:`dkernel.SVC`.
    decision_function_shape : {"ovo", "ovr"}, default="ovr"
        Shape of :meth:`decision_function` for more than two classes, as in
        scikit-learn's SVC: ``"ovr"`` one column per class, scikit-learn's
        transform of the one-vs-one values (the votes plus a confidence below
        1/3), whose argmax is :meth:`predict`'s class (but for a tie of the
        votes, which :meth:`predict` gives to the first class); ``"ovo"`` the
        decision values of the one-vs-one problems, one column per pair
        ``i < j`` of classes, positive for class ``i``. Training and
        :meth:`predict` do not depend on it; two classes give one column either way.
    store, storage_options, cache_size, client
        Where the training Gram lives and where the solver runs, as
        :class:`dkernel.SVC`.
    verbose : bool, default=False

    Attributes
    ----------
    classes_ : ndarray
    features_ : transformer or callable
        The fitted feature transformer.
    n_predefined_features_ : int
        ℓ.
    support_ : ndarray of int
        Training indices of the support vectors of any problem, grouped by class.
    support_vectors_ : ndarray or sparse matrix
    pair_coef_ : ndarray of shape (n_problems, n_SV)
        ``c_i y_i`` of each binary problem.
    feature_coef_ : ndarray of shape (n_problems, ℓ)
        λ of each binary problem (0 for features dependent on its samples).
    objective_, n_iter_ : ndarray of shape (n_problems,)
    lambda_from_ : list of str
        Per problem, ``"multipliers"`` or ``"linear program"`` (eq. 25).

    Notes
    -----
    :meth:`save` writes a model with ``features=None``; fitted feature transformers and functions have no JSON
    form, so a model with them is refused (``ValueError``) and stays in memory only.

    References
    ----------
    W. Li, K.-S. Leung and K.-H. Lee, "Generalizing the bias term of support
    vector machines", IJCAI 2007.
    """

    _parameter_constraints: dict = {
        **BaseSVM._parameter_constraints,
        # Finite: C weighs the slacks of the linear program of eq. (25), which an infinite weight leaves undefined.
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "features": "no_validation",  # a transformer, a callable or None, checked when fitting
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
    }
    # The solver of the equality-constrained dual (eqs. 23-24) has neither shrinking nor a working-set setting.
    _parameter_constraints.pop("shrinking")
    _parameter_constraints.pop("working_set_size")

    def __init__(self, C=1.0, kernel="rbf", degree=ESTIMATOR_DEFAULTS["degree"], gamma=ESTIMATOR_DEFAULTS["gamma"],
                 coef0=ESTIMATOR_DEFAULTS["coef0"], features=None, tol=1e-3, max_iter=100_000,
                 decision_function_shape="ovr", store=None, storage_options=None, cache_size=None, client=None,
                 verbose=False):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.features = features
        self.tol = tol
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.store = store
        self.storage_options = storage_options
        self.cache_size = cache_size
        self.client = client
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -------------------------------------------------------------- features
    def _fit_features(self, X, y):
        """Fit the feature transformer on the training data; return it and the checked training features."""
        if self.features is None:
            return None, np.ones((X.shape[0], 1))
        if hasattr(self.features, "fit") and hasattr(self.features, "transform"):
            transformer = clone(self.features)
            F = transformer.fit_transform(X, y)
            return transformer, check_feature_matrix(F, X.shape[0])
        if callable(self.features):
            return self.features, check_feature_matrix(self.features(X), X.shape[0])
        raise TypeError(f"features must be a scikit-learn transformer, a callable or None; got "
                        f"{type(self.features).__name__}.")

    def predefined_features(self, X):
        """The predefined features φ_1(x) … φ_ℓ(x) of eq. 3, shape (n, ℓ), from the fitted transformer.

        ``X`` is checked as :meth:`predict` checks it (dtype, feature count and names, finite values), so the
        features function receives the validated array it receives in ``fit`` and ``predict``.
        """
        check_is_fitted(self)
        return self._predefined_features(self._validated_test_data(X))

    def _validated_test_data(self, X):
        """``X`` as :meth:`fit` passes it to the features: a float64 array (or CSR matrix) of the fitted width."""
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C", reset=False,
                          ensure_all_finite=False)
        check_finite(X, name="X", what="fitting or predicting")
        return X

    def _predefined_features(self, X):
        """φ(X) (eq. 3) at the rows of the validated ``X``, checked: ℓ columns, finite values."""
        if self.features_ is None:
            return np.ones((X.shape[0], 1))
        F = self.features_.transform(X) if hasattr(self.features_, "transform") else self.features_(X)
        F = np.asarray(F.toarray() if sp.issparse(F) else F, dtype=np.float64).reshape(X.shape[0], -1)
        if F.shape[1] != self.n_predefined_features_:
            raise ValueError(f"the features of X have {F.shape[1]} columns; the model was fitted with "
                             f"{self.n_predefined_features_}.")
        check_finite(F, name="the features of X", what="predicting")
        return F

    # -------------------------------------------------------------- fitting
    def fit(self, X, y):
        """Fit one generalized-bias SVM per binary problem (one-vs-one for several classes).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._validate_params()
        self._check_kernel_object("evaluates its kernel between test points and support vectors")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C", ensure_all_finite=False)
        check_finite(X, name="X", what="fitting or predicting")
        classes, y_index = self._training_classes(y)
        self.classes_ = classes
        self.features_, F = self._fit_features(X, y)
        self.n_predefined_features_ = F.shape[1]
        kernel = resolve_kernel(self.kernel, X, gamma=self.gamma, coef0=self.coef0, degree=self.degree)
        self._kernel = kernel
        problems = _multiclass.binary_problems(y_index, classes.shape[0], np.arange(X.shape[0]), "ovo")
        with client_for(self.client) as client:
            path = None if self.store is None else store_path(self.store, X, kernel, solver_precision(X.shape[0]),
                                                              self.storage_options)
            base, self.gram_dtype_ = training_gram(X, kernel, client, store_path=path, cache_size=self.cache_size,
                                                   storage_options=self.storage_options)
            fits = [self._fit_problem(base, index, y_pm, F, client) for index, y_pm in problems]
        support, _, pair_coef = _multiclass.support_and_coefficients(
            problems, [fit["coef"] for fit in fits], y_index, classes.shape[0])
        self.support_ = support
        self.support_vectors_ = X[support]
        self.pair_coef_ = pair_coef
        self.feature_coef_ = np.array([fit["feature_coef"] for fit in fits])
        self.objective_ = np.array([fit["objective"] for fit in fits])
        self.n_iter_ = np.array([fit["n_iter"] for fit in fits], dtype=np.int32)
        self.lambda_from_ = [fit["lambda_from"] for fit in fits]
        self.fit_status_ = int(not all(fit["converged"] for fit in fits))
        return self

    def _fit_problem(self, base, index, y_pm, F, client):
        rows = row_provider(subset_gram(base, index))
        max_iter = outer_iteration_cap(index.shape[0], None) if self.max_iter == -1 else self.max_iter
        return solve_generalized_bias(rows, y_pm, self.C, F[index], tol=self.tol, max_iter=max_iter,
                                      client=solver_client(rows, client), verbose=bool(self.verbose))

    # ----------------------------------------------------------- prediction
    def _pairwise_decision(self, X):
        """f of every binary problem (eq. 7), shape (n_test, n_problems)."""
        X = self._validated_test_data(X)
        K = np.asarray(self._kernel.block(X, self.support_vectors_), dtype=np.float64) if self.support_.size \
            else np.zeros((X.shape[0], 0))
        return K @ self.pair_coef_.T + self._predefined_features(X) @ self.feature_coef_.T

    def decision_function(self, X):
        """Decision values ``Σ c_i y_i Φ(x_i, x) + Σ λ_k φ_k(x)`` of the binary problems (eq. 7).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive for ``classes_[1]``); (n_samples, n_classes) for
        ``decision_function_shape="ovr"``, scikit-learn's one-vs-rest transform of the one-vs-one values;
        (n_samples, n_classes * (n_classes - 1) / 2) for ``"ovo"``, the one-vs-one values themselves.
        """
        check_is_fitted(self)
        dec = self._pairwise_decision(X)
        return _multiclass.decision_values(dec, self.classes_.shape[0], True, self.decision_function_shape)

    def predict(self, X):
        """Class labels: the sign for two classes, the one-vs-one votes otherwise (first class wins a tie)."""
        check_is_fitted(self)
        dec = self._pairwise_decision(X)
        return self.classes_[_multiclass.predicted_class(dec, self.classes_.shape[0], "ovo")]
