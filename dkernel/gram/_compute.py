"""Blockwise evaluation of a Gram and its runs: in this process, on a cluster's workers, or into a store.

Each block is one Dask task that evaluates the kernel on a row block of X and
a row block of Z and, with a store, writes the result straight from the worker
into its zarr chunk. For ``K(X, X)`` only the blocks on and above the diagonal
are evaluated: the task of block (i, j), i < j, also writes its transpose into
chunk (j, i), which halves the kernel work and makes the stored matrix exactly
symmetric.

A block's ``done`` flag is written by the task that computed it, after its
chunk writes (both chunks of a mirrored pair) and its checksums returned, so
an interrupted run never leaves a block that claims to be finished. A run
holds the store it writes (:mod:`dkernel.gram._identity`): each task writes
through the folder it checked to be that store, still claimed by its run, so
a store replaced or taken over by another run never receives its blocks.
Re-running a computation on the same store first verifies the blocks it holds,
then evaluates only the blocks not flagged and the damaged ones. On a
cluster, every worker must reach the store's path: one machine, a shared
filesystem, or an object store.
"""

import contextlib
import errno
import os
import time
import uuid

import dask
import dask.array as da
import numpy as np
import zarr
from dask.system import CPU_COUNT
from threadpoolctl import threadpool_info, threadpool_limits

from .._runtime import artifacts
from .._runtime.buffers import block_buffer, release_pool
from .._runtime.client import compute_with_progress, put_data, wait_with_progress
from .._runtime.progress import TextProgress
from ..exceptions import IncompleteStoreError
from ._blocks import _ClusterBlocks, _evaluate_block, _MemoryBlocks, _warn_unverified, _ZarrBlocks
from ._checksums import _Checksums
from ._format import _ARRAY_CONFIG, _remove_chunk
from ._identity import StoreLostError, claim, held
from ._shards import _ShardFiles
from ._store import _prepare_store

__all__ = []


def _write_block(X, Z, kernel, grid, i, j, dtype, holder, run_id, checksum_spec=None):
    """Evaluate block (i, j), write it (and its mirror) and their checksums into the store, then flag it done.

    ``holder`` is the run's :class:`~dkernel.gram._identity.Claim`: the
    block is written through the store's folder held open, once it is
    checked to be that store still claimed by this run, and flagged done only
    if it still is after the writes (:func:`~dkernel.gram._identity.held`).
    For an uncompressed store the block is evaluated into a buffer of this
    process's pool for ``run_id`` (:mod:`dkernel._runtime.buffers`), reused by the
    run's next block on this thread; the task's arguments hold no block
    memory. ``checksum_spec`` is the store's checksum segment width and key
    (its ``write_id`` from format version 4, else None), None for a store
    written without checksums. Returns the number of blocks evaluated (1),
    so a run can count its work.
    """
    rows, cols = grid.rows(i), grid.cols(j)
    with held(holder.path, holder.write_id, holder.run) as folder:
        root = folder.root
        store = zarr.open_array(store=root, path="K", mode="r+", config=_ARRAY_CONFIG)
        shards = _ShardFiles.of(store, os.path.join(root, "K"))
        checksums = None if checksum_spec is None else _Checksums(root, grid, np.dtype(dtype).itemsize,
                                                                  *checksum_spec)
        if shards is not None:
            shape = (rows.stop - rows.start, cols.stop - cols.start)
            buffer = block_buffer(run_id, shape, dtype, grid.rc * grid.cc * np.dtype(dtype).itemsize)
        else:
            buffer = contextlib.nullcontext()
        with buffer as out:
            table = None
            if checksums is None:
                K = _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=out)
            else:
                K, table = _evaluate_block(X, Z, kernel, grid, i, j, dtype, out=out, checksums=checksums)
            folder.check()  # the evaluation took a while: still this run's store?
            _write_evaluated(K, table, root, store, shards, grid, i, j, checksums)
            del K
        folder.check()
        # The flags come last: only chunks whose writes returned are marked complete.
        done = zarr.open_array(store=root, path="done", mode="r+", config=_ARRAY_CONFIG)
        done[i, j] = 1
        if grid.symmetric and i != j:
            done[j, i] = 1
    return 1


