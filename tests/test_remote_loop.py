"""The solver's loop in a task on a worker: lost workers (its own included), a released solve, what reaches the client."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dkernel import DenseGram, SVC
from sklearn.metrics.pairwise import rbf_kernel
from dkernel.solver import solve_qp

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
OPTIONS = dict(tol=1e-8, working_set_size=16)


@pytest.fixture(scope="module")
def problem():
    X, y = make_classification(n_samples=400, n_features=8, n_informative=5, flip_y=0.05, random_state=4)
    gram = DenseGram(rbf_kernel(X, gamma=0.05))
    y_pm = np.where(y == 1, 1.0, -1.0)
    return gram, y_pm, solve_qp(gram, y_pm, 1.0, **OPTIONS)


def _assert_same_decisions(gram, y, result, reference):
    K = gram.rows(np.arange(gram.n))
    np.testing.assert_allclose(result.decision_function(K, y), reference.decision_function(K, y), atol=1e-6)


def _kill_at(iteration, marker, whom):
    """A callback run by the loop on its worker: SIGKILL ``whom`` ("self" or "other") once, at ``iteration``."""

    def callback(it, alpha, gap):
        if it == iteration and not marker.exists():
            marker.touch()
            from distributed import get_worker

            me = get_worker()
            if whom == "self":
                os.kill(os.getpid(), signal.SIGKILL)
            pids = me.client.run(os.getpid)  # the loop's worker asks the scheduler for the others
            victim = next(pid for address, pid in pids.items() if address != me.address)
            os.kill(victim, signal.SIGKILL)
        return False

    return callback


def test_a_worker_lost_under_the_loop_is_rebuilt_and_its_warning_reaches_the_client(nanny_cluster, problem,
                                                                                   tmp_path, solver_log):
    gram, y, reference = problem
    nanny_cluster.wait_for_workers(2, timeout=60)
    marker = tmp_path / "killed"
    result = solve_qp(gram, y, 1.0, client=nanny_cluster, coordinator="worker",
                      callback=_kill_at(6, marker, "other"), **OPTIONS)
    assert marker.exists()
    rebuilt = [m for m in solver_log if "was lost" in m]
    assert len(rebuilt) == 1 and "samples" in rebuilt[0]
    _assert_same_decisions(gram, y, result, reference)


def test_the_worker_holding_the_loop_lost_runs_the_loop_again_elsewhere(nanny_cluster, problem, tmp_path):
    gram, y, reference = problem
    nanny_cluster.wait_for_workers(2, timeout=60)
    marker = tmp_path / "killed"
    result = solve_qp(gram, y, 1.0, client=nanny_cluster, coordinator="worker",
                      callback=_kill_at(6, marker, "self"), **OPTIONS)
    assert marker.exists()
    _assert_same_decisions(gram, y, result, reference)


def test_the_progress_lines_of_the_loop_reach_the_client(nanny_cluster, problem, capsys):
    gram, y, reference = problem
    result = solve_qp(gram, y, 1.0, client=nanny_cluster, verbose=True, **OPTIONS)
    err = capsys.readouterr().err
    assert f"converged: gap {result.gap:.3e} <= tol 1e-08 after {reference.n_iter} iterations" in err
    assert "[dkernel.solver] iter" in err


def test_a_bad_coordinator_is_refused():
    with pytest.raises(ValueError, match="coordinator must be 'worker' or 'client'"):
        solve_qp(DenseGram(np.eye(3)), [1, -1, 1], 1.0, coordinator="laptop")


_DRIVER = """
import sys, warnings
import distributed
from sklearn.datasets import make_classification
from dkernel import SVC
from dkernel.solver import Checkpoint
warnings.simplefilter("ignore")


def slow_down_the_loop():  # on the workers: slow enough that the client is killed in the middle of the fit
    import time
    import dkernel.solver._loop as loop

    loop.fast_subproblem = loop.smo_subproblem

    def slow_subproblem(*args):
        time.sleep(0.02)
        return loop.fast_subproblem(*args)

    loop.smo_subproblem = slow_subproblem


X, y = make_classification(n_samples=1500, n_features=8, flip_y=0.1, random_state=2)
with distributed.Client(sys.argv[1]) as client:
    client.run(slow_down_the_loop)
    model = SVC(client=client, checkpoint=Checkpoint(sys.argv[2], every_iter=3), kernel="rbf", gamma=0.1, tol=1e-6,
                working_set_size=8)
    model.fit(X, y)
"""


def _solves_running(client):
    def running(dask_worker):
        return [str(key) for key, task in dask_worker.state.tasks.items()
                if str(key).startswith("dkernel-solve-") and task.state in ("executing", "long-running")]

    return [key for keys in client.run(running).values() for key in keys]


def _connect(address, attempts=3):
    """A client of ``address``, connected again when distributed's handshake meets a broadcast.

    The client's handshake asserts that the scheduler's first batch of
    messages holds its "stream-start" alone. The loop of the killed client,
    stopping, cancels its actors; the scheduler sends that "cancelled-keys"
    to every client, and when it falls in the same 2 ms batch as a new
    client's "stream-start", ``Client()`` fails with a bare AssertionError.
    """
    for attempt in range(attempts):
        try:
            return distributed.Client(address)
        except AssertionError:
            if attempt == attempts - 1:
                raise


def test_a_killed_client_releases_the_loop_and_a_new_client_resumes_it(tmp_path, scheduler_address, solver_log):
    path = tmp_path / "fit.ckpt"
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, str(driver), scheduler_address, str(path)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    written = path / "problem-0" / "zarr.json"
    deadline = time.monotonic() + 120
    try:
        while not written.exists():
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint was written"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    X, y = make_classification(n_samples=1500, n_features=8, flip_y=0.1, random_state=2)
    params = dict(kernel="rbf", gamma=0.1, tol=1e-6, working_set_size=8)
    with _connect(scheduler_address) as client:
        deadline = time.monotonic() + 30
        while _solves_running(client):  # the loop of the killed client stops at its next iteration
            assert time.monotonic() < deadline, "the loop of a killed client kept running"
            time.sleep(0.1)

        def restore_the_loop():  # defined here: the workers cannot import this module
            import dkernel.solver._loop as loop

            loop.smo_subproblem = loop.fast_subproblem

        client.run(restore_the_loop)
        resumed = SVC(client=client, checkpoint=path, **params).fit(X, y)
    # Rows on the fly in float64 (1 MB holds no whole Gram), as on the workers: the same path, not shrunk.
    single = SVC(client=False, cache_size=1, **params).fit(X, y)
    assert single.gram_dtype_ == "on-the-fly"
    # Both converged to tol 1e-6 in the duality gap: their decision values agree to that scale, not to rounding.
    np.testing.assert_allclose(resumed.decision_function(X), single.decision_function(X), atol=1e-4)
    # The loop's record, made on a worker, reached this process's logger.
    assert any("resuming from the checkpoint" in m for m in solver_log), solver_log
