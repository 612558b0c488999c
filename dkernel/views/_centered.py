"""The Gram of the data translated in feature space: centered on an origin (Meilă eq. 14), or shifted (§6).

=================== ===================================================== ==========================
view                entries                                               paper
=================== ===================================================== ==========================
``CenteredGram``    ``K_ij - h_i - h_j + h0``, ``h = Kγ``, ``h0 = γᵀKγ``   Meilă eq. (14)
``ShiftedGram``     the same with ``a = |a| u``, ``u`` a random direction  Meilă §6
=================== ===================================================== ==========================

References
----------
.. [1] M. Meilă, "Data centering in feature space", AISTATS 2003.
"""

import math

import numpy as np

from .._runtime.validation import random_generator
from ..centering._origins import Centering, InvalidWeightsError, centered_block, origin_products
from ..gram import origin_step
from ..gram._sources import SubsetGram, as_gram, row_provider, source_n, subset_gram
from ._base import _base_cross, _base_cross_diag, _base_describe, _GramView

__all__ = ["CenteredGram", "ShiftedGram", "centered_submatrix"]


class CenteredGram(_GramView):
    """The Gram matrix of the data translated so that ``a`` is the origin (Meilă eq. 14).

    .. math::

        K_a = K - 1 h^T - h 1^T + h_0, \\qquad h = K\\gamma,\\; h_0 = \\gamma^T K \\gamma

    Entries are corrected when read; ``h`` is computed once at construction
    (:func:`dkernel.centering.origin_products`: only ``K[:, S]`` for a
    centering supported on a sample ``S``).

    Parameters
    ----------
    base : Gram source
        A :class:`~dkernel.gram.GramMatrix`, a :class:`KernelGram`, another
        view, or a square ndarray.
    centering : Centering
        The origin ``a = Σ γ_i φ(x_i)``, in the feature space of ``base``.
    h, h0 : optional
        Precomputed ``h = Kγ`` and ``h0 = γᵀKγ`` (skips the pass over ``K``).

    Attributes
    ----------
    h : ndarray of shape (n,)
        ``⟨a, x_i⟩``; Δb of an SVM trained on the view is ``(αy)ᵀh``
        (:func:`dkernel.centering.delta_b`).
    h0 : float
        ``⟨a, a⟩``.
    """

    def __init__(self, base, centering, *, h=None, h0=None):
        self.base = as_gram(base)
        if not isinstance(centering, Centering):
            raise TypeError(f"centering must be a Centering; got {type(centering).__name__}.")
        if centering.n != self.base.n:
            raise InvalidWeightsError(
                f"the centering is defined for n={centering.n} points but the Gram matrix has {self.base.n} "
                f"rows; build it from this matrix's labels (one label per row)."
            )
        self.centering = centering
        if h is None or h0 is None:
            h, h0 = origin_products(self.base, centering)
        self.h = np.asarray(h, dtype=np.float64)
        self.h0 = float(h0)
        self._vector = self.h

    _apply = staticmethod(centered_block)

    def _params(self):
        return {"h0": self.h0}

    def diag(self):
        """``K_ii - 2h_i + h0``."""
        return np.asarray(self.base.diag(), dtype=np.float64) - 2.0 * self.h + self.h0

    def test_products(self, K_test_support):
        """``⟨x, a⟩ = Σ_j γ_j K(x, x_j)`` from the kernel values of test points against the support of ``a``."""
        return np.asarray(K_test_support, dtype=np.float64) @ self.centering.weights

    def center_test(self, K_test, h_test=None):
        """``K_a(x, x_i) = K(x, x_i) - ⟨x, a⟩ - h_i + h0`` from base-kernel rows ``K_test`` (m × n).

        ``h_test`` (``⟨x, a⟩`` per test point) is computed from ``K_test`` when omitted.
        """
        K_test = np.asarray(K_test, dtype=np.float64)
        if K_test.ndim != 2 or K_test.shape[1] != self.n:
            raise ValueError(f"K_test must have shape (m, {self.n}); got {K_test.shape}.")
        if h_test is None:
            h_test = self.test_products(K_test[:, self.centering.support])
        return centered_block(K_test, np.asarray(h_test, dtype=np.float64), self.h, self.h0)

    def cross(self, X_new, X_train=None, columns=None):
        """``K_a(x, x_i)`` for new points ``x`` against the training points (``columns`` of them).

        ``X_train`` is needed only when the chain of views ends at a stored
        Gram (which does not keep its data).
        """
        support = self.centering.support
        h_test = self.test_products(_base_cross(self.base, X_new, X_train, columns=support))
        K = _base_cross(self.base, X_new, X_train, columns=columns)
        h = self.h if columns is None else self.h[np.asarray(columns, dtype=np.intp)]
        return centered_block(K, h_test, h, self.h0)

    def cross_diag(self, X_new, X_train=None):
        """``K_a(x, x) = K(x, x) - 2⟨x, a⟩ + h0``."""
        h_test = self.test_products(_base_cross(self.base, X_new, X_train, columns=self.centering.support))
        return np.asarray(_base_cross_diag(self.base, X_new, X_train), dtype=np.float64) - 2 * h_test + self.h0

    def _step(self):
        return origin_step("centered", self.centering, self.h0)

    def describe(self):
        return {
            "name": "centered",
            "centering": self.centering.to_dict(),
            "h0": self.h0,
            "base": _base_describe(self.base),
        }


