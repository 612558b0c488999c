"""Tests of dkernel.datasets: loaders against the counts of the data README,
file digests, lookup order, download and checksum handling, generators."""

import gzip
import hashlib
import re
import shutil
import tarfile
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dkernel.datasets import (
    REGISTRY,
    ChecksumError,
    DataFile,
    DatasetNotFoundError,
    binary_task,
    fetch_file,
    list_datasets,
    load,
    load_svmlight_usps,
    make_concentric_circles,
    make_imbalanced,
    mutual_information_scores,
    pair_task,
)
from dkernel.datasets import _registry, _tabular

NEWS_COUNTS = {  # group: (train, test), from the data README
    "alt.atheism": (480, 319),
    "comp.graphics": (584, 389),
    "comp.os.ms-windows.misc": (591, 394),
    "comp.sys.ibm.pc.hardware": (590, 392),
    "comp.sys.mac.hardware": (578, 385),
    "comp.windows.x": (593, 395),
    "misc.forsale": (585, 390),
    "rec.autos": (594, 396),
    "rec.motorcycles": (598, 398),
    "rec.sport.baseball": (597, 397),
    "rec.sport.hockey": (600, 399),
    "sci.crypt": (595, 396),
    "sci.electronics": (591, 393),
    "sci.med": (594, 396),
    "sci.space": (593, 394),
    "soc.religion.christian": (599, 398),
    "talk.politics.guns": (546, 364),
    "talk.politics.mideast": (564, 376),
    "talk.politics.misc": (465, 310),
    "talk.religion.misc": (377, 251),
}
# Kept before any test replaces it, for the tests that serve file:// URLs.
_real_urlopen = urllib.request.urlopen

USPS_TRAIN_COUNTS = [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]
USPS_TEST_COUNTS = [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]

