"""Benchmark data sets of the kernel-centering papers, and their synthetic generators.

:func:`load` returns a :class:`Dataset` for each name of :func:`list_datasets`.
Every file a loader reads is described in :data:`REGISTRY` by its path inside
the data folder, its sha256 (and MD5 where that is the only published
checksum) and the public URL that serves those exact bytes. A file is looked up
in this order:

1. the ``data_home`` argument;
2. the folder named by the environment variable ``DKERNEL_DATA``;
3. the cache folder, ``DKERNEL_CACHE`` or else ``~/.cache/dkernel``;
4. a download from the registry URL into the cache folder, checked against the
   recorded digests and renamed into place only when it matches.

Files are checked against their digests before they are read (pass
``verify=False`` to read a copy you have changed on purpose).

The generators :func:`make_concentric_circles` and :func:`make_imbalanced`
draw the two-dimensional data of Meilă (2002), Fig. 1 and Section 6.

References
----------
.. [1] M. Meilă, "Data centering in feature space", 2002.
.. [2] J. Kandola, J. Shawe-Taylor and N. Cristianini, "On the extensions of
   kernel alignment", 2002.
.. [3] A. B. A. Graf and S. Borer, "Normalization in support vector machines",
   DAGM 2001.
.. [4] W. Li, K.-S. Leung and K.-H. Lee, "Generalizing the bias term of
   support vector machines", IJCAI 2007.
.. [5] P. Williams, S. Li, J. Feng and S. Wu, "Scaling the kernel function to
   improve performance of the support vector machine", ISNN 2005.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import inspect
import json
import os
import re
import tarfile
import tempfile
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .exceptions import DKernelError

__all__ = [
    "ChecksumError",
    "DataFile",
    "Dataset",
    "DatasetInfo",
    "DatasetNotFoundError",
    "REGISTRY",
    "binary_task",
    "fetch_file",
    "get_cache_home",
    "list_datasets",
    "load",
    "load_svmlight_usps",
    "make_concentric_circles",
    "make_imbalanced",
    "mutual_information_scores",
    "pair_task",
]

DATA_ENV = "DKERNEL_DATA"
CACHE_ENV = "DKERNEL_CACHE"
_DOWNLOAD_TIMEOUT_S = 60
_CHUNK = 1 << 20


class DatasetNotFoundError(DKernelError, FileNotFoundError):
    """A data file is neither in a local data folder nor downloadable."""


class ChecksumError(DKernelError, OSError):
    """A data file does not match any digest recorded in the registry."""


# --------------------------------------------------------------------------- #
# Registry
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class DataFile:
    """One file a loader reads, with where it comes from and how to check it.

    Parameters
    ----------
    path : str
        Path relative to the data folder, with ``/`` separators
        (e.g. ``"uci/wdbc.data"``). Downloads are stored at the same relative
        path inside the cache folder.
    sha256 : tuple of str
        Accepted sha256 digests (hex). The first one is the reference copy the
        tests are run against; more are listed where the original archive and a
        repackaged copy are both known to be readable.
    urls : tuple of str
        Public URLs that serve these exact bytes, tried in order. Empty for a
        derived file that only exists in a prepared data folder.
    md5 : tuple of str
        Accepted MD5 digests, for files whose only published checksum is an
        MD5. A file is accepted when it matches any sha256 or any MD5 listed.
    note : str
        Provenance: where the local copy was taken from, or how a derived file
        was made.
    """

    path: str
    sha256: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    md5: tuple[str, ...] = ()
    note: str = ""

    @property
    def name(self) -> str:
        """File name without folder."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class DatasetInfo:
    """Registry entry of one data set.

    Parameters
    ----------
    name : str
        Name accepted by :func:`load`.
    description : str
        One paragraph: what the data are, their shape and the citation.
    files : tuple of DataFile
        Files the loader may read. Where a loader accepts alternatives (a
        derived ``.npz`` or the original it was made from), the preferred file
        comes first.
    origin_urls : tuple of str
        The original public distribution of the data set, which may be in
        another format than the files read here (e.g. COIL-20 PNG images).
    """

    name: str
    description: str
    files: tuple[DataFile, ...] = ()
    origin_urls: tuple[str, ...] = ()

    def file(self, path: str) -> DataFile:
        """Return the registry entry of the file at ``path``."""
        for data_file in self.files:
            if data_file.path == path:
                return data_file
        raise KeyError(
            f"data set {self.name!r} has no file {path!r}; "
            f"its files are {[f.path for f in self.files]}."
        )


_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass"

