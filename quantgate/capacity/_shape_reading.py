"""The memory-model record of each embedded variant, read from its model file when a run starts.

A variant whose backend loads a local model file (`BackendCapabilities.model_file`) gets its GGUF
header's shape and the file's size (`quantgate.capacity._shape_record.MemoryModelEntry`) in its line of
variants.json, so that `decide` judges capacity without the file. A file the memory model cannot
read gets no record: the variant's own load reports the file's problem, and its capacity is then
not measured.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.memory_model import MemoryModelError, model_shape
from quantgate.backends import capabilities
from quantgate.capacity._gguf_metadata import read_gguf_metadata
from quantgate.capacity._shape_record import MemoryModelEntry
from quantgate.inputs._gguf_files import ModelFileError
from quantgate.inputs._variants import Variant

__all__ = ["memory_model_entry"]


def memory_model_entry(variant: Variant) -> MemoryModelEntry | None:
    """The variant's memory-model record; None when it has no model file or the file cannot be read."""
    if variant.chat_model is not None or not capabilities(variant).model_file:
        return None
    path = Path(variant.model)
    try:
        shape = model_shape(read_gguf_metadata(path))
        return MemoryModelEntry(shape=shape, weights_bytes=path.stat().st_size)
    except (ModelFileError, MemoryModelError, OSError):
        return None
