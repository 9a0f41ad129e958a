"""Retrieval metrics: ranks by cosine (lengths ignored), ties ranked against the query, recall@k and MRR."""

import numpy as np
import pytest

from keras_bert_lite.training import retrieval
from keras_bert_lite.training.retrieval import mean_reciprocal_rank, recall_at, retrieve


def test_ranks_by_cosine_not_by_dot_product():
    candidates = np.array([[10.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    queries = np.array([[1.0, 0.1], [0.5, 0.9], [0.1, 1.0], [0.0, 2.0]])
    found = retrieve(queries, candidates, np.array([1, 1, 2, 0]))
    # query 0 is nearest candidate 0 (its own is 1, second); the dot product would prefer candidate 0 everywhere
    np.testing.assert_array_equal(found.ranks, [2, 1, 1, 3])
    np.testing.assert_array_equal(found.top, [0, 1, 2, 2])
    np.testing.assert_allclose(found.scores[3], 1.0 * 0.0 + 0.0, atol=1e-7)  # own candidate: orthogonal
    np.testing.assert_allclose(found.top_scores[3], 1.0, rtol=1e-6)
    assert recall_at(found.ranks, 1) == 0.5 and recall_at(found.ranks, 2) == 0.75
    assert mean_reciprocal_rank(found.ranks) == pytest.approx((1 / 2 + 1 + 1 + 1 / 3) / 4)


def test_a_constant_model_earns_no_credit():
    found = retrieve(np.ones((5, 4)), np.ones((5, 4)), np.arange(5))
    np.testing.assert_array_equal(found.ranks, [5] * 5)
    assert recall_at(found.ranks, 1) == 0.0


def test_blocks_of_queries_give_the_whole_answer(monkeypatch):
    rng = np.random.default_rng(0)
    queries, candidates, targets = rng.normal(size=(10, 6)), rng.normal(size=(7, 6)), rng.integers(0, 7, 10)
    whole = retrieve(queries, candidates, targets)
    monkeypatch.setattr(retrieval, "BLOCK", 3)
    blocked = retrieve(queries, candidates, targets)
    for name in ("ranks", "top"):
        np.testing.assert_array_equal(getattr(blocked, name), getattr(whole, name))
    for name in ("scores", "top_scores"):  # float32 matmuls of other shapes round otherwise
        np.testing.assert_allclose(getattr(blocked, name), getattr(whole, name), rtol=1e-6, atol=1e-7)
    scores = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        candidates / np.linalg.norm(candidates, axis=1, keepdims=True)
    ).T
    np.testing.assert_array_equal(whole.ranks, [np.sum(s >= s[t]) for s, t in zip(scores, targets)])
