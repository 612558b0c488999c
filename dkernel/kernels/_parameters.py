"""An estimator's ``kernel``, ``gamma``, ``coef0`` and ``degree``, as scikit-learn's ``SVC`` takes them.

Which named kernel takes which parameter (:data:`KERNEL_PARAMS`); the
defaults of :class:`dkernel.SVC` and of the ``dkernel gram`` / ``dkernel fit``
commands (:data:`ESTIMATOR_DEFAULTS`); the concrete
:class:`~dkernel.kernels.Kernel` they name on the training data
(:func:`resolve_kernel`: ``gamma="scale"`` is ``1 / (n_features · X.var())``);
and the refusal of a value that a kernel object would ignore
(:func:`check_kernel_object_parameters`). Shared by every estimator and the
command line.
"""

from ..exceptions import InvalidKernelParameterError
from ._kernels import Kernel, get_kernel

__all__ = ["ESTIMATOR_DEFAULTS", "KERNEL_PARAMS", "check_kernel_object_parameters", "estimator_kernel", "resolve_kernel"]

#: The parameters each named kernel takes.
KERNEL_PARAMS = {"linear": (), "rbf": ("gamma",), "sigmoid": ("gamma", "coef0"), "poly": ("gamma", "coef0", "degree")}


def _is_default(value, default):
    if value is default:
        return True
    if value is None or default is None or isinstance(value, str) != isinstance(default, str):
        return False
    return bool(value == default)


def _kernel_parameter_message(kernel, name, value):
    """Why ``name=value`` given beside the kernel object (or dict spec) ``kernel`` is refused, and what to do."""
    given = f"{name}={value!r}"
    if isinstance(kernel, dict):
        spec = get_kernel(kernel)  # the spec's own errors first
        what = f"the kernel dict {kernel!r}"
    else:
        spec, what = kernel, f"the kernel object {kernel!r}"
    # Where the parameter lives in the kernel (``gamma``, or ``kernel__gamma`` in a NormalizedKernel).
    paths = [key for key in spec.get_params(deep=True) if key == name or key.endswith(f"__{name}")]
    fixes = []
    if name in spec.params:
        if isinstance(kernel, dict):
            fixes.append(f"set it in the dict's 'params' ({{'name': {spec.name!r}, 'params': "
                         f"{ {**spec.params, name: value}!r}}})")
        else:
            fixes.append(f"set the kernel's own parameter ({type(spec).__name__}"
                         f"({', '.join(f'{k}={v!r}' for k, v in {**spec.params, name: value}.items())}))")
    elif paths:
        fixes.append(f"set it in the kernel (its parameter {paths[0]!r})")
    if name in KERNEL_PARAMS.get(spec.name, ()):
        fixes.append(f"pass kernel={spec.name!r} with {given}")
    if paths:
        fixes.append(f"in a grid search, search 'kernel__{paths[0]}' rather than {name!r}")
    if not fixes:
        fixes.append(f"leave {name} at its default, or choose a kernel that takes {name}")
    return (f"{given} was given with {what}, which carries its own parameters"
            + (f" ({spec.name} takes no {name})" if not paths else "")
            + f": {given} would be ignored. Instead, " + "; or ".join(fixes) + ".")


def check_kernel_object_parameters(kernel, *, gamma, coef0, degree, defaults):
    """Refuse ``gamma``, ``coef0`` or ``degree`` other than the estimator's ``defaults`` beside a kernel object.

    A :class:`~dkernel.kernels.Kernel` (or its dict spec) brings its own parameters, so an estimator's
    ``gamma=5`` beside ``RBFKernel(gamma=0.1)`` would be ignored; this raises
    :class:`~dkernel.exceptions.InvalidKernelParameterError` (a ``ValueError``) instead, naming the parameter
    and how to set it (on the kernel, by the kernel's name, or ``kernel__gamma`` in a grid search). Nothing for
    a kernel name, ``"precomputed"`` or a kernel function.
    """
    if not isinstance(kernel, (Kernel, dict)):
        return
    for name, value in (("gamma", gamma), ("coef0", coef0), ("degree", degree)):
        if not _is_default(value, defaults[name]):
            raise InvalidKernelParameterError(_kernel_parameter_message(kernel, name, value))


