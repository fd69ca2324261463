"""Embedding quality of a variant against the reference: the vectors, their neighbours, retrieval.

Pure functions on vectors and ranked id lists, no I/O: finding the neighbours (Qdrant) is
`quantgate.embeddings`' job. Three views, from the closest to the task to the furthest:

- **cosine agreement**: the variant's and the reference's vector of the same text, compared
  by cosine similarity (mean, 5th percentile, minimum over texts). Only defined when both
  have the same dimension (the same model family);
- **neighbour recall@k**: for each query, the share of the reference's exact top-k
  neighbours that the variant's top-k search also returns. It needs no labels: it says
  whether an index built on the variant returns what the reference's would;
- **retrieval with relevance labels**: recall@k, reciprocal rank within the top k (MRR@k
  over queries) and binary nDCG@k, per query so that the variant's difference to the
  reference can be given a paired interval.

A figure over no queries or texts is None, never 0.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from evaluators.aggregate import mean
from evaluators.results import EvaluatorResult
from evaluators.statistics import Interval, bootstrap_interval


@dataclass(frozen=True, kw_only=True)
class CosineAgreement:
    """Cosine similarity of a variant's and the reference's vector of the same texts.

    Attributes:
        texts: Texts compared.
        mean: Mean cosine similarity.
        p5: Its 5th percentile (linear interpolation): how far the worst texts drift.
        min: The lowest.
    """

    texts: int
    mean: float | None
    p5: float | None
    min: float | None


def cosine_similarities(*, vectors: Any, reference_vectors: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Row-wise cosine similarity of two equally shaped matrices (one row per text).

    A zero vector has no direction; its similarity is 0.

    Raises:
        ValueError: The shapes differ (another number of texts, or another dimension).
    """
    a = np.asarray(vectors, dtype=np.float64)
    b = np.asarray(reference_vectors, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"cannot compare vectors of shape {a.shape} with {b.shape}")
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    similarities: np.ndarray[Any, np.dtype[np.float64]] = np.divide(
        dots, norms, out=np.zeros_like(dots), where=norms > 0
    )
    return similarities


def cosine_agreement(*, vectors: Any, reference_vectors: Any) -> CosineAgreement:
    """Mean, 5th percentile and minimum of the row-wise cosine similarities."""
    similarities = cosine_similarities(vectors=vectors, reference_vectors=reference_vectors)
    if similarities.size == 0:
        return CosineAgreement(texts=0, mean=None, p5=None, min=None)
    return CosineAgreement(
        texts=int(similarities.size),
        mean=float(similarities.mean()),
        p5=float(np.percentile(similarities, 5)),
        min=float(similarities.min()),
    )


def neighbour_overlaps(
    *, neighbours: Sequence[Sequence[str]], reference_neighbours: Sequence[Sequence[str]], k: int
) -> list[float]:
    """Per query, the share of the reference's top-k neighbours found in the variant's top k.

    When the corpus holds fewer than k other texts, the reference's list is shorter and the
    share is over its length. A query whose reference has no neighbour is left out.
    """
    if len(neighbours) != len(reference_neighbours):
        raise ValueError(
            f"{len(neighbours)} neighbour lists against {len(reference_neighbours)} of the reference"
        )
    overlaps = []
    for found, expected in zip(neighbours, reference_neighbours, strict=True):
        truth = set(expected[:k])
        if truth:
            overlaps.append(len(truth & set(found[:k])) / len(truth))
    return overlaps


def neighbour_recall(overlaps: Sequence[float]) -> float | None:
    """Neighbour recall@k: the mean of `neighbour_overlaps` over queries (None for no query)."""
    return mean(overlaps)


@dataclass(frozen=True, kw_only=True)
class QueryScores:
    """Retrieval scores of one ranking per query, in the order of the queries.

    Attributes:
        query_ids: The queries scored (those with at least one relevant document).
        recall_at_k: Relevant documents in the top k over relevant documents.
        reciprocal_rank: 1 / rank of the first relevant document in the top k, else 0.
        ndcg_at_k: Binary-relevance nDCG of the top k.
    """

    query_ids: tuple[str, ...]
    recall_at_k: tuple[float, ...]
    reciprocal_rank: tuple[float, ...]
    ndcg_at_k: tuple[float, ...]