_WDBC = DataFile(
    "uci/wdbc.data",
    sha256=("d606af411f3e5be8a317a5a8b652b425aaf0ff38ca683d5327ffff94c3695f4a",),
    urls=(f"{_UCI}/breast-cancer-wisconsin/wdbc.data",),
    note="UCI file, byte copy from makaylatang/Breast-Cancer-Diagnosis-Classification "
    "@aededef9 data/wdbc.data.",
)
_GLASS = DataFile(
    "uci/glass.data",
    sha256=("dd67373f4baf2807345df02cbfef2093d342e61ad0d82a4fb79af43ef8ce449d",),
    urls=(f"{_UCI}/glass/glass.data",),
    note="UCI file, byte copy from acraig07/KNN-algorithm @f7842782 glass.data.",
)
_CMC = DataFile(
    "uci/cmc.data",
    sha256=("ad2a49da55df24b061a994ecc4d90c856aba35acd05138851aa251c4f06303c9",),
    urls=(f"{_UCI}/cmc/cmc.data",),
    note="UCI file, byte copy from PromiKhan/Contraceptive-Methods @7a1a2773 cmc.data.",
)
_MUSHROOM = DataFile(
    "uci/agaricus-lepiota.data",
    sha256=("e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",),
    urls=(f"{_UCI}/mushroom/agaricus-lepiota.data",),
    note="UCI file, byte copy from robintux/Datasets4StackOverFlowQuestions @f52993bf.",
)
_AUTO_MPG = DataFile(
    "uci/auto-mpg.data",
    sha256=("48b830e11feee5572525f8f1691ddb9d38d3d7b7063edcd8fca672c2a5e17d8d",),
    urls=(f"{_UCI}/auto-mpg/auto-mpg.data",),
    note="UCI file (30,286 bytes, as in the UCI Index); taken from "
    "rekeshali/multi-regress @dc011b52 with its missing final newline restored.",
)
_USPS_NPZ = DataFile(
    "usps/usps.npz",
    sha256=("91a7e0717126d9d65ef37fb8502bccf0234671697c4c4df8db690a97d82b3850",),
    note="Derived: arrays X_train, y_train, X_test, y_test of usps/usps.h5 "
    "(niuers/Learning-From-Data-A-Short-Course @879a698b data/usps.h5, sha256 "
    "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36), values "
    "unchanged: the ESL zip.train/zip.test images rescaled from [-1, 1] to [0, 1].",
)
_USPS_LIBSVM_TRAIN = DataFile(
    "usps/usps.bz2",
    md5=("ec16c51db3855ca6c91edd34d0e9b197",),
    urls=(f"{_LIBSVM}/usps.bz2",),
    note="LIBSVM training file (7291 rows); MD5 as published by torchvision.datasets.USPS.",
)
_USPS_LIBSVM_TEST = DataFile(
    "usps/usps.t.bz2",
    sha256=("a9c0164e797d60142a50604917f0baa604f326e9a689698763793fa5d12ffc4e",),
    md5=("8ea070ee2aca1ac39742fdd1ef5ed118",),
    urls=(f"{_LIBSVM}/usps.t.bz2",),
    note="LIBSVM test file (2007 rows), byte copy from team-approx-bayes/kpriors @7113fe83.",
)
_NEWS_ARCHIVE = DataFile(
    "20newsgroups/20news-bydate.tar.gz",
    sha256=(
        # Local reference copy: the bydate messages repackaged deterministically.
        "20b5c38dda531657fa1e008930314ccf50db199b41b1a372704805935fd8914d",
        # The original archive, as recorded by scikit-learn's fetch_20newsgroups.
        "8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610",
    ),
    urls=(
        "http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
        "https://ndownloader.figshare.com/files/5975967",
    ),
    note="The local copy is a repackaged archive with the original layout and "
    "byte-identical messages (spoddutur/spark-ml-dashboard @e5d726ab); the "
    "original archive has the other digest and is read the same way.",
)
_COIL20_NPZ = DataFile(
    "coil20/coil20_32x32.npz",
    sha256=("f5ead2903c9c0d8e26d6f9a7ec6faa851dcaa0c1c252748f6a43c001cc11647e",),
    note="Derived from coil20/COIL20.mat: images = X.reshape(-1, 32, 32, order='F'), "
    "labels = Y (1..20), pose = position within each object's block of 72.",
)
_COIL20_MAT = DataFile(
    "coil20/COIL20.mat",
    sha256=("b22b9beb0668f707990eda2b5f922384fd3e6d63d6df7ede3a3b5e2319c4e397",),
    urls=(
        "https://raw.githubusercontent.com/hyzhang98/AdaGAE/"
        "6d04946060bacd41ee31eba5c124887bca44f369/data/COIL20.mat",
    ),
    note="Processed COIL-20 reduced to 32x32 (MATLAB v5: X uint8 1440x1024 "
    "column-major images, Y labels 1..20).",
)
_MED_ARCHIVE = DataFile(
    "medline/med.tar.gz",
    sha256=("07478afc5370ba3dfa66c8c1994ea56a2341cea8584af619a63eb51c31f26f1e",),
    urls=("http://ir.dcs.gla.ac.uk/resources/test_collections/medl/med.tar.gz",),
    note="Glasgow IR test collection archive (MED.ALL, MED.QRY, MED.REL, MED.REL.OLD), "
    "byte copy from lailaglez/belief-network-irs @9094e4cd.",
)
_MED_MEMBERS = {
    "MED.ALL": DataFile(
        "medline/MED.ALL",
        sha256=("fdcd99cf7fc6c45707c9b5bef7daac739f06c4063ebcad9b5cccf2f939fa4236",),
        note="Member of medline/med.tar.gz.",
    ),
    "MED.QRY": DataFile(
        "medline/MED.QRY",
        sha256=("41fbc9d7a0ac8620d53e09b3429d2695cecc63d4bf7e15e55bbcee0785a1798c",),
        note="Member of medline/med.tar.gz.",
    ),
    "MED.REL": DataFile(
        "medline/MED.REL",
        sha256=("aef5ac922c08d5711ffd525985e03cda4272694e35f646deab90177f329ff575",),
        note="Member of medline/med.tar.gz.",
    ),
}

_NEWS_GROUPS = (
    "alt.atheism", "comp.graphics", "comp.os.ms-windows.misc",
    "comp.sys.ibm.pc.hardware", "comp.sys.mac.hardware", "comp.windows.x",
    "misc.forsale", "rec.autos", "rec.motorcycles", "rec.sport.baseball",
    "rec.sport.hockey", "sci.crypt", "sci.electronics", "sci.med", "sci.space",
    "soc.religion.christian", "talk.politics.guns", "talk.politics.mideast",
    "talk.politics.misc", "talk.religion.misc",
)  # fmt: skip

