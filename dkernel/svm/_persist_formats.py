"""The model formats of the Parzen window classifier and of kernel PCA: their artifact kinds, state and restore.

:mod:`._persist` registers them in :data:`~._persist.FORMATS` beside the SVMs' (its ``MORE_FORMATS``): the estimator
of each is named as ``"module:Class"`` and imported only when a model is read, so this module (of ``svm``) never
imports :mod:`dkernel.decomposition`. What each keeps:

* ``dkernel-parzen`` (:class:`~dkernel.svm.ParzenWindowClassifier`): its parameters (JSON), the fitted kernel's JSON
  spec, the classes, the weights ``dual_coef_`` and the training points ``X_fit_`` (none with a precomputed kernel);
* ``dkernel-kernel-pca`` (:class:`~dkernel.decomposition.KernelPCA`): its parameters, the kernel's spec, the origin
  (:class:`~dkernel.centering.Centering` spec with its ``h = Kγ`` and ``h0``), the eigenpairs, the training points
  and, with ``fit_inverse_transform``, the pre-image map (``dual_coef_``, ``X_transformed_fit_``). On a precomputed
  Gram, no training points and no Gram: projecting a test kernel needs only the origin, ``h``, ``h0`` and the
  eigenpairs. A named kernel with parameters dkernel's kernels do not take (``gamma=0``, a non-integer ``degree``)
  has no spec: it is rebuilt from the parameters and the training points.

A model of a Python kernel function is refused (JSON cannot hold a function), as the SVMs' are.
"""

import numpy as np
import scipy.sparse as sp

from ._persist_params import (_classes_state, _estimator, _json_params, _kernel_of, _kernel_spec, _restore_classes,
                              adapted_kernel_arrays, restored_adapted_kernel)

__all__ = ["MORE_FORMATS", "kernel_pca_restore", "kernel_pca_state", "learner_parzen_restore",
           "parzen_restore", "parzen_state"]


def _saved_kernel_spec(kernel, estimator):
    """The JSON spec of a fitted dkernel kernel; ``ValueError`` for a Python function (no JSON form)."""
    if kernel is None:
        return None
    if not hasattr(kernel, "to_dict"):
        raise ValueError(f"a {estimator} whose kernel is a Python function ({kernel!r}) cannot be saved as zarr + "
                         f"JSON; fit it with a dkernel Kernel (or kernel='precomputed' on its Gram matrix) to save it.")
    return kernel.to_dict()


def _points_state(X, name):
    """Training points as arrays: dense ones as ``name``, a CSR matrix as its three arrays ``name_data``, ..."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return {f"{name}_shape": list(X.shape)}, {f"{name}_data": X.data, f"{name}_indices": X.indices,
                                                  f"{name}_indptr": X.indptr}
    return {}, {name: np.asarray(X)}


def _points_from(attrs, arrays, name):
    if f"{name}_shape" in attrs:
        return sp.csr_matrix((arrays[f"{name}_data"], arrays[f"{name}_indices"], arrays[f"{name}_indptr"]),
                             shape=tuple(attrs[f"{name}_shape"]))
    return arrays.get(name)


# --------------------------------------------------------------------------- ParzenWindowClassifier
def parzen_state(model):
    """``(attributes, arrays, parts)`` of a fitted :class:`~dkernel.svm.ParzenWindowClassifier`; an adapted kernel
    (:class:`~dkernel.alignment.AdaptedKernel`) is saved as its spec and arrays, as an SVM's."""
    adapted = adapted_kernel_arrays(model._kernel)
    if model._is_kernel_function() and adapted is None:
        if hasattr(model.kernel, "SPEC_NAME"):  # an adapted kernel fitted on a precomputed Gram: it maps Gram rows
            raise ValueError(f"a ParzenWindowClassifier whose kernel is {model.kernel!r}, fitted on a precomputed "
                             f"Gram, cannot be saved: fit it with kernel='precomputed' on the adapted Gram to save it.")
        _saved_kernel_spec(model.kernel, "ParzenWindowClassifier")
    attributes = {"params": _json_params(model), "kernel": _saved_kernel_spec(model._kernel, "ParzenWindowClassifier"),
                  **_classes_state(model)}
    arrays = {"dual_coef": model.dual_coef_, **(adapted or {})}
    if model.X_fit_ is not None:
        points_attrs, points = _points_state(model.X_fit_, "X_fit")
        attributes.update(points_attrs)
        arrays.update(points)
    return attributes, arrays, {}


def parzen_restore(cls, attrs, arrays, parts):
    model = _estimator(cls, attrs["params"])
    _restore_classes(model, attrs)
    model.dual_coef_ = arrays["dual_coef"]
    model.X_fit_ = _points_from(attrs, arrays, "X_fit")
    adapted = restored_adapted_kernel(attrs["kernel"], arrays)
    if adapted is not None:
        model.kernel = model._kernel = adapted
    else:
        model._kernel = _kernel_of(attrs["kernel"])
    return model


