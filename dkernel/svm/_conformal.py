"""The two-pass conformal SVM :class:`ConformalSVC` (Williams, Li, Feng & Wu 2005; Amari & Wu 1999).

Pass 1 trains :class:`dkernel.SVC` with the base kernel ``K``. Pass 2 trains
an SVM on the lazy view ``K̃ = D K D`` (:class:`~dkernel.views.ConformalGram`,
Williams eq. 5) of the same training Gram, with ``D`` from the first pass:
``exp(-κ f(x)²)`` (eq. 8) or Amari & Wu's ``Σ_SV exp(-κ‖x - x_i‖²)`` (eq. 7).

The paper gives the second pass as eq. 1 with ``K̃`` in place of ``K`` and
says nothing of its bias; eq. 5 admits three readings (``bias``):

.. math::

    \\text{free:}\\quad \\tilde f(x) = D(x) \\sum_{s} \\tilde\\alpha_s y_s K(x, x_s) D(x_s) + \\tilde b,
    \\qquad \\textstyle\\sum_i \\tilde\\alpha_i y_i = 0;

    \\text{scaled:}\\quad \\tilde f(x) = D(x) \\Big(\\sum_{s} \\tilde\\alpha_s y_s K(x, x_s) D(x_s) + \\tilde b\\Big),
    \\qquad \\textstyle\\sum_i \\tilde\\alpha_i y_i D(x_i) = 0;

    \\text{none:}\\quad \\tilde f(x) = D(x) \\sum_{s} \\tilde\\alpha_s y_s K(x, x_s) D(x_s),
    \\qquad \\text{no equality constraint}.

"free" is eq. 1 taken literally with ``K̃``: far from the boundary ``D``
vanishes and ``f̃`` tends to the constant ``b̃``. "scaled" applies the
conformal map ``φ̃(x) = D(x) φ(x)`` to the whole first-pass hypothesis, its
constant feature included: the bias is the unregularized feature ``D(x)``
(the generalized bias of Li, Leung & Lee 2007 with the one feature ``D``).
"none" is the SVM without bias on ``K̃``. All three are evaluated through
the first-pass support vectors (for ``D(x)``) and the second-pass ones: no
training Gram is read at prediction.
"""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._runtime.client import client_for, is_dask_array
from .._runtime.validation import check_finite, materialize
from ..gram._sources import row_provider
from ..views._conformal import METHODS, ConformalFactor, ConformalGram
from . import _multiclass
from ._base import BaseSVM
from ._classes import SVC
from ._inputs import validate_predict_data
from ..kernels._parameters import ESTIMATOR_DEFAULTS
from ._predict import PREDICT_BLOCK_ROWS, map_row_blocks
from ._training import outer_iteration_cap, solver_client

__all__ = ["BIASES", "ConformalSVC", "load_conformal_model"]

#: The parameters shared by both passes (passed to each :class:`SVC`).
_SHARED = ("C", "tol", "shrinking", "max_iter", "working_set_size", "cache_size", "verbose")

#: The readings of the second pass's bias (see the module docstring).
BIASES = ("free", "scaled", "none")

#: ``exp(-t)`` rounds to 0 in float64 for ``t`` above about this (the smallest subnormal is ``exp(-744.4)``).
_EXP_UNDERFLOW = 745.0

#: The smallest positive float64 (a subnormal): the magnitude of a decision value whose product underflowed.
_SMALLEST_POSITIVE = float(np.nextafter(0.0, 1.0))


