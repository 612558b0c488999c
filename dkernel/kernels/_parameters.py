"""An estimator's ``gamma``, ``coef0`` and ``degree`` beside its ``kernel``: which named kernel takes which, and the
refusal of a value that a kernel object would ignore."""

from ..exceptions import InvalidKernelParameterError
from ._kernels import Kernel, get_kernel

__all__ = ["KERNEL_PARAMS", "check_kernel_object_parameters"]

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
