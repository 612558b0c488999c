"""Integrity of solver checkpoints: a damaged checkpoint is refused with a clear error, never read as values.

Every array a checkpoint writes has its CRC-32C recorded in the checkpoint's attributes (themselves checksummed),
written in the same atomic step; a resume checks them all before any value is used, and refuses a state that no
solver could have reached (values not finite, alpha outside [0, C]). A checkpoint written by an older dkernel,
without checksums, still resumes, with a warning that it cannot be verified.
"""

import json
import uuid
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC
from dkernel.cli import main
from dkernel.exceptions import CorruptStoreError, UnverifiedStoreWarning
from dkernel.gram._sources import DenseGram, KernelGram
from dkernel.solver import Checkpoint, _checkpoint, solve_qp
from dkernel.solver._checkpoint_state import CHECKPOINT_VERSION

N = 600
PARAMS = dict(kernel="rbf", gamma=0.05, C=10.0, tol=1e-6, working_set_size=16)


def _data(n=N, n_classes=2):
    return make_classification(n_samples=n, n_features=20, n_informative=6, n_classes=n_classes, flip_y=0.05,
                               random_state=7)


class _Stop(KeyboardInterrupt):
    """A Ctrl-C right after a checkpoint write (as a killed fit)."""


def _interrupted_fit(path, X, y, monkeypatch, **params):
    """Fit until the first checkpoint written at iteration 3 or later, then stop as a killed fit does."""
    real = _checkpoint.CheckpointWriter.write

    def write_then_stop(self, state):
        real(self, state)
        if state.iteration >= 3 and state.stop_reason is None:
            raise _Stop(f"stopped at {state.iteration}")

    monkeypatch.setattr(_checkpoint.CheckpointWriter, "write", write_then_stop)
    try:
        with pytest.raises(_Stop):
            SVC(checkpoint=Checkpoint(path, every_iter=3), client=False, **{**PARAMS, **params}).fit(X, y)
    finally:
        monkeypatch.setattr(_checkpoint.CheckpointWriter, "write", real)


def _files(path):
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _flip_middle_byte(chunk):
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))


def _attributes(node):
    return json.loads((node / "zarr.json").read_text())["attributes"]


def _set_attributes(node, attrs):
    meta = json.loads((node / "zarr.json").read_text())
    meta["attributes"] = attrs
    (node / "zarr.json").write_text(json.dumps(meta, indent=2))


def _edit_attribute(node, key, value):
    _set_attributes(node, {**_attributes(node), key: value})


def _rewrite_values(node, name, index, value):
    """Rewrite a chunk of the array ``name`` with valid encoded data holding another value (a silent change)."""
    import zarr

    array = zarr.open_array(str(node / name), mode="r+")
    array[index] = value


def _as_written_by_the_previous_version(node):
    """The checkpoint as dkernel wrote it before checkpoints recorded checksums: version 1, no ``checksums``."""
    attrs = _attributes(node)
    attrs.pop("checksums", None)
    _set_attributes(node, {**attrs, "version": 1})


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    """``(X, y, path)``: an estimator's checkpoint of a fit stopped at iteration 3 or later."""
    X, y = _data()
    path = tmp_path / "mm.ckpt"
    _interrupted_fit(path, X, y, monkeypatch)
    return X, y, path


_DAMAGES = {
    "a flipped byte in alpha's chunk": (lambda node: _flip_middle_byte(node / "alpha" / "c" / "0"), "alpha"),
    "a flipped byte in G's chunk": (lambda node: _flip_middle_byte(node / "G" / "c" / "0"), "G"),
    "alpha's chunk rewritten with another valid value": (lambda node: _rewrite_values(node, "alpha", 5, 3.25),
                                                         "alpha"),
    "a deleted chunk file of alpha": (lambda node: (node / "alpha" / "c" / "0").unlink(), "alpha"),
    "a deleted chunk file of G": (lambda node: (node / "G" / "c" / "0").unlink(), "G"),
    "an edited attribute": (lambda node: _edit_attribute(node, "iteration", _attributes(node)["iteration"] + 7),
                            "attributes"),
    "an edited stop reason": (lambda node: _edit_attribute(node, "stop_reason", "tol"), "attributes"),
    "a truncated zarr.json": (lambda node: (node / "zarr.json").write_bytes((node / "zarr.json").read_bytes()[:-40]),
                              "zarr.json"),
}


