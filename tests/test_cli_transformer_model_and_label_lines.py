"""What a command-line user met with a kernel PCA model, an adapted Gram of many blocks, and a labels file of
one line: ``dkernel predict`` refuses a model that predicts nothing in one line; ``dkernel adapt`` shows no
warning of Dask's about the grid of blocks it was asked for; a text line of several labels is not read as
several rows."""

import os

import numpy as np
import pytest

from dkernel import KernelPCA
from dkernel.cli import main
from _cli import error_of


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 3))
    np.save("X.npy", X)
    np.save("y.npy", (X[:, 0] > 0).astype(int))
    return tmp_path


def test_predict_refuses_a_kernel_pca_model_in_one_line(cwd, capsys):
    KernelPCA(n_components=2).fit(np.load("X.npy")).save("kpca.zarr")
    err = error_of(["predict", "--model", "kpca.zarr", "--data", "X.npy", "--out", "Z.npy"], capsys)
    assert "--model kpca.zarr is a KernelPCA model, which transforms data and predicts nothing" in err
    assert "dkernel.load_model('kpca.zarr').transform(X)" in err
    assert not os.path.exists("Z.npy")


def test_adapt_over_a_store_of_many_blocks_shows_no_dask_warning(cwd, capsys):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    np.save("Xb.npy", X)
    np.save("yb.npy", (X[:, 0] > 0).astype(int))
    assert main(["gram", "--input", "Xb.npy", "--out", "K.zarr", "--chunk", "20"]) == 0
    capsys.readouterr()
    assert main(["adapt", "K.zarr", "--labels", "yb.npy", "--out", "G.zarr"]) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err.lower(), err
    assert "PerformanceWarning" not in out + err
    assert os.path.isdir("G.zarr")


@pytest.mark.parametrize("text", ["hello world foo\n", "1 0 1\n", "1,0,1\n"])
def test_a_line_of_several_labels_is_refused(cwd, capsys, text):
    name = "labels.csv" if "," in text else "labels.txt"
    with open(name, "w") as fh:
        fh.write(text)
    np.save("X3.npy", np.load("X.npy")[:3])
    err = error_of(["fit", "--data", "X3.npy", "--labels", name, "--model", "m"], capsys)
    assert f"--labels {name} holds 3 values on a line; labels are one per line." in err
    assert not os.path.exists("m")


def test_labels_one_per_line_are_read_with_or_without_a_header(cwd, capsys):
    y = np.load("y.npy")
    with open("words.txt", "w") as fh:
        fh.write("".join(f"{'spam' if v else 'ham'}\n" for v in y))
    with open("header.csv", "w") as fh:
        fh.write("label\n" + "".join(f"{v}\n" for v in y))
    from dkernel import load_model

    for name, classes in (("words.txt", ["ham", "spam"]), ("header.csv", [0, 1])):
        assert main(["fit", "--data", "X.npy", "--labels", name, "--model", f"m-{name}", "--quiet"]) == 0
        assert load_model(f"m-{name}").classes_.tolist() == classes
    assert capsys.readouterr().out.count("90 samples x 3 features, 2 classes") == 2
