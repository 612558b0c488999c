"""``dkernel fit --learner nusvc|svr|nusvr|one-class|conformal``: the SVM family on the command line, as the library trains it,
with each option refused where the chosen learner does not take it; ``dkernel predict`` on their models."""

import numpy as np
import pytest
from sklearn import svm as sk

from dkernel import load_model
from dkernel.cli import main
from dkernel.svm import SVR
from _cli import error_of


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=150) > 0, 1, -1)
    values = np.sin(X[:, 0]) + 0.1 * rng.normal(size=150)
    np.save("X.npy", X)
    np.save("y.npy", y)
    np.save("y01.npy", (y > 0).astype(int))
    np.save("y3.npy", np.arange(150) % 3)
    np.save("values.npy", values)
    np.savetxt("words.txt", np.where(y > 0, "spam", "ham"), fmt="%s")
    return X, y, values


#: learner -> (its flags, the labels file, scikit-learn's estimator with the same parameters, what it predicts)
CASES = {
    "nusvc": (["--nu", "0.3"], "y.npy", sk.NuSVC(nu=0.3, gamma=0.5, tol=1e-6), "labels"),
    "svr": (["--C", "4", "--epsilon", "0.05"], "values.npy", sk.SVR(C=4, epsilon=0.05, gamma=0.5, tol=1e-6),
            "values"),
    "nusvr": (["--C", "2", "--nu", "0.4"], "values.npy", sk.NuSVR(C=2, nu=0.4, gamma=0.5, tol=1e-6), "values"),
    "one-class": (["--nu", "0.2"], None, sk.OneClassSVM(nu=0.2, gamma=0.5, tol=1e-6), "labels"),
}


