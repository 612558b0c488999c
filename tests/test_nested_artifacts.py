"""An artifact inside the folder of another artifact: never written there, never deleted with it.

A model saved inside another model's folder, or a model placed by hand inside
a Gram store, is not part of the layout dkernel writes for the outer
artifact: ``overwrite`` of the outer one refuses and leaves both intact, and
a new artifact is not written inside another's folder in the first place.
"""

import os
from pathlib import Path

import numpy as np
import pytest

import dkernel
from dkernel._runtime import artifacts
from dkernel.exceptions import ArtifactPathError
from dkernel.gram import GramMatrix

GAMMA = 0.5


@pytest.fixture(scope="module")
def model():
    """A small fitted SVC."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    return dkernel.SVC(kernel="rbf", gamma=GAMMA).fit(X, y), X


def _files(folder):
    """Every file under ``folder``, as sorted relative names."""
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file())


def _nest_by_hand(outer, inner):
    """Place the complete artifact ``inner`` at ``outer/inner.name`` (as a user, or a dkernel before the fix, did)."""
    os.rename(inner, outer / inner.name)
    return outer / inner.name


def test_overwrite_of_a_model_holding_another_model_is_refused(model, tmp_path):
    fitted, X = model
    outer = Path(fitted.save(tmp_path / "outer.zarr"))
    inner = _nest_by_hand(outer, Path(fitted.save(tmp_path / "mine.zarr")))
    before = _files(outer)
    with pytest.raises(ArtifactPathError, match=r"mine\.zarr \(a dkernel model of an SVC\).*not replaced"):
        fitted.save(outer, overwrite=True)
    assert _files(outer) == before
    np.testing.assert_array_equal(dkernel.load_model(inner).predict(X), fitted.predict(X))
    np.testing.assert_array_equal(dkernel.load_model(outer).predict(X), fitted.predict(X))


def test_overwrite_of_a_gram_store_holding_a_model_is_refused(model, tmp_path):
    fitted, X = model
    store = tmp_path / "K.zarr"
    GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=store, chunk=16, progress=False)
    inner = _nest_by_hand(store, Path(fitted.save(tmp_path / "inner.zarr")))
    before = _files(store)
    with pytest.raises(ArtifactPathError, match=r"inner\.zarr \(a dkernel model of an SVC\).*not replaced"):
        GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=store, chunk=16, progress=False, overwrite=True)
    assert _files(store) == before
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no replacement left beside it
    np.testing.assert_array_equal(dkernel.load_model(inner).predict(X), fitted.predict(X))
    kept = GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=store, chunk=16, progress=False)
    assert kept.n_blocks_computed == 0  # the store is still the one computed, complete


def test_a_plain_zarr_group_inside_a_model_is_not_part_of_it(model, tmp_path):
    import zarr

    fitted, _ = model
    outer = Path(fitted.save(tmp_path / "outer.zarr"))
    zarr.open_group(outer / "notes", mode="w").attrs["mine"] = True
    assert artifacts.foreign_files(outer, "model") == ["notes/"]
    with pytest.raises(ArtifactPathError, match=r"notes/"):
        fitted.save(outer, overwrite=True)
    assert (outer / "notes" / "zarr.json").is_file()


@pytest.mark.parametrize("inside", ["mine.zarr", "sub/mine.zarr", "first_pass"])
def test_a_model_is_not_saved_inside_another_model(model, tmp_path, inside):
    fitted, _ = model
    outer = Path(fitted.save(tmp_path / "outer.zarr"))
    before = _files(outer)
    with pytest.raises(ArtifactPathError, match=rf"{outer} holds a dkernel model of an SVC.*outside {outer}"):
        fitted.save(outer / inside)
    assert _files(outer) == before
    assert sorted(os.listdir(outer)) == sorted(os.listdir(tmp_path / "outer.zarr"))
    assert not (outer / inside).exists() and not [p for p in os.listdir(outer) if p.startswith(".")]


def test_a_gram_store_is_not_written_inside_a_model(model, tmp_path):
    fitted, X = model
    outer = Path(fitted.save(tmp_path / "outer.zarr"))
    before = _files(outer)
    with pytest.raises(ArtifactPathError, match=r"holds a dkernel model of an SVC"):
        GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=outer / "K.zarr", chunk=16, progress=False)
    assert _files(outer) == before


def test_a_link_into_a_model_folder_is_refused_too(model, tmp_path):
    fitted, _ = model
    outer = Path(fitted.save(tmp_path / "outer.zarr"))
    (tmp_path / "link").symlink_to(outer)
    with pytest.raises(ArtifactPathError, match=r"holds a dkernel model of an SVC"):
        fitted.save(tmp_path / "link" / "mine.zarr")
    assert not (outer / "mine.zarr").exists()


def test_a_model_of_the_same_kind_is_still_replaced(model, tmp_path):
    fitted, X = model
    path = Path(fitted.save(tmp_path / "m.zarr"))
    other = dkernel.SVC(kernel="rbf", gamma=0.1, C=3.0).fit(X, fitted.predict(X) * -1)
    assert Path(other.save(path, overwrite=True)) == path
    np.testing.assert_array_equal(dkernel.load_model(path).predict(X), other.predict(X))
    assert artifacts.foreign_files(path, "model") == []


def test_a_conformal_model_with_its_two_passes_is_still_replaced(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    fitted = dkernel.ConformalSVC(kernel="rbf", gamma=GAMMA).fit(X, y)
    path = Path(fitted.save(tmp_path / "c.zarr"))
    assert artifacts.foreign_files(path, "conformal-model") == []
    fitted.save(path, overwrite=True)
    np.testing.assert_array_equal(dkernel.load_model(path).predict(X), fitted.predict(X))


def test_a_fit_still_writes_its_problem_checkpoints_inside_its_checkpoint(tmp_path):
    from dkernel.solver import Checkpoint

    rng = np.random.default_rng(2)
    X = rng.normal(size=(45, 3))
    y = np.digitize(X[:, 0], [-0.4, 0.4])  # three classes: three binary problems
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")  # the folders above taken through a link
    path = tmp_path / "link" / "ckpt"
    fitted = dkernel.SVC(kernel="rbf", gamma=GAMMA, checkpoint=Checkpoint(path, every_iter=1)).fit(X, y)
    assert sorted(p for p in os.listdir(path) if p.startswith("problem-")) == ["problem-0", "problem-1", "problem-2"]
    assert all(artifacts.artifact_kind(path / f"problem-{k}") == "checkpoint" for k in range(3))
    again = dkernel.SVC(kernel="rbf", gamma=GAMMA, checkpoint=path).fit(X, y)
    np.testing.assert_array_equal(again.predict(X), fitted.predict(X))


def test_the_nested_models_of_each_model_kind_are_those_of_the_registry():
    from dkernel._runtime import contents
    from dkernel.svm._persist import FORMATS

    declared = {fmt.kind: dict(fmt.parts) for fmt in FORMATS.values() if fmt.parts}
    assert contents.MODEL_PARTS == declared
