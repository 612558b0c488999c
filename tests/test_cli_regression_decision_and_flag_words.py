"""``dkernel predict --decision`` on a model that predicts values, the library's refusals of ``--nu``,
``--epsilon``, ``--kappa`` told in flags, and a one-class model whose centering would leave it w = 0."""

import os

import numpy as np
import pytest

from dkernel.cli import main
from _cli import error_of


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    np.save("X.npy", X)
    np.save("y.npy", np.where(X[:, 0] > 0, 1, -1))
    np.save("values.npy", X[:, 0] * 2 + 0.1 * rng.normal(size=120))
    return X


@pytest.mark.parametrize("learner", ["ridge", "svr"])
def test_decision_values_of_a_regression_model_are_refused_and_nothing_is_written(files, capsys, learner):
    assert main(["fit", "--learner", learner, "--data", "X.npy", "--labels", "values.npy", "--model", "m",
                 "--quiet"]) == 0
    capsys.readouterr()
    err = error_of(["predict", "--model", "m", "--data", "X.npy", "--decision", "d.npy", "--out", "p.npy"], capsys)
    assert f"--decision: the {learner.upper() if learner == 'svr' else learner} model in --model m has no decision " \
           "values; write its predictions with --out." in err
    assert not os.path.exists("d.npy") and not os.path.exists("p.npy")
    # Its predictions are written as asked.
    assert main(["predict", "--model", "m", "--data", "X.npy", "--out", "p.npy"]) == 0
    assert np.load("p.npy").shape == (120,)


def test_a_classifier_still_writes_its_decision_values(files, capsys):
    assert main(["fit", "--learner", "parzen", "--data", "X.npy", "--labels", "y.npy", "--model", "m"]) == 0
    assert main(["predict", "--model", "m", "--data", "X.npy", "--decision", "d.npy"]) == 0
    assert np.load("d.npy").shape == (120,)


def test_an_infeasible_nu_is_told_by_its_flag(files, capsys):
    err = error_of(["fit", "--learner", "nusvc", "--nu", "0.99", "--data", "X.npy", "--labels", "y.npy",
                    "--model", "m", "--quiet"], capsys)
    assert "--nu 0.99 needs" in err and "lower --nu to at most 0.9." in err and "nu=" not in err
    assert not os.path.exists("m")


def test_an_underflowing_kappa_is_told_by_its_flag(files, capsys):
    err = error_of(["fit", "--learner", "conformal", "--kappa", "1000", "--data", "X.npy", "--labels", "y.npy",
                    "--model", "m", "--quiet"], capsys)
    assert "with --kappa 1000.0:" in err and "give a smaller --kappa" in err and "kappa=" not in err
    assert not os.path.exists("m")


def test_a_one_class_origin_the_svm_reaches_is_refused_before_training(files, capsys):
    err = error_of(["fit", "--learner", "one-class", "--centering", "standard", "--data", "X.npy", "--model", "m"],
                   capsys)
    assert "--centering standard with --learner one-class: the origin is the mean of 120 training points" in err
    assert "Give --centering-sample N with N < --nu × 120 = 60, or leave out --centering." in err
    assert not os.path.exists("m")
    err = error_of(["fit", "--learner", "one-class", "--centering", "standard", "--centering-sample", "60",
                    "--data", "X.npy", "--model", "m"], capsys)
    assert "mean of 60 training points" in err and not os.path.exists("m")


def test_a_one_class_origin_of_fewer_points_trains_a_model_that_separates(files, capsys):
    import warnings

    from dkernel import load_model

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the library's warning of w = 0 is not given
        assert main(["fit", "--learner", "one-class", "--centering", "standard", "--centering-sample", "30",
                     "--data", "X.npy", "--model", "m", "--quiet"]) == 0
    decision = load_model("m").decision_function(files)
    assert np.ptp(decision) > 1e-3  # not the constant of w = 0
