"""Gram stores under concurrency: writers hold the store they started, readers the store they opened.

Real ``dkernel`` processes run against one store path: two ``gram`` runs with
different kernels started together, an ``--overwrite`` during a slow run, the
same command run twice, a reader across another process's overwrite, a run
killed with SIGKILL and resumed. The stored values are compared with the RBF
kernel computed in numpy; nothing of two kernels is ever mixed, and the run
that loses says so in one line.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

from dkernel.centering import Centering
from dkernel.cli import main
from dkernel.exceptions import StoreMismatchError
from dkernel.gram import GramMatrix
from dkernel.views import CenteredGram

REPO = Path(__file__).resolve().parents[1]
N, CHUNK = 60, 15  # a 4 x 4 grid: 10 blocks evaluated


def rbf(X, gamma):
    sq = (X**2).sum(1)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))


@pytest.fixture
def data(tmp_path):
    X = np.random.default_rng(0).normal(size=(N, 3))
    np.save(tmp_path / "X.npy", X)
    return X


def gram_argv(tmp_path, out, gamma, *extra):
    return ["gram", "--input", str(tmp_path / "X.npy"), "--kernel", "rbf", "--gamma", str(gamma), "--chunk",
            str(CHUNK), "--out", str(out), "--no-progress", *extra]


def start(tmp_path, argv, slow=0.0, name="run", held_after=None, together=False):
    """A ``dkernel`` process running ``argv``; each block evaluation takes ``slow`` seconds longer.

    With ``held_after``, the evaluations after the first ``held_after`` wait
    while the file ``hold`` exists in ``tmp_path`` (the test removes it).
    With ``together``, the process signals ``ready-NAME`` once imported and
    waits for the file ``go`` (:func:`release`), and creating a store takes
    0.5 s longer: runs released together all find the path free and create
    their stores at the same time.
    """
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(f"""
        import itertools, os, sys, time
        from dkernel.gram import _compute, _store

        evaluate, calls, held_after = _compute._evaluate_block, itertools.count(), {held_after!r}
        def slowed(*args, **kwargs):
            time.sleep({slow!r})
            if held_after is not None and next(calls) >= held_after:
                while os.path.exists({str(tmp_path / "hold")!r}):
                    time.sleep(0.02)
            return evaluate(*args, **kwargs)
        _compute._evaluate_block = slowed
        from dkernel.cli import main
        if {together!r}:
            create = _store._create_store
            def slow_create(*args, **kwargs):
                time.sleep(0.5)
                return create(*args, **kwargs)
            _store._create_store = slow_create
            open({str(tmp_path / f"ready-{name}")!r}, "w").close()
            while not os.path.exists({str(tmp_path / "go")!r}):
                time.sleep(0.005)
        sys.exit(main({argv!r}))
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def release(tmp_path, runs, timeout=60):
    """Start the processes ``runs`` (``{name: process}``, started with ``together``) at the same moment."""
    deadline = time.monotonic() + timeout
    while not all((tmp_path / f"ready-{name}").exists() for name in runs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in runs.values()), "a run did not start"
        time.sleep(0.01)
    (tmp_path / "go").touch()


def finish(process, timeout=120):
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def blocks_done(path):
    try:
        return int(zarr.open_array(str(path), path="done", mode="r")[:].sum())
    except Exception:  # not created yet, or being swapped
        return 0