@pytest.mark.parametrize("damage", list(_DAMAGES))
def test_a_damaged_checkpoint_is_refused_naming_the_checkpoint_and_the_damage(stopped, damage):
    X, y, path = stopped
    node = path / "problem-0"
    assert (node / "alpha" / "c" / "0").exists() and (node / "G" / "c" / "0").exists()
    damage_it, named = _DAMAGES[damage]
    damage_it(node)
    before = _files(path)
    model = SVC(checkpoint=path, client=False, **PARAMS)
    with pytest.raises(CorruptStoreError) as caught:
        model.fit(X, y)
    message = str(caught.value)
    assert message.startswith(f"the solver checkpoint {path} is damaged: problem-0: "), message
    assert named in message
    assert f"delete the folder {path} or choose another checkpoint path" in message
    assert not hasattr(model, "dual_coef_")
    assert _files(path) == before  # the user's checkpoint is left as it is


def test_dkernel_fit_refuses_a_damaged_checkpoint_and_saves_no_model(tmp_path, capsys):
    X, y = _data()
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    path = tmp_path / "mm.ckpt"

    def fit(model):
        return main(["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--gamma",
                     "0.05", "--C", "10", "--tol", "1e-6", "--working-set-size", "16", "--model", str(model),
                     "--checkpoint", str(path), "--quiet"])

    assert fit(tmp_path / "first.zarr") == 0  # the checkpoint now holds the solution
    capsys.readouterr()
    _flip_middle_byte(path / "problem-0" / "alpha" / "c" / "0")
    assert fit(tmp_path / "second.zarr") == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"the solver checkpoint {path} is damaged: problem-0: array alpha" in err, err
    assert f"delete the folder {path} or choose another checkpoint path" in err
    assert "Gram store" not in err
    assert not (tmp_path / "second.zarr").exists()


