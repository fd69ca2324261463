"""The Qdrant store against qdrant-client's real local storage: write, reopen from disk, search."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from quantgate.embeddings._index import VectorIndex, VectorStoreError, collection_name
from quantgate.inputs._corpus import Document

VECTORS = np.array(
    [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.9, 0.2], [0.0, 0.0, 1.0]], dtype=np.float32
)
DOCUMENTS = [
    Document(id=f"d{i}", text=f"text {i}", lang="es" if i % 2 else "en", tags=("t", f"n{i}"))
    for i in range(5)
]


def _store(path: Path) -> None:
    with VectorIndex(path=path) as index:
        index.write("Q4_K_M", DOCUMENTS, VECTORS)
        index.write("F16", DOCUMENTS, VECTORS[::-1])


def test_a_store_reopens_from_disk_with_every_vector(tmp_path: Path) -> None:
    _store(tmp_path / "qdrant")
    with VectorIndex.open(tmp_path / "qdrant") as index:
        assert index.collections() == [collection_name("F16"), collection_name("Q4_K_M")]
        assert index.count("Q4_K_M") == 5
        hits = index.search("Q4_K_M", [[1.0, 0.05, 0.0]], k=2)
        assert [h.id for h in hits[0]] == ["d0", "d1"]
        # cosine similarity of [1, 0.05, 0] with d0 = [1, 0, 0]
        assert hits[0][0].score == pytest.approx(1 / np.sqrt(1 + 0.05**2), abs=1e-5)
        assert index.disk_bytes("Q4_K_M") > 0  # type: ignore[operator]


def test_exclude_self_leaves_each_document_out_of_its_own_neighbours(tmp_path: Path) -> None:
    _store(tmp_path / "qdrant")
    with VectorIndex.open(tmp_path / "qdrant") as index:
        hits = index.search("Q4_K_M", VECTORS, k=1, exclude_self=True)
        assert [h[0].id for h in hits] == ["d1", "d0", "d3", "d2", "d3"]
        assert index.search("Q4_K_M", VECTORS[:1], k=1)[0][0].id == "d0"  # without it, itself


def test_writing_again_replaces_the_collection(tmp_path: Path) -> None:
    with VectorIndex(path=tmp_path / "qdrant") as index:
        index.write("Q8_0", DOCUMENTS, VECTORS)
        index.write("Q8_0", DOCUMENTS[:2], VECTORS[:2])
        assert index.count("Q8_0") == 2


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # qdrant-client leaves its lock file open when refused
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_store_open_elsewhere_is_refused_with_its_path(tmp_path: Path) -> None:
    with (
        VectorIndex(path=tmp_path / "qdrant"),
        pytest.raises(VectorStoreError, match=str(tmp_path / "qdrant")),
    ):
        VectorIndex(path=tmp_path / "qdrant")


def test_no_store_and_no_server_are_named(tmp_path: Path) -> None:
    with pytest.raises(VectorStoreError, match="no Qdrant store at"):
        VectorIndex.open(tmp_path / "absent")
    with pytest.raises(VectorStoreError, match=r"Qdrant server at http://127\.0\.0\.1:9"):
        VectorIndex(url="http://127.0.0.1:9", timeout_s=2)


def test_collection_names_are_safe() -> None:
    assert collection_name("gemma3:270m/q4 K") == "quantgate-gemma3_270m_q4_K"
