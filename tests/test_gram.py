"""GramMatrix: blocks against pairwise_kernels, zarr round trip, resume, schedulers, errors."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle
import dask
import numpy as np
import pytest
import scipy.sparse as sp
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import pairwise_kernels

from dkernel._runtime.options import GramOptions, default_chunk, inner_rows
from dkernel.exceptions import (
    ArtifactPathError,
    EmptyInputError,
    FeatureMismatchError,
    IncompleteStoreError,
    InvalidKernelParameterError,
    NonFiniteInputError,
    StoreMismatchError,
    UnverifiedStoreWarning,
)
from dkernel.gram import GramMatrix, _compute, _shards, data_fingerprint
from dkernel.kernels import NormalizedKernel, PolynomialKernel, RBFKernel, get_kernel, register_kernel

# Kernels defined here are shipped to worker processes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def assert_kernel_close(K, expected):
    scale = max(np.abs(expected).max(), np.finfo(np.float64).tiny)
    np.testing.assert_allclose(K, expected, rtol=1e-12, atol=1e-12 * scale)


def upper_blocks_missing(path):
    """Blocks (i <= j) of a K(X, X) store not flagged done."""
    done = zarr.open_array(store=str(path), path="done", mode="r")[:]
    return int(sum(1 for i in range(done.shape[0]) for j in range(i, done.shape[1])
                   if not (done[i, j] and done[j, i])))


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(50, 4))


@pytest.fixture
def Z():
    return np.random.default_rng(1).normal(size=(23, 4))


# --------------------------------------------------------------------------- #
# Values
# --------------------------------------------------------------------------- #

KERNELS = [
    ("linear", {}),
    ("poly", {"gamma": 0.3, "coef0": 1.0, "degree": 3}),
    ("rbf", {"gamma": 0.4}),
    ("sigmoid", {"gamma": 0.05, "coef0": 0.2}),
]


@pytest.mark.parametrize(("name", "params"), KERNELS, ids=[k for k, _ in KERNELS])
@pytest.mark.parametrize("store", [False, True], ids=["memory", "zarr"])
def test_symmetric_gram_matches_pairwise_kernels(name, params, store, X, tmp_path):
    gram = GramMatrix.compute(X, kernel=name, chunk=16, store=tmp_path / "K.zarr" if store else None,
                              progress=False, **params)
    K = gram.to_numpy()
    assert_kernel_close(K, pairwise_kernels(X, metric=name, **params))
    assert np.array_equal(K, K.T)
    assert gram.n_blocks == (4, 4) and gram.n_blocks_computed == 10  # 4 * 5 / 2: upper triangle only


@pytest.mark.parametrize("store", [False, True], ids=["memory", "zarr"])
def test_cross_gram_matches_pairwise_kernels(store, X, Z, tmp_path):
    gram = GramMatrix.compute(X, Z, kernel="rbf", gamma=0.3, chunk=16,
                              store=tmp_path / "K.zarr" if store else None, progress=False)
    assert gram.shape == (50, 23) and not gram.symmetric
    assert gram.n_blocks == (4, 2) and gram.n_blocks_computed == 8
    assert_kernel_close(gram.to_numpy(), pairwise_kernels(X, Z, metric="rbf", gamma=0.3))
    with pytest.raises(ValueError, match="square"):
        gram.diag()


def test_sparse_input_matches_dense(X, tmp_path):
    Xs = np.where(np.abs(X) > 0.7, X, 0.0)
    dense = GramMatrix.compute(Xs, kernel="poly", gamma=0.5, degree=2, chunk=16, progress=False).to_numpy()
    sparse = GramMatrix.compute(sp.csr_matrix(Xs), kernel="poly", gamma=0.5, degree=2, chunk=16,
                                store=tmp_path / "K.zarr", progress=False).to_numpy()
    assert_kernel_close(sparse, dense)


def test_normalized_kernel_gram_has_unit_diagonal(X, tmp_path):
    kernel = NormalizedKernel(PolynomialKernel(gamma=1.0, coef0=1.0, degree=2))
    gram = GramMatrix.compute(X, kernel=kernel, chunk=16, store=tmp_path / "K.zarr", progress=False)
    assert np.array_equal(gram.diag(), np.ones(len(X)))
    assert np.array_equal(np.diag(gram.to_numpy()), np.ones(len(X)))
    assert GramMatrix.open(tmp_path / "K.zarr").kernel == kernel


def test_float32_data_give_float32_gram(X, tmp_path):
    gram = GramMatrix.compute(X.astype(np.float32), kernel="rbf", gamma=0.4, chunk=16,
                              store=tmp_path / "K.zarr", progress=False)
    assert gram.dtype == np.float32
    assert GramMatrix.open(tmp_path / "K.zarr").dtype == np.float32
    np.testing.assert_allclose(gram.to_numpy(), pairwise_kernels(X, metric="rbf", gamma=0.4), rtol=1e-5,
                               atol=1e-6)
    explicit = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, dtype="float32", progress=False)
    assert explicit.dtype == np.float32


@pytest.mark.parametrize("store", [False, True])
def test_a_float32_gram_of_float64_data_holds_the_float64_values_rounded_once(X, tmp_path, store):
    """Not values computed from the data rounded to float32, whose squared distances lose digits."""
    exact = pairwise_kernels(X, metric="rbf", gamma=0.4)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, dtype="float32", progress=False,
                              store=tmp_path / "K.zarr" if store else None)
    np.testing.assert_allclose(gram.to_numpy(), exact.astype(np.float32), rtol=2**-22, atol=0)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 40),
    chunk=st.integers(1, 45),
    m=st.one_of(st.none(), st.integers(1, 25)),
    case=st.sampled_from(KERNELS),
    seed=st.integers(0, 2**16),
)
def test_blocks_match_pairwise_kernels_over_shapes_and_chunks(n, chunk, m, case, seed):
    name, params = case
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Z = None if m is None else rng.normal(size=(m, 3))
    expected = pairwise_kernels(X, Z, metric=name, **params)
    gram = GramMatrix.compute(X, Z, kernel=name, chunk=chunk, progress=False, **params)
    nb, mb = gram.n_blocks
    rc, cc = gram.chunks
    for i in range(nb):
        for j in range(mb):
            assert_kernel_close(gram.block(i, j), expected[i * rc:(i + 1) * rc, j * cc:(j + 1) * cc])
    idx = rng.integers(0, n, size=min(n, 7))
    assert_kernel_close(gram.rows(idx), expected[idx])
    if m is None:
        assert np.array_equal(gram.to_numpy(), gram.to_numpy().T)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 30), chunk=st.integers(2, 33), seed=st.integers(0, 2**16))
def test_store_equals_memory_over_shapes_and_chunks(n, chunk, seed):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    memory = GramMatrix.compute(X, kernel="rbf", gamma=0.5, chunk=chunk, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        GramMatrix.compute(X, kernel="rbf", gamma=0.5, chunk=chunk, store=f"{tmp}/K.zarr", progress=False)
        stored = GramMatrix.open(f"{tmp}/K.zarr")
        K = memory.to_numpy()
        assert np.array_equal(stored.to_numpy(), K)
        assert np.array_equal(stored.dask.compute(), K)
        assert np.array_equal(zarr.open_array(f"{tmp}/K.zarr", path="K", mode="r")[:], K)  # plain zarr reader
        idx = np.random.default_rng(seed).integers(0, n, size=n)
        assert np.array_equal(stored.rows(idx), K[idx])
        start = int(np.random.default_rng(seed + 1).integers(0, n))
        assert np.array_equal(stored.submatrix(idx, start, n), K[idx, start:])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_store_equals_memory_with_blocks_of_several_strips(dtype, tmp_path):
    """Blocks larger than one element-wise pass and one transposed strip (300 > 256 rows)."""
    X = np.random.default_rng(5).normal(size=(600, 6)).astype(dtype)
    with dask.config.set(scheduler="synchronous"):  # one task at a time: BLAS keeps its thread count
        memory = GramMatrix.compute(X, kernel="rbf", chunk=300, progress=False).to_numpy()
        stored = GramMatrix.compute(X, kernel="rbf", chunk=300, store=tmp_path / "K.zarr", progress=False)
    K = stored.to_numpy()
    assert K.dtype == dtype
    assert np.array_equal(K, memory) and np.array_equal(K, K.T)
    assert np.array_equal(zarr.open_array(str(tmp_path / "K.zarr"), path="K", mode="r")[:], memory)
    # Tasks run side by side: BLAS threads are shared out, products may differ in the last bit.
    threaded = GramMatrix.compute(X, kernel="rbf", chunk=300, store=tmp_path / "T.zarr", progress=False)
    T = threaded.to_numpy()
    np.testing.assert_allclose(T, memory, rtol=1e-12 if dtype == "float64" else 1e-5, atol=0)
    assert np.array_equal(T, T.T)


def test_block_buffers_are_reused_per_run_and_released():
    from dkernel._runtime import buffers

    with buffers.block_buffer("run-a", (3, 4), np.float64, 3 * 4 * 8) as a:
        a[:] = 1.0
        address = a.__array_interface__["data"][0]
    assert buffers.pool_nbytes("run-a") == 96
    # An edge block of the same run: a view on the same full-size buffer.
    with buffers.block_buffer("run-a", (2, 3), np.float64, 3 * 4 * 8) as edge:
        assert edge.shape == (2, 3) and edge.flags.c_contiguous
        assert edge.__array_interface__["data"][0] == address
        with buffers.block_buffer("run-a", (3, 4), np.float64, 96) as other:  # taken at the same time: a new one
            assert other.__array_interface__["data"][0] != address
    assert buffers.pool_nbytes("run-a") == 2 * 96  # at most one per task that ran at once
    with buffers.block_buffer("run-b", (3, 4), np.float32, 48) as b:
        assert b.dtype == np.float32
    buffers.release_pool("run-a")
    assert buffers.pool_nbytes("run-a") == 0 and buffers.pool_nbytes("run-b") == 48
    # A buffer given back after its run was released is dropped, not kept.
    with buffers.block_buffer("run-b", (3, 4), np.float32, 48):
        buffers.release_pool("run-b")
    assert buffers.pool_nbytes() == 0


def test_block_tasks_carry_no_buffers(X, tmp_path, monkeypatch):
    """Each block task's arguments are small: data keys, the kernel, the grid, the path and a run id."""
    seen = []
    original = dask.delayed

    def recording_delayed(func, *args, **kwargs):
        wrapped = original(func, *args, **kwargs)
        if func is _compute._write_block:
            def call(*task_args):
                seen.append(task_args)
                return wrapped(*task_args)
            return call
        return wrapped

    monkeypatch.setattr(dask, "delayed", recording_delayed)
    GramMatrix.compute(X, kernel="rbf", chunk=20, store=tmp_path / "K.zarr", progress=False)
    assert seen
    for args in seen:
        for arg in args[2:]:
            assert len(cloudpickle.dumps(arg)) < 2000, type(arg)


