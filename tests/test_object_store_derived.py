"""Derived Gram stores (a view's to_zarr, AdaptedGram.to_zarr, dkernel center / adapt) at an s3:// URL, against
moto's S3 server on 127.0.0.1 (the fixtures of test_object_store)."""

import threading

import dask
import numpy as np
import pytest

pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]')")
pytest.importorskip("s3fs", reason="s3fs is not installed")

import test_object_store as s3_fixtures
from test_object_store import KEY, SECRET, _cli_options, _data, _objects

from dkernel.centering import Centering
from dkernel.exceptions import (
    ArtifactPathError,
    CorruptStoreError,
    IncompleteStoreError,
    StoreMismatchError,
)
from dkernel.gram import GramMatrix, _remote
from dkernel.views import CenteredGram

endpoint, bucket, options = s3_fixtures.endpoint, s3_fixtures.bucket, s3_fixtures.options


def _labels(X):
    return np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)


def _centered(K, y):
    return CenteredGram(K, Centering.class_balanced(y))


def test_a_centered_store_at_a_url_equals_the_local_one_and_keeps_no_credentials(bucket, options, tmp_path):
    from dkernel.svm import SVC

    name, s3 = bucket
    X = _data(70)
    y = _labels(X)
    K_url = GramMatrix.compute(X, gamma=0.2, chunk=32, store=f"s3://{name}/K.zarr", storage_options=options,
                               client=False, progress=False)
    K_local = GramMatrix.compute(X, gamma=0.2, chunk=32, store=tmp_path / "K.zarr", client=False, progress=False)
    url = f"s3://{name}/Kc.zarr"
    stored = _centered(K_url, y).to_zarr(url, storage_options=options)
    local = _centered(K_local, y).to_zarr(tmp_path / "Kc.zarr")
    opened = GramMatrix.open(url, storage_options=options)
    np.testing.assert_allclose(opened.to_numpy(), local.to_numpy(), rtol=0, atol=1e-12)
    assert stored.operators == local.operators and not opened.is_raw
    keys = set(_objects(s3, name))
    assert "Kc.zarr/dkernel.json" in keys and all(k.startswith("Kc.zarr/v-") for k in keys
                                                   if k.startswith("Kc.zarr/") and k != "Kc.zarr/dkernel.json")
    for body in _objects(s3, name).values():
        assert KEY.encode() not in body and SECRET.encode() not in body
    # A fit on the stored centered matrix decides as one on the local store.
    f_url = SVC(kernel="precomputed").fit(opened.to_numpy(), y).decision_function(opened.to_numpy())
    f_local = SVC(kernel="precomputed").fit(local.to_numpy(), y).decision_function(local.to_numpy())
    np.testing.assert_allclose(f_url, f_local, rtol=0, atol=1e-10)


def test_an_adapted_gram_at_a_url_equals_the_local_one(bucket, options, tmp_path):
    from dkernel.alignment import transductive_adaptation

    name, _ = bucket
    X = _data(80)
    K = GramMatrix.compute(X, gamma=0.3, chunk=32, client=False, progress=False)
    G = transductive_adaptation(K, _labels(X), rank=10)
    stored = G.to_zarr(f"s3://{name}/G.zarr", storage_options=options)
    local = G.to_zarr(tmp_path / "G.zarr")
    np.testing.assert_allclose(stored.to_numpy(), local.to_numpy(), rtol=0, atol=1e-12)
    assert stored.operators[-1]["name"] == "alignment-adapted" and stored.operators == local.operators


def test_a_corrupted_derived_object_is_detected_and_repaired_by_the_same_write(bucket, options):
    name, s3 = bucket
    X = _data(60)
    K = GramMatrix.compute(X, chunk=32, client=False, progress=False)
    view = _centered(K, _labels(X))
    url = f"s3://{name}/Kc.zarr"
    first = view.to_zarr(url, storage_options=options)
    expected = first.to_numpy()
    chunk = min(k for k in _objects(s3, name) if "/c/" in k)
    body = bytearray(s3.get_object(Bucket=name, Key=chunk)["Body"].read())
    body[8] ^= 0x40
    s3.put_object(Bucket=name, Key=chunk, Body=bytes(body))
    with pytest.raises(CorruptStoreError, match="checksum"):
        GramMatrix.open(url, storage_options=options).to_numpy()
    with pytest.raises(ArtifactPathError, match="overwrite=True"):  # a committed store is kept without overwrite
        view.to_zarr(url, storage_options=options)
    repaired = view.to_zarr(url, storage_options=options, overwrite=True)  # the same view: rewrites that block
    assert repaired._blocks.manifest["version"] == first._blocks.manifest["version"]
    np.testing.assert_array_equal(GramMatrix.open(url, storage_options=options).to_numpy(), expected)


