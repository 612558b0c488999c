"""The Gram matrices, labelled rows and tolerances given to dkernel.alignment: refused with the problem named, or
converted as scikit-learn converts data.

NaN and infinities (a NonFiniteInputError naming the row, also when a lazy result is computed), a zero Gram in the
lazy path (the eager path's ValueError, not NaN), sparse / pandas / list Grams (converted, the dense value),
complex Grams ("Complex data not supported"), ``labelled`` with repeated rows, float indices or a 0/1 integer
mask, and ``tol`` outside [0, 1) (transductive_adaptation) or (0, 1) (KernelAligner).
"""

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dkernel.alignment import (
    KernelAligner,
    alignment,
    frobenius_norm,
    one_vs_rest_alignment,
    sampled_target_alignment,
    target_alignment,
    transductive_adaptation,
)
from dkernel.exceptions import InvalidLabelsError, NonFiniteInputError
from dkernel.kernels import RBFKernel

N = 40


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=N) > 0, 1, -1)
    K = np.asarray(RBFKernel(gamma=0.5)(X), dtype=np.float64)
    return X, y, K


def _with_nan(K, row=7, col=12):
    K = K.copy()
    K[row, col] = np.nan
    return K


# --------------------------------------------------------------------------- D2: NaN in the Gram


def test_nan_in_the_gram_is_named_by_target_alignment_with_its_row(data):
    _, y, K = data
    with pytest.raises(NonFiniteInputError, match=r"the Gram matrix K has 1 NaN value .*\(first in row 7\)"):
        target_alignment(_with_nan(K), y)
    with pytest.raises(NonFiniteInputError, match="first in row 7"):
        one_vs_rest_alignment(_with_nan(K), y)
    K_inf = K.copy()
    K_inf[3, 0] = np.inf
    with pytest.raises(NonFiniteInputError, match=r"1 infinite value .*\(first in row 3\)"):
        frobenius_norm(K_inf)


def test_nan_in_a_block_is_numbered_in_the_whole_matrix(data):
    _, y, K = data
    chunked = da.from_array(_with_nan(K, row=30, col=2), chunks=(16, 16))
    with pytest.raises(NonFiniteInputError, match=r"in its rows 16 to 31 \(first in row 30\)"):
        target_alignment(chunked, y)
    with pytest.raises(NonFiniteInputError, match=r"source2 has 1 NaN value in its rows 16 to 31 \(first in row 30\)"):
        alignment(da.from_array(K, chunks=(16, 16)), chunked)


def test_nan_in_either_gram_is_named_by_alignment(data):
    _, _, K = data
    with pytest.raises(NonFiniteInputError, match=r"source1 has 1 NaN value .*first in row 7"):
        alignment(_with_nan(K), K)
    with pytest.raises(NonFiniteInputError, match=r"source2 has 1 NaN value .*first in row 7"):
        alignment(K, _with_nan(K))


def test_lazy_alignments_of_a_gram_with_nan_raise_when_computed(data):
    _, y, K = data
    lazy_target = target_alignment(da.from_array(_with_nan(K), chunks=16), y, compute=False)
    lazy_pair = alignment(da.from_array(_with_nan(K), chunks=16), K, compute=False)
    for lazy in (lazy_target, lazy_pair):
        assert isinstance(lazy, da.Array) and lazy.shape == ()
        with pytest.raises(NonFiniteInputError, match="NaN value"):
            lazy.compute()


def test_sampled_alignment_of_a_gram_with_nan_names_it(data):
    _, y, K = data
    K_nan = _with_nan(K)
    K_nan[12, 7] = np.nan  # symmetric, so that every sample holding rows 7 and 12 reads one
    with pytest.raises(NonFiniteInputError, match="sampled submatrix of the Gram matrix K has 2 NaN values"):
        sampled_target_alignment(K_nan, y, N, n_repeats=2, random_state=0, client=False)


# --------------------------------------------------------------------------- D3: a zero Gram, lazily


def test_lazy_alignment_of_a_zero_gram_raises_as_the_eager_one_and_otherwise_agrees(data):
    _, y, K = data
    zero = np.zeros((N, N))
    with pytest.raises(ValueError, match="the Gram matrix is zero"):
        target_alignment(zero, y, compute=False).compute()
    with pytest.raises(ValueError, match="one of the Gram matrices is zero"):
        alignment(zero, K, compute=False).compute()
    assert float(target_alignment(K, y, compute=False).compute()) == pytest.approx(target_alignment(K, y), rel=1e-12)
    assert float(alignment(K, K**2, compute=False).compute()) == pytest.approx(alignment(K, K**2), rel=1e-12)


# --------------------------------------------------------------------------- D4: sparse, pandas, lists


CONVERSIONS = {
    "csr": sp.csr_matrix,
    "coo": sp.coo_matrix,
    "csr_array": sp.csr_array,
    "dataframe": pd.DataFrame,
    "lists": lambda K: K.tolist(),
}