@register_kernel
class BlasRecordingRBFKernel(RBFKernel):
    """RBF that records the BLAS thread count seen by each block evaluation."""

    name = "test-blas-recording-rbf"
    seen = []

    def block(self, X, Z, *, symmetric=False, **kwargs):
        from threadpoolctl import threadpool_info

        type(self).seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
        return super().block(X, Z, symmetric=symmetric, **kwargs)


def test_store_tasks_share_the_cores_with_blas(X, tmp_path, monkeypatch):
    from dask.system import CPU_COUNT
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    monkeypatch.setattr(BlasRecordingRBFKernel, "seen", [])
    GramMatrix.compute(X, kernel=BlasRecordingRBFKernel(gamma=0.4), chunk=5, store=tmp_path / "K.zarr",
                       progress=False)
    assert len(BlasRecordingRBFKernel.seen) == 55  # 10 x 10 grid, upper triangle
    assert max(BlasRecordingRBFKernel.seen) <= max(1, CPU_COUNT // min(CPU_COUNT, 55))
    assert blas_threads() == before  # restored after the run


# --------------------------------------------------------------------------- #
# Store round trip and reading
# --------------------------------------------------------------------------- #


def test_store_round_trip(X, tmp_path):
    path = tmp_path / "K.zarr"
    memory = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, progress=False)
    GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, store=path, progress=False)
    stored = GramMatrix.open(path)
    K = memory.to_numpy()
    assert stored.kernel == RBFKernel(gamma=0.4)
    assert (stored.shape, stored.n, stored.dtype, stored.chunks) == ((50, 50), 50, np.float64, (16, 16))
    assert stored.complete and stored.n_blocks_done == 16
    assert np.array_equal(stored.to_numpy(), K)
    for i, j in [(0, 0), (0, 3), (3, 0), (2, 1)]:
        assert np.array_equal(stored.block(i, j), memory.block(i, j))
    idx = np.array([49, 3, 17, 3, 0, 33])
    assert np.array_equal(stored.rows(idx), K[idx])
    assert np.array_equal(memory.rows(idx), K[idx])
    assert np.array_equal(stored.diag(), np.diag(K))
    assert np.array_equal(memory.diag(), np.diag(K))
    loaded = stored.in_memory()
    assert loaded.path is None
    assert np.array_equal(loaded.rows(idx), K[idx]) and np.array_equal(loaded.to_numpy(), K)
    lazy = stored.dask
    assert lazy.chunks == ((16, 16, 16, 2), (16, 16, 16, 2))
    assert np.array_equal(lazy.compute(), K)
    assert np.array_equal(memory.dask.compute(), K)


