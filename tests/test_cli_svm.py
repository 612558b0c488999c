"""`dkernel fit` and `dkernel predict`."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from dkernel import cli
from dkernel.svm import SVC, load_model


@pytest.fixture
def wdbc_files(tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    return tmp_path / "X.npy", tmp_path / "y.npy", X, y


def test_fit_then_predict_equals_the_library(wdbc_files, tmp_path, capsys):
    X_path, y_path, X, y = wdbc_files
    model = tmp_path / "model.zarr"
    store = tmp_path / "K.zarr"
    argv = ["fit", "--data", str(X_path), "--labels", str(y_path), "--kernel", "rbf", "--gamma", "0.05",
            "--C", "10", "--centering", "class-balanced", "--store", str(store), "--model", str(model)]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "support vectors" in captured.out and str(model) in captured.out
    assert "free SV" in captured.err  # progress of the outer iterations
    pred = tmp_path / "pred.npy"
    assert cli.main(["predict", "--model", str(model), "--data", str(X_path), "--labels", str(y_path),
                     "--out", str(pred)]) == 0
    assert "accuracy" in capsys.readouterr().out
    ref = SVC(kernel="rbf", gamma=0.05, C=10, centering="class-balanced").fit(X, y)
    np.testing.assert_array_equal(np.load(pred), ref.predict(X))
    np.testing.assert_allclose(load_model(model).decision_function(X), ref.decision_function(X), atol=1e-6)
    # A second fit reuses the stored Gram blocks.
    assert cli.main(argv + ["--overwrite", "--quiet"]) == 0


def test_interrupted_fit_leaves_no_model(wdbc_files, tmp_path, monkeypatch, capsys):
    X_path, y_path, _, _ = wdbc_files
    import dkernel.svm

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dkernel.svm, "solve_qp", interrupted)
    model = tmp_path / "model.zarr"
    code = cli.main(["fit", "--data", str(X_path), "--labels", str(y_path), "--model", str(model), "--quiet"])
    assert code == 130
    assert not model.exists()
    assert "interrupted" in capsys.readouterr().err


def test_fit_errors_are_one_line(wdbc_files, tmp_path, capsys):
    X_path, _, _, _ = wdbc_files
    bad_labels = tmp_path / "bad.npy"
    np.save(bad_labels, np.zeros(10))
    code = cli.main(["fit", "--data", str(X_path), "--labels", str(bad_labels), "--model", str(tmp_path / "m")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("dkernel: error:") and "10 labels" in err
    code = cli.main(["fit", "--data", str(X_path), "--model", str(tmp_path / "m")])
    assert code == 2 and "--labels" in capsys.readouterr().err
