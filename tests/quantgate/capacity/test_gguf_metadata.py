"""A GGUF's metadata read from its header (a tiny file written with gguf's own writer, and the
bundled Gemma 3 270M file the ladder starts from), and the errors of a bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter

from evaluators.memory_model import model_shape
from quantgate.capacity._gguf_metadata import read_gguf_metadata
from quantgate.inputs._gguf_files import ModelFileError


def write_gemma3_like(path: Path, *, block_count: int | None = 6, vocabulary: int = 2000) -> Path:
    """A GGUF with Gemma 3's metadata keys at a small size (6 layers: one global), and one tensor."""
    writer = GGUFWriter(path, "gemma3")
    if block_count is not None:
        writer.add_block_count(block_count)
    writer.add_context_length(1024)
    writer.add_embedding_length(32)
    writer.add_feed_forward_length(64)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_key_length(16)
    writer.add_value_length(16)
    writer.add_sliding_window(128)
    writer.add_token_list([f"t{i}" for i in range(vocabulary)])
    writer.add_token_scores([0.0] * vocabulary)  # longer than LONG_ARRAY: counted
    writer.add_tensor("token_embd.weight", np.zeros((4, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_metadata_of_a_written_gguf(tmp_path):
    metadata = read_gguf_metadata(write_gemma3_like(tmp_path / "m.gguf"))
    assert metadata["general.architecture"] == "gemma3"
    assert metadata["gemma3.block_count"] == 6
    assert metadata["gemma3.attention.sliding_window"] == 128
    assert metadata["tokenizer.ggml.tokens"] == 2000
    assert metadata["tokenizer.ggml.scores"] == 2000
    shape = model_shape(metadata)
    assert shape.swa_layers() == (True, True, True, True, True, False)
    # per cell: 6 layers x 2 heads x (16 + 16) x 2 bytes
    assert sum(shape.kv_bytes_per_cell()) == 6 * 2 * 32 * 2


def test_missing_key_names_it(tmp_path):
    metadata = read_gguf_metadata(write_gemma3_like(tmp_path / "m.gguf", block_count=None))
    with pytest.raises(ValueError, match=r"gemma3\.block_count is missing"):
        model_shape(metadata)


def test_missing_file_and_not_a_gguf(tmp_path):
    with pytest.raises(ModelFileError, match="no GGUF file at"):
        read_gguf_metadata(tmp_path / "absent.gguf")
    text = tmp_path / "notes.gguf"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(ModelFileError, match="is not a GGUF file"):
        read_gguf_metadata(text)


def test_the_ladder_file_has_gemma3_270m_shape(bundled_gguf: Path) -> None:
    shape = model_shape(read_gguf_metadata(bundled_gguf))
    assert (shape.n_layer, shape.n_head_kv[0], shape.key_length, shape.sliding_window) == (18, 1, 256, 512)
    assert shape.n_vocab == 262144
    assert sum(shape.kv_bytes_per_cell()) == 18432
