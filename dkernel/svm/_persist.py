"""Every fitted model on disk: one registry of formats, one writer, one reader, one integrity check; never pickle.

A model is a zarr v3 group (a folder): its fitted arrays are zarr arrays, everything else (the parameters, the
classes, the kernel's JSON spec) JSON attributes of the group. :data:`FORMATS` is the registry of model formats:
each names the estimator class it holds, the arrays and attributes every model of it has, its nested models (the
two passes of a :class:`~dkernel.svm.ConformalSVC`, each a model of its own in a subfolder) and the two functions
that take a fitted estimator apart and put it back together. :func:`save_model` writes any of them,
:func:`dkernel.load_model` reads any of them back as its estimator class.

Integrity. The attributes hold ``checksums``: the CRC-32C (the checksum of the Gram stores,
:mod:`dkernel.gram._checksums`) of each array's values, little-endian in C order, with its shape and dtype; the
metadata checksum of each nested model; and ``metadata``, the CRC-32C of the attributes themselves as canonical
JSON (keys sorted), this one number left out (both of :mod:`dkernel._runtime.integrity`). :func:`dkernel.load_model` checks them all before it builds the estimator.
A deleted chunk file (which zarr reads as zeros), a flipped bit in a chunk or in a ``zarr.json``, an edited
parameter, swapped classes, a truncated or undecodable file, a folder that is not a model: each raises
:class:`~dkernel.exceptions.CorruptModelError` naming the model and the damage, and nothing damaged is ever used.

Models of format version 1, written before checksums existed, have the same layout without them: they are read
with an :class:`~dkernel.exceptions.UnverifiedModelWarning` (nothing in them can be verified) and saving them
again adds the checksums. A model whose version says it has checksums but that has none is damaged, not old.

Writes are safe (:mod:`dkernel._runtime.artifacts`): a model is written beside its path and moved into place when
complete. ``overwrite`` replaces only a model of the same format (each format is an artifact kind of its own);
anything else at the path (a model of another estimator, a Gram store, a user's file or folder) is refused and
left as it is.
"""

import importlib
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._runtime import artifacts
from .._runtime.integrity import array_crc32c, json_crc32c
from ..exceptions import (
    CorruptModelError,
    DKernelError,
    ModelFormatError,
    UnverifiedModelWarning,
)
from ._persist_formats import MORE_FORMATS, learner_parzen_restore
from ._persist_params import (  # noqa: F401 (also the pieces of _persist_formats)
    _classes_state,
    _estimator,
    _json_params,
    _kernel_of,
    _kernel_spec,
    _plain,
    _restore_classes,
    _support_vectors_from,
    _support_vectors_state,
    adapted_kernel_arrays,
    restored_adapted_kernel,
)

__all__ = ["FORMATS", "MODEL_FORMAT", "MODEL_VERSION", "ModelFormat", "read_model", "save_model"]

#: The version of the layout written: 2 adds the checksums to version 1.
MODEL_VERSION = 2
#: Versions without checksums, read unverified (a learner model of version 1 records no version).
_UNVERIFIED_VERSIONS = (1, None)


@dataclass(frozen=True)
class ModelFormat:
    """One model format: the estimator it holds and what a model of it keeps on disk.

    ``kind`` is its artifact kind (:data:`dkernel._runtime.artifacts.KINDS`), which gives the ``format`` name
    recorded in the model; ``estimator`` is ``"module:Class"``, imported when a model is read; ``arrays`` and
    ``attributes`` are those every model of the format holds (more are optional); ``parts`` maps each nested model
    to its kind. ``state(model)`` returns ``(attributes, arrays, parts)`` of a fitted estimator, refusing one that
    JSON cannot hold; ``restore(cls, attributes, arrays, parts)`` builds the estimator back.
    """

    kind: str
    estimator: str
    arrays: tuple
    attributes: tuple
    state: Callable
    restore: Callable
    parts: dict = field(default_factory=dict)
    #: Other classes (``"module:Class"``) whose ``load`` reads a model of the format (``restore`` builds one).
    reads_as: tuple = ()

    @property
    def name(self):
        return artifacts.KINDS[self.kind][0]

    @property
    def description(self):
        return artifacts.KINDS[self.kind][1]

    def estimator_class(self):
        return _imported(self.estimator)