#: Kernel parameter defaults of :class:`dkernel.SVC` and of the ``dkernel gram`` and ``dkernel fit`` commands:
#: scikit-learn's SVC conventions (``gamma="scale"`` is ``1 / (n_features * X.var())``).
ESTIMATOR_DEFAULTS = {"gamma": "scale", "coef0": 0.0, "degree": 3}


def estimator_kernel(name, X, gamma=ESTIMATOR_DEFAULTS["gamma"], coef0=ESTIMATOR_DEFAULTS["coef0"],
                     degree=ESTIMATOR_DEFAULTS["degree"]):
    """The kernel ``name`` with scikit-learn's SVC parameter conventions, its ``gamma`` resolved on ``X``.

    Parameters
    ----------
    name : {"linear", "poly", "rbf", "sigmoid"}
    X : ndarray or sparse matrix of shape (n, d)
        The training data (only read for ``gamma="scale"`` / ``"auto"``).
    gamma : {"scale", "auto"} or float
        ``"scale"``: ``1 / (d * X.var())`` (1 when the variance is 0);
        ``"auto"``: ``1 / d``.
    coef0 : float
    degree : int

    Returns
    -------
    Kernel
        With every parameter concrete, so that the same data and arguments
        give the same kernel (and the same Gram store) wherever it is built.
    """
    if gamma == "scale":
        if hasattr(X, "multiply"):  # sparse
            var = X.multiply(X).mean() - X.mean() ** 2
        else:
            var = X.var()
        gamma = 1.0 / (X.shape[1] * var) if var != 0 else 1.0
    elif gamma == "auto":
        gamma = 1.0 / X.shape[1]
    else:
        gamma = float(gamma)
    if name not in KERNEL_PARAMS:
        raise InvalidKernelParameterError(f"unknown kernel {name!r}; use one of {sorted(KERNEL_PARAMS)}.")
    values = {"gamma": gamma, "coef0": coef0, "degree": degree}
    return get_kernel(name, **{param: values[param] for param in KERNEL_PARAMS[name]})


def named_kernel(name, **params):
    """The kernel ``name`` with those of ``params`` (``gamma``, ``coef0``, ``degree``) that are given (not None)
    and that it takes; the others are ignored, as scikit-learn's SVC ignores ``degree`` for ``"rbf"`` (so that one
    grid search can vary ``kernel`` and ``degree``). A name outside :data:`KERNEL_PARAMS` gets every given parameter
    (:func:`~dkernel.kernels.get_kernel` then says what it takes)."""
    takes = KERNEL_PARAMS.get(name) if isinstance(name, str) else None  # (a dict spec: its own parameters)
    return get_kernel(name, **{key: value for key, value in params.items()
                               if value is not None and (takes is None or key in takes)})


def resolve_kernel(kernel, X, *, gamma, coef0, degree, defaults=ESTIMATOR_DEFAULTS):
    """The kernel object of the estimator's ``kernel`` parameters on ``X``; ``None`` for ``"precomputed"``.

    With a kernel object or dict spec, ``gamma``, ``coef0`` and ``degree`` must be the estimator's
    ``defaults`` (:func:`check_kernel_object_parameters`): the kernel's own parameters are used.
    """
    if isinstance(kernel, str) and kernel == "precomputed":
        return None
    if isinstance(kernel, (Kernel, dict)):
        check_kernel_object_parameters(kernel, gamma=gamma, coef0=coef0, degree=degree, defaults=defaults)
        return get_kernel(kernel).resolve(X.shape[1])
    return estimator_kernel(kernel, X, gamma=gamma, coef0=coef0, degree=degree)
