"""``dkernel adapt`` and ``dkernel fit --learner parzen|ridge`` / ``dkernel predict`` on their models."""

import numpy as np
import pytest

from dkernel import GramMatrix, RBFKernel
from dkernel.alignment import KernelAligner, transductive_adaptation
from dkernel.cli import main


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, 1, -1)
    np.save("X.npy", X)
    np.save("y.npy", y)
    np.save("outputs.npy", X[:, 1] ** 2)
    np.save("train.npy", np.arange(80))
    np.save("y_train.npy", y[:80])
    assert main(["gram", "--input", "X.npy", "--kernel", "rbf", "--gamma", "0.3", "--out", "K.zarr",
                 "--chunk", "50"]) == 0
    return X, y


def test_adapt_transductive_writes_the_adapted_store(files, capsys):
    X, y = files
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--out", "G.zarr", "--factors", "G.npz"]) == 0
    K = RBFKernel(gamma=0.3).block(X, X, symmetric=True).astype(np.float64)
    expected = transductive_adaptation(K, y).to_numpy()
    np.testing.assert_allclose(GramMatrix.open("G.zarr").to_numpy(), expected, rtol=0, atol=1e-10)
    factors = np.load("G.npz")
    np.testing.assert_allclose((factors["vectors"] * factors["weights"]) @ factors["vectors"].T, expected, atol=1e-10)
    assert "training alignment of G (classification)" in capsys.readouterr().out


def test_adapt_inductive_extends_G_to_the_unlabelled_rows(files):
    X, y = files
    assert main(["adapt", "K.zarr", "--labels", "y_train.npy", "--labelled", "train.npy", "--inductive",
                 "--target", "uneven", "--out", "G.zarr"]) == 0
    aligner = KernelAligner(kernel=RBFKernel(gamma=0.3), target="uneven", method="exact").fit(X[:80], y[:80])
    np.testing.assert_allclose(GramMatrix.open("G.zarr").to_numpy(), aligner.gram(X), rtol=0, atol=1e-8)


def test_adapt_randomized_rank(files):
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--rank", "15", "--method", "randomized",
                 "--factors", "G.npz"]) == 0
    assert np.load("G.npz")["vectors"].shape == (120, 15)


@pytest.mark.parametrize("argv, message", [
    (["--labels", "y.npy", "--rank", "121", "--out", "G.zarr"], "--rank 121 must lie in [1, 120]"),
    (["--labels", "outputs.npy", "--out", "G.zarr"], "--target classification needs labels of two classes; "
     "--labels outputs.npy holds 120. For more classes see 'dkernel align --target one-vs-rest'; for real outputs "
     "--target regression"),
    (["--labels", "y.npy", "--mass", "2", "--out", "G.zarr"], "--mass must be a fraction"),
    (["--labels", "y_train.npy", "--out", "G.zarr"], "--labels has 80 labels but the Gram store K.zarr has 120"),
    (["--labels", "y.npy"], "pass --out PATH"),
    (["--labels", "y.npy", "--rank", "0", "--out", "G.zarr"], "--rank 0 must lie in [1, 120]"),
    (["--labels", "y.npy", "--target", "regression", "--out", "G.zarr"],
     "--target regression needs real outputs, but --labels y.npy holds only two values (-1 and 1)"),
    (["--labels", "missing.npy", "--out", "G.zarr"], "--labels missing.npy: no such file"),
    (["--labels", "y.pkl", "--out", "G.zarr"], "--labels y.pkl: cannot read labels"),
    (["--labels", "y.npy", "--factors", "G.txt"], "--factors G.txt: dkernel adapt writes the factors of an adapted "
     "Gram as a NumPy .npz archive; name a path ending in .npz (e.g. G.npz)"),
])
def test_adapt_refuses_bad_input_naming_the_flag(files, capsys, argv, message, monkeypatch):
    import dkernel.alignment as adaptation

    open("y.pkl", "wb").write(b"\x80\x04garbage")
    monkeypatch.setattr(adaptation, "transductive_adaptation", None)  # refused before any work: never reached
    assert main(["adapt", "K.zarr", *argv]) == 2
    assert message in capsys.readouterr().err