class ConformalSVC(BaseSVM):
    """Binary SVM trained twice: on ``K``, then on ``D(x) K(x, z) D(z)`` (Williams et al. eq. 5).

    Parameters
    ----------
    C : float, default=1.0
        Soft-margin parameter of both passes, in (0, inf]; ``np.inf`` is the hard margin.
    kernel, degree, gamma, coef0 :
        The base kernel, as in :class:`dkernel.SVC` (not ``"precomputed"`` nor a kernel function: ``D`` is
        evaluated at new points through it).
    conformal : {"williams", "amari-wu"}, default="williams"
        ``D(x) = exp(-κ f(x)²)`` (Williams eq. 8) or
        ``Σ_{i∈SV} exp(-κ‖x - x_i‖²)`` (Amari & Wu, Williams eq. 7).
    kappa : float > 0 or None, default=None
        κ of the factor. ``None``: ``1/|f|max`` over the training points
        (Williams §4) for ``"williams"``; the RBF ``gamma`` of the base kernel
        for ``"amari-wu"``.
    bias : {"free", "scaled", "none"}, default="free"
        The second pass's bias, in the three readings of eqs. 1 and 5 (module
        docstring): ``"free"``, eq. 1 with ``K̃``, a constant ``b̃`` under
        ``Σ α̃_i y_i = 0``; ``"scaled"``, ``D(x) b̃`` under
        ``Σ α̃_i y_i D(x_i) = 0``; ``"none"``, no bias and no equality
        constraint. The paper does not say which it used.
    tol, shrinking, max_iter, working_set_size, cache_size, verbose :
        Solver settings of both passes, as in :class:`dkernel.SVC`.
    store : str or path-like, default=None
        Keep the training Gram in a zarr store (as :class:`dkernel.SVC`); the
        second pass reads the first pass's store through the conformal view,
        so the Gram is computed once.
    storage_options : dict, default=None
        For a URL ``store``, as :class:`dkernel.SVC`'s; never saved.
    client : distributed.Client, str or False, default=None
        As in :class:`dkernel.SVC`; the conformal view travels to the workers
        as its base and the ``n`` values of ``D``.

    Attributes
    ----------
    first_pass_ : dkernel.SVC
        The SVM trained on ``K``.
    second_pass_ : dkernel.SVC
        The SVM trained on ``K̃`` (``kernel="precomputed"``: its
        ``decision_function`` takes ``K̃(X_test, X_train)``, and is the second
        pass's for ``bias="free"`` only). Its ``intercept_`` is ``b̃``: the
        constant (``"free"``), the coefficient of ``D(x)`` (``"scaled"``) or 0
        (``"none"``).
    factor_ : ConformalFactor
        ``D``, evaluated through the first-pass support vectors.
    kappa_ : float
    conformal_factor_ : ndarray of shape (n_samples,)
        ``D(x_i)`` at the training points.
    classes_, support_, support_vectors_, dual_coef_, intercept_, n_features_in_ :
        Those of the second pass (``support_vectors_`` are training points;
        ``intercept_`` is ``b̃`` as ``bias`` reads it).
    fit_status_ : int
        0 when the solvers of both passes converged, 1 otherwise.
    n_iter_ : ndarray of shape (1,), dtype int32
        Solver iterations of the one binary problem, both passes summed: the
        first pass's (on ``K``) plus the second pass's (on ``K̃``); each pass's
        own count is its ``n_iter_`` (``first_pass_.n_iter_``,
        ``second_pass_.n_iter_``).

    References
    ----------
    .. [1] P. Williams, S. Li, J. Feng and S. Wu, "Scaling the kernel function
       to improve performance of the support vector machine", ISNN 2005.
    """

    _parameter_constraints: dict = {
        **BaseSVM._parameter_constraints,
        "conformal": [StrOptions(set(METHODS))],
        "kappa": [Interval(Real, 0.0, None, closed="neither"), None],
        "bias": [StrOptions(set(BIASES))],
    }

    def __init__(self, C=1.0, kernel="rbf", degree=ESTIMATOR_DEFAULTS["degree"], gamma=ESTIMATOR_DEFAULTS["gamma"],
                 coef0=ESTIMATOR_DEFAULTS["coef0"], conformal="williams", kappa=None, bias="free", tol=1e-3,
                 shrinking=True, max_iter=-1, working_set_size=None, cache_size=None, store=None, storage_options=None,
                 client=None,
                 verbose=False):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.conformal = conformal
        self.kappa = kappa
        self.bias = bias
        self.tol = tol
        self.shrinking = shrinking
        self.max_iter = max_iter
        self.working_set_size = working_set_size
        self.cache_size = cache_size
        self.store = store
        self.storage_options = storage_options
        self.client = client
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary only: fit refuses more than two classes
        return tags

    def _shared(self):
        return {name: getattr(self, name) for name in _SHARED}

    # -------------------------------------------------------------- fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the first pass on ``K``, then the second on ``D K D``.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two classes

        Returns
        -------
        self
        """
        self._check_kernel_object("needs a kernel to evaluate D(x) at new points (with a Gram matrix of your own, "
                                  "train SVC(kernel='precomputed') on a dkernel.views.ConformalGram instead)")
        X, y = validate_data(self, materialize(X), y, dtype=[np.float64, np.float32], order="C",
                             ensure_all_finite=False)
        check_finite(X, name="X", what="fitting or predicting")
        _refuse_other_than_two_classes(self._training_classes(y)[0])
        with client_for(self.client) as client:
            first = SVC(kernel=self.kernel, degree=self.degree, gamma=self.gamma, coef0=self.coef0,
                        store=self.store, storage_options=self.storage_options, client=client if client is not None else False, **self._shared())
            first.fit(X, y)
            self._fit_second_pass(first, X, y, client)
        return self

    def fit_from_first_pass(self, first_pass, X, y):
        """Train only the second pass, on ``D K D`` with ``D`` from ``first_pass``, a :class:`SVC` fitted on ``X, y``.

        The base kernel is the first pass's; several factors (κ, method) can
        share one first pass this way. Raises
        :class:`~sklearn.exceptions.NotFittedError` for an unfitted first pass.
        """
        ConformalFactor.from_svc(first_pass, self.conformal, 1.0)  # refuses an unfitted or multiclass first pass
        X = materialize(X)
        # scikit-learn's check of the feature count (and names) against those the first pass was fitted with.
        validate_data(first_pass, X, reset=False, skip_check_array=True)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], order="C", ensure_all_finite=False)
        check_finite(X, name="X", what="fitting or predicting")
        if X.shape[0] != first_pass.shape_fit_[0]:
            raise ValueError(f"X has {X.shape[0]} rows but the first pass was fitted on {first_pass.shape_fit_[0]}.")
        _check_first_pass_rows(first_pass, X)
        _check_first_pass_labels(first_pass, y, self._training_classes(y)[0])
        with client_for(self.client) as client:
            self._fit_second_pass(first_pass, X, y, client)
        return self

    def _fit_second_pass(self, first, X, y, client):
        factor = ConformalFactor.from_svc(first, self.conformal, self.kappa, X_kappa=X)
        d = factor(X)
        _refuse_underflowed_factor(factor, X, d, self.kappa)
        view = ConformalGram(self._base_gram(first, X, client), d, factor)
        if self.bias == "free":
            second = SVC(kernel="precomputed", client=client if client is not None else False, **self._shared())
            second.fit(view, y)
        else:
            second = self._constrained_second_pass(view, y, d, client)
        self.first_pass_, self.second_pass_, self.factor_ = first, second, factor
        self.kappa_ = factor.kappa
        self.conformal_factor_ = d
        self.support_vectors_ = X[second.support_]
        self._set_second_pass_attributes()

    def _constrained_second_pass(self, view, y, d, client):
        """The second pass under ``bias="scaled"`` (equality row ``y ⊙ D``) or ``"none"`` (no row), as an SVC.

        The dual is eq. 1's with ``K̃`` and the equality row of the reading;
        :func:`dkernel.solver.solve_qp` returns ``b̃`` as the multiplier of
        that row (the coefficient of ``D(x)``). The solution is held in a
        ``kernel="precomputed"`` :class:`SVC`, the form in which a
        :class:`ConformalSVC` keeps and saves its second pass.
        """
        from ..solver import solve_qp

        classes, y_index = np.unique(y, return_inverse=True)
        problems = _multiclass.binary_problems(y_index, 2, np.arange(y.shape[0]), "ovo")
        y_pm = problems[0][1]
        E = (y_pm * d)[None, :] if self.bias == "scaled" else np.zeros((0, y.shape[0]))
        rows = row_provider(view)
        max_iter = outer_iteration_cap(rows.n, self.working_set_size) if self.max_iter == -1 else self.max_iter
        result = solve_qp(rows, y_pm, self.C, E=E, e=np.zeros(E.shape[0]), tol=self.tol, max_iter=max_iter,
                          working_set_size=self.working_set_size, client=solver_client(rows, client),
                          verbose=bool(self.verbose))
        b = float(result.intercept) if self.bias == "scaled" else 0.0
        fit = {"coef": result.alpha * y_pm, "intercept": b, "uncorrected": b, "delta_b": 0.0,
               "objective": result.objective, "n_iter": result.n_iter, "converged": result.converged}
        second = SVC(kernel="precomputed", client=False, **self._shared())
        second.classes_, second.class_weight_ = classes, np.ones(2)
        second._kernel, second._sparse, second.gram_dtype_ = None, False, "precomputed"
        second._probA, second._probB = np.empty(0), np.empty(0)
        second.shape_fit_ = (y.shape[0], y.shape[0])
        second.n_features_in_ = y.shape[0]
        second._store_fits(None, problems, [fit], y_index)
        return second

    def _base_gram(self, first, X, client):
        """The training Gram of the first pass: its store (computed once), else held as :class:`SVC` holds it."""
        if getattr(first, "store_path_", None) is not None:
            from ..gram import GramMatrix

            return GramMatrix.open(first.store_path_, storage_options=self.storage_options)
        from ._training import training_gram

        return training_gram(X, first._kernel, client, cache_size=self.cache_size)[0]

    def _set_second_pass_attributes(self):
        second = self.second_pass_
        self.classes_ = second.classes_
        self.support_ = second.support_
        self.dual_coef_ = second.dual_coef_
        self.intercept_ = second.intercept_
        self.fit_status_ = int(bool(self.first_pass_.fit_status_ or second.fit_status_))
        # Both passes' solver iterations, summed (each pass's own: first_pass_.n_iter_, second_pass_.n_iter_).
        self.n_iter_ = np.asarray(self.first_pass_.n_iter_ + second.n_iter_, dtype=np.int32)
        self._d_support = self.conformal_factor_[second.support_]

    # ----------------------------------------------------------- prediction
    def conformal_kernel(self, X):
        """``K̃(x, x_s) = D(x) K(x, x_s) D(x_s)`` between the rows of ``X`` and the second-pass support vectors."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], order="C", reset=False, ensure_all_finite=False)
        check_finite(X, name="X", what="fitting or predicting")
        K = np.asarray(self.first_pass_._kernel.block(X, self.support_vectors_), dtype=np.float64)
        return self.factor_(X)[:, None] * K * self._d_support[None, :]

    def decision_function(self, X):
        """The second-pass decision values ``f̃(x)`` (positive for ``classes_[1]``) of the ``bias`` reading,
        blockwise over the rows of ``X``.

        For ``bias="scaled"`` and ``"none"``, ``f̃(x) = D(x) g(x)`` with ``D > 0`` (module docstring), whose
        sign is that of the bracket ``g``. Far from the boundary the float64 product underflows although ``g``
        does not vanish (``D = exp(-κ f²)`` is 0 for ``κ f² > 745``): there the value is ``exp(log D + log|g|)``
        with the sign of ``g``, and at least the smallest positive float64 (``5e-324``) in magnitude, so its
        sign is never lost and :meth:`predict` is ``classes_[1]`` exactly where the value is > 0. Under
        ``"free"``, ``f̃ = D(x) g(x) + b̃`` (eq. 1) tends to ``b̃`` far away, as the paper's formula does.
        """
        check_is_fitted(self)
        if is_dask_array(X):
            return map_row_blocks(X, self.decision_function, None, np.float64)
        return self._blockwise(X, self._second_pass_decision)

    def _blockwise(self, X, values_of_block):
        """``values_of_block(rows, coef)`` over blocks of the rows of ``X``, checked first as :class:`SVC` checks it.

        The checks: a DataFrame's column names against those seen in fit (scikit-learn's ValueError for other or
        reordered columns), the number of features, no empty X, finite values.
        """
        X = validate_predict_data(self, X)
        coef = self.second_pass_._pair_coef[0]
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], PREDICT_BLOCK_ROWS):
            stop = min(start + PREDICT_BLOCK_ROWS, X.shape[0])
            out[start:stop] = values_of_block(X[start:stop], coef)
        return out

    def _kernel_sum(self, X, coef):
        """``Σ_s α̃_s y_s K(x, x_s) D(x_s)`` over the second-pass support vectors (eq. 1 with eq. 5's ``K̃``, less
        the factor ``D(x)``)."""
        K = np.asarray(self.first_pass_._kernel.block(X, self.support_vectors_), dtype=np.float64)
        return (K * self._d_support[None, :]) @ coef

    def _bracket(self, X, coef):
        """``g(x) = Σ_s α̃_s y_s K(x, x_s) D(x_s) + b̃`` of ``bias="scaled"`` (``b̃ = 0`` for ``"none"``): ``f̃ = D g``."""
        return self._kernel_sum(X, coef) + self.intercept_[0]

    def _second_pass_decision(self, X, coef):
        """``f̃`` at the rows of ``X`` (validated by :meth:`decision_function`): ``D(x) Σ α̃_s y_s K(x, x_s) D(x_s)
        + b̃`` (``"free"``, eq. 1 with ``K̃``) or ``D(x) g(x)`` (``"scaled"``, ``"none"``; see :meth:`_bracket`)."""
        d = self.factor_(X)
        if self.bias == "free":
            return d * self._kernel_sum(X, coef) + self.intercept_[0]
        return _signed_product(d, self._bracket(X, coef), lambda rows: self.factor_.log(X[rows]))

    def predict(self, X):
        """Class labels of ``X``: ``classes_[1]`` where the decision value is > 0.

        For ``bias="scaled"`` and ``"none"`` that is where the bracket ``g(x)`` of ``f̃ = D(x) g(x)`` is > 0
        (``D > 0``), read from ``g`` itself, so that it holds where ``D(x)`` underflows to 0 in float64.
        """
        check_is_fitted(self)
        if is_dask_array(X):
            return map_row_blocks(X, self.predict, None, self.classes_.dtype)
        sign_source = self._second_pass_decision if self.bias == "free" else self._bracket
        return self.classes_[(self._blockwise(X, sign_source) > 0).astype(np.intp)]


