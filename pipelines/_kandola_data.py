"""The data sets of Kandola et al. §6, read or drawn on the client and carried by the tasks.

The uneven Gaussian toy, Medline query 20 with a bag-of-words kernel, the
sinc function and auto-mpg; each as its full Gram ``K`` and its labels.
"""

import numpy as np

from ._meila import data_home

__all__ = ["DATASETS", "SINC_N", "SINC_NOISE", "SINC_RANGE", "SINC_SIGMA", "data_gram"]

#: The data sets: their kernel, alignment target and learners.
DATASETS = {
    "toy": {"kernel": "linear", "target": "uneven", "task": "uneven"},
    "medline": {"kernel": "bag-of-words", "target": "uneven", "task": "uneven"},
    "sinc": {"kernel": "gaussian", "target": "regression", "task": "regression"},
    "auto-mpg": {"kernel": "linear", "target": "regression", "task": "regression"},
}



TOY_SHAPE, TOY_POSITIVE = (100, 10), 65



SINC_N, SINC_RANGE, SINC_NOISE, SINC_SIGMA = 100, 10.0, 0.1, 1.0



MEDLINE_QUERY = 20



#: auto-mpg's six characteristics of §6 (the UCI file's origin is left out, as in the paper).
AMPG_COLUMNS = slice(0, 6)



def _toy(rng):
    """§6: 100 points of 10 standard Gaussian inputs; 65 labels +1 and 35 labels -1 at random."""
    X = rng.normal(size=TOY_SHAPE)
    y = np.where(rng.permutation(TOY_SHAPE[0]) < TOY_POSITIVE, 1, -1)
    return X @ X.T, y



def _sinc(rng):
    """y = sin(x)/x + N(0, 0.1²) at 100 points x uniform in [-10, 10]; Gaussian kernel exp(-|x-z|²/(2σ²)), σ = 1."""
    x = rng.uniform(-SINC_RANGE, SINC_RANGE, size=SINC_N)
    y = np.sinc(x / np.pi) + SINC_NOISE * rng.normal(size=SINC_N)
    return np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * SINC_SIGMA**2)), y



def _medline():
    """Query 20: log(1 + tf) log(m / df) weights of Porter stems (stop words and punctuation removed), rows of unit
    length; the bag-of-words kernel is their inner product."""
    from sklearn.preprocessing import normalize

    from dkernel.datasets import load

    data = load("medline", query=MEDLINE_QUERY, vectorizer="log-tfidf", stem=True, data_home=data_home())
    X = normalize(data.X)
    return np.asarray((X @ X.T).todense()), np.where(data.y == 1, 1, -1)



def _auto_mpg():
    """Six standardized characteristics (linear kernel) and the miles per gallon."""
    from dkernel.datasets import load

    data = load("auto-mpg", data_home=data_home())
    X = np.asarray(data.X, dtype=np.float64)[:, AMPG_COLUMNS]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X @ X.T, np.asarray(data.y, dtype=np.float64)



def data_gram(name, rng):
    """``(K, y)`` of the data set ``name``: the synthetic sets drawn from ``rng``, the others read."""
    return {"toy": lambda: _toy(rng), "sinc": lambda: _sinc(rng), "medline": _medline, "auto-mpg": _auto_mpg}[name]()
