"""Every ``dkernel`` command as a new user meets it, in real processes of the command.

Output files: a file of the user at an output path is left byte for byte and the error names the flag; the
path printed is the path written. Interruptions: after SIGINT (what a terminal's Ctrl-C sends to the process
group) and SIGKILL of each long command, the advice printed is true and following it gives the result of an
uninterrupted run. Errors: one line ``dkernel: error: ...`` in flags, exit status 2, no traceback and no
message of a third-party library. Fixed costs: ``dkernel --help`` imports no heavy module.
"""

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dkernel._runtime import outputs
from dkernel._runtime.progress import TextProgress
from dkernel.cli import main
from dkernel.gram import GramMatrix

_SCRIPT = Path(sys.executable).with_name("dkernel")
DKERNEL = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "dkernel.cli"]


def dkernel(cwd, *args, timeout=180):
    """Run the ``dkernel`` command in ``cwd``; the finished process."""
    return subprocess.run([*DKERNEL, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def assert_one_line_error(done, *fragments, absent=()):
    """Exit status 2 and one line ``dkernel: error: ...`` with ``fragments``, none of ``absent``, no traceback."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dkernel: error: "), done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr
    for fragment in ("Traceback", "Warning", *absent):
        assert fragment not in done.stderr, done.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with data, labels, a Gram store and a model of each kind (written in this process)."""
    folder = tmp_path_factory.mktemp("new_user")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=90) > 0, 1, -1)
    np.save(folder / "X.npy", X)
    np.save(folder / "y.npy", y)
    np.save(folder / "outputs.npy", X[:, 1] ** 2)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for argv in (["gram", "--input", "X.npy", "--gamma", "0.3", "--out", "K.zarr", "--chunk", "30",
                      "--no-progress"],
                     ["fit", "--data", "X.npy", "--labels", "y.npy", "--gamma", "0.3", "--model", "svc.zarr",
                      "--quiet"],
                     ["fit", "--data", "X.npy", "--labels", "y.npy", "--gamma", "0.3", "--learner", "parzen",
                      "--model", "parzen.zarr"],
                     ["fit", "--data", "X.npy", "--labels", "outputs.npy", "--gamma", "0.3", "--learner", "ridge",
                      "--model", "ridge.zarr"]):
            assert main(argv) == 0, argv
    finally:
        os.chdir(cwd)
    return folder


# --------------------------------------------------------------------------- #
# Fixed costs
# --------------------------------------------------------------------------- #

HEAVY = ("numpy", "scipy", "sklearn", "dask", "distributed", "zarr", "numba", "pandas")


