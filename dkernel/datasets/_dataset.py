"""The :class:`Dataset` container, the table of loaders and :func:`load`.

Each loader module registers its functions here with :func:`_loader`; the
keyword-only parameters of a loader, other than ``download`` and ``verify``,
are the options :func:`load` accepts for that data set.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._registry import REGISTRY, list_datasets


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
            ``max_features``, ``select_k_best`` (needs ``query``), ``stem``
            (Porter stems of the words, PyStemmer, as Kandola et al. §6).

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

