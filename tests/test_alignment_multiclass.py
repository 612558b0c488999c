"""Alignment for more than two classes: the multiclass target YYᵀ and one class against the rest, exact and sampled.

Ground truth: the target matrix built explicitly and ``⟨K, T⟩_F / (‖K‖_F ‖T‖_F)`` in numpy.
"""

import subprocess
import sys

import numpy as np
import pytest

from dkernel.alignment import (
    alignment_target,
    multiclass_target,
    one_vs_rest_alignment,
    sampled_target_alignment,
    target_alignment,
)
from dkernel.exceptions import InvalidLabelsError
from dkernel.gram import GramMatrix
from dkernel.gram._sources import KernelGram
from dkernel.kernels import RBFKernel


def _blobs(sizes, seed=0, d=5):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(loc=2.0 * k, size=(m, d)) for k, m in enumerate(sizes)])
    y = np.repeat(np.arange(len(sizes)) * 3 + 1, sizes)  # labels 1, 4, 7, ...: not 0..c-1
    order = rng.permutation(len(y))
    return X[order], y[order]


def _numpy_alignment(K, T):
    return float(np.vdot(K, T) / (np.linalg.norm(K) * np.linalg.norm(T)))


def _explicit_multiclass_target(y):
    c = len(np.unique(y))
    same = y[:, None] == y[None, :]
    # Y_i·Y_j of the simplex code: 1 + (c−1)/(c−1)² = c/(c−1) within a class, −2/(c−1) + (c−2)/(c−1)² = −c/(c−1)²
    # between classes
    within, between = c / (c - 1), -c / (c - 1) ** 2
    return np.where(same, within, between)


def test_multiclass_target_is_the_simplex_code():
    y = np.array([3, 1, 2, 3, 1])
    Y = multiclass_target(y)
    np.testing.assert_allclose(Y[0], [-0.5, -0.5, 1.0])
    np.testing.assert_allclose(Y.sum(axis=1), 0.0, atol=1e-15)  # the rows sum to zero: a simplex code
    np.testing.assert_allclose(Y @ Y.T, _explicit_multiclass_target(y), atol=1e-14)


@pytest.mark.parametrize("sizes", [(60, 40, 25), (50, 50, 50, 50, 20)])
def test_multiclass_alignment_equals_numpy_on_every_source(sizes, tmp_path):
    X, y = _blobs(sizes)
    K = RBFKernel(gamma=0.1)(X)
    expected = _numpy_alignment(K, _explicit_multiclass_target(y))
    stored = GramMatrix.compute(X, kernel="rbf", gamma=0.1, chunk=48, store=str(tmp_path / "K.zarr"))
    for source in (K, KernelGram(X, "rbf", gamma=0.1, chunk=40), stored):
        assert target_alignment(source, y, "multiclass") == pytest.approx(expected, rel=1e-10)
    lazy = target_alignment(stored, y, "multiclass", compute=False)
    assert float(lazy.compute()) == pytest.approx(expected, rel=1e-10)


def test_multiclass_alignment_of_two_classes_is_the_binary_alignment():
    X, y = _blobs((40, 30))
    K = RBFKernel(gamma=0.2)(X)
    assert target_alignment(K, y, "multiclass") == pytest.approx(target_alignment(K, y), rel=1e-12)


def test_the_ideal_kernel_is_perfectly_aligned_and_a_constant_kernel_is_not():
    _, y = _blobs((30, 20, 10))
    T = _explicit_multiclass_target(y)
    assert target_alignment(T, y, "multiclass") == pytest.approx(1.0, rel=1e-12)
    ones = np.ones_like(T)  # ⟨1, T⟩ = ‖Σ_i Y_i‖²: not zero, as the class sizes differ, but far from 1
    assert target_alignment(ones, y, "multiclass") == pytest.approx(_numpy_alignment(ones, T), rel=1e-12)
    assert target_alignment(ones, y, "multiclass") < 0.2