def test_store_attributes_describe_the_gram(X, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, kernel="rbf", chunk=16, store=path, progress=False)
    attrs = dict(zarr.open_group(str(path), mode="r").attrs)
    assert attrs["kernel"] == {"name": "rbf", "params": {"gamma": 0.25}}  # gamma resolved to 1/d
    assert attrs["shape"] == [50, 50] and attrs["chunks"] == [16, 16] and attrs["dtype"] == "float64"
    assert attrs["fingerprint"] == {"X": data_fingerprint(X), "Z": None}
    assert attrs["blocks_done"] == 16
    assert attrs["last_run"]["n_blocks_computed"] == 10


def test_rows_validates_indices(X):
    gram = GramMatrix.compute(X, kernel="linear", chunk=16, progress=False)
    assert gram.rows(np.array([], dtype=int)).shape == (0, 50)
    with pytest.raises(IndexError, match="out of range"):
        gram.rows([50])
    with pytest.raises(IndexError, match="out of range"):
        gram.rows([-1])
    with pytest.raises(IndexError, match="integer"):
        gram.rows([0.5])
    with pytest.raises(IndexError, match="block grid"):
        gram.block(4, 0)


def test_to_numpy_refuses_large_matrices_unless_forced(X):
    gram = GramMatrix.compute(X, kernel="linear", chunk=16, progress=False,
                              options=GramOptions(to_numpy_max_bytes=1000))
    with pytest.raises(MemoryError, match="force=True"):
        gram.to_numpy()
    assert gram.to_numpy(force=True).shape == (50, 50)