def centered_submatrix(base, index, centering):
    """The Gram of the problem on the samples ``index`` of ``base``, centered at ``centering`` (eq. 14), and its ``h``.

    An origin of all the samples of ``base`` (as ``centering="multiclass"``
    of an SVM) centers the whole Gram once; the problem reads its principal
    submatrix, and its part of ``h`` (Δb, eq. 19, sums over the problem's
    samples); a ``base`` already centered at that origin (the one view every
    problem shares) is read as it is. An origin of the problem's own samples
    centers its principal submatrix (an in-memory ``base`` copied). Returns
    ``(rows, h)``.
    """
    if isinstance(base, CenteredGram) and base.centering is centering:  # centered once, shared by the problems
        return subset_gram(base, index, copy=False), base.h[index]
    if centering.n == source_n(base) and index.shape[0] != centering.n:
        whole = CenteredGram(row_provider(base), centering)
        return SubsetGram(whole, index), whole.h[index]
    view = CenteredGram(subset_gram(base, index), centering)
    return view, view.h


class ShiftedGram(CenteredGram):
    """Data translated by ``|a|`` along a random feature-space direction (Meilă §6).

    The direction is ``u = Σ_i β_i φ(x_i) / sqrt(βᵀKβ)`` with ``β`` standard
    normal on the training points (or on ``n_support`` of them), and the origin
    moves to ``a = |a| u``: this is a :class:`CenteredGram` with
    ``γ = |a| β / sqrt(βᵀKβ)``, so ``h0 = |a|²``. ``cross(X_new)`` gives the
    consistent test kernel ``K_s(x, x_i)``.

    Parameters
    ----------
    base : Gram source
    length : float
        The shift ``|a| >= 0``.
    random_state : int, Generator or None
    n_support : int, optional
        Draw β on a random sample of this many points (only ``K[:, S]`` is read).
    """

    def __init__(self, base, length, *, random_state=None, n_support=None):
        base = as_gram(base)
        length = float(length)
        if not (math.isfinite(length) and length >= 0):
            raise ValueError(f"length must be a finite number >= 0; got {length!r}.")
        rng = random_generator(random_state)
        n = base.n
        if n_support is None:
            direction = Centering(n, rng.standard_normal(n), None, "shift")
        else:
            if not (1 <= int(n_support) <= n):
                raise ValueError(f"n_support must lie in [1, n={n}]; got {n_support!r}.")
            idx = np.sort(rng.choice(n, size=int(n_support), replace=False))
            direction = Centering(n, rng.standard_normal(len(idx)), idx, "shift")
        h_beta, norm_sq = origin_products(base, direction)
        if not norm_sq > 0:
            raise ValueError(
                "the random direction has zero norm in feature space (βᵀKβ = 0); the kernel is degenerate on "
                "these points."
            )
        scale = length / math.sqrt(norm_sq)
        self.length = length
        super().__init__(base, direction.scaled(scale, "shift"), h=h_beta * scale, h0=length**2)

    def _step(self):
        return origin_step("shifted", self.centering, self.h0, self.length)

    def describe(self):
        return {**super().describe(), "name": "shifted", "length": self.length}




