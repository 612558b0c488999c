"""Damaged metadata, user files, symbolic links and a full disk: the Gram store stays trustworthy.

* One flipped bit in any key (name or value) of a store's root ``zarr.json``
  or of its arrays' ``zarr.json`` never turns integrity off and never gives
  wrong values or a raw traceback: the read is refused with
  :class:`CorruptStoreError` naming the key, and the same computation run
  again repairs the store, or says it cannot (and ``overwrite`` replaces it).
* ``--overwrite`` never deletes a file a user put inside a store or model
  folder: the replacement is refused, naming the file.
* A symbolic link at the output path is written through: the link stays, its
  target is replaced, nothing is left beside either.
* A disk that fills up during ``dkernel center --out ... --overwrite`` gives
  the "no space left" error naming the path, removes the temporary folder
  once every task stopped, and leaves the old store intact (a tmpfs of 8 MB
  mounted by the test).
* ``fit --store`` on a store of another kernel gives advice that works on
  the command line used.

Values are compared with the RBF kernel and Meilă's centering in numpy.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from dkernel._runtime import artifacts
from dkernel.centering import Centering
from dkernel.cli import main
from dkernel.exceptions import ArtifactPathError, CorruptStoreError, DKernelError, UnverifiedStoreWarning
from dkernel.gram import GramMatrix
from dkernel.svm import SVC, load_model
from dkernel.views import CenteredGram

GAMMA, CHUNK = 0.4, 8
PARAMS = {"kernel": "rbf", "gamma": GAMMA, "chunk": CHUNK, "progress": False}


def rbf(X, gamma=GAMMA):
    sq = (X**2).sum(1)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))


def centered(K):
    gamma = np.full(len(K), 1.0 / len(K))
    h = K @ gamma
    return K - h[:, None] - h[None, :] + gamma @ K @ gamma


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(20, 3))


@pytest.fixture(scope="module")
def clean(X, tmp_path_factory):
    path = tmp_path_factory.mktemp("clean") / "K.zarr"
    GramMatrix.compute(X, store=path, **PARAMS)
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def debris(parent):
    return sorted(p.name for p in Path(parent).iterdir() if ".dkernel-" in p.name)


# --------------------------------------------------------------------------- #
# One flipped bit in the metadata
# --------------------------------------------------------------------------- #


def _keys(document, prefix=()):
    for key, value in document.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from _keys(value, prefix + (key,))


def flipped(raw, keys, part):
    """``raw`` (a zarr.json) with one bit flipped in the name (``part="name"``) or the value of ``keys``; or None."""
    document = json.loads(raw)
    marker = "\0flip\0"
    holder = document
    for key in keys[:-1]:
        holder = holder[key]
    holder[marker] = holder.pop(keys[-1])
    text = json.dumps(document, indent=2)
    at = text.index(json.dumps(marker))
    text = text.replace(json.dumps(marker), json.dumps(keys[-1]), 1)
    if part == "name":
        position = at + 1
    else:
        start = at + len(json.dumps(keys[-1])) + 2
        first = next((k for k, c in enumerate(text[start:]) if c.isalnum()), None)
        if first is None or text[start] in "{[" and keys[-1] not in ("shape", "chunks", "n_blocks"):
            return None  # an empty value, or a table whose own keys are flipped one by one
        position = start + first
    data = bytearray(text.encode())
    data[position] ^= 1
    return bytes(data)


def flip_cases(clean, name):
    raw = (clean / name).read_bytes()
    for keys in _keys(json.loads(raw)):
        for part in ("name", "value"):
            data = flipped(raw, keys, part)
            if data is not None:
                yield "/".join(keys), part, data


#: Attributes that only describe the last run or its writer: a flip there changes nothing read.
INFORMATIONAL = ("last_run/", "writer/", "blocks_done")


@pytest.mark.parametrize("name", ["zarr.json", "K/zarr.json", "done/zarr.json", "diag/zarr.json",
                                  "checksums/zarr.json", "diag_checksums/zarr.json"])
def test_one_flipped_bit_in_any_metadata_key_is_refused_and_repaired(name, X, clean, tmp_path):
    truth = rbf(X)
    cases = list(flip_cases(clean, name))
    assert len(cases) >= 20
    for keys, part, data in cases:
        path = tmp_path / f"{keys.replace('/', '.')}-{part}.zarr"
        shutil.copytree(clean, path)
        (path / name).write_bytes(data)
        where = f"{name}: {keys} ({part})"
        try:
            stored = GramMatrix.open(path)
            values = stored.to_numpy()
        except CorruptStoreError as exc:
            assert exc.path == str(path) and exc.blocks == [], where
            assert any(word in str(exc) for word in (keys.split("/")[-1], keys.split("/")[0], "zarr.json")), where
        else:  # read: only where the flip changed nothing that is read, and then correct and verified
            assert keys.removeprefix("attributes/").startswith(INFORMATIONAL), where
            np.testing.assert_allclose(values, truth, atol=1e-12, err_msg=where)
            assert stored.verify() == [], where
        # The same computation again repairs the store, or says it cannot and overwrite replaces it.
        try:
            repaired = GramMatrix.compute(X, store=path, **PARAMS)
        except CorruptStoreError as exc:
            assert "cannot be repaired" in str(exc) and "overwrite" in str(exc), where
            repaired = GramMatrix.compute(X, store=path, overwrite=True, **PARAMS)
        assert repaired.complete, where
        reopened = GramMatrix.open(path)
        assert reopened.verify() == [], where
        np.testing.assert_allclose(reopened.to_numpy(), truth, atol=1e-12, err_msg=where)
        shutil.rmtree(path)


def test_a_flipped_checksum_algorithm_never_turns_integrity_off(X, clean, tmp_path, capsys):
    path = tmp_path / "K.zarr"
    shutil.copytree(clean, path)
    meta = json.loads((path / "zarr.json").read_text())
    meta["attributes"]["checksums"]["algorithm"] = "crc32b"  # 'c' -> 'b': one bit
    (path / "zarr.json").write_text(json.dumps(meta, indent=2))
    with open(path / "K" / "c" / "0" / "1", "r+b") as fh:  # and a damaged value that checksums would catch
        fh.seek(8 * 3)
        fh.write(np.float64(7.0).tobytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedStoreWarning)  # never read "without checksums"
        with pytest.raises(CorruptStoreError, match="attribute 'checksums'"):
            GramMatrix.open(path)
    np.save(tmp_path / "y.npy", np.where(X[:, 0] > 0, 1, -1))
    code, _, err = run(["align", path, "--labels", tmp_path / "y.npy"], capsys)
    assert code == 2 and "attribute 'checksums'" in err and "Traceback" not in err and err.count("\n") == 1
    code, out, _ = run(["verify", path, "--no-progress"], capsys)
    assert code == 1 and "DAMAGED metadata" in out and "attribute 'checksums'" in out
    np.save(tmp_path / "X.npy", X)
    repair = ["gram", "--input", tmp_path / "X.npy", "--kernel", "rbf", "--gamma", GAMMA, "--chunk", CHUNK,
              "--out", path, "--no-progress"]
    code, out, err = run(repair, capsys)
    assert code == 0, err
    assert "1 damaged block(s) repaired: (0, 1)" in out
    assert run(["verify", path, "--no-progress"], capsys)[:2] == (0, f"dkernel: {path}: all 9 blocks intact\n")
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X), atol=1e-12)


def test_metadata_damage_gives_its_own_exit_status_and_no_traceback(X, clean, tmp_path, capsys):
    path = tmp_path / "K.zarr"
    for damage in ("kernel", "shape", "json"):
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(clean, path)
        meta = json.loads((path / "zarr.json").read_text())
        if damage == "json":
            (path / "zarr.json").write_bytes(b"\xff" + (path / "zarr.json").read_bytes()[1:])
        else:
            del meta["attributes"][damage]  # a raw KeyError before
            (path / "zarr.json").write_text(json.dumps(meta))
        for command in (["info", path], ["align", path, "--labels", tmp_path / "y.npy"]):
            np.save(tmp_path / "y.npy", np.ones(20))
            code, _, err = run(command, capsys)
            assert code == 2 and err.startswith("dkernel: error: the Gram store") and "Traceback" not in err
        code, out, err = run(["verify", path, "--no-progress"], capsys)
        assert code == 1 and "DAMAGED metadata" in out and err == ""


@pytest.mark.parametrize("damage, words", [
    (lambda raw: b"\xff" + raw[1:], "zarr.json is not UTF-8 text (byte 0xff at offset 0)"),
    (lambda raw: raw[: len(raw) // 2], "zarr.json is not complete JSON, truncated or altered"),
], ids=["not-utf-8", "truncated"])
def test_an_unreadable_root_metadata_file_is_told_in_words_and_the_advice_works(X, clean, tmp_path, capsys, damage,
                                                                                words):
    """No message of Python's decoders; the advice is the replacement (a root that cannot be read is not repaired)."""
    path = tmp_path / "K.zarr"
    shutil.copytree(clean, path)
    (path / "zarr.json").write_bytes(damage((path / "zarr.json").read_bytes()))
    python_words = ("codec", "utf-8", "UnicodeDecodeError", "JSONDecodeError", "Expecting", "Unterminated")
    with pytest.raises(CorruptStoreError) as info:
        GramMatrix.open(path)
    assert words in str(info.value) and not any(w in str(info.value) for w in python_words)
    np.save(tmp_path / "y.npy", np.ones(20))
    for command in (["info", path], ["align", path, "--labels", tmp_path / "y.npy"]):
        code, out, err = run(command, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err
        assert not any(w in err for w in python_words), err
        assert "cannot be repaired in place" in err and "--overwrite" in err and f"--out {path}" in err, err
    code, out, _ = run(["verify", path, "--no-progress"], capsys)
    assert code == 1 and "DAMAGED metadata" in out and words in out and "--overwrite" in out
    # Following the advice: the gram command with --out and --overwrite replaces the store.
    np.save(tmp_path / "X.npy", X)
    gram = ["gram", "--input", tmp_path / "X.npy", "--gamma", GAMMA, "--chunk", CHUNK, "--out", path, "--no-progress"]
    code, _, err = run(gram, capsys)
    assert code == 2 and "cannot be repaired in place" in err  # as the advice said: not without --overwrite
    code, _, err = run([*gram, "--overwrite"], capsys)
    assert code == 0, err
    assert run(["verify", path, "--no-progress"], capsys)[:2] == (0, f"dkernel: {path}: all 9 blocks intact\n")
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X), atol=1e-12)
    assert debris(tmp_path) == []


