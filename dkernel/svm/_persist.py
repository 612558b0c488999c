"""A fitted SVC on disk: arrays in a zarr store, everything else as JSON attributes; never pickle.

A model is written to a folder beside its path and renamed into place when
complete (:mod:`dkernel._runtime.artifacts`), so an interrupted save never leaves a
half-written model and never loses the model it replaces.
"""

import json
import os
import warnings

import numpy as np
import scipy.sparse as sp

from .._runtime import artifacts
from ..centering._origins import Centering
from ..kernels._kernels import Kernel, kernel_from_dict

MODEL_FORMAT = "dkernel-svc"
MODEL_VERSION = 1

#: The fitted arrays of a model and the zarr array names they are saved under.
_ARRAYS = {
    "support": "support_",
    "n_support": "_n_support",
    "pair_coef": "_pair_coef",
    "intercept": "intercept_",
    "uncorrected_intercept": "uncorrected_intercept_",
    "delta_b": "delta_b_",
    "objective": "objective_",
    "n_iter": "n_iter_",
}

#: Fitted arrays that models written before they existed do not hold, and their value then.
_OPTIONAL_ARRAYS = {
    "probA": ("_probA", lambda attrs: np.empty(0)),
    "probB": ("_probB", lambda attrs: np.empty(0)),
    # Without class_weight it is all ones; a "balanced" one needs the class counts, which a model does not keep.
    "class_weight": ("class_weight_",
                     lambda attrs: np.ones(len(attrs["classes"])) if attrs["params"].get("class_weight") is None
                     else None),
}


def write_model(model, path, overwrite=False):
    """Write the fitted ``model`` to the zarr store ``path``; return its absolute path.

    Raises :class:`~dkernel.exceptions.ArtifactPathError` (a
    ``FileExistsError``) when ``path`` holds anything but a model, or a model
    without ``overwrite``.
    """
    import zarr

    path = os.path.abspath(os.fspath(path))
    with artifacts.writing(path, "model", overwrite) as tmp:
        group = zarr.open_group(tmp, mode="w")
        arrays = {name: getattr(model, attribute) for name, attribute in {**_ARRAYS, **{
            name: attribute for name, (attribute, _) in _OPTIONAL_ARRAYS.items()}}.items()}
        sv = model.support_vectors_
        if sp.issparse(sv):
            sv = sp.csr_matrix(sv)
            arrays.update(sv_data=sv.data, sv_indices=sv.indices, sv_indptr=sv.indptr)
        else:
            arrays["support_vectors"] = np.asarray(sv)
        for name, value in arrays.items():
            value = np.asarray(value)
            group.create_array(name, data=value if value.size else value.reshape(value.shape), overwrite=True)
        classes = model.classes_
        group.attrs.update({
            "format": MODEL_FORMAT,
            "version": MODEL_VERSION,
            "params": _json_params(model.get_params(deep=False)),
            "kernel": None if model._kernel is None else model._kernel.to_dict(),
            "classes": classes.tolist(),
            "classes_dtype": classes.dtype.str,
            "n_features_in": int(model.n_features_in_),
            "shape_fit": list(model.shape_fit_),
            "sparse_support_vectors": bool(sp.issparse(model.support_vectors_)),
            "sv_shape": list(model.support_vectors_.shape),
            "centering": _centering_description(model.centering),
            "fit_status": int(model.fit_status_),
        })
    return path


def read_model(path, estimator_class):
    """The ``estimator_class`` instance written by :func:`write_model` at ``path``."""
    import zarr

    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"no model at {path}.")
    group = zarr.open_group(path, mode="r")
    attrs = dict(group.attrs)
    if attrs.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path} is not a dkernel SVC model (format {attrs.get('format')!r}).")
    params = attrs["params"]
    if isinstance(params.get("kernel"), dict):
        params["kernel"] = kernel_from_dict(params["kernel"])
    if isinstance(params.get("centering"), dict):
        params["centering"] = Centering.from_dict(params["centering"])
    model = estimator_class(**params)
    model._kernel = None if attrs["kernel"] is None else kernel_from_dict(attrs["kernel"])
    model.classes_ = np.asarray(attrs["classes"], dtype=np.dtype(attrs["classes_dtype"]))
    model.n_features_in_ = attrs["n_features_in"]
    model.shape_fit_ = tuple(attrs["shape_fit"])
    read = lambda name: np.asarray(group[name][...])  # noqa: E731
    for name, attribute in _ARRAYS.items():
        setattr(model, attribute, read(name))
    for name, (attribute, default) in _OPTIONAL_ARRAYS.items():
        value = read(name) if name in group else default(attrs)
        if value is not None:
            setattr(model, attribute, value)
    model._sparse = bool(attrs["sparse_support_vectors"])
    if attrs["sparse_support_vectors"]:
        model.support_vectors_ = sp.csr_matrix(
            (read("sv_data"), read("sv_indices"), read("sv_indptr")), shape=tuple(attrs["sv_shape"])
        )
    else:
        model.support_vectors_ = read("support_vectors").reshape(attrs["sv_shape"])
    model._set_dual_coef()
    # Models written before the status was saved carry no record of it: 0, as they were reported.
    model.fit_status_ = int(attrs.get("fit_status", 0))
    return model


def _centering_description(centering):
    if isinstance(centering, Centering):
        return centering.to_dict()
    return centering


def _json_params(params):
    out = {}
    for key, value in params.items():
        if key in ("client", "checkpoint"):  # how a fit ran, not what it found
            continue
        if isinstance(value, Kernel):
            value = value.to_dict()
        elif isinstance(value, Centering):
            value = value.to_dict()
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif isinstance(value, np.random.RandomState):
            value = None
        try:
            json.dumps(value)
        except TypeError:
            warnings.warn(f"parameter {key}={value!r} cannot be saved as JSON; it is stored as None.",
                          UserWarning, stacklevel=4)
            value = None
        out[key] = value
    return out
