"""The dkernel command line: gram, info, input files and error reporting."""

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from sklearn.metrics import pairwise_kernels

from dkernel.cli._files import load_input
from dkernel.cli import build_parser, main
from dkernel.exceptions import InputFileError
from dkernel.gram import GramMatrix


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(40, 5))


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *fragments):
    assert code == 2
    assert err.startswith("dkernel: error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


# --------------------------------------------------------------------------- #
# Input files
# --------------------------------------------------------------------------- #


def write_input(X, path):
    suffix = path.suffix
    if suffix == ".npy":
        np.save(path, X)
    elif suffix == ".npz":
        np.savez(path, X=X, y=np.arange(len(X)))
    elif suffix == ".csv":
        header = ",".join(f"f{i}" for i in range(X.shape[1]))
        np.savetxt(path, X, delimiter=",", header=header, comments="", fmt="%.17g")
    else:
        dump_svmlight_file(X, np.zeros(len(X)), str(path))
    return path


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".csv", ".svmlight"])
def test_load_input_reads_every_format(suffix, X, tmp_path):
    path = write_input(X, tmp_path / f"X{suffix}")
    data, _ = load_input(path)
    dense = data.toarray() if sp.issparse(data) else data
    np.testing.assert_allclose(dense, X, rtol=1e-15)


def test_load_input_csv_label_column(X, tmp_path):
    path = write_input(X, tmp_path / "X.csv")
    data, y = load_input(path, label_column=-1)
    assert data.shape == (40, 4)
    np.testing.assert_array_equal(y, X[:, -1])


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("X.txt", "1,2\n", "unknown format '.txt'"),
        ("X", "1,2\n", "no extension"),
        ("X.npy", "not a numpy file", "cannot read"),
        ("X.csv", "1,2\n3,oops\n", "cannot read"),
        ("X.npz", None, "name the data matrix 'X'"),
        ("missing.npy", None, "no such file"),
    ],
)
def test_load_input_errors_name_the_path_and_formats(name, content, match, tmp_path):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    elif name.endswith(".npz"):
        np.savez(path, a=np.ones((2, 2)), b=np.ones(2))
    with pytest.raises(InputFileError, match=match) as info:
        load_input(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, OSError)


# --------------------------------------------------------------------------- #
# gram and info
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".csv", ".svmlight"])
def test_gram_writes_the_store_of_an_input_file(suffix, X, tmp_path, capsys):
    inp = write_input(X, tmp_path / f"X{suffix}")
    out = tmp_path / "K.zarr"
    code, stdout, _ = run(["gram", "--input", inp, "--kernel", "rbf", "--gamma", "0.5", "--out", out,
                           "--chunk", "16", "--no-progress"], capsys)
    assert code == 0
    assert str(out) in stdout and "9/9 blocks complete, 6 computed in this run" in stdout and "on disk" in stdout
    K = GramMatrix.open(out).to_numpy()
    np.testing.assert_allclose(K, pairwise_kernels(X, metric="rbf", gamma=0.5), rtol=1e-12, atol=1e-12)


def test_gram_kernel_options_reach_the_kernel(X, tmp_path, capsys):
    inp = write_input(X, tmp_path / "X.npy")
    out = tmp_path / "K.zarr"
    code, _, _ = run(["gram", "--input", inp, "--kernel", "poly", "--degree", "2", "--coef0", "0.5",
                      "--gamma", "0.25", "--normalize", "--dtype", "float32", "--out", out, "--no-progress"],
                     capsys)
    assert code == 0
    gram = GramMatrix.open(out)
    assert gram.kernel.to_dict() == {
        "name": "normalized",
        "params": {"kernel": {"name": "poly", "params": {"gamma": 0.25, "coef0": 0.5, "degree": 2}}},
    }
    assert gram.dtype == np.float32
    assert np.array_equal(gram.diag(), np.ones(40, dtype=np.float32))


def test_gram_demo_and_info(tmp_path, capsys):
    out = tmp_path / "K.zarr"
    code, stdout, _ = run(["gram", "--demo", "--out", out, "--no-progress"], capsys)
    assert code == 0 and "demo" in stdout and "16/16 blocks complete" in stdout

    code, stdout, _ = run(["info", out], capsys)
    assert code == 0
    # gamma='scale' by default, as scikit-learn's SVC (and 'dkernel fit') computes it for the same data.
    from sklearn.svm import SVC as SklearnSVC

    from dkernel.cli._store import _demo_data

    X = _demo_data()
    with pytest.warns(Warning):  # one iteration: only the gamma it resolves is used
        reference = SklearnSVC(gamma="scale", max_iter=1).fit(X, np.arange(len(X)) % 2)._gamma
    assert f"rbf(gamma={reference:g})" in stdout
    assert "4000 x 4000" in stdout and "float64" in stdout
    assert "1000 x 1000 (4 x 4 blocks)" in stdout
    assert "16/16 (complete)" in stdout
    # 4000² float64 = 122.07 MiB of values, plus the small shard indexes.
    assert re.search(r"\b122\.\d\d MiB\b", stdout)

    code, stdout, _ = run(["info", out, "--json"], capsys)
    info = json.loads(stdout)
    assert info["blocks_done"] == info["blocks_total"] == 16
    assert info["bytes_on_disk"] > 4000 * 4000 * 8


@pytest.mark.slow
def test_readme_first_command_with_a_local_cluster(tmp_path, capsys):
    out = tmp_path / "K.zarr"
    code, stdout, err = run(["gram", "--demo", "--scheduler", "local", "--workers", "2", "--out", out,
                             "--no-progress"], capsys)
    assert code == 0, err
    assert "started a local cluster at tcp://127.0.0.1:" in err
    assert str(out) in stdout and "MiB on disk" in stdout
    assert GramMatrix.open(out).complete


