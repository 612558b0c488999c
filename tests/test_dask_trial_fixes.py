"""What a trial on a distributed cluster found: blocks sized to the workers' memory, a sampled alignment of a store
that reads only its samples' rows, a closed client refused in words, --workers on every command of --cluster."""

import numpy as np
import pytest

from dkernel import GramMatrix, SVC
from dkernel._runtime.client import describe_cluster, start_local_cluster, worker_memory_limit
from dkernel.alignment import sampled_target_alignment
from dkernel.cli import main


@pytest.fixture(scope="module")
def small_workers():
    cluster, client = start_local_cluster(n_workers=1, threads_per_worker=1, memory_limit="300MB")
    yield client
    client.close()


def test_blocks_are_sized_to_the_smallest_worker_memory_limit(small_workers, tmp_path):
    X = np.random.default_rng(0).normal(size=(3000, 5))
    assert worker_memory_limit(small_workers) == 300_000_000
    # 300 MB / 8 = 37.5 MB: blocks of about 2048² float64, 3000 split into two equal blocks (128 MiB: one of 3000).
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.1, store=tmp_path / "K.zarr", client=small_workers,
                              progress=False)
    assert gram.chunks == (1504, 1504) and gram.verify() == []  # rounded up to a multiple of 8
    assert GramMatrix.compute(X, kernel="rbf", gamma=0.1, store=tmp_path / "K.zarr", progress=False,
                              chunk=1504).n_blocks_computed == 0  # the same store, resumed as it was made
    explicit = GramMatrix.compute(X, kernel="rbf", gamma=0.1, store=tmp_path / "K2.zarr", client=small_workers,
                                  chunk=1000, progress=False)
    assert explicit.chunks == (1000, 1000)
    assert GramMatrix.compute(X, kernel="rbf", gamma=0.1, client=False, progress=False).chunks == (3000, 3000)


def test_a_closed_client_is_refused_in_words(tmp_path):
    X, y = np.random.default_rng(0).normal(size=(60, 3)), np.arange(60) % 2
    cluster, client = start_local_cluster(n_workers=1, threads_per_worker=1)
    assert describe_cluster(client).endswith("with 1 worker")
    client.close()
    for run in (lambda: GramMatrix.compute(X, store=tmp_path / "K.zarr", client=client, progress=False),
                lambda: SVC(client=client).fit(X, y)):
        with pytest.raises(ValueError, match=r"client .* is closed; pass an open distributed.Client"):
            run()
    assert not (tmp_path / "K.zarr").exists()


def test_a_sampled_alignment_of_a_store_reads_only_the_rows_of_its_samples(tmp_path, monkeypatch):
    import dkernel.gram._matrix as matrix
    from dkernel.gram._sources import principal_submatrix

    rng = np.random.default_rng(1)
    X = rng.normal(size=(900, 4))
    y = (X[:, 0] > 0).astype(int)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=tmp_path / "K.zarr", chunk=200, progress=False)
    K = gram.to_numpy()
    expected = sampled_target_alignment(K, y, 150, random_state=4)

    def whole_block(*args, **kwargs):
        raise AssertionError("a whole block was read")

    monkeypatch.setattr(matrix, "_store_dask", whole_block)
    monkeypatch.setattr(matrix.GramMatrix, "block", whole_block)
    got = sampled_target_alignment(GramMatrix.open(tmp_path / "K.zarr"), y, 150, random_state=4)
    assert got.value == pytest.approx(expected.value, rel=1e-12)
    S = np.sort(rng.choice(900, 120, replace=False))[::-1]
    np.testing.assert_array_equal(principal_submatrix(GramMatrix.open(tmp_path / "K.zarr"), S), K[np.ix_(S, S)])


@pytest.mark.parametrize("command", ["fit", "adapt"])
def test_workers_without_a_local_cluster_is_refused_on_every_command_of_cluster(command, tmp_path, capsys):
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(30, 3)))
    np.save(tmp_path / "y.npy", np.arange(30) % 2)
    argv = {"fit": ["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"),
                    "--model", str(tmp_path / "m")],
            "adapt": ["adapt", str(tmp_path / "K.zarr"), "--labels", str(tmp_path / "y.npy"),
                      "--factors", str(tmp_path / "F.npz")]}[command]
    assert main(argv + ["--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "--workers 2 sets the worker processes of --cluster local" in err and "unrecognized" not in err


def test_fit_with_workers_of_a_local_cluster(tmp_path, capsys):
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(80, 3)))
    np.save(tmp_path / "y.npy", np.arange(80) % 2)
    assert main(["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--model",
                 str(tmp_path / "m"), "--cluster", "local", "--workers", "1", "--quiet"]) == 0
    assert "with 1 worker" in capsys.readouterr().err