REGISTRY: Mapping[str, DatasetInfo] = MappingProxyType(
    {
        info.name: info
        for info in (
            DatasetInfo(
                "wdbc",
                "Wisconsin Diagnostic Breast Cancer (UCI): 569 x 30 real features of "
                "cell nuclei; y = 1 for malignant (212), 0 for benign (357). Note that "
                "scikit-learn's load_breast_cancer codes malignant as 0. "
                "W. N. Street, W. H. Wolberg and O. L. Mangasarian, 1995.",
                (_WDBC,),
                (f"{_UCI}/breast-cancer-wisconsin/wdbc.data",),
            ),
            DatasetInfo(
                "digits",
                "Optical recognition of handwritten digits, 8 x 8 = 64 features with "
                "values 0..16, 1797 images, y = digit 0..9; the copy bundled with "
                "scikit-learn (load_digits), the 'digiab' tasks of Meilă (2002).",
                (),
                (f"{_UCI}/optdigits/",),
            ),
            DatasetInfo(
                "glass",
                "Glass Identification (UCI): 214 x 9 (RI, Na, Mg, Al, Si, K, Ca, Ba, "
                "Fe; the Id column is dropped); y = glass type 1, 2, 3, 5, 6, 7 "
                "(70, 76, 17, 13, 9, 29; type 4 is absent). B. German, 1987.",
                (_GLASS,),
                (f"{_UCI}/glass/glass.data",),
            ),
            DatasetInfo(
                "cmc",
                "Contraceptive Method Choice (UCI): 1473 x 9 demographic attributes "
                "of the 1987 Indonesia survey; y = 1 no-use (629), 2 long-term (333), "
                "3 short-term (511). T.-S. Lim, 1997.",
                (_CMC,),
                (f"{_UCI}/cmc/cmc.data",),
            ),
            DatasetInfo(
                "mushroom",
                "Mushroom (UCI agaricus-lepiota): 8124 mushrooms, 22 categorical "
                "attributes one-hot encoded with the categories seen in the data "
                "(a missing stalk-root, '?', is its own category); y = 1 poisonous "
                "(3916), 0 edible (4208). J. Schlimmer, 1987.",
                (_MUSHROOM,),
                (f"{_UCI}/mushroom/agaricus-lepiota.data",),
            ),
            DatasetInfo(
                "auto-mpg",
                "Auto MPG (UCI): regression of fuel consumption y = mpg on cylinders, "
                "displacement, horsepower, weight, acceleration, model year and "
                "origin; the 6 rows with unknown horsepower are dropped (392 rows) "
                "and the car name is not used. Quinlan, 1993.",
                (_AUTO_MPG,),
                (f"{_UCI}/auto-mpg/auto-mpg.data",),
            ),
            DatasetInfo(
                "usps",
                "USPS handwritten digits (J. J. Hull, 1994): 16 x 16 = 256 grey "
                "levels, official split of 7291 training and 2007 test images, "
                "y = digit 0..9. source='npz' reads the ESL copy scaled to [0, 1]; "
                "source='libsvm' reads the LIBSVM files, scaled to [-1, 1] with "
                "another pixel preprocessing (same images, order and labels).",
                (_USPS_NPZ, _USPS_LIBSVM_TRAIN, _USPS_LIBSVM_TEST),
                (
                    f"{_LIBSVM}/usps.bz2",
                    f"{_LIBSVM}/usps.t.bz2",
                    "https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz",
                    "https://hastie.su.domains/ElemStatLearn/datasets/zip.test.gz",
                ),
            ),
            DatasetInfo(
                "20newsgroups",
                "20 Newsgroups, 'bydate' split (K. Lang; J. Rennie): 11314 training "
                "and 7532 test Usenet messages from 20 groups; y = index of the "
                "group in target_names; X = bag-of-words vectors (sparse CSR) fitted "
                "on the training messages.",
                (_NEWS_ARCHIVE,),
                _NEWS_ARCHIVE.urls,
            ),
            DatasetInfo(
                "coil20",
                "COIL-20, processed (S. A. Nene, S. K. Nayar and H. Murase, "
                "CUCS-005-96, 1996): 20 objects x 72 turntable poses = 1440 grey "
                "images reduced to 32 x 32 = 1024 features (0..255, row-major "
                "pixels); y = object 1..20; metadata['pose'] = 0..71 (5 degrees apart).",
                (_COIL20_NPZ, _COIL20_MAT),
                (
                    "https://www.cs.columbia.edu/CAVE/databases/SLAM_coil-20_coil-100/"
                    "coil-20/coil-20-proc.zip",
                ),
            ),
            DatasetInfo(
                "medline",
                "Medline / MED collection (Glasgow IR test collections): 1033 "
                "medical abstracts, 30 queries, 696 relevance judgements. X = "
                "bag-of-words vectors of the abstracts (sparse CSR); with query=k, "
                "y = 1 for the abstracts relevant to query k, else 0 (an uneven "
                "task, Kandola et al. 2002 use query 20); without it, y is the "
                "1033 x 30 relevance indicator matrix.",
                (_MED_MEMBERS["MED.ALL"], _MED_MEMBERS["MED.QRY"],
                 _MED_MEMBERS["MED.REL"], _MED_ARCHIVE),
                _MED_ARCHIVE.urls,
            ),  # fmt: skip
        )
    }
)


def list_datasets() -> list[str]:
    """Return the names accepted by :func:`load`, sorted.

    Returns
    -------
    names : list of str
    """
    return sorted(REGISTRY)


# --------------------------------------------------------------------------- #
# Locating, verifying and downloading files
# --------------------------------------------------------------------------- #


def get_cache_home() -> Path:
    """Return the cache folder: ``$DKERNEL_CACHE``, else ``~/.cache/dkernel``.

    The folder is not created here; downloads and parsed-text caches create
    it when they first write.
    """
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "dkernel"


def _search_folders(data_home) -> list[Path]:
    folders = []
    if data_home is not None:
        folders.append(Path(data_home).expanduser())
    env = os.environ.get(DATA_ENV)
    if env:
        folders.append(Path(env).expanduser())
    folders.append(get_cache_home())
    return folders


def _digests(path: Path) -> tuple[str, str]:
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            sha256.update(chunk)
            md5.update(chunk)
    return sha256.hexdigest(), md5.hexdigest()


def _matches(data_file: DataFile, sha256: str, md5: str) -> bool:
    return sha256 in data_file.sha256 or md5 in data_file.md5


def _check_digest(data_file: DataFile, path: Path) -> None:
    if not (data_file.sha256 or data_file.md5):
        return
    sha256, md5 = _digests(path)
    if not _matches(data_file, sha256, md5):
        expected = [f"sha256 {d}" for d in data_file.sha256] + [f"md5 {d}" for d in data_file.md5]
        raise ChecksumError(
            f"{path} has sha256 {sha256}, which matches none of the digests "
            f"recorded for {data_file.path} ({', '.join(expected)}). The file is "
            "corrupt or another version: delete it to have it fetched again, or "
            "pass verify=False to read it anyway."
        )


