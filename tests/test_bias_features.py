"""Predefined features: geodesic neighbours (Isomap's graph distances) and pLSA topic proportions."""

import numpy as np
import pytest
import scipy.sparse as sp

from dkernel.svm import GeodesicNeighbourFeatures, PLSATopicFeatures, class_presence


def _floyd_warshall_knn(points, k):
    """Brute-force geodesic distances: a symmetric k-NN graph with Euclidean edge lengths, all-pairs shortest paths."""
    n = len(points)
    euclid = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    D = np.full((n, n), np.inf)
    np.fill_diagonal(D, 0.0)
    for i in range(n):
        for j in np.argsort(euclid[i])[1 : k + 1]:
            D[i, j] = D[j, i] = euclid[i, j]
    for m in range(n):
        D = np.minimum(D, D[:, m, None] + D[None, m, :])
    return D


def _spiral(n, rng):
    t = np.sort(rng.uniform(0, 3 * np.pi, n))
    return np.column_stack([t * np.cos(t), t * np.sin(t)]) + 0.01 * rng.normal(size=(n, 2)), t


def _brute_features(D, labels, k, n_classes):
    F = np.zeros((D.shape[0], n_classes))
    for i in range(D.shape[0]):
        for j in np.argsort(D[i], kind="stable")[:k]:
            if np.isfinite(D[i, j]):
                F[i, labels[j]] = 1
    return F


def test_geodesic_features_match_a_brute_force_graph():
    rng = np.random.default_rng(0)
    points, t = _spiral(90, rng)
    labels = (t // np.pi).astype(int)  # three turns of the spiral
    train = rng.permutation(90)[:40]
    unlabeled = np.setdiff1d(np.arange(90), train)
    model = GeodesicNeighbourFeatures(n_neighbors=3, graph_neighbors=4, unlabeled=points[unlabeled])
    F_train = model.fit_transform(points[train], labels[train])
    D = _floyd_warshall_knn(np.vstack([points[train], points[unlabeled]]), 4)
    np.testing.assert_allclose(model.geodesic_, D[:40], rtol=1e-10)
    D_train = D[:40, :40].copy()
    np.fill_diagonal(D_train, np.inf)
    np.testing.assert_array_equal(F_train, _brute_features(D_train, labels[train], 3, 3))
    # An unlabeled point is a graph node: transform gives its geodesic distances exactly.
    F_unlabeled = model.transform(points[unlabeled])
    np.testing.assert_array_equal(F_unlabeled, _brute_features(D[40:, :40], labels[train], 3, 3))


def test_geodesic_features_follow_the_manifold_not_the_straight_line():
    rng = np.random.default_rng(1)
    points, t = _spiral(300, rng)
    labels = (t > 1.5 * np.pi).astype(int)
    model = GeodesicNeighbourFeatures(n_neighbors=1, graph_neighbors=5).fit(points, labels)
    F = model.transform(points)
    assert (F.argmax(axis=1) == labels).mean() > 0.97


def test_class_presence_ignores_unreachable_points():
    D = np.array([[1.0, np.inf, 2.0], [np.inf, np.inf, np.inf]])
    F = class_presence(D, np.array([0, 1, 1]), 3, 2)
    np.testing.assert_array_equal(F, [[1, 1], [0, 0]])


def test_geodesic_features_need_labels_and_enough_points():
    with pytest.raises(ValueError, match="needs the training labels"):
        GeodesicNeighbourFeatures().fit(np.zeros((10, 2)), None)
    with pytest.raises(ValueError, match="graph_neighbors=5 needs more than 5 points"):
        GeodesicNeighbourFeatures().fit(np.random.default_rng(0).normal(size=(4, 2)), [0, 1, 0, 1])


def _topic_corpus(rng, n_docs=120, n_topics=3, words_per_topic=15):
    """Documents drawn from disjoint word blocks: each topic owns its words."""
    mixture = rng.dirichlet(np.full(n_topics, 0.2), size=n_docs)
    X = np.zeros((n_docs, n_topics * words_per_topic))
    for d in range(n_docs):
        topics = rng.choice(n_topics, size=200, p=mixture[d])
        words = topics * words_per_topic + rng.integers(0, words_per_topic, size=200)
        np.add.at(X[d], words, 1)
    return sp.csr_matrix(X), mixture


def test_plsa_topic_proportions_recover_the_mixtures():
    rng = np.random.default_rng(2)
    X, mixture = _topic_corpus(rng)
    model = PLSATopicFeatures(n_topics=3, max_iter=500).fit(X)
    P = model.transform(X)
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(model.word_given_topic_.sum(axis=1), 1.0)
    # topics are found up to their order
    order = [int(np.argmax(np.corrcoef(mixture[:, k], P.T)[0, 1:])) for k in range(3)]
    assert sorted(order) == [0, 1, 2]
    assert np.abs(P[:, order] - mixture).mean() < 0.05


def test_plsa_proportions_do_not_depend_on_document_length():
    rng = np.random.default_rng(3)
    X, _ = _topic_corpus(rng, n_docs=60)
    model = PLSATopicFeatures(n_topics=3, unlabeled=X[30:]).fit(X[:30])
    np.testing.assert_allclose(model.transform(X[:5] * 4.0), model.transform(X[:5]), atol=1e-3)
    empty = model.transform(sp.csr_matrix((1, X.shape[1])))
    np.testing.assert_allclose(empty, 1 / 3)
