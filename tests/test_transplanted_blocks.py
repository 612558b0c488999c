"""A Gram block copied together with its checksums — from another store, or onto another block of the same store —
is damage like any other: found by reads and by verify, repaired by compute (store format version 4, keyed checksums);
a version 3 store (plain CRC-32C) is read, verified and resumed as it was written."""

import json
import os
import shutil

import numpy as np
import pytest
import zarr

from dkernel import SVC
from dkernel._runtime.integrity import json_crc32c
from dkernel.exceptions import CorruptStoreError, RepairedStoreWarning
from dkernel.gram import GramMatrix
from dkernel.gram._checksums import _block_key, _diagonal_key

CHUNK = 20
PARAMS = {"kernel": "rbf", "gamma": 0.5, "chunk": CHUNK, "progress": False}


def chunk_file(path, name, i, j=None):
    array = zarr.open_array(str(path), path=name, mode="r")
    coords = (i,) if j is None else (i, j)
    return os.path.join(str(path), name, *array.metadata.encode_chunk_key(coords).split("/"))


@pytest.fixture
def two_stores(tmp_path):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(60, 5)), rng.normal(size=(60, 5))
    GramMatrix.compute(A, store=tmp_path / "A.zarr", **PARAMS)
    GramMatrix.compute(B, store=tmp_path / "B.zarr", **PARAMS)
    return A, B, tmp_path / "A.zarr", tmp_path / "B.zarr"


def exact(X):
    from dkernel import RBFKernel

    return RBFKernel(gamma=0.5)(X)


def test_a_block_and_its_checksums_from_another_store_are_damage(two_stores):
    A, B, a, b = two_stores
    for name in ("K", "checksums"):
        shutil.copyfile(chunk_file(b, name, 1, 2), chunk_file(a, name, 1, 2))
    store = GramMatrix.open(a)
    assert store.verify() == [(1, 2)]
    with pytest.raises(CorruptStoreError, match=r"\(1, 2\)"):
        store.rows(np.arange(20, 40))
    repaired = GramMatrix.compute(A, store=a, **PARAMS)
    assert repaired.verify() == []
    np.testing.assert_allclose(repaired.to_numpy(), exact(A), rtol=0, atol=1e-12)


def test_the_command_line_says_a_fit_repaired_its_store(two_stores, tmp_path, capsys):
    from dkernel.cli import main

    A, _, a, b = two_stores
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "y.npy", (A[:, 0] > 0).astype(int))
    for name in ("K", "checksums"):
        shutil.copyfile(chunk_file(b, name, 2, 1), chunk_file(a, name, 2, 1))
    assert main(["fit", "--data", str(tmp_path / "A.npy"), "--labels", str(tmp_path / "y.npy"), "--gamma", "0.5",
                 "--store", str(a), "--model", str(tmp_path / "m"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "dkernel: warning (RepairedStoreWarning): the Gram store" in err and "(2, 1)" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_block_and_its_checksums_copied_onto_another_block_are_damage(two_stores):
    A, _, a, _ = two_stores
    for name in ("K", "checksums"):
        shutil.copyfile(chunk_file(a, name, 0, 0), chunk_file(a, name, 1, 1))
    assert GramMatrix.open(a).verify() == [(1, 1)]


def test_a_whole_store_copied_under_another_stores_attributes_is_damage(two_stores):
    # An rsync of the data folders into the wrong store: the root zarr.json (kernel, fingerprint of A) stays.
    A, B, a, b = two_stores
    for name in ("K", "checksums", "diag", "diag_checksums", "done"):
        shutil.rmtree(a / name)
        shutil.copytree(b / name, a / name)
    assert GramMatrix.open(a).verify() == [(i, j) for i in range(3) for j in range(3)]
    # A fit on the store computes the damaged blocks again, says so, and gives the model of the right Gram.
    y = (A[:, 0] > 0).astype(int)
    with pytest.warns(RepairedStoreWarning, match=r"had 9 damaged block\(s\)"):
        stored = SVC(kernel="rbf", gamma=0.5, store=str(a)).fit(A, y)
    plain = SVC(kernel="rbf", gamma=0.5).fit(A, y)
    np.testing.assert_array_equal(stored.support_, plain.support_)
    np.testing.assert_allclose(stored.dual_coef_, plain.dual_coef_, rtol=0, atol=1e-8)
    assert GramMatrix.open(a).verify() == []


def _as_version_3(path):
    """The store as format version 3 wrote it: the plain CRC-32C of each segment, no key."""
    root = zarr.open_group(str(path), mode="r+")
    attrs = dict(root.attrs)
    key, n_blocks = attrs["write_id"], -(-attrs["shape"][0] // CHUNK)
    sums = zarr.open_array(str(path), path="checksums", mode="r+")
    spb = sums.shape[1] // n_blocks
    for i in range(n_blocks):
        rows = range(i * CHUNK, min((i + 1) * CHUNK, attrs["shape"][0]))
        for j in range(n_blocks):
            part = (slice(rows.start, rows.stop), slice(j * spb, (j + 1) * spb))
            sums[part] = sums[part] ^ _block_key(key, i, j, spb, rows)
    diag = zarr.open_array(str(path), path="diag_checksums", mode="r+")
    diag[:] = np.array([diag[i] ^ _diagonal_key(key, i) for i in range(n_blocks)], dtype=np.uint32)
    attrs["format_version"] = 3
    attrs["attribute_checksums"] = {**attrs["attribute_checksums"], "format_version": json_crc32c(3)}
    root.attrs.put(attrs)


def test_a_version_3_store_reads_verifies_and_resumes_as_written(two_stores):
    A, _, a, _ = two_stores
    _as_version_3(a)
    store = GramMatrix.open(a)
    assert store.verify() == []
    np.testing.assert_allclose(store.to_numpy(), exact(A), rtol=0, atol=1e-12)
    plain = zarr.open_array(str(a), path="checksums", mode="r")[:].copy()
    with open(chunk_file(a, "K", 2, 0), "r+b") as fh:  # a damaged value: found and recomputed, unkeyed again
        fh.seek(8 * 7)
        fh.write(np.float64(3.0).tobytes())
    assert GramMatrix.open(a).verify() == [(2, 0)]
    GramMatrix.compute(A, store=a, **PARAMS)
    assert json.loads((a / "zarr.json").read_text())["attributes"]["format_version"] == 3
    assert GramMatrix.open(a).verify() == []
    np.testing.assert_array_equal(zarr.open_array(str(a), path="checksums", mode="r")[:], plain)


def test_a_version_4_store_without_its_identity_is_damaged(two_stores):
    _, _, a, _ = two_stores
    root = zarr.open_group(str(a), mode="r+")
    attrs = dict(root.attrs)
    del attrs["write_id"]
    del attrs["attribute_checksums"]["write_id"]
    root.attrs.put(attrs)
    with pytest.raises(CorruptStoreError, match="write_id"):
        GramMatrix.open(a).verify()
