"""Tests of the ``dkernel center`` and ``dkernel align`` commands."""

import numpy as np
import pytest

from dkernel.alignment import sampled_target_alignment, target_alignment
from dkernel.centering import Centering
from dkernel.cli import main
from dkernel.gram import GramMatrix
from dkernel.views import CenteredGram


@pytest.fixture
def stored(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] > 0.3, 1, -1)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.5, store=tmp_path / "K.zarr", chunk=50, progress=False)
    np.save(tmp_path / "y.npy", y)
    return gram, y, tmp_path


def test_center_writes_the_centered_store(stored):
    gram, y, tmp = stored
    assert main(["center", gram.path, "--labels", str(tmp / "y.npy"), "--out", str(tmp / "Ka.zarr")]) == 0
    expected = CenteredGram(gram, Centering.class_balanced(y)).to_numpy()
    np.testing.assert_allclose(GramMatrix.open(tmp / "Ka.zarr").to_numpy(), expected, atol=1e-12)


def test_center_without_out_prints_h0(stored, capsys):
    gram, y, tmp = stored
    assert main(["center", gram.path, "--labels", str(tmp / "y.npy"), "--scheme", "standard"]) == 0
    h0 = CenteredGram(gram, Centering.standard(len(y))).h0
    out = capsys.readouterr().out
    assert f"h0 = <a, a> = {h0:.10g}" in out
    assert main(["center", gram.path, "--labels", str(tmp / "y.npy"), "--sample", "20", "--seed", "1"]) == 0
    assert "sampled-class-balanced on 20 of 120 points" in capsys.readouterr().out


def test_align_prints_exact_and_sampled_alignment(stored, capsys):
    gram, y, tmp = stored
    assert main(["align", gram.path, "--labels", str(tmp / "y.npy")]) == 0
    assert f"{target_alignment(gram, y):.10g}" in capsys.readouterr().out
    assert main(["align", gram.path, "--labels", str(tmp / "y.npy"), "--target", "uneven", "--sample", "40",
                 "--repeats", "5"]) == 0
    expected = sampled_target_alignment(gram, y, 40, n_repeats=5, target="uneven", random_state=0)
    assert f"{expected.value:.10g} +- {expected.stderr:.3g} (n'=40, 5 samples, stratified by class)" in (
        capsys.readouterr().out)
    assert main(["align", gram.path, "--labels", str(tmp / "y.npy"), "--sample", "40", "--repeats", "5",
                 "--uniform"]) == 0
    expected = sampled_target_alignment(gram, y, 40, n_repeats=5, stratify=False, random_state=0)
    assert f"{expected.value:.10g} +- {expected.stderr:.3g} (n'=40, 5 samples, uniform)" in capsys.readouterr().out
    assert main(["align", gram.path, "--labels", str(tmp / "y.npy"), "--uniform"]) == 2
    assert "--uniform says how --sample draws" in capsys.readouterr().err


def test_cli_reports_bad_labels(stored, capsys):
    gram, y, tmp = stored
    np.save(tmp / "short.npy", y[:-3])
    assert main(["align", gram.path, "--labels", str(tmp / "short.npy")]) == 2
    assert "--labels has 117 labels but the Gram store" in capsys.readouterr().err
    assert main(["center", gram.path]) == 2
    assert "needs labels" in capsys.readouterr().err
    assert main(["center", gram.path, "--labels", str(tmp / "y.npy"), "--sample", "500"]) == 2
    assert "--sample 500 is larger than the 120 rows of the Gram store" in capsys.readouterr().err
