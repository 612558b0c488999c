"""Conformal transformation of a kernel by a first-pass SVM (Williams, Li, Feng & Wu 2005; Amari & Wu 1999).

A first SVM, trained with a kernel ``K``, locates the class boundary; the
second is trained with the conformally transformed kernel (Williams eq. 5)

.. math::

    \\tilde K(x, z) = D(x)\\, K(x, z)\\, D(z),

which magnifies the metric that ``K`` induces in input space where ``D`` is
large. Two factors ``D``:

=========================== ================================================ ==============
``method``                  ``D(x)``                                          paper
=========================== ================================================ ==============
``"williams"``              ``exp(-κ f(x)²)``, ``f`` the first-pass decision  Williams eq. 8
``"amari-wu"``              ``Σ_{i∈SV} exp(-κ ‖x - x_i‖²)``                    Williams eq. 7
=========================== ================================================ ==============

Both are evaluated for any point through the first-pass support vectors
(:class:`ConformalFactor`), so predicting with the second SVM needs no
training Gram. Williams' κ rule (§4) is ``κ = 1/|f|max``; :func:`kappa_rule`
takes the maximum over the decision values it is given — the training points
in :class:`~dkernel.svm.ConformalSVC`.

:class:`ConformalGram` is the lazy view ``D_i K_ij D_j`` over any Gram
source, read by rows, blocks or as a dask array, written to a store with
``to_zarr``, and sent to the solver's Dask workers as a small spec (its base
and the ``n`` values of ``D``), as the other views of :mod:`dkernel.views`.
:func:`magnification_ratio` is eq. 15, the change of the volume element
that the paper's Fig. 1(c) draws.

References
----------
.. [1] P. Williams, S. Li, J. Feng and S. Wu, "Scaling the kernel function to
   improve performance of the support vector machine", ISNN 2005, LNCS 3496.
.. [2] S. Amari and S. Wu, "Improving support vector machine classifiers by
   modifying kernel functions", Neural Networks 12 (1999).
"""

import math

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..gram._sources import as_gram
from ..kernels._kernels import RBFKernel
from ._base import _base_cross, _base_cross_diag, _base_describe, _GramView, scaled_block

__all__ = [
    "METHODS",
    "ConformalFactor",
    "ConformalGram",
    "amari_wu_factor",
    "check_kappa",
    "kappa_rule",
    "magnification_ratio",
    "williams_factor",
]

#: The conformal factors: Williams et al. eq. 8 and Amari & Wu's eq. 7.
METHODS = ("williams", "amari-wu")

#: Rows of new points evaluated at once against the support vectors.
_BLOCK_ROWS = 4096


def check_kappa(kappa, name="kappa"):
    """``kappa`` as a float; a :class:`ValueError` unless it is a finite number > 0."""
    try:
        value = float(kappa)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number > 0; got {kappa!r}.") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0 (D(x) = exp(-κ f(x)²) must decay from the "
                         f"boundary); got {kappa!r}.")
    return value


def kappa_rule(decisions):
    """Williams' κ = 1/|f|max (§4), the maximum taken over the decision values ``decisions``."""
    f_max = float(np.max(np.abs(np.asarray(decisions, dtype=np.float64))))
    if not (math.isfinite(f_max) and f_max > 0):
        raise ValueError(f"κ = 1/|f|max needs a first-pass decision function that is not zero everywhere; "
                         f"|f|max = {f_max!r}. Pass kappa explicitly.")
    return 1.0 / f_max


def williams_factor(decisions, kappa):
    """``D(x) = exp(-κ f(x)²)`` from first-pass decision values ``f(x)`` (Williams eq. 8)."""
    f = np.asarray(decisions, dtype=np.float64)
    return np.exp(-check_kappa(kappa) * f * f)


def amari_wu_factor(X, support_vectors, kappa):
    """``D(x) = Σ_{i∈SV} exp(-κ ‖x - x_i‖²)`` (Amari & Wu; Williams eq. 7), blockwise over the rows of ``X``."""
    gauss = RBFKernel(gamma=check_kappa(kappa))
    X = np.asarray(X, dtype=np.float64)
    sv = np.asarray(support_vectors, dtype=np.float64)
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        out[start:start + _BLOCK_ROWS] = np.asarray(gauss.block(X[start:start + _BLOCK_ROWS], sv)).sum(axis=1)
    return out


