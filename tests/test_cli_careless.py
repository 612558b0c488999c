"""The ``dkernel`` command line under a careless user: two outputs at one path, Ctrl-C at once, a closed pipe,
advice that would be refused, options ignored silently, and library words where flags are meant."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dkernel.cli import main
from dkernel.gram import GramMatrix
from _cli import error_of

_SCRIPT = Path(sys.executable).with_name("dkernel")
DKERNEL = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "dkernel.cli"]


@pytest.fixture
def files(tmp_path, monkeypatch):
    """X.npy (60 x 5), y.npy (+-1), Xnan.npy, ynan.npy, yr.npy (real outputs) and the Gram store K.zarr, in cwd."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] > 0, 1, -1)
    np.save("X.npy", X)
    np.save("y.npy", y)
    Xnan = X.copy()
    Xnan[3, 2] = np.nan
    np.save("Xnan.npy", Xnan)
    ynan = y.astype(np.float64)
    ynan[5] = np.nan
    np.save("ynan.npy", ynan)
    np.save("yr.npy", rng.normal(size=60))
    assert main(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "30", "--no-progress"]) == 0
    return tmp_path


def never(*args, **kwargs):
    raise AssertionError("reached: the command did work before refusing its options")


# --------------------------------------------------------------------------- #
# 1. Two output flags naming one path: refused before any work
# --------------------------------------------------------------------------- #

FIT = ["fit", "--data", "X.npy", "--labels", "y.npy", "--C", "10", "--quiet"]


@pytest.mark.parametrize(("outputs", "fragment"), [
    ({"--store": "same.zarr", "--model": "same.zarr"}, "--store and --model name the same path"),
    ({"--model": "m.zarr", "--store": "same.zarr", "--checkpoint": "./same.zarr"},
     "--store and --checkpoint name the same path"),
    ({"--model": "same.zarr", "--checkpoint": "same.zarr/"}, "--model and --checkpoint name the same path"),
    ({"--store": "grams", "--model": "grams/model.zarr"}, "--model grams/model.zarr lies inside --store grams"),
    ({"--model": "m.zarr", "--checkpoint": "m.zarr/ckpt"}, "--checkpoint m.zarr/ckpt lies inside --model m.zarr"),
], ids=["store-model", "store-checkpoint", "model-checkpoint", "model-in-store", "checkpoint-in-model"])
def test_fit_refuses_two_outputs_at_one_path_before_any_work(files, capsys, monkeypatch, outputs, fragment):
    import dkernel.cli._model

    monkeypatch.setattr(dkernel.cli._model, "_read_training_data", never)
    argv = [*FIT, *[word for flag, path in outputs.items() for word in (flag, path)]]
    err = error_of(argv, capsys)
    assert fragment in err
    assert not any(Path(path).exists() for path in outputs.values())


def test_outputs_at_one_path_through_a_link_are_refused(files, capsys, monkeypatch):
    import dkernel.cli._model

    os.mkdir("out")
    os.symlink("out", "link")
    monkeypatch.setattr(dkernel.cli._model, "_load_model", never)
    err = error_of(["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "out/p.npy", "--decision",
                    "link/p.npy"], capsys)
    assert "--out and --decision name the same path" in err
    assert os.listdir("out") == []


def test_adapt_refuses_factors_inside_its_out_store(files, capsys, monkeypatch):
    import dkernel.alignment

    monkeypatch.setattr(dkernel.alignment, "transductive_adaptation", never)
    err = error_of(["adapt", "K.zarr", "--labels", "y.npy", "--out", "G.zarr", "--factors", "G.zarr/f.npz"], capsys)
    assert "--factors G.zarr/f.npz lies inside --out G.zarr" in err
    assert not os.path.exists("G.zarr")


# --------------------------------------------------------------------------- #
# 2. Ctrl-C from the very start of main: one line, status 130
# --------------------------------------------------------------------------- #


def _main_not_interrupted(argv):
    try:
        return main(argv)
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main(): the user sees a traceback")


def test_ctrl_c_while_a_command_adds_its_options_is_one_line(files, capsys, monkeypatch):
    import dkernel.cli._store

    def interrupted(group):
        raise KeyboardInterrupt  # Ctrl-C while dkernel.kernels is imported for --kernel's choices

    monkeypatch.setattr(dkernel.cli._store, "_add_kernel_arguments", interrupted)
    code = _main_not_interrupted(["gram", "--input", "X.npy", "--kernel", "rbf", "--out", "K2.zarr"])
    err = capsys.readouterr().err
    assert code == 130
    assert err.startswith("dkernel: interrupted; ") and err.count("\n") == 1, err
    assert not os.path.exists("K2.zarr")


