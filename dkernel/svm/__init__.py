"""scikit-learn estimators on top of the dkernel solver.

:class:`SVC` (:mod:`._classes`) composes the pieces of dkernel in the order
the data flow: X → kernel → Gram (in memory, in a zarr store, or rows on the
fly; :mod:`._training`) → lazy operator views (normalization, Graf & Borer
eq. 2; centering, Meilă eq. 14) → block-coordinate solver → corrected
intercepts (Meilă eq. 19, Graf & Borer eq. 3) → prediction through the
original kernel (Meilă eq. 16; :mod:`._predict`). Several classes are
one-vs-one or one-vs-rest binary problems (:mod:`._multiclass`); a fitted
model is a zarr store with JSON attributes (:mod:`._persist`).
"""

import contextlib

# Each fit runs in scikit-learn's fit context (``_fit_context``), which imports its callback support (scikit-learn
# >= 1.9) on the call: imported here with the estimators, as ``sklearn.svm`` has it, not by the first fit.
with contextlib.suppress(ImportError):
    import sklearn.callback._callback_support  # noqa: F401

from ._classes import EXPECTED_FAILED_CHECKS, SVC, load_model  # noqa: F401
from ._persist import MODEL_FORMAT, MODEL_VERSION  # noqa: F401
from ._predict import PREDICT_BLOCK_BYTES, PREDICT_BLOCK_ROWS  # noqa: F401
from ._training import GRAM_MEMORY_FRACTION  # noqa: F401

__all__ = ["SVC", "load_model"]
