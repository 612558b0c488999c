"""The client of a distributed fit only steers: two actor calls per worker and iteration, no kernel rows read here.

With a LocalCluster the scheduler and the nannies run in the client process:
there the CPU times are printed (``-s``), not asserted. The share of the
client is asserted where it runs as deployed, the scheduler and the workers
in processes of their own.
"""

import collections
import os
import time
import warnings

import numpy as np
import psutil
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC
from dkernel.gram import GramMatrix
from dkernel.solver._actors import ActorGradients

distributed = pytest.importorskip("distributed")

N_SAMPLES = 4000
PARAMS = dict(kernel="rbf", gamma=0.01, C=10.0, centering="class-balanced", normalize=True, tol=1e-3)


def _cpu_seconds(pids):
    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)


@pytest.fixture
def calls_and_client_reads(monkeypatch):
    """Actor calls by method, and the kernel rows read in this process (the workers are other processes)."""
    calls, reads = collections.Counter(), []
    call = ActorGradients._call

    async def counted_call(self, i, method, args):
        calls[method] += 1
        return await call(self, i, method, args)

    monkeypatch.setattr(ActorGradients, "_call", counted_call)
    for name in ("rows", "submatrix"):
        original = getattr(GramMatrix, name)
        monkeypatch.setattr(GramMatrix, name, lambda self, *a, _o=original, **k: reads.append(a) or _o(self, *a, **k))
    return calls, reads


def test_a_stored_centered_normalized_fit_on_workers_matches_one_process_with_a_light_client(
        tmp_path, calls_and_client_reads):
    calls, client_reads = calls_and_client_reads
    X, y = make_classification(n_samples=N_SAMPLES, n_features=32, flip_y=0.1, random_state=8)
    store = tmp_path / "K.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as local, distributed.Client(local) as client:
            for data, path in ((X[:300], tmp_path / "warm.zarr"), (X, store)):
                GramMatrix.compute(data, kernel="rbf", gamma=PARAMS["gamma"], store=path, client=client,
                                   progress=False)
            pids = list(client.run(os.getpid).values())
            SVC(client=client, store=tmp_path / "warm.zarr", **PARAMS).fit(X[:300], y[:300])  # code loaded everywhere
            calls.clear()
            del client_reads[:]
            workers_before, client_before, start = _cpu_seconds(pids), time.process_time(), time.perf_counter()
            model = SVC(client=client, store=store, **PARAMS).fit(X, y)
            client_cpu, workers_cpu = time.process_time() - client_before, _cpu_seconds(pids) - workers_before
            wall = time.perf_counter() - start
    n_iter = int(model.n_iter_[0])
    # Per worker: the first candidates, load and update (answered by the next candidates) per iteration, the state.
    assert dict(calls) == {"candidates": 2, "load": 2 * n_iter, "update": 2 * n_iter, "state": 2}
    assert client_reads == []
    single = SVC(client=False, store=store, **PARAMS).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), single.decision_function(X), atol=1e-6)
    print(f"client {client_cpu:.2f} s, workers {workers_cpu:.2f} s, ratio {client_cpu / workers_cpu:.3f}, "
          f"wall {wall:.1f} s, {n_iter} iterations")


CLIENT_SHARE_N = 10000


def test_the_client_process_uses_a_small_share_of_the_workers_cpu(tmp_path, scheduler_address):
    """As deployed, the client process holds only the client (scheduler and workers are processes of their own).

    The client's CPU time during a centered + normalized fit on a stored Gram
    (the lower of two fits, against the noise of other processes) measured
    0.19–0.24 of the workers' at n = 10000 and 0.195–0.21 at n = 16000: its
    per-iteration work is the SMO sub-problem on the working set, the
    assembly of its kernel block and two exchanges per worker. The bound
    asserted here, 0.3, fails with three exchanges per iteration routed
    through the scheduler (0.44–0.61 measured).
    """
    X, y = make_classification(n_samples=CLIENT_SHARE_N, n_features=32, flip_y=0.1, random_state=8)
    store = tmp_path / "K.zarr"
    with distributed.Client(scheduler_address) as client:
        GramMatrix.compute(X[:300], kernel="rbf", gamma=PARAMS["gamma"], store=tmp_path / "warm.zarr",
                           client=client, progress=False)
        GramMatrix.compute(X, kernel="rbf", gamma=PARAMS["gamma"], store=store, client=client, progress=False)
        SVC(client=client, store=tmp_path / "warm.zarr", **PARAMS).fit(X[:300], y[:300])  # code loaded everywhere
        pids = list(client.run(os.getpid).values())
        ratios = []
        for _ in range(2):
            workers_before, client_before = _cpu_seconds(pids), time.process_time()
            SVC(client=client, store=store, **PARAMS).fit(X, y)
            ratios.append((time.process_time() - client_before) / (_cpu_seconds(pids) - workers_before))
    print(f"client / workers CPU: {', '.join(f'{r:.3f}' for r in ratios)}")
    assert min(ratios) < 0.3, f"the client used {min(ratios):.2f} of the workers' CPU time"
