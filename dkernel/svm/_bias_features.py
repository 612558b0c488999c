"""Predefined features for a generalized bias (Li, Leung & Lee 2007, §5).

* :class:`GeodesicNeighbourFeatures` (coil20): one feature per class,
  ``φ_p(x) = 1`` when one of the ``k`` nearest training points of ``x`` in
  geodesic distance has class ``p``. The geodesic distance is Isomap's
  (Tenenbaum et al. 2000): shortest paths in the k-nearest-neighbour graph
  (:func:`sklearn.neighbors.kneighbors_graph` and
  :func:`scipy.sparse.csgraph.shortest_path`), over the training points and
  optional unlabeled points (the whole image collection, as the paper's
  ``1 ≤ i ≤ 1440``). A new point joins the graph through its nearest graph
  nodes, as :meth:`sklearn.manifold.Isomap.transform`.
* :class:`PLSATopicFeatures` (20-newsgroups): the topic proportions
  ``P(z | d)`` of probabilistic latent semantic analysis (Hofmann 1999). A
  non-negative factorization ``X ≈ W H`` of the counts under the
  Kullback–Leibler divergence (:class:`sklearn.decomposition.NMF`,
  ``solver="mu"``) has the same fixed points as pLSA's EM up to
  normalization (Gaussier & Goutte 2005; Ding, Li & Peng 2008): scaling the
  rows of ``H`` to ``P(w | z)`` and ``W`` to rows that sum to one gives
  ``P(z | d)``. ``fit`` sees the documents it is given (and ``unlabeled``
  ones, where given); ``transform`` folds new documents in as Hofmann does,
  ``P(w | z)`` fixed and only ``P(z | d)`` fitted (a convex problem for each
  document).
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import NMF
from sklearn.neighbors import NearestNeighbors, kneighbors_graph
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["GeodesicNeighbourFeatures", "PLSATopicFeatures", "class_presence"]


def class_presence(distances, train_labels, n_neighbors, n_classes):
    """``φ_p = 1`` when a class-``p`` point is among the ``n_neighbors`` nearest (finite distances only).

    ``distances`` has shape (n, n_train); ``train_labels`` are class indices.
    """
    order = np.argsort(distances, axis=1, kind="stable")[:, :n_neighbors]
    reachable = np.isfinite(np.take_along_axis(distances, order, axis=1))
    F = np.zeros((distances.shape[0], n_classes))
    rows = np.repeat(np.arange(distances.shape[0]), order.shape[1])
    F[rows[reachable.ravel()], train_labels[order].ravel()[reachable.ravel()]] = 1.0
    return F


class GeodesicNeighbourFeatures(TransformerMixin, BaseEstimator):
    """Class indicators of the ``n_neighbors`` nearest training points in geodesic distance (paper §5, coil20).

    Parameters
    ----------
    n_neighbors : int, default=3
        Neighbours whose classes switch their features on (the paper's 3NN).
    graph_neighbors : int, default=5
        Neighbours of each node in Isomap's graph (scikit-learn's Isomap default).
    unlabeled : array-like of shape (n_unlabeled, n_features), default=None
        Points without labels that join the graph (e.g. the test images);
        they shape the geodesic distances but never vote.
    include_self : bool, default=False
        Whether a training point counts among its own neighbours in
        ``fit_transform``. ``False`` gives the training points the features a
        new point at the same place would get from the other training points.

    Attributes
    ----------
    classes_ : ndarray
    geodesic_ : ndarray of shape (n_train, n_graph)
        Shortest-path distances from each training point to every graph node
        (training points first, then the unlabeled ones).
    """

    def __init__(self, n_neighbors=3, graph_neighbors=5, unlabeled=None, include_self=False):
        self.n_neighbors = n_neighbors
        self.graph_neighbors = graph_neighbors
        self.unlabeled = unlabeled
        self.include_self = include_self

    def fit(self, X, y):
        """Build the graph over the training (and unlabeled) points and the geodesic distances from the training ones."""
        X = validate_data(self, X, dtype=np.float64)
        if y is None:
            raise ValueError("GeodesicNeighbourFeatures needs the training labels: fit(X, y).")
        self.classes_, self._labels = np.unique(np.asarray(y), return_inverse=True)
        nodes = X if self.unlabeled is None else np.vstack([X, np.asarray(self.unlabeled, dtype=np.float64)])
        if self.graph_neighbors >= nodes.shape[0]:
            raise ValueError(f"graph_neighbors={self.graph_neighbors} needs more than {self.graph_neighbors} points "
                             f"in the graph; got {nodes.shape[0]}.")
        graph = kneighbors_graph(nodes, self.graph_neighbors, mode="distance")
        self.geodesic_ = shortest_path(graph, method="D", directed=False, indices=np.arange(X.shape[0]))
        self._nodes = NearestNeighbors(n_neighbors=self.graph_neighbors).fit(nodes)
        self._n_train = X.shape[0]
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """The features of the training points, from the geodesic distances among them."""
        self.fit(X, y)
        D = self.geodesic_[:, : self._n_train].T.copy()
        if not self.include_self:
            np.fill_diagonal(D, np.inf)
        return class_presence(D, self._labels, self.n_neighbors, self.classes_.shape[0])

    def geodesic_to_training(self, X):
        """Geodesic distances (n, n_train) of new points: ``min_n (|x - n| + D(n, ·))`` over their graph neighbours."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        dist, nodes = self._nodes.kneighbors(X)
        D = np.full((X.shape[0], self._n_train), np.inf)
        for k in range(nodes.shape[1]):
            np.minimum(D, dist[:, k, None] + self.geodesic_[:, nodes[:, k]].T, out=D)
        return D

    def transform(self, X):
        """Features of new points from their geodesic distances to the training points."""
        D = self.geodesic_to_training(X)
        return class_presence(D, self._labels, self.n_neighbors, self.classes_.shape[0])


