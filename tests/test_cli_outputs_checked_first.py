"""Every output flag of the ``dkernel`` command line is refused before any work when nothing can be written there.

The place was judged by ``os.access``, which says yes to root everywhere and to anyone for a folder whose
filesystem refuses new files (``/proc``): ``dkernel predict --out /proc/p.npy`` predicted first and failed at the
write, ``dkernel adapt --out`` after the eigensolver. The folder that would take the output is now tried (an empty
hidden folder made and removed at once): each command below refuses such a path with its flag, having done no
work, and leaves nothing behind; writable paths, and ``--overwrite``, work as before.
"""

import os
from pathlib import Path

import numpy as np
import pytest

import dkernel.cli._adapt
import dkernel.cli._model
import dkernel.cli._store
import dkernel.cli._views
from dkernel._runtime import artifacts, outputs
from dkernel.cli import main
from dkernel.exceptions import ArtifactPathError
from _cli import error_of

#: A folder that refuses new entries whoever asks (root included), though ``os.access`` may say it can be written.
PROC = "/proc"
needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")


@pytest.fixture
def files(cli_files):
    """X.npy, y.npy, K.zarr and m.zarr in cwd (``cli_files`` of conftest.py)."""
    return cli_files


def never(*args, **kwargs):
    raise AssertionError("reached: the command did work before refusing its output")


#: command -> (argv before the output, the output flag, the suffix of its path, the module and function of the
#: first work after the outputs are checked).
COMMANDS = {
    "predict-out": (["predict", "--model", "m.zarr", "--data", "X.npy"], "--out", ".npy",
                    (dkernel.cli._model, "_load_model")),
    "predict-decision": (["predict", "--model", "m.zarr", "--data", "X.npy"], "--decision", ".npy",
                         (dkernel.cli._model, "_load_model")),
    "fit-model": (["fit", "--data", "X.npy", "--labels", "y.npy", "--quiet"], "--model", ".zarr",
                  (dkernel.cli._model, "_read_training_data")),
    "gram-out": (["gram", "--input", "X.npy", "--no-progress"], "--out", ".zarr", (dkernel.cli._store, "_read_data")),
    "center-out": (["center", "K.zarr", "--scheme", "standard"], "--out", ".zarr",
                   (dkernel.cli._views, "_read_labels")),
    "adapt-out": (["adapt", "K.zarr", "--labels", "y.npy"], "--out", ".zarr", (dkernel.cli._adapt, "_read_labels")),
    "adapt-factors": (["adapt", "K.zarr", "--labels", "y.npy"], "--factors", ".npz",
                      (dkernel.cli._adapt, "_read_labels")),
}

#: Unwritable places: a path in /proc, one below a folder that would have to be made in /proc, one below a file.
PLACES = {
    "proc": (f"{PROC}/dkernel-out", True),
    "proc-subfolder": (f"{PROC}/dkernel-sub/out", True),
    "below-a-file": ("X.npy/out", False),
}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_unwritable_output_is_refused_before_any_work(files, capsys, monkeypatch, command, place):
    argv, flag, suffix, (module, work) = COMMANDS[command]
    stem, in_proc = PLACES[place]
    if in_proc and not os.path.isdir("/proc/self"):
        pytest.skip("needs Linux's /proc")
    path = stem + suffix
    monkeypatch.setattr(module, work, never)
    before = sorted(os.listdir(files))
    err = error_of([*argv, flag, path], capsys)
    assert f"{flag} {path}" in err
    assert "choose another path" in err
    assert sorted(os.listdir(files)) == before  # nothing written, nothing left behind
    assert not os.path.lexists(path)


def test_predict_out_at_an_existing_folder_is_refused_first(files, capsys, monkeypatch):
    monkeypatch.setattr(dkernel.cli._model, "_load_model", never)
    os.mkdir("preds")
    err = error_of(["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "preds"], capsys)
    assert "--out preds is a folder" in err
    assert os.listdir("preds") == []


@needs_proc
def test_run_out_unwritable_is_refused_before_any_task(files, capsys, monkeypatch):
    pytest.importorskip("pipelines._runner")
    import pipelines._runner

    monkeypatch.setattr(pipelines._runner, "TaskRecords", never)
    err = error_of(["run", "meila_shift_synthetic", "--quick", "--out", f"{PROC}/dkernel-results"], capsys,
                   prefix="dkernel run meila_shift_synthetic: error: ")
    assert f"--out {PROC}/dkernel-results" in err


@needs_proc
def test_the_runtime_checks_try_the_folder():
    """The checks every writer shares refuse /proc, whatever ``os.access`` says (root: yes)."""
    with pytest.raises(ArtifactPathError, match=r"--out /proc/p\.npy: /proc is not a folder"):
        outputs.check_output(f"{PROC}/p.npy", "labels", what="the predicted labels", suffix=".npy", name="--out",
                             writer="dkernel predict")
    with pytest.raises(ArtifactPathError, match=r"/proc is not writable"):
        artifacts.check_target(f"{PROC}/m.zarr", "model")
    with pytest.raises(ArtifactPathError, match=r"/proc is not writable"):
        artifacts.check_target(f"{PROC}/sub/m.zarr", "model")


def test_writable_outputs_work_as_before_and_leave_no_trace(files, capsys):
    """A new folder below the current one is made; an earlier output is replaced only with --overwrite."""
    predict = ["predict", "--model", "m.zarr", "--data", "X.npy"]
    assert main([*predict, "--out", "new/deeper/p.npy", "--decision", "d.npy"]) == 0
    capsys.readouterr()
    assert os.listdir("new/deeper") == ["p.npy"]
    assert not [name for name in os.listdir(files) if name.startswith(".")]  # no probe, no temporary file
    first = np.load("new/deeper/p.npy")
    err = error_of([*predict, "--out", "new/deeper/p.npy"], capsys)
    assert "--overwrite" in err
    assert main([*predict, "--out", "new/deeper/p.npy", "--overwrite"]) == 0
    np.testing.assert_array_equal(np.load("new/deeper/p.npy"), first)
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "models/m2.zarr", "--quiet"]) == 0
    assert main(["gram", "--input", "X.npy", "--out", "grams/K2.zarr", "--no-progress"]) == 0
    capsys.readouterr()
    assert sorted(os.listdir("models")) == ["m2.zarr"] and sorted(os.listdir("grams")) == ["K2.zarr"]
    assert not [name for name in os.listdir(files) if name.startswith(".")]


def test_a_file_of_the_user_is_never_replaced(files, capsys, monkeypatch):
    monkeypatch.setattr(dkernel.cli._model, "_load_model", never)
    Path("mine.npy").write_bytes(b"the user's")
    err = error_of(["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "mine.npy", "--overwrite"], capsys)
    assert "--out mine.npy" in err
    assert Path("mine.npy").read_bytes() == b"the user's"

