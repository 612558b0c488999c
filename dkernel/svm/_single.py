"""What :class:`~dkernel.svm.SVR` and :class:`~dkernel.svm.OneClassSVM` share: one dual problem on one Gram.

X → kernel → Gram (in memory, in a zarr store, rows on demand or on the fly; as :class:`~dkernel.svm.SVC`'s,
:mod:`._training`) → the samples of positive weight → the origin of the feature space (Meilă eq. 14) → the
problem's row provider → the solver (with its linear term ``p`` and right-hand side ``e``) → one expansion
``f(x) = Σ_i c_i K(x, x_i) + b`` in the original kernel (Meilă eq. 16), evaluated as :class:`SVC`'s decision
values (:mod:`._predict`).

Each estimator states its problem (:meth:`SingleProblemSVM._problem`: labels, bounds, ``p``, ``e``, start, and
the expansion from the solution); this module validates the data, builds the Gram, runs the solver and keeps the
model in scikit-learn's attributes (``support_``, ``support_vectors_``, ``dual_coef_``, ``intercept_``,
``n_support_``, ``n_iter_``, ``fit_status_``, ``shape_fit_``).
"""

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._runtime.client import client_for, is_dask_array
from .._runtime.threads import BlasThreads
from .._runtime.validation import check_finite, materialize
from ..centering._origins import Centering
from ..gram._sources import row_provider, subset_gram
from ..kernels._parameters import resolve_kernel
from ._base import BaseKernelSVM, linear_weights
from ._inputs import (
    callable_test_gram,
    is_gram_source,
    seed_from,
    sklearn_sparse,
    validate_fit_data,
    validate_predict_data,
)
from ._predict import map_row_blocks, pairwise_decision
from ._training import (
    estimator_gram,
    outer_iteration_cap,
    solve_qp,
    solver_client,
)

__all__ = ["ORIGIN_CONSTRAINTS", "SingleProblemSVM", "origin_of", "sample_upper_bounds"]

#: The message of scikit-learn (libsvm) when no sample has a positive weight.
NO_POSITIVE_WEIGHT = ("Invalid input - all samples have zero or negative weights: sample_weight leaves no sample "
                      "to train on.")


def sample_upper_bounds(C, sample_weight, n):
    """``C_i = C · sample weight`` (libsvm's ``C · W_i``); a weight of zero or less removes the sample.

    Returns ``(C_i, keep)``: the bounds of every sample and the indices of those with a positive one.
    """
    C_i = np.full(n, float(C))
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        if sw.shape[0] != n:
            raise ValueError(f"sample_weight and X have incompatible shapes: sample_weight has {sw.shape[0]} entries "
                             f"but there are {n} samples.")
        if not np.isfinite(sw).all():
            bad = np.flatnonzero(~np.isfinite(sw))
            raise ValueError(f"sample_weight has {bad.size} NaN or infinite values (first at position {bad[0]}); "
                             f"give every sample a finite weight (zero or negative removes it).")
        C_i = C_i * np.maximum(sw, 0.0)
    keep = np.flatnonzero(C_i > 0)
    if keep.size == 0:
        raise ValueError(NO_POSITIVE_WEIGHT)
    return C_i, keep


def origin_of(centering, centering_sample, n, rng):
    """The origin of the feature space for ``n`` training samples: None, ``"standard"`` (the centre of gravity,
    γ = 1/n), represented by a sample of ``centering_sample`` points (Meilă §5), or an explicit :class:`Centering`."""
    if centering is None:
        return None
    if isinstance(centering, Centering):
        if centering.n != n:
            raise ValueError(f"the Centering is defined for n={centering.n} points but {n} samples are trained on "
                             f"(those of positive weight); build it for these samples.")
        return centering
    if centering_sample is not None:
        seed = int(rng.integers(2**31 - 1))
        return Centering.sampled(n, centering_sample, scheme="standard", random_state=seed)
    return Centering.standard(n)