ALL_FILES = sorted(
    {f.path: f for info in REGISTRY.values() for f in info.files}.values(), key=lambda f: f.path
)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("dkernel-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, shared_cache):
    # Tests never write to the user's ~/.cache; the parsed 20 Newsgroups text
    # is shared by the tests of one session.
    monkeypatch.setenv("DKERNEL_CACHE", str(shared_cache))


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No DKERNEL_DATA, an empty cache folder and a network that always fails."""
    monkeypatch.delenv("DKERNEL_DATA", raising=False)
    cache = tmp_path / "empty-cache"
    cache.mkdir()
    monkeypatch.setenv("DKERNEL_CACHE", str(cache))

    def no_network(url, *args, **kwargs):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    return cache


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _data_folder_with(tmp_path, data_home, *paths):
    """A data folder holding only ``paths`` (symbolic links into data_home)."""
    folder = tmp_path / "partial-data"
    for relative in paths:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(Path(data_home) / relative)
    return folder


# --------------------------------------------------------------------------- #
# Registry and digests
# --------------------------------------------------------------------------- #


def test_list_datasets_names_every_registry_entry():
    assert list_datasets() == sorted(REGISTRY)
    assert {"wdbc", "digits", "glass", "cmc", "mushroom", "auto-mpg", "usps",
            "20newsgroups", "coil20", "medline"} == set(list_datasets())  # fmt: skip


def test_registry_entries_have_origin_and_checksums():
    for info in REGISTRY.values():
        assert info.origin_urls, info.name
        for data_file in info.files:
            assert data_file.sha256 or data_file.md5, data_file.path
            assert data_file.urls or data_file.note, data_file.path


@pytest.mark.data
@pytest.mark.parametrize("data_file", ALL_FILES, ids=lambda f: f.path)
def test_registry_digest_matches_local_file_and_sha256sums(data_home, data_file):
    path = Path(data_home) / data_file.path
    if not path.is_file():
        pytest.skip(f"{data_file.path} is not in the data folder")
    sha256 = _sha256(path)
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    assert sha256 in data_file.sha256 or md5 in data_file.md5
    sums = Path(data_home) / "SHA256SUMS"
    if sums.is_file() and data_file.sha256:
        listed = dict(line.split()[::-1] for line in sums.read_text().splitlines() if line.strip())
        assert listed[data_file.path] == data_file.sha256[0]


@pytest.mark.data
def test_usps_libsvm_test_file_matches_published_md5(data_home):
    path = Path(data_home) / "usps/usps.t.bz2"
    assert hashlib.md5(path.read_bytes()).hexdigest() in _registry._USPS_LIBSVM_TEST.md5


# --------------------------------------------------------------------------- #
# Tabular sets
# --------------------------------------------------------------------------- #


@pytest.mark.data
def test_wdbc_equals_scikit_learn_breast_cancer(data_home):
    from sklearn.datasets import load_breast_cancer

    wdbc = load("wdbc", data_home)
    reference = load_breast_cancer()
    assert wdbc.X.shape == (569, 30) and wdbc.X.dtype == np.float64
    np.testing.assert_array_equal(wdbc.X, reference.data)
    # B = 0, M = 1 here; scikit-learn codes malignant as 0.
    np.testing.assert_array_equal(wdbc.y, 1 - reference.target)
    assert np.bincount(wdbc.y).tolist() == [357, 212]
    assert len(np.unique(wdbc.metadata["id"])) == 569
    assert wdbc.X_test is None and wdbc.y_test is None


@pytest.mark.data
def test_glass_drops_id_and_keeps_class_labels(data_home):
    glass = load("glass", data_home)
    assert glass.X.shape == (214, 9) and glass.X.dtype == np.float64
    assert glass.y.dtype == np.int64
    labels, counts = np.unique(glass.y, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist())) == {1: 70, 2: 76, 3: 17, 5: 13, 6: 9, 7: 29}
    assert glass.X[:, 0].min() > 1.5  # refractive index, not the Id column


@pytest.mark.data
def test_cmc_shape_and_class_counts(data_home):
    cmc = load("cmc", data_home)
    assert cmc.X.shape == (1473, 9)
    assert np.bincount(cmc.y).tolist() == [0, 629, 333, 511]


@pytest.mark.data
def test_mushroom_one_hot_encoding(data_home):
    mushroom = load("mushroom", data_home)
    assert mushroom.X.shape[0] == 8124 and mushroom.X.dtype == np.float64
    assert np.bincount(mushroom.y).tolist() == [4208, 3916]
    names = np.array(mushroom.feature_names)
    attributes = np.array([n.split("=")[0] for n in names])
    # One category per attribute and row.
    for attribute in np.unique(attributes):
        block = mushroom.X[:, attributes == attribute]
        np.testing.assert_array_equal(block.sum(axis=1), 1.0)
    assert len(np.unique(attributes)) == 22
    assert mushroom.X[:, names == "stalk-root=?"].sum() == 2480
    assert mushroom.X.shape[1] == 117


@pytest.mark.data
def test_auto_mpg_drops_rows_with_missing_horsepower(data_home):
    auto = load("auto-mpg", data_home)
    assert auto.X.shape == (392, 7) and auto.y.shape == (392,)
    assert auto.y.dtype == np.float64 and np.isfinite(auto.X).all()
    assert auto.feature_names[2] == "horsepower"
    assert set(np.unique(auto.X[:, -1])) == {1.0, 2.0, 3.0}
    assert 9 <= auto.y.min() and auto.y.max() <= 47
    assert len(auto.metadata["car_name"]) == 392


def test_digits_from_scikit_learn():
    digits = load("digits")
    assert digits.X.shape == (1797, 64) and digits.X.dtype == np.float64
    assert set(np.unique(digits.y)) == set(range(10))


# --------------------------------------------------------------------------- #
# USPS and COIL-20
# --------------------------------------------------------------------------- #


@pytest.mark.data
def test_usps_official_split_and_class_counts(data_home):
    usps = load("usps", data_home)
    assert usps.X.shape == (7291, 256) and usps.X_test.shape == (2007, 256)
    assert usps.X.dtype == np.float64 and usps.y.dtype == np.int64
    assert np.bincount(usps.y).tolist() == USPS_TRAIN_COUNTS
    assert np.bincount(usps.y_test).tolist() == USPS_TEST_COUNTS
    assert usps.X.min() >= 0.0 and usps.X.max() <= 1.0


@pytest.mark.data
def test_usps_libsvm_test_file_has_same_labels_and_images(data_home):
    usps = load("usps", data_home)
    X, y = load_svmlight_usps(Path(data_home) / "usps/usps.t.bz2")
    assert X.shape == (2007, 256) and X.dtype == np.float64
    np.testing.assert_array_equal(y, usps.y_test)
    assert X.min() >= -1.0 and X.max() <= 1.0
    # Same images with another pixel preprocessing: rows are strongly correlated.
    a = X - X.mean(axis=1, keepdims=True)
    b = usps.X_test - usps.X_test.mean(axis=1, keepdims=True)
    correlation = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    assert np.median(correlation) > 0.9 and correlation.min() > 0.8


def test_load_svmlight_usps_rejects_other_labels(tmp_path):
    path = tmp_path / "other.svm"
    path.write_text("0 1:0.5\n11 2:0.5\n")
    with pytest.raises(ValueError, match="labels outside 1..10"):
        load_svmlight_usps(path)


@pytest.mark.data
def test_usps_libsvm_source_without_training_file_names_it(data_home, offline):
    with pytest.raises(DatasetNotFoundError, match=r"usps\.bz2") as raised:
        load("usps", data_home, source="libsvm")
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.bz2" in str(
        raised.value
    )


@pytest.mark.data
def test_coil20_shape_classes_and_poses(data_home):
    coil = load("coil20", data_home)
    assert coil.X.shape == (1440, 1024) and coil.X.dtype == np.float64
    assert np.bincount(coil.y)[1:].tolist() == [72] * 20
    np.testing.assert_array_equal(coil.metadata["pose"], np.tile(np.arange(72), 20))
    assert coil.X.min() >= 0 and coil.X.max() <= 255


@pytest.mark.data
def test_coil20_mat_fallback_gives_the_same_data(data_home, tmp_path, offline):
    from_npz = load("coil20", data_home)
    folder = _data_folder_with(tmp_path, data_home, "coil20/COIL20.mat")
    from_mat = load("coil20", folder)
    assert from_mat.metadata["files"][0].endswith("COIL20.mat")
    np.testing.assert_array_equal(from_mat.X, from_npz.X)
    np.testing.assert_array_equal(from_mat.y, from_npz.y)
    np.testing.assert_array_equal(from_mat.metadata["pose"], from_npz.metadata["pose"])


# --------------------------------------------------------------------------- #
# Text sets
# --------------------------------------------------------------------------- #


@pytest.mark.data
def test_20newsgroups_split_and_group_counts(data_home):
    news = load("20newsgroups", data_home, vectorizer=None)
    assert (len(news.X), len(news.X_test)) == (11314, 7532)
    assert news.target_names == tuple(NEWS_COUNTS)
    assert np.bincount(news.y).tolist() == [c[0] for c in NEWS_COUNTS.values()]
    assert np.bincount(news.y_test).tolist() == [c[1] for c in NEWS_COUNTS.values()]
    assert all(isinstance(doc, str) for doc in news.X[:10])


@pytest.mark.data
def test_20newsgroups_comp_subset_is_sparse_tfidf(data_home):
    news = load("20newsgroups", data_home, categories="comp.*", max_features=300)
    comp = [g for g in NEWS_COUNTS if g.startswith("comp.")]
    assert news.target_names == tuple(comp)
    assert news.X.shape == (sum(NEWS_COUNTS[g][0] for g in comp), 300)
    assert news.X_test.shape == (sum(NEWS_COUNTS[g][1] for g in comp), 300)
    assert news.X.shape[0] == 2936 and news.X_test.shape[0] == 1955
    assert sp.isspmatrix_csr(news.X) and sp.isspmatrix_csr(news.X_test)
    assert news.X.dtype == np.float64 and len(news.feature_names) == 300
    norms = np.sqrt(np.asarray(news.X.multiply(news.X).sum(axis=1))).ravel()
    np.testing.assert_allclose(norms[norms > 0], 1.0)


@pytest.mark.data
def test_20newsgroups_select_k_best_keeps_most_informative_terms(data_home):
    full = load("20newsgroups", data_home, categories=["sci.med", "sci.space"],
                vectorizer="count", max_features=400)  # fmt: skip
    best = load("20newsgroups", data_home, categories=["sci.med", "sci.space"],
                vectorizer="count", max_features=400, select_k_best=25)  # fmt: skip
    assert best.X.shape == (1187, 25) and best.X_test.shape == (790, 25)
    scores = dict(zip(full.feature_names, mutual_information_scores(full.X, full.y)))
    kept = sorted(scores[t] for t in best.feature_names)
    dropped = max(s for t, s in scores.items() if t not in best.feature_names)
    assert kept[0] >= dropped
    assert {"space", "medical"} <= set(best.feature_names)


@pytest.mark.data
def test_20newsgroups_remove_and_cache(data_home, shared_cache, monkeypatch):
    load("20newsgroups", data_home, categories="alt.atheism", vectorizer=None)
    cached = list((shared_cache / "20newsgroups").glob("20news-bydate-*.json.gz"))
    assert len(cached) == 1
    with gzip.open(cached[0], "rt") as stream:
        assert stream.read(1) == "{"  # JSON, not pickle

    def tar_is_not_read(*args, **kwargs):
        raise AssertionError("the archive was parsed again instead of read from the cache")

    monkeypatch.setattr(tarfile, "open", tar_is_not_read)
    raw = load("20newsgroups", data_home, categories="alt.atheism", vectorizer=None)
    stripped = load("20newsgroups", data_home, categories="alt.atheism", vectorizer=None,
                    remove=("headers", "footers", "quotes"))  # fmt: skip
    assert all(re.search(r"^Subject:", doc.partition("\n\n")[0], re.M) for doc in raw.X)
    assert not any(line.startswith(">") for doc in stripped.X for line in doc.split("\n"))
    # Same heuristics as scikit-learn's fetch_20newsgroups(remove=...).
    from sklearn.datasets import _twenty_newsgroups as reference

    expected = [
        reference.strip_newsgroup_quoting(
            reference.strip_newsgroup_footer(reference.strip_newsgroup_header(doc))
        )
        for doc in raw.X
    ]
    assert list(stripped.X) == expected


def test_20newsgroups_rejects_unknown_category_pattern(offline):
    with pytest.raises(ValueError, match="matches no newsgroup"):
        load("20newsgroups", categories="comp.sys.amiga", vectorizer=None)


def test_mutual_information_equals_scikit_learn():
    from sklearn.feature_selection import mutual_info_classif

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    X = sp.csr_matrix(rng.poisson(0.3 + 0.5 * (y[:, None] == np.arange(12) % 3), (200, 12)))
    expected = mutual_info_classif(X.toarray() > 0, y, discrete_features=True)
    np.testing.assert_allclose(mutual_information_scores(X, y), expected, atol=1e-12)


@pytest.mark.data
def test_medline_relevance_and_uneven_query(data_home):
    med = load("medline", data_home)
    assert sp.isspmatrix_csr(med.X) and med.X.shape[0] == 1033
    assert med.y.shape == (1033, 30) and med.y.sum() == 696
    assert (med.y.sum(axis=0) > 0).all() and len(med.metadata["queries"]) == 30
    relevant = {
        int(line.split()[2])
        for line in (Path(data_home) / "medline/MED.REL").read_text().splitlines()
        if line.split()[0] == "20"
    }
    uneven = load("medline", data_home, query=20, vectorizer="log-tfidf")
    assert uneven.y.dtype == np.int64 and uneven.y.sum() == len(relevant)
    assert set(uneven.metadata["doc_id"][uneven.y == 1].tolist()) == relevant
    # Kandola et al. weights: a term in every abstract gets weight log(m / df) = 0.
    assert uneven.X.min() >= 0


@pytest.mark.data
def test_medline_read_from_archive_when_members_are_absent(data_home, tmp_path, offline):
    extracted = load("medline", data_home, query=1, max_features=200)
    folder = _data_folder_with(tmp_path, data_home, "medline/med.tar.gz")
    archived = load("medline", folder, query=1, max_features=200)
    assert archived.metadata["files"][0].endswith("med.tar.gz")
    np.testing.assert_array_equal(archived.y, extracted.y)
    assert (archived.X != extracted.X).nnz == 0


@pytest.mark.data
def test_medline_rejects_unknown_query(data_home):
    with pytest.raises(ValueError, match="query must be one of 1..30"):
        load("medline", data_home, query=31)


# --------------------------------------------------------------------------- #
# Lookup order, offline errors, downloads, checksums
# --------------------------------------------------------------------------- #


def test_offline_error_names_file_url_and_fix(tmp_path, offline):
    empty = tmp_path / "empty-data"
    empty.mkdir()
    for download in (False, True):
        with pytest.raises(DatasetNotFoundError) as raised:
            load("wdbc", empty, download=download)
        message = str(raised.value)
        assert isinstance(raised.value, FileNotFoundError)
        assert "wdbc.data" in message
        assert _registry._WDBC.urls[0] in message
        assert "DKERNEL_DATA" in message and "data_home=" in message
    assert "network is unreachable" in message


def test_derived_file_without_url_says_so(tmp_path, offline):
    with pytest.raises(DatasetNotFoundError, match="no download URL") as raised:
        load("usps", tmp_path)
    assert "usps.npz" in str(raised.value) and "DKERNEL_DATA" in str(raised.value)


@pytest.mark.data
def test_environment_variable_is_searched_after_data_home(
    data_home, tmp_path, offline, monkeypatch
):
    monkeypatch.setenv("DKERNEL_DATA", str(data_home))
    assert load("glass", tmp_path).X.shape == (214, 9)
    assert load("glass").metadata["files"][0] == str(Path(data_home) / "uci/glass.data")


@pytest.fixture
def served_file(tmp_path):
    """A data file served from a file:// URL, and its registry entry."""
    payload = b"1,2,3\n4,5,6\n"
    source = tmp_path / "server" / "table.csv"
    source.parent.mkdir()
    source.write_bytes(payload)
    entry = DataFile(
        "demo/table.csv", sha256=(hashlib.sha256(payload).hexdigest(),), urls=(source.as_uri(),)
    )
    return entry, payload


def test_download_verifies_and_caches(served_file, offline, monkeypatch):
    entry, payload = served_file
    monkeypatch.setattr(urllib.request, "urlopen", _real_urlopen)
    path = fetch_file(entry)
    assert path == offline / "demo/table.csv" and path.read_bytes() == payload
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".part")]

    def no_network(*args, **kwargs):
        raise AssertionError("a cached file was downloaded again")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    assert fetch_file(entry) == path


