"""The Gram protocol and its sources: in memory, on demand, on the fly, and zarr stores computed by Dask.

Every Gram source has ``n``, ``rows(idx)``, ``diag()``, ``block(i, j)`` and
``.dask`` (:mod:`._sources`); the solver reads only ``n``, ``rows``, ``diag``
and ``submatrix``, so every source, and every view of :mod:`dkernel.views`
over one, trains an SVM unchanged.

A :class:`GramMatrix` holds ``K(X, Z)`` (``Z = X`` by default) as a grid of
square blocks. Each block is one Dask task that evaluates the kernel on a row
block of X and a row block of Z and, with a store, writes the result straight
from the worker into its zarr chunk. For ``K(X, X)`` only the blocks on and
above the diagonal are evaluated: the task of block (i, j), i < j, also writes
its transpose into chunk (j, i), which halves the kernel work and makes the
stored matrix exactly symmetric.

Integrity: the task of a block also writes the CRC-32C of each row of the
block (and of its mirror) before its done flag. Every read (``rows``,
``submatrix``, ``block``, ``diag``, ``to_numpy``, ``in_memory``, the tasks of
``.dask``) checks the rows it returns; damaged data, a missing or truncated
shard, or a file that zarr cannot decode raise :class:`CorruptStoreError`
naming the block and the command that rewrites it, never garbage values.
:meth:`GramMatrix.verify` (``dkernel verify``) checks every block; re-running
:meth:`GramMatrix.compute` on a store first verifies the blocks it holds and
recomputes the damaged ones with the missing ones. Stores of format versions
1 and 2 have no checksums: they are read unverified, with an
:class:`UnverifiedStoreWarning`.

The package, one concept per module, in the order they build on each other:

=================== ==========================================================
``_sources``        the Gram protocol; in-memory and subset sources
``_on_the_fly``     :class:`KernelGram`: rows evaluated from ``X`` as asked,
                    through a row cache
``_in_memory``      a training Gram held in memory: whole, in row bands, or
                    rows on demand until the rest of it is cheaper
``_format``         the store format: layout, version, attributes, provenance,
                    data fingerprint
``_corruption``     how a damaged store is reported, and the repair it names
``_grid``           the block grid
``_checksums``      CRC-32C checksums of the stored rows
``_metadata``       the store's attributes checked against their own checksums
``_identity``       the write identity of a store: its writers hold it, its
                    readers check it
``_shards``         the byte format of the shards of an uncompressed store
``_blocks``         where the blocks live: a store, this process, a cluster
``_store``          creating and replacing stores safely (computed and derived)
``_compute``        blockwise evaluation and runs: in memory, into a store
``_matrix``         the :class:`GramMatrix` itself
``_summary``        a store described in words (``dkernel info``, ``verify``)
=================== ==========================================================
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._matrix": ("GramMatrix",),
    "._sources": ("DenseGram", "KernelGram", "SubsetGram", "as_gram", "principal_submatrix", "source_columns",
                  "source_dask", "source_diag", "source_n"),
    "._corruption": ("corruption_message", "gram_command", "repair_hint"),
    "._format": ("STORE_FORMAT", "STORE_VERSION", "data_fingerprint", "describe_operators", "describe_step",
                 "matrix_form", "origin_step", "steps_from_description", "store_size_bytes", "weights_fingerprint"),
    "._store": ("check_output_store", "check_store_path", "write_view_store"),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
