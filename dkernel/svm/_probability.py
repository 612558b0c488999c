"""Probability estimates of :class:`~dkernel.svm.SVC`: libsvm's Platt scaling and pairwise coupling.

Each binary problem gets a sigmoid ``P(y=+1 | f) = 1 / (1 + exp(A f + B))``
(Platt 1999) fitted to decision values that the training points receive
from models not trained on them (an internal 5-fold cross-validation, as
libsvm), by Newton's method with backtracking on the prior-corrected
targets of Lin, Lin & Weng (2007, Algorithm 1). Several classes are joined
by the pairwise coupling of Wu, Lin & Weng (2004, method 2, eq. 21), as
libsvm's ``multiclass_probability``; one-vs-rest problems are normalized to
sum to one. :class:`PlattProbabilityMixin` gives the estimator
``predict_proba``, ``predict_log_proba``, ``probA_`` and ``probB_``.

References
----------
.. [1] J. Platt, "Probabilistic outputs for support vector machines and
   comparisons to regularized likelihood methods", 1999.
.. [2] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's probabilistic
   outputs for support vector machines", Machine Learning 68, 2007.
.. [3] T.-F. Wu, C.-J. Lin and R. C. Weng, "Probability estimates for
   multi-class classification by pairwise coupling", JMLR 5, 2004.
"""

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._runtime.client import is_dask_array
from ._inputs import validate_predict_data
from ._predict import map_row_blocks

#: Folds of the internal cross-validation that gives the decision values the sigmoids are fitted to (libsvm).
N_FOLDS = 5

#: Pairwise probabilities are clipped to [MIN_PROBABILITY, 1 - MIN_PROBABILITY] before coupling (libsvm).
MIN_PROBABILITY = 1e-7


def _sigmoid_loss_terms(fApB, t):
    """``t·(Af+B) + log(1 + exp(-(Af+B)))`` per point, written stably on both signs of ``Af+B`` (libsvm)."""
    positive = fApB >= 0
    out = np.empty_like(fApB)
    out[positive] = t[positive] * fApB[positive] + np.log1p(np.exp(-fApB[positive]))
    neg = ~positive
    out[neg] = (t[neg] - 1.0) * fApB[neg] + np.log1p(np.exp(fApB[neg]))
    return out


def sigmoid_predict(dec, A, B):
    """``1 / (1 + exp(A f + B))``, evaluated without overflow on both signs of ``A f + B`` (libsvm)."""
    fApB = np.asarray(dec, dtype=np.float64) * A + B
    out = np.empty_like(fApB)
    positive = fApB >= 0
    e = np.exp(-fApB[positive])
    out[positive] = e / (1.0 + e)
    out[~positive] = 1.0 / (1.0 + np.exp(fApB[~positive]))
    return out


def sigmoid_train(dec, labels, *, max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5):
    """Platt's sigmoid ``(A, B)`` fitted to decision values ``dec`` of points labelled ``labels`` (> 0 or not).

    Minimizes the cross-entropy ``Σ t_i (A f_i + B) + log(1 + exp(-(A f_i + B)))``
    with Platt's prior-corrected targets ``t_i = (N₊ + 1)/(N₊ + 2)`` for
    positive and ``1/(N₋ + 2)`` for negative points, by Newton's method on
    ``H + σI`` with a backtracking line search (sufficient decrease
    ``1e-4``), from ``A = 0``, ``B = log((N₋ + 1)/(N₊ + 1))``: Algorithm 1 of
    Lin, Lin & Weng (2007), libsvm's ``sigmoid_train``, with its constants.

    Returns
    -------
    A, B : float
        ``P(y = +1 | f) = 1 / (1 + exp(A f + B))``.
    """
    f = np.asarray(dec, dtype=np.float64)
    positive = np.asarray(labels) > 0
    prior1 = float(positive.sum())
    prior0 = float(positive.shape[0] - prior1)
    t = np.where(positive, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))
    A, B = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    fval = _sigmoid_loss_terms(f * A + B, t).sum()
    for _ in range(max_iter):
        p = sigmoid_predict(f, A, B)
        d2 = p * (1.0 - p)
        h11 = sigma + np.dot(f * f, d2)
        h22 = sigma + d2.sum()
        h21 = np.dot(f, d2)
        d1 = t - p
        g1 = np.dot(f, d1)
        g2 = d1.sum()
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            newA, newB = A + step * dA, B + step * dB
            newf = _sigmoid_loss_terms(f * newA + newB, t).sum()
            if newf < fval + 1e-4 * step * gd:
                A, B, fval = newA, newB, newf
                break
            step /= 2.0
        if step < min_step:  # libsvm: "line search fails"; the last accepted point is kept
            break
    return float(A), float(B)


