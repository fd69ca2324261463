"""Embedding quality per variant: each variant's vectors indexed in Qdrant and compared with the reference's.

`run_embeddings` (`quantgate embed`) and `add_embeddings` (`quantgate run --embeddings`) embed a
corpus (`quantgate.inputs._corpus`) with every variant (`quantgate.backends._embedders`), write the
vectors into Qdrant (`VectorIndex`, one collection per variant) and score them against the
reference's (`evaluators.embeddings`).
"""

from quantgate.embeddings._embedding_run import (
    DEFAULT_K,
    EmbeddingOptions,
    add_embeddings,
    embed_variants,
    run_embeddings,
)
from quantgate.embeddings._index import Neighbour, VectorIndex, VectorStoreError, collection_name
from quantgate.embeddings._variant_vectors import (
    EmbeddedVariant,
    EmbeddingError,
    embed_variant,
    score_variant,
)
from quantgate.render._embedding_table import embeddings_table

__all__ = [
    "DEFAULT_K",
    "EmbeddedVariant",
    "EmbeddingError",
    "EmbeddingOptions",
    "Neighbour",
    "VectorIndex",
    "VectorStoreError",
    "add_embeddings",
    "collection_name",
    "embed_variant",
    "embed_variants",
    "embeddings_table",
    "run_embeddings",
    "score_variant",
]