def test_default_chunk_and_options():
    assert default_chunk("float64") == 4096
    assert 4096 < default_chunk("float32") <= 5792
    with pytest.raises(ValueError, match="inner_rows"):
        GramOptions(inner_rows=0)
    assert GramOptions(chunk=8).replace(chunk=None, dtype="float32") == GramOptions(chunk=8, dtype="float32")
    with pytest.raises(ValueError, match="chunk"):
        GramOptions(chunk=0)
    with pytest.raises(ValueError, match="dtype"):
        GramOptions(dtype="int8")
    with pytest.raises(ValueError, match="codec"):
        GramOptions(codec="gzip")


def test_compressed_store_reads_the_same(X, tmp_path):
    plain = GramMatrix.compute(X, kernel="rbf", chunk=16, store=tmp_path / "a.zarr", progress=False)
    lz4 = GramMatrix.compute(X, kernel="rbf", chunk=16, store=tmp_path / "b.zarr", progress=False,
                             options=GramOptions(codec="lz4", inner_rows=4))
    assert lz4._blocks.shards is None  # read and written through zarr's codecs
    K = plain.to_numpy()
    assert np.array_equal(lz4.to_numpy(), K)
    idx = np.array([40, 3, 3, 17, 0])
    assert np.array_equal(lz4.rows(idx), K[idx]) and np.array_equal(lz4.submatrix(idx, 10, 33), K[idx, 10:33])


# --------------------------------------------------------------------------- #
# Sharded store: row reads and chunk choice
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("chunk", "rows_per_inner"), [(16, 16), (16, 3), (15, 5), (12, None)])
def test_store_rows_and_submatrix_equal_the_memory_gram(dtype, chunk, rows_per_inner, X, tmp_path):
    options = GramOptions(chunk=chunk, dtype=dtype, inner_rows=rows_per_inner, progress=False)
    K = GramMatrix.compute(X, kernel="rbf", gamma=0.3, options=options).to_numpy()
    stored = GramMatrix.compute(X, kernel="rbf", gamma=0.3, store=tmp_path / "K.zarr", options=options)
    array = zarr.open_array(str(tmp_path / "K.zarr"), path="K", mode="r")
    assert array.shards == (chunk, chunk) and array.chunks == (inner_rows(chunk, rows_per_inner), chunk)
    assert stored._blocks.shards is not None
    idx = np.random.default_rng(0).integers(0, 50, size=40)  # scattered, unsorted, with repeats
    for rows in (idx, np.sort(np.unique(idx)), np.array([49]), np.arange(50)):
        assert stored.rows(rows).dtype == np.dtype(dtype)
        assert np.array_equal(stored.rows(rows), K[rows])
        for start, stop in [(0, 50), (0, 1), (7, 33), (chunk, 2 * chunk), (49, 50), (20, 20)]:
            assert np.array_equal(stored.submatrix(rows, start, stop), K[rows, start:stop])
    assert np.array_equal(GramMatrix.open(tmp_path / "K.zarr").in_memory().submatrix(idx, 7, 33), K[idx, 7:33])
    with pytest.raises(IndexError, match="columns"):
        stored.submatrix(idx, 10, 51)


