"""ConformalSVC's prediction input checks and n_iter_, every fitted attribute of a saved model, and two messages."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, make_classification, make_regression
from sklearn.utils.estimator_checks import check_non_transformer_estimators_n_iter

from dkernel import SVC, SVR, ConformalSVC, NuSVC, NuSVR, OneClassSVM, load_model
from dkernel.centering._origins import SampleSizeError
from dkernel.svm._training import _check_problem_count, centering_for


# --------------------------------------------------------------------------- ConformalSVC prediction input
@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = (X - X.mean()) / X.std()
    return X, y, ConformalSVC(gamma=0.1).fit(X, y)


def test_conformal_refuses_a_frame_with_reordered_columns(cancer):
    X, y, model = cancer
    with pytest.raises(ValueError, match="feature names"):
        model.score(X[X.columns[::-1]], y)
    with pytest.raises(ValueError, match="feature names"):
        model.decision_function(X[X.columns[::-1]])


def test_conformal_on_its_own_frame_does_not_warn(cancer):
    X, y, model = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score = model.score(X, y)
        dec = model.decision_function(X)
    assert score > 0.9 and dec.shape == (X.shape[0],)


def test_conformal_frame_and_array_give_the_same_values(cancer):
    X, _, model = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the array has no feature names: scikit-learn's warning
        from_array = model.decision_function(X.to_numpy())
    np.testing.assert_allclose(model.decision_function(X), from_array, rtol=1e-12, atol=1e-12)


def test_conformal_refuses_empty_X(cancer):
    X, _, model = cancer
    with pytest.raises(ValueError, match="0 sample"):
        model.decision_function(X.iloc[:0])
    with pytest.raises(ValueError, match="0 sample"):
        model.predict(X.iloc[:0])


def test_conformal_dask_input_stays_lazy_and_matches():
    da = pytest.importorskip("dask.array")
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    model = ConformalSVC(gamma=0.5).fit(X, y)
    out = model.decision_function(da.from_array(X, chunks=(50, 2)))
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), model.decision_function(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.predict(da.from_array(X, chunks=(50, 4))).compute(), model.predict(X))


# --------------------------------------------------------------------------- ConformalSVC n_iter_
def test_conformal_n_iter_passes_sklearn_check():
    check_non_transformer_estimators_n_iter("ConformalSVC", ConformalSVC())


def test_conformal_n_iter_is_the_sum_of_both_passes(tmp_path):
    X, y = make_classification(n_samples=100, n_features=4, random_state=1)
    for bias in ("free", "scaled"):
        model = ConformalSVC(gamma=0.5, bias=bias).fit(X, y)
        assert model.n_iter_.shape == (1,) and model.n_iter_.dtype == np.int32
        assert model.n_iter_[0] == model.first_pass_.n_iter_[0] + model.second_pass_.n_iter_[0] >= 2
    loaded = ConformalSVC.load(model.save(tmp_path / "c.zarr"))
    np.testing.assert_array_equal(loaded.n_iter_, model.n_iter_)


# --------------------------------------------------------------------------- persistence: every fitted attribute
def _public_fitted(model):
    return sorted(k for k in vars(model) if k.endswith("_") and not k.startswith("_"))


def _fitted(name):
    Xr, yr = make_regression(n_samples=80, n_features=3, noise=0.5, random_state=0)
    Xc, yc = make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                                 random_state=0)
    return {
        "NuSVR": lambda: NuSVR(nu=0.4).fit(Xr, yr),
        "SVR": lambda: SVR().fit(Xr, yr),
        "SVC": lambda: SVC().fit(Xc, yc),
        "NuSVC": lambda: NuSVC(nu=0.3).fit(Xc, yc),
        "OneClassSVM": lambda: OneClassSVM(nu=0.2).fit(Xr),
    }[name]()


def _same(a, b):
    if hasattr(a, "toarray"):
        a, b = a.toarray(), b.toarray()
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=0, abs=0)
    elif isinstance(a, (int, str, tuple, list, type(None), bool)):
        assert a == b
    else:  # objects (a kernel, ...): their JSON spec or repr
        assert repr(a) == repr(b)


@pytest.mark.parametrize("name", ["NuSVR", "SVR", "SVC", "NuSVC", "OneClassSVM"])
def test_a_loaded_model_has_every_fitted_attribute(name, tmp_path):
    model = _fitted(name)
    loaded = load_model(model.save(tmp_path / "m.zarr"))
    assert _public_fitted(loaded) == _public_fitted(model)
    for key in _public_fitted(model):
        _same(getattr(model, key), getattr(loaded, key))


def test_nu_svr_epsilon_is_saved(tmp_path):
    model = _fitted("NuSVR")
    loaded = load_model(model.save(tmp_path / "m.zarr"))
    assert loaded.epsilon_ == model.epsilon_ > 0


def test_an_old_nu_svr_model_without_epsilon_loads(tmp_path):
    """A NuSVR model written before ``epsilon`` (and how the Gram was held) were saved: loaded without
    ``epsilon_`` (the tube width depends on the training targets, which a model does not keep), with no error or
    warning, predicting as before."""
    import json

    from dkernel._runtime.integrity import json_crc32c

    model = _fitted("NuSVR")
    path = model.save(tmp_path / "m.zarr")
    meta_path = tmp_path / "m.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    attrs = meta["attributes"]
    assert attrs["epsilon"] == model.epsilon_
    for name in ("epsilon", "gram_dtype"):
        del attrs[name]
    attrs["checksums"]["metadata"] = json_crc32c(attrs, leave_out="metadata", within="checksums")
    meta_path.write_text(json.dumps(meta))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = load_model(path)
    assert not hasattr(old, "epsilon_") and not hasattr(old, "gram_dtype_")
    X, _ = make_regression(n_samples=80, n_features=3, noise=0.5, random_state=0)
    np.testing.assert_allclose(old.predict(X), model.predict(X), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- messages
def test_checkpoint_problem_count_message_is_singular_for_one():
    with pytest.raises(ValueError) as info:
        _check_problem_count("/tmp/ck", 1, 3)
    assert "1 binary problem," in str(info.value) and "1 binary problems" not in str(info.value)
    with pytest.raises(ValueError, match="holds the state of 2 binary problems, but this fit has 1 binary problem "):
        _check_problem_count("/tmp/ck", 2, 1)
    with pytest.raises(ValueError, match="this fit has 3 binary problems"):
        _check_problem_count("/tmp/ck", None, 3)


@pytest.fixture(scope="module")
def iris_uneven():
    X, y = load_iris(return_X_y=True)
    keep = np.concatenate([np.arange(0, 50), np.arange(50, 87), np.arange(100, 150)])  # 50, 37, 50 samples
    return X[keep], y[keep]


def test_sampled_centering_too_large_for_a_pair_names_the_pair(iris_uneven):
    X, y = iris_uneven
    with pytest.raises(ValueError) as info:
        SVC(centering="class-balanced", centering_sample=90).fit(X, y)
    message = str(info.value)
    assert "binary problem" in message and "87" in message
    assert "per binary problem" in message
    assert "centering_sample <= 87" in message


def test_sampled_centering_message_names_the_classes_when_given():
    y_pm = np.array([1.0] * 50 + [-1.0] * 37)
    labels = np.array(["setosa"] * 50 + ["versicolor"] * 37)
    with pytest.raises(SampleSizeError) as info:
        centering_for("class-balanced", 100, y_pm, np.random.default_rng(0), labels=labels)
    message = str(info.value)
    assert "binary problem of class 'setosa' against class 'versicolor'" in message
    assert "87 points: 50 of class 'setosa' and 37 of class 'versicolor'" in message
    assert "drawn per binary problem" in message
    assert "centering_sample=100" in message and "centering_sample <= 87" in message
    rest = np.array(["setosa"] * 50 + ["versicolor"] * 20 + ["virginica"] * 17)  # one-vs-rest
    with pytest.raises(SampleSizeError, match=r"class 'setosa' against the rest \(classes 'versicolor', 'virginica'\)"):
        centering_for("class-balanced", 100, y_pm, np.random.default_rng(0), labels=rest)
    # A size that fits is unchanged.
    assert centering_for("class-balanced", 80, y_pm, np.random.default_rng(0), labels=labels) is not None


def test_an_svc_names_the_pair_of_classes_whose_problem_is_smaller_than_the_centering_sample():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    with pytest.raises(ValueError, match=r"class 'setosa' against class 'versicolor', which has 100 points: 50 of "
                                         r"class 'setosa' and 50 of class 'versicolor'.*centering_sample <= 100"):
        SVC(centering="class-balanced", centering_sample=120).fit(X, names)