def test_ctrl_c_while_the_parser_is_built_is_one_line(capsys, monkeypatch):
    import dkernel.cli._views

    def interrupted(subparsers):
        raise KeyboardInterrupt

    monkeypatch.setattr(dkernel.cli._views, "add_commands", interrupted)
    code = _main_not_interrupted(["info", "K.zarr"])
    err = capsys.readouterr().err
    assert code == 130
    assert err.startswith("dkernel: interrupted; ") and err.count("\n") == 1, err


def test_sigint_during_argument_setup_of_a_process_is_one_line(files):
    """A real SIGINT, delivered while ``dkernel gram`` adds its kernel options (where the trial's Ctrl-C landed)."""
    script = textwrap.dedent("""
        import os, signal, sys
        import dkernel.cli._store as store
        from dkernel.cli import main

        add = store._add_kernel_arguments

        def add_interrupted(group):
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends, while the options are being added
            add(group)

        store._add_kernel_arguments = add_interrupted
        sys.exit(main(["gram", "--input", "X.npy", "--kernel", "rbf", "--out", "K2.zarr"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("dkernel: interrupted; ")


# --------------------------------------------------------------------------- #
# 3. A closed pipe on stdout (dkernel info K.zarr | head -1): a quiet exit
# --------------------------------------------------------------------------- #


def test_a_closed_pipe_ends_the_command_quietly(files):
    process = subprocess.Popen([*DKERNEL, "info", "K.zarr", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # the reader is gone before dkernel writes a byte (as `| head -0`, or head already done)
    err = process.stderr.read()
    process.wait(timeout=120)
    assert process.returncode in (0, 141), (process.returncode, err)
    assert err == "", err


class _ClosedPipe:
    """A stdout whose reader is gone."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


def test_a_closed_pipe_in_process_is_status_141_without_a_message(files, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(["info", "K.zarr"])
    err = capsys.readouterr().err
    assert code == 141 and err == "", (code, err)


# --------------------------------------------------------------------------- #
# 4. adapt --out at the input store: no advice that is then refused
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("out", ["K.zarr", "./K.zarr", "K2.zarr"])
def test_adapt_out_on_a_raw_store_never_advises_overwrite(files, capsys, monkeypatch, out):
    import dkernel.alignment

    if out == "K2.zarr":
        assert main(["gram", "--input", "X.npy", "--gamma", "0.5", "--out", "K2.zarr", "--no-progress"]) == 0
        capsys.readouterr()
    monkeypatch.setattr(dkernel.alignment, "transductive_adaptation", never)
    before = GramMatrix.open(out).to_numpy()
    first = error_of(["adapt", "K.zarr", "--labels", "y.npy", "--rank", "5", "--out", out], capsys)
    assert "pass --overwrite" not in first.lower(), first
    assert "choose another --out" in first.lower() or "choose another path for g" in first.lower(), first
    if out != "K2.zarr":
        assert "the store dkernel adapt reads" in first and "not replaced" in first, first
    second = error_of(["adapt", "K.zarr", "--labels", "y.npy", "--rank", "5", "--out", out, "--overwrite"], capsys)
    assert "pass --overwrite" not in second.lower(), second
    np.testing.assert_array_equal(GramMatrix.open(out).to_numpy(), before)


# --------------------------------------------------------------------------- #
# 5. Options that would be ignored silently: refused
# --------------------------------------------------------------------------- #


def test_adapt_refuses_rank_and_mass_together(files, capsys, monkeypatch):
    import dkernel.alignment

    monkeypatch.setattr(dkernel.alignment, "transductive_adaptation", never)
    err = error_of(["adapt", "K.zarr", "--labels", "y.npy", "--rank", "5", "--mass", "0.9", "--factors", "f.npz"],
                   capsys)
    assert "--rank and --mass are alternatives; give one" in err
    assert not os.path.exists("f.npz")


@pytest.mark.parametrize(("cluster", "fragment"), [
    ([], "--workers 2 sets the worker processes of --cluster local"),
    (["--cluster", "local:3"], "--cluster local:3 already sets"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--workers 2 sets the worker processes of --cluster local"),
], ids=["no-cluster", "local-N", "address"])
def test_gram_refuses_workers_it_would_not_start(files, capsys, monkeypatch, cluster, fragment):
    import dkernel.cli._store

    monkeypatch.setattr(dkernel.cli._store, "_demo_data", never)
    err = error_of(["gram", "--demo", "--workers", "2", *cluster, "--out", "D.zarr"], capsys)
    assert fragment in err
    assert not os.path.exists("D.zarr")


# --------------------------------------------------------------------------- #
# 6. Library words told in flags
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("argv", [["info", "missing.zarr"], ["verify", "missing.zarr"],
                                  ["align", "missing.zarr", "--labels", "y.npy"],
                                  ["center", "missing.zarr", "--scheme", "standard"]],
                         ids=["info", "verify", "align", "center"])
def test_a_missing_store_is_told_with_the_command_that_computes_it(files, capsys, argv):
    err = error_of(argv, capsys)
    assert "no Gram store at missing.zarr" in err and "dkernel gram" in err and "--out missing.zarr" in err, err
    assert "GramMatrix" not in err and "store=path" not in err, err


def test_an_incomplete_store_is_told_with_the_command_that_finishes_it(files, capsys):
    import zarr

    done = zarr.open_array(store="K.zarr", path="done", mode="r+")
    done[0, 1] = 0
    err = error_of(["align", "K.zarr", "--labels", "y.npy"], capsys)
    assert "dkernel gram" in err and "GramMatrix" not in err, err


def test_predict_names_the_data_flag_of_nan(files, capsys):
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m.zarr", "--quiet"]) == 0
    capsys.readouterr()
    err = error_of(["predict", "--model", "m.zarr", "--data", "Xnan.npy"], capsys)
    assert "--data Xnan.npy has 1 NaN value" in err and "X has" not in err, err


@pytest.mark.parametrize("learner", ["svc", "ridge"])
def test_fit_names_the_data_flag_of_nan(files, capsys, learner):
    err = error_of(["fit", "--data", "Xnan.npy", "--labels", "yr.npy" if learner == "ridge" else "y.npy",
                    "--learner", learner, "--model", "m.zarr", "--quiet"], capsys)
    assert "--data Xnan.npy has 1 NaN value" in err and "gamma" not in err, err
    assert not os.path.exists("m.zarr")


@pytest.mark.parametrize("argv", [FIT + ["--model", "m.zarr"], ["center", "K.zarr"],
                                  ["adapt", "K.zarr", "--factors", "f.npz"], ["align", "K.zarr"]],
                         ids=["fit", "center", "adapt", "align"])
def test_labels_with_nan_are_refused_naming_the_flag(files, capsys, argv):
    argv = [word if word != "y.npy" else "ynan.npy" for word in argv]
    if "--labels" not in argv:
        argv += ["--labels", "ynan.npy"]
    err = error_of(argv, capsys)
    assert "--labels ynan.npy" in err and "NaN" in err, err
    assert "Input y" not in err and "y has" not in err and "holds 3" not in err, err


def test_regression_target_on_class_labels_is_told_in_flags(files, capsys):
    err = error_of(["adapt", "K.zarr", "--labels", "y.npy", "--target", "regression", "--factors", "f.npz"], capsys)
    assert "--target regression needs real outputs" in err and "--labels y.npy holds only two values" in err, err
    assert "but y holds" not in err and "'regression'" not in err, err


def test_another_chunk_is_told_as_the_chunk_flag(files, capsys):
    err = error_of(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "20", "--no-progress"], capsys)
    assert "--chunk (store: 30, requested: 20)" in err, err
    assert "chunks" not in err, err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc, a folder that takes no new file")
def test_an_output_file_that_cannot_be_written_names_its_flag(files, capsys):
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m.zarr", "--quiet"]) == 0
    capsys.readouterr()
    err = error_of(["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "/proc/p.npy"], capsys)
    assert err.startswith("dkernel: error: --out /proc/p.npy: "), err
    assert "dkernel-tmp" not in err and "[Errno" not in err, err


# --------------------------------------------------------------------------- #
# 7. align and adapt check their labels alike
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("command", [["align", "K.zarr"], ["adapt", "K.zarr", "--factors", "f.npz"]],
                         ids=["align", "adapt"])
def test_align_and_adapt_refuse_class_labels_as_regression_outputs_alike(files, capsys, command):
    err = error_of([*command, "--labels", "y.npy", "--target", "regression"], capsys)
    assert "--target regression needs real outputs, but --labels y.npy holds only two values (-1 and 1)" in err, err


@pytest.mark.parametrize("command", [["align", "K.zarr"], ["adapt", "K.zarr", "--factors", "f.npz"]],
                         ids=["align", "adapt"])
def test_align_and_adapt_refuse_real_outputs_as_classes_alike(files, capsys, command):
    err = error_of([*command, "--labels", "yr.npy", "--target", "classification"], capsys)
    assert "--target classification needs labels of two classes; --labels yr.npy holds 60" in err, err


def test_align_and_adapt_accept_real_outputs_for_regression(files, capsys):
    assert main(["align", "K.zarr", "--labels", "yr.npy", "--target", "regression"]) == 0
    assert main(["adapt", "K.zarr", "--labels", "yr.npy", "--target", "regression", "--rank", "3",
                 "--factors", "f.npz"]) == 0
    assert "alignment (regression)" in capsys.readouterr().out
