"""Tests of dkernel.alignment: exact streaming alignment and sampled estimates."""

import numpy as np
import pytest

from dkernel.gram._sources import KernelGram
from dkernel.exceptions import InvalidLabelsError
from dkernel.alignment import (
    AlignmentEstimate,
    alignment,
    alignment_target,
    frobenius_norm,
    sampled_target_alignment,
    target_alignment,
)
from dkernel.centering import Centering, SampleSizeError
from dkernel.gram import GramMatrix
from dkernel.kernels import RBFKernel
from dkernel.views import CenteredGram, NormalizedGram, ShiftedGram

from _reference import numpy_target_alignment


def _data(n_pos, n_neg, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0.8, 1.0, size=(n_pos, 2)), rng.normal(-0.8, 1.0, size=(n_neg, 2))])
    y = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    return X, y


def test_targets_follow_kandola():
    y = np.array([1, 1, 1, -1])
    np.testing.assert_array_equal(alignment_target(y), [1, 1, 1, -1])
    np.testing.assert_allclose(alignment_target(y, "uneven"), [1 / 3, 1 / 3, 1 / 3, -1.0])  # eq. (9)
    np.testing.assert_allclose(alignment_target([1.0, 2.0, 6.0], "regression"), [-2, -1, 3])  # eq. (7)
    # With ±1 labels the kernel-target alignment is yᵀKy / (m ‖K‖_F), eq. (1).
    K = RBFKernel(gamma=0.5)(np.random.default_rng(0).normal(size=(4, 2)))
    assert target_alignment(K, y) == pytest.approx(y @ K @ y / (4 * np.linalg.norm(K)))


@pytest.mark.parametrize("target", ["classification", "uneven", "regression"])
def test_streaming_alignment_equals_numpy(target, tmp_path):
    X, y = _data(130, 40)
    if target == "regression":
        y = X[:, 0] + 0.1 * np.random.default_rng(1).normal(size=len(X))
    K = RBFKernel(gamma=0.4)(X)
    t = alignment_target(y, target)
    expected = numpy_target_alignment(K, t)
    kernel_gram = KernelGram(X, "rbf", gamma=0.4, chunk=50)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.4, store=tmp_path / "K.zarr", chunk=48, progress=False)
    for source in (K, kernel_gram, store):
        assert target_alignment(source, y, target) == pytest.approx(expected, rel=1e-12)
    lazy = target_alignment(store, y, target, compute=False)
    assert float(lazy.compute()) == pytest.approx(expected, rel=1e-12)
    # Lazy views: centered and normalized.
    centered = CenteredGram(store, Centering.class_balanced(X[:, 1] > 0))
    assert target_alignment(centered, y, target) == pytest.approx(
        numpy_target_alignment(centered.to_numpy(), t), rel=1e-10
    )
    normalized = NormalizedGram(centered)
    assert target_alignment(normalized, y, target) == pytest.approx(
        numpy_target_alignment(normalized.to_numpy(), t), rel=1e-10
    )


def test_float32_store_accumulates_in_float64(tmp_path):
    X, y = _data(150, 50)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.4, store=tmp_path / "K.zarr", chunk=64, dtype="float32",
                               progress=False)
    K32 = store.to_numpy().astype(np.float64)
    assert target_alignment(store, y) == pytest.approx(numpy_target_alignment(K32, y), rel=1e-12)
    assert frobenius_norm(store) == pytest.approx(np.linalg.norm(K32), rel=1e-12)


def test_alignment_of_two_grams_equals_numpy():
    X, _ = _data(90, 30)
    K1 = RBFKernel(gamma=0.4)(X)
    k2 = KernelGram(X, "poly", degree=2, gamma=0.5, chunk=40)
    K2 = k2.to_numpy()
    expected = np.vdot(K1, K2) / np.sqrt(np.vdot(K1, K1) * np.vdot(K2, K2))
    assert alignment(K1, k2) == pytest.approx(expected, rel=1e-12)
    assert alignment(k2, k2) == pytest.approx(1.0)


