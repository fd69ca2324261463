"""Real embeddings: the ladder's GGUFs in llama.cpp's embedding mode, and Ollama's /api/embed through
the test double. Q2_K must stray further from the reference than Q8_0."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from quantgate.backends import BackendError
from quantgate.backends._embedders import open_embeddings
from quantgate.backends.llamacpp._llamacpp_embeddings import LlamaCppEmbeddings
from quantgate.cli._main import main
from quantgate.embeddings import VectorIndex
from quantgate.inputs._variants import Variant, VariantSet, write_variants_file
from tests.conftest import OLLAMA_TAGS
from tests.model_fixtures import OllamaDoubleProcess

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def q2_ladder(default_ladder: tuple[VariantSet, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """F16, Q8_0 and Q2_K of the bundled Gemma 3 270M (the session's default ladder): a variants file."""
    variant_set, _ = default_ladder
    chosen = VariantSet(
        reference="F16", variants=[v for v in variant_set.variants if v.name in ("F16", "Q8_0", "Q2_K")]
    )
    path = tmp_path_factory.mktemp("q2-ladder") / "variants.toml"
    write_variants_file(path, chosen)
    return path


def test_embed_q8_keeps_the_neighbours_and_q2_loses_more(
    q2_ladder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 20 texts: recall@10 Q8_0 0.99, Q2_K 0.885; on 40, 0.99 and 0.8825 (measured on the same vectors)
    argv = ["embed", "--variants", str(q2_ladder), "--dataset", "contacts-events", "--limit", "20"]
    assert main([*argv, "--out", str(tmp_path), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    figures = {v["name"]: v["embeddings"] for v in written["variants"]}
    assert list(figures) == ["F16", "Q8_0", "Q2_K"]
    assert figures["F16"]["neighbour_recall_at_k"] == 1.0  # its own exact search
    assert figures["Q8_0"]["neighbour_recall_at_k"] >= 0.8
    assert figures["Q2_K"]["neighbour_recall_at_k"] < figures["Q8_0"]["neighbour_recall_at_k"]
    assert figures["Q2_K"]["cosine_mean"] < figures["Q8_0"]["cosine_mean"] <= 1.0
    assert figures["Q8_0"]["runtime"]["pooling"] == "mean"
    assert figures["Q8_0"]["dimensions"] == 640
    assert figures["Q8_0"]["embeddings_per_s"] > 0
    with VectorIndex.open(Path(written["run_dir"]) / "qdrant") as index:
        assert [index.count(name) for name in figures] == [20, 20, 20]


def test_the_double_serves_api_embed_with_llama_cpp_vectors(
    ollama_double: OllamaDoubleProcess, ladder: VariantSet
) -> None:
    from langchain_ollama import OllamaEmbeddings

    texts = ["La factura vence el 3 de marzo.", "The meeting moved to Friday at 10:00."]
    served = np.asarray(
        OllamaEmbeddings(model=OLLAMA_TAGS["F16"], base_url=ollama_double.url).embed_documents(texts)
    )
    assert served.shape == (2, 640)
    assert np.linalg.norm(served, axis=1) == pytest.approx([1.0, 1.0], abs=1e-6)  # Ollama normalizes
    f16 = next(v for v in ladder.variants if v.name == "F16")
    local = LlamaCppEmbeddings(f16.model)
    try:
        direct = np.asarray(local.embed_documents(texts))
    finally:
        local.close()
    cosines = (served * direct).sum(axis=1) / np.linalg.norm(direct, axis=1)
    assert cosines == pytest.approx([1.0, 1.0], abs=1e-4)  # the same llama.cpp embedding, normalized


def test_an_ollama_variant_embeds_and_a_missing_model_is_named(ollama_double: OllamaDoubleProcess) -> None:
    variant = Variant(
        name="q8", backend="ollama", model=OLLAMA_TAGS["Q8_0"], options={"host": ollama_double.url}
    )
    with open_embeddings(variant) as opened:
        vector = opened.embeddings.embed_query("hola")
        assert opened.runtime["normalized"] is True
    assert len(vector) == 640
    absent = Variant(name="gone", backend="ollama", model="gemma3:404", options={"host": ollama_double.url})
    with pytest.raises(BackendError, match="ollama pull gemma3:404"), open_embeddings(absent):
        pass
