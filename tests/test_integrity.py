"""Integrity of Gram stores: checksums written with every block, checked by reads and verify(), repaired by compute."""

import os
import shutil
import warnings

import google_crc32c
import numpy as np
import pytest
import zarr

from dkernel._runtime.options import GramOptions
from dkernel.cli import main
from dkernel.exceptions import (
    CorruptStoreError,
    IncompleteStoreError,
    UnverifiableStoreError,
    UnverifiedStoreWarning,
)
from dkernel.gram import STORE_VERSION, GramMatrix, _blocks, _checksums, _compute

CHUNK = 16  # 50 rows: a 4 x 4 block grid, the last band and column block 2 wide
PARAMS = {"kernel": "rbf", "gamma": 0.4, "chunk": CHUNK, "progress": False}


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(50, 4))


@pytest.fixture
def clean(X, tmp_path):
    """The matrix of a store computed without damage (the ground truth).

    A block computed again (a repair, a resumed run) is compared to it to rounding: it runs under another BLAS thread
    count (the cores shared by fewer tasks), whose products may differ in the last bit.
    """
    return GramMatrix.compute(X, store=tmp_path / "clean.zarr", **PARAMS).to_numpy()


def shard(path, *coords, name="K"):
    """The file of chunk (or shard) ``coords`` of the array ``name`` of a store."""
    array = zarr.open_array(str(path), path=name, mode="r")
    return os.path.join(str(path), name, *array.metadata.encode_chunk_key(coords).split("/"))


def overwrite(path, offset, data):
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def damage_value(path, i, j, row, col, value=2e300):
    """Overwrite the value at (row, col) of block (i, j) inside its uncompressed shard (not its index)."""
    overwrite(shard(path, i, j), (row * CHUNK + col) * 8, np.float64(value).tobytes())


# --------------------------------------------------------------------------- #
# Checksum arithmetic
# --------------------------------------------------------------------------- #


def test_checksums_of_segments_combine_into_the_checksum_of_the_whole():
    rng = np.random.default_rng(1)
    for _ in range(20):
        lengths = rng.integers(0, 300, size=rng.integers(1, 6))
        data = [rng.bytes(int(n)) for n in lengths]
        crcs = np.array([[google_crc32c.value(d) for d in data]], dtype=np.uint32)
        assert _checksums._crc_concat(crcs, [len(d) for d in data])[0] == google_crc32c.value(b"".join(data))


def test_store_records_its_checksums(X, tmp_path):
    path = tmp_path / "K.zarr"
    gram = GramMatrix.compute(X, store=path, options=GramOptions(checksum_bytes=40), **PARAMS)
    attrs = dict(zarr.open_group(str(path), mode="r").attrs)
    assert attrs["format_version"] == STORE_VERSION == 4
    assert attrs["checksums"] == {"algorithm": "crc32c", "segment_columns": 5}
    sums = zarr.open_array(str(path), path="checksums", mode="r")[:]
    assert sums.shape == (50, 4 * 4)  # 4 column blocks of ceil(16 / 5) segments
    K = gram.to_numpy()

    def key(i, j, row, q):
        """The key of a stored checksum (format version 4), written out from its definition."""
        block = google_crc32c.value(f"{attrs['write_id']}:{i}:{j}:{q}".encode())
        return block ^ (((row + 1) * 0x9E3779B1) & 0xFFFFFFFF)

    # Row 20 (block row 1), column block 1 (columns 16:32): segments 16:21, 21:26, 26:31, 31:32.
    expected = [google_crc32c.value(K[20, a:b].tobytes()) ^ key(1, 1, 20, q)
                for q, (a, b) in enumerate([(16, 21), (21, 26), (26, 31), (31, 32)])]
    assert sums[20, 4:8].tolist() == expected
    assert sums[20, 12:16].tolist() == [google_crc32c.value(K[20, 48:50].tobytes()) ^ key(1, 3, 20, 0),
                                        key(1, 3, 20, 1), key(1, 3, 20, 2), key(1, 3, 20, 3)]  # 2 columns
    diag = zarr.open_array(str(path), path="diag_checksums", mode="r")[:]
    assert diag[3] == google_crc32c.value(np.diag(K)[48:50].tobytes()) ^ google_crc32c.value(
        f"{attrs['write_id']}:diagonal:3".encode())
    assert gram.info()["checksums"] is True


# --------------------------------------------------------------------------- #
# Damaged data: detected by verify and by every read
# --------------------------------------------------------------------------- #


