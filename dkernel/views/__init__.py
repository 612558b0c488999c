"""Lazy views over a Gram matrix: centered (Meilă), shifted (Meilă §6), normalized (Graf & Borer), conformal
(Williams et al.).

A view reads its entries from the Gram under it when they are read; no
corrected copy of the matrix is made. Each is a small spec that runs the same
on a Dask worker, and each gives the view's kernel between new points and the
training points (``cross``), built from the base kernel as the view is built
from the base Gram.

=================== ==========================================================================
``_base``           what every view shares: the reading interface, the operator chain,
                    the diagonal scaling ``s_i K_ij s_j``
``_centered``       :class:`CenteredGram` (Meilă eq. 14), :class:`ShiftedGram` (§6)
``_normalized``     :class:`NormalizedGram` (Graf & Borer eq. 2) and the threshold b' of an
                    SVM trained on it (eq. 3)
``_conformal``      :class:`ConformalGram` ``D(x) K(x, x') D(x')`` (Williams et al.)
=================== ==========================================================================
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._base": ("operator_chain", "scaled_block"),
    "._centered": ("CenteredGram", "ShiftedGram"),
    "._normalized": ("GrafThresholdError", "NormalizedGram", "graf_intercept", "graf_threshold", "weight_norm"),
    "._conformal": ("METHODS", "ConformalFactor", "ConformalGram", "amari_wu_factor", "check_kappa", "kappa_rule",
                    "magnification_ratio", "williams_factor"),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
