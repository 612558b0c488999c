"""Model files of the ParzenWindowClassifier and of KernelPCA (formats ``dkernel-parzen``, ``dkernel-kernel-pca``),
the CLI's learners saved as real estimators, and KernelPCA's ``kernel_params``, ``copy_X`` and ``n_jobs``."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.decomposition import KernelPCA as SklearnKernelPCA

import dkernel
from dkernel.decomposition import KernelPCA
from dkernel.exceptions import ArtifactPathError, ModelFormatError
from dkernel.kernels import get_kernel
from dkernel.svm import ParzenWindowClassifier
from dkernel.svm._learner_models import KernelExpansion, fit_learner

KERNELS = [("rbf", {"gamma": 0.3}), ("poly", {"gamma": 0.2, "degree": 2, "coef0": 1.0}), ("linear", {})]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    keep = y < 2
    return X[keep], y[keep]


def _fitted_attributes(model):
    return {name: value for name, value in vars(model).items() if name.endswith("_") and not name.startswith("_")}


def _assert_same_attributes(loaded, model):
    ours, theirs = _fitted_attributes(loaded), _fitted_attributes(model)
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        if hasattr(value, "to_dict"):  # a Centering
            assert ours[name].to_dict() == value.to_dict(), name
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(ours[name], value)
            assert ours[name].dtype == value.dtype, name
        else:
            assert ours[name] == value, name


def _params(model):
    """``get_params`` but ``client`` (how a fit ran, not saved: as the SVMs' models)."""
    return {key: value for key, value in model.get_params().items() if key != "client"}


def _format_of(path):
    with open(f"{path}/zarr.json") as fh:
        return json.load(fh)["attributes"]["format"]


# --------------------------------------------------------------------------- ParzenWindowClassifier
@pytest.mark.parametrize("kernel, params", KERNELS)
def test_a_parzen_classifier_round_trips(iris, tmp_path, kernel, params):
    X, y = iris
    model = ParzenWindowClassifier(kernel, **params).fit(X, y)
    path = model.save(tmp_path / "p.zarr")
    assert _format_of(path) == "dkernel-parzen"
    for loaded in (ParzenWindowClassifier.load(path), dkernel.load_model(path)):
        assert type(loaded) is ParzenWindowClassifier
        _assert_same_attributes(loaded, model)
        np.testing.assert_allclose(loaded.decision_function(X), model.decision_function(X), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
        assert loaded.get_params() == model.get_params()
        assert loaded.score(X, y) == model.score(X, y)


def test_a_parzen_classifier_with_class_weights_and_a_precomputed_gram_round_trips(iris, tmp_path):
    X, y = iris
    K = get_kernel("rbf", gamma=0.3).block(X, X)
    model = ParzenWindowClassifier("precomputed", class_weight={0: 2.0, 1: 0.5}).fit(K, y)
    loaded = ParzenWindowClassifier.load(model.save(tmp_path / "p.zarr"))
    assert loaded.get_params() == model.get_params()
    assert loaded.X_fit_ is None
    np.testing.assert_allclose(loaded.decision_function(K), model.decision_function(K), rtol=0, atol=1e-12)


def test_a_parzen_classifier_of_a_kernel_function_is_refused(iris, tmp_path):
    X, y = iris
    model = ParzenWindowClassifier(lambda A, B: A @ B.T).fit(X, y)
    with pytest.raises(ValueError, match="Python function"):
        model.save(tmp_path / "p.zarr")
    assert not (tmp_path / "p.zarr").exists()


# --------------------------------------------------------------------------- KernelPCA
@pytest.mark.parametrize("kernel, params", KERNELS)
@pytest.mark.parametrize("inverse", [False, True])
def test_a_kernel_pca_round_trips(iris, tmp_path, kernel, params, inverse):
    X, _ = iris
    model = KernelPCA(3, kernel=kernel, fit_inverse_transform=inverse, client=False, **params).fit(X)
    path = model.save(tmp_path / "k.zarr")
    assert _format_of(path) == "dkernel-kernel-pca"
    for loaded in (KernelPCA.load(path), dkernel.load_model(path)):
        assert type(loaded) is KernelPCA
        _assert_same_attributes(loaded, model)
        assert _params(loaded) == _params(model)
        Z = model.transform(X)
        np.testing.assert_allclose(loaded.transform(X), Z, rtol=0, atol=1e-12)
        if inverse:
            np.testing.assert_allclose(loaded.inverse_transform(Z), model.inverse_transform(Z), rtol=0, atol=1e-12)


def test_a_kernel_pca_of_float32_data_and_a_class_balanced_origin_round_trips(iris, tmp_path):
    X, y = iris
    model = KernelPCA(2, kernel="rbf", gamma=0.5, center="class-balanced", client=False).fit(X.astype(np.float32), y)
    loaded = KernelPCA.load(model.save(tmp_path / "k.zarr"))
    _assert_same_attributes(loaded, model)
    assert loaded.centering_.scheme == model.centering_.scheme
    np.testing.assert_array_equal(loaded.centering_.weights, model.centering_.weights)
    np.testing.assert_allclose(loaded.transform(X[:7]), model.transform(X[:7]), rtol=0, atol=1e-6)


def test_a_kernel_pca_of_a_precomputed_gram_keeps_what_transform_reads(iris, tmp_path):
    X, _ = iris
    model = KernelPCA(2, kernel="precomputed", client=False).fit(X @ X.T)
    model.save(tmp_path / "k.zarr")
    loaded = dkernel.load_model(tmp_path / "k.zarr")
    K_test = X[:7] @ X.T
    np.testing.assert_allclose(loaded.transform(K_test), model.transform(K_test), atol=1e-12)


# --------------------------------------------------------------------------- the house rules
def test_an_existing_folder_is_refused_and_kept(iris, tmp_path):
    X, y = iris
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    for model in (ParzenWindowClassifier("rbf").fit(X, y), KernelPCA(2, kernel="rbf", client=False).fit(X)):
        for overwrite in (False, True):
            with pytest.raises(ArtifactPathError):
                model.save(folder, overwrite=overwrite)
        assert (folder / "notes.txt").read_text() == "keep me"


def test_overwrite_replaces_a_model_of_the_same_format_only(iris, tmp_path):
    X, y = iris
    parzen = ParzenWindowClassifier("rbf", gamma=0.1).fit(X, y)
    kpca = KernelPCA(2, kernel="rbf", client=False).fit(X)
    path = parzen.save(tmp_path / "p.zarr")
    with pytest.raises(ArtifactPathError):
        parzen.save(path)
    ParzenWindowClassifier("rbf", gamma=0.5).fit(X, y).save(path, overwrite=True)
    assert ParzenWindowClassifier.load(path).gamma == 0.5
    with pytest.raises(ArtifactPathError, match="ParzenWindowClassifier"):
        kpca.save(path, overwrite=True)
    assert type(dkernel.load_model(path)) is ParzenWindowClassifier


def test_reading_a_model_as_another_estimator_names_both(iris, tmp_path):
    X, y = iris
    path = KernelPCA(2, kernel="rbf", client=False).fit(X).save(tmp_path / "k.zarr")
    with pytest.raises(ModelFormatError, match=r"KernelPCA.*not a model of ParzenWindowClassifier"):
        ParzenWindowClassifier.load(path)
    parzen = ParzenWindowClassifier("rbf").fit(X, y).save(tmp_path / "p.zarr")
    with pytest.raises(ModelFormatError, match=r"ParzenWindowClassifier.*not a model of KernelPCA"):
        KernelPCA.load(parzen)


# --------------------------------------------------------------------------- the learners of the CLI
def test_an_old_parzen_learner_model_loads_as_the_classifier(iris, tmp_path):
    """A model of format ``dkernel-learner`` (what ``dkernel fit --learner parzen`` wrote before) still loads."""
    X, y = iris
    kernel = get_kernel("rbf", gamma=0.3).resolve(X.shape[1])
    reference = ParzenWindowClassifier(kernel).fit(X, y)
    old = KernelExpansion("parzen", kernel, X, reference.dual_coef_, reference.classes_)
    path = old.save(tmp_path / "old.zarr")
    assert _format_of(path) == "dkernel-learner"
    for loaded in (dkernel.load_model(path), ParzenWindowClassifier.load(path)):
        assert type(loaded) is ParzenWindowClassifier
        np.testing.assert_array_equal(loaded.predict(X), old.predict(X))
        np.testing.assert_allclose(loaded.decision_function(X), old.decision_function(X), rtol=0, atol=1e-12)
        assert loaded.score(X, y) == reference.score(X, y)
        assert loaded.get_params() == reference.get_params()


def test_the_ridge_learner_is_a_regressor_after_load(iris, tmp_path):
    X, _ = iris
    target = np.sin(X[:, 0])
    model = fit_learner("ridge", X, target, get_kernel("rbf", gamma=0.3), alpha=0.1)
    loaded = dkernel.load_model(model.save(tmp_path / "r.zarr"))
    assert type(loaded) is KernelExpansion
    assert loaded.get_params() == model.get_params() and loaded.get_params()["alpha"] == 0.1
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=0, atol=1e-12)
    from sklearn.metrics import r2_score

    assert loaded.score(X, target) == pytest.approx(r2_score(target, model.predict(X)), abs=1e-12)
    assert 0.5 < loaded.score(X, target) <= 1.0


def test_the_cli_saves_a_parzen_classifier_that_scores(iris, tmp_path, monkeypatch, capsys):
    from dkernel.cli import main

    X, y = iris
    monkeypatch.chdir(tmp_path)
    np.save("X.npy", X)
    np.save("y.npy", y)
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--gamma", "0.3", "--learner", "parzen",
                 "--model", "pw.zarr", "--quiet"]) == 0
    model = dkernel.load_model("pw.zarr")
    assert type(model) is ParzenWindowClassifier
    expected = ParzenWindowClassifier("rbf", gamma=0.3).fit(X, y)
    assert model.score(X, y) == expected.score(X, y)
    assert main(["predict", "--model", "pw.zarr", "--data", "X.npy", "--out", "p.npy"]) == 0
    np.testing.assert_array_equal(np.load("p.npy"), expected.predict(X))
    # Fitted again over it with --overwrite (a model of its own format), refused without.
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--learner", "parzen", "--model", "pw.zarr",
                 "--quiet"]) == 2
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--learner", "parzen", "--model", "pw.zarr",
                 "--overwrite", "--quiet"]) == 0