def pairwise_coupling(r, *, max_iter=None):
    """Class probabilities from pairwise ones by Wu, Lin & Weng's method 2 (libsvm's ``multiclass_probability``).

    Solves ``min_p ½ pᵀQp`` subject to ``Σ p = 1`` (eq. 21), with
    ``Q_tt = Σ_{j≠t} r_jt²`` and ``Q_tj = -r_jt r_tj``, by libsvm's
    fixed-point iteration (eq. 29), stopping when ``max_t |(Qp)_t - pᵀQp| <
    0.005 / k``; every test point is iterated until its own stop.

    Parameters
    ----------
    r : ndarray of shape (n, k, k)
        ``r[:, i, j]`` estimates ``P(y = i | y ∈ {i, j}, x)``; ``r_ij + r_ji = 1``.

    Returns
    -------
    ndarray of shape (n, k)
    """
    n, k, _ = r.shape
    max_iter = max(100, k) if max_iter is None else max_iter
    rt = np.swapaxes(r, 1, 2)  # rt[:, t, j] = r[:, j, t]
    Q = -rt * r
    diag = (rt * rt).sum(axis=2) - np.einsum("ntt->nt", rt * rt)
    idx = np.arange(k)
    Q[:, idx, idx] = diag
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    active = np.arange(n)
    for _ in range(max_iter):
        Qa, pa = Q[active], p[active]
        Qp = np.einsum("ntj,nj->nt", Qa, pa)
        pQp = (pa * Qp).sum(axis=1)
        going = np.abs(Qp - pQp[:, None]).max(axis=1) >= eps
        active, Qa, pa, Qp, pQp = active[going], Qa[going], pa[going], Qp[going], pQp[going]
        if active.size == 0:
            break
        for t in range(k):
            diff = (-Qp[:, t] + pQp) / Qa[:, t, t]
            pa[:, t] += diff
            pQp = (pQp + diff * (diff * Qa[:, t, t] + 2.0 * Qp[:, t])) / (1.0 + diff) ** 2
            Qp = (Qp + diff[:, None] * Qa[:, t, :]) / (1.0 + diff[:, None])
            pa /= (1.0 + diff[:, None])
        p[active] = pa
    return p


def class_probabilities(dec, probA, probB, n_classes, one_vs_rest):
    """``predict_proba`` from the problems' decision values ``dec`` (n_test × n_problems) and their sigmoids.

    ``dec`` and the sigmoids are oriented as libsvm's: +1 is the first class
    of a one-vs-one pair (class 0 of a binary problem), the class itself of a
    one-vs-rest problem.
    """
    pair = np.clip(sigmoid_predict(dec, probA, probB), MIN_PROBABILITY, 1.0 - MIN_PROBABILITY)
    if n_classes == 2:
        return np.column_stack([pair[:, 0], 1.0 - pair[:, 0]])
    if one_vs_rest:
        return pair / pair.sum(axis=1, keepdims=True)
    r = np.full((dec.shape[0], n_classes, n_classes), 0.0)
    column = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            r[:, i, j] = pair[:, column]
            r[:, j, i] = 1.0 - pair[:, column]
            column += 1
    return pairwise_coupling(r)


def fold_decision_values(n, fit_fold, rng):
    """Decision values of each of ``n`` points from a model fitted without it (libsvm's 5-fold scheme).

    The points are shuffled by ``rng`` and cut into ``N_FOLDS`` consecutive
    folds (``[i n / 5, (i + 1) n / 5)``); ``fit_fold(train, held_out)``
    returns the decision values of the positions ``held_out`` from a model
    trained on the positions ``train``.
    """
    perm = rng.permutation(n)
    dec = np.empty(n)
    for fold in range(N_FOLDS):
        begin, end = fold * n // N_FOLDS, (fold + 1) * n // N_FOLDS
        held_out = perm[begin:end]
        if held_out.size == 0:
            continue
        train = np.sort(np.concatenate([perm[:begin], perm[end:]]))
        dec[held_out] = fit_fold(train, held_out)
    return dec


