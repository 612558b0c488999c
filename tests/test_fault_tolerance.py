"""A worker SIGKILLed in the middle of a distributed fit: its range of the gradient is rebuilt and the fit finishes."""

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC
from dkernel.gram._sources import KernelGram
from dkernel.solver import solve_qp
from dkernel.svm import _training

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
PARAMS = dict(kernel="rbf", gamma=0.05, C=1.0, tol=1e-8, working_set_size=16)


def _kill_worker_at(client, problem, iteration, killed, monkeypatch):
    """Make the solver of binary problem ``problem`` SIGKILL the process of a worker at ``iteration``."""
    pids = client.run(os.getpid)
    victim = sorted(pids)[-1]
    calls = []
    solve = _training.solve_qp

    def solve_and_kill(*args, **kwargs):
        number = len(calls)
        calls.append(number)

        def callback(it, alpha, gap):
            if number == problem and it == iteration:
                os.kill(pids[victim], signal.SIGKILL)
                killed.append(victim)
            return False

        return solve(*args, callback=callback, **kwargs)

    monkeypatch.setattr(_training, "solve_qp", solve_and_kill)
    return victim


@pytest.mark.parametrize("n_classes, problem", [(2, 0), (3, 1)])
def test_a_killed_worker_is_replaced_and_the_fit_matches_an_uninterrupted_one(nanny_cluster, solver_log, monkeypatch,
                                                                            n_classes, problem):
    X, y = make_classification(n_samples=360, n_features=8, n_informative=5, n_classes=n_classes, flip_y=0.05,
                               random_state=11)
    nanny_cluster.wait_for_workers(2, timeout=60)
    reference = SVC(client=nanny_cluster, **PARAMS).fit(X, y)
    killed = []
    victim = _kill_worker_at(nanny_cluster, problem, 6, killed, monkeypatch)
    model = SVC(client=nanny_cluster, **PARAMS).fit(X, y)
    assert killed == [victim]
    rebuilt = [m for m in solver_log if "was lost" in m]
    assert len(rebuilt) == 1 and victim in rebuilt[0] and "samples" in rebuilt[0]
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X), atol=1e-6)
    assert model.fit_status_ == 0


@pytest.fixture
def workers_without_nanny():
    """A scheduler in this process and two ``dask worker --no-nanny`` processes: a killed worker stays dead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None) as local:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
            workers = [subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", local.scheduler_address, "--no-nanny",
                 "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]  # fmt: skip
            try:
                with distributed.Client(local) as client:
                    client.wait_for_workers(2, timeout=60)
                    yield client
            finally:
                for process in workers:
                    process.kill()
                    process.wait()


def test_a_killed_worker_that_is_not_replaced_leaves_its_range_to_the_survivor(workers_without_nanny, solver_log):
    client = workers_without_nanny
    X, y = make_classification(n_samples=360, n_features=8, flip_y=0.05, random_state=12)
    y = np.where(y == 1, 1.0, -1.0)
    rows = KernelGram(X, "rbf", gamma=0.05)
    options = dict(tol=1e-8, working_set_size=16)
    reference = solve_qp(rows, y, 1.0, **options)
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]

    def kill_at_iteration_5(it, alpha, gap):
        if it == 5:
            os.kill(pids[victim], signal.SIGKILL)
        return False

    result = solve_qp(rows, y, 1.0, client=client, callback=kill_at_iteration_5, **options)
    assert list(client.scheduler_info(n_workers=-1)["workers"]) == [w for w in sorted(pids) if w != victim]
    rebuilt = [m for m in solver_log if "was lost" in m]
    assert len(rebuilt) == 1 and victim in rebuilt[0] and "0:180" in rebuilt[0]
    assert result.converged
    K = rows.to_numpy()
    np.testing.assert_allclose(result.decision_function(K, y), reference.decision_function(K, y), atol=1e-6)
