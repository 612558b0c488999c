"""Locating, verifying and downloading the registry's data files.

:func:`fetch_file` looks in ``data_home``, then in ``$DKERNEL_DATA``, then in
the cache folder (:func:`get_cache_home`), and else downloads into the cache
folder, keeping a download only when it matches a recorded digest. A file found
locally is checked against its digests before it is read, unless
``verify=False``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterable
from pathlib import Path

from ..exceptions import DKernelError
from ._registry import DataFile

DATA_ENV = "DKERNEL_DATA"
CACHE_ENV = "DKERNEL_CACHE"
_DOWNLOAD_TIMEOUT_S = 60
_CHUNK = 1 << 20


class DatasetNotFoundError(DKernelError, FileNotFoundError):
    """A data file is neither in a local data folder nor downloadable."""


class ChecksumError(DKernelError, OSError):
    """A data file does not match any digest recorded in the registry."""


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

