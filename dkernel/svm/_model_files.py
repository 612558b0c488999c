"""``save`` and ``load`` of every estimator whose models :mod:`._persist` writes (the SVMs, the Parzen window
classifier, kernel PCA): one pair of methods over the one writer and reader."""

from sklearn.utils.validation import check_is_fitted

from . import _persist_remote

__all__ = ["ModelFileMixin"]


class ModelFileMixin:
    """``save(path, overwrite=False)`` and ``load(path)`` of a fitted estimator of a format of :mod:`._persist`."""

    def save(self, path, *, overwrite=False, storage_options=None):
        """Write the fitted model to the folder ``path``: arrays in zarr, the rest JSON, with checksums; no pickle.

        The model is written beside ``path`` and moved into place when complete
        (:mod:`dkernel._runtime.artifacts`), so an interrupted save never leaves a half-written model and never
        loses the model it replaces. :meth:`load` and :func:`dkernel.load_model` read it back, verified.

        Parameters
        ----------
        path : str or path-like
            A folder, or an fsspec URL (``"s3://bucket/model"``): there the model is written under a fresh
            versioned prefix and committed by a manifest written last (no rename; :mod:`._persist_remote`).
        overwrite : bool, default=False
            Replace a model of this estimator at ``path``. Anything else (a model of another estimator, a Gram
            store, a folder of other files, a file) is refused and left as it is.
        storage_options : dict, default=None
            For a URL: the filesystem's options (s3fs: ``endpoint_url``, ``key``...); never written.

        Returns
        -------
        str
            The absolute path of the model (a URL as given).

        Raises
        ------
        ArtifactPathError
            A ``FileExistsError``: ``path`` holds anything but a model of this estimator, or one without
            ``overwrite``.
        ValueError
            The model holds something JSON cannot (a kernel given as a Python function).
        """
        check_is_fitted(self)
        return _persist_remote.save_model(self, path, overwrite, storage_options)

    @classmethod
    def load(cls, path, *, storage_options=None):
        """Read a model written by :meth:`save` (a folder, or a URL with ``storage_options``), after checking its
        checksums.

        Raises
        ------
        CorruptModelError
            The model is damaged, or ``path`` holds no dkernel model.
        ModelFormatError
            ``path`` holds the model of another estimator (:func:`dkernel.load_model` reads any).
        """
        return _persist_remote.read_model(path, cls, storage_options)