def _write_evaluated(K, table, root, store, shards, grid, i, j, checksums):
    """Write the evaluated block ``K`` (its mirror, its diagonal) and their checksums into the store at ``root``.

    ``store`` is its array ``K``, ``shards`` its shard files (None when zarr writes them).
    """
    rows, cols = grid.rows(i), grid.cols(j)
    mirrored = grid.symmetric and i != j
    mirror_table = None
    if shards is not None:
        shards.write(i, j, K)
        if mirrored:
            mirror_table = shards.write(j, i, K, transposed=True, checksums=checksums)
    else:
        # A block is written whole: its old chunk (perhaps damaged) is not read back.
        _remove_chunk(root, "K", store, (i, j))
        store[rows, cols] = K
        if mirrored:
            # zarr copies a transposed (Fortran-ordered) view element by element; one
            # contiguous copy first is several times faster.
            KT = np.ascontiguousarray(K.T)
            _remove_chunk(root, "K", store, (j, i))
            store[cols, rows] = KT
            if checksums is not None:
                mirror_table = checksums.of_rows(KT)
            del KT
    if grid.symmetric and i == j:
        diagonal = zarr.open_array(store=root, path="diag", mode="r+", config=_ARRAY_CONFIG)
        _remove_chunk(root, "diag", diagonal, (i,))
        diagonal[rows] = np.diagonal(K)
        if checksums is not None:
            checksums.write_diagonal(i, np.diagonal(K).astype(diagonal.dtype))
    if checksums is not None:
        checksums.write(i, j, table)
        if mirrored:
            checksums.write(j, i, mirror_table)


def _data_keys(X, Z, grid, client):
    """X and Z put into the graph once each (one key every block task reads; Z is X for K(X, X))."""
    Xk = put_data(X, client, name="gram-X-" + dask.base.tokenize(id(X), X.shape))
    Zk = Xk if grid.symmetric else put_data(Z, client, name="gram-Z-" + dask.base.tokenize(id(Z), Z.shape))
    return Xk, Zk


def _compute_in_memory(X, Z, kernel, grid, dtype, client, owned, options):
    """Evaluate the blocks into this process's memory, or, with a distributed client, into its workers' memory."""
    Xk, Zk = _data_keys(X, Z, grid, client)
    pairs = grid.evaluated_blocks()
    tasks = [dask.delayed(_evaluate_block, pure=False)(Xk, Zk, kernel, grid, i, j, dtype) for i, j in pairs]
    if client is None:
        with _local_blas_threads(client, len(tasks)):
            results = compute_with_progress(tasks, None, options.progress, label="blocks")
        blocks = {}
        for (i, j), K in zip(pairs, results):
            blocks[i, j] = K
            if grid.symmetric and i != j:
                blocks[j, i] = K.T
        return _MemoryBlocks(blocks), len(pairs)

    row_sizes, col_sizes = grid.dask_chunks()
    by_pair = dict(zip(pairs, tasks))
    grid_arrays = []
    for i in range(grid.n_row_blocks):
        row = []
        for j in range(grid.n_col_blocks):
            shape = (row_sizes[i], col_sizes[j])
            if (i, j) in by_pair:
                row.append(da.from_delayed(by_pair[i, j], shape=shape, dtype=dtype))
            else:
                mirrored = dask.delayed(np.transpose, pure=True)(by_pair[j, i])
                row.append(da.from_delayed(mirrored, shape=shape, dtype=dtype))
        grid_arrays.append(row)
    array = client.persist(da.block(grid_arrays))
    futures = _futures_of(array)
    bar = TextProgress(len(futures), "blocks", enabled=options.progress)
    try:
        wait_with_progress(client, futures, bar)
    finally:
        bar.close()
    return _ClusterBlocks(array, client, owned), len(pairs)


def _futures_of(collection):
    # Imported here: distributed is a heavy import that runs without a cluster do not need.
    from distributed import futures_of

    return futures_of(collection)