# --------------------------------------------------------------------------- the parts of each format
#: SVC: saved array -> fitted attribute.
_SVC_ARRAYS = {"support": "support_", "n_support": "_n_support", "pair_coef": "_pair_coef", "intercept": "intercept_",
               "uncorrected_intercept": "uncorrected_intercept_", "delta_b": "delta_b_", "objective": "objective_",
               "n_iter": "n_iter_", "probA": "_probA", "probB": "_probB", "class_weight": "class_weight_"}
#: SVC arrays that models of version 1 may lack, as their value then (None: left unset).
_SVC_LEGACY_DEFAULTS = {
    "probA": lambda attrs: np.empty(0),
    "probB": lambda attrs: np.empty(0),
    # Without class_weight it is all ones; a "balanced" one needs the class counts, which a model does not keep.
    "class_weight": lambda attrs: np.ones(len(attrs["classes"])) if attrs["params"].get("class_weight") is None
    else None,
}


def _kernel_model_state(model):
    """What every kernel SVM saves of its fit: ``(attributes, arrays)`` of its parameters, kernel, training shape and
    support vectors. A model of a Python kernel function is refused: zarr + JSON cannot hold the function; an
    :class:`~dkernel.alignment.AdaptedKernel` (Kandola's Algorithm 2) is saved as its spec and arrays."""
    adapted = _adapted_kernel_arrays(model)
    if model._callable_kernel and adapted is None:
        raise ValueError(
            f"a model whose kernel is a Python function ({model.kernel!r}) cannot be saved as zarr + JSON; "
            f"fit with kernel='precomputed' on its Gram matrix, or with a dkernel Kernel, to save it.")
    sv_attrs, sv_arrays = _support_vectors_state(model.support_vectors_)
    attributes = {"params": _json_params(model), "kernel": _kernel_spec(model._kernel),
                  "shape_fit": list(model.shape_fit_), **sv_attrs, **_optional_state(model)}
    return attributes, {**sv_arrays, **(adapted or {})}


def _adapted_kernel_arrays(model):
    """The arrays of a model whose kernel is an adapted kernel fitted on data (:func:`._persist_params.
    adapted_kernel_arrays`) and the support vectors' data it is evaluated on; None for any other kernel."""
    arrays = adapted_kernel_arrays(model.kernel)
    if arrays is None:
        return None
    return {**arrays, "support_data": np.asarray(model._support_data, dtype=np.float64)}


def _restore_adapted_kernel(model, params, arrays):
    """Put back the adapted kernel of a model saved by :func:`_adapted_kernel_arrays` (its spec in ``params``)."""
    kernel = restored_adapted_kernel(params.get("kernel"), arrays)
    if kernel is not None:
        model.kernel = kernel
        model._support_data = arrays["support_data"]


#: Fitted attributes that a model saves when the estimator has them, and that models written before they were saved
#: lack (left unset then: none can be derived from what such a model holds): saved attribute -> fitted attribute.
#: ``gram_dtype_`` and ``store_path_`` tell how the training Gram was held; ``epsilon_`` is the tube width a NuSVR
#: found (libsvm's ``-r``, from the solver's gradient, which depends on the training targets: not kept in a model).
_OPTIONAL_ATTRIBUTES = {"gram_dtype": "gram_dtype_", "store_path": "store_path_", "epsilon": "epsilon_"}


def _optional_state(model):
    out = {}
    for name, attribute in _OPTIONAL_ATTRIBUTES.items():
        value = getattr(model, attribute, None)
        if value is not None:
            out[name] = float(value) if isinstance(value, (float, np.floating)) else str(value)
    return out


def _restore_optional(model, attrs):
    for name, attribute in _OPTIONAL_ATTRIBUTES.items():
        if attrs.get(name) is not None:
            setattr(model, attribute, attrs[name])


