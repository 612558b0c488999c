"""Every model format on disk: round trips, overwrite only of the same format, and damage of any kind detected.

Each registered format (SVC, ConformalSVC, GeneralizedBiasSVC, the Parzen window and ridge learners) is saved and
read back by ``dkernel.load_model`` as its own class with the same predictions. ``overwrite`` replaces only a model
of the same format; a model of another format, a Gram store, a user's folder or file is refused and left byte for
byte as it was. Damage (a deleted or altered chunk file, an edited parameter, swapped classes, a truncated or
undecodable ``zarr.json``, every single-bit flip of the metadata) raises ``CorruptModelError``, never a third-party
error and never a model that predicts from damaged data. Models without checksums (format version 1) load with a
warning.
"""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dkernel
from dkernel import SVC, ConformalSVC, GeneralizedBiasSVC
from dkernel.exceptions import ArtifactPathError, CorruptModelError, ModelFormatError, UnverifiedModelWarning
from dkernel.kernels import RBFKernel
from dkernel.svm import FORMATS
from dkernel.svm._learner_models import KernelExpansion, fit_learner


def _data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=60) > 0, 1, -1)
    return X, y, rng.normal(size=(25, 3))


def _three_classes(X):
    return np.array(["a", "b", "c"])[np.digitize(X[:, 1], [-0.4, 0.4])]


def _svc():
    X, y, Z = _data()
    return SVC(C=2.0, gamma=0.5).fit(X, y), Z


def _svc_sparse_multiclass_probability():
    X, _, Z = _data()
    clf = SVC(C=3.0, gamma=0.3, probability=True, random_state=0, class_weight="balanced")
    return clf.fit(sp.csr_matrix(X), _three_classes(X)), Z


def _svc_precomputed():
    X, y, Z = _data()
    kernel = RBFKernel(gamma=0.5)
    clf = SVC(kernel="precomputed", C=2.0).fit(kernel.block(X, X, symmetric=True), y)
    return clf, kernel.block(Z, X)


def _svc_centered_linear():
    X, y, Z = _data()
    return SVC(kernel="linear", C=0.5, centering="class-balanced").fit(X + 3.0, y), Z + 3.0


def _conformal():
    X, y, Z = _data()
    return ConformalSVC(C=10.0, gamma=1.0).fit(X, y), Z


def _generalized_bias():
    X, _, Z = _data()
    return GeneralizedBiasSVC(C=2.0, gamma=0.5).fit(X, _three_classes(X)), Z


def _svr():
    X, _, Z = _data()
    return dkernel.SVR(C=2.0, gamma=0.5, epsilon=0.05).fit(X, np.sin(X[:, 0])), Z


def _nu_svr():
    X, _, Z = _data()
    return dkernel.NuSVR(nu=0.4, C=2.0, gamma=0.5).fit(X, np.sin(X[:, 0])), Z


def _nu_svc_centered_multiclass():
    X, _, Z = _data()
    return dkernel.NuSVC(nu=0.4, gamma=0.5, centering="standard").fit(X, _three_classes(X)), Z


def _one_class_centered():
    X, _, Z = _data()
    return dkernel.OneClassSVM(nu=0.3, gamma=0.5, centering="standard", centering_sample=5, random_state=0).fit(X), Z


def _parzen():
    X, y, Z = _data()
    return fit_learner("parzen", X, y, RBFKernel(gamma=0.3)), Z


def _ridge():
    X, _, Z = _data()
    return fit_learner("ridge", X, np.sin(X[:, 0]), RBFKernel(gamma=0.3), alpha=0.1), Z


def _kernel_pca():
    from dkernel.decomposition import KernelPCA

    X, _, Z = _data()
    return KernelPCA(n_components=3, kernel="rbf", gamma=0.3, fit_inverse_transform=True).fit(X), Z


#: name -> (a fitted model and its test input, the format it is saved in)
MODELS = {
    "svc": (_svc, "dkernel-svc"),
    "svc-sparse-multiclass-probability": (_svc_sparse_multiclass_probability, "dkernel-svc"),
    "svc-precomputed": (_svc_precomputed, "dkernel-svc"),
    "svc-centered-linear": (_svc_centered_linear, "dkernel-svc"),
    "conformal": (_conformal, "dkernel-conformal-svc"),
    "generalized-bias": (_generalized_bias, "dkernel-generalized-bias-svc"),
    "svr": (_svr, "dkernel-svr"),
    "nu-svr": (_nu_svr, "dkernel-nu-svr"),
    "nu-svc-centered-multiclass": (_nu_svc_centered_multiclass, "dkernel-nu-svc"),
    "one-class-centered": (_one_class_centered, "dkernel-one-class-svm"),
    "parzen": (_parzen, "dkernel-parzen"),
    "ridge": (_ridge, "dkernel-learner"),
    "kernel-pca": (_kernel_pca, "dkernel-kernel-pca"),
}