def test_corrupt_download_is_rejected_and_discarded(served_file, offline, monkeypatch):
    entry, _ = served_file
    monkeypatch.setattr(urllib.request, "urlopen", _real_urlopen)
    wrong = replace(entry, sha256=("0" * 64,))
    with pytest.raises(ChecksumError, match="discarded"):
        fetch_file(wrong)
    folder = offline / "demo"
    assert not folder.exists() or not list(folder.iterdir())


def test_download_tries_mirrors_in_order(served_file, offline, monkeypatch):
    entry, payload = served_file
    monkeypatch.setattr(urllib.request, "urlopen", _real_urlopen)
    mirrored = replace(entry, urls=("file:///nonexistent/table.csv",) + entry.urls)
    assert fetch_file(mirrored).read_bytes() == payload


@pytest.mark.data
def test_load_downloads_a_missing_uci_file(data_home, tmp_path, offline, monkeypatch):
    copy = tmp_path / "mirror" / "wdbc.data"
    copy.parent.mkdir()
    shutil.copyfile(Path(data_home) / "uci/wdbc.data", copy)
    monkeypatch.setattr(urllib.request, "urlopen", _real_urlopen)
    monkeypatch.setattr(_tabular, "_WDBC", replace(_tabular._WDBC, urls=(copy.as_uri(),)))
    empty = tmp_path / "empty-data"
    empty.mkdir()
    wdbc = load("wdbc", empty)
    assert wdbc.metadata["files"][0] == str(offline / "uci/wdbc.data")
    assert wdbc.X.shape == (569, 30)

    copy.write_bytes(copy.read_bytes().replace(b"M", b"B", 1))
    (offline / "uci/wdbc.data").unlink()
    with pytest.raises(ChecksumError):
        load("wdbc", empty)
    assert not (offline / "uci/wdbc.data").exists()


