"""The RBF kernel's element-wise map: the compiled exponential against NumPy's, and both evaluations of the map."""

import ctypes
import gc
import mmap
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from dkernel.gram._in_memory import (
    OWN_MAPPING_MIN_BYTES,
    dense_symmetric_gram,
    empty_gram,
)
from dkernel.kernels import RBFKernel
from dkernel.kernels._blocks import FUSED_MIN_VALUES, UNDERFLOW, dot_block, exp_nonpositive, map_block
from _dkernel_compiled.rbf import exp_nonpositive_into


def _compiled_exp(t):
    out = np.empty_like(t)
    exp_nonpositive_into(t, out)
    return out


def test_compiled_exponential_is_within_one_ulp_of_numpy_over_the_kernel_range():
    rng = np.random.default_rng(0)
    t = np.concatenate([-rng.random(200_000) * 2, -rng.random(200_000) * 40, -rng.random(200_000) * 708,
                        -rng.random(10_000) * 1e-9, -np.arange(0, 708, 0.5 * np.log(2))])
    got, expected = _compiled_exp(t), np.exp(t)
    ulps = np.abs(got - expected) / np.spacing(expected)
    assert ulps.max() <= 1.0
    assert (ulps == 0).mean() > 0.85  # most values the same as NumPy's


def test_numpy_twin_of_the_compiled_exponential_agrees_with_it_to_rounding():
    rng = np.random.default_rng(2)
    t = np.concatenate([-rng.random(100_000) * 5, -rng.random(100_000) * 750, [0.0, -0.0, UNDERFLOW, -np.inf]])
    twin = exp_nonpositive(t)
    np.testing.assert_array_max_ulp(twin, _compiled_exp(t), maxulp=4)
    np.testing.assert_array_max_ulp(twin, np.exp(np.maximum(t, UNDERFLOW)) * (t >= UNDERFLOW), maxulp=4)


def test_a_kernel_value_agrees_to_rounding_in_blocks_of_any_size():
    # BLAS rounds a value's product differently in blocks of other shapes (a single row goes to gemv): blocks
    # agree to rounding, mapped by either evaluation.
    X = np.random.default_rng(6).normal(size=(400, 5))
    kernel = RBFKernel(gamma=0.7)
    whole = kernel.block(X, X)  # 160000 values: compiled
    assert whole.size >= FUSED_MIN_VALUES
    np.testing.assert_allclose(whole, rbf_kernel(X, gamma=0.7), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(kernel.block(X[7:8], X), whole[7:8], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(kernel.block(X, X[7:8]), whole[:, 7:8], rtol=1e-12, atol=1e-300)
    for rows in (slice(0, 3), slice(100, 180), slice(390, 400)):
        part = kernel.block(X[rows], X[:50])  # below FUSED_MIN_VALUES: NumPy
        assert part.size < FUSED_MIN_VALUES
        np.testing.assert_allclose(part, whole[rows, :50], rtol=1e-12, atol=1e-300)


def test_compiled_exponential_at_the_ends_of_its_range():
    t = np.array([0.0, -0.0, UNDERFLOW, UNDERFLOW - 1e-9, -709.0, -745.2, -1e300, -np.inf])
    got = _compiled_exp(t)
    assert got[0] == got[1] == 1.0  # a point and itself: exactly 1
    assert abs(got[2] - np.exp(UNDERFLOW)) <= np.spacing(np.exp(UNDERFLOW))
    assert np.array_equal(got[3:], np.zeros(5))  # below the smallest normal float64: 0


@pytest.mark.parametrize("diagonal_offset", [-1, 0, 3])
def test_compiled_map_agrees_with_the_numpy_map_to_rounding(diagonal_offset):
    rng = np.random.default_rng(1)
    X, Z = rng.normal(size=(200, 9)), rng.normal(size=(250, 9))
    if diagonal_offset >= 0:
        Z[diagonal_offset : diagonal_offset + 200] = X
    x_sq, z_sq = (X**2).sum(1), (Z**2).sum(1)
    assert (X @ Z.T).size >= FUSED_MIN_VALUES
    compiled = map_block(X @ Z.T, x_sq, z_sq, 0.4, diagonal_offset=diagonal_offset, compiled=True)
    numpy = map_block(X @ Z.T, x_sq, z_sq, 0.4, diagonal_offset=diagonal_offset, compiled=False)
    np.testing.assert_array_max_ulp(compiled, numpy, maxulp=4)  # either evaluation, to rounding
    np.testing.assert_allclose(compiled, rbf_kernel(X, Z, gamma=0.4), rtol=1e-12, atol=1e-300)
    if diagonal_offset >= 0:
        assert np.array_equal(compiled[np.arange(200), np.arange(200) + diagonal_offset], np.ones(200))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_block_evaluated_into_a_buffer_is_its_block_to_rounding(dtype):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 7)).astype(dtype)  # float64: the compiled map; float32: NumPy's
    kernel = RBFKernel(gamma=0.3)
    out = np.full((300, 300), np.nan, dtype=dtype)
    assert out.size >= FUSED_MIN_VALUES
    kernel.evaluate_into(X, X, out, symmetric=True)
    np.testing.assert_array_max_ulp(out, kernel.block(X, X, symmetric=True), maxulp=4)
    assert np.array_equal(np.diag(out), np.ones(300))  # a point and itself: exactly 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mirrored_tiles_write_the_block_and_its_transpose(dtype):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(700, 5))
    kernel = RBFKernel(gamma=0.2)
    K = np.full((700, 700), np.nan, dtype=dtype)
    kernel.evaluate_mirrored_into(X[:100], X[100:], K, 0, 100)  # 600 columns: 3 tiles, the last partial
    expected = rbf_kernel(X[:100], X[100:], gamma=0.2).astype(dtype)
    np.testing.assert_allclose(K[:100, 100:], expected, rtol=1e-15 if dtype == np.float64 else 1e-7)
    assert np.array_equal(K[100:, :100], K[:100, 100:].T)
    assert np.isnan(K[:100, :100]).all() and np.isnan(K[100:, 100:]).all()  # nothing else written