def _svc_state(model):
    attributes, sv_arrays = _kernel_model_state(model)
    attributes.update(_classes_state(model), fit_status=int(model.fit_status_))
    return attributes, {**{name: getattr(model, a) for name, a in _SVC_ARRAYS.items()}, **sv_arrays}, {}


def _svc_restore(cls, attrs, arrays, parts):
    model = _estimator(cls, attrs["params"])
    model._kernel = _kernel_of(attrs["kernel"])
    _restore_classes(model, attrs)
    model.shape_fit_ = tuple(attrs["shape_fit"])
    for name, attribute in _SVC_ARRAYS.items():
        value = arrays[name] if name in arrays else _SVC_LEGACY_DEFAULTS[name](attrs)
        if value is not None:
            setattr(model, attribute, value)
    model._sparse = bool(attrs["sparse_support_vectors"])
    model.support_vectors_ = _support_vectors_from(attrs, arrays)
    model._set_dual_coef()
    model.fit_status_ = int(attrs.get("fit_status", 0))  # not recorded by the first models: 0, as reported
    _restore_optional(model, attrs)
    _restore_adapted_kernel(model, attrs["params"], arrays)
    return model


def _conformal_state(model):
    attributes = {"params": _json_params(model), "method": model.factor_.method, "kappa": float(model.kappa_),
                  "n_features_in": int(model.n_features_in_)}
    arrays = {"conformal_factor": model.conformal_factor_, "support_vectors": model.support_vectors_}
    return attributes, arrays, {"first_pass": model.first_pass_, "second_pass": model.second_pass_}


def _conformal_restore(cls, attrs, arrays, parts):
    from ..views._conformal import ConformalFactor

    model = _estimator(cls, attrs["params"])
    model.first_pass_, model.second_pass_ = parts["first_pass"], parts["second_pass"]
    model.factor_ = ConformalFactor.from_svc(model.first_pass_, attrs["method"], attrs["kappa"])
    model.kappa_ = model.factor_.kappa
    model.conformal_factor_ = arrays["conformal_factor"]
    model.support_vectors_ = arrays["support_vectors"]
    model.n_features_in_ = int(attrs["n_features_in"])
    model._set_second_pass_attributes()
    return model


#: GeneralizedBiasSVC: saved array -> fitted attribute.
_GENERALIZED_BIAS_ARRAYS = {"support": "support_", "pair_coef": "pair_coef_", "feature_coef": "feature_coef_",
                            "objective": "objective_", "n_iter": "n_iter_"}


def _generalized_bias_state(model):
    if model.features_ is not None:
        raise ValueError(
            f"a GeneralizedBiasSVC whose features are {type(model.features_).__name__} cannot be saved as zarr + "
            f"JSON: its fitted feature transformer or function has no JSON form. Only features=None (the constant "
            f"feature) is saved; keep the fitted estimator in memory, or fit it again from the training data.")
    sv_attrs, sv_arrays = _support_vectors_state(model.support_vectors_)
    attributes = {"params": _json_params(model), "kernel": _kernel_spec(model._kernel), **_classes_state(model),
                  "n_predefined_features": int(model.n_predefined_features_), "lambda_from": list(model.lambda_from_),
                  "fit_status": int(model.fit_status_), **sv_attrs}
    return attributes, {**{name: getattr(model, a) for name, a in _GENERALIZED_BIAS_ARRAYS.items()}, **sv_arrays}, {}


def _generalized_bias_restore(cls, attrs, arrays, parts):
    model = _estimator(cls, attrs["params"])
    model._kernel = _kernel_of(attrs["kernel"])
    _restore_classes(model, attrs)
    for name, attribute in _GENERALIZED_BIAS_ARRAYS.items():
        setattr(model, attribute, arrays[name])
    model.support_vectors_ = _support_vectors_from(attrs, arrays)
    model.features_ = None
    model.n_predefined_features_ = int(attrs["n_predefined_features"])
    model.lambda_from_ = list(attrs["lambda_from"])
    model.fit_status_ = int(attrs["fit_status"])
    return model