@pytest.mark.data
def test_corrupt_local_file_is_rejected_unless_verify_is_false(data_home, tmp_path, offline):
    folder = tmp_path / "data"
    (folder / "uci").mkdir(parents=True)
    text = (Path(data_home) / "uci/glass.data").read_text()
    (folder / "uci/glass.data").write_text(text.replace("1.52101", "1.52102", 1))
    with pytest.raises(ChecksumError, match="verify=False"):
        load("glass", folder)
    assert load("glass", folder, verify=False).X[0, 0] == 1.52102


def test_load_rejects_unknown_name_and_option():
    with pytest.raises(ValueError, match="unknown data set 'iris'"):
        load("iris")
    with pytest.raises(TypeError, match="unknown option.*'subset'.*categories"):
        load("20newsgroups", subset="comp.*")



# --------------------------------------------------------------------------- #
# Labels
# --------------------------------------------------------------------------- #


def test_binary_task_one_versus_rest():
    y = np.array([1, 2, 3, 2, 1])
    np.testing.assert_array_equal(binary_task(y, 2), [-1, 1, -1, 1, -1])
    np.testing.assert_array_equal(binary_task(y, [1, 3]), [1, -1, 1, -1, 1])
    assert binary_task(y, 1).dtype == np.int64
    with pytest.raises(ValueError, match="does not occur"):
        binary_task(y, 4)
    with pytest.raises(ValueError, match="other classes"):
        binary_task(y, [1, 2, 3])