def _download(data_file: DataFile, url: str, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    # Write beside the destination and rename only after the digest matches, so
    # an interrupted or corrupt download never sits at the path that is read.
    handle, partial = tempfile.mkstemp(
        prefix=f".{data_file.name}.", suffix=".part", dir=destination.parent
    )
    try:
        with os.fdopen(handle, "wb") as out:
            with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    sha256.update(chunk)
                    md5.update(chunk)
        if data_file.sha256 or data_file.md5:
            if not _matches(data_file, sha256.hexdigest(), md5.hexdigest()):
                raise ChecksumError(
                    f"the download of {data_file.path} from {url} has sha256 "
                    f"{sha256.hexdigest()}, expected "
                    f"{' or '.join(data_file.sha256 or data_file.md5)}; "
                    "it was discarded. The server may have changed the file or "
                    f"the transfer was damaged: retry, or place a good copy in "
                    f"the folder named by {DATA_ENV}."
                )
        else:
            warnings.warn(
                f"no checksum is recorded for {data_file.path}; the download from "
                f"{url} was not verified.",
                UserWarning,
                stacklevel=4,
            )
        os.replace(partial, destination)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def _find_local(data_file: DataFile, data_home) -> Path | None:
    for folder in _search_folders(data_home):
        candidate = folder / data_file.path
        if candidate.is_file():
            return candidate
    return None


def _not_found_message(data_file: DataFile, data_home, reason: str) -> str:
    searched = ", ".join(str(folder / data_file.path) for folder in _search_folders(data_home))
    if data_file.urls:
        source = f"It can be downloaded from {' or '.join(data_file.urls)}"
    else:
        source = f"It has no download URL ({data_file.note})"
    return (
        f"data file {data_file.name!r} not found (looked for {searched}); {reason}. "
        f"{source}. Put the data folder holding {data_file.path} in place and set "
        f"{DATA_ENV}=/path/to/data, or pass data_home=."
    )


def fetch_file(data_file: DataFile, data_home=None, *, download=True, verify=True) -> Path:
    """Return the path of a data file, downloading it into the cache if needed.

    Parameters
    ----------
    data_file : DataFile
        Registry entry of the file (see :data:`REGISTRY`).
    data_home : str or path-like, default=None
        Data folder searched first; then ``$DKERNEL_DATA``, then the cache
        folder (:func:`get_cache_home`).
    download : bool, default=True
        Whether to download a file found in no folder. The download goes to
        the cache folder at ``data_file.path``, is checked against the
        recorded digests and is renamed into place only when it matches.
    verify : bool, default=True
        Whether to check a local file against the recorded digests.

    Returns
    -------
    path : pathlib.Path

    Raises
    ------
    DatasetNotFoundError
        If the file is in no folder and cannot be downloaded; the message
        names the file, its URL and the ``DKERNEL_DATA`` / ``data_home=`` fix.
    ChecksumError
        If the file found or downloaded matches no recorded digest.
    """
    path = _find_local(data_file, data_home)
    if path is not None:
        if verify:
            _check_digest(data_file, path)
        return path
    if not download:
        raise DatasetNotFoundError(
            _not_found_message(data_file, data_home, "downloading is disabled (download=False)")
        )
    if not data_file.urls:
        raise DatasetNotFoundError(
            _not_found_message(data_file, data_home, "it is a derived file")
        )
    destination = get_cache_home() / data_file.path
    failures = []
    for url in data_file.urls:
        try:
            _download(data_file, url, destination)
            return destination
        except (urllib.error.URLError, OSError, ValueError) as error:
            if isinstance(error, ChecksumError):
                raise
            failures.append(f"{url}: {error}")
    raise DatasetNotFoundError(
        _not_found_message(
            data_file, data_home, "the download failed (" + "; ".join(failures) + ")"
        )
    )


def _fetch_first(
    candidates: Iterable[DataFile], data_home, *, download: bool, verify: bool
) -> tuple[DataFile, Path]:
    """Return the first candidate found locally, else download the first downloadable one."""
    candidates = tuple(candidates)
    for data_file in candidates:
        path = _find_local(data_file, data_home)
        if path is not None:
            if verify:
                _check_digest(data_file, path)
            return data_file, path
    downloadable = [f for f in candidates if f.urls]
    target = downloadable[0] if downloadable else candidates[0]
    return target, fetch_file(target, data_home, download=download, verify=verify)


# --------------------------------------------------------------------------- #
# The Dataset container and load()
# --------------------------------------------------------------------------- #


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded data set.

    Attributes
    ----------
    name : str
        Registry name.
    X : ndarray of shape (n_samples, n_features) or scipy.sparse.csr_matrix or list of str
        Training (or only) samples. Dense arrays are float64; text data are
        sparse CSR, or lists of str with ``vectorizer=None``.
    y : ndarray of shape (n_samples,) or (n_samples, n_labels)
        Integer class labels (float targets for regression).
    description : str
        What the data are and where they come from.
    X_test, y_test : same types as X and y, or None
        The official test split where the data set has one, else None.
    feature_names : tuple of str or None
        Column names, where known.
    target_names : tuple or None
        For text data, the name of each class index in ``y``.
    metadata : mapping
        Extra per-sample or per-set information (e.g. COIL-20 poses, Medline
        queries) and ``files``, the paths that were read.
    """

    name: str
    X: Any
    y: np.ndarray
    description: str
    X_test: Any = None
    y_test: np.ndarray | None = None
    feature_names: tuple[str, ...] | None = None
    target_names: tuple | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        def shape(a):
            return a.shape if hasattr(a, "shape") else (len(a),)

        test = "" if self.X_test is None else f", X_test={shape(self.X_test)}"
        return f"Dataset(name={self.name!r}, X={shape(self.X)}{test})"


_LOADERS: dict[str, Callable[..., Dataset]] = {}


def _loader(name: str):
    def register(function):
        _LOADERS[name] = function
        return function

    return register


def load(
    name: str, data_home=None, *, download: bool = True, verify: bool = True, **options
) -> Dataset:
    """Load a benchmark data set.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`: ``"wdbc"``, ``"digits"``, ``"glass"``,
        ``"cmc"``, ``"mushroom"``, ``"auto-mpg"``, ``"usps"``,
        ``"20newsgroups"``, ``"coil20"``, ``"medline"``.
    data_home : str or path-like, default=None
        Folder holding ``usps/``, ``uci/``, ``20newsgroups/`` ... searched
        before ``$DKERNEL_DATA`` and the cache folder.
    download : bool, default=True
        Whether to download missing files into the cache folder.
    verify : bool, default=True
        Whether to check local files against their recorded digests.
    **options
        Options of the data set:

        ``usps``
            ``source="npz"`` (default; [0, 1] pixels) or ``"libsvm"``
            ([-1, 1] pixels, needs ``usps.bz2`` and ``usps.t.bz2``).
        ``20newsgroups``
            ``categories`` (None for all 20 groups, a glob pattern such as
            ``"comp.*"``, or a list of names and patterns);
            ``remove`` (subset of ``("headers", "footers", "quotes")``);
            ``vectorizer`` (``"tfidf"`` default, ``"count"``, ``"log-tfidf"``
            or None for the raw messages as lists of str);
            ``max_features`` (keep the most frequent terms);
            ``select_k_best`` (keep the k terms of highest mutual information
            with the class, see :func:`mutual_information_scores`).
        ``medline``
            ``query`` (1..30, or None for all queries), ``vectorizer``,
            ``max_features``, ``select_k_best`` (needs ``query``).

    Returns
    -------
    dataset : Dataset

    Raises
    ------
    DatasetNotFoundError
        If a file is missing and cannot be downloaded.
    ChecksumError
        If a file does not match its recorded digest.

    Examples
    --------
    >>> from dkernel.datasets import load, binary_task
    >>> glass = load("glass")                         # doctest: +SKIP
    >>> y = binary_task(glass.y, positive=2)          # doctest: +SKIP
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown data set {name!r}; choose one of {list_datasets()}.")
    loader = _LOADERS[name]
    accepted = [
        p.name for p in inspect.signature(loader).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in ("download", "verify")
    ]  # fmt: skip
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"load({name!r}) got unknown option(s) {unknown}; "
            f"its options are {accepted or 'none'}."
        )
    return loader(data_home, download=download, verify=verify, **options)


def _dataset(name: str, X, y, files=(), **fields) -> Dataset:
    metadata = dict(fields.pop("metadata", {}))
    metadata["files"] = tuple(str(f) for f in files)
    return Dataset(
        name=name, X=X, y=y, description=REGISTRY[name].description, metadata=metadata, **fields
    )


# --------------------------------------------------------------------------- #
# Small tabular sets
# --------------------------------------------------------------------------- #

_WDBC_FEATURES = tuple(
    f"{stat} {quantity}"
    for stat in ("mean", "error", "worst")
    for quantity in (
        "radius", "texture", "perimeter", "area", "smoothness", "compactness",
        "concavity", "concave points", "symmetry", "fractal dimension",
    )
)  # fmt: skip


@_loader("wdbc")
def _load_wdbc(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_WDBC, data_home, download=download, verify=verify)
    rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    X = np.array([row[2:] for row in rows], dtype=np.float64)
    y = np.array([{"B": 0, "M": 1}[row[1]] for row in rows], dtype=np.int64)
    return _dataset(
        "wdbc", X, y, [path], feature_names=_WDBC_FEATURES, target_names=("benign", "malignant"),
        metadata={"id": np.array([int(row[0]) for row in rows], dtype=np.int64)},
    )  # fmt: skip


@_loader("digits")
def _load_digits(data_home, *, download, verify) -> Dataset:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return _dataset(
        "digits",
        bunch.data.astype(np.float64),
        bunch.target.astype(np.int64),
        feature_names=tuple(bunch.feature_names),
        target_names=tuple(int(t) for t in bunch.target_names),
    )


def _read_csv_numbers(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)


@_loader("glass")
def _load_glass(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_GLASS, data_home, download=download, verify=verify)
    table = _read_csv_numbers(path)
    return _dataset(
        "glass", table[:, 1:-1].copy(), table[:, -1].astype(np.int64), [path],
        feature_names=("RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"),
    )  # fmt: skip


@_loader("cmc")
def _load_cmc(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_CMC, data_home, download=download, verify=verify)
    table = _read_csv_numbers(path)
    return _dataset(
        "cmc", table[:, :-1].copy(), table[:, -1].astype(np.int64), [path],
        feature_names=(
            "wife age", "wife education", "husband education", "children",
            "wife religion", "wife working", "husband occupation",
            "standard of living", "media exposure",
        ),
        target_names=("no-use", "long-term", "short-term"),
    )  # fmt: skip


_MUSHROOM_ATTRIBUTES = (
    "cap-shape", "cap-surface", "cap-color", "bruises", "odor", "gill-attachment",
    "gill-spacing", "gill-size", "gill-color", "stalk-shape", "stalk-root",
    "stalk-surface-above-ring", "stalk-surface-below-ring", "stalk-color-above-ring",
    "stalk-color-below-ring", "veil-type", "veil-color", "ring-number", "ring-type",
    "spore-print-color", "population", "habitat",
)  # fmt: skip


@_loader("mushroom")
def _load_mushroom(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_MUSHROOM, data_home, download=download, verify=verify)
    rows = np.array(
        [line.split(",") for line in path.read_text().splitlines() if line.strip()], dtype=str
    )
    columns, names = [], []
    for j, attribute in enumerate(_MUSHROOM_ATTRIBUTES, start=1):
        values = rows[:, j]
        for category in np.unique(values):
            columns.append(values == category)
            names.append(f"{attribute}={category}")
    X = np.column_stack(columns).astype(np.float64)
    y = (rows[:, 0] == "p").astype(np.int64)
    return _dataset(
        "mushroom", X, y, [path], feature_names=tuple(names), target_names=("edible", "poisonous")
    )


@_loader("auto-mpg")
def _load_auto_mpg(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_AUTO_MPG, data_home, download=download, verify=verify)
    numbers, car_names = [], []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        values, _, car = line.partition("\t")
        fields = values.split()
        if "?" in fields:
            continue
        numbers.append([float(v) for v in fields])
        car_names.append(car.strip().strip('"'))
    table = np.array(numbers, dtype=np.float64)
    return _dataset(
        "auto-mpg", table[:, 1:].copy(), table[:, 0].copy(), [path],
        feature_names=(
            "cylinders", "displacement", "horsepower", "weight", "acceleration",
            "model year", "origin",
        ),
        metadata={"car_name": tuple(car_names)},
    )  # fmt: skip


# --------------------------------------------------------------------------- #
# USPS and COIL-20
# --------------------------------------------------------------------------- #


def load_svmlight_usps(path) -> tuple[np.ndarray, np.ndarray]:
    """Read a LIBSVM-format USPS file (``usps.bz2`` or ``usps.t.bz2``).

    Parameters
    ----------
    path : str or path-like
        The file as distributed by LIBSVM; ``.bz2`` and ``.gz`` files are
        decompressed on the fly.

    Returns
    -------
    X : ndarray of shape (n_samples, 256), float64
        Pixels in [-1, 1] (LIBSVM's scaling).
    y : ndarray of shape (n_samples,), int64
        Digits 0..9 (the file's labels 1..10 minus 1).
    """
    from sklearn.datasets import load_svmlight_file

    X, labels = load_svmlight_file(str(path), n_features=256, dtype=np.float64)
    valid = (labels >= 1) & (labels <= 10) & (labels == np.round(labels))
    if not valid.all():
        raise ValueError(
            f"{path} has labels outside 1..10 (found {np.unique(labels)[:12]}); "
            "it is not the LIBSVM USPS file."
        )
    return X.toarray(), labels.astype(np.int64) - 1


@_loader("usps")
def _load_usps(data_home, *, download, verify, source="npz") -> Dataset:
    if source == "npz":
        path = fetch_file(_USPS_NPZ, data_home, download=download, verify=verify)
        with np.load(path) as arrays:
            fields = {k: arrays[k] for k in ("X_train", "y_train", "X_test", "y_test")}
        files = [path]
        X, X_test = fields["X_train"].astype(np.float64), fields["X_test"].astype(np.float64)
        y, y_test = fields["y_train"].astype(np.int64), fields["y_test"].astype(np.int64)
    elif source == "libsvm":
        train = fetch_file(_USPS_LIBSVM_TRAIN, data_home, download=download, verify=verify)
        test = fetch_file(_USPS_LIBSVM_TEST, data_home, download=download, verify=verify)
        files = [train, test]
        X, y = load_svmlight_usps(train)
        X_test, y_test = load_svmlight_usps(test)
    else:
        raise ValueError(f"source must be 'npz' or 'libsvm', got {source!r}.")
    return _dataset(
        "usps", X, y, files, X_test=X_test, y_test=y_test,
        target_names=tuple(range(10)), metadata={"source": source},
    )  # fmt: skip


@_loader("coil20")
def _load_coil20(data_home, *, download, verify) -> Dataset:
    data_file, path = _fetch_first(
        (_COIL20_NPZ, _COIL20_MAT), data_home, download=download, verify=verify
    )
    if data_file is _COIL20_NPZ:
        with np.load(path) as arrays:
            images, labels, pose = arrays["images"], arrays["labels"], arrays["pose"]
    else:
        from scipy.io import loadmat

        mat = loadmat(path)
        # MATLAB stores each 32 x 32 image column-major in its row of X.
        images = mat["X"].reshape(-1, 32, 32, order="F")
        labels = mat["Y"].ravel()
        pose = np.tile(np.arange(72), len(labels) // 72)
    X = images.reshape(len(images), -1).astype(np.float64)
    return _dataset(
        "coil20", X, labels.astype(np.int64), [path],
        target_names=tuple(range(1, 21)),
        metadata={"pose": pose.astype(np.int64), "image_shape": (32, 32)},
    )  # fmt: skip


# --------------------------------------------------------------------------- #
# Text: vectorizers, mutual information, 20 Newsgroups, Medline
# --------------------------------------------------------------------------- #

_VECTORIZERS = ("tfidf", "count", "log-tfidf")


def mutual_information_scores(X, y) -> np.ndarray:
    """Mutual information between each term's occurrence and the class.

    The information gain of McCallum's *rainbow*, which Li, Leung and Lee
    (2007) use to keep the 2,000 most informative words of 20 Newsgroups:
    ``I(W_j; C) = sum_{w in {0,1}, c} p(w, c) log(p(w, c) / (p(w) p(c)))``
    where ``W_j = 1`` when term ``j`` occurs in the document. It equals
    ``sklearn.feature_selection.mutual_info_classif(X > 0, y,
    discrete_features=True)`` (natural logarithm) but is computed for all
    terms at once from one sparse product, so it takes seconds, not hours, on
    a 100,000-term vocabulary.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Term counts or weights; only ``X != 0`` is used.
    y : ndarray of shape (n_samples,)
        Class labels.

    Returns
    -------
    scores : ndarray of shape (n_features,)
        Mutual information in nats, >= 0.
    """
    occurs = sp.csr_matrix(X, copy=True)
    occurs.data = (occurs.data != 0).astype(np.float64)
    occurs.eliminate_zeros()
    classes, y_index = np.unique(np.asarray(y), return_inverse=True)
    n = occurs.shape[0]
    if n != len(y_index):
        raise ValueError(f"X has {n} rows but y has {len(y_index)} labels; they must match.")
    indicator = sp.csr_matrix(
        (np.ones(n), (np.arange(n), y_index)), shape=(n, len(classes))
    )
    present = np.asarray((occurs.T @ indicator).todense())  # (n_features, n_classes)
    class_count = np.bincount(y_index, minlength=len(classes)).astype(np.float64)
    absent = class_count[None, :] - present
    term_count = present.sum(axis=1, keepdims=True)
    scores = np.zeros(occurs.shape[1])
    for joint, marginal in ((present, term_count), (absent, n - term_count)):
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = joint / n * np.log(joint * n / (marginal * class_count[None, :]))
        scores += np.where(joint > 0, terms, 0.0).sum(axis=1)
    return np.maximum(scores, 0.0)


def _log_tfidf(counts: sp.csr_matrix, document_frequency: np.ndarray, n_documents: int):
    # Kandola et al. (2002): log(1 + tf) * log(m / df), with df and m from training.
    weights = counts.astype(np.float64)
    weights.data = np.log1p(weights.data)
    idf = np.log(n_documents / np.maximum(document_frequency, 1))
    return (weights @ sp.diags(idf)).tocsr()


def _vectorize(train, test, y_train, *, vectorizer, max_features, select_k_best):
    """Fit a bag-of-words vectorizer on ``train``; return CSR matrices and the terms."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    if vectorizer not in _VECTORIZERS:
        raise ValueError(f"vectorizer must be one of {_VECTORIZERS} or None, got {vectorizer!r}.")
    if max_features is not None and (not isinstance(max_features, int) or max_features < 1):
        raise ValueError(f"max_features must be a positive integer or None, got {max_features!r}.")
    common = dict(stop_words="english", max_features=max_features, dtype=np.float64)
    if vectorizer == "tfidf":
        model = TfidfVectorizer(**common)
    else:
        model = CountVectorizer(**common)
    X = sp.csr_matrix(model.fit_transform(train))
    X_test = None if test is None else sp.csr_matrix(model.transform(test))
    terms = model.get_feature_names_out()
    if vectorizer == "log-tfidf":
        document_frequency = np.bincount(X.indices, minlength=X.shape[1])
        n_documents = X.shape[0]
        X = _log_tfidf(X, document_frequency, n_documents)
        if X_test is not None:
            X_test = _log_tfidf(X_test, document_frequency, n_documents)
    if select_k_best is not None:
        if not isinstance(select_k_best, int) or select_k_best < 1:
            raise ValueError(f"select_k_best must be a positive integer, got {select_k_best!r}.")
        scores = mutual_information_scores(X, y_train)
        keep = np.sort(np.argsort(-scores, kind="stable")[: min(select_k_best, X.shape[1])])
        X, terms = X[:, keep], terms[keep]
        if X_test is not None:
            X_test = X_test[:, keep]
    return X, X_test, tuple(str(t) for t in terms)


_QUOTE_LINE = re.compile(r"(writes in|writes:|wrote:|says:|said:|^In article|^Quoted from|^\||^>)")


def _strip_headers(text: str) -> str:
    return text.partition("\n\n")[2]


def _strip_quotes(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not _QUOTE_LINE.search(line))


def _strip_footer(text: str) -> str:
    # A signature is taken to follow the last line that is blank or all hyphens.
    lines = text.strip().split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip().strip("-") == "":
            break
    return "\n".join(lines[:index]) if index > 0 else text


_STRIPPERS = {"headers": _strip_headers, "footers": _strip_footer, "quotes": _strip_quotes}


def _read_newsgroups_archive(path: Path) -> dict[str, dict[str, list[str]]]:
    """Messages and group names of both splits, read straight from the tar."""
    splits = {"train": {"data": [], "group": []}, "test": {"data": [], "group": []}}
    with tarfile.open(path, "r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        members.sort(key=lambda m: m.name)
        for member in members:
            parts = member.name.split("/")
            if len(parts) != 3 or not parts[0].startswith("20news-bydate-"):
                continue
            split = parts[0].removeprefix("20news-bydate-")
            if split not in splits:
                continue
            # The messages are 8-bit Usenet text; latin-1 decodes every byte.
            text = archive.extractfile(member).read().decode("latin-1")
            splits[split]["data"].append(text)
            splits[split]["group"].append(parts[1])
    if not splits["train"]["data"] or not splits["test"]["data"]:
        raise ValueError(
            f"{path} holds no 20news-bydate-train/<group>/<id> and "
            "20news-bydate-test/<group>/<id> messages; it is not the bydate archive."
        )
    return splits


def _newsgroups_text(path: Path) -> dict[str, dict[str, list[str]]]:
    """Parsed messages, cached as gzip JSON in the cache folder keyed by the archive digest."""
    digest, _ = _digests(path)
    cache = get_cache_home() / "20newsgroups" / f"20news-bydate-{digest[:16]}.json.gz"
    if cache.is_file():
        try:
            with gzip.open(cache, "rt", encoding="utf-8") as stream:
                return json.load(stream)
        except (OSError, ValueError, EOFError):
            cache.unlink(missing_ok=True)
    splits = _read_newsgroups_archive(path)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(prefix=".20news.", suffix=".part", dir=cache.parent)
        # Level 1: the cache is read back at several times the speed of level 9.
        with os.fdopen(handle, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as out:
                out.write(json.dumps(splits).encode("utf-8"))
        os.replace(partial, cache)
    except OSError:
        # A read-only cache folder only costs the parse on the next load.
        pass
    return splits


def _select_groups(categories) -> tuple[str, ...]:
    if categories is None:
        return _NEWS_GROUPS
    patterns = [categories] if isinstance(categories, str) else list(categories)
    selected = set()
    for pattern in patterns:
        matched = fnmatch.filter(_NEWS_GROUPS, pattern)
        if not matched:
            raise ValueError(
                f"category pattern {pattern!r} matches no newsgroup; "
                f"the groups are {list(_NEWS_GROUPS)}."
            )
        selected.update(matched)
    return tuple(g for g in _NEWS_GROUPS if g in selected)


@_loader("20newsgroups")
def _load_20newsgroups(
    data_home, *, download, verify, categories=None, remove=(), vectorizer="tfidf",
    max_features=None, select_k_best=None,
) -> Dataset:  # fmt: skip
    remove = (remove,) if isinstance(remove, str) else tuple(remove)
    unknown = set(remove) - set(_STRIPPERS)
    if unknown:
        raise ValueError(f"remove may hold {tuple(_STRIPPERS)}, got {sorted(unknown)}.")
    groups = _select_groups(categories)
    path = fetch_file(_NEWS_ARCHIVE, data_home, download=download, verify=verify)
    group_index = {g: i for i, g in enumerate(groups)}
    splits = _newsgroups_text(path)
    out = {}
    for split in ("train", "test"):
        keep = [i for i, g in enumerate(splits[split]["group"]) if g in group_index]
        docs = [splits[split]["data"][i] for i in keep]
        for name in ("headers", "footers", "quotes"):
            if name in remove:
                docs = [_STRIPPERS[name](d) for d in docs]
        labels = np.array([group_index[splits[split]["group"][i]] for i in keep], dtype=np.int64)
        out[split] = (docs, labels)
    (docs, y), (docs_test, y_test) = out["train"], out["test"]
    if vectorizer is None:
        if max_features is not None or select_k_best is not None:
            raise ValueError(
                "max_features and select_k_best need a vectorizer; got vectorizer=None."
            )
        X, X_test, terms = docs, docs_test, None
    else:
        X, X_test, terms = _vectorize(
            docs, docs_test, y, vectorizer=vectorizer,
            max_features=max_features, select_k_best=select_k_best,
        )  # fmt: skip
    return _dataset(
        "20newsgroups", X, y, [path], X_test=X_test, y_test=y_test,
        feature_names=terms, target_names=groups,
        metadata={"vectorizer": vectorizer, "remove": remove},
    )  # fmt: skip


def _parse_smart(text: str) -> dict[int, str]:
    """Documents of a SMART-format file: ``.I <id>`` then fields such as ``.W``."""
    documents, current, lines = {}, None, []
    for line in text.splitlines():
        if line.startswith(".I"):
            if current is not None:
                documents[current] = " ".join(lines).strip()
            current, lines = int(line[2:].strip()), []
        elif line.startswith(".") and len(line.strip()) == 2:
            continue  # field marker such as .W
        else:
            lines.append(line.strip())
    if current is not None:
        documents[current] = " ".join(lines).strip()
    return documents


def _medline_texts(data_home, download, verify) -> tuple[dict[str, str], list[Path]]:
    members = {}
    paths = []
    for member, data_file in _MED_MEMBERS.items():
        path = _find_local(data_file, data_home)
        if path is None:
            break
        if verify:
            _check_digest(data_file, path)
        members[member] = path.read_text(encoding="latin-1")
        paths.append(path)
    else:
        return members, paths
    archive_path = fetch_file(_MED_ARCHIVE, data_home, download=download, verify=verify)
    with tarfile.open(archive_path, "r:gz") as archive:
        names = {Path(m.name).name: m for m in archive.getmembers() if m.isfile()}
        for member in _MED_MEMBERS:
            if member not in names:
                raise ValueError(
                    f"{archive_path} has no member {member}; it is not the MED archive."
                )
            members[member] = archive.extractfile(names[member]).read().decode("latin-1")
    return members, [archive_path]


@_loader("medline")
def _load_medline(
    data_home, *, download, verify, query=None, vectorizer="tfidf", max_features=None,
    select_k_best=None,
) -> Dataset:  # fmt: skip
    members, paths = _medline_texts(data_home, download, verify)
    documents = _parse_smart(members["MED.ALL"])
    queries = _parse_smart(members["MED.QRY"])
    doc_ids = sorted(documents)
    row = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    query_ids = sorted(queries)
    relevance = np.zeros((len(doc_ids), len(query_ids)), dtype=np.int64)
    column = {q: j for j, q in enumerate(query_ids)}
    for line in members["MED.REL"].splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] != "0":
            relevance[row[int(fields[2])], column[int(fields[0])]] = 1
    if query is None:
        if select_k_best is not None:
            raise ValueError(
                "select_k_best ranks terms against one query's labels; pass query=k too."
            )
        y = relevance
    else:
        if query not in column:
            raise ValueError(
                f"query must be one of {query_ids[0]}..{query_ids[-1]}, got {query!r}."
            )
        y = relevance[:, column[query]].copy()
    texts = [documents[d] for d in doc_ids]
    if vectorizer is None:
        if max_features is not None:
            raise ValueError("max_features needs a vectorizer; got vectorizer=None.")
        X, terms = texts, None
    else:
        X, _, terms = _vectorize(
            texts, None, y, vectorizer=vectorizer, max_features=max_features,
            select_k_best=select_k_best,
        )  # fmt: skip
    return _dataset(
        "medline", X, y, paths, feature_names=terms,
        metadata={
            "doc_id": np.array(doc_ids, dtype=np.int64),
            "queries": tuple(queries[q] for q in query_ids),
            "query": query, "vectorizer": vectorizer,
        },
    )  # fmt: skip


# --------------------------------------------------------------------------- #
# Labels
# --------------------------------------------------------------------------- #


def binary_task(y, positive) -> np.ndarray:
    """Turn multiclass labels into a one-versus-rest task with labels +1 / -1.

    Meilă (2002), Table 1, uses "class 1 vs all others" for cmc and "class 2
    vs all others" for glass.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels.
    positive : label or collection of labels
        The class (or classes) labelled +1; every other class is -1.

    Returns
    -------
    y_binary : ndarray of shape (n_samples,), int64
        +1 for ``positive``, -1 otherwise.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    if isinstance(positive, (set, frozenset)):
        positive = sorted(positive)
    positives = np.atleast_1d(np.asarray(positive))
    is_positive = np.isin(y, positives)
    present = np.unique(y)
    if not is_positive.any():
        raise ValueError(
            f"positive class {positive!r} does not occur in y; "
            f"its classes are {present.tolist()}."
        )
    if is_positive.all():
        raise ValueError(
            f"every label is in the positive class {positive!r}; a binary task needs "
            f"other classes too (y has {present.tolist()})."
        )
    return np.where(is_positive, 1, -1).astype(np.int64)


def pair_task(X, y, positive, negative):
    """Keep two classes and label them +1 / -1 (e.g. digit a vs digit b).

    Meilă (2002), Table 1, builds the "digiab" tasks this way from the
    handwritten digits, ``a, b in {0, 1, 2, 6}``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    positive, negative : label
        The class labelled +1 and the class labelled -1; rows of other
        classes are dropped.

    Returns
    -------
    X_pair : same type as X
        The rows of the two classes, in their original order.
    y_pair : ndarray, int64
        +1 for ``positive``, -1 for ``negative``.
    """
    y = np.asarray(y)
    if positive == negative:
        raise ValueError(f"positive and negative must be different classes, both are {positive!r}.")
    present = np.unique(y).tolist()
    for label in (positive, negative):
        if label not in present:
            raise ValueError(f"class {label!r} does not occur in y; its classes are {present}.")
    keep = np.flatnonzero((y == positive) | (y == negative))
    return X[keep], np.where(y[keep] == positive, 1, -1).astype(np.int64)


# --------------------------------------------------------------------------- #
# Synthetic data of Meilă (2002)
# --------------------------------------------------------------------------- #


def _class_sizes(n_samples: int, weights) -> tuple[int, int]:
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}.")
    if weights is None:
        weights = (0.5, 0.5)
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if weights.size == 1:
        weights = np.array([weights[0], 1.0 - weights[0]])
    if weights.size != 2 or np.any(weights <= 0) or not np.isclose(weights.sum(), 1.0):
        raise ValueError(
            f"weights must be two positive class proportions summing to 1 "
            f"(positive class first), got {weights.tolist()}."
        )
    n_positive = int(round(n_samples * weights[0]))
    n_positive = min(max(n_positive, 1), n_samples - 1)
    return n_positive, n_samples - n_positive


def make_concentric_circles(
    n_samples=300, *, radii=(1.0, 2.0), noise=0.25, weights=None, shuffle=True, random_state=None
):
    """Two classes normally distributed around two concentric circles in 2-D.

    The data of Meilă (2002), Fig. 1 and Section 6: each point is
    ``r_c (cos t, sin t) + noise * N(0, I_2)`` with ``t`` uniform on
    ``[0, 2 pi)``, ``r_c = radii[0]`` for the positive (inner) class and
    ``radii[1]`` for the negative (outer) class. With the defaults (radii 1
    and 2, noise 0.25) the rings are 4 standard deviations apart: the classes
    overlap a little (Bayes error about 2%), so they are not linearly or
    trivially separable, but an RBF or degree-2 polynomial SVM separates them
    well.

    Parameters
    ----------
    n_samples : int, default=300
        Number of points (Meilă's training sets have 300).
    radii : (float, float), default=(1.0, 2.0)
        Radii of the inner (+1) and outer (-1) circles.
    noise : float, default=0.25
        Standard deviation of the isotropic Gaussian around each circle.
    weights : float or (float, float), default=None
        Class proportions, positive (inner) first; None for balanced classes.
    shuffle : bool, default=True
        Whether to shuffle the rows; otherwise positives come first.
    random_state : int, RandomState instance or None, default=None
        Seed of the draw, for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,), int64
        +1 (inner circle) or -1 (outer circle).

    References
    ----------
    M. Meilă, "Data centering in feature space", 2002, Fig. 1.
    """
    n_positive, n_negative = _class_sizes(n_samples, weights)
    radii = tuple(float(r) for r in radii)
    if len(radii) != 2 or min(radii) <= 0 or radii[0] == radii[1]:
        raise ValueError(f"radii must be two different positive numbers, got {radii!r}.")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}.")
    rng = check_random_state(random_state)
    sizes = (n_positive, n_negative)
    blocks = []
    for radius, size in zip(radii, sizes):
        angle = rng.uniform(0.0, 2.0 * np.pi, size)
        ring = radius * np.column_stack([np.cos(angle), np.sin(angle)])
        blocks.append(ring + noise * rng.standard_normal((size, 2)))
    X = np.vstack(blocks)
    y = np.concatenate([np.ones(n_positive, np.int64), -np.ones(n_negative, np.int64)])
    if shuffle:
        order = rng.permutation(n_samples)
        X, y = X[order], y[order]
    return X, y


def make_imbalanced(
    n_samples=210, ratio=20, *, radii=(1.0, 2.0), noise=0.25, shuffle=True, random_state=None
):
    """Concentric circles with ``ratio`` times more positive than negative points.

    The unbalanced experiment of Meilă (2002), Section 6 and Fig. 5, where
    ``n+ = 20 n-``: the inner class (+1) is the majority. The sizes are
    ``n- = round(n_samples / (ratio + 1))`` and ``n+ = n_samples - n-``, so
    ``n+ = ratio * n-`` exactly when ``ratio + 1`` divides ``n_samples``.

    Parameters
    ----------
    n_samples : int, default=210
        Number of points.
    ratio : float, default=20
        ``n+ / n-``; must be > 0. A ratio below 1 makes the outer class the
        majority.
    radii, noise, shuffle, random_state
        As in :func:`make_concentric_circles`.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,), int64
        +1 (inner circle, majority) or -1 (outer circle).
    """
    if not np.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"ratio must be a positive number, got {ratio!r}.")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}.")
    n_negative = int(round(n_samples / (ratio + 1.0)))
    if n_negative < 1 or n_negative >= n_samples:
        raise ValueError(
            f"n_samples={n_samples} with ratio={ratio} leaves a class empty; "
            f"use n_samples >= {int(np.ceil(ratio + 1))}."
        )
    return make_concentric_circles(
        n_samples,
        radii=radii,
        noise=noise,
        weights=((n_samples - n_negative) / n_samples, n_negative / n_samples),
        shuffle=shuffle,
        random_state=random_state,
    )
