"""The checksums of what dkernel writes (:mod:`dkernel._runtime.integrity`): the on-disk formats' values, unchanged.

Model files, solver checkpoints (their manifests at a URL too) and pipeline task records record CRC-32C values
that a later dkernel must still verify. The golden values below were computed by the implementations each format
had before the one module replaced them; a change of any of them breaks every file written before.
"""

import json

import numpy as np
import pytest

import dkernel
from dkernel._runtime.integrity import array_crc32c, bytes_crc32c, json_crc32c
from dkernel.exceptions import CorruptModelError
from pipelines._resume import TaskRecords

# --------------------------------------------------------------------------- format stability


def _arrays():
    grid = np.arange(20, dtype=np.float64).reshape(4, 5) / 8
    return {
        "float64": np.array([[0.5, -1.25, 3.0], [1e-300, np.pi, -0.0]]),
        "float32": np.array([1.5, -2.25, 3.0e7, 0.1], dtype=np.float32),
        "int32": np.arange(-3, 9, dtype=np.int32).reshape(3, 4),
        "big_endian": np.array([1.0, 2.5, -3.75, 1e10], dtype=">f8"),
        "slice": grid[::2, 1::2],
        "fortran": np.asfortranarray(grid),
        "empty": np.empty(0, dtype=np.int64),
    }


#: The on-disk format's values: the ``crc32c`` of each array that model files and checkpoints record.
ARRAY_CRC32C = {
    "float64": 1329069170,
    "float32": 186941490,
    "int32": 1676348379,
    "big_endian": 4167456321,
    "slice": 1761363840,
    "fortran": 3780795621,
    "empty": 0,
}

#: A model's attributes (unicode strings, its own checksum present: left out of its checksum).
MODEL_ATTRS = {
    "format": "dkernel-svc", "version": 2, "params": {"C": 1.0, "gamma": 0.5, "kernel": "rbf", "tol": None},
    "classes": ["\u00e9t\u00e9", "\u65e5\u672c", "a", True], "feature_names_in": ["x\u2081", "\U0001f600"],
    "checksums": {"algorithm": "crc32c", "parts": {}, "metadata": 12345,
                  "arrays": {"dual_coef": {"shape": [1, 3], "dtype": "<f8", "crc32c": 3735928559}}},
}
#: A checkpoint manifest at a URL: its own checksum ``metadata`` at the top level.
MANIFEST = {
    "format": "dkernel-checkpoint-versioned", "version": "v-" + "0" * 32, "checkpoint_version": 2,
    "problem": {"C": [1.0, 2.5], "label": "\u00fcber", "kernel": {"name": "rbf", "gamma": 0.1}},
    "iteration": 7, "gap": None, "stop_reason": "tol", "crc": 42, "metadata": 999,
}
#: A pipeline task record: its own checksum ``crc32c`` at the top level.
TASK_RECORD = {
    "task": '{"dataset": "caf\u00e9", "seed": 3}',
    "records": [{"accuracy": 0.9, "name": "na\u00efve \u03b1", "nested": {"b": 1, "a": [1, 2.5, None, True]}}],
    "crc32c": 1,
}


@pytest.mark.parametrize("name", sorted(ARRAY_CRC32C))
def test_array_checksums_are_the_on_disk_formats(name):
    value = _arrays()[name]
    assert array_crc32c(value) == ARRAY_CRC32C[name]
    assert array_crc32c(value) == array_crc32c(np.array(value, order="C", dtype=value.dtype.newbyteorder("<")))


def test_json_checksums_are_the_on_disk_formats():
    # The on-disk format's values: a model's / checkpoint's checksums.metadata, a checkpoint manifest's metadata,
    # a pipeline task record's crc32c, a Gram store's attribute checksum of its format name.
    assert json_crc32c(MODEL_ATTRS, leave_out="metadata", within="checksums") == 3189828665
    assert json_crc32c(MANIFEST, leave_out="metadata") == 916070760
    assert json_crc32c(TASK_RECORD, leave_out="crc32c") == 3034532119
    assert json_crc32c("dkernel-model") == 1551025135
    # A record's own checksum never counts, and the record is left as it was.
    assert json_crc32c({**TASK_RECORD, "crc32c": 7}, leave_out="crc32c") == 3034532119
    assert json_crc32c({k: v for k, v in TASK_RECORD.items() if k != "crc32c"}) == 3034532119
    assert MODEL_ATTRS["checksums"]["metadata"] == 12345 and TASK_RECORD["crc32c"] == 1


def test_byte_checksums_are_the_on_disk_formats():
    # The on-disk format's values: the CRC-32C of an object of a model or checkpoint at a URL.
    assert bytes_crc32c(b"dkernel") == 1722110445
    assert bytes_crc32c(b"") == 0
    assert bytes_crc32c(memoryview(b"dkernel")) == bytes_crc32c(bytearray(b"dkernel")) == 1722110445


# --------------------------------------------------------------------------- round trips


def test_a_saved_model_verifies_and_a_changed_byte_of_its_metadata_is_detected(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = dkernel.SVC(C=1.0, gamma=0.5).fit(X, y)
    path = tmp_path / "model"
    model.save(path)
    meta = path / "zarr.json"
    attrs = json.loads(meta.read_text())["attributes"]
    assert attrs["checksums"]["metadata"] == json_crc32c(attrs, leave_out="metadata", within="checksums")
    np.testing.assert_array_equal(dkernel.SVC.load(path).predict(X), model.predict(X))

    raw = meta.read_bytes()
    assert raw.count(b'"rbf"') >= 1
    meta.write_bytes(raw.replace(b'"rbf"', b'"rbg"', 1))  # one byte changed, still valid JSON
    with pytest.raises(CorruptModelError, match="do not match their checksum"):
        dkernel.SVC.load(path)


def test_a_saved_task_record_verifies_and_a_changed_one_does_not(tmp_path):
    saved = TaskRecords(tmp_path / "results", "toy")
    task = {"dataset": "caf\u00e9", "repeat": 1}
    records = [{"accuracy": np.float64(0.75), "n": np.int64(3), "label": "na\u00efve"}]
    assert saved.save(task, records) == [{"accuracy": 0.75, "n": 3, "label": "na\u00efve"}]
    assert saved.inspect(task) == ([{"accuracy": 0.75, "n": 3, "label": "na\u00efve"}], None)
    body = json.loads(saved.path(task).read_text())
    assert body["crc32c"] == json_crc32c(body, leave_out="crc32c")

    body["records"][0]["accuracy"] = 0.76
    saved.path(task).write_text(json.dumps(body))
    records, problem = saved.inspect(task)
    assert records is None and "checksum does not match" in problem
