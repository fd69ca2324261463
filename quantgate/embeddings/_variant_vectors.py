"""One variant's embeddings: embed the corpus, index the vectors in Qdrant, then score them.

`embed_corpus` opens the variant for embeddings and embeds every document and labeled query
(timed, with a progress bar), wherever it runs (here, or in a Ray task); `index_vectors`
writes the document vectors into the variant's Qdrant collection (timed); `embed_variant`
does both. `score_variant` turns a variant's vectors and the reference's into an
`EmbeddingEntry`, with the neighbours and rankings searched in Qdrant; the figures
themselves are `evaluators.embeddings`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from tqdm import tqdm

from evaluators.embeddings import (
    QueryScores,
    RetrievalSummary,
    cosine_agreement,
    neighbour_overlaps,
    neighbour_recall,
    retrieval_scores,
    summarize_retrieval,
)
from evaluators.errors import QuantgateError
from quantgate.backends._embedders import open_embeddings
from quantgate.embeddings._index import VectorIndex, collection_name
from quantgate.evaluate._signals import stop_asked
from quantgate.inputs._corpus import Corpus
from quantgate.inputs._variants import Variant
from quantgate.rundir._embedding_files import EmbeddingEntry

_BATCH = 8
"""Texts handed to the embeddings object per call (between progress updates)."""


class EmbeddingError(QuantgateError, RuntimeError):
    """A variant could not embed the corpus; the message names the variant and the text."""


@dataclass(kw_only=True)
class EmbeddedVariant:
    """What one variant produced.

    Attributes:
        name: The variant.
        documents: One vector per document, in corpus order.
        queries: One vector per labeled query (empty rows without queries).
        embed_s: Time to embed documents and queries.
        index_build_s: Time to write the document vectors into Qdrant (None: not indexed yet).
        runtime: What embedded (`OpenedEmbeddings.runtime`).
        truncated: Texts cut to the model's context, when the backend tells.
    """

    name: str
    documents: np.ndarray[Any, np.dtype[np.float32]]
    queries: np.ndarray[Any, np.dtype[np.float32]]
    embed_s: float
    runtime: dict[str, Any]
    truncated: int | None
    index_build_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class EmbedJob:
    """One variant's embedding of a corpus; picklable, so it can run elsewhere."""

    variant: Variant
    corpus: Corpus
    progress: bool = True


def _embed_texts(
    embeddings: Any, texts: Sequence[str], ids: Sequence[str], bar: tqdm[Any], variant: str
) -> list[list[float]]:
    vectors: list[list[float]] = []
    for start in range(0, len(texts), _BATCH):
        if stop_asked():
            raise KeyboardInterrupt
        batch = list(texts[start : start + _BATCH])
        try:
            got = embeddings.embed_documents(batch)
        except Exception as exc:  # any backend's failure, reported with where it happened
            raise EmbeddingError(
                f"variant {variant}: embedding {ids[start]!r} (and the {len(batch) - 1} texts after it) "
                f"failed: {exc}"
            ) from exc
        if len(got) != len(batch):
            raise EmbeddingError(
                f"variant {variant}: {len(got)} vectors came back for {len(batch)} texts from {ids[start]!r}"
            )
        vectors.extend(got)
        bar.update(len(batch))
    return vectors