def _signed_product(d, g, log_d_at):
    """``D(x) g(x)`` (the second pass of ``bias="scaled"``/``"none"``), its sign kept where the product underflows.

    Where the float64 product is 0 but ``g ≠ 0``, the value is ``sign(g) exp(log D + log|g|)`` (``log_d_at(rows)``
    gives ``log D`` there, Williams eq. 14), and at least the smallest positive float64 in magnitude.
    """
    product = d * g
    lost = np.flatnonzero((product == 0) & (g != 0))
    if lost.size:
        with np.errstate(under="ignore"):
            magnitude = np.exp(log_d_at(lost) + np.log(np.abs(g[lost])))
        product[lost] = np.copysign(np.maximum(magnitude, _SMALLEST_POSITIVE), g[lost])
    return product


def _check_first_pass_rows(first_pass, X):
    """A :class:`ValueError` unless the first pass's support vectors are the rows of ``X`` at its ``support_``.

    Exact and cheap: a first pass fitted on other data of as many rows is refused (compared in the narrower of
    the two float dtypes, so a float32 first pass accepts the float64 data it was cast from).
    """
    sv = getattr(first_pass, "support_vectors_", None)
    if sv is None or sp.issparse(sv) or sv.size == 0:
        return
    narrow = np.float32 if np.float32 in (np.dtype(sv.dtype), np.dtype(X.dtype)) else np.float64
    rows = X[np.asarray(first_pass.support_, dtype=np.intp)]
    if rows.shape != sv.shape or not np.array_equal(rows.astype(narrow), np.asarray(sv).astype(narrow)):
        raise ValueError("the first pass was not fitted on this X: its support vectors (support_vectors_) differ "
                         "from the rows of X at its support_ indices. fit_from_first_pass needs the X (and y) the "
                         "first pass was fitted on.")


