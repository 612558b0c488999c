"""The solver's entry points: validate once, choose where the gradient lives, run the outer loop.

.. math::

    \\min_\\alpha \\tfrac12 \\alpha^\\top Q \\alpha + p^\\top \\alpha
    \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le C_i,\\; E\\alpha = e,
    \\qquad Q_{ij} = y_i y_j K_{ij}.

With one equality row ``y^T alpha = const`` the gradient is held by
:class:`~._shrinking.ShrinkingGradients` (this process) or, given a Dask client,
:class:`~._actors.ActorGradients` (one range of samples per worker); the
same loop then selects the same working sets. Two rows that fix the sum of
each label (libsvm's ν problems, :func:`~._qp.label_sums_only`) run the same
loop with libsvm's ``Solver_NU`` selection, their gradient where the loop runs.
Other rows are solved by the active-set loop, in this process or, given a
client, in a task on a worker. With a checkpoint the loop's state is
written to disk as it goes and a run resumes from it (:mod:`._checkpoint`);
on a cluster, the range of a lost worker is rebuilt elsewhere
(:mod:`._actors`).
"""

import dataclasses
import logging

import numpy as np

from ._loop import general_equality_loop, label_constraint_loop
from ._shrinking import ShrinkingGradients, rows_read_from_memory
from ._qp import prepare_problem, qp_result
from ._rows import check_provider

logger = logging.getLogger("dkernel.solver")

__all__ = ["solve_qp", "solve_qp_distributed"]