def test_adapt_refuses_a_missing_or_foreign_store(files, capsys):
    import os

    assert main(["adapt", "missing.zarr", "--labels", "y.npy", "--out", "G.zarr"]) == 2
    assert "no Gram store at missing.zarr (the PATH argument)" in capsys.readouterr().err
    os.makedirs("notes")
    open("notes/keep.txt", "w").write("mine")
    assert main(["adapt", "notes", "--labels", "y.npy", "--out", "G.zarr"]) == 2
    assert "is not a dkernel Gram store" in capsys.readouterr().err
    assert not os.path.exists("G.zarr")


def test_adapt_overwrite_replaces_only_an_adapted_store(files, capsys):
    import os

    os.makedirs("notes")
    open("notes/keep.txt", "w").write("mine")
    K_before = GramMatrix.open("K.zarr").to_numpy()
    for out in ("notes", "K.zarr"):  # a foreign folder, the input Gram itself
        assert main(["adapt", "K.zarr", "--labels", "y.npy", "--out", out, "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "it is not deleted or replaced" in err and "--out K.zarr holds a raw Gram store, not an adapted one" in err
    assert open("notes/keep.txt").read() == "mine"
    np.testing.assert_array_equal(GramMatrix.open("K.zarr").to_numpy(), K_before)
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--out", "G.zarr"]) == 0
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--out", "G.zarr"]) == 2  # no --overwrite
    assert "pass --overwrite" in capsys.readouterr().err
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--rank", "5", "--out", "G.zarr", "--overwrite"]) == 0
    assert GramMatrix.open("G.zarr").operators[-1]["name"] == "alignment-adapted"


def test_adapt_refuses_a_gram_with_nan(files, capsys):
    X, _ = files
    K = RBFKernel(gamma=0.3).block(X, X).astype(np.float64)
    K[5, 7] = K[7, 5] = np.nan
    np.save("K.npy", K)
    from dkernel.alignment import top_eigenpairs

    with pytest.raises(ValueError, match="NaN or infinite"):
        top_eigenpairs(np.load("K.npy"), 5, method="randomized")


def test_fit_and_predict_the_papers_other_learners(files, capsys):
    X, y = files
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--kernel", "rbf", "--gamma", "0.3",
                 "--learner", "parzen", "--model", "pw.zarr"]) == 0
    assert main(["predict", "--model", "pw.zarr", "--data", "X.npy", "--out", "pw.npy"]) == 0
    from dkernel.svm import ParzenWindowClassifier

    expected = ParzenWindowClassifier(kernel="rbf", gamma=0.3).fit(X, y).predict(X)
    np.testing.assert_array_equal(np.load("pw.npy"), expected)
    assert main(["fit", "--data", "X.npy", "--labels", "outputs.npy", "--kernel", "rbf", "--gamma", "0.3",
                 "--learner", "ridge", "--alpha", "0.1", "--model", "rr.zarr"]) == 0
    assert main(["predict", "--model", "rr.zarr", "--data", "X.npy", "--out", "rr.npy"]) == 0
    from sklearn.kernel_ridge import KernelRidge

    ridge = KernelRidge(kernel="rbf", gamma=0.3, alpha=0.1).fit(X, X[:, 1] ** 2)
    np.testing.assert_allclose(np.load("rr.npy"), ridge.predict(X), rtol=0, atol=1e-8)
    # A learner model is not replaced by an SVM, nor without --overwrite.
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "rr.zarr"]) == 2
    capsys.readouterr()
    assert main(["fit", "--data", "X.npy", "--labels", "outputs.npy", "--learner", "ridge", "--model", "rr.zarr"]) == 2
    assert "rr.zarr" in capsys.readouterr().err