def test_one_vs_rest_alignments_equal_the_binary_alignment_of_each_class():
    X, y = _blobs((50, 30, 20))
    K = RBFKernel(gamma=0.1)(X)
    classes, values = one_vs_rest_alignment(KernelGram(X, "rbf", gamma=0.1, chunk=32), y)
    np.testing.assert_array_equal(classes, [1, 4, 7])
    for label, value in zip(classes, values):
        t = np.where(y == label, 1.0, -1.0)
        assert value == pytest.approx(_numpy_alignment(K, np.outer(t, t)), rel=1e-10)


def test_sampled_multiclass_alignment_covers_the_exact_value():
    X, y = _blobs((200, 150, 100, 50), seed=3)
    source = KernelGram(X, "rbf", gamma=0.1, chunk=128)
    exact = target_alignment(source, y, "multiclass")
    estimate = sampled_target_alignment(source, y, 120, n_repeats=50, target="multiclass", random_state=1)
    assert 0 < estimate.stderr < 0.1 * abs(exact)
    assert abs(estimate.value - exact) <= 3 * estimate.stderr
    # n' = n: every sample is the whole set and the estimate is exact, with no spread
    whole = sampled_target_alignment(source, y, len(y), n_repeats=2, target="multiclass", random_state=0)
    assert whole.value == pytest.approx(exact, rel=1e-10)


def test_stratified_pair_weights_make_the_off_diagonal_sums_unbiased():
    # Every stratified sample of a small set, enumerated: the Horvitz-Thompson weighted pair sums average to the
    # full off-diagonal sums exactly (a wrong weight, e.g. the uniform n(n-1)/(n'(n'-1)), would not).
    import itertools

    from dkernel.alignment._measures import _off_diagonal_sums, horvitz_thompson_pair_weights

    X, y = _blobs((4, 3, 2), seed=5, d=2)
    K = RBFKernel(gamma=0.3).block(X, X)
    Y = multiclass_target(y)
    _, strata = np.unique(y, return_inverse=True)
    sizes, allocation = np.bincount(strata), np.array([2, 2, 2])
    W = horvitz_thompson_pair_weights(sizes, allocation)
    T = Y @ Y.T
    off = ~np.eye(len(y), dtype=bool)
    exact_q, exact_f = float(np.sum((T * K)[off])), float(np.sum((K * K)[off]))
    per_class = [itertools.combinations(np.flatnonzero(strata == c), 2) for c in range(3)]
    q, f = [], []
    for picks in itertools.product(*(list(p) for p in per_class)):
        S = np.sort(np.concatenate(picks))
        Q, F = _off_diagonal_sums(K[np.ix_(S, S)], Y[S], strata[S], 3)
        q.append(np.sum(W * Q))
        f.append(np.sum(W * F))
    assert len(q) == 6 * 3 * 1
    assert np.mean(q) == pytest.approx(exact_q, rel=1e-12)
    assert np.mean(f) == pytest.approx(exact_f, rel=1e-12)


def test_proportional_allocation_sums_to_n_sample_with_two_of_every_class():
    from dkernel.alignment._measures import proportional_allocation

    for sizes, n_sample in [((700, 200, 60, 3, 1), 50), ((5, 5), 10), ((1000, 10), 9), ((30, 20, 10), 7)]:
        m = proportional_allocation(np.array(sizes), n_sample)
        share = n_sample * np.array(sizes) / sum(sizes)
        assert m.sum() == n_sample
        assert np.all(m >= np.minimum(sizes, 2)) and np.all(m <= sizes)
        floor = np.minimum(sizes, 2)
        lent = np.sum(np.maximum(floor - share, 0))  # points the floor of two gives small classes beyond their share
        free = m > floor  # the others: within one point of their share, less what the small classes took
        assert np.all(np.abs(m[free] - share[free]) < 1 + lent + 1e-9)