def test_lazy_alignment_of_two_grams_is_computed_only_when_asked():
    import dask.array as da

    X, _ = _data(90, 30)
    K1 = RBFKernel(gamma=0.4)(X)
    evaluated = []

    def counted(block):  # a block of the first Gram, recorded when Dask evaluates it
        if block.size:
            evaluated.append(block.shape)
        return block

    first = da.from_array(K1, chunks=40).map_blocks(counted, dtype=K1.dtype)
    second = KernelGram(X, "poly", degree=2, gamma=0.5, chunk=30)  # other blocks: rechunked to the first's
    K2 = second.to_numpy()
    expected = np.vdot(K1, K2) / np.sqrt(np.vdot(K1, K1) * np.vdot(K2, K2))
    lazy = alignment(first, second, compute=False)
    assert isinstance(lazy, da.Array) and lazy.shape == () and evaluated == []
    assert float(lazy.compute()) == pytest.approx(expected, rel=1e-12)
    assert sorted(evaluated) == [(40, 40)] * 9  # each block of the 3 x 3 grid read once
    assert float(lazy.compute()) == pytest.approx(alignment(first, second), rel=1e-12)


def test_far_shift_drives_alignment_to_the_class_imbalance_limit():
    # Meilă eq. (34): A(K_a) → (n⁺ − n⁻)² / n² for a far shift; n⁺ = 20 n⁻ gives 0.82.
    n_neg = 15
    n_pos = 20 * n_neg
    X, y = _data(n_pos, n_neg, seed=3)
    base = KernelGram(X, "rbf", gamma=0.5, chunk=128)
    shifted = ShiftedGram(base, 1e4, random_state=0)
    limit = (n_pos - n_neg) ** 2 / (n_pos + n_neg) ** 2
    assert limit == pytest.approx(0.82, abs=5e-3)
    shifted_alignment = target_alignment(shifted, y)
    assert shifted_alignment == pytest.approx(limit, abs=1e-3)
    original = target_alignment(base, y)
    for centering in (Centering.standard(len(y)), Centering.class_balanced(y)):
        recentered = target_alignment(CenteredGram(shifted, centering), y)
        assert recentered < shifted_alignment - 0.3
        # Recentering lands at the same origin as centering the unshifted data.
        assert recentered == pytest.approx(target_alignment(CenteredGram(base, centering), y), abs=1e-6)
    assert original < shifted_alignment


@pytest.mark.parametrize("target", ["classification", "uneven"])
def test_sampled_alignment_lies_within_three_standard_errors(target):
    X, y = _data(500, 200, seed=4)
    source = KernelGram(X, "rbf", gamma=0.3, chunk=256)
    exact = target_alignment(source, y, target)
    estimate = sampled_target_alignment(source, y, 150, n_repeats=20, target=target, random_state=0)
    assert isinstance(estimate, AlignmentEstimate)
    assert (estimate.n_sample, estimate.n_repeats) == (150, 20)
    assert 0 < estimate.stderr < 0.1 * abs(exact) + 1e-3
    assert abs(estimate.value - exact) <= 3 * estimate.stderr


def test_bad_alignment_input_is_refused():
    X, y = _data(20, 10)
    K = RBFKernel(gamma=0.5)(X)
    with pytest.raises(InvalidLabelsError, match="29 labels but the Gram matrix has 30 rows"):
        target_alignment(K, y[:-1])
    with pytest.raises(InvalidLabelsError, match="exactly two classes"):
        target_alignment(K, np.ones(30))
    with pytest.raises(SampleSizeError, match="n_sample must be an integer in \\[2, n=30\\]"):
        sampled_target_alignment(K, y, 31)
    with pytest.raises(SampleSizeError, match="n_repeats"):
        sampled_target_alignment(K, y, 10, n_repeats=1)
    with pytest.raises(ValueError, match="shapes"):
        alignment(K, K[:5, :5])