def test_pair_task_keeps_two_classes():
    digits = load("digits")
    X, y = pair_task(digits.X, digits.y, 0, 6)
    assert len(y) == np.sum(np.isin(digits.y, [0, 6]))
    np.testing.assert_array_equal(X[y == 1], digits.X[digits.y == 0])
    Xs, ys = pair_task(sp.csr_matrix(digits.X), digits.y, 1, 2)
    assert sp.issparse(Xs) and set(ys.tolist()) == {-1, 1}
    with pytest.raises(ValueError, match="does not occur"):
        pair_task(digits.X, digits.y, 0, 10)


# --------------------------------------------------------------------------- #
# Generators
# --------------------------------------------------------------------------- #


def test_concentric_circles_shapes_balance_and_radii():
    X, y = make_concentric_circles(301, random_state=0)
    assert X.shape == (301, 2) and y.dtype == np.int64
    assert abs(np.sum(y == 1) - np.sum(y == -1)) <= 1
    radius = np.linalg.norm(X, axis=1)
    assert abs(np.median(radius[y == 1]) - 1.0) < 0.1
    assert abs(np.median(radius[y == -1]) - 2.0) < 0.1
    X0, y0 = make_concentric_circles(50, noise=0.0, radii=(0.5, 3.0), random_state=1)
    np.testing.assert_allclose(np.linalg.norm(X0, axis=1), np.where(y0 == 1, 0.5, 3.0))