def test_bytes_changed_inside_a_block_are_detected_by_verify_and_by_reads(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    damage_value(path, 1, 2, 5, 3)  # K[21, 35]
    gram = GramMatrix.open(path)
    assert gram.complete  # the flags still say so
    assert gram.verify() == [(1, 2)]

    with pytest.raises(CorruptStoreError, match=r"block \(1, 2\): row 21 does not match its checksum") as info:
        gram.rows([40, 21, 3])
    message = str(info.value)
    assert str(path) in message and "GramMatrix.compute" in message
    assert f"dkernel gram --input DATA --kernel rbf --gamma 0.4 --chunk 16 --dtype float64 --out {path}" in message
    assert info.value.blocks == [(1, 2)] and info.value.path == str(path)
    assert isinstance(info.value, OSError)

    reads = {
        "block": lambda: gram.block(1, 2),
        "to_numpy": gram.to_numpy,
        "in_memory": gram.in_memory,
        "dask": lambda: gram.dask.compute(),
        "dask block": lambda: gram.dask.blocks[1, 2].compute(),
        "submatrix": lambda: gram.submatrix([21], 33, 34),  # the segment holding column 35
    }
    for name, read in reads.items():
        with pytest.raises(CorruptStoreError, match=r"block \(1, 2\)"):
            read()
            pytest.fail(name)

    # The other rows of the block, its mirror and the other blocks of row 21 read correctly.
    assert np.array_equal(gram.rows([20, 22, 49]), clean[[20, 22, 49]])
    assert np.array_equal(gram.block(2, 1), clean[32:48, 16:32])
    assert np.array_equal(gram.submatrix([21, 2], 0, 32), clean[[21, 2], :32])
    assert np.array_equal(gram.dask.blocks[2, 1].compute(), clean[32:48, 16:32])
    assert np.array_equal(gram.diag(), np.diag(clean))


def test_narrow_checksum_segments_limit_what_a_damaged_value_blocks(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, options=GramOptions(checksum_bytes=32), **PARAMS)  # 4 columns
    damage_value(path, 1, 2, 5, 3)  # K[21, 35]: segment 32:36 of row 21
    gram = GramMatrix.open(path)
    for start, stop in [(36, 50), (37, 47), (0, 32), (5, 31)]:
        assert np.array_equal(gram.submatrix([21, 20], start, stop), clean[[21, 20], start:stop])
    for start, stop in [(35, 36), (32, 33), (30, 33), (34, 40), (0, 50)]:
        with pytest.raises(CorruptStoreError, match=r"block \(1, 2\): row 21"):
            gram.submatrix([21, 20], start, stop)
    assert gram.verify() == [(1, 2)]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "deleted", "index"])