def test_a_path_that_holds_no_readable_store_says_what_it_holds(X, clean, tmp_path, capsys):
    """A wholly damaged zarr.json (nothing in it tells a Gram store), a model, a file, a folder of the user."""
    garbage = tmp_path / "garbage.zarr"
    shutil.copytree(clean, garbage)
    (garbage / "zarr.json").write_bytes(b"\xff\xfe\x00garbage")
    SVC(kernel="rbf", gamma=0.3).fit(X, np.where(X[:, 0] > 0, 1, -1)).save(tmp_path / "model.zarr")
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "a.csv").write_text("1,2\n")
    cases = {garbage: "is not a dkernel Gram store that can be read: its zarr.json is not UTF-8 text",
             tmp_path / "model.zarr": "holds a dkernel model of an SVC, not a dkernel Gram store",
             tmp_path / "notes.txt": "is a file, not a dkernel Gram store",
             tmp_path / "mine": "is not a dkernel Gram store (it has no zarr.json)"}
    errors = {}
    for path, words in cases.items():
        with pytest.raises(DKernelError, match=re.escape(f"{path} {words}")):
            GramMatrix.open(path)
        code, out, errors[path] = run(["info", path], capsys)
        assert code == 2 and out == "" and errors[path].startswith(f"dkernel: error: {path} {words}"), errors[path]
        assert errors[path].count("\n") == 1, errors[path]
        assert not any(w in errors[path] for w in ("codec", "attributes)", "Traceback")), errors[path]
    # The advice for the wholly damaged store: another path works, and the damaged folder is left as it was.
    assert "cannot be repaired: compute the Gram again at another path" in errors[garbage]
    before = (garbage / "zarr.json").read_bytes()
    GramMatrix.compute(X, store=tmp_path / "again.zarr", **PARAMS)
    assert (garbage / "zarr.json").read_bytes() == before
    # --overwrite cannot tell it from another program's zarr store: refused in words, the folder left as it was.
    np.save(tmp_path / "X.npy", X)
    code, _, err = run(["gram", "--input", tmp_path / "X.npy", "--out", garbage, "--overwrite", "--no-progress"],
                       capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "root zarr.json does not say what wrote it" in err and "remove the folder yourself" in err, err
    assert (garbage / "zarr.json").read_bytes() == before and (garbage / "K").is_dir()


# --------------------------------------------------------------------------- #
# Files of the user inside a store or a model
# --------------------------------------------------------------------------- #


def add_user_files(folder):
    (folder / "NOTES.txt").write_text("my notes")
    (folder / "my_results").mkdir()
    (folder / "my_results" / "r.csv").write_text("a,b\n1,2\n")


def assert_user_files(folder):
    assert (folder / "NOTES.txt").read_text() == "my notes"
    assert (folder / "my_results" / "r.csv").read_text() == "a,b\n1,2\n"


def test_gram_overwrite_never_deletes_user_files_inside_a_store(X, clean, tmp_path, capsys):
    np.save(tmp_path / "X.npy", X)
    path = tmp_path / "f.zarr"
    shutil.copytree(clean, path)
    add_user_files(path)
    argv = ["gram", "--input", tmp_path / "X.npy", "--gamma", "0.9", "--chunk", CHUNK, "--out", path,
            "--no-progress", "--overwrite"]
    code, _, err = run(argv, capsys)
    assert code == 2 and "NOTES.txt" in err and "my_results/r.csv" in err and "not replaced" in err
    assert_user_files(path)
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X), atol=1e-12)
    assert debris(tmp_path) == []
    # The same kernel resumes the store in place: nothing is replaced, the files stay.
    argv[argv.index("0.9")] = str(GAMMA)
    assert run(argv, capsys)[0] == 0
    assert_user_files(path)