def test_cross_gram_store_rows_and_submatrix(X, Z, tmp_path):
    K = pairwise_kernels(X, Z, metric="rbf", gamma=0.3)
    stored = GramMatrix.compute(X, Z, kernel="rbf", gamma=0.3, chunk=16, store=tmp_path / "K.zarr", progress=False)
    idx = np.array([49, 0, 16, 16, 31, 2])
    assert_kernel_close(stored.rows(idx), K[idx])
    assert_kernel_close(stored.submatrix(idx, 5, 20), K[idx, 5:20])


def test_row_reads_fetch_only_the_requested_rows_of_the_requested_columns(X, tmp_path, monkeypatch):
    path = tmp_path / "K.zarr"
    # Checksum segments of 2 columns: a read of columns 18:30 reads exactly them (whole segments).
    GramMatrix.compute(X, kernel="rbf", gamma=0.3, chunk=16, store=path, progress=False,
                       options=GramOptions(checksum_bytes=16))
    stored = GramMatrix.open(path)
    reads, shards = [], []
    real_preadv, real_read = os.preadv, _shards._ShardFiles.read

    def counting_preadv(fd, buffers, offset):
        got = real_preadv(fd, buffers, offset)
        reads.append(got)
        return got

    def recording_read(self, out, rows, i, j, *args):
        shards.append((i, j))
        return real_read(self, out, rows, i, j, *args)

    monkeypatch.setattr(os, "preadv", counting_preadv)
    monkeypatch.setattr(_shards._ShardFiles, "read", recording_read)
    idx = np.array([40, 3, 17, 3, 33])
    stored.rows(idx)
    assert sum(reads) == 4 * 50 * 8  # 4 distinct rows of 50 float64, nothing more
    assert len(reads) == 4 * 4  # one read per row and block
    reads.clear()
    shards.clear()
    stored.submatrix(idx, 18, 30)
    assert sum(reads) == 4 * 12 * 8
    assert sorted(set(shards)) == [(0, 1), (1, 1), (2, 1)]  # only the shards of columns 16:32
    reads.clear()
    stored.submatrix(idx, 19, 31)  # columns 18 and 31 are read too: they complete the segments 18:20 and 30:32
    assert sum(reads) == 4 * 14 * 8


def test_store_of_format_version_1_is_read_and_resumed(X, tmp_path):
    """A store with one plain zarr chunk per block (format version 1) is read and resumed through zarr."""
    path = tmp_path / "K.zarr"
    K = GramMatrix.compute(X, kernel="rbf", gamma=0.3, chunk=16, store=path, progress=False).to_numpy()
    root = zarr.open_group(str(path), mode="r+")
    plain = root.create_array("K", shape=(50, 50), chunks=(16, 16), dtype="float64", fill_value=np.nan,
                              compressors=None, overwrite=True)
    plain[:] = K
    plain[:16, 16:32] = np.nan
    plain[16:32, :16] = np.nan
    root["done"][0, 1] = 0
    root["done"][1, 0] = 0
    for name in ("checksums", "diag_checksums"):  # version 1 had none, nor an identity
        shutil.rmtree(path / name)
    attrs = {k: v for k, v in root.attrs.items() if k not in ("checksums", "write_id", "writer", "attribute_checksums")}
    root.attrs.put({**attrs, "format_version": 1})
    with pytest.warns(UnverifiedStoreWarning, match="format version 1"):
        old = GramMatrix.open(path)
    assert old._blocks.shards is None and not old.complete
    assert np.array_equal(old.rows([40, 33, 40]), K[[40, 33, 40]])
    with pytest.warns(UnverifiedStoreWarning, match="format version 1"):
        resumed = GramMatrix.compute(X, kernel="rbf", gamma=0.3, chunk=16, store=path, progress=False)
    assert resumed.n_blocks_computed == 1
    assert np.array_equal(resumed.to_numpy(), K)
    assert zarr.open_array(str(path), path="K", mode="r").shards is None  # the layout is kept