def _refuse_other_than_two_classes(classes):
    """scikit-learn's refusal of a multiclass ``y`` by a binary classifier, saying why ``ConformalSVC`` is one."""
    if classes.shape[0] != 2:
        raise ValueError(f"Only binary classification is supported: ConformalSVC is a binary classifier (D is "
                         f"built from one decision function f); y has {classes.shape[0]} "
                         f"class{'es' if classes.shape[0] != 1 else ''}.")


def _check_first_pass_labels(first_pass, y, classes):
    """A :class:`ValueError` unless ``y`` has the first pass's two classes and its labels at the first pass's
    support vectors (the class of each is the sign of its dual coefficient, positive for ``classes_[1]``)."""
    _refuse_other_than_two_classes(classes)
    if not np.array_equal(classes, first_pass.classes_):
        raise ValueError(f"y has the classes {classes.tolist()} but the first pass was fitted on "
                         f"{np.asarray(first_pass.classes_).tolist()}. fit_from_first_pass needs the X and y the "
                         f"first pass was fitted on.")
    support = np.asarray(first_pass.support_, dtype=np.intp)
    fitted = first_pass.classes_[(np.asarray(first_pass.dual_coef_)[0] > 0).astype(np.intp)]
    differ = np.flatnonzero(y[support] != fitted)
    if differ.size:
        raise ValueError(f"the first pass was not fitted on this y: {differ.size} of its {support.size} support "
                         f"vectors have another label in y (sample {int(support[differ[0]])}: "
                         f"{y[support[differ[0]]].tolist()!r} in y, {fitted[differ[0]].tolist()!r} in the first "
                         f"pass). "
                         f"fit_from_first_pass needs the X and y the first pass was fitted on.")


