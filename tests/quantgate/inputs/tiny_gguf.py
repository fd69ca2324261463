"""A tiny valid GGUF file for the model-file checks, written with gguf's own writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFEndian, GGUFWriter


def write_tiny_gguf(path: Path, *, big_endian: bool = False, tensors: bool = True) -> Path:
    """A GGUF with a small vocabulary (a string array, as a tokenizer's), an alignment of 64
    and, unless `tensors` is False, two tensors (F32 and F16)."""
    endianess = GGUFEndian.BIG if big_endian else GGUFEndian.LITTLE
    writer = GGUFWriter(path, "llama", endianess=endianess)
    writer.add_custom_alignment(64)
    writer.add_token_list(["<s>", "</s>", "hello", "world"])
    writer.add_token_scores([0.0, 0.0, -1.5, -2.5])
    if tensors:
        writer.add_tensor("token_embd.weight", np.arange(4 * 25, dtype=np.float32).reshape(4, 25))
        writer.add_tensor("output_norm.weight", np.ones((3, 7), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
