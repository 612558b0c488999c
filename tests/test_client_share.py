"""The client of a distributed fit only steers: two actor calls per worker and iteration, no kernel rows read here.

The CPU time of the client process and of the workers during the fit is
printed (``-s``) as a measurement, not asserted: with a LocalCluster the
scheduler and the nannies run in the client process, and on a shared machine
their periodic work follows the wall time, not the fit.
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
