"""The defects a new user found in the ``dkernel`` command line: URLs without credentials or endpoint, flags that
did nothing, CSV headers, a prediction thrown away, ``run`` without a name, Ctrl-C before a block was kept, and
numpy's pickle text for a file that is not a .npy array."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dkernel.cli import main
from _cli import error_of

_SCRIPT = Path(sys.executable).with_name("dkernel")
DKERNEL = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "dkernel.cli"]


@pytest.fixture
def files(cli_files):
    """X.npy, y.npy, K.zarr and m.zarr in cwd (``cli_files`` of conftest.py)."""
    return cli_files


def never(*args, **kwargs):
    raise AssertionError("reached: the command did work before refusing its options")


# --------------------------------------------------------------------------- #
# 1. URLs: no credentials, an endpoint that does not answer, a filesystem that cannot be reached
# --------------------------------------------------------------------------- #

NO_AWS = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
          "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent",
          "AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "standard", "AWS_EC2_METADATA_DISABLED": "true"}
UNREACHABLE = ["--storage-option", "endpoint_url=http://127.0.0.1:9", "--storage-option", "key=a",
               "--storage-option", "secret=b"]


def run_cli(argv, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(NO_AWS)
    proc = subprocess.run([*DKERNEL, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("argv, flag", [
    (["gram", "--input", "X.npy", "--out", "s3://bucket/K.zarr", "--no-progress"], "--out s3://bucket/K.zarr"),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "s3://bucket/m", "--quiet"], "--model s3://bucket/m"),
    (["predict", "--model", "s3://bucket/m", "--data", "X.npy", "--out", "p.npy"], "--model s3://bucket/m"),
])
def test_a_url_without_credentials_is_one_line_naming_the_flag(files, argv, flag):
    code, err = run_cli(argv, files)
    assert code == 2, err
    assert err.startswith(f"dkernel: error: {flag}: ") and err.count("\n") == 1, err
    assert "credentials" in err and "--storage-option key=" in err and "AWS_ACCESS_KEY_ID" in err, err
    assert "unexpected" not in err and "defect" not in err


@pytest.mark.parametrize("argv, flag", [
    (["info", "s3://bucket/K.zarr"], "PATH s3://bucket/K.zarr"),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m2.zarr", "--store", "s3://bucket/g", "--quiet"],
     "--store s3://bucket/g"),
])
def test_an_unreachable_endpoint_is_one_line_naming_the_flag(files, argv, flag):
    code, err = run_cli([*argv, *UNREACHABLE], files)
    assert code == 2, err
    assert err.startswith(f"dkernel: error: {flag}: ") and err.count("\n") == 1, err
    assert "endpoint_url=" in err and "unexpected" not in err, err
    assert not (files / "m2.zarr").exists()  # refused before any work


def test_an_http_url_names_the_flag(files, capsys):
    err = error_of(["gram", "--input", "X.npy", "--out", "http://127.0.0.1:9/K.zarr", "--no-progress"], capsys)
    assert err.startswith("dkernel: error: --out http://127.0.0.1:9/K.zarr: "), err


# --------------------------------------------------------------------------- #
# 2. Flags that would do nothing: refused with the flag they need
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("argv, flags", [
    (["align", "K.zarr", "--labels", "y.npy", "--repeats", "5"], ("--repeats", "--sample")),
    (["align", "K.zarr", "--labels", "y.npy", "--seed", "5"], ("--seed", "--sample")),
    (["align", "K.zarr", "--labels", "y.npy", "--uniform"], ("--uniform", "--sample")),
    (["center", "K.zarr", "--labels", "y.npy", "--seed", "3"], ("--seed", "--sample")),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m3.zarr", "--checkpoint-seconds", "5"],
     ("--checkpoint-seconds", "--checkpoint")),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m3.zarr", "--checkpoint-iterations", "5"],
     ("--checkpoint-iterations", "--checkpoint")),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m3.zarr", "--resume"], ("--resume", "--checkpoint")),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m3.zarr", "--seed", "3"],
     ("--seed", "--centering-sample")),
    (["adapt", "K.zarr", "--labels", "y.npy", "--seed", "5", "--method", "exact", "--factors", "F.npz"], ("--seed", "--method exact")),
    (["gram", "--input", "X.npy", "--out", "K2.zarr", "--storage-option", "key=val"], ("--storage-option", "--out")),
    (["info", "K.zarr", "--storage-option", "key=val"], ("--storage-option", "PATH")),
    (["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m3.zarr", "--storage-option", "key=v"],
     ("--storage-option", "--model")),
])
def test_a_flag_that_would_do_nothing_is_refused_naming_both(files, capsys, monkeypatch, argv, flags):
    import dkernel.alignment._measures as measures
    from dkernel.gram import GramMatrix

    monkeypatch.setattr(GramMatrix, "open", never)
    monkeypatch.setattr(GramMatrix, "compute", never)
    monkeypatch.setattr(measures, "target_alignment", never)
    err = error_of(argv, capsys)
    assert all(flag in err for flag in flags), err
    assert not (files / "m3.zarr").exists() and not (files / "K2.zarr").exists()


def test_the_flags_with_what_they_need_still_run(files, capsys):
    assert main(["align", "K.zarr", "--labels", "y.npy", "--sample", "20", "--repeats", "3", "--seed", "1"]) == 0
    assert main(["center", "K.zarr", "--labels", "y.npy", "--sample", "10", "--seed", "3"]) == 0
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--method", "randomized", "--rank", "3", "--seed", "5",
                 "--factors", "F1.npz"]) == 0
    assert main(["adapt", "K.zarr", "--labels", "y.npy", "--method", "exact", "--rank", "3",
                 "--factors", "F2.npz"]) == 0


def test_another_codec_on_an_existing_store_is_refused_naming_both(files, capsys):
    err = error_of(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "20", "--codec", "lz4",
                    "--no-progress"], capsys)
    assert "--codec" in err and "lz4" in err and "none" in err, err
    assert main(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "20", "--no-progress"]) == 0


# --------------------------------------------------------------------------- #
# 3. CSV headers, the same for --data and --labels
# --------------------------------------------------------------------------- #

def test_a_numeric_labels_file_with_a_header_skips_it_as_data_does(files, capsys):
    Path("y.csv").write_text("label\n" + "\n".join(str(v) for v in np.load("y.npy")) + "\n")
    Path("X.csv").write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in np.load("X.npy")) + "\n")
    assert main(["fit", "--data", "X.csv", "--labels", "y.csv", "--model", "mc.zarr", "--quiet"]) == 0
    assert "trained on 40 samples" in capsys.readouterr().out


def test_a_text_labels_file_with_a_header_is_told_it_may_be_one(files, capsys):
    names = np.where(np.load("y.npy") > 0, "cat", "dog")
    Path("ystr.csv").write_text("label\n" + "\n".join(names) + "\n")
    err = error_of(["fit", "--data", "X.npy", "--labels", "ystr.csv", "--model", "mc.zarr", "--quiet"], capsys)
    assert "41 labels" in err and "its first line 'label' may be a header: remove it" in err, err
    err = error_of(["align", "K.zarr", "--labels", "ystr.csv"], capsys)
    assert "its first line 'label' may be a header: remove it" in err, err


def test_the_help_says_how_a_header_is_read(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    assert "header" in " ".join(capsys.readouterr().out.split())


# --------------------------------------------------------------------------- #
# 4. predict with nothing to write
# --------------------------------------------------------------------------- #

def test_predict_with_nothing_to_write_is_refused_before_predicting(files, capsys, monkeypatch):
    import dkernel

    load_model = dkernel.load_model

    def loaded(*args, **kwargs):
        model = load_model(*args, **kwargs)
        model.predict = model.decision_function = never
        return model

    monkeypatch.setattr(dkernel, "load_model", loaded)
    err = error_of(["predict", "--model", "m.zarr", "--data", "X.npy"], capsys)
    assert "nothing to write: give --out (labels), --decision (decision values) or --labels" in err, err


# --------------------------------------------------------------------------- #
# 5. run without a name, options before the name
# --------------------------------------------------------------------------- #

def test_run_without_a_name_lists_and_says_so_on_stderr(capsys):
    code = main(["run"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("dkernel: error: ") and err.count("\n") == 1 and "NAME" in err, err


def test_run_with_options_before_the_name_says_where_they_go(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--quick", "meila_imbalanced"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "options of a pipeline go after its name: dkernel run meila_imbalanced --quick" in err, err


# --------------------------------------------------------------------------- #
# 6. Ctrl-C before any block was kept
# --------------------------------------------------------------------------- #

def test_gram_interrupted_before_the_store_exists_says_nothing_was_kept(files, capsys, monkeypatch):
    from dkernel.gram import GramMatrix

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(GramMatrix, "compute", interrupted)
    assert main(["gram", "--input", "X.npy", "--out", "K5.zarr", "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "kept" not in err.replace("nothing was kept", "") and "K5.zarr" in err and "start" in err, err
    assert main(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "20", "--no-progress"]) == 130
    assert "kept with --out K.zarr" in capsys.readouterr().err


# --------------------------------------------------------------------------- #
# 7. A file that is not a .npy array
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("argv", [
    ["adapt", "K.zarr", "--labels", "y.npy", "--labelled", "notes.npy", "--factors", "F.npz"],
    ["fit", "--data", "notes.npy", "--labels", "y.npy", "--model", "mc.zarr"],
    ["align", "K.zarr", "--labels", "notes.npy"],
])
def test_a_pickle_is_not_a_npy_array(files, capsys, argv):
    np.save("notes.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    flag = argv[argv.index("notes.npy") - 1]
    err = error_of(argv, capsys)
    assert f"{flag} notes.npy is not a .npy array" in err and "pickle" not in err, err


def test_a_text_file_is_not_a_npy_array(files, capsys):
    Path("notes.txt").write_text("some notes\n")
    err = error_of(["adapt", "K.zarr", "--labels", "y.npy", "--labelled", "notes.txt", "--factors", "F.npz"],
                   capsys)
    assert "--labelled notes.txt is not a .npy array." in err and "pickle" not in err and "objects" not in err, err
