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
    import dkernel.svm._training

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dkernel.svm._training, "solve_qp", interrupted)
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


# --------------------------------------------------------------------------- #
# One set of kernel defaults; messages in terms of flags
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid"])
def test_gram_then_fit_store_share_the_kernel_defaults(kernel, wdbc_files, tmp_path, capsys):
    from sklearn.svm import SVC as SklearnSVC

    from dkernel.gram import GramMatrix

    X_path, y_path, X, y = wdbc_files
    store = tmp_path / "K.zarr"
    assert cli.main(["gram", "--input", str(X_path), "--kernel", kernel, "--out", str(store), "--no-progress"]) == 0
    model = tmp_path / "model.zarr"
    code = cli.main(["fit", "--data", str(X_path), "--labels", str(y_path), "--kernel", kernel, "--store",
                     str(store), "--model", str(model), "--quiet"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"Gram store {store}" in captured.out
    # Both are scikit-learn's SVC defaults: gamma='scale' as libsvm's wrapper resolves it, coef0 0, degree 3.
    with pytest.warns(Warning):
        gamma = SklearnSVC(kernel=kernel, max_iter=1).fit(X, y)._gamma
    expected = {"rbf": {"gamma": gamma}, "sigmoid": {"gamma": gamma, "coef0": 0.0},
                "poly": {"gamma": gamma, "coef0": 0.0, "degree": 3}}[kernel]  # fmt: skip
    assert GramMatrix.open(store).kernel.params == expected
    assert load_model(model)._kernel.params == expected


def test_predict_refuses_labels_of_another_length(wdbc_files, tmp_path, capsys):
    X_path, y_path, X, y = wdbc_files
    model = tmp_path / "model.zarr"
    assert cli.main(["fit", "--data", str(X_path), "--labels", str(y_path), "--model", str(model), "--quiet"]) == 0
    np.save(tmp_path / "short.npy", y[:-3])
    capsys.readouterr()
    code = cli.main(["predict", "--model", str(model), "--data", str(X_path), "--labels",
                     str(tmp_path / "short.npy"), "--out", str(tmp_path / "pred.npy")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err == (f"dkernel: error: --labels {tmp_path / 'short.npy'} has {len(y) - 3} labels but --data {X_path} "
                   f"has {len(y)} rows; pass one label per row of --data.\n")
    assert not (tmp_path / "pred.npy").exists()
    np.save(tmp_path / "narrow.npy", X[:, :5])
    code = cli.main(["predict", "--model", str(model), "--data", str(tmp_path / "narrow.npy")])
    err = capsys.readouterr().err
    assert code == 2 and "has 5 features but the model" in err and f"trained on {X.shape[1]}" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["center", "{K}", "--labels", "{y}", "--sample", "1"],
         "without a sample point (2 classes); use --sample >= 2"),
        (["center", "{K}", "--labels", "{y}", "--sample", "100000"], "--sample 100000 is larger than the 569 rows"),
        (["center", "{K}", "--labels", "{y}", "--sample", "0"], "--sample must be an integer >= 1; got 0"),
        (["center", "{K}", "--labels", "{short}"], "--labels has 10 labels but the Gram store"),
        (["align", "{K}", "--labels", "{y}", "--sample", "1"], "--sample must be an integer >= 2; got 1"),
        (["align", "{K}", "--labels", "{y}", "--sample", "50", "--repeats", "1"],
         "--repeats must be an integer >= 2"),
        (["fit", "--data", "{X}", "--labels", "{y}", "--C", "-1", "--model", "{m}"],
         "--C must be a finite number > 0"),
        (["fit", "--data", "{X}", "--labels", "{y}", "--gamma", "big", "--model", "{m}"], "--gamma must be a number"),
        (["fit", "--data", "{X}", "--labels", "{y}", "--degree", "2", "--model", "{m}"],
         "--degree: unknown parameter of the rbf kernel, which takes --gamma"),
        (["fit", "--data", "{X}", "--labels", "{y}", "--centering", "class-balanced", "--centering-sample", "1",
          "--model", "{m}"], "--centering-sample must be an integer >= 2; got 1"),
        (["fit", "--data", "{X}", "--labels", "{ones}", "--model", "{m}"], "contain a single class (1)"),
        (["gram", "--input", "{X}", "--kernel", "linear", "--gamma", "1", "--out", "{m}"],
         "--gamma: unknown parameter of the linear kernel, which takes no parameter"),
        (["center", "{K}", "--labels", "{y}", "--out", "{K}"], "Pass --overwrite to replace it"),
        (["fit", "--input", "{X}", "--labels", "{y}", "--C", "-1", "--model", "{m}"],
         "--C must be a finite number > 0"),
    ],
    ids=["center-sample-class", "center-sample-n", "center-sample-0", "center-labels", "align-sample",
         "align-repeats", "fit-C", "fit-gamma", "fit-degree", "fit-centering-sample", "fit-one-class", "gram-gamma",
         "center-in-place", "fit-input-flag"],
)
def test_errors_name_flags_not_python_parameters(argv, expected, wdbc_files, tmp_path, capsys):
    from dkernel.gram import GramMatrix

    X_path, y_path, X, y = wdbc_files
    K = tmp_path / "K.zarr"
    GramMatrix.compute(X, kernel="rbf", gamma=0.05, store=K, progress=False)
    np.save(tmp_path / "short.npy", y[:10])
    np.save(tmp_path / "ones.npy", np.ones(len(y), dtype=np.int64))
    paths = {"K": K, "y": y_path, "X": X_path, "m": tmp_path / "out.zarr", "short": tmp_path / "short.npy",
             "ones": tmp_path / "ones.npy"}  # fmt: skip
    code = cli.main([a.format(**paths) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dkernel: error: ") and err.count("\n") == 1, err
    assert expected in err
    for python_name in ("n_sample", "n_repeats", "centering_sample", "np.int64", "np.float64", "'C' parameter",
                        "overwrite=True"):
        assert python_name not in err
    assert not (tmp_path / "out.zarr").exists()


def test_progress_is_plain_lines_off_a_terminal(wdbc_files, tmp_path, capsys):
    X_path, y_path, _, _ = wdbc_files
    assert cli.main(["gram", "--input", str(X_path), "--chunk", "100", "--out", str(tmp_path / "K.zarr")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "[#" not in err and "21/21 blocks" in err
    assert cli.main(["fit", "--data", str(X_path), "--labels", str(y_path), "--model", str(tmp_path / "m.zarr")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "[#" not in err
    lines = err.splitlines()
    assert any(line.startswith("1/1 row bands") for line in lines)  # the in-memory Gram
    assert lines[-1].startswith("[dkernel.solver] converged: gap ") and "<= tol 0.001 after" in lines[-1]
    assert len(lines) <= 6