def _matrix(vectors: list[list[float]], variant: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    sizes = {len(v) for v in vectors}
    if len(sizes) > 1:
        raise EmbeddingError(f"variant {variant}: vectors of different lengths came back ({sorted(sizes)})")
    matrix = np.asarray(vectors, dtype=np.float32)
    if not np.isfinite(matrix).all():
        raise EmbeddingError(f"variant {variant}: some vectors hold NaN or infinite values")
    return matrix


def embed_variant(
    variant: Variant, corpus: Corpus, index: VectorIndex, *, progress: bool = True
) -> EmbeddedVariant:
    """Embed the corpus with `variant` and index its document vectors.

    Raises:
        BackendError: The variant cannot be opened for embeddings.
        EmbeddingError: Embedding a text failed, or the vectors are unusable.
        VectorStoreError: Qdrant refused the vectors.
    """
    return index_vectors(
        embed_corpus(EmbedJob(variant=variant, corpus=corpus, progress=progress)), corpus, index
    )


def index_vectors(embedded: EmbeddedVariant, corpus: Corpus, index: VectorIndex) -> EmbeddedVariant:
    """Write a variant's document vectors (of `corpus`) into its Qdrant collection, timed.

    Raises:
        VectorStoreError: Qdrant refused the vectors.
    """
    started = time.perf_counter()
    index.write(embedded.name, corpus.documents, embedded.documents)
    return replace(embedded, index_build_s=time.perf_counter() - started)


def embed_corpus(job: EmbedJob) -> EmbeddedVariant:
    """Embed every document and labeled query of the corpus with the job's variant.

    Raises:
        BackendError: The variant cannot be opened for embeddings.
        EmbeddingError: Embedding a text failed, or the vectors are unusable.
    """
    variant, corpus, progress = job.variant, job.corpus, job.progress
    documents, queries = corpus.documents, corpus.queries
    texts = [d.text for d in documents] + [q.text for q in queries]
    ids = [d.id for d in documents] + [q.id for q in queries]
    with open_embeddings(variant) as opened:
        bar = tqdm(
            total=len(texts), desc=f"{variant.name} embed", unit="text", file=sys.stderr, disable=not progress
        )
        started = time.perf_counter()
        try:
            vectors = _embed_texts(opened.embeddings, texts, ids, bar, variant.name)
        finally:
            bar.close()
        embed_s = time.perf_counter() - started
        runtime, truncated = dict(opened.runtime), opened.truncated()
    matrix = _matrix(vectors, variant.name)
    return EmbeddedVariant(
        name=variant.name,
        documents=matrix[: len(documents)],
        queries=matrix[len(documents) :],
        embed_s=embed_s,
        runtime=runtime,
        truncated=truncated,
    )


def _neighbour_ids(
    index: VectorIndex, name: str, vectors: Any, *, k: int, exact: bool, own: bool
) -> list[list[str]]:
    return [
        [hit.id for hit in hits] for hits in index.search(name, vectors, k=k, exact=exact, exclude_self=own)
    ]


def _rankings(
    index: VectorIndex, embedded: EmbeddedVariant, corpus: Corpus, k: int, *, exact: bool
) -> QueryScores:
    found = _neighbour_ids(index, embedded.name, embedded.queries, k=k, exact=exact, own=False)
    rankings = {q.id: ids for q, ids in zip(corpus.queries, found, strict=True)}
    return retrieval_scores(rankings=rankings, relevant={q.id: q.relevant for q in corpus.queries}, k=k)


def score_variant(
    embedded: EmbeddedVariant, reference: EmbeddedVariant, corpus: Corpus, index: VectorIndex, *, k: int
) -> EmbeddingEntry:
    """The variant's figures against the reference (the reference's own when they are the same)."""
    is_reference = embedded is reference
    labeled = bool(corpus.queries)
    variant_queries = embedded.queries if labeled else embedded.documents
    reference_queries = reference.queries if labeled else reference.documents
    truth = _neighbour_ids(index, reference.name, reference_queries, k=k, exact=True, own=not labeled)
    found = _neighbour_ids(index, embedded.name, variant_queries, k=k, exact=False, own=not labeled)
    overlaps = neighbour_overlaps(neighbours=found, reference_neighbours=truth, k=k)
    cosine, cosine_missing = None, None
    if embedded.documents.shape == reference.documents.shape:
        cosine = cosine_agreement(vectors=embedded.documents, reference_vectors=reference.documents)
    else:
        cosine_missing = (
            f"{embedded.documents.shape[1]} dimensions against the reference's {reference.documents.shape[1]}"
        )
    retrieval = RetrievalSummary(queries=0)  # a corpus of case texts: no labeled queries
    if labeled:
        own = _rankings(index, embedded, corpus, k, exact=False)
        retrieval = summarize_retrieval(
            own, reference=None if is_reference else _rankings(index, reference, corpus, k, exact=True)
        )
    texts = len(corpus.documents) + len(corpus.queries)
    return EmbeddingEntry.extending(
        retrieval,
        k=k,
        collection=collection_name(embedded.name),
        documents=len(corpus.documents),
        dimensions=int(embedded.documents.shape[1]),
        runtime=embedded.runtime,
        truncated_texts=embedded.truncated,
        cosine_mean=None if cosine is None or is_reference else cosine.mean,
        cosine_p5=None if cosine is None or is_reference else cosine.p5,
        cosine_min=None if cosine is None or is_reference else cosine.min,
        cosine_missing="the reference itself" if is_reference else cosine_missing,
        neighbour_recall_at_k=neighbour_recall(overlaps),
        neighbour_queries=len(overlaps),
        embeddings_per_s=texts / embedded.embed_s if embedded.embed_s > 0 else None,
        index_build_s=embedded.index_build_s,
        vector_bytes=int(embedded.documents.size) * 4,
        index_disk_bytes=index.disk_bytes(embedded.name),
    )