def test_default_chunk_splits_n_into_equal_blocks():
    assert default_chunk("float32", n=20000) == 5000  # not 5632: no 2.03 GB of padded chunks for 1.6 GB
    assert default_chunk("float64", n=20000) == 4000
    assert default_chunk("float64", n=300) == 300
    for n in [4097, 8192, 30000, 99991, 123457]:
        for dtype in ("float32", "float64"):
            side = default_chunk(dtype)
            c = default_chunk(dtype, n=n)
            if n <= side:
                assert c == n  # one block
                continue
            assert c % 8 == 0 and c <= side
            assert -(-n // c) == -(-n // side)  # as many blocks as the target size gives
            assert -(-n // c) * c - n < 8 * -(-n // c)  # padding under 8 rows per block
    X = np.random.default_rng(0).normal(size=(4200, 2))
    assert GramMatrix.compute(X, kernel="linear", progress=False).chunks == (2104, 2104)
    assert GramMatrix.compute(X, X[:10] + 1, kernel="linear", progress=False).chunks == (2104, 10)


def test_progress_bar_is_shown_when_asked(X, capsys):
    GramMatrix.compute(X, kernel="rbf", chunk=16, progress=True)
    shown = capsys.readouterr().err.splitlines()
    assert shown[-1].startswith("10/10 blocks (100%)")  # not a terminal: plain lines
    GramMatrix.compute(X, kernel="rbf", chunk=16, progress=False)
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- #
# Resume
# --------------------------------------------------------------------------- #


@register_kernel
class FlakyRBFKernel(RBFKernel):
    """RBF that raises on its ``fail_on``-th block evaluation (a class-level switch, not a parameter)."""

    name = "test-flaky-rbf"
    fail_on = None
    calls = 0

    def block(self, X, Z, *, symmetric=False, **kwargs):
        type(self).calls += 1
        if type(self).fail_on is not None and type(self).calls >= type(self).fail_on:
            raise RuntimeError("simulated failure while evaluating a block")
        return super().block(X, Z, symmetric=symmetric, **kwargs)


def test_resume_after_a_failing_task_computes_only_missing_blocks(X, tmp_path, monkeypatch):
    path = tmp_path / "K.zarr"
    clean = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=10, progress=False).to_numpy()
    monkeypatch.setattr(FlakyRBFKernel, "calls", 0)
    monkeypatch.setattr(FlakyRBFKernel, "fail_on", 6)
    with dask.config.set(scheduler="synchronous"), pytest.raises(RuntimeError, match="simulated"):
        GramMatrix.compute(X, kernel=FlakyRBFKernel(gamma=0.4), chunk=10, store=path, progress=False)
    assert upper_blocks_missing(path) == 15 - 5  # 5 x 5 grid: 15 blocks evaluated, the 6th failed

    partial = GramMatrix.open(path)
    assert not partial.complete
    with pytest.raises(IncompleteStoreError, match="re-run"):
        partial.to_numpy()

    monkeypatch.setattr(FlakyRBFKernel, "fail_on", None)
    resumed = GramMatrix.compute(X, kernel=FlakyRBFKernel(gamma=0.4), chunk=10, store=path, progress=False)
    assert resumed.n_blocks_computed == 10
    assert resumed.complete
    assert np.array_equal(resumed.to_numpy(), clean)
    again = GramMatrix.compute(X, kernel=FlakyRBFKernel(gamma=0.4), chunk=10, store=path, progress=False)
    assert again.n_blocks_computed == 0


def test_a_block_written_but_not_flagged_is_recomputed(X, tmp_path, monkeypatch):
    """A crash between the chunk writes and the done flag leaves the block missing, not finished."""
    path = tmp_path / "K.zarr"
    real_open_array = zarr.open_array
    flags = {"n": 0}

    def open_array_failing_on_third_flag(*args, **kwargs):
        if kwargs.get("path") == "done":
            flags["n"] += 1
            if flags["n"] == 3:
                raise OSError("simulated crash after the chunk writes")
        return real_open_array(*args, **kwargs)

    monkeypatch.setattr(zarr, "open_array", open_array_failing_on_third_flag)
    with dask.config.set(scheduler="synchronous"), pytest.raises(OSError, match="simulated crash"):
        GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=25, store=path, progress=False)
    monkeypatch.setattr(zarr, "open_array", real_open_array)
    # 2 x 2 grid, 3 evaluated blocks: the third one's chunks are written but not flagged.
    assert upper_blocks_missing(path) == 1
    done = zarr.open_array(store=str(path), path="done", mode="r")[:]
    i, j = np.argwhere(done == 0)[0]
    K = zarr.open_array(store=str(path), path="K", mode="r")
    assert np.isfinite(K[i * 25:(i + 1) * 25, j * 25:(j + 1) * 25]).all()
    assert not GramMatrix.open(path).complete
    resumed = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=25, store=path, progress=False)
    assert resumed.n_blocks_computed == 1
    assert_kernel_close(resumed.to_numpy(), pairwise_kernels(X, metric="rbf", gamma=0.4))