def test_a_derived_store_refuses_a_foreign_prefix_and_a_model(bucket, options):
    from dkernel.svm import SVC

    name, s3 = bucket
    X = _data(40)
    view = _centered(GramMatrix.compute(X, chunk=32, client=False, progress=False), _labels(X))
    s3.put_object(Bucket=name, Key="Kc.zarr/data.csv", Body=b"1,2,3\n")
    SVC().fit(X, _labels(X)).save(f"s3://{name}/model", storage_options=options)
    before = _objects(s3, name)
    for overwrite in (False, True):
        with pytest.raises(ArtifactPathError, match="did not write"):
            view.to_zarr(f"s3://{name}/Kc.zarr", storage_options=options, overwrite=overwrite)
        with pytest.raises(ArtifactPathError, match="not the manifest of a dkernel Gram store"):
            view.to_zarr(f"s3://{name}/model", storage_options=options, overwrite=overwrite)
    assert _objects(s3, name) == before


def test_an_interrupted_derived_write_is_not_readable_and_resumes(bucket, options, monkeypatch):
    name, s3 = bucket
    X = _data(100)
    view = _centered(GramMatrix.compute(X, chunk=32, client=False, progress=False), _labels(X))
    url = f"s3://{name}/Kc.zarr"
    real = _remote._write_view_block_task
    calls, lock = [], threading.Lock()

    def failing(*args):
        with lock:
            if len(calls) >= 5:
                raise RuntimeError("stopped")
            calls.append(args[4:6])
        return real(*args)

    monkeypatch.setattr(_remote, "_write_view_block_task", failing)
    # One thread: no block is still being written in the background when the run stops and the bucket is listed.
    with dask.config.set(num_workers=1), pytest.raises(RuntimeError, match="stopped"):
        view.to_zarr(url, storage_options=options)
    with pytest.raises(IncompleteStoreError, match="interrupted"):
        GramMatrix.open(url, storage_options=options)
    written = sum("/dkernel-blocks/" in k for k in _objects(s3, name))
    assert written == 5
    calls.clear()
    monkeypatch.setattr(_remote, "_write_view_block_task", lambda *args: (calls.append(args[4:6]), real(*args))[1])
    stored = view.to_zarr(url, storage_options=options)
    assert len(calls) == 16 - written  # only the blocks without a verified flag are written again
    np.testing.assert_allclose(stored.to_numpy(), view.to_numpy(), rtol=0, atol=1e-12)
    assert sum("/v-" in k and k.endswith("zarr.json") for k in _objects(s3, name)) == 1


def test_centering_a_url_store_in_place_replaces_it_after_the_commit(bucket, options):
    name, s3 = bucket
    X = _data(50)
    url = f"s3://{name}/K.zarr"
    K = GramMatrix.compute(X, chunk=32, store=url, storage_options=options, client=False, progress=False)
    old = K._blocks.manifest["version"]
    view = _centered(K, _labels(X))
    expected = view.to_numpy()
    with pytest.raises(ArtifactPathError, match="this view reads"):
        view.to_zarr(url, storage_options=options)
    out = view.to_zarr(url, storage_options=options, overwrite=True)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=0, atol=1e-12)
    assert not any(old in k for k in _objects(s3, name))
    with pytest.raises(StoreMismatchError, match="was replaced by the derived store"):
        K.rows([0])


def test_dkernel_center_and_adapt_write_to_the_bucket(bucket, options, tmp_path, capsys):
    from dkernel import cli

    name, s3 = bucket
    X = _data(60)
    y = _labels(X)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    flags = _cli_options(options)
    store = f"s3://{name}/K.zarr"
    assert cli.main(["gram", "--input", str(tmp_path / "X.npy"), "--gamma", "0.2", "--out", store,
                     "--no-progress", *flags]) == 0
    assert cli.main(["center", store, "--labels", str(tmp_path / "y.npy"), "--out", f"s3://{name}/Kc.zarr",
                     *flags]) == 0
    assert cli.main(["adapt", store, "--labels", str(tmp_path / "y.npy"), "--rank", "8", "--out",
                     f"s3://{name}/G.zarr", *flags]) == 0
    captured = capsys.readouterr()
    K = GramMatrix.compute(X, gamma=0.2, client=False, progress=False)
    np.testing.assert_allclose(GramMatrix.open(f"s3://{name}/Kc.zarr", storage_options=options).to_numpy(),
                               _centered(K, y).to_numpy(), rtol=0, atol=1e-10)
    assert GramMatrix.open(f"s3://{name}/G.zarr", storage_options=options).operators[-1]["name"] == \
        "alignment-adapted"
    assert SECRET not in captured.out + captured.err and KEY not in captured.out + captured.err
    for body in _objects(s3, name).values():
        assert SECRET.encode() not in body and KEY.encode() not in body


def test_a_derived_store_written_by_a_local_cluster_into_the_bucket_equals_the_in_memory_view(bucket, options):
    distributed = pytest.importorskip("distributed")

    name, _ = bucket
    X = _data(70)
    expected = _centered(GramMatrix.compute(X, chunk=32, client=False, progress=False), _labels(X)).to_numpy()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        K = GramMatrix.compute(X, chunk=32, store=f"s3://{name}/K.zarr", storage_options=options, client=client,
                               progress=False)
        stored = _centered(K, _labels(X)).to_zarr(f"s3://{name}/Kc.zarr", storage_options=options)
    np.testing.assert_allclose(stored.to_numpy(), expected, rtol=0, atol=1e-12)
