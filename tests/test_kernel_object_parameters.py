"""An estimator's gamma / coef0 / degree given beside a kernel object (or a kernel dict) are refused, not ignored.

The kernel object carries its own parameters; ``SVC(kernel=RBFKernel(0.1), gamma=5)`` used to train with
``gamma=0.1`` without a word. Each estimator that takes ``kernel`` and the three parameters now refuses a value
other than its own default, before any Gram is computed, naming the parameter and how to set it; the default
values, and a grid search over ``kernel__gamma``, keep working.
"""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

import dkernel
from dkernel.alignment import KernelAligner
from dkernel.exceptions import InvalidKernelParameterError
from dkernel.kernels import LinearKernel, NormalizedKernel, PolynomialKernel, RBFKernel, get_kernel


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=30) > 0).astype(int)
    return X, y


#: Estimator class, extra constructor arguments, whether fit takes y, and its own kernel parameter defaults.
SVM_DEFAULTS = {"gamma": "scale", "coef0": 0.0, "degree": 3}
NONE_DEFAULTS = {"gamma": None, "coef0": None, "degree": None}
ESTIMATORS = [
    (dkernel.SVC, {}, True, SVM_DEFAULTS),
    (dkernel.NuSVC, {"nu": 0.5}, True, SVM_DEFAULTS),
    (dkernel.SVR, {}, True, SVM_DEFAULTS),
    (dkernel.NuSVR, {}, True, SVM_DEFAULTS),
    (dkernel.OneClassSVM, {}, False, SVM_DEFAULTS),
    (dkernel.ConformalSVC, {}, True, SVM_DEFAULTS),
    (dkernel.GeneralizedBiasSVC, {}, True, SVM_DEFAULTS),
    (dkernel.KernelPCA, {"n_components": 2}, False, {"gamma": None, "coef0": 1, "degree": 3}),
    (dkernel.ParzenWindowClassifier, {}, True, NONE_DEFAULTS),
    (KernelAligner, {}, True, NONE_DEFAULTS),
]
IDS = [cls.__name__ for cls, *_ in ESTIMATORS]
#: A value other than every estimator's default, for each parameter.
OTHER = {"gamma": 5.0, "coef0": 2.5, "degree": 2}


def _fit(estimator, takes_y, X, y):
    return estimator.fit(X, y) if takes_y else estimator.fit(X)


@pytest.mark.parametrize(("cls", "extra", "takes_y", "defaults"), ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("param", ["gamma", "coef0", "degree"])
@pytest.mark.parametrize("form", ["object", "dict"])
def test_parameter_beside_a_kernel_object_is_refused(cls, extra, takes_y, defaults, param, form, data):
    X, y = data
    kernel = PolynomialKernel(gamma=0.1, coef0=1.0, degree=3)
    kernel = kernel if form == "object" else kernel.to_dict()
    estimator = cls(kernel=kernel, **{param: OTHER[param]}, **extra)
    with pytest.raises(InvalidKernelParameterError) as info:
        _fit(estimator, takes_y, X, y)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert f"{param}={OTHER[param]!r}" in message
    assert "PolynomialKernel" in message if form == "object" else "'poly'" in message
    assert f"kernel__{param}" in message  # what a grid search sets instead


def test_svc_rbf_object_message_says_what_to_do(data):
    X, y = data
    with pytest.raises(InvalidKernelParameterError) as info:
        dkernel.SVC(kernel=RBFKernel(0.1), gamma=5).fit(X, y)
    message = str(info.value)
    assert "gamma=5" in message
    assert "RBFKernel(gamma=0.1)" in message
    assert "RBFKernel(gamma=5)" in message
    assert "kernel='rbf'" in message
    assert "kernel__gamma" in message


def test_a_parameter_the_kernel_object_does_not_take_is_refused(data):
    X, y = data
    with pytest.raises(InvalidKernelParameterError, match=r"gamma=5.*LinearKernel\(\)"):
        dkernel.SVC(kernel=LinearKernel(), gamma=5).fit(X, y)


def test_nested_kernel_names_the_nested_grid_parameter(data):
    X, y = data
    with pytest.raises(InvalidKernelParameterError, match=r"kernel__kernel__gamma"):
        dkernel.SVC(kernel=NormalizedKernel(RBFKernel(0.1)), gamma=5).fit(X, y)


@pytest.mark.parametrize(("cls", "extra", "takes_y", "defaults"), ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("form", ["object", "dict"])
def test_defaults_with_a_kernel_object_still_fit(cls, extra, takes_y, defaults, form, data):
    X, y = data
    kernel = RBFKernel(gamma=0.3)
    kernel = kernel if form == "object" else kernel.to_dict()
    _fit(cls(kernel=kernel, **extra), takes_y, X, y)
    # The defaults spelled out are no conflict either (an equal value of another type included).
    spelled = dict(defaults)
    if spelled["coef0"] is not None:
        coef0 = spelled["coef0"]
        spelled["coef0"] = float(coef0) if isinstance(coef0, int) else int(coef0)  # 0.0 as 0, 1 as 1.0
    _fit(cls(kernel=kernel, **spelled, **extra), takes_y, X, y)


def test_svc_with_a_kernel_object_uses_the_kernel_gamma(data):
    X, y = data
    ours = dkernel.SVC(kernel=RBFKernel(gamma=0.7)).fit(X, y)
    named = dkernel.SVC(kernel="rbf", gamma=0.7).fit(X, y)
    np.testing.assert_allclose(ours.decision_function(X), named.decision_function(X), rtol=1e-6, atol=1e-8)


def test_grid_search_over_kernel_gamma_still_works(data):
    X, y = data
    search = GridSearchCV(dkernel.SVC(kernel=RBFKernel(gamma=1.0)), {"kernel__gamma": [0.05, 0.5]}, cv=2)
    search.fit(X, y)
    assert search.best_params_["kernel__gamma"] in (0.05, 0.5)
    assert search.best_estimator_.kernel.gamma == search.best_params_["kernel__gamma"]


def test_named_kernels_still_take_the_estimator_parameters(data):
    X, y = data
    dkernel.SVC(kernel="rbf", gamma=5).fit(X, y)
    dkernel.SVC(kernel="poly", gamma=0.5, coef0=1.0, degree=2).fit(X, y)
    dkernel.KernelPCA(n_components=2, kernel="rbf", gamma=0.5).fit(X)


def test_get_kernel_refuses_parameters_beside_a_dict_spec():
    spec = RBFKernel(gamma=0.1).to_dict()
    with pytest.raises(InvalidKernelParameterError, match="gamma"):
        get_kernel(spec, gamma=5)
    assert get_kernel(spec) == RBFKernel(gamma=0.1)
    assert get_kernel(spec, gamma=None) == RBFKernel(gamma=0.1)  # None: not given, as for names