def test_gram_rerun_resumes_and_mismatch_needs_overwrite(X, tmp_path, capsys):
    inp = write_input(X, tmp_path / "X.npy")
    out = tmp_path / "K.zarr"
    args = ["gram", "--input", inp, "--gamma", "0.5", "--out", out, "--chunk", "16", "--no-progress"]
    assert run(args, capsys)[0] == 0
    code, stdout, _ = run(args, capsys)
    assert code == 0 and "0 computed in this run" in stdout

    other = ["gram", "--input", inp, "--gamma", "0.2", "--out", out, "--chunk", "16", "--no-progress"]
    code, _, err = run(other, capsys)
    assert_one_line_error(code, err, "gamma=0.5", "gamma=0.2", "--overwrite")
    code, stdout, _ = run([*other, "--overwrite"], capsys)
    assert code == 0 and "6 computed in this run" in stdout


def test_info_reports_an_incomplete_store(X, tmp_path, capsys):
    out = tmp_path / "K.zarr"
    GramMatrix.compute(X, kernel="rbf", chunk=16, store=out, progress=False)
    import zarr

    done = zarr.open_array(store=str(out), path="done", mode="r+")
    done[0, 2] = 0
    code, stdout, _ = run(["info", out], capsys)
    assert code == 0 and "8/9 (INCOMPLETE" in stdout


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["gram", "--input", "{tmp}/X.txt", "--out", "{tmp}/K.zarr"], ["X.txt", ".npy", ".svmlight", ".csv"]),
        (["gram", "--input", "{tmp}/none.npy", "--out", "{tmp}/K.zarr"], ["none.npy", "no such file"]),
        (["gram", "--input", "{tmp}/nan.npy", "--out", "{tmp}/K.zarr"], ["1 NaN value", "row 2"]),
        (["gram", "--demo", "--gamma", "0", "--out", "{tmp}/K.zarr"], ["gamma must be"]),
        (["gram", "--demo", "--kernel", "poly", "--degree", "0", "--out", "{tmp}/K.zarr"], ["degree"]),
        (["gram", "--demo", "--degree", "2", "--out", "{tmp}/K.zarr"], ["unknown parameter", "degree"]),
        (["gram", "--demo", "--chunk", "0", "--out", "{tmp}/K.zarr"], ["chunk"]),
        (["info", "{tmp}/nowhere.zarr"], ["no Gram store"]),
    ],
    ids=["format", "missing", "nan", "gamma", "degree", "rbf-degree", "chunk", "info-missing"],
)
def test_errors_are_one_line_with_exit_code_2(argv, fragments, tmp_path, capsys):
    (tmp_path / "X.txt").write_text("1,2\n")
    bad = np.ones((5, 3))
    bad[2, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    code, _, err = run([a.format(tmp=tmp_path) for a in argv], capsys)
    assert_one_line_error(code, err, *fragments)
    assert not (tmp_path / "K.zarr").exists()


def test_help_texts_have_examples(capsys):
    parser = build_parser()
    for argv in (["--help"], ["gram", "--help"], ["info", "--help"]):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(argv)
        assert info.value.code == 0
    out = capsys.readouterr().out
    assert "dkernel gram --demo --cluster local --out /tmp/K.zarr" in out
    assert "--gamma" in out and "--overwrite" in out and "dkernel info /tmp/K.zarr" in out


def test_missing_command_or_source_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["gram", "--out", "K.zarr"])
    assert info.value.code == 2
    assert "--input" in capsys.readouterr().err


@pytest.mark.slow
def test_readme_main_command_runs_as_written(tmp_path):
    """The first command of README.md, after its install step, in a fresh folder."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].strip()
    command = first_block.split(" && ")[-1]
    assert command.startswith("DKERNEL_DATA=") and "dkernel run" in command
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = tmp_path / "results" / "quick" / "meila_centering_real" / "report.md"
    assert f"report: {report.relative_to(tmp_path)}" in done.stdout
    assert report.is_file() and (report.parent / "results.json").is_file()


@pytest.mark.slow
def test_ctrl_c_on_a_local_cluster_stops_cleanly_and_the_run_resumes(tmp_path):
    """Ctrl-C reaches the whole process group: one line from dkernel, no worker tracebacks, blocks kept."""
    import os
    import signal
    import subprocess
    import sys

    X = np.random.default_rng(0).normal(size=(6000, 16))
    np.save(tmp_path / "X.npy", X)
    command = [sys.executable, "-m", "dkernel.cli", "gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "200",
               "--scheduler", "local"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    while "blocks" not in seen:  # the cluster is up and blocks are being written
        line = process.stderr.readline()
        assert line, f"dkernel gram ended before any progress: {seen}"
        seen += line
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted; the blocks computed so far are kept with --out K.zarr; run the same command again to " \
           "resume" in err
    assert "Traceback" not in err, err
    done_before = GramMatrix.open(tmp_path / "K.zarr").n_blocks_done
    assert 0 < done_before < 900
    assert main(["gram", "--input", str(tmp_path / "X.npy"), "--out", str(tmp_path / "K.zarr"), "--chunk", "200",
                 "--no-progress"]) == 0
    gram = GramMatrix.open(tmp_path / "K.zarr")
    assert gram.complete
    np.testing.assert_allclose(gram.rows([0, 5999]), pairwise_kernels(X[[0, 5999]], X, metric="rbf",
                                                                      gamma=1 / (16 * X.var())), rtol=1e-10)