#: One model of each format, for the tests that go over the formats.
ONE_PER_FORMAT = {"dkernel-svc": "svc", "dkernel-conformal-svc": "conformal",
                  "dkernel-generalized-bias-svc": "generalized-bias", "dkernel-svr": "svr", "dkernel-nu-svr": "nu-svr",
                  "dkernel-nu-svc": "nu-svc-centered-multiclass", "dkernel-one-class-svm": "one-class-centered", "dkernel-learner": "ridge",
                  "dkernel-parzen": "parzen", "dkernel-kernel-pca": "kernel-pca"}


@pytest.fixture(scope="module")
def fitted():
    return {name: make() for name, (make, _) in MODELS.items()}


def _snapshot(path):
    """Every file below ``path`` with its bytes, and every folder: what must not change."""
    path = Path(path)
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): (p.read_bytes() if p.is_file() else None) for p in sorted(path.rglob("*"))}


def _outputs(model, Z):
    if not hasattr(model, "predict"):  # kernel PCA: its projections and pre-images
        return [model.transform(Z), model.inverse_transform(model.transform(Z))]
    out = [np.asarray(model.predict(Z))]
    if hasattr(model, "decision_function"):
        out.append(np.asarray(model.decision_function(Z)))
    if getattr(model, "probability", False):
        out.append(model.predict_proba(Z))
    return out


def _assert_same_model(loaded, model, Z):
    assert type(loaded) is type(model)
    for a, b in zip(_outputs(loaded, Z), _outputs(model, Z)):
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        else:
            np.testing.assert_array_equal(a, b)


def _rewrite_attributes(folder, edit):
    """Apply ``edit`` to the attributes of ``folder/zarr.json`` and write it back as valid JSON."""
    meta_path = Path(folder) / "zarr.json"
    meta = json.loads(meta_path.read_text())
    edit(meta["attributes"])
    meta_path.write_text(json.dumps(meta, indent=2))


def _chunk_files(folder):
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and "c" in p.relative_to(folder).parts[:-1])


def _flip_bit(path, offset, bit=0):
    """Flip one bit of the file in place (the file is not rewritten: much faster on some filesystems)."""
    with open(path, "r+b") as fh:
        fh.seek(offset)
        value = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([value ^ (1 << bit)]))


# --------------------------------------------------------------------------- round trips
def test_the_cases_cover_every_registered_format():
    assert {fmt for _, fmt in MODELS.values()} == set(FORMATS) == set(ONE_PER_FORMAT)


@pytest.mark.parametrize("name", MODELS)
def test_every_model_round_trips_through_load_model_as_its_own_class(fitted, tmp_path, name):
    model, Z = fitted[name]
    path = model.save(tmp_path / "model.zarr")
    assert json.loads((tmp_path / "model.zarr" / "zarr.json").read_text())["attributes"]["format"] == MODELS[name][1]
    loaded = dkernel.load_model(path)
    _assert_same_model(loaded, model, Z)
    _assert_same_model(type(model).load(path), model, Z)
    if hasattr(model, "get_params"):
        assert {k: v for k, v in loaded.get_params().items() if k not in ("kernel", "client")} == \
            {k: v for k, v in model.get_params().items() if k not in ("kernel", "client")}
    assert not any(p.suffix in (".pkl", ".pickle") for p in (tmp_path / "model.zarr").rglob("*"))


def test_every_estimator_that_saves_has_a_format_of_its_own_class():
    """A subclass saved in its base class's format would load as the base class, or not at all (a NuSVR as an SVR
    refused for its ``nu``), and ``overwrite`` would take one for the other."""
    from dkernel.svm._persist import format_of

    savers = [getattr(dkernel, name) for name in dkernel.__all__ if hasattr(getattr(dkernel, name), "save")]
    assert {dkernel.NuSVR, dkernel.NuSVC, dkernel.SVR, dkernel.SVC} <= set(savers)
    for cls in savers:
        assert format_of(cls()).estimator_class() is cls, cls.__name__


@pytest.mark.parametrize("labels", [[0, 1, 2], [np.int64(0), np.int64(1), np.int64(2)], ["a", "b", "c"]],
                         ids=["int", "numpy-int", "str"])