def _local_blas_threads(client, n_tasks):
    """Share the cores between the block tasks that Dask's local scheduler runs at once (in memory or into a store).

    A context manager limiting BLAS to ``cores / tasks running at once``
    threads (never more than it has): each task makes one BLAS call, then
    element-wise passes and file writes, and further BLAS threads only take
    the cores from the other tasks (OpenBLAS threads also spin while they
    wait for work). Products computed with other thread counts may differ in
    the last bit, so such a store can differ from an in-memory Gram by
    rounding. A no-op with a distributed client (its workers set their own
    limits).
    """
    if client is not None:
        return contextlib.nullcontext()
    current = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    if not current:
        return contextlib.nullcontext()
    if dask.config.get("scheduler", None) in ("sync", "synchronous", "single-threaded"):
        running = 1
    else:
        running = dask.config.get("num_workers", None) or CPU_COUNT
    share = max(1, CPU_COUNT // max(1, min(running, n_tasks)))
    return threadpool_limits(limits=min(share, max(current)), user_api="blas")


def _release_buffers(client, run_id):
    """Drop the block buffers of a finished run, in this process or on every worker."""
    if client is None:
        release_pool(run_id)
        return
    with contextlib.suppress(Exception):  # a worker that died took its buffers with it
        client.run(release_pool, run_id)


def _compute_into_store(X, Z, kernel, grid, dtype, meta, target, overwrite, client, options):
    """Evaluate into the store at ``target`` the blocks it lacks or holds damaged; returns ``(blocks, n_computed)``.

    The run claims the store it writes (:func:`~dkernel.gram._identity.claim`)
    and holds it to the end: a replacement is swapped in only if the store
    at ``target`` is still the one it replaces.
    """
    try:
        path, write_id, replacing = _prepare_store(target, meta, grid, overwrite, options)
    except OSError as exc:
        _raise_if_no_space(exc, target)
        raise
    holder = claim(path, write_id)
    blocks = _ZarrBlocks(path, "r", write_id=write_id)
    done_before = blocks.done()
    repaired = _unflag_damaged_blocks(blocks, grid, done_before, options, holder)
    if repaired:
        done_before = blocks.done(refresh=True)
    checksum_spec = None if blocks.checksums is None else (blocks.checksums.seg, blocks.checksums.key)
    pairs = grid.evaluated_blocks(done=done_before)
    n_computed = 0
    started = time.perf_counter()
    try:
        if pairs:
            Xk, Zk = _data_keys(X, Z, grid, client)
            run_id = "gram-run-" + uuid.uuid4().hex
            tasks = [dask.delayed(_write_block, pure=False)(Xk, Zk, kernel, grid, i, j, dtype, holder, run_id,
                                                            checksum_spec)
                     for i, j in pairs]
            try:
                with _local_blas_threads(client, len(tasks)):
                    n_computed = sum(compute_with_progress(tasks, client, options.progress, label="blocks"))
            finally:
                _release_buffers(client, run_id)
    except StoreLostError:
        raise
    except Exception as exc:
        _raise_if_lost(holder, exc)
        _raise_if_no_space(exc, target)
        raise
    finally:
        _record_run(holder, blocks, done_before, n_computed, repaired, pairs, started)
    if replacing is not None:
        # Every block of the replacement is written: swap it in for the old store.
        if not blocks.done(refresh=True).all():
            raise IncompleteStoreError(
                f"the replacement of {target} in {path} is not complete; run the same computation again to "
                f"finish it (the old store is still in place)."
            )
        artifacts.install(path, target, "gram", replacing)
        blocks = _ZarrBlocks(target, "r", write_id=write_id)
    blocks.repaired = repaired
    return blocks, n_computed


def _raise_if_no_space(error, target):
    """For a full disk, raise from ``error`` an ``OSError`` that says so, naming the store ``target`` and the fix."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        raise OSError(error.errno, f"no space left on the device of the Gram store {target} ({error.strerror}); "
                                   f"the blocks written so far are kept: free space, then run the same computation "
                                   f"again to resume") from error


def _raise_if_lost(holder, error):
    """Raise :class:`StoreLostError` from ``error`` when the run's store was replaced or taken over meanwhile."""
    try:
        with held(holder.path, holder.write_id, holder.run):
            pass
    except StoreLostError as lost:
        raise lost from error


def _record_run(holder, blocks, done_before, n_computed, repaired, pairs, started):
    """Record the run's statistics in the store it still holds (nothing in a store another run holds now)."""
    with contextlib.suppress(StoreLostError, OSError):
        with held(holder.path, holder.write_id, holder.run) as folder:
            done = blocks.done(refresh=True)
            folder.update_attrs({
                "blocks_done": int(done.sum()),
                "last_run": {
                    "n_blocks_computed": n_computed,
                    "n_blocks_repaired": len(repaired),
                    "n_blocks_flagged": int(done.sum() - done_before.sum()),
                    "n_blocks_requested": len(pairs),
                    "seconds": round(time.perf_counter() - started, 3),
                },
            })


def _unflag_damaged_blocks(blocks, grid, done, options, holder):
    """Before a run resumes a store: find its damaged blocks and clear their done flags, so the run rewrites them.

    With ``options.verify``, every block flagged in ``done`` is read and
    checked against its checksums (:meth:`_ZarrBlocks.corrupt_blocks`).
    A store written without checksums is resumed unchecked, with a warning.
    Returns the damaged blocks.
    """
    if not done.any():
        return []
    if blocks.checksums is None:
        _warn_unverified(blocks)
        return []
    if not options.verify:
        return []
    bad = blocks.corrupt_blocks(grid, progress=options.progress, done=done)
    if bad:
        with held(holder.path, holder.write_id, holder.run) as folder:
            flags = zarr.open_array(store=folder.root, path="done", mode="r+", config=_ARRAY_CONFIG)
            for i, j in bad:
                flags[i, j] = 0
    return bad
