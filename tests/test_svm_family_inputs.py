"""Inputs every estimator of the SVM family takes alike: NaN or infinite data named with their row, and a Gram store
the user wrote read in its own blocks and precision."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import dkernel
from dkernel.exceptions import NonFiniteInputError
from dkernel.gram import GramMatrix


@pytest.mark.parametrize("make", [dkernel.SVC, dkernel.ConformalSVC, dkernel.GeneralizedBiasSVC],
                         ids=["SVC", "ConformalSVC", "GeneralizedBiasSVC"])
def test_nan_in_the_data_is_named_with_its_count_and_row_in_fit_and_predict(make):
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    bad = X.copy()
    bad[17, 3] = np.nan
    bad[40, 0] = np.inf
    message = r"X has 1 NaN value and 1 infinite value \(first in row 17\)"
    with pytest.raises(NonFiniteInputError, match=message):
        make().fit(bad, y)
    model = make().fit(X, y)
    with pytest.raises(NonFiniteInputError, match=message):
        model.predict(bad)


def _blocks_written(store):
    return {str(p): p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file() and "c" in p.relative_to(store).parts}


@pytest.mark.parametrize("chunk, dtype", [(100, "float64"), (64, "float32")])
def test_a_fit_reads_a_store_written_with_other_blocks_or_precision(tmp_path, chunk, dtype):
    """``dkernel gram --chunk 100`` then ``dkernel fit --store``: the store holds this Gram; its blocks and dtype are
    the user's choice, not a mismatch."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=300) > 0, 1, -1)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.5, store=tmp_path / "K.zarr", chunk=chunk, dtype=dtype,
                               client=False, progress=False)
    written = _blocks_written(tmp_path / "K.zarr")
    assert len(written) >= 9
    from_store = dkernel.SVC(gamma=0.5, store=tmp_path / "K.zarr", client=False).fit(X, y)
    in_memory = dkernel.SVC(gamma=0.5, client=False).fit(X, y)
    assert store.chunks[0] == chunk and from_store.store_path_ == str(tmp_path / "K.zarr")
    assert _blocks_written(tmp_path / "K.zarr") == written  # read, none computed again
    np.testing.assert_allclose(from_store.decision_function(X), in_memory.decision_function(X),
                               atol=1e-12 if dtype == "float64" else 1e-4)