# --------------------------------------------------------------------------- KernelPCA's new parameters
def _quadratic(a, b, scale=1.0, shift=0.0):
    """A kernel that takes two points (scikit-learn's callables) or two blocks of rows (dkernel's)."""
    return (scale * np.dot(a, np.transpose(b)) + shift) ** 2


def test_kernel_params_of_a_callable_kernel_match_scikit_learn(iris):
    X, _ = iris
    params = {"scale": 0.5, "shift": 1.0}
    ours = KernelPCA(3, kernel=_quadratic, kernel_params=params, eigen_solver="dense", client=False).fit(X)
    theirs = SklearnKernelPCA(3, kernel=_quadratic, kernel_params=params, eigen_solver="dense").fit(X)
    for a, b in ((ours.transform(X[:20]), theirs.transform(X[:20])), (ours.eigenvectors_, theirs.eigenvectors_)):
        signs = np.sign(np.sum(a * b, axis=0))
        np.testing.assert_allclose(a * signs, b, rtol=0, atol=1e-8)
    plain = KernelPCA(3, kernel=_quadratic, eigen_solver="dense", client=False).fit(X)
    assert not np.allclose(np.abs(plain.transform(X[:20])), np.abs(ours.transform(X[:20])))


def test_kernel_params_reach_the_inverse_transform(iris):
    X, _ = iris
    params = {"scale": 0.5, "shift": 1.0}
    ours = KernelPCA(3, kernel=_quadratic, kernel_params=params, fit_inverse_transform=True, eigen_solver="dense",
                     client=False).fit(X)
    theirs = SklearnKernelPCA(3, kernel=_quadratic, kernel_params=params, fit_inverse_transform=True,
                              eigen_solver="dense").fit(X)
    Z = theirs.transform(X[:5])
    signs = np.sign(np.sum(ours.eigenvectors_ * theirs.eigenvectors_, axis=0))
    np.testing.assert_allclose(ours.inverse_transform(Z * signs), theirs.inverse_transform(Z), rtol=0, atol=1e-6)


