"""The pieces every model format of :mod:`._persist` is made of: parameters as JSON, kernels as their specs, classes.

Each format's ``state`` and ``restore`` functions (in :mod:`._persist` and :mod:`._persist_formats`) take a fitted
estimator apart into JSON attributes and arrays with these, and put it back together.
"""

import json
import os
import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import ModelFormatError


def _json_params(model):
    """``get_params`` as JSON: kernels and centerings as their specs, a ``class_weight`` dict as its ``[label,
    weight]`` pairs (JSON keys are strings: the labels keep their type); how a fit ran (client, checkpoint) and the
    storage options (credentials) left out."""
    from ..centering._origins import Centering
    from ..kernels._kernels import Kernel

    out = {}
    for key, value in model.get_params(deep=False).items():
        if key in ("client", "checkpoint", "storage_options"):
            continue
        if isinstance(value, (Kernel, Centering)) or (key == "kernel" and hasattr(value, "to_dict")):
            value = value.to_dict()  # a kernel's spec (an adapted kernel's arrays are saved beside it)
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif isinstance(value, np.random.RandomState):
            value = None
        elif key == "class_weight" and isinstance(value, dict):
            value = [[_plain(label), _plain(weight)] for label, weight in value.items()]
        try:
            json.dumps(value)
        except TypeError:
            warnings.warn(f"parameter {key}={value!r} cannot be saved as JSON; it is stored as None.",
                          UserWarning, stacklevel=5)
            value = None
        out[key] = value
    return out


def _plain(value):
    """A NumPy scalar as the Python value it holds (JSON takes ``1``, not ``np.int64(1)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _estimator(cls, params):
    """``cls(**params)`` from saved parameters; parameters this dkernel's class lacks are refused."""
    from ..centering._origins import Centering
    from ..kernels._kernels import kernel_from_dict

    unknown = sorted(set(params) - set(cls().get_params(deep=False)))
    if unknown:
        raise ModelFormatError(f"the model was saved with parameters that {cls.__name__} of this dkernel does not "
                               f"take ({', '.join(unknown)}); load it with the dkernel that saved it.")
    params = dict(params)
    if isinstance(params.get("kernel"), dict):
        # An adapted kernel is put back from its arrays once the model is built (``_persist``).
        params["kernel"] = None if params["kernel"].get("name") == "adapted" else kernel_from_dict(params["kernel"])
    if isinstance(params.get("centering"), dict):
        params["centering"] = Centering.from_dict(params["centering"])
    if isinstance(params.get("class_weight"), list):
        params["class_weight"] = {label: weight for label, weight in params["class_weight"]}
    return cls(**params)


def _kernel_spec(kernel):
    return None if kernel is None else kernel.to_dict()


def _kernel_of(spec):
    from ..kernels._kernels import kernel_from_dict

    return None if spec is None else kernel_from_dict(spec)


def adapted_kernel_arrays(kernel):
    """``{"adapted_X_fit", "adapted_projection"}`` of an :class:`~dkernel.alignment.AdaptedKernel` fitted on data
    (Kandola's Algorithm 2: ``φ(x) = K(x, X_fit) P``), which its JSON spec does not hold; None for any other kernel
    (one fitted on a precomputed Gram maps Gram rows, and is saved as a precomputed model's)."""
    from ..alignment._inductive import AdaptedKernel

    if not isinstance(kernel, AdaptedKernel) or kernel.precomputed or not isinstance(kernel.X_fit, np.ndarray):
        return None
    return {"adapted_X_fit": kernel.X_fit, "adapted_projection": kernel.projection}


def restored_adapted_kernel(spec, arrays):
    """The adapted kernel of the JSON ``spec`` and the arrays of :func:`adapted_kernel_arrays`; None when ``spec``
    is not an adapted kernel's."""
    from ..alignment._inductive import AdaptedKernel

    if not (isinstance(spec, dict) and spec.get("name") == AdaptedKernel.SPEC_NAME):
        return None
    return AdaptedKernel.from_dict(spec, arrays["adapted_X_fit"], arrays["adapted_projection"])


def _classes_state(model):
    """The classes and ``n_features_in_`` (None after a fit with a kernel function, which, as scikit-learn's, sets
    none: the function may take any input)."""
    classes = model.classes_
    n_features = getattr(model, "n_features_in_", None)
    return {"classes": classes.tolist(), "classes_dtype": classes.dtype.str,
            "n_features_in": None if n_features is None else int(n_features)}


def _restore_classes(model, attrs):
    model.classes_ = np.asarray(attrs["classes"], dtype=np.dtype(attrs["classes_dtype"]))
    if attrs["n_features_in"] is not None:
        model.n_features_in_ = int(attrs["n_features_in"])


def _support_vectors_state(sv):
    """Dense support vectors as one array, sparse ones as the three arrays of their CSR form."""
    if sp.issparse(sv):
        sv = sp.csr_matrix(sv)
        arrays = {"sv_data": sv.data, "sv_indices": sv.indices, "sv_indptr": sv.indptr}
    else:
        sv = np.asarray(sv)
        arrays = {"support_vectors": sv}
    return {"sparse_support_vectors": "sv_data" in arrays, "sv_shape": list(sv.shape)}, arrays


def _support_vectors_from(attrs, arrays):
    shape = tuple(attrs["sv_shape"])
    if attrs["sparse_support_vectors"]:
        return sp.csr_matrix((arrays["sv_data"], arrays["sv_indices"], arrays["sv_indptr"]), shape=shape)
    return arrays["support_vectors"].reshape(shape)