#: SVR and OneClassSVM: saved array -> fitted attribute.
_SINGLE_ARRAYS = {"support": "support_", "coef": "_coef", "intercept": "intercept_", "n_support": "_n_support"}
#: SVR and OneClassSVM: saved attribute -> fitted attribute (scalars).
_SINGLE_SCALARS = {"n_iter": "n_iter_", "fit_status": "fit_status_", "objective": "objective_",
                   "delta_b": "delta_b_", "uncorrected_intercept": "uncorrected_intercept_"}


def _single_state(model):
    attributes, sv_arrays = _kernel_model_state(model)
    attributes.update({name: getattr(model, a) for name, a in _SINGLE_SCALARS.items()},
                      n_features_in=getattr(model, "n_features_in_", None))
    return attributes, {**{name: getattr(model, a) for name, a in _SINGLE_ARRAYS.items()}, **sv_arrays}, {}


def _single_restore(cls, attrs, arrays, parts):
    model = _estimator(cls, attrs["params"])
    model._kernel = _kernel_of(attrs["kernel"])
    if attrs["n_features_in"] is not None:  # None after a fit with a kernel function (as scikit-learn's)
        model.n_features_in_ = int(attrs["n_features_in"])
    model.shape_fit_ = tuple(attrs["shape_fit"])
    for name, attribute in _SINGLE_ARRAYS.items():
        setattr(model, attribute, arrays[name])
    for name, attribute in _SINGLE_SCALARS.items():
        setattr(model, attribute, attrs[name])
    model._sparse = bool(attrs["sparse_support_vectors"])
    model.support_vectors_ = _support_vectors_from(attrs, arrays)
    model.dual_coef_ = _sparse_coef(model._coef) if model._sparse else model._coef
    if hasattr(cls, "score_samples"):
        model.offset_ = -model.intercept_
    _restore_optional(model, attrs)
    _restore_adapted_kernel(model, attrs["params"], arrays)
    return model


def _sparse_coef(coef):
    from ._inputs import sklearn_sparse

    return sklearn_sparse(sp.csr_matrix(coef))


def _learner_state(model):
    if not isinstance(model.X_fit, np.ndarray):
        raise ValueError("only learners trained on dense data can be saved; convert X with X.toarray().")
    attributes = {"learner": model.learner, "kernel": model.kernel.to_dict(),
                  "classes": None if model.classes is None else model.classes.tolist(),
                  **({} if getattr(model, "alpha", None) is None else {"alpha": float(model.alpha)})}
    return attributes, {"X_fit": model.X_fit, "dual_coef": model.dual_coef}, {}


#: The class a Parzen window model of the learner format is read as.
_PARZEN = "dkernel.svm._parzen:ParzenWindowClassifier"


def _learner_restore(cls, attrs, arrays, parts):
    """A ridge model as a :class:`KernelExpansion`; a Parzen window one (written by ``dkernel fit --learner parzen``
    before it saved the estimator itself) as the ParzenWindowClassifier it is."""
    if attrs["learner"] == "parzen":
        return learner_parzen_restore(_imported(_PARZEN), attrs, arrays)
    return cls(attrs["learner"], _kernel_of(attrs["kernel"]), arrays["X_fit"], arrays["dual_coef"], attrs["classes"],
               alpha=attrs.get("alpha"))