def held_out_decision(rows_of, fit_binary_on, index, y_pm, C):
    """``fit_fold`` of :func:`fold_decision_values` for one binary problem on the samples ``index``.

    ``fit_binary_on(index, y_pm, C)`` fits the problem's settings on a subset
    of the training samples (views and corrections included) and returns its
    ``coef`` and corrected ``intercept``; ``rows_of(rows)`` reads the rows of
    the training Gram (after views) of the training samples ``rows``. A
    training part of a single class gives ``±1`` to its held-out points (libsvm).
    """
    def fit_fold(train, held_out):
        y_train = y_pm[train]
        if (y_train > 0).all() or (y_train < 0).all():
            return np.full(held_out.shape[0], float(np.sign(y_train[0])))
        fit = fit_binary_on(index[train], y_train, C[train])
        K = rows_of(index[held_out])[:, index[train]]
        return np.asarray(K, dtype=np.float64) @ fit["coef"] + fit["intercept"]

    return fit_fold


def platt_parameters(problems, C_i, fit_binary_on, rows_of, rng, binary):
    """``(probA, probB)`` of every binary problem, oriented as libsvm's (see :func:`class_probabilities`).

    ``problems`` are the ``(index, y_pm)`` of :func:`~._multiclass.binary_problems`;
    a two-class problem is turned around (+1 for class 0) as libsvm's.
    """
    probA, probB = np.empty(len(problems)), np.empty(len(problems))
    sign = -1.0 if binary else 1.0
    for k, (index, y_pm) in enumerate(problems):
        fit_fold = held_out_decision(rows_of, fit_binary_on, index, y_pm, C_i[index])
        dec = fold_decision_values(index.shape[0], fit_fold, rng)
        probA[k], probB[k] = sigmoid_train(sign * dec, sign * y_pm)
    return probA, probB


class PlattProbabilityMixin:
    """``predict_proba``, ``predict_log_proba``, ``probA_`` and ``probB_`` of an SVC fitted with ``probability=True``.

    The estimator provides ``probability``, ``classes_``, ``multiclass``,
    ``_probA``/``_probB`` (set by ``fit``) and ``_pairwise_decision(X)``.
    """

    @property
    def _wants_probability(self):
        return self.probability is True or (self.probability != "deprecated" and bool(self.probability))

    @property
    def probA_(self):
        """``A`` of each problem's sigmoid ``1 / (1 + exp(A f + B))``; empty without ``probability``."""
        return self._probA

    @property
    def probB_(self):
        """``B`` of each problem's sigmoid ``1 / (1 + exp(A f + B))``; empty without ``probability``."""
        return self._probB

    def _check_proba(self):
        if not self._wants_probability:
            raise AttributeError("predict_proba is not available when probability=False")
        return True

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Class probabilities of ``X`` (columns in the order of ``classes_``), from libsvm's probability model.

        Available with ``probability=True``: each problem's decision value
        goes through its sigmoid (``probA_``, ``probB_``), and several
        classes are joined by pairwise coupling (Wu, Lin & Weng, method 2),
        or normalized for one-vs-rest training. As in libsvm, the argmax
        may differ from ``predict`` on a few points.
        """
        if is_dask_array(X):
            check_is_fitted(self)
            return map_row_blocks(X, self.predict_proba, self.classes_.shape[0], self.classes_.dtype)
        X = validate_predict_data(self, X)
        if self._probA.size == 0:
            raise NotFittedError("predict_proba is not available when fitted with probability=False")
        n_classes = self.classes_.shape[0]
        oriented = self._pairwise_decision(X) * (-1.0 if n_classes == 2 else 1.0)  # libsvm's sign: class 0 is +1
        return class_probabilities(oriented, self._probA, self._probB, n_classes,
                                   one_vs_rest=self.multiclass == "ovr")

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))