def test_a_shard_replaced_by_garbage_is_named_never_read(damage, X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    file = shard(path, 2, 3)
    size = os.path.getsize(file)
    if damage == "garbage":
        with open(file, "wb") as fh:
            fh.write(np.random.default_rng(0).bytes(size))
    elif damage == "truncated":
        os.truncate(file, size // 3)
    elif damage == "deleted":
        os.remove(file)
    else:
        overwrite(file, size - 20, b"\x07")  # one byte of the shard index
    gram = GramMatrix.open(path)
    assert gram.verify() == [(2, 3)]
    for read in (lambda: gram.rows([33]), lambda: gram.block(2, 3), gram.to_numpy, lambda: gram.dask.compute()):
        with pytest.raises(CorruptStoreError, match=r"block \(2, 3\)") as info:
            read()
        assert "dkernel gram" in str(info.value)
    assert np.array_equal(gram.rows([3, 49]), clean[[3, 49]])  # row 49 reads block (3, 2), the intact mirror


def test_a_damaged_diagonal_is_named(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    overwrite(shard(path, 1, name="diag"), 8, np.float64(7.0).tobytes())
    gram = GramMatrix.open(path)
    with pytest.raises(CorruptStoreError, match=r"block \(1, 1\): the stored diagonal"):
        gram.diag()
    assert gram.verify() == [(1, 1)]
    repaired = GramMatrix.compute(X, store=path, **PARAMS)
    assert repaired.n_blocks_computed == 1 and repaired.blocks_repaired == [(1, 1)]
    assert np.array_equal(repaired.diag(), np.diag(clean))


# --------------------------------------------------------------------------- #
# Repair
# --------------------------------------------------------------------------- #


def test_compute_again_recomputes_exactly_the_damaged_blocks(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    damage_value(path, 1, 2, 5, 3)
    damage_value(path, 3, 0, 1, 15, -1.5)  # a mirrored block (lower triangle)
    os.truncate(shard(path, 2, 2), 100)
    calls = []
    real_write_block = _compute._write_block

    def recording(X, Z, kernel, grid, i, j, *args):
        calls.append((i, j))
        return real_write_block(X, Z, kernel, grid, i, j, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_compute, "_write_block", recording)
        repaired = GramMatrix.compute(X, store=path, **PARAMS)
    assert sorted(calls) == [(0, 3), (1, 2), (2, 2)]  # the pair of (3, 0) is evaluated as (0, 3)
    assert repaired.n_blocks_computed == 3
    assert repaired.blocks_repaired == [(1, 2), (2, 2), (3, 0)]
    attrs = dict(zarr.open_group(str(path), mode="r").attrs)
    assert attrs["last_run"]["n_blocks_repaired"] == 3 and attrs["blocks_done"] == 16
    np.testing.assert_allclose(repaired.to_numpy(), clean, rtol=1e-13, atol=0)
    reopened = GramMatrix.open(path)
    assert reopened.verify() == [] and np.array_equal(reopened.to_numpy(), repaired.to_numpy())
    again = GramMatrix.compute(X, store=path, **PARAMS)
    assert again.n_blocks_computed == 0 and again.blocks_repaired == []


def test_compute_without_verify_leaves_damage_for_reads_to_find(X, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    damage_value(path, 0, 1, 0, 0)
    gram = GramMatrix.compute(X, store=path, verify=False, **PARAMS)
    assert gram.n_blocks_computed == 0
    with pytest.raises(CorruptStoreError, match=r"block \(0, 1\)"):
        gram.rows([0])


def test_missing_and_damaged_blocks_are_both_recomputed(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    damage_value(path, 0, 0, 2, 2)
    flags = zarr.open_array(str(path), path="done", mode="r+")
    flags[1, 3] = 0
    gram = GramMatrix.open(path)
    assert gram.verify() == [(0, 0)]  # (1, 3) is missing, not checked
    with pytest.raises(IncompleteStoreError):
        gram.rows([20])
    repaired = GramMatrix.compute(X, store=path, **PARAMS)
    assert repaired.n_blocks_computed == 2 and repaired.blocks_repaired == [(0, 0)]
    np.testing.assert_allclose(repaired.to_numpy(), clean, rtol=1e-13, atol=0)


def test_a_reader_opened_before_a_repair_reads_the_new_data(X, tmp_path):
    """Checksums cached by a reader are read again when data written since do not match them."""
    path = tmp_path / "K.zarr"
    gram = GramMatrix.compute(X, store=path, **PARAMS)
    before = gram.rows([3])
    # Rewrite block (0, 1) with one value changed in its last bit, with its checksums (as a repair may).
    blocks = _blocks._ZarrBlocks(path, "r+")
    B = np.array(blocks.block(gram._grid, 0, 1))
    B[3, 2] = np.nextafter(B[3, 2], 2.0)
    blocks.checksums.write(0, 1, blocks.shards.write(0, 1, B, checksums=blocks.checksums))
    after = gram.rows([3])
    assert after[0, 18] == B[3, 2] != before[0, 18]


def test_cross_gram_store_is_checked_and_repaired(X, tmp_path):
    Z = np.random.default_rng(1).normal(size=(23, 4))
    path = tmp_path / "K.zarr"
    params = {**PARAMS, "chunk": 10}
    clean = GramMatrix.compute(X, Z, store=tmp_path / "clean.zarr", **params).to_numpy()
    GramMatrix.compute(X, Z, store=path, **params)
    overwrite(shard(path, 4, 2), (3 * 10 + 1) * 8, np.float64(0.5).tobytes())  # K[43, 21]
    gram = GramMatrix.open(path)
    assert gram.verify() == [(4, 2)]
    with pytest.raises(CorruptStoreError, match=r"block \(4, 2\)"):
        gram.rows([43])
    repaired = GramMatrix.compute(X, Z, store=path, **params)
    assert repaired.n_blocks_computed == 1
    np.testing.assert_allclose(repaired.to_numpy(), clean, rtol=1e-13, atol=0)


# --------------------------------------------------------------------------- #
# Compressed stores (read and written through zarr)
# --------------------------------------------------------------------------- #


LZ4 = GramOptions(codec="lz4", inner_rows=4)


def test_compressed_store_values_changed_are_detected_and_repaired(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, options=LZ4, **PARAMS)
    # Values changed but validly encoded: only the checksums can tell.
    zarr.open_array(str(path), path="K", mode="r+")[21, 35] = 2e300
    gram = GramMatrix.open(path)
    assert gram._blocks.shards is None
    assert gram.verify() == [(1, 2)]
    for read in (lambda: gram.rows([21]), lambda: gram.block(1, 2), gram.to_numpy,
                 lambda: gram.submatrix([21, 3], 34, 40), lambda: gram.dask.compute()):
        with pytest.raises(CorruptStoreError, match=r"block \(1, 2\): row 21"):
            read()
    assert np.array_equal(gram.rows([20, 49]), clean[[20, 49]])
    assert np.array_equal(gram.submatrix([21, 3], 0, 32), clean[[21, 3], :32])
    repaired = GramMatrix.compute(X, store=path, options=LZ4, **PARAMS)
    assert repaired.n_blocks_computed == 1 and repaired.blocks_repaired == [(1, 2)]
    np.testing.assert_allclose(repaired.to_numpy(), clean, rtol=1e-13, atol=0)


@pytest.mark.parametrize("damage", ["payload", "garbage", "truncated"])
def test_compressed_store_with_damaged_bytes_raises_the_clear_error(damage, X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, options=LZ4, **PARAMS)
    file = shard(path, 2, 1)
    size = os.path.getsize(file)
    if damage == "payload":  # bytes inside the compressed data of the second inner chunk
        index = np.frombuffer(open(file, "rb").read()[-(16 * 4 + 4) : -4], dtype="<u8").reshape(4, 2)
        offset, length = (int(v) for v in index[1])
        overwrite(file, offset + length // 2, bytes(8))
    elif damage == "garbage":
        with open(file, "wb") as fh:
            fh.write(np.random.default_rng(0).bytes(size))
    else:
        os.truncate(file, size - 30)
    gram = GramMatrix.open(path)
    assert gram.verify() == [(2, 1)]
    for read in (lambda: gram.rows([36, 37, 38, 39, 2]), lambda: gram.block(2, 1), gram.to_numpy):
        with pytest.raises(CorruptStoreError, match=r"block \(2, 1\)"):
            read()
    repaired = GramMatrix.compute(X, store=path, options=LZ4, **PARAMS)
    assert repaired.n_blocks_computed == 1
    np.testing.assert_allclose(repaired.to_numpy(), clean, rtol=1e-13, atol=0)


# --------------------------------------------------------------------------- #
# Stores written without checksums
# --------------------------------------------------------------------------- #


def make_unchecked(path, version=2):
    """Turn a store into one written before checksums existed (format version 2)."""
    root = zarr.open_group(str(path), mode="r+")
    for name in ("checksums", "diag_checksums"):
        shutil.rmtree(os.path.join(str(path), name))
    attrs = dict(root.attrs)
    for key in ("checksums", "write_id", "writer", "attribute_checksums"):  # none of them existed then
        del attrs[key]
    attrs["format_version"] = version
    root.attrs.put(attrs)


def test_store_without_checksums_is_read_with_a_warning(X, clean, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    make_unchecked(path)
    with pytest.warns(UnverifiedStoreWarning, match="format version 2.*without checksums"):
        old = GramMatrix.open(path)
    assert np.array_equal(old.to_numpy(), clean) and np.array_equal(old.rows([21, 3]), clean[[21, 3]])
    assert old.info()["checksums"] is False
    with pytest.raises(UnverifiableStoreError, match="without checksums.*overwrite"):
        old.verify()
    zarr.open_array(str(path), path="done", mode="r+")[0, 2] = 0
    with pytest.warns(UnverifiedStoreWarning):
        resumed = GramMatrix.compute(X, store=path, **PARAMS)
    assert resumed.n_blocks_computed == 1
    np.testing.assert_allclose(resumed.to_numpy(), clean, rtol=1e-13, atol=0)
    assert "checksums" not in dict(zarr.open_group(str(path), mode="r").attrs)  # the layout is kept
    # overwrite=True rebuilds it with checksums (the same data and kernel otherwise).
    rebuilt = GramMatrix.compute(X, store=path, overwrite=True, **PARAMS)
    assert rebuilt.n_blocks_computed == 10 and rebuilt.verify() == []
    assert np.array_equal(rebuilt.to_numpy(), clean)
    make_unchecked(path)
    # A shard of garbage is still named, not read.
    with open(shard(path, 1, 1), "wb") as fh:
        fh.write(b"\0" * 64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnverifiedStoreWarning)
        with pytest.raises(CorruptStoreError, match=r"block \(1, 1\)"):
            GramMatrix.open(path).rows([20])


# --------------------------------------------------------------------------- #
# Command line
# --------------------------------------------------------------------------- #


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_verify_names_damaged_blocks_and_gram_repairs_them(X, clean, tmp_path, capsys):
    data = tmp_path / "X.npy"
    np.save(data, X)
    out = tmp_path / "K.zarr"
    gram_args = ["gram", "--input", data, "--kernel", "rbf", "--gamma", "0.4", "--chunk", "16", "--out", out,
                 "--no-progress"]
    assert run(gram_args, capsys)[0] == 0
    code, stdout, _ = run(["verify", out, "--no-progress"], capsys)
    assert code == 0 and stdout == f"dkernel: {out}: all 16 blocks intact\n"

    damage_value(out, 1, 2, 5, 3)
    os.truncate(shard(out, 3, 3), 10)
    code, stdout, _ = run(["verify", out, "--no-progress"], capsys)
    assert code == 1
    assert "2 of 16 computed blocks are DAMAGED: (1, 2), (3, 3)" in stdout
    repair = f"dkernel gram --input DATA --kernel rbf --gamma 0.4 --chunk 16 --dtype float64 --out {out}"
    assert repair in stdout and "GramMatrix" not in stdout

    # A reading command fails with one line naming the block and the repair, in the command line's words.
    labels = tmp_path / "y.npy"
    np.save(labels, np.where(X[:, 0] > 0, 1.0, -1.0))
    code, stdout, err = run(["align", out, "--labels", labels], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert ("block (1, 2)" in err or "block (3, 3)" in err) and repair in err and "GramMatrix" not in err

    # The same 'dkernel gram' command (with DATA the data file) rewrites exactly the damaged blocks.
    code, stdout, _ = run(repair.replace("DATA", str(data)).split()[1:] + ["--no-progress"], capsys)
    assert code == 0
    assert "16/16 blocks complete, 2 computed in this run (2 damaged block(s) repaired: (1, 2), (3, 3))" in stdout
    np.testing.assert_allclose(GramMatrix.open(out).to_numpy(), clean, rtol=1e-13, atol=0)
    assert run(["verify", out, "--no-progress"], capsys)[:2] == (0, f"dkernel: {out}: all 16 blocks intact\n")


def test_cli_verify_of_incomplete_and_unchecked_stores(X, tmp_path, capsys):
    out = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=out, **PARAMS)
    zarr.open_array(str(out), path="done", mode="r+")[0, 1] = 0
    code, stdout, _ = run(["verify", out, "--no-progress"], capsys)
    assert code == 1
    assert "the 15 computed blocks are intact" in stdout and "1 of 16 blocks are not computed yet" in stdout
    make_unchecked(out)
    code, stdout, err = run(["verify", out], capsys)
    assert code == 2 and err.startswith("dkernel: error: ") and "without checksums" in err and "--overwrite" in err
    assert "Traceback" not in err and "Warning" not in err
    code, _, err = run(["verify", tmp_path / "absent.zarr"], capsys)
    assert code == 2 and "no Gram store" in err


@pytest.mark.parametrize("options", [GramOptions(), GramOptions(checksum_bytes=24), LZ4], ids=["none", "seg3", "lz4"])
def test_distinct_unsorted_rows_are_read_into_their_places(options, X, clean, tmp_path):
    gram = GramMatrix.compute(X, store=tmp_path / "K.zarr", options=options, **PARAMS)
    rng = np.random.default_rng(2)
    for size in (1, 2, 17, 50):
        idx = rng.permutation(50)[:size]
        assert np.array_equal(gram.rows(idx), clean[idx])
        for start, stop in [(0, 50), (7, 33), (16, 32), (49, 50)]:
            assert np.array_equal(gram.submatrix(idx, start, stop), clean[idx, start:stop])
    memory = GramMatrix.compute(X, **PARAMS)
    idx = rng.permutation(50)[:20]
    np.testing.assert_allclose(memory.rows(idx), clean[idx], rtol=1e-13, atol=0)  # computed apart: to rounding
    np.testing.assert_allclose(memory.submatrix(idx, 3, 40), clean[idx, 3:40], rtol=1e-13, atol=0)


def test_a_derived_store_is_checked_too(X, tmp_path):
    from dkernel import CenteredGram, Centering

    gram = GramMatrix.compute(X, store=tmp_path / "K.zarr", **PARAMS)
    view = CenteredGram(gram, Centering.standard(50))
    expected = view.to_numpy()
    derived = view.to_zarr(tmp_path / "Ka.zarr")
    assert derived.info()["checksums"] is True and derived.verify() == []
    assert np.array_equal(derived.to_numpy(), expected.astype(derived.dtype))
    zarr.open_array(str(tmp_path / "Ka.zarr"), path="K", mode="r+")[3, 20] = 1e300
    derived = GramMatrix.open(tmp_path / "Ka.zarr")
    assert derived.verify() == [(0, 1)]
    with pytest.raises(CorruptStoreError, match=r"block \(0, 1\).*derived store"):
        derived.rows([3])