def _check_finite_kernel(K, name, what):
    """Non-finite values of a real precomputed kernel named before its shape (scikit-learn's order of checks);
    other arrays are left to the validation that follows."""
    K = np.asarray(K)
    if K.dtype.kind in "fiu":
        check_finite(K, name=name, what=what)


class SingleProblemSVM(BaseKernelSVM):
    """The fit and the decision values of an SVM with one dual problem (not used on its own)."""

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed
        tags.input_tags.sparse = not self._precomputed
        return tags

    # -------------------------------------------------------------- fitting
    def _fit(self, X, y, sample_weight):
        """Validate, build the Gram of the samples of positive weight, solve :meth:`_problem` and keep the model."""
        if self.centering_sample is not None and self.centering is None:
            raise ValueError("centering_sample is set but centering is None; choose a centering scheme.")
        X_given = X
        if self._precomputed and not is_gram_source(X) and not sp.issparse(X):
            # Non-finite values named before the shape (scikit-learn's order of checks).
            X = materialize(X)
            _check_finite_kernel(X, "the precomputed Gram matrix", "fitting")
        X, y = validate_fit_data(self, X, y)
        y = self._targets(y)
        if self._callable_kernel:  # as scikit-learn's: (n_samples,) for what a kernel function takes without a shape
            self.shape_fit_ = tuple(X_given.shape) if hasattr(X_given, "shape") else (X.shape[0],)
        else:
            self.shape_fit_ = tuple(X.shape)
        n = X.shape[0]
        C_i, keep = sample_upper_bounds(self._upper_bound, sample_weight, n)
        kernel = None if self._callable_kernel else resolve_kernel(
            self.kernel, X, gamma=self.gamma, coef0=self.coef0, degree=self.degree)
        self._kernel = kernel
        self._sparse = bool(sp.issparse(X)) and not self._gram_given
        rng = np.random.default_rng(seed_from(getattr(self, "random_state", None)))
        origin = origin_of(self.centering, self.centering_sample, keep.shape[0], rng)
        blas = BlasThreads()
        with client_for(self.client) as client:
            base = self._training_gram(X, kernel, client, blas, on_demand=origin is None and keep.shape[0] == n)
            gram = subset_gram(base, keep, copy=origin is not None or client is not None)
            h = h0 = None
            if origin is not None:
                from ..views._centered import CenteredGram  # imported when used: the operators bring in the zarr store

                gram = CenteredGram(row_provider(gram), origin)
                h, h0 = gram.h, gram.h0
            problem = self._problem(y[keep], C_i[keep])
            self._check_origin(origin, problem)
            result = self._solve(problem["rows"](row_provider(gram)), problem, client, blas)
        coef, intercept = problem["expansion"](result)
        self.objective_ = float(result.objective)
        self.uncorrected_intercept_ = float(intercept)
        intercept, coef, self.delta_b_ = self._original_kernel(coef, intercept, origin, h, h0)
        self._store(X, keep, coef, intercept, result)
        if self._callable_kernel:
            # Prediction evaluates the kernel function against the support vectors only.
            self._support_data = _safe_indexing(X_given, self.support_)
        return self

    def _check_origin(self, origin, problem):
        """Warn where the origin makes the problem degenerate (nothing by default)."""

    def _training_gram(self, X, kernel, client, blas, on_demand=False):
        """The Gram source of the training data; records how it is held in ``gram_dtype_`` (as :class:`SVC`)."""
        return estimator_gram(self, X, kernel, client, blas, on_demand=on_demand)

    def _solve(self, rows, problem, client, blas):
        """The solver on ``rows`` with the problem's labels, bounds, ``p``, ``e`` and start (as :func:`fit_binary`)."""
        max_iter = outer_iteration_cap(rows.n, self.working_set_size) if self.max_iter == -1 else self.max_iter
        client = solver_client(rows, client)
        y = problem["y"]
        return solve_qp(rows, y, problem["C"], client=client, blas=blas, p=problem["p"], E=problem.get("E", y),
                        e=problem["e"], alpha0=problem["alpha0"], tol=self.tol,
                        working_set_size=self.working_set_size, max_iter=max_iter, verbose=bool(self.verbose),
                        shrinking=bool(self.shrinking),
                        checkpoint=self._solver_checkpoint())

    def _solver_checkpoint(self):
        """The solver's :class:`~dkernel.solver.Checkpoint` of ``checkpoint``; None, importing nothing, without."""
        if self.checkpoint is None:
            return None
        from ..solver._checkpoint import as_checkpoint  # the checkpoint's code: imported when used

        return as_checkpoint(self.checkpoint, getattr(self, "storage_options", None))

    @staticmethod
    def _original_kernel(coef, intercept, origin, h, h0):
        """The expansion in the original kernel of one trained on the Gram centered at ``origin`` (Meilă eq. 16).

        ``Σ_i c_i K_a(x, x_i) + b = Σ_i (c_i − S γ_i) K(x, x_i) + b − cᵀh + S h0`` with ``S = Σ_i c_i``: when
        ``S = 0`` (the regression SVM, as the classifier) only the intercept moves, by Meilă's Δb = cᵀh (eq. 19);
        otherwise (the one-class SVM, whose ``Σ α = ν n``) the origin's points join the expansion with ``−S γ``.
        Returns ``(intercept, coef, delta_b)``, ``delta_b`` being the whole change of the intercept.
        """
        if origin is None:
            return intercept, coef, 0.0
        total = float(coef.sum())
        delta_b = float(coef @ h) - total * h0
        if total != 0.0:
            coef = coef - total * origin.dense()
        return intercept - delta_b, coef, delta_b

    def _store(self, X, keep, coef, intercept, result):
        nonzero = np.flatnonzero(coef != 0)
        self.support_ = keep[nonzero].astype(np.int32)
        self._coef = coef[nonzero][None, :]
        self._n_support = np.array([nonzero.shape[0], nonzero.shape[0]], dtype=np.int32)
        self.dual_coef_ = sklearn_sparse(sp.csr_matrix(self._coef)) if self._sparse else self._coef
        self.intercept_ = np.array([intercept])
        self.n_iter_ = int(result.n_iter)
        self.fit_status_ = int(not result.converged)
        self.support_vectors_ = np.empty((0, 0)) if self._gram_given else X[self.support_]

    # ------------------------------------------------------ fitted views
    @property
    def n_support_(self):
        """The number of support vectors, as an array of one int32 (scikit-learn's)."""
        try:
            check_is_fitted(self)
        except NotFittedError as error:
            raise AttributeError(f"n_support_ is defined once the {type(self).__name__} is fitted.") from error
        return self._n_support[:1]

    @property
    def coef_(self):
        """Weights of the features, shape (1, n_features), read-only; ``kernel="linear"`` only."""
        return linear_weights(self.kernel, self._coef, self.support_vectors_)

    # ----------------------------------------------------------- prediction
    def _decision(self, X):
        """``Σ_i c_i K(x, x_i) + b`` over the support vectors, shape (n_test,); a dask array stays lazy."""
        if is_dask_array(X):
            check_is_fitted(self)
            return map_row_blocks(X, lambda block: self._decision(block)[:, None], 1, np.float64)[:, 0]
        if self._precomputed and not is_gram_source(X) and not sp.issparse(X):
            check_is_fitted(self)
            X = materialize(X)
            _check_finite_kernel(X, "the precomputed test kernel", "predicting")
        X = validate_predict_data(self, X)
        if self._callable_kernel:
            n_sv = self.support_.shape[0]
            K = callable_test_gram(self.kernel, X, self._support_data, n_sv)
            return pairwise_decision(K, None, None, np.arange(n_sv), self._coef, self.intercept_)[:, 0]
        kernel = None if self._precomputed else self._kernel
        return pairwise_decision(X, kernel, self.support_vectors_, self.support_, self._coef, self.intercept_)[:, 0]


#: The parameters of the origin, shared by :class:`SVR` and :class:`OneClassSVM` (class-balanced origins need labels).
ORIGIN_CONSTRAINTS = {
    "centering": [StrOptions({"standard"}), Centering, None],
    "centering_sample": [Interval(Integral, 2, None, closed="left"), None],
}
