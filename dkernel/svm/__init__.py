"""Every SVM estimator of dkernel, the papers' other learners, and their models on disk.

:class:`SVC` composes the pieces of dkernel in the order the data flow:
X → kernel → Gram (in memory, in a zarr store, or rows on the fly;
:mod:`._training`) → lazy views (normalization, Graf & Borer eq. 2;
centering, Meilă eq. 14) → block-coordinate solver → corrected intercepts
(Meilă eq. 19, Graf & Borer eq. 3) → prediction through the original kernel
(Meilă eq. 16; :mod:`._predict`). Several classes are one-vs-one or
one-vs-rest binary problems (:mod:`._multiclass`).

=================== ==========================================================================
``_classes``        :class:`SVC`, the drop-in for :class:`sklearn.svm.SVC`
``_svr``            :class:`SVR`, the drop-in for :class:`sklearn.svm.SVR` (libsvm's 2n-variable ε-SVR dual)
``_nu``             :class:`NuSVR`, the drop-in for :class:`sklearn.svm.NuSVR` (libsvm's ν-SVR, the sum of α and of α* fixed)
``_nu_svc``         :class:`NuSVC`, the drop-in for :class:`sklearn.svm.NuSVC` (libsvm's ν-SVC, one-vs-one)
``_one_class``      :class:`OneClassSVM`, the drop-in for :class:`sklearn.svm.OneClassSVM` (libsvm's ν form)
``_single``         what those two share: one dual problem, its origin, the expansion in the original kernel
``_conformal``      :class:`ConformalSVC`, two-pass conformal kernel scaling (Williams et al.)
``_generalized_bias`` :class:`GeneralizedBiasSVC`, predefined features left unregularized
                    (Li, Leung & Lee); ``_bias_features`` builds such features
``_parzen``         :class:`ParzenWindowClassifier` (Kandola et al. §4)
``_learner_models`` the Parzen window and kernel ridge learners of ``dkernel fit --learner``
``_base``           the estimators' shared parameter constraints, kernel checks, save and load
``_persist``        every fitted model on disk: a registry of model formats, one writer, one
                    reader, checksums checked at load; arrays in zarr, the rest JSON, never pickle
``_persist_remote`` models at an object-store URL (versioned prefix, manifest last); :func:`load_model`
=================== ==========================================================================
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._classes": ("SVC",),
    "._svr": ("SVR",),
    "._nu": ("NuSVR",),
    "._nu_svc": ("NuSVC",),
    "._one_class": ("OneClassSVM",),
    "._base": ("EXPECTED_FAILED_CHECKS", "expected_failed_checks"),
    "._conformal": ("ConformalSVC", "load_conformal_model"),
    "._generalized_bias": ("GeneralizedBiasSVC",),
    "._parzen": ("ParzenWindowClassifier",),
    "._bias_features": ("GeodesicNeighbourFeatures", "PLSATopicFeatures", "class_presence"),
    "._persist": ("FORMATS", "MODEL_FORMAT", "MODEL_VERSION"),
    "._persist_remote": ("load_model",),
    "._predict": ("PREDICT_BLOCK_BYTES", "PREDICT_BLOCK_ROWS"),
    "._training": ("GRAM_MEMORY_FRACTION",),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
