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
``verify=False`` to read a copy you have changed on purpose). The cache folder
also keeps the parsed 20 Newsgroups messages (gzip JSON keyed by the archive's
digest), so the archive is parsed once.

The generators :func:`make_concentric_circles` and :func:`make_imbalanced`
draw the two-dimensional data of Meilă (2002), Fig. 1 and Section 6;
:func:`binary_task` and :func:`pair_task` make the two-class tasks of its
Table 1 from multiclass labels.

The modules of this package:

- ``_registry``: :class:`DataFile`, :class:`DatasetInfo` and :data:`REGISTRY`;
- ``_fetch``: locating, verifying and downloading files (:func:`fetch_file`);
- ``_dataset``: the :class:`Dataset` container, the table of loaders and :func:`load`;
- ``_tabular``, ``_images``, ``_text``: the loaders (UCI tables and digits;
  USPS and COIL-20; 20 Newsgroups and Medline, with
  :func:`mutual_information_scores`);
- ``_tasks``: :func:`binary_task`, :func:`pair_task`;
- ``_synthetic``: the generators of Meilă (2002).

A new data set takes three steps: describe its files (``DataFile`` with path,
sha256 and URLs) and the set itself (``DatasetInfo``) in ``_registry``; write
a loader ``_load_<name>(data_home, *, download, verify, <options>)`` that reads
its files through :func:`fetch_file` and returns ``_dataset(name, X, y, files,
...)``; decorate it with ``@_loader(name)`` in the module of its kind of data.
Its keyword-only options become the options :func:`load` accepts for it.

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

# The loader modules register their loaders with load() when imported.
from . import _images, _tabular, _text  # noqa: F401
from ._dataset import Dataset, load
from ._fetch import (
    CACHE_ENV,
    DATA_ENV,
    ChecksumError,
    DatasetNotFoundError,
    fetch_file,
    get_cache_home,
)
from ._images import load_svmlight_usps
from ._registry import REGISTRY, DataFile, DatasetInfo, list_datasets
from ._synthetic import make_concentric_circles, make_imbalanced
from ._tasks import binary_task, pair_task
from ._text import mutual_information_scores

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
