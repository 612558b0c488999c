"""A damaged attribute that says what a Gram store's values are, and what ``info`` counts as complete.

* A ``kernel`` (or ``fingerprint``) attribute edited to another value no
  longer matches its checksum. The block checksums cannot tell which kernel
  (or data) the values are of, so a run that requests the edited value must
  not "repair" the store by relabelling it: the repair is refused and the
  advice is to recompute (``overwrite``). A run with the kernel and data
  the store was computed with (whose checksums are the recorded ones)
  still repairs it in place, recomputing nothing.
* No advice ever quotes a value read from a damaged attribute.
* ``dkernel info`` / :attr:`GramMatrix.n_blocks_done` do not count a block
  whose chunk file is missing as complete (``dkernel verify`` flags it).

Values are compared with the RBF kernel in numpy.
"""

import json
import os
import shutil

import numpy as np
import pytest

from dkernel.cli import main
from dkernel.exceptions import CorruptStoreError
from dkernel.gram import GramMatrix
from dkernel.gram._format import data_fingerprint

GAMMA, CHUNK = 0.5, 100
PARAMS = {"kernel": "rbf", "chunk": CHUNK, "progress": False}


def rbf(X, gamma=GAMMA):
    sq = (X**2).sum(1)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(300, 5))


@pytest.fixture(scope="module")
def clean(X, tmp_path_factory):
    path = tmp_path_factory.mktemp("clean") / "K.zarr"
    GramMatrix.compute(X, store=path, gamma=GAMMA, **PARAMS)
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def edited_copy(clean, path, old, new):
    """A copy of ``clean`` at ``path`` whose root zarr.json has its first ``old`` replaced by ``new`` (as sed)."""
    shutil.copytree(clean, path)
    raw = (path / "zarr.json").read_text()
    assert old in raw
    (path / "zarr.json").write_text(raw.replace(old, new, 1))
    return json.loads((path / "zarr.json").read_text())["attributes"]


def gamma_edited(clean, path):
    """The user's trial: ``sed -i '0,/"gamma": 0.5/s//"gamma": 0.6/' zarr.json`` (the kernel attribute only)."""
    attrs = edited_copy(clean, path, '"gamma": 0.5', '"gamma": 0.6')
    assert attrs["kernel"] == {"name": "rbf", "params": {"gamma": 0.6}}
    assert attrs["provenance"]["kernel"] == {"name": "rbf", "params": {"gamma": 0.5}}  # untouched
    return path


# --------------------------------------------------------------------------- #
# A kernel attribute edited to another kernel
# --------------------------------------------------------------------------- #


def test_an_edited_kernel_attribute_is_never_relabelled_by_a_run_of_the_edited_kernel(X, clean, tmp_path):
    path = gamma_edited(clean, tmp_path / "C6.zarr")
    with pytest.raises(CorruptStoreError) as info:
        GramMatrix.open(path)
    message = str(info.value)
    assert "attribute 'kernel' does not match its checksum" in message
    assert "0.6" not in message, message  # nothing quoted from the damaged attribute
    assert "which kernel its values are of" in message and "overwrite=True" in message, message
    assert "Repair it" not in message, message
    # A run of the kernel the damaged attribute names: refused, nothing changed.
    before = (path / "zarr.json").read_bytes()
    with pytest.raises(CorruptStoreError) as info:
        GramMatrix.compute(X, store=path, gamma=0.6, **PARAMS)
    message = str(info.value)
    assert "cannot be repaired" in message and "kernel" in message and "overwrite=True" in message, message
    assert "which kernel its values are of" in message, message
    assert (path / "zarr.json").read_bytes() == before
    with pytest.raises(CorruptStoreError):
        GramMatrix.open(path)
    # As advised: overwrite recomputes it with the requested kernel.
    replaced = GramMatrix.compute(X, store=path, gamma=0.6, overwrite=True, **PARAMS)
    assert replaced.complete and replaced.n_blocks_computed == 6
    reopened = GramMatrix.open(path)
    assert reopened.kernel.gamma == 0.6 and reopened.verify() == []
    np.testing.assert_allclose(reopened.to_numpy(), rbf(X, 0.6), atol=1e-12)


def test_the_kernel_the_store_was_computed_with_still_repairs_it_in_place(X, clean, tmp_path):
    path = gamma_edited(clean, tmp_path / "C6.zarr")
    with pytest.raises(CorruptStoreError, match="which kernel its values are of"):
        GramMatrix.open(path)
    repaired = GramMatrix.compute(X, store=path, gamma=GAMMA, **PARAMS)
    assert repaired.n_blocks_computed == 0 and repaired.kernel.gamma == GAMMA
    reopened = GramMatrix.open(path)
    assert reopened.kernel.gamma == GAMMA and reopened.verify() == []
    np.testing.assert_allclose(reopened.to_numpy(), rbf(X), atol=1e-12)


