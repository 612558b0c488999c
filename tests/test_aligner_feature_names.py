"""``KernelAligner`` names its features as scikit-learn's decompositions name their components, so that
``set_output`` and pipelines that carry column names work."""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dkernel.alignment import KernelAligner


@pytest.fixture
def data():
    X = np.random.default_rng(0).normal(size=(60, 3))
    return X, np.where(X[:, 0] + 0.2 * X[:, 1] > 0, 1, -1)


def test_one_name_per_kept_eigenvector(data):
    X, y = data
    aligner = KernelAligner(rank=5).fit(X, y)
    names = aligner.get_feature_names_out()
    assert names.tolist() == [f"kernelaligner{i}" for i in range(aligner.eigenvectors_.shape[1])]
    assert len(names) == aligner.transform(X).shape[1] == 5


def test_pandas_output_holds_the_same_values(data):
    X, y = data
    plain = KernelAligner(rank=4).fit(X, y).transform(X)
    frame = KernelAligner(rank=4).set_output(transform="pandas").fit(X, y).transform(X)
    assert isinstance(frame, pd.DataFrame) and frame.columns.tolist() == [f"kernelaligner{i}" for i in range(4)]
    np.testing.assert_allclose(frame.to_numpy(), plain, rtol=0, atol=1e-12)


def test_a_pipeline_with_named_columns(data):
    X, y = data
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    pipe = make_pipeline(StandardScaler(), KernelAligner(rank=3)).set_output(transform="pandas").fit(frame, y)
    assert pipe.transform(frame).columns.tolist() == ["kernelaligner0", "kernelaligner1", "kernelaligner2"]
    assert pipe.get_feature_names_out().tolist() == ["kernelaligner0", "kernelaligner1", "kernelaligner2"]


def test_names_need_a_fit():
    with pytest.raises(NotFittedError):
        KernelAligner().get_feature_names_out()