@pytest.mark.parametrize("learner", list(CASES))
def test_each_svm_learner_trains_what_scikit_learn_trains(files, capsys, learner):
    X, y, values = files
    flags, labels, reference, predicts = CASES[learner]
    argv = ["fit", "--data", "X.npy", "--learner", learner, *flags, "--gamma", "0.5", "--tol", "1e-6",
            "--model", "m.zarr", "--quiet"]
    assert main(argv + (["--labels", labels] if labels else [])) == 0
    out = capsys.readouterr().out
    name = type(reference).__name__
    assert f"trained {'an' if name.startswith('S') else 'a'} {name} on 150 samples x 3 features" in out
    assert type(load_model("m.zarr")).__name__ == name
    reference.fit(X, None if labels is None else np.load(labels))
    assert main(["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "p.npy", "--decision", "d.npy"]
                if hasattr(reference, "decision_function") and predicts == "labels"
                else ["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "p.npy"]) == 0
    assert f"predicted {predicts} written to p.npy" in capsys.readouterr().out
    if predicts == "values":
        np.testing.assert_allclose(np.load("p.npy"), reference.predict(X), rtol=0, atol=1e-3)
    else:
        np.testing.assert_allclose(np.load("d.npy"), reference.decision_function(X), rtol=0, atol=1e-3)
        clear = np.abs(reference.decision_function(X)) > 1e-3  # (free support vectors lie on the boundary, at 0)
        np.testing.assert_array_equal(np.load("p.npy")[clear], reference.predict(X)[clear])


def test_the_summary_says_what_the_model_does_on_its_training_data(files, capsys):
    assert main(["fit", "--data", "X.npy", "--labels", "values.npy", "--learner", "svr", "--model", "r.zarr",
                 "--quiet"]) == 0
    model = load_model("r.zarr")
    X, _, values = files
    assert f"training R^2 {model.score(X, values):.4f}" in capsys.readouterr().out
    assert main(["fit", "--data", "X.npy", "--learner", "one-class", "--nu", "0.1", "--model", "o.zarr",
                 "--quiet"]) == 0
    inside = np.mean(load_model("o.zarr").predict(X) == 1)
    assert f"{inside:.4f} of the training samples inside" in capsys.readouterr().out


#: learner -> a flag of another learner's, the message's fragments
REFUSED = {
    "nusvc-with-C": (["--learner", "nusvc", "--C", "3"], "y.npy",
                     ["--C: an option of --learner svc, svr, nusvr or conformal only", "is regularized by --nu", "Remove --C"]),
    "svc-with-nu": (["--nu", "0.3"], "y.npy", ["--nu: an option of --learner nusvc, nusvr or one-class only"]),
    "nusvr-with-epsilon": (["--learner", "nusvr", "--epsilon", "0.1"], "values.npy",
                           ["--epsilon: an option of --learner svr only"]),
    "svr-with-normalize": (["--learner", "svr", "--normalize"], "values.npy",
                           ["--normalize: an option of --learner svc only"]),
    "one-class-with-C-and-multiclass": (["--learner", "one-class", "--C", "2", "--multiclass", "ovr"], None,
                                        ["--C: an option", "--multiclass: an option of --learner svc only",
                                         "Remove --C, --multiclass"]),
    "ridge-with-nu": (["--learner", "ridge", "--nu", "0.5"], "values.npy", ["--nu: an option", "--alpha"]),
    "ridge-with-store": (["--learner", "ridge", "--store", "grams"], "values.npy",
                         ["--store: an option", "ridge learner is computed in this process in closed form"]),
    "svr-class-balanced": (["--learner", "svr", "--centering", "class-balanced"], "values.npy",
                           ["--centering class-balanced", "svr learner has no classes", "--centering standard"]),
    "nu-above-one": (["--learner", "nusvc", "--nu", "1.5"], "y.npy", ["--nu must be a number in (0, 1]; got 1.5"]),
    "nu-zero": (["--learner", "one-class", "--nu", "0"], None, ["--nu must be a number in (0, 1]; got 0"]),
    "negative-epsilon": (["--learner", "svr", "--epsilon", "-0.1"], "values.npy",
                         ["--epsilon must be a finite number >= 0"]),
    "svc-with-kappa": (["--kappa", "2"], "y.npy", ["--kappa: an option of --learner conformal only"]),
    "conformal-with-centering": (["--learner", "conformal", "--centering", "standard"], "y.npy",
                                 ["--centering: an option of --learner svc, nusvc, svr, nusvr or one-class only",
                                  "trained twice"]),
    "conformal-with-checkpoint": (["--learner", "conformal", "--checkpoint", "ck"], "y.npy",
                                  ["--checkpoint: an option of"]),
    "negative-kappa": (["--learner", "conformal", "--kappa", "-2"], "y.npy", ["--kappa must be a finite number > 0"]),
    "conformal-three-classes": (["--learner", "conformal"], "y3.npy",
                                ["--labels y3.npy holds 3 classes; --learner conformal is a binary classifier"]),
    "one-class-with-labels": (["--learner", "one-class"], "y.npy",
                              ["--labels y.npy: the one-class learner learns from --data alone"]),
    "svc-on-values": ([], "values.npy", ["--labels values.npy holds continuous values", "--learner svr, nusvr"]),
    "svr-on-words": (["--learner", "svr"], "words.txt", ["--labels words.txt holds text", "is a regression"]),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_an_option_the_learner_does_not_take_is_refused_before_any_work(files, capsys, monkeypatch, case):
    flags, labels, fragments = REFUSED[case]
    import dkernel.cli._adapt as adapt
    import dkernel.cli._model as model

    for module, name in ((model, "_svm_estimator"), (adapt, "run_learner_fit")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("trained before refusing"))
    err = error_of(["fit", "--data", "X.npy", *(["--labels", labels] if labels else []), *flags,
                    "--model", "m.zarr", "--quiet"], capsys)
    for fragment in fragments:
        assert fragment in err, err


def test_a_single_problem_checkpoint_is_resumed_with_resume(files, capsys):
    argv = ["fit", "--data", "X.npy", "--labels", "values.npy", "--learner", "svr", "--checkpoint", "ck",
            "--checkpoint-iterations", "1", "--working-set-size", "16", "--quiet"]
    assert main(argv + ["--model", "a.zarr"]) == 0
    capsys.readouterr()
    # SVR writes its one state at the checkpoint's root (an SVC writes problem-K folders): --resume finds it.
    assert main(argv + ["--model", "b.zarr", "--resume"]) == 0
    X, _, values = files
    np.testing.assert_allclose(load_model("b.zarr").predict(X), load_model("a.zarr").predict(X), rtol=0, atol=1e-6)


def test_a_model_of_another_learner_is_not_replaced(files, capsys):
    assert main(["fit", "--data", "X.npy", "--labels", "values.npy", "--learner", "svr", "--model", "m.zarr",
                 "--quiet"]) == 0
    before = sorted(p.name for p in __import__("pathlib").Path("m.zarr").rglob("*"))
    err = error_of(["fit", "--data", "X.npy", "--labels", "y.npy", "--learner", "nusvc", "--model", "m.zarr",
                    "--overwrite", "--quiet"], capsys)
    assert "holds a dkernel model of an SVR, not a dkernel model of a NuSVC" in err
    assert sorted(p.name for p in __import__("pathlib").Path("m.zarr").rglob("*")) == before
    assert isinstance(load_model("m.zarr"), SVR)
    assert main(["fit", "--data", "X.npy", "--labels", "values.npy", "--learner", "svr", "--C", "3",
                 "--model", "m.zarr", "--overwrite", "--quiet"]) == 0
    assert load_model("m.zarr").C == 3


def test_a_one_class_model_scores_labels_of_plus_and_minus_one(files, capsys):
    X, y, _ = files
    assert main(["fit", "--data", "X.npy", "--learner", "one-class", "--model", "o.zarr", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["predict", "--model", "o.zarr", "--data", "X.npy", "--labels", "y.npy"]) == 0
    expected = np.mean(load_model("o.zarr").predict(X) == y)
    assert f"accuracy {expected:.4f}" in capsys.readouterr().out
    err = error_of(["predict", "--model", "o.zarr", "--data", "X.npy", "--labels", "y01.npy"], capsys)
    assert "a one-class model predicts +1 (inside) or -1 (outside)" in err


@pytest.mark.parametrize("bias, factor", [("free", "williams"), ("scaled", "amari-wu")])
def test_the_conformal_learner_trains_what_the_library_trains(files, capsys, bias, factor):
    from dkernel.svm import ConformalSVC

    X, y, _ = files
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--learner", "conformal", "--bias", bias,
                 "--conformal-factor", factor, "--kappa", "0.5", "--C", "2", "--gamma", "0.5", "--model", "c.zarr",
                 "--quiet"]) == 0
    assert "trained a ConformalSVC on 150 samples x 3 features, 2 classes" in capsys.readouterr().out
    expected = ConformalSVC(C=2, gamma=0.5, kappa=0.5, bias=bias, conformal=factor).fit(X, y)
    assert isinstance(load_model("c.zarr"), ConformalSVC)
    assert main(["predict", "--model", "c.zarr", "--data", "X.npy", "--decision", "d.npy"]) == 0
    np.testing.assert_allclose(np.load("d.npy"), expected.decision_function(X), rtol=0, atol=1e-9)


def test_an_interrupted_single_problem_fit_says_its_checkpoint_was_written(files, capsys):
    """SVR writes its state at the checkpoint's root: after Ctrl-C the message says it is kept (it said none was)."""
    from dkernel.cli._model import _fit_interrupted

    argv = ["fit", "--data", "X.npy", "--labels", "values.npy", "--learner", "svr", "--checkpoint", "ck",
            "--checkpoint-iterations", "1", "--working-set-size", "16", "--quiet", "--model", "a.zarr"]
    assert main(argv) == 0

    class Args:
        checkpoint, store, checkpoint_seconds, checkpoint_iterations = "ck", None, 30.0, 1

    assert "the solver's state at its last checkpoint is kept in --checkpoint ck" in _fit_interrupted(Args)