def test_stratified_samples_give_a_smaller_standard_error_than_uniform_ones():
    X, y = _blobs((300, 200, 120, 60), seed=4)
    source = KernelGram(X, "rbf", gamma=0.1, chunk=256)
    exact = target_alignment(source, y, "multiclass")
    kw = dict(n_repeats=40, target="multiclass", random_state=2, client=False)
    uniform = sampled_target_alignment(source, y, 100, stratify=False, **kw)
    stratified = sampled_target_alignment(source, y, 100, **kw)
    assert (uniform.stratified, stratified.stratified) == (False, True)
    assert stratified.stderr < 0.6 * uniform.stderr
    for estimate in (uniform, stratified):
        assert abs(estimate.value - exact) <= 4 * estimate.stderr
    binary = np.where(y == 1, 1, -1)
    exact = target_alignment(source, binary, "uneven")
    both = [sampled_target_alignment(source, binary, 80, stratify=s, n_repeats=40, target="uneven", random_state=3)
            for s in (False, True)]
    assert both[1].stderr < both[0].stderr and all(abs(e.value - exact) <= 4 * e.stderr for e in both)


def test_stratify_is_refused_where_it_cannot_be_done_and_auto_falls_back():
    from dkernel.centering import SampleSizeError

    X, y = _blobs((30, 20, 10))
    source = KernelGram(X, "rbf", gamma=0.1)
    with pytest.raises(SampleSizeError, match="two points of each class: n_sample >= 6; got 5"):
        sampled_target_alignment(source, y, 5, target="multiclass", stratify=True)
    assert not sampled_target_alignment(source, y, 5, target="multiclass", random_state=0).stratified
    with pytest.raises(ValueError, match="regression target has real outputs"):
        sampled_target_alignment(source, X[:, 0], 20, target="regression", stratify=True)
    assert not sampled_target_alignment(source, X[:, 0], 20, target="regression", random_state=0).stratified
    with pytest.raises(ValueError, match="stratify must be"):
        sampled_target_alignment(source, y, 20, target="multiclass", stratify="yes")


def test_multiclass_alignment_on_a_cluster_equals_this_process(nanny_cluster):
    X, y = _blobs((60, 40, 30))
    source = KernelGram(X, "rbf", gamma=0.1, chunk=50)
    here = target_alignment(source, y, "multiclass", client=False)
    assert target_alignment(source, y, "multiclass", client=nanny_cluster) == pytest.approx(here, rel=1e-12)
    _, values_here = one_vs_rest_alignment(source, y, client=False)
    _, values = one_vs_rest_alignment(source, y, client=nanny_cluster)
    np.testing.assert_allclose(values, values_here, rtol=1e-12)


def test_vector_targets_refuse_many_classes_and_name_the_multiclass_ones():
    X, y = _blobs((10, 10, 10))
    K = RBFKernel(gamma=0.1)(X)
    with pytest.raises(InvalidLabelsError, match="exactly two classes"):
        target_alignment(K, y)
    with pytest.raises(ValueError, match="multiclass target YYᵀ has rank c"):
        alignment_target(y, "multiclass")
    with pytest.raises(ValueError, match="target must be one of"):
        target_alignment(K, y, "ovr")
    with pytest.raises(InvalidLabelsError, match="at least two classes"):
        target_alignment(K, np.ones(30), "multiclass")


def test_cli_align_takes_the_multiclass_targets(tmp_path):
    X, y = _blobs((40, 30, 20))
    GramMatrix.compute(X, kernel="rbf", gamma=0.1, store=str(tmp_path / "K.zarr"))
    np.save(tmp_path / "y.npy", y)
    K = RBFKernel(gamma=0.1)(X)

    def align(*flags):
        return subprocess.run([sys.executable, "-m", "dkernel.cli", "align", "K.zarr", "--labels", "y.npy", *flags],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)

    done = align("--target", "multiclass")
    assert done.returncode == 0, done.stderr
    value = float(done.stdout.split(":")[-1])
    assert value == pytest.approx(_numpy_alignment(K, _explicit_multiclass_target(y)), rel=1e-9)
    done = align("--target", "one-vs-rest")
    assert done.returncode == 0 and done.stdout.count("against the rest") == 3, done.stdout + done.stderr
    done = align()  # the binary default on three classes: a CLI error that names the flags to use
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--target classification needs labels of two classes" in done.stderr
    assert "--target multiclass" in done.stderr
    done = align("--target", "one-vs-rest", "--sample", "20")
    assert done.returncode == 2 and "Leave out --sample" in done.stderr
