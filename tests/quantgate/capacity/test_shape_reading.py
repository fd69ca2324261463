"""A run records each model-file variant's shape and weights in variants.json (the capacity gate's
input), and keeps them after the variant is evaluated; other variants get none."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from quantgate.backends import BackendCapabilities, OpenedVariant
from quantgate.capacity._shape_reading import memory_model_entry
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import VARIANTS_FILE
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, SCHEMA, QueuedChatModel
from tests.quantgate.capacity.test_gguf_metadata import write_gemma3_like


def test_a_file_the_memory_model_cannot_read_gives_no_record(tmp_path: Path) -> None:
    assert (
        memory_model_entry(Variant(name="m", backend="llamacpp", model=str(tmp_path / "none.gguf"))) is None
    )
    (tmp_path / "text.gguf").write_text("not a gguf")
    assert (
        memory_model_entry(Variant(name="t", backend="llamacpp", model=str(tmp_path / "text.gguf"))) is None
    )
    assert memory_model_entry(Variant(name="o", backend="ollama", model="gemma3:270m")) is None


def test_a_run_records_the_shape_of_a_model_file_variant(tmp_path: Path, register_backend: Any) -> None:
    model = write_gemma3_like(tmp_path / "small.gguf")

    @contextmanager
    def open_file_backend(variant: Variant, schema: dict[str, Any], *, slots: int | None = None) -> Any:
        yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]), runtime={"n_ctx": 512})

    register_backend("file-like", open_file_backend, capabilities=BackendCapabilities(model_file=True))
    register_backend("server-like", open_file_backend, capabilities=BackendCapabilities())
    root = tmp_path / "data"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    (root / "cases.jsonl").write_text(json.dumps({"id": "c1", "text": "case 1", "expected": GOOD}) + "\n")
    pair = VariantSet(
        reference="ref",
        variants=[
            Variant(name="ref", backend="server-like", model="served"),
            Variant(name="quant", backend="file-like", model=str(model)),
        ],
    )
    run_dir = run_evaluation(
        load_dataset(root), pair, options=RunOptions(out=tmp_path / "runs", progress=False)
    )
    lines = load_run(run_dir).variants.by_name()
    assert lines["ref"].memory_model is None
    recorded = lines["quant"].memory_model
    assert recorded is not None
    assert lines["quant"].runtime == {"n_ctx": 512}  # the line written after evaluating it
    assert (recorded.shape.n_layer, recorded.shape.n_head_kv, recorded.shape.n_vocab) == (6, (2,) * 6, 2000)
    assert recorded.weights_bytes == model.stat().st_size
    on_disk = json.loads((run_dir / VARIANTS_FILE).read_text())
    assert on_disk["format_version"] == 4
    assert on_disk["variants"][1]["memory_model"]["shape"]["sliding_window"] == 128
