"""GeneralizedBiasSVC with several classes: ``decision_function_shape`` as scikit-learn's SVC.

``"ovr"`` (the default) gives one column per class, whose argmax is :meth:`predict`'s class (the one-vs-one votes,
unchanged); ``"ovo"`` the pairwise decision values of the one-vs-one problems; two classes one column either way.
The parameter is saved with the model, and a model saved before it existed loads with the default.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs
from sklearn.metrics.pairwise import rbf_kernel

import dkernel
from dkernel._runtime.integrity import json_crc32c
from dkernel.exceptions import UnverifiedModelWarning
from dkernel.svm import GeneralizedBiasSVC
from dkernel.svm import _multiclass

GAMMA = 0.5


def _iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def _four_classes():
    X, y = make_blobs(n_samples=120, centers=4, n_features=3, cluster_std=2.5, random_state=3)
    return X, np.array(["w", "x", "y", "z"])[y]


def _pairwise(model, X):
    """The one-vs-one values of eq. (7), computed here from the fitted coefficients (an RBF kernel, φ = 1)."""
    K = rbf_kernel(X, model.support_vectors_, gamma=GAMMA)
    return K @ model.pair_coef_.T + np.ones((X.shape[0], 1)) @ model.feature_coef_.T


@pytest.mark.parametrize("data", [_iris, _four_classes], ids=["3 classes", "4 classes"])
def test_the_argmax_of_the_default_decision_is_the_prediction(data):
    X, y = data()
    model = GeneralizedBiasSVC(gamma=GAMMA).fit(X, y)
    n_classes = model.classes_.shape[0]
    d = model.decision_function(X)
    assert d.shape == (X.shape[0], n_classes)
    np.testing.assert_array_equal(model.classes_[d.argmax(axis=1)], model.predict(X))
    # predict is still the one-vs-one vote of the pairwise problems
    votes = _multiclass.predicted_class(_pairwise(model, X), n_classes, "ovo")
    np.testing.assert_array_equal(model.predict(X), model.classes_[votes])


def test_the_iris_example_of_the_report():
    X, y = load_iris(return_X_y=True)
    g = GeneralizedBiasSVC().fit(X, y)
    d = g.decision_function(X)
    assert d.shape == (150, 3)
    assert (g.classes_[d.argmax(1)] == g.predict(X)).mean() == 1.0


@pytest.mark.parametrize("data", [_iris, _four_classes], ids=["3 classes", "4 classes"])
def test_shapes_and_values_of_ovo_and_ovr(data):
    X, y = data()
    n_classes = np.unique(y).shape[0]
    ovr = GeneralizedBiasSVC(gamma=GAMMA, decision_function_shape="ovr").fit(X, y)
    ovo = GeneralizedBiasSVC(gamma=GAMMA, decision_function_shape="ovo").fit(X, y)
    assert GeneralizedBiasSVC().get_params()["decision_function_shape"] == "ovr"
    d_ovr, d_ovo = ovr.decision_function(X), ovo.decision_function(X)
    assert d_ovr.shape == (X.shape[0], n_classes)
    assert d_ovo.shape == (X.shape[0], n_classes * (n_classes - 1) // 2)
    # ovo: the pairwise values as before the parameter existed
    np.testing.assert_allclose(d_ovo, _pairwise(ovo, X), rtol=0, atol=1e-10)
    # ovr: scikit-learn's transform of those same values; the shape changes neither the fit nor predict
    np.testing.assert_allclose(d_ovr, _multiclass.ovr_decision(d_ovo, n_classes), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(ovr.predict(X), ovo.predict(X))
    # switching the parameter after fitting changes only the shape
    np.testing.assert_array_equal(ovr.set_params(decision_function_shape="ovo").decision_function(X), d_ovo)


@pytest.mark.parametrize("shape", ["ovo", "ovr"])
def test_two_classes_give_one_column_with_either_shape(shape):
    X, y = _iris()
    keep = y > 0
    model = GeneralizedBiasSVC(gamma=GAMMA, decision_function_shape=shape).fit(X[keep], y[keep])
    d = model.decision_function(X[keep])
    assert d.shape == (int(keep.sum()),)
    np.testing.assert_allclose(d, _pairwise(model, X[keep])[:, 0], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(model.classes_[(d > 0).astype(int)], model.predict(X[keep]))


def test_a_bad_shape_is_refused():
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = _iris()
    with pytest.raises(InvalidParameterError, match="'decision_function_shape' parameter of GeneralizedBiasSVC"):
        GeneralizedBiasSVC(decision_function_shape="ovx").fit(X, y)


def test_top_k_accuracy_reads_the_ovr_decision():
    from sklearn.metrics import top_k_accuracy_score

    X, y = _four_classes()
    model = GeneralizedBiasSVC(gamma=GAMMA).fit(X, y)
    d = model.decision_function(X)
    assert top_k_accuracy_score(y, d, k=1, labels=model.classes_) == pytest.approx(model.score(X, y))
    assert top_k_accuracy_score(y, d, k=2, labels=model.classes_) >= model.score(X, y)


@pytest.mark.parametrize("check_name", ["check_classifiers_train", "check_classifiers_classes"])
def test_scikit_learn_multiclass_checks(check_name):
    from sklearn.utils import estimator_checks

    check = getattr(estimator_checks, check_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check("GeneralizedBiasSVC", GeneralizedBiasSVC())


# ------------------------------------------------------------------------------------------ model files
def _rewrite_params(folder, edit, *, unverified=False):
    """Edit the saved parameters of a model in place; its metadata checksum recomputed (or, for a model of format
    version 1, the checksums dropped), so that it reads as a model written that way by some dkernel."""
    meta_path = Path(folder) / "zarr.json"
    meta = json.loads(meta_path.read_text())
    attrs = meta["attributes"]
    edit(attrs["params"])
    if unverified:
        attrs.pop("checksums")
        attrs["version"] = 1
    else:
        attrs["checksums"]["metadata"] = json_crc32c(attrs, leave_out="metadata", within="checksums")
    meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize("shape", ["ovo", "ovr"])
def test_the_shape_round_trips_through_a_model_file(tmp_path, shape):
    X, y = _four_classes()
    model = GeneralizedBiasSVC(gamma=GAMMA, decision_function_shape=shape).fit(X, y)
    path = model.save(tmp_path / "model.zarr")
    saved = json.loads((Path(path) / "zarr.json").read_text())["attributes"]["params"]
    assert saved["decision_function_shape"] == shape
    loaded = dkernel.load_model(path)
    assert isinstance(loaded, GeneralizedBiasSVC)
    assert loaded.decision_function_shape == shape
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("unverified", [False, True], ids=["version 2", "version 1"])
def test_a_model_saved_before_the_parameter_loads_with_the_default(tmp_path, unverified):
    X, y = _four_classes()
    model = GeneralizedBiasSVC(gamma=GAMMA, decision_function_shape="ovo").fit(X, y)
    path = model.save(tmp_path / "old.zarr")
    _rewrite_params(path, lambda params: params.pop("decision_function_shape"), unverified=unverified)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnverifiedModelWarning)
        loaded = dkernel.load_model(path)
    assert loaded.decision_function_shape == "ovr"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(loaded.decision_function(X), _multiclass.ovr_decision(model.decision_function(X), 4),
                               rtol=0, atol=0)
    np.testing.assert_array_equal(loaded.set_params(decision_function_shape="ovo").decision_function(X),
                                  model.decision_function(X))