def _discounts(count: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    return 1.0 / np.log2(np.arange(2, count + 2))


def retrieval_scores(
    *, rankings: Mapping[str, Sequence[str]], relevant: Mapping[str, Collection[str]], k: int
) -> QueryScores:
    """Score each query's ranking (best first) against its relevant documents, cut at k.

    Queries with no relevant document are left out (nothing can be found); a query with
    relevant documents but no ranking counts as a ranking that found nothing.
    """
    ids: list[str] = []
    recall: list[float] = []
    reciprocal: list[float] = []
    ndcg: list[float] = []
    for query_id, wanted in relevant.items():
        wanted = set(wanted)
        if not wanted:
            continue
        top = list(rankings.get(query_id, ()))[:k]
        hits = np.array([doc in wanted for doc in top], dtype=bool)
        ideal = _discounts(min(k, len(wanted))).sum()
        ids.append(query_id)
        recall.append(float(hits.sum()) / len(wanted))
        reciprocal.append(1.0 / (int(np.argmax(hits)) + 1) if hits.any() else 0.0)
        ndcg.append(float(_discounts(len(top))[hits].sum() / ideal))
    return QueryScores(
        query_ids=tuple(ids),
        recall_at_k=tuple(recall),
        reciprocal_rank=tuple(reciprocal),
        ndcg_at_k=tuple(ndcg),
    )


class RetrievalSummary(EvaluatorResult):
    """Mean retrieval scores over queries and, for a variant, their paired change from the reference.

    Attributes:
        queries: Queries scored.
        recall_at_k: Mean recall@k.
        mrr: Mean reciprocal rank within the top k (MRR@k).
        ndcg_at_k: Mean nDCG@k.
        recall_delta: Variant minus reference mean recall@k on the same queries (None for the
            reference itself or without a reference).
        recall_delta_interval: Paired percentile-bootstrap interval of that difference.
        mrr_delta: Variant minus reference MRR@k, with its paired interval `mrr_delta_interval`.
        ndcg_delta: Variant minus reference nDCG@k, with its paired interval `ndcg_delta_interval`.
    """

    queries: int = Field(description="Labeled queries scored.")
    recall_at_k: float | None = Field(default=None, description="Mean recall@k against the relevance labels.")
    mrr: float | None = Field(default=None, description="Mean reciprocal rank within the top k.")
    ndcg_at_k: float | None = None
    recall_delta: float | None = Field(default=None, description="recall_at_k minus the reference's, paired.")
    recall_delta_interval: Interval | None = None
    mrr_delta: float | None = None
    mrr_delta_interval: Interval | None = None
    ndcg_delta: float | None = None
    ndcg_delta_interval: Interval | None = None


def _paired(values: Sequence[float], reference: Sequence[float]) -> list[float]:
    return [v - r for v, r in zip(values, reference, strict=True)]


def summarize_retrieval(
    scores: QueryScores, *, reference: QueryScores | None = None, confidence: float = 0.95
) -> RetrievalSummary:
    """Means over queries and, given the reference's scores on the same queries, paired deltas.

    Raises:
        ValueError: The reference scored other queries.
    """
    summary = RetrievalSummary(
        queries=len(scores.query_ids),
        recall_at_k=mean(scores.recall_at_k),
        mrr=mean(scores.reciprocal_rank),
        ndcg_at_k=mean(scores.ndcg_at_k),
    )
    if reference is None:
        return summary
    if reference.query_ids != scores.query_ids:
        raise ValueError("the variant and the reference were scored on different queries")
    recall = _paired(scores.recall_at_k, reference.recall_at_k)
    reciprocal = _paired(scores.reciprocal_rank, reference.reciprocal_rank)
    ndcg = _paired(scores.ndcg_at_k, reference.ndcg_at_k)
    return summary.model_copy(
        update={
            "recall_delta": mean(recall),
            "recall_delta_interval": bootstrap_interval(recall, confidence=confidence),
            "mrr_delta": mean(reciprocal),
            "mrr_delta_interval": bootstrap_interval(reciprocal, confidence=confidence),
            "ndcg_delta": mean(ndcg),
            "ndcg_delta_interval": bootstrap_interval(ndcg, confidence=confidence),
        }
    )
