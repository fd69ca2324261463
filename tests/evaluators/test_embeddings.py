"""Embedding figures against values computed by hand on tiny vectors and rankings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluators.embeddings import (
    QueryScores,
    cosine_agreement,
    cosine_similarities,
    neighbour_overlaps,
    neighbour_recall,
    retrieval_scores,
    summarize_retrieval,
)


def test_cosine_similarities_by_hand() -> None:
    variant = [[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [0.0, 0.0]]
    reference = [[2.0, 0.0], [1.0, 0.0], [0.0, -1.0], [1.0, 0.0]]
    # same direction, 45 degrees, opposite, zero vector (no direction: 0)
    assert cosine_similarities(vectors=variant, reference_vectors=reference).tolist() == pytest.approx(
        [1.0, 1 / math.sqrt(2), -1.0, 0.0]
    )


def test_cosine_agreement_mean_p5_min() -> None:
    variant = [[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]
    reference = [[2.0, 0.0], [1.0, 0.0], [0.0, -1.0]]
    got = cosine_agreement(vectors=variant, reference_vectors=reference)
    values = sorted([1.0, 1 / math.sqrt(2), -1.0])
    assert got.texts == 3
    assert got.mean == pytest.approx(sum(values) / 3)
    # numpy's linear percentile: position 0.05 * (3 - 1) = 0.1 between the two lowest
    assert got.p5 == pytest.approx(values[0] + 0.1 * (values[1] - values[0]))
    assert got.min == pytest.approx(-1.0)


def test_cosine_agreement_of_nothing_is_not_zero() -> None:
    got = cosine_agreement(vectors=np.zeros((0, 2)), reference_vectors=np.zeros((0, 2)))
    assert (got.texts, got.mean, got.p5, got.min) == (0, None, None, None)


def test_cosine_needs_the_same_dimension() -> None:
    with pytest.raises(ValueError, match=r"\(1, 3\) with \(1, 2\)"):
        cosine_similarities(vectors=[[1.0, 0.0, 0.0]], reference_vectors=[[1.0, 0.0]])


def test_neighbour_overlaps_by_hand() -> None:
    reference = [["b", "c", "d"], ["a", "c", "d"], ["a"]]
    variant = [["c", "b", "x"], ["x", "y", "a"], ["z"]]
    assert neighbour_overlaps(neighbours=variant, reference_neighbours=reference, k=3) == pytest.approx(
        [2 / 3, 1 / 3, 0.0]
    )
    # cut at k=1: only the first of each list counts
    assert neighbour_overlaps(neighbours=variant, reference_neighbours=reference, k=1) == [0.0, 0.0, 0.0]
    assert neighbour_overlaps(neighbours=[["a"]], reference_neighbours=[[]], k=3) == []
    assert neighbour_recall([2 / 3, 1 / 3, 0.0]) == pytest.approx(1 / 3)
    assert neighbour_recall([]) is None


def test_retrieval_scores_by_hand() -> None:
    rankings = {"q1": ["d3", "d1", "d7", "d2"], "q2": ["d9", "d8"], "q3": ["d5"], "q4": ["d1"]}
    relevant = {"q1": {"d1", "d2"}, "q2": {"d4"}, "q3": {"d5"}, "q4": set()}
    got = retrieval_scores(rankings=rankings, relevant=relevant, k=3)
    assert got.query_ids == ("q1", "q2", "q3")  # q4 has nothing to find
    # q1: d1 at rank 2 within the top 3, d2 at rank 4 outside it
    assert got.recall_at_k == pytest.approx((0.5, 0.0, 1.0))
    assert got.reciprocal_rank == pytest.approx((0.5, 0.0, 1.0))
    ideal_two = 1 + 1 / math.log2(3)
    assert got.ndcg_at_k == pytest.approx(((1 / math.log2(3)) / ideal_two, 0.0, 1.0))


def test_a_query_without_a_ranking_found_nothing() -> None:
    got = retrieval_scores(rankings={}, relevant={"q1": ["d1"]}, k=5)
    assert (got.recall_at_k, got.reciprocal_rank, got.ndcg_at_k) == ((0.0,), (0.0,), (0.0,))


def test_summaries_and_paired_deltas() -> None:
    reference = QueryScores(
        query_ids=("q1", "q2"), recall_at_k=(1.0, 0.5), reciprocal_rank=(1.0, 0.5), ndcg_at_k=(1.0, 0.6)
    )
    variant = QueryScores(
        query_ids=("q1", "q2"), recall_at_k=(0.5, 0.5), reciprocal_rank=(0.5, 0.5), ndcg_at_k=(0.4, 0.6)
    )
    alone = summarize_retrieval(variant)
    assert (alone.queries, alone.recall_at_k, alone.mrr, alone.ndcg_at_k) == (2, 0.5, 0.5, 0.5)
    assert (alone.recall_delta, alone.recall_delta_interval) == (None, None)
    paired = summarize_retrieval(variant, reference=reference)
    assert paired.recall_delta == pytest.approx(-0.25)
    assert paired.mrr_delta == pytest.approx(-0.25)
    assert paired.ndcg_delta == pytest.approx(-0.3)
    assert paired.recall_delta_interval is not None
    # the two paired differences are -0.5 and 0: every resampled mean lies between them
    assert -0.5 <= paired.recall_delta_interval.low <= paired.recall_delta_interval.high <= 0.0
    assert paired.ndcg_delta_interval is not None
    assert -0.6 <= paired.ndcg_delta_interval.low <= paired.ndcg_delta_interval.high <= 0.0
    assert paired.mrr_delta_interval is not None
    assert paired.mrr_delta_interval.low >= -0.5
    empty = summarize_retrieval(QueryScores(query_ids=(), recall_at_k=(), reciprocal_rank=(), ndcg_at_k=()))
    assert (empty.queries, empty.recall_at_k, empty.mrr) == (0, None, None)


def test_deltas_need_the_same_queries() -> None:
    one = QueryScores(query_ids=("q1",), recall_at_k=(1.0,), reciprocal_rank=(1.0,), ndcg_at_k=(1.0,))
    other = QueryScores(query_ids=("q2",), recall_at_k=(1.0,), reciprocal_rank=(1.0,), ndcg_at_k=(1.0,))
    with pytest.raises(ValueError, match="different queries"):
        summarize_retrieval(one, reference=other)