def wait_for(condition, process, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            pytest.fail(f"the run ended first (status {process.returncode}): {process.communicate()[1][-2000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the run never got there")
        time.sleep(0.02)


def assert_whole_store(path, X, gamma):
    """The store holds the RBF Gram of ``gamma`` in every block, and verifies."""
    stored = GramMatrix.open(path)
    assert stored.kernel.gamma == gamma and stored.complete
    assert stored.verify() == []
    np.testing.assert_allclose(stored.to_numpy(), rbf(X, gamma), rtol=0, atol=1e-12)


def assert_one_clean_line(err):
    assert err.startswith("dkernel: error: ") and err.count("\n") == 1 and "Traceback" not in err, err


def debris(parent):
    return sorted(p.name for p in Path(parent).iterdir() if ".dkernel-" in p.name)


def test_two_gram_runs_with_other_kernels_started_together_never_mix(data, tmp_path):
    out = tmp_path / "K.zarr"
    runs = {f"gamma{gamma}": start(tmp_path, gram_argv(tmp_path, out, gamma), name=f"gamma{gamma}", together=True)
            for gamma in (0.1, 0.5)}
    release(tmp_path, runs)
    results = {float(name[5:]): finish(process) for name, process in runs.items()}
    codes = sorted(code for code, _, _ in results.values())
    assert codes == [0, 2], results
    winner = next(gamma for gamma, (code, _, _) in results.items() if code == 0)
    loser_err = next(err for code, _, err in results.values() if code == 2)
    assert_one_clean_line(loser_err)
    assert "another kernel" in loser_err and "--overwrite" in loser_err and "overwrite=True" not in loser_err
    assert_whole_store(out, data, winner)
    assert debris(tmp_path) == []


def run_into(tmp_path, out, gamma, other_argv):
    """Run ``dkernel gram`` (``gamma``) into ``out``; once 2 blocks are written, run ``other_argv`` to its end.

    The first run's next blocks wait meanwhile; returns its result once it went on and ended.
    """
    (tmp_path / "hold").touch()
    first = start(tmp_path, gram_argv(tmp_path, out, gamma), name="first", held_after=2)
    wait_for(lambda: blocks_done(out) >= 2, first)
    code, _, err = finish(start(tmp_path, other_argv, name="second"))
    assert code == 0, err
    (tmp_path / "hold").unlink()  # the first run goes on with the blocks it was evaluating
    return finish(first)


def test_an_overwrite_during_a_slow_run_replaces_the_store_whole(data, tmp_path):
    out = tmp_path / "K.zarr"
    code, _, err = run_into(tmp_path, out, 0.1, gram_argv(tmp_path, out, 0.5, "--overwrite"))
    assert code == 2
    assert_one_clean_line(err)
    assert "was replaced by another run" in err and "none of its blocks went into the new store" in err
    assert_whole_store(out, data, 0.5)
    assert debris(tmp_path) == []


def test_the_same_command_run_twice_at_once_finishes_one_store(data, tmp_path):
    out = tmp_path / "K.zarr"
    code, _, err = run_into(tmp_path, out, 0.2, gram_argv(tmp_path, out, 0.2))
    assert code == 2
    assert_one_clean_line(err)
    assert "took over the Gram store" in err and "now writes it" in err
    assert_whole_store(out, data, 0.2)


def test_a_reader_across_another_process_overwrite_reads_nothing_of_the_new_store(data, tmp_path):
    out = tmp_path / "K.zarr"
    assert main(gram_argv(tmp_path, out, 0.1)) == 0
    old = GramMatrix.open(out)
    np.testing.assert_allclose(old.rows([3, 40]), rbf(data, 0.1)[[3, 40]], atol=1e-12)  # checksums cached
    view = CenteredGram(old, Centering.standard(N))
    code, _, err = finish(start(tmp_path, gram_argv(tmp_path, out, 0.5, "--overwrite"), name="overwrite"))
    assert code == 0, err
    reads = {"rows": lambda: old.rows([3, 40]), "block": lambda: old.block(0, 1), "diag": old.diag,
             "to_numpy": old.to_numpy, "dask": lambda: old.dask.compute(), "verify": old.verify,
             "view rows": lambda: view.rows([3])}
    for name, read in reads.items():
        with pytest.raises(StoreMismatchError, match="was replaced .* after this object opened it"):
            read()
    np.testing.assert_allclose(GramMatrix.open(out).rows([3]), rbf(data, 0.5)[[3]], atol=1e-12)


def test_a_reader_across_an_in_place_repair_keeps_reading(data, tmp_path):
    """A run that resumes or repairs the same store does not replace it: its readers go on."""
    out = tmp_path / "K.zarr"
    assert main(gram_argv(tmp_path, out, 0.3)) == 0
    reader = GramMatrix.open(out)
    zarr.open_array(str(out), path="done", mode="r+")[0, 3] = 0
    code, _, err = finish(start(tmp_path, gram_argv(tmp_path, out, 0.3), name="resume"))
    assert code == 0, err
    np.testing.assert_allclose(reader.to_numpy(), rbf(data, 0.3), atol=1e-12)


def test_a_gram_run_killed_by_sigkill_is_resumed_by_the_same_command(data, tmp_path):
    out = tmp_path / "K.zarr"
    killed = start(tmp_path, gram_argv(tmp_path, out, 0.2), slow=0.3, name="killed")
    wait_for(lambda: blocks_done(out) >= 2, killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    flags = zarr.open_array(str(out), path="done", mode="r")[:]
    # A block is written once both its flags are set (the kill may fall between the two): as a resume counts it.
    written = int(np.triu(flags & flags.T).sum())
    assert 1 <= written < 10
    resumed = GramMatrix.compute(data, kernel="rbf", gamma=0.2, chunk=CHUNK, store=out, progress=False)
    assert resumed.n_blocks_computed == 10 - written  # the killed run's claim does not stand in the way
    assert_whole_store(out, data, 0.2)


def test_two_derived_stores_written_at_once_to_one_path_never_replace_each_other(data, tmp_path):
    out, derived = tmp_path / "K.zarr", tmp_path / "Kc.zarr"
    assert main(gram_argv(tmp_path, out, 0.3)) == 0
    np.save(tmp_path / "y.npy", np.where(data[:, 0] > 0, 1, -1))
    argv = {"standard": ["center", str(out), "--scheme", "standard", "--out", str(derived)],
            "class-balanced": ["center", str(out), "--labels", str(tmp_path / "y.npy"), "--out", str(derived)]}
    runs = {scheme: start(tmp_path, args, name=scheme, together=True) for scheme, args in argv.items()}
    release(tmp_path, runs)
    results = {scheme: finish(process) for scheme, process in runs.items()}
    assert sorted(code for code, _, _ in results.values()) == [0, 2], results
    winner = next(scheme for scheme, (code, _, _) in results.items() if code == 0)
    loser_err = next(err for code, _, err in results.values() if code == 2)
    assert_one_clean_line(loser_err)
    assert GramMatrix.open(derived).operators[0]["scheme"] == winner
    assert debris(tmp_path) == []