@pytest.mark.parametrize("convert", CONVERSIONS.values(), ids=CONVERSIONS.keys())
def test_sparse_pandas_and_list_grams_give_the_dense_values(data, convert):
    _, y, K = data
    assert target_alignment(convert(K), y) == pytest.approx(target_alignment(K, y), rel=1e-12)
    assert alignment(convert(K), K**2) == pytest.approx(alignment(K, K**2), rel=1e-12)
    assert alignment(K**2, convert(K)) == pytest.approx(alignment(K, K**2), rel=1e-12)
    np.testing.assert_allclose(one_vs_rest_alignment(convert(K), y)[1], one_vs_rest_alignment(K, y)[1], rtol=1e-12)
    assert frobenius_norm(convert(K)) == pytest.approx(np.linalg.norm(K), rel=1e-12)


@pytest.mark.parametrize("convert", [sp.csr_matrix, pd.DataFrame], ids=["csr", "dataframe"])
def test_transductive_adaptation_of_a_sparse_or_pandas_gram_is_that_of_the_array(data, convert):
    _, y, K = data
    rows = np.arange(0, N, 2)
    G = transductive_adaptation(convert(K), y[rows], rows, method="exact")
    expected = transductive_adaptation(K, y[rows], rows, method="exact")
    np.testing.assert_allclose(G.to_numpy(), expected.to_numpy(), rtol=0, atol=1e-12)


def test_a_gram_of_another_type_is_a_type_error_naming_the_accepted_ones(data):
    _, y, _ = data
    with pytest.raises(TypeError, match="source must be a Gram matrix: the path of a Gram store, a square ndarray, .*got int"):
        target_alignment(3, y)
    with pytest.raises(TypeError, match="source2 must be a Gram matrix: .*got set"):
        alignment(np.eye(2), {1, 2})
    with pytest.raises(TypeError, match="source has dtype object; a Gram matrix must hold numbers"):
        target_alignment([[1.0, None], [None, 1.0]], [1, -1])


# --------------------------------------------------------------------------- D8: complex Grams


def test_a_complex_gram_is_refused_as_scikit_learn_refuses_complex_data(data):
    _, y, K = data
    Kc = K.astype(complex)
    with pytest.raises(ValueError, match="Complex data not supported: source has dtype complex128"):
        target_alignment(Kc, y)
    with pytest.raises(ValueError, match="Complex data not supported: source1"):
        alignment(Kc, K)
    with pytest.raises(ValueError, match="Complex data not supported"):
        transductive_adaptation(Kc, y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        target_alignment(da.from_array(Kc, chunks=16), y, compute=False)


# --------------------------------------------------------------------------- D5: labelled rows


def test_labelled_refuses_repeated_rows(data):
    _, y, K = data
    rows = np.arange(10)
    with pytest.raises(ValueError, match="labelled must name distinct rows; row 0 appears 2 times"):
        transductive_adaptation(K, y[np.r_[rows, 0]], np.r_[rows, 0])


def test_labelled_refuses_float_indices_rather_than_truncating_them(data):
    _, y, K = data
    with pytest.raises(ValueError, match="labelled must be a boolean mask of the rows or integer row indices; "
                                         "got dtype float64"):
        transductive_adaptation(K, y[:3], [0.7, 1.2, 2.9])


def test_an_integer_zero_one_mask_is_told_to_be_boolean(data):
    _, y, K = data
    mask = (np.arange(N) < 25).astype(int)
    with pytest.raises(InvalidLabelsError, match="labelled holds only 0 and 1 .* a mask must be boolean"):
        transductive_adaptation(K, y[:25], mask)
    as_bool = transductive_adaptation(K, y[:25], mask.astype(bool), method="exact")
    as_rows = transductive_adaptation(K, y[:25], np.arange(25), method="exact")
    np.testing.assert_allclose(as_bool.to_numpy(), as_rows.to_numpy(), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- D6: tol


@pytest.mark.parametrize("tol", [-1, -1e-12, 1.0, 1.5, float("nan"), "1e-6"])
def test_transductive_adaptation_refuses_a_tol_outside_zero_one(data, tol):
    _, y, K = data
    with pytest.raises(ValueError, match=r"tol must be None or a fraction of λ_max in \[0, 1\)"):
        transductive_adaptation(K, y, tol=tol)


@pytest.mark.parametrize("tol", [1.0, 1.5])
def test_kernel_aligner_refuses_a_tol_of_one_or_more(data, tol):
    X, y, _ = data
    with pytest.raises(ValueError, match=r"tol must be a positive number below 1, a fraction of λ_max in \(0, 1\)"):
        KernelAligner(tol=tol).fit(X, y)


def test_a_gram_store_path_is_read_as_the_store(tmp_path):
    from dkernel import GramMatrix
    from dkernel.alignment import alignment, target_alignment

    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    K = GramMatrix.compute(X, kernel="linear", store=str(tmp_path / "K.zarr"), chunk=16).to_numpy()
    for path in (str(tmp_path / "K.zarr"), tmp_path / "K.zarr"):
        assert np.isclose(target_alignment(path, y), target_alignment(K, y), rtol=0, atol=1e-12)
        assert np.isclose(alignment(path, K), 1.0, rtol=0, atol=1e-12)
