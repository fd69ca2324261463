"""The vector index: every variant's vectors in Qdrant, one collection per variant.

By default the store is qdrant-client's local mode under the run directory
(`RUN_DIR/qdrant/`, `QdrantClient(path=...)`): nothing to start, and the store reopens
after the run (`VectorIndex.open(RUN_DIR / "qdrant")`, for the notebook). Local mode
searches exactly (brute force over all vectors), which is what the reference's neighbours
must be. With a URL, a Qdrant server holds the collections (HNSW); the reference's
neighbours are then still searched exactly (`exact=True`) and each variant's through the
index, as production would search it.

Points carry the document's id, language and tags as payload; the point id is the
document's position in the corpus (Qdrant takes integers or UUIDs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluators.errors import QuantgateError
from quantgate.inputs._corpus import Document

COLLECTION_PREFIX = "quantgate-"
_UPSERT_BATCH = 256


class VectorStoreError(QuantgateError, RuntimeError):
    """The vector store cannot be opened or written; the message says where and why."""


def collection_name(variant: str) -> str:
    """The Qdrant collection holding a variant's vectors."""
    return COLLECTION_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", variant)


@dataclass(frozen=True, kw_only=True)
class Neighbour:
    """One search hit: the document's id and its cosine similarity to the query."""

    id: str
    score: float


class VectorIndex:
    """A Qdrant store: local (a directory) or a server (a URL)."""

    def __init__(self, *, path: Path | None = None, url: str | None = None, timeout_s: int = 60) -> None:
        from qdrant_client import QdrantClient

        if (path is None) == (url is None):
            raise ValueError("give the index either a path (local mode) or a url (a Qdrant server)")
        self.path = path
        self.url = url
        try:
            if path is not None:
                path.mkdir(parents=True, exist_ok=True)
                self._client = QdrantClient(path=str(path))
            else:
                # the call below names an absent server; the client's own version probe would only warn
                self._client = QdrantClient(url=url, timeout=timeout_s, check_compatibility=False)
                self._client.get_collections()
        except Exception as exc:  # qdrant-client raises RuntimeError (locked), httpx/grpc errors
            where = f"the local Qdrant store {path}" if path is not None else f"the Qdrant server at {url}"
            raise VectorStoreError(f"cannot open {where}: {exc}") from exc

    @classmethod
    def open(cls, path: str | Path) -> VectorIndex:
        """Reopen a local store written by a run (`RUN_DIR/qdrant`)."""
        root = Path(path)
        if not root.is_dir():
            raise VectorStoreError(f"no Qdrant store at {root}")
        return cls(path=root)

    @property
    def exact(self) -> bool:
        """Whether every search is exact (local mode), rather than through an HNSW index."""
        return self.path is not None

    def write(self, variant: str, documents: Sequence[Document], vectors: Any) -> None:
        """(Re)create the variant's collection holding one point per document."""
        from qdrant_client import models

        matrix = np.asarray(vectors, dtype=np.float32)
        name = collection_name(variant)
        if self._client.collection_exists(name):
            self._client.delete_collection(name)
        self._client.create_collection(
            name,
            vectors_config=models.VectorParams(size=int(matrix.shape[1]), distance=models.Distance.COSINE),
        )
        points = [
            models.PointStruct(
                id=i,
                vector=matrix[i].tolist(),
                payload={"doc_id": d.id, "lang": d.lang, "tags": list(d.tags)},
            )
            for i, d in enumerate(documents)
        ]
        for start in range(0, len(points), _UPSERT_BATCH):
            self._client.upsert(name, points=points[start : start + _UPSERT_BATCH], wait=True)

    def count(self, variant: str) -> int:
        """Points stored for the variant."""
        return int(self._client.count(collection_name(variant), exact=True).count)

    def collections(self) -> list[str]:
        """The variants' collections in the store."""
        return sorted(c.name for c in self._client.get_collections().collections)

    def search(
        self, variant: str, queries: Any, *, k: int, exact: bool = False, exclude_self: bool = False
    ) -> list[list[Neighbour]]:
        """The top-k documents of the variant's collection for each query vector, best first.

        Args:
            variant: Whose collection to search.
            queries: One query vector per row.
            k: Neighbours per query.
            exact: Search exhaustively even on a server (the reference's ground truth).
            exclude_self: Query i is document i of the corpus: leave it out of its own list.
        """
        from qdrant_client import models

        params = models.SearchParams(exact=True) if exact and not self.exact else None  # local: always exact
        matrix = np.asarray(queries, dtype=np.float32)
        requests = [
            models.QueryRequest(
                query=row.tolist(), limit=k + int(exclude_self), with_payload=["doc_id"], params=params
            )
            for row in matrix
        ]
        results = self._client.query_batch_points(collection_name(variant), requests=requests)
        found = []
        for i, result in enumerate(results):
            hits = [
                Neighbour(id=str((p.payload or {})["doc_id"]), score=float(p.score))
                for p in result.points
                if not (exclude_self and p.id == i)
            ]
            found.append(hits[:k])
        return found

    def disk_bytes(self, variant: str) -> int | None:
        """Bytes the variant's collection takes on disk (local mode; None on a server)."""
        if self.path is None:
            return None
        folder = self.path / "collection" / collection_name(variant)
        return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else None

    def close(self) -> None:
        """Release the store (local mode: its lock, so that another process may open it)."""
        self._client.close()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