def test_copy_x_false_keeps_a_reference_and_true_a_copy(iris):
    X = np.array(iris[0])
    kept = KernelPCA(2, kernel="rbf", copy_X=False, client=False).fit(X)
    copied = KernelPCA(2, kernel="rbf", client=False).fit(X)
    assert kept.X_fit_ is X
    assert copied.X_fit_ is not X and not np.shares_memory(copied.X_fit_, X)
    before = copied.transform(X[:3])
    X *= 2.0
    np.testing.assert_array_equal(copied.transform(np.array(iris[0][:3])), before)
    assert not np.allclose(kept.transform(np.array(iris[0][:3])), before)


def test_n_jobs_is_accepted_and_changes_nothing(iris):
    X, _ = iris
    a = KernelPCA(2, kernel="rbf", n_jobs=4, client=False).fit_transform(X)
    b = KernelPCA(2, kernel="rbf", client=False).fit_transform(X)
    np.testing.assert_array_equal(a, b)
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="n_jobs"):
        KernelPCA(2, n_jobs="many").fit(X)


# --- an SVM over a kernel adapted by Kandola's inductive alignment (Algorithm 2) -------------------------------------

def _adapted_kernel():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from dkernel.alignment import KernelAligner

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return KernelAligner(kernel="rbf", gamma=0.05, rank=15).fit(X[:300], y[:300]).adapted_kernel_, X, y