class PLSATopicFeatures(TransformerMixin, BaseEstimator):
    """Topic proportions ``P(z | d)`` of pLSA, by a Kullback–Leibler NMF (paper §5, 20-newsgroups).

    Parameters
    ----------
    n_topics : int, default=10
    unlabeled : array-like or sparse matrix, default=None
        Documents without labels added to the factorization (pLSA is
        unsupervised; the paper does not say on which documents it ran).
        None fits the training documents only: nothing of a test document
        reaches the topics.
    max_iter : int, default=200
    random_state : int, default=0

    Attributes
    ----------
    nmf_ : NMF
        The fitted factorization.
    word_given_topic_ : ndarray of shape (n_topics, n_words)
        ``P(w | z)``, the rows of ``H`` scaled to sum to one.
    """

    def __init__(self, n_topics=10, unlabeled=None, max_iter=200, random_state=0):
        self.n_topics = n_topics
        self.unlabeled = unlabeled
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y=None):
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        docs = X if self.unlabeled is None else sp.vstack([sp.csr_matrix(X), sp.csr_matrix(self.unlabeled)])
        self.nmf_ = NMF(n_components=self.n_topics, beta_loss="kullback-leibler", solver="mu", init="nndsvda",
                        max_iter=self.max_iter, random_state=self.random_state).fit(docs)
        mass = self.nmf_.components_.sum(axis=1)
        self._topic_mass = np.where(mass > 0, mass, 1.0)
        self.word_given_topic_ = self.nmf_.components_ / self._topic_mass[:, None]
        return self

    def transform(self, X):
        """``P(z | d)`` for each document (uniform for a document without any of the words)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        joint = self.nmf_.transform(X) * self._topic_mass
        total = joint.sum(axis=1, keepdims=True)
        return np.where(total > 0, joint / np.where(total > 0, total, 1.0), 1.0 / self.n_topics)
