"""Decision values of the binary problems through the original kernel (Meilă eq. 16, Graf & Borer eq. 3).

Test rows are evaluated in blocks against the support vectors, into one buffer of
:data:`PREDICT_EVALUATION_BYTES` written again block after block (no large array
of fresh memory per call: its first write costs more than the kernel values
where they are cheap); a stored
test kernel ``K(X_test, X_train)`` is read by row blocks of bounded size; a
dask array stays lazy and is evaluated blockwise over its row chunks.
"""

import numpy as np

from .._runtime.validation import check_finite, nonfinite_in_rows
from ..exceptions import NonFiniteInputError
from ..gram._in_memory import empty_gram
from ._inputs import is_gram_source

#: Test rows evaluated per block in prediction.
PREDICT_BLOCK_ROWS = 4096

#: Bytes of the block ``K(X_test rows, support vectors)`` evaluated at once: one buffer, written block after block.
PREDICT_EVALUATION_BYTES = 2**25

#: Bytes of a stored test kernel ``K(X_test, X_train)`` read at once in prediction.
PREDICT_BLOCK_BYTES = 2**28


def pairwise_decision(X, kernel, support_vectors, support, pair_coef, intercept):
    """Decision values of every binary problem, shape (n_test, n_problems), blockwise over test rows.

    ``kernel`` evaluates ``K(X, support_vectors)``; with ``kernel=None``,
    ``X`` is the precomputed ``K(X_test, X_train)`` (an array, or a Gram
    source read by row blocks) and ``support`` selects its columns.
    """
    if kernel is None and is_gram_source(X):
        n_test, n_train = X.shape
        step = max(1, min(PREDICT_BLOCK_ROWS, PREDICT_BLOCK_BYTES // (8 * n_train)))
        out = np.empty((n_test, pair_coef.shape[0]))
        for start in range(0, n_test, step):
            stop = min(start + step, n_test)
            K = np.asarray(X.rows(np.arange(start, stop)), dtype=np.float64)[:, support]
            check_finite(K, name="the precomputed test kernel", what="predicting")
            out[start:stop] = K @ pair_coef.T + intercept
        return out
    if kernel is None:
        K = np.asarray(X, dtype=np.float64)[:, support]
        return K @ pair_coef.T + intercept
    n_test, n_sv = X.shape[0], support_vectors.shape[0]
    out = np.empty((n_test, pair_coef.shape[0]))
    step = max(1, min(PREDICT_BLOCK_ROWS, PREDICT_EVALUATION_BYTES // (8 * max(n_sv, 1))))
    buffer = empty_gram((min(step, n_test), n_sv), np.float64)
    for start in range(0, n_test, step):
        stop = min(start + step, n_test)
        K = buffer[: stop - start]
        kernel.evaluate_into(X[start:stop], support_vectors, K)
        out[start:stop] = K @ pair_coef.T + intercept
    return out


def map_row_blocks(X, fn, n_out, label_dtype):
    """Apply ``fn`` to each row block of a dask array, keeping it lazy.

    ``n_out=None``: ``fn`` returns one label of ``label_dtype`` per row;
    otherwise ``n_out`` float64 values per row. A block's NaN or infinite values are reported with their rows
    numbered in the whole array.
    """
    X = X.rechunk({1: -1})

    def on_block(block, block_info=None):
        try:
            return fn(block)
        except NonFiniteInputError as error:
            if not hasattr(error, "nonfinite") or block_info is None:
                raise
            start, stop = block_info[0]["array-location"][0]
            raise nonfinite_in_rows(error, start, stop) from None

    if n_out is None:
        return X.map_blocks(on_block, drop_axis=1, dtype=label_dtype)
    return X.map_blocks(on_block, chunks=(X.chunks[0], (n_out,)), dtype=np.float64)
