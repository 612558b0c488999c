"""A folder given where a file is read is called a folder; a bad value of a CSV file is told by its line in the
file (the header counted), in one sentence."""

import numpy as np
import pytest
from _cli import error_of


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.save("X.npy", rng.normal(size=(20, 3)))
    np.save("y.npy", np.arange(20) % 2)
    (tmp_path / "grams").mkdir()
    return tmp_path


def test_a_folder_given_as_labels_is_called_a_folder(work, capsys):
    err = error_of(["fit", "--data", "X.npy", "--labels", "grams", "--model", "m.zarr"], capsys)
    assert "--labels grams: a folder, not a file." in err


@pytest.mark.parametrize("header, line", [("a,b,c\n", 3), ("", 2)])
def test_a_bad_csv_value_is_told_by_its_line_in_the_file(work, capsys, header, line):
    (work / "bad.csv").write_text(header + "1,2,3\n1,2,x\n")
    err = error_of(["fit", "--data", "bad.csv", "--labels", "y.npy", "--model", "m.zarr"], capsys)
    assert f"could not convert string 'x' to float64 on line {line}, column 3. Supported formats" in err
    assert ".." not in err