#: The registry of model formats, by the ``format`` name recorded in each model.
FORMATS = {fmt.name: fmt for fmt in (
    ModelFormat("nu-svc-model", "dkernel.svm._nu_svc:NuSVC", tuple(n for n in _SVC_ARRAYS if n not in _SVC_LEGACY_DEFAULTS),
                ("params", "kernel", "classes", "classes_dtype", "n_features_in", "shape_fit",
                 "sparse_support_vectors", "sv_shape"), _svc_state, _svc_restore),
    ModelFormat("model", "dkernel.svm._classes:SVC", tuple(n for n in _SVC_ARRAYS if n not in _SVC_LEGACY_DEFAULTS),
                ("params", "kernel", "classes", "classes_dtype", "n_features_in", "shape_fit",
                 "sparse_support_vectors", "sv_shape"), _svc_state, _svc_restore),
    ModelFormat("conformal-model", "dkernel.svm._conformal:ConformalSVC", ("conformal_factor", "support_vectors"),
                ("params", "method", "kappa", "n_features_in"), _conformal_state, _conformal_restore,
                parts={"first_pass": "model", "second_pass": "model"}),
    ModelFormat("generalized-bias-model", "dkernel.svm._generalized_bias:GeneralizedBiasSVC",
                tuple(_GENERALIZED_BIAS_ARRAYS),
                ("params", "kernel", "classes", "classes_dtype", "n_features_in", "n_predefined_features",
                 "lambda_from", "fit_status", "sparse_support_vectors", "sv_shape"),
                _generalized_bias_state, _generalized_bias_restore),
    ModelFormat("svr-model", "dkernel.svm._svr:SVR", tuple(_SINGLE_ARRAYS),
                ("params", "kernel", "n_features_in", "shape_fit", *_SINGLE_SCALARS, "sparse_support_vectors",
                 "sv_shape"), _single_state, _single_restore),
    ModelFormat("nu-svr-model", "dkernel.svm._nu:NuSVR", tuple(_SINGLE_ARRAYS),
                ("params", "kernel", "n_features_in", "shape_fit", *_SINGLE_SCALARS, "sparse_support_vectors",
                 "sv_shape"), _single_state, _single_restore),
    ModelFormat("one-class-model", "dkernel.svm._one_class:OneClassSVM", tuple(_SINGLE_ARRAYS),
                ("params", "kernel", "n_features_in", "shape_fit", *_SINGLE_SCALARS, "sparse_support_vectors",
                 "sv_shape"), _single_state, _single_restore),
    ModelFormat("learner", "dkernel.svm._learner_models:KernelExpansion", ("X_fit", "dual_coef"),
                ("learner", "kernel", "classes"), _learner_state, _learner_restore,
                reads_as=(_PARZEN,)),
    *(ModelFormat(*spec) for spec in MORE_FORMATS),
)}

#: The format of an SVC model.
MODEL_FORMAT = artifacts.KINDS["model"][0]


def format_of(model):
    """The :class:`ModelFormat` of a fitted estimator: of its own class, else of its nearest base class that a format
    holds (a NuSVR is an SVR, and a model of its own); ``TypeError`` for a class no format holds."""
    held = [fmt for fmt in FORMATS.values() if isinstance(model, fmt.estimator_class())]
    if held:
        return max(held, key=lambda fmt: len(fmt.estimator_class().__mro__))
    raise TypeError(f"dkernel has no model format for {type(model).__name__}; the formats hold "
                    f"{', '.join(fmt.estimator.partition(':')[2] for fmt in FORMATS.values())}.")


# --------------------------------------------------------------------------- writing
def save_model(model, path, overwrite=False):
    """Write the fitted ``model`` (any estimator of :data:`FORMATS`) to the folder ``path``; return its absolute path.

    Everything is taken from the model before anything is written, so a model that cannot be saved (a kernel
    function, a fitted feature transformer) raises ``ValueError`` and leaves ``path`` as it was.

    Raises
    ------
    ArtifactPathError
        A ``FileExistsError``: ``path`` holds anything but a model of this format, or one without ``overwrite``.
    """
    import zarr

    tree = _state_tree(model)
    path = os.path.abspath(os.fspath(path))
    with artifacts.writing(path, tree[0].kind, overwrite) as tmp:
        _write(zarr.open_group(tmp, mode="w"), tree)
    return path


def _state_tree(model):
    fmt = format_of(model)
    attributes, arrays, parts = fmt.state(model)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        attributes["feature_names_in"] = [str(name) for name in names]
    arrays = {name: np.ascontiguousarray(value) for name, value in arrays.items()}
    return fmt, attributes, arrays, {name: _state_tree(part) for name, part in parts.items()}