def test_a_class_weight_dict_keeps_its_labels_and_the_loaded_model_refits(tmp_path, labels):
    """JSON keys are strings: ``{0: 2.0}`` read back as ``{"0": 2.0}`` names no class of the data, and a clone of the
    loaded model cannot be fitted; ``{np.int64(0): 2.0}`` is no JSON at all."""
    from sklearn.base import clone

    X, _, Z = _data()
    y = np.array(labels, dtype=object)[np.digitize(X[:, 1], [-0.4, 0.4])].tolist()
    weights = {label: weight for label, weight in zip(labels, (2.0, 1.0, 0.5))}
    model = SVC(gamma=0.5, class_weight=weights).fit(X, y)
    loaded = dkernel.load_model(model.save(tmp_path / "m.zarr"))
    assert loaded.get_params()["class_weight"] == weights
    assert {type(label) for label in loaded.get_params()["class_weight"]} == {type(np.asarray(labels[0]).item())}
    np.testing.assert_array_equal(clone(loaded).fit(X, y).decision_function(Z), model.decision_function(Z))


def test_feature_names_are_kept(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y, Z = _data()
    clf = SVC(gamma=0.5).fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    loaded = dkernel.load_model(clf.save(tmp_path / "m.zarr"))
    assert loaded.feature_names_in_.tolist() == ["a", "b", "c"]
    Z = pd.DataFrame(Z, columns=["a", "b", "c"])
    np.testing.assert_array_equal(loaded.predict(Z), clf.predict(Z))


def test_a_conformal_model_is_replaced_by_one_of_its_own_format(fitted, tmp_path):
    X, y, Z = _data()
    first = ConformalSVC(C=10.0, gamma=1.0).fit(X, y)
    second = ConformalSVC(C=1.0, gamma=0.5, conformal="amari-wu").fit(X, y)
    path = first.save(tmp_path / "conformal.zarr")
    assert second.save(path, overwrite=True) == path
    _assert_same_model(dkernel.load_model(path), second, Z)
    with pytest.raises(ArtifactPathError, match="already holds a dkernel model of a ConformalSVC"):
        first.save(path)


def test_a_model_being_read_as_another_estimator_names_the_right_one(fitted, tmp_path):
    path = fitted["conformal"][0].save(tmp_path / "conformal.zarr")
    with pytest.raises(ModelFormatError, match=r"holds a dkernel model of a ConformalSVC, not a model of SVC.*"
                                               r"ConformalSVC.load"):
        SVC.load(path)
    with pytest.raises(ModelFormatError, match="not a model of KernelExpansion"):
        KernelExpansion.load(fitted["svc"][0].save(tmp_path / "svc.zarr"))


def test_models_that_json_cannot_hold_are_refused_before_anything_is_written(tmp_path):
    from sklearn.preprocessing import StandardScaler

    X, y, _ = _data()
    with pytest.raises(ValueError, match="kernel is a Python function"):
        SVC(kernel=lambda A, B: A @ B.T).fit(X, y).save(tmp_path / "function.zarr")
    with pytest.raises(ValueError, match="features are StandardScaler cannot be saved"):
        GeneralizedBiasSVC(features=StandardScaler()).fit(X, y).save(tmp_path / "features.zarr")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- overwrite
@pytest.mark.parametrize("there, written", [(a, b) for a in ONE_PER_FORMAT for b in ONE_PER_FORMAT if a != b])
def test_overwrite_refuses_a_model_of_another_format_and_leaves_it_byte_for_byte(fitted, tmp_path, there, written):
    path = fitted[ONE_PER_FORMAT[there]][0].save(tmp_path / "model.zarr")
    before = _snapshot(path)
    with pytest.raises(ArtifactPathError) as info:
        fitted[ONE_PER_FORMAT[written]][0].save(path, overwrite=True)
    assert path in str(info.value) and f"holds {FORMATS[there].description}, not" in str(info.value)
    assert _snapshot(path) == before
    assert sorted(os.listdir(tmp_path)) == ["model.zarr"]


@pytest.mark.parametrize("what", ["gram store", "user folder", "user file"])
def test_overwrite_refuses_a_gram_store_a_user_folder_or_file(fitted, tmp_path, what):
    from dkernel.gram import GramMatrix

    path = tmp_path / "target"
    if what == "gram store":
        GramMatrix.compute(_data()[0], kernel="rbf", gamma=0.5, store=path, progress=False)
        message = "holds a dkernel Gram store"
    elif what == "user folder":
        (path / "results").mkdir(parents=True)
        (path / "NOTES.txt").write_text("mine")
        (path / "results" / "r.csv").write_text("1,2\n")
        message = "is not a dkernel model of an SVC"
    else:
        path.write_bytes(b"my own data")
        message = "is a file"
    before = _snapshot(path)
    for model in (fitted["svc"][0], fitted["conformal"][0], fitted["parzen"][0]):
        with pytest.raises(ArtifactPathError, match=message if model is fitted["svc"][0] else None) as info:
            model.save(path, overwrite=True)
        assert str(path) in str(info.value)
    assert _snapshot(path) == before
    assert sorted(os.listdir(tmp_path)) == ["target"]


# --------------------------------------------------------------------------- damage
def _assert_damaged(path, *fragments):
    with pytest.raises(CorruptModelError) as info:
        dkernel.load_model(path)
    message = str(info.value)
    assert str(path) in message and "damaged" in message and "fit the model again and save it" in message
    for fragment in fragments:
        assert fragment in message
    return info.value


def test_a_deleted_chunk_of_the_support_vectors_is_detected(fitted, tmp_path):
    path = Path(fitted["svc"][0].save(tmp_path / "m.zarr"))
    (chunk,) = _chunk_files(path / "support_vectors")
    chunk.unlink()  # zarr reads a missing chunk as its fill value, zeros
    error = _assert_damaged(path, "array support_vectors does not match its checksum")
    assert error.path == str(path) and "support_vectors" in error.detail


@pytest.mark.parametrize("fmt", ONE_PER_FORMAT)
def test_a_flipped_bit_or_a_deletion_in_any_chunk_file_is_detected(fitted, tmp_path, fmt):
    path = Path(fitted[ONE_PER_FORMAT[fmt]][0].save(tmp_path / "m.zarr"))
    chunks = _chunk_files(path)
    assert len(chunks) >= 2
    for chunk in chunks:
        original = chunk.read_bytes()
        for offset in (0, len(original) // 2, len(original) - 1):
            _flip_bit(chunk, offset, bit=offset % 8)
            _assert_damaged(path)
            _flip_bit(chunk, offset, bit=offset % 8)
        chunk.unlink()
        _assert_damaged(path)
        chunk.write_bytes(original)
    dkernel.load_model(path)  # restored: whole again


@pytest.mark.parametrize("edit, found", [
    (lambda a: (a["params"].update(gamma=0.25), a["kernel"]["params"].update(gamma=0.25)), "zarr.json"),
    (lambda a: a.update(classes=a["classes"][::-1]), "zarr.json"),
    (lambda a: a["checksums"]["arrays"]["intercept"].update(crc32c=12345), "zarr.json"),
    (lambda a: a.pop("checksums"), "its checksums are missing"),
    (lambda a: a.pop("sv_shape"), "zarr.json"),
])
def test_edited_parameters_classes_or_checksums_are_detected(fitted, tmp_path, edit, found):
    path = fitted["svc"][0].save(tmp_path / "m.zarr")
    _rewrite_attributes(path, edit)
    _assert_damaged(path, found)


@pytest.mark.parametrize("damage, found", [
    (lambda raw: raw[: len(raw) // 2], "zarr.json is not complete JSON"),
    (lambda raw: b"", "zarr.json is not complete JSON"),
    (lambda raw: raw[:40] + b"\xff\xfe" + raw[42:], "zarr.json is not UTF-8 text"),
])
def test_a_truncated_or_undecodable_metadata_file_is_detected(fitted, tmp_path, damage, found):
    path = Path(fitted["svc"][0].save(tmp_path / "m.zarr"))
    (path / "zarr.json").write_bytes(damage((path / "zarr.json").read_bytes()))
    _assert_damaged(path, found)


def test_damaged_array_metadata_or_a_missing_array_is_detected(fitted, tmp_path):
    path = Path(fitted["svc"][0].save(tmp_path / "m.zarr"))
    saved = (path / "pair_coef" / "zarr.json").read_bytes()
    (path / "pair_coef" / "zarr.json").write_bytes(saved[:30])
    _assert_damaged(path, "array pair_coef cannot be read")
    (path / "pair_coef" / "zarr.json").write_bytes(saved.replace(b'"float64"', b'"float32"'))
    _assert_damaged(path, "array pair_coef")
    shutil.rmtree(path / "pair_coef")
    _assert_damaged(path, "array pair_coef cannot be read")


def test_a_missing_or_exchanged_pass_of_a_conformal_model_is_detected(fitted, tmp_path):
    path = Path(fitted["conformal"][0].save(tmp_path / "m.zarr"))
    shutil.copytree(path, tmp_path / "copy.zarr")
    shutil.rmtree(path / "second_pass")
    _assert_damaged(path, "its nested model second_pass", "missing")
    shutil.copytree(path / "first_pass", path / "second_pass")
    _assert_damaged(path, "its nested model second_pass", "not the model saved with this one")
    copy = tmp_path / "copy.zarr"
    (chunk, *_) = _chunk_files(copy / "first_pass" / "support_vectors")
    chunk.unlink()
    _assert_damaged(copy, "its nested model first_pass: array support_vectors does not match its checksum")


@pytest.mark.parametrize("fmt", ["dkernel-svc", "dkernel-learner"])
def test_every_single_bit_flip_of_the_metadata_is_detected_or_harmless(fitted, tmp_path, fmt):
    """A flip either leaves the same model (``1e-3`` → ``1E-3``) or raises CorruptModelError; nothing else."""
    model, Z = fitted[ONE_PER_FORMAT[fmt]]
    path = Path(model.save(tmp_path / "m.zarr"))
    expected = _outputs(model, Z)
    first_array = next(iter(json.loads((path / "zarr.json").read_text())["attributes"]["checksums"]["arrays"]))
    for meta in (path / "zarr.json", path / first_array / "zarr.json"):
        original = meta.read_bytes()
        for offset in range(len(original)):
            _flip_bit(meta, offset, bit=offset % 8)
            try:
                loaded = dkernel.load_model(path)
            except CorruptModelError as error:
                assert "damaged" in str(error) or "not a dkernel model" in str(error)
            else:
                for a, b in zip(_outputs(loaded, Z), expected):
                    np.testing.assert_array_equal(a, b)
            _flip_bit(meta, offset, bit=offset % 8)
        assert meta.read_bytes() == original


@pytest.mark.parametrize("what, setup, found", [
    ("empty folder", lambda p: p.mkdir(), "the folder has no zarr.json (it is empty)"),
    ("user folder", lambda p: (p.mkdir(), (p / "notes.txt").write_text("mine")), "the folder has no zarr.json"),
    ("file", lambda p: p.write_text("mine"), "it is a file"),
    ("zarr group", lambda p: __import__("zarr").open_group(p, mode="w").attrs.update({"x": 1}),
     "names no dkernel model format"),
])
def test_a_path_that_holds_no_model_is_refused_clearly(tmp_path, what, setup, found):
    path = tmp_path / "thing"
    setup(path)
    with pytest.raises(CorruptModelError, match="is not a dkernel model") as info:
        dkernel.load_model(path)
    assert str(path) in str(info.value) and found in str(info.value)


def test_a_gram_store_or_nothing_at_the_path_is_refused_clearly(tmp_path):
    from dkernel.gram import GramMatrix

    GramMatrix.compute(_data()[0], kernel="rbf", gamma=0.5, store=tmp_path / "K.zarr", progress=False)
    with pytest.raises(CorruptModelError, match="is not a dkernel model: it holds a dkernel Gram store"):
        dkernel.load_model(tmp_path / "K.zarr")
    with pytest.raises(FileNotFoundError, match="no model at"):
        dkernel.load_model(tmp_path / "nothing.zarr")


# --------------------------------------------------------------------------- models without checksums
def _as_version_1(folder, learner=False):
    """The layout of a model written before checksums: the same arrays and attributes, no checksums."""
    def edit(attrs):
        attrs.pop("checksums")
        if learner:
            attrs.pop("version")
        else:
            attrs["version"] = 1
            attrs.pop("feature_names_in", None)

    _rewrite_attributes(folder, edit)


@pytest.mark.parametrize("name", ["svc", "svc-sparse-multiclass-probability", "conformal", "parzen"])
def test_a_model_written_without_checksums_loads_with_a_warning(fitted, tmp_path, name):
    model, Z = fitted[name]
    path = Path(model.save(tmp_path / "m.zarr"))
    for folder in [path, *(path / part for part in ("first_pass", "second_pass") if (path / part).is_dir())]:
        _as_version_1(folder, learner=name == "parzen")
    with pytest.warns(UnverifiedModelWarning, match="without checksums"):
        loaded = dkernel.load_model(path)
    _assert_same_model(loaded, model, Z)
    # Saved again, it has them.
    again = Path(loaded.save(tmp_path / "again.zarr"))
    assert "checksums" in json.loads((again / "zarr.json").read_text())["attributes"]


def test_a_model_without_checksums_still_reports_missing_parts_clearly(fitted, tmp_path):
    path = Path(fitted["svc"][0].save(tmp_path / "m.zarr"))
    _as_version_1(path)
    shutil.rmtree(path / "intercept")
    with pytest.warns(UnverifiedModelWarning):
        _assert_damaged(path, "intercept is missing")