def learner_parzen_restore(cls, attrs, arrays):
    """A ParzenWindowClassifier from a ``dkernel-learner`` model of ``learner="parzen"`` (``dkernel fit --learner
    parzen`` before it saved the estimator itself): the command's parameters (the kernel, ``class_weight="balanced"``)
    and the fitted weights, points and classes."""
    kernel = _kernel_of(attrs["kernel"])
    model = cls(kernel=kernel, class_weight="balanced")
    classes = np.asarray(attrs["classes"])
    model.classes_ = classes
    model.n_features_in_ = int(arrays["X_fit"].shape[1])
    model.dual_coef_ = np.asarray(arrays["dual_coef"], dtype=np.float64)
    model.X_fit_ = arrays["X_fit"]
    model._kernel = kernel
    return model


# --------------------------------------------------------------------------- KernelPCA
#: KernelPCA: saved array -> fitted attribute (the last two only with fit_inverse_transform).
_KERNEL_PCA_ARRAYS = {"eigenvalues": "eigenvalues_", "eigenvectors": "eigenvectors_", "dual_coef": "dual_coef_",
                      "X_transformed_fit": "X_transformed_fit_"}


def kernel_pca_state(model):
    """``(attributes, arrays, parts)`` of a fitted :class:`~dkernel.decomposition.KernelPCA`; one of a Python kernel
    function is refused, before anything else. One of a precomputed Gram keeps the origin (``h``, ``h0``) and the
    eigenpairs, what ``transform`` centers and projects a test kernel with, not the training Gram."""
    if model._is_function:
        raise ValueError(f"a KernelPCA whose kernel is a Python function ({model.kernel!r}) cannot be saved: a model "
                         f"is zarr + JSON, which holds no function. To save it, fit it with a kernel name, a "
                         f"dkernel Kernel or its dict spec, or with kernel='precomputed' on the Gram matrix of "
                         f"your function (then transform takes the test kernel K(X_test, X_train)).")
    attributes = {"params": _json_params(model),
                  "centering": None if model.centering_ is None else model.centering_.to_dict(),
                  "h0": None if model.centering_ is None else float(model._operator.h0),
                  "gamma": None if model.gamma_ is None else float(model.gamma_),
                  "eigen_solver": model.eigen_solver_, "n_features_in": int(model.n_features_in_)}
    if model._precomputed:
        attributes["kernel"], arrays = None, {}
    else:
        source = model._operator.base if model.centering_ is not None else model._operator
        # None for a named kernel evaluated by scikit-learn's pairwise_kernels: rebuilt from the parameters.
        attributes["kernel"] = _kernel_spec(source.kernel)
        points_attrs, arrays = _points_state(source.X, "X_fit")
        attributes.update(points_attrs)
    arrays.update({name: getattr(model, a) for name, a in _KERNEL_PCA_ARRAYS.items() if hasattr(model, a)})
    if model.centering_ is not None:
        arrays["h"] = model._operator.h
    return attributes, arrays, {}


def kernel_pca_restore(cls, attrs, arrays, parts):
    from ..centering._origins import Centering
    from ..gram._on_the_fly import KernelGram
    from ..views._centered import CenteredGram

    model = _estimator(cls, attrs["params"])
    model.centering_ = None if attrs["centering"] is None else Centering.from_dict(attrs["centering"])
    if model._precomputed:
        model._operator = None if model.centering_ is None else model._fitted_origin(model.centering_, arrays["h"],
                                                                                      attrs["h0"])
        source = None
    else:
        X = _points_from(attrs, arrays, "X_fit")
        kernel = _kernel_of(attrs["kernel"])
        source = KernelGram(X, kernel if kernel is not None else model._kernel_evaluator(X))
        model._operator = source if model.centering_ is None else CenteredGram(source, model.centering_,
                                                                               h=arrays["h"], h0=attrs["h0"])
    for name, attribute in _KERNEL_PCA_ARRAYS.items():
        if name in arrays:
            setattr(model, attribute, arrays[name])
    if "dual_coef" in arrays:
        model._inverse_kernel = source.kernel if source.kernel is not None else source._evaluator.function
    model.X_fit_ = None if source is None else source.X
    model.gamma_ = attrs["gamma"]
    model.eigen_solver_ = attrs["eigen_solver"]
    model.n_features_in_ = int(attrs["n_features_in"])
    return model


#: ``(kind, "module:Class", arrays, attributes, state, restore)`` of each format of this module.
MORE_FORMATS = (
    ("parzen-model", "dkernel.svm._parzen:ParzenWindowClassifier", ("dual_coef",),
     ("params", "kernel", "classes", "classes_dtype", "n_features_in"), parzen_state, parzen_restore),
    ("kernel-pca-model", "dkernel.decomposition._kernel_pca:KernelPCA", ("eigenvalues", "eigenvectors"),
     ("params", "kernel", "centering", "h0", "gamma", "eigen_solver", "n_features_in"), kernel_pca_state,
     kernel_pca_restore),
)