def _write(group, tree):
    """Write one model (and its nested ones) into ``group``; return its metadata checksum."""
    fmt, attributes, arrays, parts = tree
    record = {"algorithm": "crc32c", "arrays": {}, "parts": {}}
    for name, value in arrays.items():
        group.create_array(name, data=value)
        record["arrays"][name] = {"shape": list(value.shape), "dtype": value.dtype.str, "crc32c": array_crc32c(value)}
    for name, part in parts.items():
        record["parts"][name] = _write(group.create_group(name), part)
    attrs = json.loads(json.dumps({"format": fmt.name, "version": MODEL_VERSION, **attributes, "checksums": record}))
    attrs["checksums"]["metadata"] = json_crc32c(attrs, leave_out="metadata", within="checksums")
    group.attrs.update(attrs)
    return attrs["checksums"]["metadata"]


# --------------------------------------------------------------------------- reading
def read_model(path, estimator_class=None):
    """The model at ``path``; with ``estimator_class``, a :class:`ModelFormatError` unless it holds one."""
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"no model at {path}.")
    attrs = _attributes(path, path, None)
    fmt = _check_format(path, attrs)
    cls = fmt.estimator_class()
    if estimator_class is not None:
        if not issubclass(estimator_class, cls) and not _read_as(fmt, estimator_class):
            raise ModelFormatError(f"{path} holds {fmt.description}, not a model of {estimator_class.__name__}: "
                                   f"read it with {cls.__name__}.load(path) or dkernel.load_model(path).")
        cls = estimator_class
    if "checksums" not in attrs:
        warnings.warn(f"the model {path} was written by an older dkernel, without checksums: it is loaded without "
                      f"verifying its arrays and parameters. Saved again (save(path, overwrite=True)), it has them.",
                      UnverifiedModelWarning, stacklevel=3)
    return _read(path, path, None, attrs, fmt, cls)


def _read_as(fmt, estimator_class):
    """Whether ``fmt`` restores a model as ``estimator_class`` (one of its ``reads_as``)."""
    return any(issubclass(estimator_class, _imported(name)) for name in fmt.reads_as)


def _imported(name):
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _damaged(path, part, detail):
    where = "" if part is None else f"its nested model {part}: "
    detail = where + detail
    return CorruptModelError(f"the model {path} is damaged: {detail}. A damaged model is not used; fit the model "
                             f"again and save it again.", path=path, detail=detail)


def _not_a_model(path, what):
    return CorruptModelError(f"{path} is not a dkernel model: {what}. Give the path of a model written by an "
                             f"estimator's save() or by 'dkernel fit'.", path=path, detail=what)