@pytest.mark.parametrize("estimator", ["SVC", "SVR", "NuSVC", "OneClassSVM"])
def test_an_svm_over_an_adapted_kernel_round_trips(tmp_path, estimator):
    import dkernel
    from dkernel.alignment._inductive import AdaptedKernel

    kernel, X, y = _adapted_kernel()
    cls = getattr(dkernel, estimator)
    model = cls(kernel=kernel)
    model = model.fit(X[:300]) if estimator == "OneClassSVM" else model.fit(X[:300], y[:300])
    loaded = dkernel.load_model(model.save(tmp_path / "m"))
    assert type(loaded) is cls and isinstance(loaded.kernel, AdaptedKernel)
    np.testing.assert_array_equal(loaded.kernel.projection, kernel.projection)
    np.testing.assert_array_equal(loaded.kernel.X_fit, kernel.X_fit)
    assert loaded.kernel.kernel.get_params() == kernel.kernel.get_params()
    values = "predict" if estimator == "SVR" else "decision_function"
    np.testing.assert_allclose(getattr(loaded, values)(X[300:]), getattr(model, values)(X[300:]), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(loaded.predict(X[300:]), model.predict(X[300:]))


def test_a_damaged_adapted_kernel_is_not_used(tmp_path):
    import dkernel
    from dkernel.exceptions import CorruptModelError

    kernel, X, y = _adapted_kernel()
    path = dkernel.SVC(kernel=kernel).fit(X[:300], y[:300]).save(tmp_path / "m")
    chunk = next(p for p in (tmp_path / "m" / "adapted_projection").rglob("*") if p.is_file() and p.name != "zarr.json")
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    with pytest.raises(CorruptModelError, match="adapted_projection"):
        dkernel.load_model(path)


def test_an_svm_over_a_python_function_is_still_refused(tmp_path):
    import dkernel

    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30) % 2
    model = dkernel.SVC(kernel=lambda A, B: A @ B.T).fit(X, y)
    with pytest.raises(ValueError, match="kernel is a Python function"):
        model.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()