def test_an_intact_checkpoint_records_its_checksums_and_resumes_to_the_uninterrupted_model(stopped, solver_log):
    X, y, path = stopped
    attrs = _attributes(path / "problem-0")
    assert attrs["version"] == CHECKPOINT_VERSION >= 2 and attrs["checksums"]["algorithm"] == "crc32c"
    assert {"alpha", "G", "kept", "kept_slots", "kernel_diag", "kernel_rows"} <= set(attrs["checksums"]["arrays"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedStoreWarning)
        resumed = SVC(checkpoint=path, client=False, **PARAMS).fit(X, y)
    assert any("resuming from the checkpoint" in m for m in solver_log)
    whole = SVC(client=False, **PARAMS).fit(X, y)
    np.testing.assert_allclose(resumed.decision_function(X), whole.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(resumed.support_, whole.support_)
    assert np.abs(resumed.dual_coef_).max() <= PARAMS["C"] * (1 + 1e-9)


def test_a_checkpoint_of_the_previous_version_resumes_with_a_warning(stopped, solver_log):
    X, y, path = stopped
    _as_written_by_the_previous_version(path / "problem-0")
    with pytest.warns(UnverifiedStoreWarning, match=f"{path}.* written by an older dkernel, without checksums"):
        resumed = SVC(checkpoint=path, client=False, **PARAMS).fit(X, y)
    assert any("resuming from the checkpoint" in m for m in solver_log)
    whole = SVC(client=False, **PARAMS).fit(X, y)
    np.testing.assert_allclose(resumed.decision_function(X), whole.decision_function(X), atol=1e-6)
    # The run went on writing checkpoints of this version: verified from now on.
    assert "checksums" in _attributes(path / "problem-0")


@pytest.mark.parametrize("name, index, value, named", [
    ("alpha", 11, 8.8e304, "alpha"),
    ("alpha", 11, -0.5, "alpha"),
    ("alpha", 11, np.nan, "alpha"),
    ("G", 4, np.inf, "G"),
    ("kept", 0, 10**6, "kept"),
])
def test_an_unverified_checkpoint_with_impossible_values_is_refused(stopped, name, index, value, named):
    X, y, path = stopped
    node = path / "problem-0"
    _as_written_by_the_previous_version(node)
    _rewrite_values(node, name, index, value)
    model = SVC(checkpoint=path, client=False, **PARAMS)
    with pytest.warns(UnverifiedStoreWarning), pytest.raises(CorruptStoreError) as caught:
        model.fit(X, y)
    assert str(caught.value).startswith(f"the solver checkpoint {path} is damaged: problem-0: ")
    assert f"holds {named}" in str(caught.value)
    assert not hasattr(model, "dual_coef_")


def test_a_checkpoint_whose_version_has_checksums_but_holds_none_is_damaged_not_old(stopped):
    X, y, path = stopped
    node = path / "problem-0"
    attrs = _attributes(node)
    attrs.pop("checksums")
    _set_attributes(node, attrs)
    with pytest.raises(CorruptStoreError, match=f"checksums are missing although its version {CHECKPOINT_VERSION} has them"):
        SVC(checkpoint=path, client=False, **PARAMS).fit(X, y)


# ----------------------------------------------------------------- one solver run, and at a URL
def _rows_and_labels(n=400):
    X, y = make_classification(n_samples=n, n_features=6, flip_y=0.1, random_state=3)
    return DenseGram(KernelGram(X, "rbf", gamma=0.2).to_numpy()), np.where(y == 1, 1.0, -1.0)


def _stop_at(iteration):
    return lambda it, alpha, gap: it == iteration


def test_a_damaged_checkpoint_of_one_solver_run_is_refused(tmp_path):
    rows, y = _rows_and_labels()
    path = tmp_path / "svm.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solve_qp(rows, y, 10.0, checkpoint=Checkpoint(path, every_iter=5), callback=_stop_at(23), tol=1e-6,
                 working_set_size=8)
    _rewrite_values(path, "G", 0, 0.125)
    with pytest.raises(CorruptStoreError, match=f"^the solver checkpoint {path} is damaged: array G does not match "
                                                f"its checksum"):
        solve_qp(rows, y, 10.0, checkpoint=path, tol=1e-6, working_set_size=8)


@pytest.fixture
def memory_url():
    import fsspec

    url = f"memory://dkernel-test-{uuid.uuid4().hex}/svm.ckpt"
    yield url
    fs = fsspec.filesystem("memory")
    if fs.exists(url.split("://", 1)[1].rsplit("/", 1)[0]):
        fs.rm(url.split("://", 1)[1].rsplit("/", 1)[0], recursive=True)


def _manifest(url):
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    return fs, f"{root}/dkernel.json"


def test_a_url_checkpoint_with_an_edited_manifest_is_refused_and_an_old_one_resumes_with_a_warning(memory_url):
    rows, y = _rows_and_labels()
    options = dict(tol=1e-6, working_set_size=8)
    whole = solve_qp(rows, y, 10.0, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solve_qp(rows, y, 10.0, checkpoint=Checkpoint(memory_url, every_iter=5), callback=_stop_at(23), **options)
    fs, key = _manifest(memory_url)
    manifest = json.loads(fs.cat_file(key))
    assert manifest["checkpoint_version"] == CHECKPOINT_VERSION >= 2 and "metadata" in manifest
    fs.pipe_file(key, json.dumps({**manifest, "iteration": manifest["iteration"] + 4}).encode())
    with pytest.raises(CorruptStoreError, match=f"^the solver checkpoint {memory_url} is damaged: its manifest"):
        solve_qp(rows, y, 10.0, checkpoint=memory_url, **options)
    assert json.loads(fs.cat_file(key))["iteration"] == manifest["iteration"] + 4  # left as it is
    # As the previous version wrote it: no checksum of the manifest.
    old = {k: v for k, v in manifest.items() if k != "metadata"}
    fs.pipe_file(key, json.dumps({**old, "checkpoint_version": 1}).encode())
    with pytest.warns(UnverifiedStoreWarning, match="written by an older dkernel"):
        resumed = solve_qp(rows, y, 10.0, checkpoint=memory_url, **options)
    np.testing.assert_allclose(resumed.alpha, whole.alpha, rtol=1e-9, atol=1e-12)


def test_a_url_checkpoint_whose_state_matches_its_checksums_but_holds_impossible_values_is_refused(memory_url):
    """Defense in depth: values no solver run reaches (alpha far outside [0, C]), committed with valid checksums."""
    import io

    from dkernel._runtime.integrity import bytes_crc32c, json_crc32c

    rows, y = _rows_and_labels()
    options = dict(tol=1e-6, working_set_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solve_qp(rows, y, 10.0, checkpoint=Checkpoint(memory_url, every_iter=5), callback=_stop_at(23), **options)
    fs, key = _manifest(memory_url)
    manifest = json.loads(fs.cat_file(key))
    state_key = f"{key.rsplit('/', 1)[0]}/{manifest['version']}/state.npz"
    with np.load(io.BytesIO(fs.cat_file(state_key))) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays["alpha"][7] = 8.8e304
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    fs.pipe_file(state_key, buffer.getvalue())
    manifest["crc"] = bytes_crc32c(buffer.getvalue())
    manifest["metadata"] = json_crc32c(manifest, leave_out="metadata")
    fs.pipe_file(key, json.dumps(manifest).encode())
    with pytest.raises(CorruptStoreError, match=r"is damaged: it holds alpha values outside their bounds \[0, C\] "
                                                r"\(alpha\[7\] = 8.8e\+304, C\[7\] = 10\)"):
        solve_qp(rows, y, 10.0, checkpoint=memory_url, **options)