def test_concentric_circles_overlap_a_little():
    X, y = make_concentric_circles(4000, random_state=0)
    # The best radial threshold misclassifies a few percent: separable-ish, not trivially.
    wrong = np.mean((np.linalg.norm(X, axis=1) < 1.5) != (y == 1))
    assert 0.005 < wrong < 0.05


def test_generators_are_reproducible():
    a = make_concentric_circles(100, random_state=3)
    b = make_concentric_circles(100, random_state=3)
    c = make_concentric_circles(100, random_state=4)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    np.testing.assert_array_equal(
        make_imbalanced(210, random_state=np.random.RandomState(5))[0],
        make_imbalanced(210, random_state=np.random.RandomState(5))[0],
    )


def test_make_imbalanced_ratio():
    X, y = make_imbalanced(210, ratio=20, random_state=0)
    assert X.shape == (210, 2)
    assert (np.sum(y == 1), np.sum(y == -1)) == (200, 10)
    X, y = make_imbalanced(42, ratio=2.5, random_state=0)
    assert (np.sum(y == 1), np.sum(y == -1)) == (30, 12)
    _, y = make_concentric_circles(100, weights=(0.8, 0.2), random_state=0)
    assert np.sum(y == 1) == 80


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: make_concentric_circles(1), "n_samples"),
        (lambda: make_concentric_circles(10, noise=-1), "noise"),
        (lambda: make_concentric_circles(10, radii=(1, 1)), "radii"),
        (lambda: make_concentric_circles(10, weights=(0.5, 0.6)), "weights"),
        (lambda: make_imbalanced(10, ratio=20), "leaves a class empty"),
        (lambda: make_imbalanced(100, ratio=0), "ratio"),
    ],
)
def test_generators_reject_invalid_parameters(call, message):
    with pytest.raises(ValueError, match=message):
        call()