def _refuse_underflowed_factor(factor, X, d, kappa):
    """A clear :class:`ValueError` before the second pass where ``D(x_i)`` underflowed to 0 in float64.

    ``D`` is the paper's (eq. 8 ``exp(-κ f²)`` or eq. 7), not altered: the message names ``kappa`` and the
    first pass's largest ``|f|`` (or the distance to the support vectors) and what to change.
    """
    n_zero = int(np.count_nonzero(~(d > 0)))
    if n_zero == 0:
        return
    k = factor.kappa
    given = f"kappa={kappa!r}" if kappa is not None else f"kappa=None (κ = 1/|f|max = {k:.6g})"
    where = f"at {n_zero} of the {d.shape[0]} training points"
    if factor.method == "williams":
        f_max = float(np.max(np.abs(factor.decision(X))))
        cause = (f"D(x) = exp(-kappa f(x)²) underflows to 0 in float64 {where} (exp(-t) is 0 for t > "
                 f"{_EXP_UNDERFLOW:g}): the first pass's largest |f(x)| is {f_max:.6g}, so kappa * |f|max² = "
                 f"{k * f_max * f_max:.6g}. Scale the data (e.g. sklearn.preprocessing.StandardScaler) or give "
                 f"a smaller kappa (kappa * |f|max² ≤ {_EXP_UNDERFLOW:g}: kappa ≤ {_EXP_UNDERFLOW / f_max**2:.3g}).")
    else:
        cause = (f"D(x) = Σ_SV exp(-kappa ‖x - x_i‖²) underflows to 0 in float64 {where}, farther than "
                 f"sqrt({_EXP_UNDERFLOW:g} / kappa) = {np.sqrt(_EXP_UNDERFLOW / k):.6g} from every first-pass "
                 f"support vector. Scale the data (e.g. sklearn.preprocessing.StandardScaler) or give a smaller "
                 f"kappa.")
    raise ValueError(f"ConformalSVC cannot train its second pass with {given}: {cause}")


def load_conformal_model(path):
    """Read a :class:`ConformalSVC` written by :meth:`ConformalSVC.save`."""
    return ConformalSVC.load(path)
