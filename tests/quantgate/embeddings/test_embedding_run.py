"""Embedding runs with in-process embeddings objects: figures by hand, skipped variants, interruption."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from quantgate.backends import capabilities
from quantgate.embeddings import (
    EmbeddingError,
    EmbeddingOptions,
    VectorIndex,
    collection_name,
    run_embeddings,
)
from quantgate.inputs._corpus import Corpus, Document, Query
from quantgate.inputs._variants import Variant
from quantgate.rundir._embedding_files import EmbeddingsFile
from quantgate.rundir._files import EMBEDDINGS_JSON, QDRANT_DIR
from quantgate.rundir._jsonfile import read_model

REFERENCE = {
    "d0": [1.0, 0.0],
    "d1": [0.9, 0.1],
    "d2": [0.0, 1.0],
    "d3": [0.1, 0.9],
    "q0": [1.0, 0.05],
    "q1": [0.05, 1.0],
}
SWAPPED = {**REFERENCE, "d1": [0.0, 1.0], "d2": [0.9, 0.1]}
"""d1 and d2 trade places: every nearest neighbour changes."""


class Table(Embeddings):
    """Embeds each text (here: an id) as a fixed vector; `fail_on` raises, `interrupt` stops."""

    def __init__(
        self, vectors: dict[str, list[float]], *, fail_on: str | None = None, interrupt: bool = False
    ) -> None:
        self.vectors = vectors
        self.fail_on = fail_on
        self.interrupt = interrupt

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.interrupt:
            raise KeyboardInterrupt
        if self.fail_on in texts:
            raise ConnectionError("the server went away")
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _corpus(*, labeled: bool) -> Corpus:
    documents = tuple(Document(id=d, text=d) for d in ("d0", "d1", "d2", "d3"))
    queries = (Query(id="q0", text="q0", relevant=("d0",)), Query(id="q1", text="q1", relevant=("d2", "d3")))
    return Corpus(
        name="tiny",
        source="retrieval" if labeled else "cases",
        documents=documents,
        queries=queries if labeled else (),
        sha256="0" * 64,
    )


def _run(tmp_path: Path, variants: list[Variant], *, labeled: bool, k: int = 1) -> EmbeddingsFile:
    options = EmbeddingOptions(k=k, progress=False)
    run_dir = run_embeddings(_corpus(labeled=labeled), variants, out=tmp_path, options=options)
    return read_model(run_dir / EMBEDDINGS_JSON, EmbeddingsFile)


def test_an_embeddings_object_is_a_variant_that_can_embed() -> None:
    variant = Variant.from_embeddings("ref", Table(REFERENCE))
    assert capabilities(variant).embeddings
    assert "embeddings" not in variant.record()


def test_neighbour_recall_and_cosine_by_hand(tmp_path: Path) -> None:
    got = _run(
        tmp_path,
        [
            Variant.from_embeddings("ref", Table(REFERENCE)),
            Variant.from_embeddings("swapped", Table(SWAPPED)),
            Variant.from_embeddings("same", Table(REFERENCE)),
        ],
        labeled=False,
    )
    assert got.status == "complete"
    assert [v.name for v in got.variants] == ["ref", "swapped", "same"]
    ref, swapped, same = (v.embeddings for v in got.variants)
    assert ref is not None
    assert swapped is not None
    assert same is not None
    assert (ref.neighbour_recall_at_k, ref.cosine_mean, ref.cosine_missing) == (
        1.0,
        None,
        "the reference itself",
    )
    # reference neighbours at k=1: d0-d1, d2-d3; swapped: d0-d2, d1-d3: none is kept
    assert swapped.neighbour_recall_at_k == 0.0
    assert swapped.neighbour_queries == 4
    off = 0.1 / math.hypot(0.9, 0.1)  # cosine of [0, 1] with [0.9, 0.1]
    assert swapped.cosine_mean == pytest.approx((2 + 2 * off) / 4, abs=1e-6)
    assert swapped.cosine_min == pytest.approx(off, abs=1e-6)
    assert same.cosine_mean == pytest.approx(1.0)
    assert same.neighbour_recall_at_k == 1.0
    assert swapped.recall_at_k is None  # no relevance labels: not measured, not 0
    assert swapped.vector_bytes == 4 * 2 * 4
    assert swapped.dimensions == 2


def test_retrieval_scores_and_paired_deltas_by_hand(tmp_path: Path) -> None:
    got = _run(
        tmp_path,
        [
            Variant.from_embeddings("ref", Table(REFERENCE)),
            Variant.from_embeddings("swapped", Table(SWAPPED)),
        ],
        labeled=True,
    )
    ref, swapped = (v.embeddings for v in got.variants)
    assert ref is not None
    assert swapped is not None
    # reference: q0 finds d0 (relevant); q1 finds d2 (one of its two relevant): recall@1 = (1 + 0.5) / 2
    assert ref.recall_at_k == pytest.approx(0.75)
    assert ref.mrr == pytest.approx(1.0)
    assert ref.recall_delta is None
    # swapped: q0 finds d0; q1 = [0.05, 1] now finds d1 = [0, 1], not relevant
    assert swapped.recall_at_k == pytest.approx(0.5)
    assert swapped.mrr == pytest.approx(0.5)
    assert swapped.recall_delta == pytest.approx(-0.25)
    assert swapped.mrr_delta == pytest.approx(-0.5)
    assert swapped.recall_delta_interval is not None
    assert swapped.neighbour_queries == 2  # the labeled queries are the neighbour queries


def test_the_store_reopens_holding_every_vector(tmp_path: Path) -> None:
    got = _run(
        tmp_path,
        [Variant.from_embeddings("ref", Table(REFERENCE)), Variant.from_embeddings("same", Table(REFERENCE))],
        labeled=True,
    )
    run_dir = tmp_path / got.run_id
    with VectorIndex.open(run_dir / QDRANT_DIR) as index:
        assert index.collections() == [collection_name("ref"), collection_name("same")]
        assert index.count("same") == 4
        assert [h.id for h in index.search("same", [[0.0, 1.0]], k=2)[0]] == ["d2", "d3"]


def test_a_variant_that_fails_is_skipped_with_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = _run(
        tmp_path,
        [
            Variant.from_embeddings("ref", Table(REFERENCE)),
            Variant.from_embeddings("broken", Table(REFERENCE, fail_on="d1")),
            Variant.from_embeddings("same", Table(REFERENCE)),
        ],
        labeled=False,
    )
    broken = got.variants[1]
    assert (broken.status, broken.embeddings) == ("skipped", None)
    assert broken.error is not None
    assert "variant broken: embedding 'd0'" in broken.error
    assert "the server went away" in broken.error
    assert got.variants[2].status == "ok"
    assert "variant broken skipped" in capsys.readouterr().err


def test_an_interruption_keeps_what_was_done(tmp_path: Path) -> None:
    variants = [
        Variant.from_embeddings("ref", Table(REFERENCE)),
        Variant.from_embeddings("stops", Table(REFERENCE, interrupt=True)),
    ]
    with pytest.raises(KeyboardInterrupt):
        run_embeddings(
            _corpus(labeled=False), variants, out=tmp_path, options=EmbeddingOptions(k=1, progress=False)
        )
    (run_dir,) = tmp_path.iterdir()
    written = json.loads((run_dir / EMBEDDINGS_JSON).read_text())
    assert written["status"] == "interrupted"
    assert [v["name"] for v in written["variants"]] == ["ref"]


def test_the_reference_must_be_there(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no variant called 'F16'"):
        run_embeddings(
            _corpus(labeled=False),
            [Variant.from_embeddings("ref", Table(REFERENCE))],
            reference="F16",
            out=tmp_path,
            options=EmbeddingOptions(progress=False),
        )


def test_a_reference_that_cannot_embed_fails_the_run_in_its_file(tmp_path: Path) -> None:
    variants = [
        Variant.from_embeddings("ref", Table(REFERENCE, fail_on="d0")),
        Variant.from_embeddings("same", Table(REFERENCE)),
    ]
    with pytest.raises(EmbeddingError, match="variant ref: embedding 'd0'"):
        run_embeddings(
            _corpus(labeled=False), variants, out=tmp_path, options=EmbeddingOptions(progress=False)
        )
    (run_dir,) = tmp_path.iterdir()
    written = json.loads((run_dir / EMBEDDINGS_JSON).read_text())
    assert written["status"] == "failed"
    assert "the server went away" in written["error"]
