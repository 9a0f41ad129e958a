"""Retrieval dev metrics of an embedder: each query (an anchor) ranks every candidate (the distinct positives)
by cosine similarity; recall@k is the share of queries whose own candidate is among the first k, MRR the mean of
1 / its rank. Plain NumPy, in blocks of queries, so that a large dev set needs no `[n, m]` matrix at once."""

from __future__ import annotations

import dataclasses

import numpy as np

BLOCK = 1024  # queries scored at a time


@dataclasses.dataclass
class Retrievals:
    """What each query retrieved, `[n]` each: the 1-based rank of its own candidate and that candidate's cosine,
    and the first-ranked candidate and its cosine."""

    ranks: np.ndarray
    scores: np.ndarray
    top: np.ndarray
    top_scores: np.ndarray


def retrieve(queries: np.ndarray, candidates: np.ndarray, targets: np.ndarray) -> Retrievals:
    """Ranks the candidates for each query by cosine similarity.

    A candidate scored the same as the query's own one ranks before it: a model that gives every candidate one
    score ranks every own candidate last, not first.

    Args:
        queries: float `[n, D]`.
        candidates: float `[m, D]`.
        targets: int `[n]`, the index of each query's own candidate.
    """
    queries, candidates = _unit(queries), _unit(candidates)
    parts = [
        _retrieve_block(queries[i : i + BLOCK], candidates, targets[i : i + BLOCK])
        for i in range(0, len(queries), BLOCK)
    ]
    return (
        Retrievals(*(np.concatenate(arrays) for arrays in zip(*parts)))
        if parts
        else Retrievals(*(np.zeros([0]) for _ in range(4)))
    )


def _retrieve_block(queries: np.ndarray, candidates: np.ndarray, targets: np.ndarray) -> tuple:
    scores = queries @ candidates.T  # [b, m]
    own = scores[np.arange(len(queries)), targets]
    ranks = np.sum(scores >= own[:, None], axis=1)  # own included: ties rank first
    top = np.argmax(scores, axis=1)
    return ranks, own, top, scores[np.arange(len(queries)), top]


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def recall_at(ranks: np.ndarray, k: int) -> float:
    """The share of queries whose own candidate ranks k or better."""
    return float(np.mean(np.asarray(ranks) <= k)) if len(ranks) else 0.0


def mean_reciprocal_rank(ranks: np.ndarray) -> float:
    return float(np.mean(1.0 / np.asarray(ranks))) if len(ranks) else 0.0
