"""Gram stores at an s3:// URL, against a real S3 endpoint: moto's server on 127.0.0.1, read and written by s3fs."""

import os
import socket

import dask
import numpy as np
import pytest

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]')")
s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed")
boto3 = pytest.importorskip("boto3", reason="boto3 is not installed")

from dkernel.exceptions import (
    ArtifactPathError,
    CorruptModelError,
    CorruptStoreError,
    IncompleteStoreError,
    ModelFormatError,
    StoreMismatchError,
)
from dkernel.gram import GramMatrix, _remote

KEY, SECRET = "dkernel-test-key", "dkernel-test-secret-do-not-store"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port())
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint, request):
    name = "dk-" + request.node.name.replace("_", "-").lower()[:40].strip("-")
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                      region_name="us-east-1")
    s3.create_bucket(Bucket=name)
    return name, s3


@pytest.fixture
def options(endpoint):
    return {"key": KEY, "secret": SECRET, "endpoint_url": endpoint, "client_kwargs": {"region_name": "us-east-1"}}


def _data(n=90, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _objects(s3, name):
    return {o["Key"]: s3.get_object(Bucket=name, Key=o["Key"])["Body"].read()
            for o in s3.list_objects_v2(Bucket=name).get("Contents", [])}


def test_a_gram_written_by_a_local_cluster_into_the_bucket_equals_the_in_memory_gram(bucket, options):
    distributed = pytest.importorskip("distributed")
    name, s3 = bucket
    X = _data()
    expected = GramMatrix.compute(X, kernel="rbf", gamma=0.3, chunk=32, client=False, progress=False).to_numpy()
    url = f"s3://{name}/K.zarr"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        K = GramMatrix.compute(X, kernel="rbf", gamma=0.3, chunk=32, store=url, storage_options=options,
                               client=client, progress=False)
        assert K.n_blocks_computed == 6
        from_workers = K.dask.compute()
    # The workers' BLAS thread count may change the last bit of a value, as for a local store.
    np.testing.assert_allclose(K.to_numpy(), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(from_workers, K.to_numpy())
    opened = GramMatrix.open(url, storage_options=options)
    np.testing.assert_array_equal(opened.to_numpy(), K.to_numpy())
    np.testing.assert_array_equal(opened.rows(np.array([5, 70, 3])), K.to_numpy()[[5, 70, 3]])
    assert opened.verify() == []
    objects = _objects(s3, name)
    assert "K.zarr/dkernel.json" in objects
    for body in objects.values():  # the credentials are never written
        assert KEY.encode() not in body and SECRET.encode() not in body
    # A second run on the committed store of the same Gram evaluates nothing.
    again = GramMatrix.compute(X, kernel="rbf", gamma=0.3, chunk=32, store=url, storage_options=options,
                               client=False, progress=False)
    assert again.n_blocks_computed == 0


def test_a_corrupted_object_is_detected_and_never_read_as_values(bucket, options):
    name, s3 = bucket
    X = _data(60)
    url = f"s3://{name}/K.zarr"
    K = GramMatrix.compute(X, kernel="rbf", chunk=32, store=url, storage_options=options, client=False,
                           progress=False)
    expected = K.to_numpy()
    chunk = min(k for k in _objects(s3, name) if "/c/" in k)
    body = bytearray(s3.get_object(Bucket=name, Key=chunk)["Body"].read())
    body[8] ^= 0x40
    s3.put_object(Bucket=name, Key=chunk, Body=bytes(body))
    opened = GramMatrix.open(url, storage_options=options)
    with pytest.raises(CorruptStoreError, match="checksum"):
        opened.to_numpy()
    assert len(opened.verify()) == 1
    # A truncated object too.
    s3.put_object(Bucket=name, Key=chunk, Body=bytes(body[:10]))
    with pytest.raises(CorruptStoreError):
        GramMatrix.open(url, storage_options=options).to_numpy()
    unchecked = GramMatrix.compute(X, kernel="rbf", chunk=32, store=url, storage_options=options, client=False,
                                   progress=False, verify=False)
    assert unchecked.n_blocks_computed == 0  # verify=False trusts the committed blocks (reads stay checked)
    # The same computation repairs exactly that block.
    repaired = GramMatrix.compute(X, kernel="rbf", chunk=32, store=url, storage_options=options, client=False,
                                  progress=False)
    assert repaired.n_blocks_computed == 1 and len(repaired.blocks_repaired) == 1
    np.testing.assert_array_equal(GramMatrix.open(url, storage_options=options).to_numpy(), expected)
    np.testing.assert_array_equal(opened.to_numpy(), expected)  # a reader opened before the repair too


def test_overwrite_refuses_a_prefix_dkernel_did_not_write(bucket, options):
    name, s3 = bucket
    s3.put_object(Bucket=name, Key="K.zarr/data.csv", Body=b"1,2,3\n")
    for overwrite in (False, True):
        with pytest.raises(ArtifactPathError, match="did not write"):
            GramMatrix.compute(_data(20), store=f"s3://{name}/K.zarr", storage_options=options,
                               overwrite=overwrite, client=False, progress=False)
    assert set(_objects(s3, name)) == {"K.zarr/data.csv"}


def test_overwrite_commits_a_new_version_then_removes_the_old_one(bucket, options):
    name, s3 = bucket
    url = f"s3://{name}/K.zarr"
    first = GramMatrix.compute(_data(40), chunk=32, store=url, storage_options=options, client=False, progress=False)
    old_version = first._blocks.manifest["version"]
    with pytest.raises(StoreMismatchError, match="overwrite=True"):
        GramMatrix.compute(_data(40, seed=1), chunk=32, store=url, storage_options=options, client=False,
                           progress=False)
    X2 = _data(40, seed=1)
    GramMatrix.compute(X2, chunk=32, store=url, storage_options=options, overwrite=True, client=False,
                       progress=False)
    keys = set(_objects(s3, name))
    assert not any(old_version in k for k in keys)
    np.testing.assert_array_equal(GramMatrix.open(url, storage_options=options).to_numpy(),
                                  GramMatrix.compute(X2, chunk=32, client=False, progress=False).to_numpy())
    with pytest.raises(StoreMismatchError):  # the reader of the removed version gets an error, not new values
        first.to_numpy()


def test_an_interrupted_write_is_not_readable_and_resumes_from_verified_blocks(bucket, options, monkeypatch):
    name, s3 = bucket
    url = f"s3://{name}/K.zarr"
    X = _data(100)
    real = _remote._write_block_task
    calls = []

    def failing(*args):
        if len(calls) >= 4:
            raise RuntimeError("stopped")
        result = real(*args)
        calls.append(args[4:6])  # counted once its block and flag are written
        return result

    monkeypatch.setattr(_remote, "_write_block_task", failing)
    # One thread: no block is still being written in the background when the run stops and the bucket is listed.
    with dask.config.set(num_workers=1), pytest.raises(RuntimeError, match="stopped"):
        GramMatrix.compute(X, chunk=32, store=url, storage_options=options, client=False, progress=False)
    monkeypatch.setattr(_remote, "_write_block_task", real)
    with pytest.raises(IncompleteStoreError, match="interrupted"):  # nothing committed: no store to read
        GramMatrix.open(url, storage_options=options)
    # Damage one of the written blocks: it is evaluated again, the other written ones are kept.
    keys = _objects(s3, name)
    written = sorted(k.rsplit("/", 1)[1] for k in keys if "/dkernel-blocks/" in k)
    assert len(written) >= 4
    i, j = written[0].split(".")
    chunk = next(k for k in keys if k.endswith(f"/c/{i}/{j}"))
    s3.put_object(Bucket=name, Key=chunk, Body=b"\0" * 10)
    K = GramMatrix.compute(X, chunk=32, store=url, storage_options=options, client=False, progress=False)
    assert K.n_blocks_computed == 10 - len(written) + 1
    assert K.blocks_repaired == [(int(i), int(j))]
    np.testing.assert_array_equal(GramMatrix.open(url, storage_options=options).to_numpy(),
                                  GramMatrix.compute(X, chunk=32, client=False, progress=False).to_numpy())


def test_a_worker_killed_mid_write_leaves_a_store_that_the_run_finishes_intact(bucket, options, tmp_path):
    distributed = pytest.importorskip("distributed")
    name, _ = bucket
    url = f"s3://{name}/K.zarr"
    X = _data(100)
    marker = tmp_path / "kill-once"
    marker.touch()

    def kill_on_block_1_2(marker):
        # In each worker: block (1, 2) writes wrong values into its chunks, then its process is SIGKILLed
        # before the block's flag; the first attempt only (the marker is taken once).
        import os
        import signal

        from dkernel.gram import _remote

        real = _remote._write_block_task

        def task(X, Z, kernel, grid, i, j, dtype, version_url, storage_options):
            if (i, j) == (1, 2):
                try:
                    os.unlink(marker)
                except FileNotFoundError:
                    pass
                else:
                    array = _remote._open_array(version_url, storage_options, "r+")
                    array[grid.rows(i), grid.cols(j)] = -1.0
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(X, Z, kernel, grid, i, j, dtype, version_url, storage_options)

        _remote._write_block_task = task

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        client.run(kill_on_block_1_2, str(marker))
        K = GramMatrix.compute(X, chunk=32, store=url, storage_options=options, client=client, progress=False)
        killed = pids - set(client.run(os.getpid).values())
    assert not marker.exists() and len(killed) == 1  # one worker died mid-write, and the run went on
    opened = GramMatrix.open(url, storage_options=options)
    assert opened.verify() == []
    np.testing.assert_array_equal(opened.to_numpy(), K.to_numpy())
    np.testing.assert_allclose(opened.to_numpy(), GramMatrix.compute(X, chunk=32, client=False,
                                                                     progress=False).to_numpy(),
                               rtol=1e-13, atol=1e-15)


def test_an_svc_fit_from_the_bucket_store_is_the_in_memory_fit(bucket, options):
    from dkernel.svm import SVC

    name, _ = bucket
    X = _data(80)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    url = f"s3://{name}/K.zarr"
    K = GramMatrix.compute(X, gamma=0.2, chunk=32, store=url, storage_options=options, client=False,
                           progress=False).to_numpy()
    from_bucket = SVC(kernel="precomputed").fit(GramMatrix.open(url, storage_options=options), y)
    in_memory = SVC(kernel="precomputed").fit(K, y)
    np.testing.assert_array_equal(from_bucket.support_, in_memory.support_)
    np.testing.assert_array_equal(from_bucket.dual_coef_, in_memory.dual_coef_)
    np.testing.assert_array_equal(from_bucket.intercept_, in_memory.intercept_)
    np.testing.assert_array_equal(from_bucket.predict(K), in_memory.predict(K))


def test_two_runs_writing_other_grams_at_once_leave_one_of_them_whole(bucket, options):
    from concurrent.futures import ThreadPoolExecutor

    name, _ = bucket
    url = f"s3://{name}/K.zarr"
    datasets = [_data(70, seed=s) for s in (1, 2)]

    def write(X):
        return GramMatrix.compute(X, chunk=32, store=url, storage_options=options, overwrite=True, client=False,
                                  progress=False).to_numpy()

    with ThreadPoolExecutor(2) as pool:
        written = list(pool.map(write, datasets))
    opened = GramMatrix.open(url, storage_options=options)
    assert opened.verify() == []
    values = opened.to_numpy()
    assert any(np.array_equal(values, K) for K in written)
    for X, K in zip(datasets, written):  # each run returns its own Gram, whichever commit came last
        np.testing.assert_array_equal(K, GramMatrix.compute(X, chunk=32, client=False, progress=False).to_numpy())


def test_an_svc_with_a_bucket_store_fits_the_model_of_a_local_store_on_a_local_cluster(bucket, options, tmp_path):
    distributed = pytest.importorskip("distributed")
    from dkernel.svm import SVC

    name, s3 = bucket
    X = _data(80)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    local = SVC(gamma=0.2, store=tmp_path / "grams", client=False).fit(X, y)
    prefix = f"s3://{name}/grams"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = SVC(gamma=0.2, store=prefix, storage_options=options, client=client).fit(X, y)
    assert remote.store_path_.startswith(prefix + "/gram-") and remote.gram_dtype_ == "store"
    np.testing.assert_allclose(remote.decision_function(X), local.decision_function(X), rtol=0, atol=1e-10)
    # The store written is reused: given as the store itself, or opened and passed as a precomputed Gram.
    again = SVC(gamma=0.2, store=remote.store_path_, storage_options=options, client=False).fit(X, y)
    assert again.store_path_ == remote.store_path_
    np.testing.assert_allclose(again.decision_function(X), local.decision_function(X), rtol=0, atol=1e-10)
    K = GramMatrix.open(remote.store_path_, storage_options=options)
    precomputed = SVC(kernel="precomputed").fit(K, y)
    np.testing.assert_allclose(precomputed.decision_function(K.to_numpy()), local.decision_function(X), rtol=0,
                               atol=1e-10)
    for body in _objects(s3, name).values():
        assert SECRET.encode() not in body


@pytest.mark.parametrize("estimator", ["SVR", "NuSVR", "OneClassSVM"])
def test_the_single_problem_svms_fit_from_a_bucket_store_as_from_a_local_one(bucket, options, tmp_path, estimator):
    import dkernel.svm

    cls = getattr(dkernel.svm, estimator)
    name, _ = bucket
    X = _data(60)
    args = () if estimator == "OneClassSVM" else (X[:, 0] - X[:, 1],)
    local = cls(gamma=0.2, store=tmp_path / "grams", client=False).fit(X, *args)
    remote = cls(gamma=0.2, store=f"s3://{name}/grams", storage_options=options, client=False).fit(X, *args)
    assert remote.gram_dtype_ == "store"
    np.testing.assert_allclose(remote.decision_function(X) if estimator == "OneClassSVM" else remote.predict(X),
                               local.decision_function(X) if estimator == "OneClassSVM" else local.predict(X),
                               rtol=0, atol=1e-10)


def _fitted_svc(X):
    from dkernel.svm import SVC

    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    return SVC(gamma=0.2, client=False).fit(X, y)


def test_a_model_saved_at_a_url_loads_back_and_keeps_no_credentials(bucket, options):
    import dkernel
    from dkernel.svm import SVC, SVR

    name, s3 = bucket
    X = _data(60)
    model = _fitted_svc(X)
    url = f"s3://{name}/models/svc"
    assert model.save(url, storage_options=options) == url
    keys = set(_objects(s3, name))
    assert "models/svc/dkernel.json" in keys and all(k.startswith("models/svc/v-") for k in keys - {
        "models/svc/dkernel.json"})
    for loaded in (SVC.load(url, storage_options=options), dkernel.load_model(url, storage_options=options)):
        assert type(loaded) is SVC
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    for body in _objects(s3, name).values():
        assert KEY.encode() not in body and SECRET.encode() not in body
    with pytest.raises(ModelFormatError, match=url):
        SVR.load(url, storage_options=options)
    with pytest.raises(ArtifactPathError, match="overwrite=True"):
        model.save(url, storage_options=options)
    old = {k for k in keys if "/v-" in k}
    refit = _fitted_svc(_data(60, seed=3))
    refit.save(url, overwrite=True, storage_options=options)
    assert not old & set(_objects(s3, name))  # the replaced version is removed once the new one is committed
    np.testing.assert_array_equal(dkernel.load_model(url, storage_options=options).decision_function(X),
                                  refit.decision_function(X))
    with pytest.raises(FileNotFoundError):
        dkernel.load_model(f"s3://{name}/models/none", storage_options=options)


def test_a_corrupted_model_object_is_detected_at_load(bucket, options):
    import dkernel

    name, s3 = bucket
    url = f"s3://{name}/svc"
    _fitted_svc(_data(60)).save(url, storage_options=options)
    objects = _objects(s3, name)
    chunk = next(k for k in sorted(objects) if "/support_vectors/c/" in k)
    body = bytearray(objects[chunk])
    body[-1] ^= 0x01
    s3.put_object(Bucket=name, Key=chunk, Body=bytes(body))
    with pytest.raises(CorruptModelError, match="does not match its checksum") as caught:
        dkernel.load_model(url, storage_options=options)
    assert url in str(caught.value)
    s3.delete_object(Bucket=name, Key=chunk)
    with pytest.raises(CorruptModelError, match="missing"):
        dkernel.load_model(url, storage_options=options)


def test_saving_a_model_refuses_a_foreign_prefix_and_a_gram_store(bucket, options):
    import dkernel

    name, s3 = bucket
    model = _fitted_svc(_data(40))
    s3.put_object(Bucket=name, Key="mine/notes.txt", Body=b"keep me")
    for overwrite in (False, True):
        with pytest.raises(ArtifactPathError, match="did not write"):
            model.save(f"s3://{name}/mine", overwrite=overwrite, storage_options=options)
    assert set(_objects(s3, name)) == {"mine/notes.txt"}
    gram = f"s3://{name}/K.zarr"
    GramMatrix.compute(_data(40), chunk=32, store=gram, storage_options=options, client=False, progress=False)
    before = _objects(s3, name)
    with pytest.raises(ArtifactPathError, match="not the manifest of a dkernel model"):
        model.save(gram, overwrite=True, storage_options=options)
    assert _objects(s3, name) == before
    with pytest.raises(CorruptModelError, match="Gram store"):
        dkernel.load_model(gram, storage_options=options)
    model.save(f"s3://{name}/model", storage_options=options)
    with pytest.raises(ArtifactPathError, match="not the manifest of a dkernel Gram store"):
        GramMatrix.compute(_data(40), chunk=32, store=f"s3://{name}/model", storage_options=options,
                           overwrite=True, client=False, progress=False)


def _cli_options(options):
    return ["--storage-option", f"endpoint_url={options['endpoint_url']}", "--storage-option", f"key={KEY}",
            "--storage-option", f"secret={SECRET}", "--storage-option",
            'client_kwargs={"region_name": "us-east-1"}']


def test_the_cli_writes_a_gram_to_the_bucket_fits_from_it_and_predicts_with_a_model_there(
        bucket, options, tmp_path, capsys):
    from dkernel import cli
    from dkernel.svm import SVC

    name, s3 = bucket
    X = _data(80)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    store, model = f"s3://{name}/K.zarr", f"s3://{name}/model"
    flags = _cli_options(options)
    assert cli.main(["gram", "--input", str(tmp_path / "X.npy"), "--gamma", "0.2", "--out", store,
                     "--no-progress", *flags]) == 0
    assert cli.main(["info", store, *flags]) == 0
    assert cli.main(["verify", store, "--no-progress", *flags]) == 0
    assert cli.main(["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--gamma",
                     "0.2", "--store", store, "--model", model, "--quiet", *flags]) == 0
    assert cli.main(["predict", "--model", model, "--data", str(tmp_path / "X.npy"), "--labels",
                     str(tmp_path / "y.npy"), "--decision", str(tmp_path / "f.npy"), *flags]) == 0
    assert cli.main(["align", store, "--labels", str(tmp_path / "y.npy"), *flags]) == 0
    captured = capsys.readouterr()
    assert f"Gram store {store}" in captured.out and f"model saved to {model}" in captured.out
    expected = SVC(gamma=0.2).fit(X, y).decision_function(X)
    np.testing.assert_allclose(np.load(tmp_path / "f.npy"), expected, rtol=0, atol=1e-10)
    # The secret is never printed, nor written into the bucket (store metadata, model) or the local outputs.
    assert SECRET not in captured.out + captured.err and KEY not in captured.out + captured.err
    for body in _objects(s3, name).values():
        assert SECRET.encode() not in body and KEY.encode() not in body
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes()
    # A refused model URL and a failing read name the flag or URL, never the secret.
    assert cli.main(["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--gamma",
                     "0.2", "--model", model, "--quiet", *flags]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and model in err and SECRET not in err


@pytest.mark.parametrize("bad", ["secretvalue", "=secretvalue", "a b=secretvalue", "client_kwargs={secretvalue"])
def test_a_malformed_storage_option_is_a_cli_error_naming_the_flag_without_its_value(tmp_path, capsys, bad):
    from dkernel import cli

    np.save(tmp_path / "X.npy", _data(10))
    assert cli.main(["gram", "--input", str(tmp_path / "X.npy"), "--out", "s3://bucket/K.zarr",
                     "--storage-option", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dkernel: error: --storage-option") and "secretvalue" not in err
    assert not (tmp_path / "K.zarr").exists()


@pytest.mark.parametrize("estimator", ["ConformalSVC", "GeneralizedBiasSVC"])
def test_the_two_pass_and_generalized_bias_svcs_fit_from_a_bucket_store_as_from_a_local_one(
        bucket, options, tmp_path, estimator):
    import dkernel.svm

    cls = getattr(dkernel.svm, estimator)
    name, s3 = bucket
    X = _data(60)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    local = cls(gamma=0.2, store=tmp_path / "grams", client=False).fit(X, y)
    remote = cls(gamma=0.2, store=f"s3://{name}/grams", storage_options=options, client=False).fit(X, y)
    assert any(k.endswith("/dkernel.json") for k in _objects(s3, name))
    np.testing.assert_allclose(remote.decision_function(X), local.decision_function(X), rtol=0, atol=1e-10)
    remote.save(f"s3://{name}/{estimator}", storage_options=options)
    loaded = dkernel.svm.load_model(f"s3://{name}/{estimator}", storage_options=options)
    assert loaded.get_params()["storage_options"] is None  # never saved with the model
    np.testing.assert_array_equal(loaded.decision_function(X), remote.decision_function(X))


def test_a_parzen_learner_model_saved_by_the_cli_at_a_url_predicts_as_the_library(bucket, options, tmp_path,
                                                                                   capsys):
    from dkernel import cli
    from dkernel.kernels import get_kernel
    from dkernel.svm._learner_models import fit_learner

    name, _ = bucket
    X = _data(50)
    y = (X[:, 0] > 0).astype(int)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    model = f"s3://{name}/parzen"
    flags = _cli_options(options)
    assert cli.main(["fit", "--learner", "parzen", "--data", str(tmp_path / "X.npy"), "--labels",
                     str(tmp_path / "y.npy"), "--gamma", "0.2", "--model", model, *flags]) == 0
    assert cli.main(["predict", "--model", model, "--data", str(tmp_path / "X.npy"), "--out",
                     str(tmp_path / "p.npy"), *flags]) == 0
    expected = fit_learner("parzen", X, y, get_kernel("rbf", gamma=0.2)).predict(X)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), expected)
    assert SECRET not in "".join(capsys.readouterr())