def test_a_one_column_tile_or_one_row_band_holds_its_block_and_its_mirror():
    # Bands of 256 rows, 256 + 257 points: the first band's last tile is one column wide (a one-column product goes
    # to gemv)
    X = np.random.default_rng(7).normal(size=(513, 64))
    kernel = RBFKernel(gamma=0.01)
    K = dense_symmetric_gram(X, kernel, band_rows=256)
    np.testing.assert_allclose(K[:256, 256:], kernel.block(X[:256], X[256:]), rtol=1e-12)
    np.testing.assert_allclose(K[:256, 256:], rbf_kernel(X[:256], X[256:], gamma=0.01), rtol=1e-12)
    row = np.full((513, 513), np.nan)
    kernel.evaluate_mirrored_into(X[:1], X[1:], row, 0, 1)
    np.testing.assert_allclose(row[0, 1:], kernel.block(X[:1], X[1:])[0], rtol=1e-12)
    assert np.array_equal(row[1:, 0], row[0, 1:])  # the mirror is a copy
    assert np.isnan(row[0, 0]) and np.isnan(row[1:, 1:]).all()  # nothing else written


@pytest.mark.parametrize("n_features", [3, 20, 64])
def test_a_row_agrees_to_rounding_in_blocks_of_any_number_of_rows(n_features):
    # Rows on demand come in requests of any size, split between threads. BLAS sums a row's products in other
    # orders in blocks of other shapes (OpenBLAS's SkylakeX kernels: 1 ulp apart in up to 0.4 % of the values,
    # a single row through gemv in most): rows agree to rounding, |xᵀz| summed in d terms, ≤ d ε |x| |z|.
    X = np.random.default_rng(11).normal(size=(900, n_features))
    kernel = RBFKernel(gamma=0.5 / n_features)
    norms = np.linalg.norm(X, axis=1)
    products, whole = X[:302] @ X.T, kernel.block(X[:302], X)
    np.testing.assert_allclose(whole, rbf_kernel(X[:302], X, gamma=0.5 / n_features), rtol=1e-12)
    for a, b in ((0, 1), (0, 3), (2, 9), (9, 150), (150, 151), (151, 301), (0, 65), (4, 41)):
        bound = 2 * n_features * np.finfo(np.float64).eps * np.outer(norms[a:b], norms)
        assert (np.abs(dot_block(X[a:b], X) - products[a:b]) <= bound).all()
        np.testing.assert_allclose(kernel.block(X[a:b], X), whole[a:b], rtol=1e-12)
        out = np.empty((b - a, 900))
        kernel.evaluate_into(X[a:b], X, out)
        np.testing.assert_allclose(out, whole[a:b], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_banded_gram_in_a_mapping_of_its_own_matches_scikit_learn(dtype):
    X = np.random.default_rng(5).normal(size=(2100, 6))  # three bands of 1024 rows, the last partial
    K = dense_symmetric_gram(X, RBFKernel(gamma=0.1), dtype=dtype)
    assert K.dtype == dtype and K.flags.c_contiguous and np.array_equal(K, K.T)
    np.testing.assert_allclose(K, rbf_kernel(X, gamma=0.1), rtol=1e-14 if dtype == np.float64 else 1e-7)


def test_gram_arrays_are_plain_writable_arrays():
    small = empty_gram((10, 10))
    assert small.shape == (10, 10) and small.flags.owndata  # below the threshold: numpy.empty
    big = empty_gram((OWN_MAPPING_MIN_BYTES // 4 + 3,), np.float32)
    assert big.flags.c_contiguous and big.flags.writeable and big.dtype == np.float32
    big[:] = 2.0
    view = big[5:9]
    del big
    assert np.array_equal(view, np.full(4, 2.0, dtype=np.float32))  # a view keeps the mapping alive


def _huge_page_bytes(address):
    """``AnonHugePages`` of the mapping holding ``address`` (Linux's ``/proc/self/smaps``), in bytes."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split()[0]
        if "-" in first and ":" not in first:
            start, stop = (int(part, 16) for part in first.split("-"))
            inside = start <= address < stop
        elif inside and first == "AnonHugePages:":
            return int(line.split()[1]) * 1024
    raise LookupError(f"no mapping holds {address:#x}")


def _resident_bytes(address, length):
    """Bytes of ``address .. address + length`` (page-aligned) in memory, by ``mincore`` (Linux's libc)."""
    pages = -(-length // mmap.PAGESIZE)
    vector = (ctypes.c_ubyte * pages)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(length), vector) != 0:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return sum(page & 1 for page in vector) * mmap.PAGESIZE


@pytest.mark.skipif(not (hasattr(mmap, "MADV_NOHUGEPAGE") and sys.platform.startswith("linux")),
                    reason="the advice against huge pages (and mincore's accounting of pages) are Linux's")
def test_a_gram_mapping_is_given_back_with_its_last_view_and_never_shared():
    gc.collect()
    values = 2 * OWN_MAPPING_MIN_BYTES // 8
    big = empty_gram((values,))
    address = big.ctypes.data
    assert address % mmap.PAGESIZE == 0  # a mapping of its own
    big[:] = 1.0
    assert _huge_page_bytes(address) == 0  # 4 KiB pages: their first write costs less on a virtual machine
    view = big[10:20]
    del big
    other = empty_gram((values,))  # the first array lives on in its view: never shared
    assert not np.shares_memory(other, view) and other.ctypes.data != address
    assert _resident_bytes(address, values * 8) == values * 8
    del view
    gc.collect()
    with pytest.raises(OSError):  # unmapped: nothing is kept for a later array
        _resident_bytes(address, values * 8)


def test_a_process_first_gram_equals_its_later_ones():
    script = (
        "import numpy as np\n"
        "import dkernel.gram._in_memory as dense\n"
        "from dkernel.kernels import RBFKernel\n"
        "X = np.random.default_rng(3).normal(size=(3100, 40))\n"
        "first = dense.dense_symmetric_gram(X, RBFKernel(gamma=0.05), dtype=np.float32)\n"
        "later = dense.dense_symmetric_gram(X, RBFKernel(gamma=0.05), dtype=np.float32)\n"
        "print(bool((np.abs(first - later) <= np.spacing(np.maximum(first, later))).all()))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         timeout=120).stdout.split()
    # float32 Grams rounded from float64 values that agree to rounding: at most one float32 ulp apart.
    assert out == ["True"]
