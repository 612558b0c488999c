"""The registry of data sets: every file a loader reads, where it comes from and its digests.

A :class:`DataFile` names one file by its path inside the data folder, its
sha256 (and MD5 where that is the only published checksum) and the public URLs
that serve those exact bytes. A :class:`DatasetInfo` describes one data set of
:func:`~dkernel.datasets.load` and lists the files its loader may read.
:data:`REGISTRY` maps each name to its description.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


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


def _uci_file(remote: str, sha256: str, note: str) -> DataFile:
    """A file of the UCI repository, kept under ``uci/`` by its UCI file name."""
    name = remote.rsplit("/", 1)[-1]
    return DataFile(f"uci/{name}", sha256=(sha256,), urls=(f"{_UCI}/{remote}",), note=note)


_WDBC = _uci_file(
    "breast-cancer-wisconsin/wdbc.data",
    "d606af411f3e5be8a317a5a8b652b425aaf0ff38ca683d5327ffff94c3695f4a",
    "UCI file, byte copy from makaylatang/Breast-Cancer-Diagnosis-Classification "
    "@aededef9 data/wdbc.data.",
)
_GLASS = _uci_file(
    "glass/glass.data",
    "dd67373f4baf2807345df02cbfef2093d342e61ad0d82a4fb79af43ef8ce449d",
    "UCI file, byte copy from acraig07/KNN-algorithm @f7842782 glass.data.",
)
_CMC = _uci_file(
    "cmc/cmc.data",
    "ad2a49da55df24b061a994ecc4d90c856aba35acd05138851aa251c4f06303c9",
    "UCI file, byte copy from PromiKhan/Contraceptive-Methods @7a1a2773 cmc.data.",
)
_MUSHROOM = _uci_file(
    "mushroom/agaricus-lepiota.data",
    "e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",
    "UCI file, byte copy from robintux/Datasets4StackOverFlowQuestions @f52993bf.",
)
_AUTO_MPG = _uci_file(
    "auto-mpg/auto-mpg.data",
    "48b830e11feee5572525f8f1691ddb9d38d3d7b7063edcd8fca672c2a5e17d8d",
    "UCI file (30,286 bytes, as in the UCI Index); taken from "
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
    member: DataFile(f"medline/{member}", sha256=(sha256,), note="Member of medline/med.tar.gz.")
    for member, sha256 in (
        ("MED.ALL", "fdcd99cf7fc6c45707c9b5bef7daac739f06c4063ebcad9b5cccf2f939fa4236"),
        ("MED.QRY", "41fbc9d7a0ac8620d53e09b3429d2695cecc63d4bf7e15e55bbcee0785a1798c"),
        ("MED.REL", "aef5ac922c08d5711ffd525985e03cda4272694e35f646deab90177f329ff575"),
    )
}

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
                _WDBC.urls,
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
                _GLASS.urls,
            ),
            DatasetInfo(
                "cmc",
                "Contraceptive Method Choice (UCI): 1473 x 9 demographic attributes "
                "of the 1987 Indonesia survey; y = 1 no-use (629), 2 long-term (333), "
                "3 short-term (511). T.-S. Lim, 1997.",
                (_CMC,),
                _CMC.urls,
            ),
            DatasetInfo(
                "mushroom",
                "Mushroom (UCI agaricus-lepiota): 8124 mushrooms, 22 categorical "
                "attributes one-hot encoded with the categories seen in the data "
                "(a missing stalk-root, '?', is its own category); y = 1 poisonous "
                "(3916), 0 edible (4208). J. Schlimmer, 1987.",
                (_MUSHROOM,),
                _MUSHROOM.urls,
            ),
            DatasetInfo(
                "auto-mpg",
                "Auto MPG (UCI): regression of fuel consumption y = mpg on cylinders, "
                "displacement, horsepower, weight, acceleration, model year and "
                "origin; the 6 rows with unknown horsepower are dropped (392 rows) "
                "and the car name is not used. Quinlan, 1993.",
                (_AUTO_MPG,),
                _AUTO_MPG.urls,
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