def test_center_and_fit_overwrite_never_delete_user_files(X, clean, tmp_path, capsys):
    y = np.where(X[:, 0] > 0, 1, -1)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    derived = tmp_path / "Kc.zarr"
    assert run(["center", clean, "--scheme", "standard", "--out", derived], capsys)[0] == 0
    add_user_files(derived)
    code, _, err = run(["center", clean, "--labels", tmp_path / "y.npy", "--out", derived, "--overwrite"], capsys)
    assert code == 2 and "NOTES.txt" in err and "my_results/r.csv" in err
    assert_user_files(derived)
    np.testing.assert_allclose(GramMatrix.open(derived).to_numpy(), centered(rbf(X)), atol=1e-10)
    model = tmp_path / "model.zarr"
    old = SVC(kernel="rbf", gamma=0.3).fit(X, y)
    old.save(model)
    add_user_files(model)
    code, _, err = run(["fit", "--data", tmp_path / "X.npy", "--labels", tmp_path / "y.npy", "--model", model,
                        "--overwrite", "--quiet"], capsys)
    assert code == 2 and "NOTES.txt" in err and "my_results/r.csv" in err
    with pytest.raises(ArtifactPathError, match="NOTES.txt"):
        SVC(kernel="rbf", gamma=0.5).fit(X, y).save(model, overwrite=True)
    assert_user_files(model)
    np.testing.assert_allclose(load_model(model).decision_function(X), old.decision_function(X))
    with pytest.raises(ArtifactPathError, match="not deleted"):
        artifacts.remove_own(model, "model")
    assert_user_files(model)