@register_kernel
class KillingRBFKernel(RBFKernel):
    """RBF that kills its own process on one block while ``marker`` exists.

    The block is recognised by the first value of its X and Z rows (the data's
    first column holds the row number).
    """

    name = "test-killing-rbf"
    _param_names = ("gamma", "marker", "kill_row", "kill_col")

    def __init__(self, gamma=None, marker="", kill_row=-1.0, kill_col=-1.0):
        super(RBFKernel, self).__init__(gamma=gamma, marker=marker, kill_row=kill_row, kill_col=kill_col)

    def block(self, X, Z, *, symmetric=False, **kwargs):
        if X[0, 0] == self.kill_row and Z[0, 0] == self.kill_col and os.path.exists(self.marker):
            time.sleep(1.0)  # let the other worker finish some blocks first
            os.kill(os.getpid(), signal.SIGKILL)
        return super().block(X, Z, symmetric=symmetric, **kwargs)


@pytest.fixture
def local_cluster():
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None)
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()


@pytest.mark.slow
def test_resume_after_a_worker_is_killed(tmp_path, local_cluster):
    n, chunk = 60, 15  # 4 x 4 grid, 10 evaluated blocks
    X = np.random.default_rng(3).normal(size=(n, 3))
    X[:, 0] = np.arange(n)
    marker = tmp_path / "kill"
    marker.touch()
    kernel = KillingRBFKernel(gamma=0.01, marker=str(marker), kill_row=0.0, kill_col=45.0)
    path = tmp_path / "K.zarr"
    with pytest.raises(Exception, match="(?i)killed|died|worker"):
        GramMatrix.compute(X, kernel=kernel, chunk=chunk, store=path, client=local_cluster, progress=False)
    # A block the other worker was writing when the error came still lands (a running task is not stopped by its
    # cancellation): count the blocks once the store has stopped changing.
    missing, deadline = upper_blocks_missing(path), time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.5)
        settled, missing = missing, upper_blocks_missing(path)
        if settled == missing:
            break
    assert 1 <= missing < 10
    marker.unlink()
    resumed = GramMatrix.compute(X, kernel=kernel, chunk=chunk, store=path, client=local_cluster, progress=False)
    assert resumed.n_blocks_computed == missing
    assert resumed.complete
    assert_kernel_close(resumed.to_numpy(), pairwise_kernels(X, metric="rbf", gamma=0.01))
    K = resumed.to_numpy()
    assert np.array_equal(K, K.T)


# --------------------------------------------------------------------------- #
# Schedulers
# --------------------------------------------------------------------------- #


def assert_same_store(path_a, path_b):
    a, b = GramMatrix.open(path_a), GramMatrix.open(path_b)
    assert (a.kernel, a.shape, a.dtype, a.chunks, a.fingerprint) == (b.kernel, b.shape, b.dtype, b.chunks,
                                                                       b.fingerprint)
    assert a.complete and b.complete
    Ka, Kb = a.to_numpy(), b.to_numpy()
    # BLAS and SIMD reductions may round differently in another process (thread count, alignment).
    assert_kernel_close(Kb, Ka)
    assert np.array_equal(Kb, Kb.T)


@pytest.mark.slow
def test_local_cluster_gives_the_same_store_as_threads(X, tmp_path, local_cluster):
    GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, store=tmp_path / "threads.zarr", progress=False)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, store=tmp_path / "cluster.zarr",
                              client=local_cluster, progress=True)
    assert gram.n_blocks_computed == 10
    assert_same_store(tmp_path / "threads.zarr", tmp_path / "cluster.zarr")

    in_memory = GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, client=local_cluster, progress=False)
    stored = GramMatrix.open(tmp_path / "cluster.zarr")
    assert_kernel_close(in_memory.to_numpy(), stored.to_numpy())
    idx = np.array([7, 2, 40, 2])
    assert_kernel_close(in_memory.rows(idx), stored.rows(idx))
    assert np.array_equal(in_memory.diag(), np.ones(50))


@pytest.mark.slow
def test_remote_scheduler_by_address_gives_the_same_store(X, tmp_path, scheduler_address):
    assert re.match(r"tcp://127\.0\.0\.1:\d+$", scheduler_address)
    GramMatrix.compute(X, kernel="poly", gamma=0.5, degree=2, chunk=16, store=tmp_path / "threads.zarr",
                       progress=False)
    gram = GramMatrix.compute(X, kernel="poly", gamma=0.5, degree=2, chunk=16, store=tmp_path / "remote.zarr",
                              client=scheduler_address, progress=False)
    assert gram.n_blocks_computed == 10
    assert_same_store(tmp_path / "threads.zarr", tmp_path / "remote.zarr")


