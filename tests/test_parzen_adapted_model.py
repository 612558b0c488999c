"""A Parzen window classifier over Kandola's adapted kernel (Algorithm 2) saves a model that loads and predicts as it
did; one that cannot be loaded is refused at save; a precomputed kernel block with NaN is named as NaN first."""

import numpy as np
import pytest

from dkernel import load_model
from dkernel.alignment import KernelAligner
from dkernel.exceptions import NonFiniteInputError
from dkernel.svm import ParzenWindowClassifier


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, 1, -1)


def test_a_parzen_model_over_an_adapted_kernel_round_trips(data, tmp_path):
    X, y = data
    aligner = KernelAligner(gamma=0.2).fit(X, y)
    model = ParzenWindowClassifier(kernel=aligner.adapted_kernel_).fit(X, y)
    model.save(tmp_path / "pz.zarr")
    loaded = load_model(tmp_path / "pz.zarr")
    X_test = np.random.default_rng(1).normal(size=(30, 3))
    np.testing.assert_allclose(loaded.decision_function(X_test), model.decision_function(X_test), rtol=0,
                               atol=1e-12)
    np.testing.assert_array_equal(loaded.predict(X_test), model.predict(X_test))
    np.testing.assert_allclose(loaded.kernel.projection, aligner.adapted_kernel_.projection, rtol=0, atol=0)


def test_an_adapted_kernel_of_a_precomputed_gram_is_refused_at_save(data, tmp_path):
    X, y = data
    K = np.exp(-0.2 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    adapted = KernelAligner(kernel="precomputed").fit(K, y).adapted_kernel_
    model = ParzenWindowClassifier(kernel=adapted).fit(K, y)
    with pytest.raises(ValueError, match="fitted on a precomputed Gram, cannot be saved"):
        model.save(tmp_path / "pz.zarr")
    assert not (tmp_path / "pz.zarr").exists()


def test_a_precomputed_block_with_nan_and_another_width_is_named_as_nan(data):
    X, y = data
    K = X @ X.T
    model = ParzenWindowClassifier(kernel="precomputed").fit(K, y)
    block = np.ones((5, 50))
    block[2, 3] = np.nan
    with pytest.raises(NonFiniteInputError, match="NaN"):
        model.predict(block)
    with pytest.raises(ValueError, match="X has 50 features"):
        model.predict(np.ones((5, 50)))