def solve_qp(
    rows,
    y,
    C,
    *,
    p=None,
    E=None,
    e=None,
    tol=1e-3,
    working_set_size=None,
    max_iter=100_000,
    shrinking=True,
    alpha0=None,
    verbose=False,
    callback=None,
    client=None,
    checkpoint=None,
    coordinator=None,
):
    """Solve the SVM dual QP by block-coordinate decomposition.

    .. math::

        \\min_\\alpha \\tfrac12 \\alpha^\\top Q \\alpha + p^\\top \\alpha
        \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le C_i,\\; E\\alpha = e,
        \\qquad Q_{ij} = y_i y_j K_{ij}.

    Parameters
    ----------
    rows : row provider
        Object with ``n``, ``rows(idx) -> K[idx, :]`` and ``diag()``; see
        :class:`dkernel.DenseGram` and :class:`dkernel.KernelGram`.
    y : array-like of shape (n,)
        Labels in ``{-1, +1}``.
    C : float or array-like of shape (n,)
        Upper bounds, ``> 0`` (per-sample values implement class weights).
    p : array-like of shape (n,), default=-1
        Linear term.
    E : array-like of shape (l, n), default=y
        Equality rows. For the generalized bias of Li, Leung & Lee (eq. 24)
        use ``E[q, i] = y_i phi_q(x_i)``.
    e : array-like of shape (l,), default=0
        Right-hand side of ``E alpha = e``.
    tol : float, default=1e-3
        Stop when the maximal violating pair gap ``m(alpha) - M(alpha)`` is
        at most ``tol`` (libsvm's criterion).
    working_set_size : int, optional
        Variables per working set, at least 2. Default ``min(n, 128)`` with
        one equality row (``min(n, 512)`` with a client), ``min(n, max(64, 2 (l + 1)))`` with several (the
        sub-problem is then solved by a dense active-set method).
    max_iter : int, default=100000
        Outer iterations before stopping with a ``ConvergenceWarning``.
    shrinking : bool, default=True
        With one equality row, only variables that can still form a
        violating pair (libsvm's shrinking test) fill the working set. In
        this process, on a Gram held in memory, the variables stuck at a
        bound also leave the active set every few iterations: the gradient update and the search for
        violating pairs cover the active ones only, and their gradient is
        rebuilt exactly before the final check over all variables
        (:mod:`._shrinking`). On Dask workers the gradient of every variable
        is kept exact.
    alpha0 : array-like of shape (n,), optional
        Feasible starting point (warm start). By default zero, or a vertex of
        the feasible set found by linear programming when ``e != 0``.
    verbose : bool, default=False
        Show the progress on stderr: one status line (KKT gap against
        ``tol``, support vectors and free ones, elapsed time), rewritten in
        place on a terminal and printed every few seconds otherwise, then a
        final line saying whether the solver converged.
    callback : callable, optional
        ``callback(iteration, alpha, gap)`` before each iteration; returning
        True stops the solver (``stop_reason="callback"``).
    client : distributed.Client, optional
        Keep the gradient on the workers of this client, one contiguous range
        of samples per worker (:class:`~._actors.ActorGradients`; the row
        provider must then be picklable, and for efficiency implement
        ``submatrix`` or ``column_slab``). With several equality rows the
        whole loop, its gradient included, runs in one task on a worker
        (``coordinator="worker"``, the default; ``"client"`` runs it in this
        process), which reads its rows from ``rows`` there. Without a
        client the gradient lives in this process. When a worker dies during
        the solve, its range is rebuilt on another worker from ``alpha`` and
        the solve goes on (a warning on the ``dkernel.solver`` logger names
        the worker and the range).
    checkpoint : str, path-like or Checkpoint, optional
        Write the solver's state to this zarr folder every 30 s (or as a
        :class:`Checkpoint` says) and when the loop stops. When the folder
        holds a checkpoint of the same problem (same ``n``, ``y``, ``C``,
        ``p``, kernel, ``tol``, working-set size and ``shrinking``) the solve
        resumes from it, on the same path as an uninterrupted run (an INFO
        record on the ``dkernel.solver`` logger gives the iteration); the
        checkpoint of a solved problem returns its solution at once. A
        checkpoint of another problem raises ``ValueError``, anything else at
        the path :class:`~dkernel.exceptions.ArtifactPathError`; neither is
        modified. The checkpoint stays after the solve. One equality row,
        or two that fix the sum of each label (libsvm's ν problems).
    coordinator : {"worker", "client"}, optional
        With a client, where the outer loop runs (the working-set choice, the
        sub-problem, two calls to each worker's actor per iteration).
        ``"worker"``: in a task on one of the workers, so that the client
        process only waits (:mod:`._remote`; the progress lines and the
        solver's log records are shown in the client as they come; a
        ``callback`` is then called on that worker, and ``checkpoint`` must
        be a path the workers can write, as a Gram store's). ``"client"``: in
        this process. Default: ``"worker"``, or ``"client"`` when a
        ``callback`` is given (a function of this process).

    Returns
    -------
    QPResult
        ``alpha``, ``intercept`` (the bias ``b`` of
        ``f(x) = sum_i alpha_i y_i K(x, x_i) + b``, or the multipliers
        ``lambda`` of ``sum_q lambda_q phi_q(x)`` with several rows),
        ``objective``, ``n_iter``, ``converged``, ``stop_reason``, ``gap``,
        ``gradient``.

    Raises
    ------
    ValueError
        On labels other than +-1, non-positive ``C``, mismatched shapes,
        an infeasible ``alpha0`` or non-finite kernel values.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached before the gap falls below ``tol``.

    References
    ----------
    .. [1] R.-E. Fan, P.-H. Chen, C.-J. Lin, "Working set selection using
       second order information for training SVM", JMLR 6, 2005.
    .. [2] Z. Wen et al., "ThunderSVM: a fast SVM library on GPUs and CPUs",
       JMLR 19, 2018.
    .. [3] F. Li, Y. Leung, K. Lee, "Generalizing the bias term of support
       vector machines", IJCAI 2007, eqs. 23-25.

    Examples
    --------
    >>> import numpy as np
    >>> from dkernel import DenseGram
    >>> from dkernel.solver import solve_qp
    >>> X = np.array([[0.0], [1.0], [3.0], [4.0]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> res = solve_qp(DenseGram(X @ X.T), y, C=10.0)
    >>> np.sign(res.decision_function(X @ X.T, y)).astype(int).tolist()
    [-1, -1, 1, 1]

    A checkpointed solve; solving again with the same checkpoint returns the
    stored solution without iterating:

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "svm.ckpt")
    >>> first = solve_qp(DenseGram(X @ X.T), y, C=10.0, checkpoint=path)
    >>> again = solve_qp(DenseGram(X @ X.T), y, C=10.0, checkpoint=path)
    >>> bool(np.array_equal(first.alpha, again.alpha)) and again.n_iter == first.n_iter
    True
    """
    if checkpoint is not None:  # the checkpoint's code (zarr, digests) is loaded for a checkpointed solve only
        from ._checkpoint import as_checkpoint

        checkpoint = as_checkpoint(checkpoint)
    on_a_worker = _loop_on_a_worker(coordinator, callback)
    prob, q = prepare_problem(
        rows, y, C, p, E, e, alpha0, tol=tol, working_set_size=working_set_size, max_iter=max_iter,
        distributed=client is not None,
    )
    if not (prob.is_svc_constraint or prob.label_sums):
        if checkpoint is not None:
            raise ValueError("The checkpoint supports only the constraint y^T alpha = const (or the sums of each "
                             "label fixed, as the ν problems); solve problems with other equality rows without "
                             "checkpoint.")
        options = dict(tol=tol, max_iter=max_iter, callback=callback, verbose=verbose)
        if client is not None and on_a_worker:
            from ._remote import solve_on_worker  # distributed is imported only for a client

            out = solve_on_worker(general_equality_solve, client, rows, prob, q, options)
        else:
            out = general_equality_solve(rows, prob, q, client=None, **options)
        return qp_result(prob, *out, tol=tol, max_iter=max_iter)
    options = dict(tol=tol, max_iter=max_iter, shrinking=shrinking, callback=callback, verbose=verbose,
                   checkpoint=checkpoint)
    if client is not None and on_a_worker:
        from ._remote import solve_on_worker  # distributed is imported only for a client

        out = solve_on_worker(label_constraint_solve, client, rows, prob, q, options)
    else:
        out = label_constraint_solve(rows, prob, q, client=client, **options)
    return qp_result(prob, *out, tol=tol, max_iter=max_iter)