# --------------------------------------------------------------------------- #
# Symbolic links
# --------------------------------------------------------------------------- #


def test_overwrite_through_a_symbolic_link_replaces_its_target_and_keeps_the_link(X, clean, tmp_path, capsys):
    np.save(tmp_path / "X.npy", X)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copytree(clean, elsewhere / "real.zarr")
    link = tmp_path / "linkK.zarr"
    link.symlink_to(elsewhere / "real.zarr")
    argv = ["gram", "--input", tmp_path / "X.npy", "--gamma", "0.9", "--chunk", CHUNK, "--out", link,
            "--no-progress", "--overwrite"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert str(link) in out
    assert link.is_symlink() and os.readlink(link) == str(elsewhere / "real.zarr")
    np.testing.assert_allclose(GramMatrix.open(elsewhere / "real.zarr").to_numpy(), rbf(X, 0.9), atol=1e-12)
    assert debris(tmp_path) == [] and debris(elsewhere) == []
    # A derived store written in place through the link, and a model saved through one.
    code, _, err = run(["center", link, "--scheme", "standard", "--out", link, "--overwrite"], capsys)
    assert code == 0, err
    assert link.is_symlink()
    np.testing.assert_allclose(GramMatrix.open(link).to_numpy(), centered(rbf(X, 0.9)), atol=1e-10)
    assert debris(tmp_path) == [] and debris(elsewhere) == []
    with pytest.raises(ArtifactPathError, match="symbolic link"):
        artifacts.remove_own(link, "gram")
    assert link.is_symlink()
    y = np.where(X[:, 0] > 0, 1, -1)
    model_link = tmp_path / "model.zarr"
    model_link.symlink_to(elsewhere / "model.zarr")
    SVC(kernel="rbf", gamma=0.3).fit(X, y).save(model_link)
    new = SVC(kernel="rbf", gamma=0.6).fit(X, y)
    new.save(model_link, overwrite=True)
    assert model_link.is_symlink()
    np.testing.assert_allclose(load_model(elsewhere / "model.zarr").decision_function(X), new.decision_function(X))
    assert debris(tmp_path) == [] and debris(elsewhere) == []


def test_a_new_store_is_written_through_a_link_to_a_free_path(X, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "K.zarr"
    link.symlink_to(tmp_path / "elsewhere" / "K.zarr")
    GramMatrix.compute(X, store=link, **PARAMS)
    assert link.is_symlink() and (tmp_path / "elsewhere" / "K.zarr" / "zarr.json").is_file()
    np.testing.assert_allclose(GramMatrix.open(link).to_numpy(), rbf(X), atol=1e-12)


# --------------------------------------------------------------------------- #
# A full disk
# --------------------------------------------------------------------------- #


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 8 MB mounted at ``tmp_path / "disk"`` by the test (skipped where mounting is not permitted)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_during_center_overwrite_says_so_and_keeps_the_old_store(tmp_path, small_disk):
    X = np.random.default_rng(1).normal(size=(600, 4))
    base = tmp_path / "K.zarr"
    GramMatrix.compute(X, store=base, kernel="rbf", gamma=0.1, chunk=100, progress=False)
    out = small_disk / "Kc.zarr"
    script = (f"import sys; from dkernel.cli import main; sys.exit(main(['center', {str(base)!r}, '--scheme', "
              f"'standard', '--out', {str(out)!r}, '--overwrite']))")
    assert subprocess.run([sys.executable, "-c", script], capture_output=True).returncode == 0
    old = GramMatrix.open(out).to_numpy()
    free = shutil.disk_usage(small_disk).free
    (small_disk / "filler").write_bytes(b"\0" * (free - 1_500_000))  # room for about half a new store
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("dkernel: error: ") and "Traceback" not in done.stderr
    assert "no space left" in done.stderr.lower() and str(out) in done.stderr
    assert "Directory not empty" not in done.stderr
    time.sleep(0.5)  # nothing written after the command returned
    assert debris(small_disk) == []
    reopened = GramMatrix.open(out)
    assert reopened.verify() == []
    np.testing.assert_allclose(reopened.to_numpy(), old, atol=0)
    np.testing.assert_allclose(old, centered(rbf(X, 0.1)), atol=1e-10)


def test_a_full_disk_during_gram_names_the_store_and_the_run_resumes(tmp_path, small_disk):
    X = np.random.default_rng(1).normal(size=(900, 4))  # 6.5 MB of Gram
    (small_disk / "filler").write_bytes(b"\0" * 4_000_000)
    out = small_disk / "K.zarr"
    with pytest.raises(OSError, match="(?i)no space left") as info:
        GramMatrix.compute(X, store=out, kernel="rbf", gamma=0.1, chunk=150, progress=False)
    assert str(out) in str(info.value) and "/proc/" not in str(info.value)
    (small_disk / "filler").unlink()
    resumed = GramMatrix.compute(X, store=out, kernel="rbf", gamma=0.1, chunk=150, progress=False)
    assert resumed.complete and resumed.verify() == []
    np.testing.assert_allclose(resumed.to_numpy(), rbf(X, 0.1), atol=1e-12)


# --------------------------------------------------------------------------- #
# Advice that works
# --------------------------------------------------------------------------- #


def test_fit_store_of_another_kernel_gives_advice_that_works(X, clean, tmp_path, capsys):
    y = np.where(X[:, 0] > 0, 1, -1)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    store = tmp_path / "K.zarr"
    shutil.copytree(clean, store)
    fit = ["fit", "--data", tmp_path / "X.npy", "--labels", tmp_path / "y.npy", "--gamma", "0.9", "--store", store,
           "--model", tmp_path / "model.zarr", "--quiet"]
    code, _, err = run(fit, capsys)
    assert code == 2 and "another kernel" in err and "Traceback" not in err
    assert "overwrite=True" not in err and "GramMatrix" not in err
    # The advice: replace the store with 'dkernel gram ... --overwrite' (fit --overwrite is for the model).
    assert "dkernel gram" in err and "--overwrite" in err
    code, _, again = run(fit + ["--overwrite"], capsys)
    assert code == 2 and again == err  # fit --overwrite alone does not replace a store, and says so
    # Following the advice word for word works.
    command = err.split("`")[1].replace("DATA", str(tmp_path / "X.npy")).split()
    assert command[:2] == ["dkernel", "gram"] and command[-1] == "--overwrite"
    code, _, err = run(command[1:] + ["--no-progress"], capsys)
    assert code == 0, err
    code, _, err = run(fit, capsys)
    assert code == 0, err
    assert GramMatrix.open(store).kernel.gamma == 0.9
    with pytest.raises(DKernelError, match=r"GramMatrix.compute\(.*overwrite=True"):
        SVC(kernel="rbf", gamma=0.2, store=store).fit(X, y)