def _attributes(path, node, part):
    """The attributes of the group at ``node`` (the model ``path`` or its nested model ``part``), read strictly."""
    meta_path = os.path.join(node, "zarr.json")
    if part is None and not os.path.isdir(node):
        raise _not_a_model(path, "it is a file")
    try:
        with open(meta_path, "rb") as fh:
            raw = fh.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        if part is not None:
            raise _damaged(path, part, "its folder or its zarr.json is missing") from None
        raise _not_a_model(path, "the folder has no zarr.json" + (" (it is empty)" if not os.listdir(node) else
                                                                   "")) from None
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _damaged(path, part, f"zarr.json is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                                   f"{exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _damaged(path, part, f"zarr.json is not complete JSON, truncated or altered ({exc.msg} at line "
                                   f"{exc.lineno}, column {exc.colno})") from None
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    if not isinstance(attrs, dict):
        raise _damaged(path, part, "zarr.json holds no attributes")
    return attrs


def _check_format(path, attrs, part=None):
    """The format of a model's attributes, after checking their checksum; the version told apart from damage."""
    name = attrs.get("format")
    name = name if isinstance(name, str) else None
    other = {fmt: desc for fmt, desc in artifacts.KINDS.values()}
    if name in other and name not in FORMATS:
        raise _not_a_model(path, f"it holds {other[name]}")
    checks = attrs.get("checksums")
    if checks is not None and (
            not isinstance(checks, dict) or checks.get("algorithm") != "crc32c"
            or checks.get("metadata") != json_crc32c(attrs, leave_out="metadata", within="checksums")):
        raise _damaged(path, part, "its parameters and attributes (zarr.json) do not match their checksum")
    fmt = FORMATS.get(name)
    if fmt is None:
        if checks is not None:
            raise ModelFormatError(f"{path} holds a model of format {name!r}, which this dkernel does not read "
                                   f"(it reads {', '.join(FORMATS)}): load it with the dkernel that saved it.")
        if part is not None:
            raise _damaged(path, part, f"it is not a model (format {name!r})")
        raise _not_a_model(path, "its zarr.json names no dkernel model format" if name is None else
                           f"its zarr.json names the format {name!r}")
    version = attrs.get("version")
    if checks is not None and version != MODEL_VERSION:
        raise ModelFormatError(f"{path} is a model of format version {version!r}; this dkernel reads versions up to "
                               f"{MODEL_VERSION}: load it with the dkernel that saved it.")
    if checks is None and version not in _UNVERIFIED_VERSIONS:
        raise _damaged(path, part, f"its checksums are missing although its format version {version!r} has them")
    return fmt


def _read_arrays(path, node, part, attrs):
    """Every array of the model at ``node``, each checked against its recorded shape, dtype and checksum."""
    import zarr

    record = (attrs.get("checksums") or {}).get("arrays")
    name = None
    try:
        group = zarr.open_group(node, mode="r")
        names = list(record) if record is not None else sorted(group.array_keys())
        arrays = {}
        for name in names:
            arrays[name] = np.asarray(group[name][...])
    except (DKernelError, MemoryError):
        raise
    except Exception as exc:
        what = "its zarr group" if name is None else f"array {name}"
        raise _damaged(path, part, f"{what} cannot be read ({type(exc).__name__}: {exc})") from exc
    for name, value in arrays.items():
        if record is None:
            continue
        expected = record[name]
        if list(value.shape) != expected["shape"] or value.dtype.str != expected["dtype"]:
            raise _damaged(path, part, f"array {name} has shape {value.shape} and dtype {value.dtype.str}, not "
                                       f"{tuple(expected['shape'])} and {expected['dtype']} as saved")
        if array_crc32c(value) != expected["crc32c"]:
            raise _damaged(path, part, f"array {name} does not match its checksum, a chunk file of it is missing "
                                       f"or altered")
    return arrays


def _read(path, node, part, attrs, fmt, cls):
    """The estimator of the model at ``node``, verified; nested models read and verified in turn."""
    arrays = _read_arrays(path, node, part, attrs)
    missing = [n for n in fmt.arrays if n not in arrays] + [n for n in fmt.attributes if n not in attrs]
    if missing:
        raise _damaged(path, part, f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing")
    parts = {}
    for name, kind in fmt.parts.items():
        label = name if part is None else f"{part}/{name}"
        sub = _attributes(path, os.path.join(node, name), label)
        sub_fmt = _check_format(path, sub, label)
        saved = (attrs.get("checksums") or {}).get("parts", {}).get(name)
        if sub_fmt.kind != kind or ("checksums" in attrs and saved != (sub.get("checksums") or {}).get("metadata")):
            raise _damaged(path, label, "it is not the model saved with this one")
        parts[name] = _read(path, os.path.join(node, name), label, sub, sub_fmt, sub_fmt.estimator_class())
    try:
        model = fmt.restore(cls, attrs, arrays, parts)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
        if isinstance(exc, DKernelError):
            raise
        raise _damaged(path, part, f"its contents do not form a {cls.__name__} ({type(exc).__name__}: {exc})") \
            from exc
    if "feature_names_in" in attrs:
        model.feature_names_in_ = np.asarray(attrs["feature_names_in"], dtype=object)
    return model