def test_the_cli_never_suggests_the_damaged_kernel_and_its_advice_works(X, clean, tmp_path, capsys):
    """The user's trial, on the command line."""
    np.save(tmp_path / "X.npy", X)
    path = gamma_edited(clean, tmp_path / "C6.zarr")
    for command in (["info", path], ["verify", path, "--no-progress"]):
        code, out, err = run(command, capsys)
        text = out + err
        assert code in (1, 2) and "attribute 'kernel'" in text, text
        assert "--gamma 0.6" not in text and "0.6" not in text, text
        assert "--overwrite" in text and "which kernel its values are of" in text, text
        assert "Repair it with" not in text and "Traceback" not in text, text
    gram = ["gram", "--input", tmp_path / "X.npy", "--kernel", "rbf", "--gamma", "0.6", "--chunk", CHUNK,
            "--dtype", "float64", "--out", path, "--no-progress"]
    before = (path / "zarr.json").read_bytes()
    code, out, err = run(gram, capsys)
    assert code == 2 and out == "", out
    assert "cannot be repaired" in err and "--overwrite" in err and "Traceback" not in err, err
    assert (path / "zarr.json").read_bytes() == before
    code, out, err = run([*gram, "--overwrite"], capsys)
    assert code == 0, err
    assert run(["verify", path, "--no-progress"], capsys)[:2] == (0, f"dkernel: {path}: all 9 blocks intact\n")
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X, 0.6), atol=1e-12)


def test_a_fingerprint_edited_to_other_data_is_not_relabelled_by_a_run_on_that_data(X, clean, tmp_path):
    other = X.copy()
    other[0, 0] += 1.0
    path = tmp_path / "F.zarr"
    true = data_fingerprint(X)
    attrs = edited_copy(clean, path, true, data_fingerprint(other))
    assert attrs["fingerprint"]["X"] == data_fingerprint(other) and attrs["provenance"]["fingerprint"]["X"] == true
    before = (path / "zarr.json").read_bytes()
    with pytest.raises(CorruptStoreError) as info:
        GramMatrix.compute(other, store=path, gamma=GAMMA, **PARAMS)
    assert "cannot be repaired" in str(info.value) and "overwrite=True" in str(info.value), str(info.value)
    assert (path / "zarr.json").read_bytes() == before
    # The data it was computed with repairs it in place.
    repaired = GramMatrix.compute(X, store=path, gamma=GAMMA, **PARAMS)
    assert repaired.n_blocks_computed == 0
    assert GramMatrix.open(path).verify() == []
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X), atol=1e-12)


# --------------------------------------------------------------------------- #
# No advice quotes a damaged attribute
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("old, new, quoted", [
    ('"chunks": [\n      100,\n      100\n    ]', '"chunks": [\n      50,\n      50\n    ]', "--chunk 50"),
    ('"dtype": "float64"', '"dtype": "float32"', "--dtype float32"),
], ids=["chunks", "dtype"])
def test_no_advice_quotes_a_value_read_from_a_damaged_attribute(X, clean, tmp_path, capsys, old, new, quoted):
    path = tmp_path / "D.zarr"
    edited_copy(clean, path, old, new)
    with pytest.raises(CorruptStoreError) as info:
        GramMatrix.open(path)
    assert quoted not in str(info.value), str(info.value)
    for command in (["info", path], ["verify", path, "--no-progress"]):
        code, out, err = run(command, capsys)
        assert code in (1, 2) and "does not match its checksum" in out + err, out + err
        assert quoted not in out + err, out + err
    # A run with what it was computed with repairs it, recomputing nothing.
    repaired = GramMatrix.compute(X, store=path, gamma=GAMMA, **PARAMS)
    assert repaired.n_blocks_computed == 0
    reopened = GramMatrix.open(path)
    assert reopened.verify() == [] and reopened.chunks == (CHUNK, CHUNK) and reopened.dtype == np.float64
    np.testing.assert_allclose(reopened.to_numpy(), rbf(X), atol=1e-12)


# --------------------------------------------------------------------------- #
# Completeness: a block whose chunk file is gone is not complete
# --------------------------------------------------------------------------- #


def test_info_does_not_count_a_block_whose_file_is_deleted_as_complete(X, clean, tmp_path, capsys):
    path = tmp_path / "D.zarr"
    shutil.copytree(clean, path)
    os.remove(path / "K" / "c" / "1" / "2")
    gram = GramMatrix.open(path)
    assert gram.n_blocks_done == 8 and not gram.complete
    assert gram.info()["blocks_done"] == 8 and gram.info()["blocks_total"] == 9
    code, out, _ = run(["info", path], capsys)
    assert code == 0 and "8/9 (INCOMPLETE" in out and "9/9" not in out, out
    # verify still names it as damaged (it was flagged computed), counted once.
    code, out, _ = run(["verify", path, "--no-progress"], capsys)
    assert code == 1 and "1 of 9 computed blocks are DAMAGED: (1, 2)" in out and "not computed yet" not in out, out
    # The run that resumes it recomputes it: complete again.
    resumed = GramMatrix.compute(X, store=path, gamma=GAMMA, **PARAMS)
    assert resumed.complete and resumed.blocks_repaired == [(1, 2)]
    code, out, _ = run(["info", path], capsys)
    assert "9/9 (complete)" in out, out
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X), atol=1e-12)


def test_an_intact_store_counts_every_block(clean):
    gram = GramMatrix.open(clean)
    assert gram.n_blocks_done == 9 and gram.complete and gram.info()["blocks_done"] == 9