def test_help_imports_no_heavy_module_and_is_fast():
    probe = ("import sys\nfrom dkernel.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             f"print('imported:', *(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "<command>" in done.stdout
    assert done.stdout.splitlines()[-1] == "imported:", done.stdout.splitlines()[-1]
    best = float("inf")
    for _ in range(5):  # the best of five: the test machine may be busy
        start = time.perf_counter()
        assert subprocess.run([*DKERNEL, "--help"], capture_output=True, timeout=60, check=False).returncode == 0
        best = min(best, time.perf_counter() - start)
    assert best < 0.3, f"dkernel --help took {best:.2f} s"


def test_version_names_the_package_version():
    import dkernel

    done = subprocess.run([*DKERNEL, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == f"dkernel {dkernel.__version__}"


def test_run_help_names_the_folder_a_quick_run_writes():
    done = subprocess.run([*DKERNEL, "run", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "results/quick/NAME/ with --quick" in text and "--out DIR writes DIR/NAME/" in text


def test_the_last_progress_line_is_printed_once_off_a_terminal():
    stream = io.StringIO()
    bar = TextProgress(4, "blocks", stream=stream, interval=100)
    for done in (1, 4, 4):  # a caller may report the end twice (a callback, then the caller itself)
        bar.update(done)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(" after ")[0] for line in lines] == ["1/4 blocks (25%)", "4/4 blocks (100%)"]


# --------------------------------------------------------------------------- #
# Output files
# --------------------------------------------------------------------------- #


def _fresh(work, tmp_path):
    """A folder of its own holding the shared files (links, never written to)."""
    for name in ("X.npy", "y.npy", "outputs.npy"):
        (tmp_path / name).symlink_to(work / name)
    for name in ("svc.zarr", "parzen.zarr", "ridge.zarr", "K.zarr"):
        (tmp_path / name).symlink_to(work / name, target_is_directory=True)
    return tmp_path


@pytest.mark.parametrize("flag", ["--out", "--decision"])
def test_predict_never_replaces_a_user_file(work, tmp_path, flag):
    cwd = _fresh(work, tmp_path)
    np.save(cwd / "mine.npy", np.arange(5))
    before = (cwd / "mine.npy").read_bytes()
    for extra in ([], ["--overwrite"]):
        done = dkernel(cwd, "predict", "--model", "svc.zarr", "--data", "X.npy", flag, "mine.npy", *extra)
        assert_one_line_error(done, f"{flag} mine.npy exists and was not written by dkernel predict; choose "
                                    f"another path or remove it")
        assert (cwd / "mine.npy").read_bytes() == before
    assert sorted(p.name for p in cwd.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_adapt_never_replaces_a_user_npz(work, tmp_path):
    cwd = _fresh(work, tmp_path)
    np.savez(cwd / "mine.npz", a=np.arange(3))
    before = (cwd / "mine.npz").read_bytes()
    for extra in ([], ["--overwrite"]):
        done = dkernel(cwd, "adapt", "K.zarr", "--labels", "y.npy", "--rank", "3", "--factors", "mine.npz", *extra)
        assert_one_line_error(done, "--factors mine.npz exists and was not written by dkernel adapt")
        assert (cwd / "mine.npz").read_bytes() == before


def test_outputs_are_replaced_only_when_ours_of_the_same_kind_and_with_overwrite(work, tmp_path, monkeypatch,
                                                                                  capsys):
    monkeypatch.chdir(_fresh(work, tmp_path))

    def error(argv):
        assert main(argv) == 2
        return capsys.readouterr().err

    predict = ["predict", "--model", "svc.zarr", "--data", "X.npy"]
    assert main([*predict, "--out", "pred.npy", "--decision", "f.npy"]) == 0
    first = Path("pred.npy").read_bytes()
    assert ("--out pred.npy holds the predicted labels written by an earlier dkernel predict; pass --overwrite "
            "to replace it") in error([*predict, "--out", "pred.npy"])
    assert "--out f.npy holds another output of dkernel predict, not the predicted labels" in error(
        [*predict, "--out", "f.npy", "--overwrite"])
    assert main([*predict, "--out", "pred.npy", "--overwrite"]) == 0
    assert Path("pred.npy").read_bytes() == first
    adapt = ["adapt", "K.zarr", "--labels", "y.npy", "--rank", "3", "--factors", "G.npz"]
    assert main(adapt) == 0
    assert ("--factors G.npz holds the factors of an adapted Gram written by an earlier dkernel adapt; pass "
            "--overwrite") in error(adapt)
    assert main([*adapt, "--overwrite"]) == 0
    with np.load("G.npz") as factors:
        assert {"vectors", "weights", "labelled"} <= set(factors.files) and factors["vectors"].shape == (90, 3)
    assert not [p for p in Path().iterdir() if p.name.startswith(".")]  # no temporary file left


def test_predict_writes_the_path_it_prints(work, tmp_path):
    from dkernel import load_model

    cwd = _fresh(work, tmp_path)
    done = dkernel(cwd, "predict", "--model", "svc.zarr", "--data", "X.npy", "--out", "pred.npy")
    assert done.returncode == 0 and done.stdout.rstrip().endswith("labels written to pred.npy"), done.stdout
    model = load_model(work / "svc.zarr")
    np.testing.assert_array_equal(np.load(cwd / "pred.npy"), model.predict(np.load(work / "X.npy")))
    assert not [p for p in cwd.iterdir() if p.name not in ("pred.npy", *(q.name for q in work.iterdir()))]


@pytest.mark.parametrize(("out", "fragments"), [
    ("notes.txt", [("--out notes.txt: dkernel predict writes the predicted labels as a NumPy .npy file; name a "
                    "path ending in .npy (e.g. notes.npy)")]),
    ("userdir", ["--out userdir is a folder", "ending in .npy"]),
])
def test_predict_refuses_a_path_it_cannot_write_as_named(work, tmp_path, out, fragments):
    cwd = _fresh(work, tmp_path)
    (cwd / "userdir").mkdir()
    (cwd / "userdir" / "keep.txt").write_text("mine")
    names = sorted(p.name for p in cwd.iterdir())
    done = dkernel(cwd, "predict", "--model", "svc.zarr", "--data", "X.npy", "--out", out)
    assert_one_line_error(done, *fragments)
    assert sorted(p.name for p in cwd.iterdir()) == names  # no notes.txt.npy, no userdir.npy
    assert (cwd / "userdir" / "keep.txt").read_text() == "mine"


#: Each command's output flags that write a dkernel artifact (a folder), with the rest of its command line.
ARTIFACT_OUTPUTS = {
    "gram --out": ["gram", "--input", "X.npy", "--no-progress", "--out"],
    "center --out": ["center", "K.zarr", "--scheme", "standard", "--out"],
    "adapt --out": ["adapt", "K.zarr", "--labels", "y.npy", "--out"],
    "fit --model": ["fit", "--data", "X.npy", "--labels", "y.npy", "--gamma", "0.3", "--quiet", "--model"],
    "fit --checkpoint": ["fit", "--data", "X.npy", "--labels", "y.npy", "--quiet", "--model", "m.zarr",
                         "--checkpoint"],
    "fit --store": ["fit", "--data", "X.npy", "--labels", "y.npy", "--quiet", "--model", "m.zarr", "--store"],
    "run --out": ["run", "meila_imbalanced", "--quick", "--repeats", "1", "--cluster", "threads", "--out"],
}


def _snapshot(path):
    if path.is_file():
        return path.read_bytes()
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob("*"))}


#: ``fit --store DIR`` and ``run --out DIR`` name a folder that holds what they write: a folder of the user is used.
@pytest.mark.parametrize(("case", "what"), [(case, what) for case in ARTIFACT_OUTPUTS for what in ("file", "folder")
                                            if what == "file" or case not in ("fit --store", "run --out")])
def test_an_artifact_output_refused_names_its_flag_and_leaves_the_user_path_byte_for_byte(work, tmp_path, case,
                                                                                          what, monkeypatch, capsys):
    flag = case.split()[1]
    cwd = _fresh(work, tmp_path)
    mine = cwd / "mine.zarr"
    if what == "file":
        mine.write_text("my own notes")
    else:
        (mine / "sub").mkdir(parents=True)
        (mine / "NOTES.txt").write_text("mine")
        (mine / "sub" / "r.csv").write_text("a,b\n1,2\n")
    before = _snapshot(mine)
    monkeypatch.chdir(cwd)
    for extra in ([], ["--overwrite"]):
        status = main([*ARTIFACT_OUTPUTS[case], "mine.zarr", *extra])
        out, err = capsys.readouterr()
        assert status == 2 and out == "" and len(err.splitlines()) == 1, (status, out, err)
        assert re.match(rf"dkernel( run meila_imbalanced)?: error: {flag} mine\.zarr: ", err), err
        assert "Traceback" not in err and "Warning" not in err, err
        assert not re.search(r"(?<!-)\boverwrite\b", err), err  # the flag, never the library's parameter
        assert _snapshot(mine) == before
    assert not [p for p in cwd.iterdir() if ".dkernel-" in p.name or p.name == "m.zarr"]


@pytest.mark.parametrize("array", [
    np.arange(7, dtype=np.int64), np.linspace(-1, 1, 5), np.array(["cat", "dog", "bird"]),
    np.array([True, False]), np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.zeros(0), np.float32(2.5),
], ids=["int64", "float64", "text", "bool", "fortran", "empty", "scalar"])
def test_a_marked_npy_loads_as_exactly_the_array_written(tmp_path, array):
    path = tmp_path / "y.npy"
    outputs.save_npy(path, array, "labels", what="the labels", name="path", writer="a test")
    for loaded in (np.load(path), np.load(path, mmap_mode="r"), np.load(io.BytesIO(path.read_bytes()))):
        assert loaded.dtype == np.asarray(array).dtype and loaded.shape == np.shape(array)
        np.testing.assert_array_equal(loaded, array)
    assert outputs.output_kind(path) == ("labels", "a test")


def test_a_file_of_numpy_is_never_taken_for_an_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("a.npy", np.arange(4))
    np.savez("b.npz", x=np.arange(4))
    marked = Path("c.npy")
    outputs.save_npy(marked, np.arange(4), "labels", what="the labels", name="path", writer="a test")
    written = marked.read_bytes()
    trailer = written[written.rindex(b"\x00dkernel-output\x00"):]
    np.save("d.npy", np.frombuffer(trailer, dtype=np.uint8))  # the mark's bytes as data: not after the data
    Path("e.npy").write_bytes(Path("a.npy").read_bytes() + b"\x00other\x00{}")  # other bytes after the data
    for name in ("a.npy", "b.npz", "d.npy", "e.npy"):
        assert outputs.output_kind(name) is None, name
    with pytest.raises(outputs.ArtifactPathError, match="path a.npy exists and was not written by a test"):
        outputs.check_output("a.npy", "labels", what="the labels", suffix=".npy", name="path", writer="a test",
                             overwrite=True)


# --------------------------------------------------------------------------- #
# Interruptions: the advice printed is true
# --------------------------------------------------------------------------- #


def interrupt(cwd, args, sig, ready, timeout=120):
    """Start ``dkernel args``; when ``ready(stderr so far)`` holds, send ``sig`` to its process group.

    Returns ``(exit status, stderr)``. Fails when the command ends before it was interrupted.
    """
    # As from a terminal, where Ctrl-C is not ignored (a test run started in the background of a shell inherits
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler in the command).
    process = subprocess.Popen([*DKERNEL, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = []
    reader = threading.Thread(target=lambda: err.extend(iter(process.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not ready("".join(err)):
        assert process.poll() is None, f"ended before it was interrupted: {''.join(err)}"
        assert time.monotonic() < deadline, "".join(err)
        time.sleep(0.01)
    os.killpg(process.pid, sig)
    process.wait(timeout=timeout)
    reader.join(timeout=10)
    process.stdout.close()
    return process.returncode, "".join(err)


def assert_interrupted(code, err, sig, *advice):
    """Ctrl-C: status 130, one line of advice, no traceback; SIGKILL: no word at all (the process is gone)."""
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
        return
    assert code == 130, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert len(lines) == 1, err
    for fragment in advice:
        assert fragment in lines[0], lines[0]


SIGNALS = pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Data whose Gram takes a few seconds to write blockwise, its labels, and the stores of uninterrupted runs."""
    folder = tmp_path_factory.mktemp("big")
    X = np.random.default_rng(1).normal(size=(1500, 16))
    np.save(folder / "X.npy", X)
    np.save(folder / "y.npy", np.where(X[:, 0] > 0, 1, -1))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "100", "--no-progress"]) == 0
        assert main(["center", "K.zarr", "--labels", "y.npy", "--out", "Kc.zarr"]) == 0
    return folder


@SIGNALS
def test_an_interrupted_gram_resumes_with_the_same_command(big, tmp_path, sig):
    (tmp_path / "X.npy").symlink_to(big / "X.npy")
    args = ["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "100"]
    code, err = interrupt(tmp_path, args, sig, lambda err: " blocks " in err)
    assert_interrupted(code, err, sig, "kept with --out K.zarr; run the same command again to resume")
    done = dkernel(tmp_path, *args, "--no-progress")
    assert done.returncode == 0, done.stderr
    computed = int(re.search(r"(\d+) computed in this run", done.stdout).group(1))
    assert 0 < computed < 120, done.stdout  # only the blocks the interrupted run had not written
    resumed, reference = GramMatrix.open(tmp_path / "K.zarr"), GramMatrix.open(big / "K.zarr")
    assert resumed.complete
    np.testing.assert_allclose(resumed.to_numpy(), reference.to_numpy(), rtol=1e-12, atol=0)


@SIGNALS
def test_an_interrupted_center_gives_the_centered_store_with_the_same_command(big, tmp_path, sig):
    (tmp_path / "y.npy").symlink_to(big / "y.npy")
    args = ["center", big / "K.zarr", "--labels", "y.npy", "--out", "Kc.zarr"]

    def writing(err):
        try:
            return any(len(list(p.rglob("*"))) > 40 for p in tmp_path.glob(".Kc.zarr.dkernel-tmp-*"))
        except FileNotFoundError:  # the folder was renamed into place while it was listed: the write ended
            return False

    code, err = interrupt(tmp_path, args, sig, writing)
    assert_interrupted(code, err, sig, "nothing was saved", "run the same command again")
    assert not (tmp_path / "Kc.zarr").exists()
    done = dkernel(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(GramMatrix.open(tmp_path / "Kc.zarr").to_numpy(),
                               GramMatrix.open(big / "Kc.zarr").to_numpy(), rtol=1e-12, atol=1e-12)


#: Two fits of the same data: with a checkpoint every 300 iterations, and without one, long enough to interrupt.
FIT = ["fit", "--data", "Xf.npy", "--labels", "yf.npy", "--C", "10", "--model", "m.zarr"]
FIT_CHECKPOINT = [*FIT, "--working-set-size", "4", "--checkpoint", "fit.ckpt", "--checkpoint-iterations", "300"]
FIT_PLAIN = [*FIT, "--working-set-size", "2", "--tol", "1e-6"]


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    """The training data and the models of uninterrupted fits (without checkpoint)."""
    from sklearn.datasets import make_classification

    folder = tmp_path_factory.mktemp("fits")
    X, y = make_classification(n_samples=800, n_features=20, flip_y=0.1, random_state=0)
    np.save(folder / "Xf.npy", X)
    np.save(folder / "yf.npy", y)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        for name, argv in (("checkpoint", FIT_CHECKPOINT[:-4]), ("plain", FIT_PLAIN)):
            assert main([*argv, "--quiet", "--model", f"{name}.zarr"]) == 0
    return folder, X


def _assert_same_model(fits, tmp_path, reference):
    from dkernel import load_model

    folder, X = fits
    resumed, reference = load_model(tmp_path / "m.zarr"), load_model(folder / f"{reference}.zarr")
    np.testing.assert_allclose(resumed.decision_function(X), reference.decision_function(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(resumed.predict(X), reference.predict(X))


def _link_fit_data(fits, tmp_path):
    for name in ("Xf.npy", "yf.npy"):
        (tmp_path / name).symlink_to(fits[0] / name)


@SIGNALS
def test_an_interrupted_fit_with_a_checkpoint_resumes_with_the_same_command(fits, tmp_path, sig):
    _link_fit_data(fits, tmp_path)
    saved = tmp_path / "fit.ckpt" / "problem-0" / "zarr.json"
    code, err = interrupt(tmp_path, FIT_CHECKPOINT, sig, lambda err: saved.exists())
    assert_interrupted(code, err, sig, "kept in --checkpoint fit.ckpt", "run the same command again to resume")
    done = dkernel(tmp_path, *FIT_CHECKPOINT)
    assert done.returncode == 0, done.stderr
    assert "iter 0 " not in done.stderr and "] iter " in done.stderr  # it went on from the checkpoint
    _assert_same_model(fits, tmp_path, "checkpoint")


@SIGNALS
def test_an_interrupted_fit_without_a_checkpoint_says_so_and_starts_over(fits, tmp_path, sig):
    _link_fit_data(fits, tmp_path)
    code, err = interrupt(tmp_path, FIT_PLAIN, sig, lambda err: "iter 0 " in err)
    assert_interrupted(code, err, sig, "the solver's state was not saved", "starts the fit over",
                       "add --checkpoint DIR")
    assert not (tmp_path / "m.zarr").exists()
    done = dkernel(tmp_path, *FIT_PLAIN, "--quiet")
    assert done.returncode == 0, done.stderr
    _assert_same_model(fits, tmp_path, "plain")


@pytest.fixture(scope="module")
def quick_reference(tmp_path_factory):
    """The records of an uninterrupted quick run of a small pipeline."""
    from pipelines import get_pipeline
    from pipelines._runner import PipelineConfig, run_pipeline

    out = tmp_path_factory.mktemp("quick")
    config = PipelineConfig(quick=True, repeats=1, scheduler="threads", out=out, progress=False)
    return run_pipeline(get_pipeline("meila_imbalanced"), config).records


def _timeless(records):
    return [{k: v for k, v in rec.items() if "seconds" not in k} for rec in records]


@SIGNALS
def test_an_interrupted_pipeline_run_resumes_from_its_saved_tasks(quick_reference, tmp_path, sig):
    args = ["run", "meila_imbalanced", "--quick", "--repeats", "1", "--cluster", "threads", "--out", "res"]
    partial = tmp_path / "res" / ".meila_imbalanced.dkernel-partial" / "tasks"
    code, err = interrupt(tmp_path, args, sig, lambda err: partial.is_dir() and any(partial.glob("*.json")))
    assert_interrupted(code, err, sig, "tasks are saved in", "run the same command again to resume")
    done = dkernel(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert "resuming: 1 of 2 tasks" in done.stderr or "resuming: 2 of 2 tasks" in done.stderr, done.stderr
    records = json.loads((tmp_path / "res" / "meila_imbalanced" / "results.json").read_text())["records"]
    assert _timeless(records) == _timeless(json.loads(json.dumps(quick_reference)))
    # The saved tasks are gone. A SIGKILL that lands while the results folder is written leaves its hidden
    # sibling (``.NAME.dkernel-tmp-*``, never read, see dkernel._runtime.artifacts); nothing else stays.
    left = sorted(p.name for p in (tmp_path / "res").iterdir() if ".dkernel-tmp-" not in p.name)
    assert left == ["meila_imbalanced"], left


# --------------------------------------------------------------------------- #
# Errors a new user can act on
# --------------------------------------------------------------------------- #


def _corrupt_store(cwd):
    shutil.copytree(cwd / "K.zarr", cwd / "bad.zarr")
    (cwd / "bad.zarr" / "zarr.json").write_bytes(b"\xff\xfe\x00garbage")


def _not_a_model(cwd):
    (cwd / "folder").mkdir()
    (cwd / "folder" / "notes.txt").write_text("mine")


def _three_classes(cwd):
    np.save(cwd / "y3.npy", np.arange(90) % 3)


def _two_columns(cwd):
    np.save(cwd / "y2.npy", np.ones((90, 2)))


def _empty_csv(cwd):
    (cwd / "empty.csv").write_text("")


def _damaged_model(cwd):
    shutil.copytree(cwd / "svc.zarr", cwd / "dm.zarr")  # the model's files, not the link
    next(p for p in (cwd / "dm.zarr" / "support_vectors").rglob("*") if p.is_file() and p.name != "zarr.json").unlink()


def _short_labels(cwd):
    np.save(cwd / "short.npy", np.ones(80))


ERRORS = {
    "corrupt-zarr-json-info": (_corrupt_store, ["info", "bad.zarr"], ["bad.zarr"], ["codec", "utf-8"]),
    "corrupt-zarr-json-align": (_corrupt_store, ["align", "bad.zarr", "--labels", "y.npy"], ["bad.zarr"],
                                ["codec", "utf-8"]),
    "not-a-model": (_not_a_model, ["predict", "--model", "folder", "--data", "X.npy"], ["folder"],
                    ["No group found", "store"]),
    "class-balanced-3-classes": (_three_classes, ["center", "K.zarr", "--labels", "y3.npy"],
                                 ["--scheme multiclass"], ["Centering.", "(y)"]),
    "graf-correction-alone": (None, ["fit", "--data", "X.npy", "--labels", "y.npy", "--graf-correction", "--model",
                                     "m.zarr"], ["--graf-correction needs --normalize"], ["=True", " True "]),
    "centering-sample-alone": (None, ["fit", "--data", "X.npy", "--labels", "y.npy", "--centering-sample", "10",
                                      "--model", "m.zarr"], ["--centering-sample needs --centering"], ["None"]),
    "labels-of-two-columns": (_two_columns, ["align", "K.zarr", "--labels", "y2.npy"],
                              ["--labels y2.npy holds an array of shape (90, 2)"], ["180"]),
    "empty-csv": (_empty_csv, ["gram", "--input", "empty.csv", "--out", "E.zarr"], ["empty.csv holds no data"],
                  ["loadtxt", "UserWarning"]),
    "parzen-with-C": (None, ["fit", "--data", "X.npy", "--labels", "y.npy", "--learner", "parzen", "--C", "5",
                             "--model", "p.zarr"], ["--C: an option of --learner svc, svr, nusvr or conformal only"], []),
    "ridge-with-centering": (None, ["fit", "--data", "X.npy", "--labels", "outputs.npy", "--learner", "ridge",
                                    "--centering", "standard", "--model", "r.zarr"], ["--centering", "--alpha"], []),
    "damaged-model": (_damaged_model, ["predict", "--model", "dm.zarr", "--data", "X.npy", "--out", "p.npy"],
                      ["dm.zarr is damaged", "support_vectors", "not used"], ["IndexError", "KeyError", "zstd"]),
    "parzen-predict-short-labels": (_short_labels, ["predict", "--model", "parzen.zarr", "--data", "X.npy",
                                                    "--labels", "short.npy"],
                                    ["--labels short.npy has 80 labels but --data X.npy has 90 rows"], []),
    "ridge-predict-short-labels": (_short_labels, ["predict", "--model", "ridge.zarr", "--data", "X.npy",
                                                   "--labels", "short.npy"],
                                   ["--labels short.npy has 80 labels but --data X.npy has 90 rows"], []),
}


#: The cases run as a process of the command (a warning or a message printed outside the CLI's reach would show);
#: the others call the same ``main`` in this process, to keep the test short.
IN_A_PROCESS = ("corrupt-zarr-json-info", "not-a-model", "empty-csv", "parzen-predict-short-labels", "damaged-model")


@pytest.mark.parametrize("case", list(ERRORS))
def test_an_error_reaches_a_new_user_as_one_line_in_flags(work, tmp_path, case, monkeypatch, capsys):
    prepare, argv, fragments, absent = ERRORS[case]
    cwd = _fresh(work, tmp_path)
    if prepare is not None:
        prepare(cwd)
    if case in IN_A_PROCESS:
        done = dkernel(cwd, *argv)
    else:
        monkeypatch.chdir(cwd)
        status = main(argv)
        out, err = capsys.readouterr()
        done = subprocess.CompletedProcess(argv, status, out, err)
    assert_one_line_error(done, *fragments, absent=absent)
    assert done.stdout == ""  # no accuracy, no result
    assert not (cwd / "p.npy").exists()  # nothing written from a damaged model


def test_text_labels_are_read_alike_from_npy_and_text(work, tmp_path, monkeypatch):
    from dkernel import load_model
    from dkernel.cli._files import load_labels

    cwd = _fresh(work, tmp_path)
    words = np.where(np.load(work / "y.npy") > 0, "yes", "no")
    np.save(cwd / "words.npy", words)
    (cwd / "words.txt").write_text("\n".join(words) + "\n")
    np.testing.assert_array_equal(load_labels(cwd / "words.txt"), load_labels(cwd / "words.npy"))
    done = dkernel(cwd, "fit", "--data", "X.npy", "--labels", "words.txt", "--gamma", "0.3", "--model", "txt.zarr",
                   "--quiet")
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(cwd)
    assert main(["fit", "--data", "X.npy", "--labels", "words.npy", "--gamma", "0.3", "--model", "npy.zarr",
                 "--quiet"]) == 0
    X = np.load(work / "X.npy")
    from_text, from_npy = load_model(cwd / "txt.zarr").predict(X), load_model(cwd / "npy.zarr").predict(X)
    np.testing.assert_array_equal(from_text, from_npy)
    assert set(from_text) == {"yes", "no"}
