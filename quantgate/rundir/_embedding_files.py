"""Typed embedding figures: a variant's `embeddings` entry, and embeddings.json of `quantgate embed`.

The figures are defined in `evaluators.embeddings`; a figure that was not measured is None.
`quantgate run --embeddings` puts each variant's entry under `embeddings` in its summary.json
entry; `quantgate embed` writes the same entries to embeddings.json with the corpus they
were measured on.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evaluators.embeddings import RetrievalSummary
from quantgate.rundir._files import EMBEDDINGS_FORMAT_VERSION
from quantgate.rundir._lines import RunFileModel

DEFAULT_K = 10
"""Neighbours and retrieved documents per query, unless `--k` says otherwise."""


class _EmbeddingRun(RunFileModel):
    """What was embedded and how the vectors agree with the reference's: the keys before the
    retrieval figures."""

    k: int = Field(description="Neighbours and retrieved documents per query.")
    collection: str = Field(description="The Qdrant collection holding the variant's vectors.")
    documents: int
    dimensions: int
    runtime: dict[str, Any] = Field(
        default_factory=dict, description="What embedded: pooling, context, server."
    )
    truncated_texts: int | None = Field(default=None, description="Texts cut to the model's context.")
    cosine_mean: float | None = Field(
        default=None, description="Mean cosine similarity to the reference's vector of the same text."
    )
    cosine_p5: float | None = None
    cosine_min: float | None = None
    cosine_missing: str | None = Field(default=None, description="Why cosine agreement is not measured.")
    neighbour_recall_at_k: float | None = Field(
        default=None,
        description="Mean share of the reference's exact top-k neighbours found in this variant's top k "
        "(queries: the labeled queries, else each document, itself left out).",
    )
    neighbour_queries: int = 0


class EmbeddingEntry(RetrievalSummary, _EmbeddingRun):
    """One variant's embedding figures against the reference (the reference's own: agreement None).

    The retrieval figures are `evaluators.embeddings.RetrievalSummary` (0 queries and no figures
    for a corpus of case texts).
    """

    embeddings_per_s: float | None = Field(
        default=None, description="Texts (documents and queries) embedded per second."
    )
    index_build_s: float | None = Field(default=None, description="Writing the vectors into Qdrant.")
    vector_bytes: int | None = Field(
        default=None, description="documents x dimensions x 4 (float32 vectors)."
    )
    index_disk_bytes: int | None = Field(
        default=None, description="The collection's files (local store only)."
    )


class CorpusInfo(RunFileModel):
    """What was embedded."""

    name: str
    source: Literal["retrieval", "cases"]
    sha256: str
    documents: int
    queries: int


class EmbeddingVariantEntry(RunFileModel):
    """One variant in embeddings.json (a skipped variant has its error and no figures)."""

    name: str
    backend: str
    quantization: str | None = None
    file_size_bytes: int | None = None
    is_reference: bool = False
    status: Literal["ok", "skipped"] = "ok"
    error: str | None = None
    embeddings: EmbeddingEntry | None = None


class EmbeddingsFile(RunFileModel):
    """embeddings.json: the corpus, where the vectors are, and each variant's figures."""

    format_version: Literal[1] = EMBEDDINGS_FORMAT_VERSION
    run_id: str
    quantgate_version: str | None
    status: Literal["running", "complete", "interrupted", "failed"]
    error: str | None = Field(default=None, description="Why the run failed (status `failed`).")
    corpus: CorpusInfo
    k: int
    reference: str
    store: str = Field(
        description="The local Qdrant store (relative to the run directory) or the server URL."
    )
    hardware: dict[str, Any] = Field(default_factory=dict)
    variants: list[EmbeddingVariantEntry] = Field(default_factory=list)