# --------------------------------------------------------------------------- #
# Mismatched stores and bad input
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"kernel": "rbf", "gamma": 0.5}, r"kernel \(store: rbf\(gamma=0.4\), requested: rbf\(gamma=0.5\)\)"),
        ({"kernel": "poly", "gamma": 0.4}, "kernel"),
        ({"data": "other"}, "data X"),
        ({"dtype": "float32"}, "dtype"),
        ({"chunk": 20}, "chunks"),
        ({"data": "cross"}, "form"),
    ],
)
def test_store_of_other_data_or_kernel_is_refused(change, match, X, Z, tmp_path):
    path = tmp_path / "K.zarr"
    GramMatrix.compute(X, kernel="rbf", gamma=0.4, chunk=16, store=path, progress=False)
    kwargs = {"kernel": "rbf", "gamma": 0.4, "chunk": 16, **change}
    data = kwargs.pop("data", None)
    args = (X + 1e-9,) if data == "other" else (X, Z) if data == "cross" else (X,)
    with pytest.raises(StoreMismatchError, match=match) as info:
        GramMatrix.compute(*args, store=path, progress=False, **kwargs)
    assert "overwrite=True" in str(info.value)
    assert GramMatrix.open(path).kernel == RBFKernel(gamma=0.4)  # untouched
    replaced = GramMatrix.compute(*args, store=path, progress=False, overwrite=True, **kwargs)
    assert replaced.complete and GramMatrix.open(path).kernel == replaced.kernel


def test_folder_that_is_not_a_store_is_refused(X, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(ArtifactPathError, match="not a dkernel Gram store .* not deleted"):
        GramMatrix.compute(X, store=folder, progress=False, overwrite=True)
    assert (folder / "notes.txt").read_text() == "keep me"
    with pytest.raises(StoreMismatchError, match="not a dkernel Gram store"):
        GramMatrix.open(folder)
    with pytest.raises(FileNotFoundError):
        GramMatrix.open(tmp_path / "nowhere.zarr")


def _with_value(X, row, value):
    X = X.copy()
    X[row] = value
    return X


BAD_INPUTS = {
    "nan": (lambda X, Z: ((_with_value(X, 3, np.nan),), {}), NonFiniteInputError,
            r"X has 4 NaN values \(first in row 3\)"),
    "inf": (lambda X, Z: ((_with_value(X, 7, np.inf),), {}), NonFiniteInputError, r"infinite .*row 7"),
    "features": (lambda X, Z: ((X, Z[:, :3]), {}), FeatureMismatchError, "4 features but Z has 3"),
    "empty": (lambda X, Z: ((np.empty((0, 4)),), {}), EmptyInputError, "empty"),
    "gamma0": (lambda X, Z: ((X,), {"gamma": 0.0}), InvalidKernelParameterError, "gamma must be"),
    "gamma-neg": (lambda X, Z: ((X,), {"gamma": -2.0}), InvalidKernelParameterError, "gamma must be"),
    "degree0": (lambda X, Z: ((X,), {"kernel": "poly", "degree": 0}), InvalidKernelParameterError, "degree"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_raises_before_anything_is_written(case, X, Z, tmp_path):
    make_args, error, match = BAD_INPUTS[case]
    args, kwargs = make_args(X, Z)
    path = tmp_path / "K.zarr"
    with pytest.raises(error, match=match):
        GramMatrix.compute(*args, store=path, progress=False, **{"kernel": "rbf", **kwargs})
    assert not path.exists()


def test_fingerprint_depends_on_values_dtype_and_layout(X):
    assert data_fingerprint(X) == data_fingerprint(X.copy())
    assert data_fingerprint(X) != data_fingerprint(X.astype(np.float32))
    Y = X.copy()
    Y[10, 2] += 1e-12
    assert data_fingerprint(X) != data_fingerprint(Y)
    assert data_fingerprint(X) != data_fingerprint(X.reshape(100, 2))
    S = sp.csr_matrix(np.where(X > 0.5, X, 0))
    assert data_fingerprint(S) == data_fingerprint(S.copy())
    assert data_fingerprint(S) != data_fingerprint(S.toarray())


def test_get_kernel_instance_is_stored_resolved(X, tmp_path):
    GramMatrix.compute(X, kernel=get_kernel("poly", degree=2), chunk=25, store=tmp_path / "K.zarr",
                       progress=False)
    assert GramMatrix.open(tmp_path / "K.zarr").kernel == PolynomialKernel(gamma=0.25, coef0=1.0, degree=2)


def test_module_import_does_no_work():
    code = "import sys, dkernel.gram, dkernel.cli; print('distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[1])
    assert out.stdout.strip() == "False"