def _loop_on_a_worker(coordinator, callback):
    if coordinator not in (None, "worker", "client"):
        raise ValueError(f"coordinator must be 'worker' or 'client', got {coordinator!r}.")
    return coordinator == "worker" or (coordinator is None and callback is None)


def label_constraint_solve(rows, prob, q, *, client, tol, max_iter, shrinking, callback, verbose, checkpoint):
    """The outer loop of a problem with the one equality row ``y^T alpha = const``, resumed from a checkpoint.

    Returns the loop's ``(alpha, G, intercept, n_iter, stop_reason, gap,
    n_kernel_rows)`` for :func:`~._qp.qp_result`.
    """
    writer, resume = None, None
    if checkpoint is not None:
        from ._checkpoint import CheckpointWriter, problem_fingerprint, read_state

        fingerprint = problem_fingerprint(rows, check_provider(rows, prob.n), prob, q=q, tol=tol,
                                          shrinking=shrinking)
        resume = read_state(checkpoint.path, fingerprint, checkpoint.storage_options, bounds=prob.C)
        if resume is not None and resume.solved:
            logger.info("dkernel.solver: the checkpoint %s holds the solution (%s after %d iterations)",
                        checkpoint.path, resume.stop_reason, resume.iteration)
            return (resume.alpha, resume.G, resume.intercept, resume.iteration, resume.stop_reason, resume.gap,
                    resume.n_kernel_rows)
        if resume is not None:
            logger.info("dkernel.solver: resuming from the checkpoint %s at iteration %d", checkpoint.path,
                        resume.iteration)
            prob = dataclasses.replace(prob, alpha0=np.asarray(resume.alpha, dtype=np.float64))
        writer = CheckpointWriter(checkpoint, fingerprint, 0 if resume is None else resume.iteration)
    G0 = None if resume is None else resume.G
    if client is None or prob.label_sums:  # the sums of each label: the gradient where the loop runs
        gradients = ShrinkingGradients(rows, prob, q, G0, shrinks=shrinking and rows_read_from_memory(rows),
                                       upper_sums=None if resume is None else resume.upper_sums)
    else:
        from ._actors import ActorGradients  # distributed is imported only for a client

        # A state written shrunk holds the gradient of the shrunk variables as last updated: summed again.
        gradients = ActorGradients(client, rows, prob, q, None if resume is not None and resume.active is not None
                                   else G0)
    try:
        return label_constraint_loop(
            gradients, prob, tol=tol, q=q, max_iter=max_iter, shrinking=shrinking, callback=callback,
            verbose=verbose, resume=resume, checkpoint=writer,
        )
    finally:
        gradients.close()


def general_equality_solve(rows, prob, q, *, client, tol, max_iter, callback, verbose):
    """The outer loop of a problem with several equality rows, in the process that calls it.

    The gradient and the multipliers' linear program stay with the loop (on a
    worker, :func:`~._remote.solve_on_worker`, when :func:`solve_qp` has a
    client); ``client`` is not used: the rows come from ``rows`` where the
    loop runs (a Gram store read there, or kernel rows evaluated there).
    """
    return general_equality_loop(rows, prob, tol=tol, q=q, max_iter=max_iter, callback=callback, verbose=verbose)


def solve_qp_distributed(rows, y, C, *, client, **options):
    """:func:`solve_qp` with the gradient kept on the workers of ``client``.

    ``options`` are the keyword arguments of :func:`solve_qp`. The row
    provider must be picklable (it is sent to every worker, as its
    ``column_slab`` of the worker's columns where it has one) and, for
    efficiency, implement ``submatrix(idx, start, stop)``. Only the one-row
    constraint ``y^T alpha = const`` is supported.

    Returns
    -------
    QPResult
        Equal, up to rounding, to the single-process result.
    """
    return solve_qp(rows, y, C, client=client, **options)
