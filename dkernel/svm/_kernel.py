"""The estimator's kernel parameters: scikit-learn's ``SVC`` conventions.

``kernel``, ``gamma`` (``"scale"``, ``"auto"`` or a float), ``coef0`` and
``degree`` as :class:`sklearn.svm.SVC` takes them, turned into a concrete
:class:`~dkernel.kernels.Kernel` for the training data. Shared by
:class:`dkernel.SVC` and the ``dkernel gram`` / ``dkernel fit`` commands.
"""

from ..exceptions import InvalidKernelParameterError
from ..kernels._kernels import Kernel, get_kernel
from ..kernels._parameters import KERNEL_PARAMS, check_kernel_object_parameters


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