def log_amari_wu_factor(X, support_vectors, kappa):
    """``log D(x) = log Σ_{i∈SV} exp(-κ ‖x - x_i‖²)`` (the log of Williams eq. 7), finite where ``D`` underflows.

    Evaluated as a log-sum-exp of ``-κ ‖x - x_i‖²``, blockwise over the rows of ``X``.
    """
    from scipy.special import logsumexp

    kappa = check_kappa(kappa)
    X = np.asarray(X, dtype=np.float64)
    sv = np.asarray(support_vectors, dtype=np.float64)
    sv_norms = (sv * sv).sum(axis=1)
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        block = X[start:start + _BLOCK_ROWS]
        sq_dist = np.maximum((block * block).sum(axis=1)[:, None] + sv_norms[None, :] - 2.0 * block @ sv.T, 0.0)
        out[start:start + _BLOCK_ROWS] = logsumexp(-kappa * sq_dist, axis=1)
    return out


def magnification_ratio(decisions, gradients, kappa, sigma):
    """The ratio of the new to the old magnification factor for an RBF kernel (Williams eq. 15).

    .. math::

        \\sqrt{\\tilde g(x) / g(x)} = e^{-n κ f(x)^2} \\sqrt{1 + 4 κ^2 σ^2 f(x)^2 \\|\\nabla f(x)\\|^2}

    for ``K = exp(-‖x - z‖²/(2σ²))`` (eq. 9) and ``D = exp(-κ f²)``.

    Parameters
    ----------
    decisions : array of shape (m,)
        ``f(x)`` at the points.
    gradients : array of shape (m, n)
        ``∇f(x)`` at the points; ``n`` is the input dimension.
    kappa : float
    sigma : float
        The width σ of eq. 9.
    """
    f = np.asarray(decisions, dtype=np.float64)
    grad = np.asarray(gradients, dtype=np.float64)
    if grad.ndim != 2 or grad.shape[0] != f.shape[0]:
        raise ValueError(f"gradients must have shape (m, n) with m = {f.shape[0]}; got {grad.shape}.")
    kappa = check_kappa(kappa)
    n = grad.shape[1]
    return np.exp(-n * kappa * f * f) * np.sqrt(1.0 + 4.0 * kappa**2 * sigma**2 * f * f * (grad * grad).sum(axis=1))


class ConformalFactor:
    """``D(x)`` of a fitted binary first-pass SVM, evaluated through its support vectors only.

    Parameters
    ----------
    method : {"williams", "amari-wu"}
    kappa : float
        κ > 0 of eq. 8 or eq. 7.
    kernel : dkernel Kernel
        The first-pass kernel (``"williams"`` evaluates ``f`` with it).
    support_vectors : ndarray of shape (n_sv, n_features)
    dual_coef : ndarray of shape (n_sv,)
        ``α_s y_s`` of the first pass, in the sign of its ``decision_function``.
    intercept : float
    """

    def __init__(self, method, kappa, *, kernel, support_vectors, dual_coef, intercept):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}.")
        self.method = method
        self.kappa = check_kappa(kappa)
        self.kernel = kernel
        self.support_vectors = np.asarray(support_vectors)
        self.dual_coef = np.asarray(dual_coef, dtype=np.float64).ravel()
        self.intercept = float(intercept)

    @classmethod
    def from_svc(cls, svc, method="williams", kappa=None, X_kappa=None):
        """The factor of a fitted binary :class:`dkernel.SVC` trained with a kernel (not ``"precomputed"``).

        ``kappa=None`` is the paper's default: ``1/|f|max`` over ``X_kappa``
        for ``"williams"`` (:func:`kappa_rule`), the RBF width ``gamma`` of
        the first-pass kernel for ``"amari-wu"`` (the paper gives no value).
        """
        try:
            check_is_fitted(svc)
        except NotFittedError:
            raise NotFittedError(
                f"the conformal factor needs a fitted first-pass SVM; this {type(svc).__name__} is not fitted: "
                f"call fit(X, y) first."
            ) from None
        if svc.classes_.shape[0] != 2:
            raise ValueError(f"the conformal factor is defined for a binary first pass; this one has "
                             f"{svc.classes_.shape[0]} classes.")
        kernel = getattr(svc, "_kernel", None)
        if kernel is None or getattr(svc, "normalize", False) or getattr(svc, "centering", None) is not None:
            raise ValueError("the conformal factor needs a first pass trained with a plain dkernel kernel (not "
                             "'precomputed', a kernel function, normalize or centering).")
        factor = cls(method, 1.0, kernel=kernel, support_vectors=svc.support_vectors_,
                     dual_coef=svc._pair_coef[0], intercept=svc.intercept_[0])
        if kappa is None:
            kappa = factor.default_kappa(X_kappa)
        factor.kappa = check_kappa(kappa)
        return factor

    def default_kappa(self, X_kappa):
        """κ when none is given: ``1/|f|max`` over ``X_kappa`` (Williams), the kernel's ``gamma`` (Amari & Wu)."""
        if self.method == "williams":
            if X_kappa is None:
                raise ValueError("κ = 1/|f|max needs the points to take the maximum over (X_kappa).")
            return kappa_rule(self.decision(X_kappa))
        gamma = getattr(self.kernel, "gamma", None)
        if not isinstance(self.kernel, RBFKernel) or gamma is None:
            raise ValueError("Amari & Wu's κ has no default for a non-RBF first-pass kernel; pass kappa.")
        return float(gamma)

    def decision(self, X):
        """The first-pass decision function ``f(x) = Σ α_s y_s K(x_s, x) + b`` (Williams eq. 1)."""
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], _BLOCK_ROWS):
            K = np.asarray(self.kernel.block(X[start:start + _BLOCK_ROWS], self.support_vectors), dtype=np.float64)
            out[start:start + _BLOCK_ROWS] = K @ self.dual_coef + self.intercept
        return out

    def __call__(self, X):
        """``D(x)`` at the rows of ``X``."""
        if self.method == "williams":
            return williams_factor(self.decision(X), self.kappa)
        return amari_wu_factor(X, self.support_vectors, self.kappa)

    def log(self, X):
        """``log D(x)`` at the rows of ``X``: ``-κ f(x)²`` (Williams eq. 14) or the log of eq. 7.

        Finite where ``D(x)`` itself underflows to 0 in float64 (``κ f² > 745`` for eq. 8).
        """
        if self.method == "williams":
            f = self.decision(X)
            return -self.kappa * f * f
        return log_amari_wu_factor(X, self.support_vectors, self.kappa)

    def __repr__(self):
        return f"ConformalFactor(method={self.method!r}, kappa={self.kappa:.6g}, n_sv={self.dual_coef.shape[0]})"


class ConformalGram(_GramView):
    """The conformally transformed Gram ``D_i K_ij D_j`` (Williams eq. 5), a lazy view.

    Parameters
    ----------
    base : Gram source
        A :class:`~dkernel.gram.GramMatrix`, a :class:`KernelGram`, another
        view, or a square ndarray.
    factor_values : array of shape (n,)
        ``D(x_i)`` at the training points, all > 0.
    factor : ConformalFactor, optional
        ``D`` for new points, needed by :meth:`cross` and :meth:`cross_diag`.
    """

    def __init__(self, base, factor_values, factor=None):
        self.base = as_gram(base)
        d = np.asarray(factor_values, dtype=np.float64).ravel()
        if d.shape[0] != self.base.n:
            raise ValueError(f"factor_values has {d.shape[0]} values but the Gram matrix has {self.base.n} rows.")
        if not (np.all(np.isfinite(d)) and np.all(d > 0)):
            raise ValueError("factor_values must be finite and > 0 (a conformal factor D(x) is positive).")
        self._vector = d
        self.factor = factor

    _apply = staticmethod(scaled_block)

    @property
    def factor_values(self):
        """``D(x_i)`` at the training points."""
        return self._vector

    def diag(self):
        """``D_i² K_ii``."""
        return np.asarray(self.base.diag(), dtype=np.float64) * self._vector**2

    def _new_factor(self, X_new):
        if self.factor is None:
            raise ValueError("kernel values for new points need D(x) there: build the view with "
                             "factor=ConformalFactor(...).")
        return self.factor(np.asarray(X_new))

    def cross(self, X_new, X_train=None, columns=None):
        """``D(x) K(x, x_i) D(x_i)`` for new points ``x`` against the training points (``columns`` of them)."""
        d_new = self._new_factor(X_new)
        K = _base_cross(self.base, X_new, X_train, columns=columns)
        d = self._vector if columns is None else self._vector[np.asarray(columns, dtype=np.intp)]
        return scaled_block(K, d_new, d)

    def cross_diag(self, X_new, X_train=None):
        """``D(x)² K(x, x)``."""
        d_new = self._new_factor(X_new)
        return np.asarray(_base_cross_diag(self.base, X_new, X_train), dtype=np.float64) * d_new**2

    def _step(self):
        step = {"name": "conformal"}
        if self.factor is not None:
            step.update(method=self.factor.method, kappa=self.factor.kappa)
        return step

    def describe(self):
        return {**self._step(), "base": _base_describe(self.base)}
