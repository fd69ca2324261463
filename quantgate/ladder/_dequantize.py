"""Dequantizing a GGUF file to F16 with the `gguf` package.

This is how the ladder's reference is made from the 4-bit Gemma 3 270M file: every
quantized tensor is expanded to F16 (1-D tensors and norms stay F32, as llama.cpp's own
converter does). The result holds exactly the information of the 4-bit file, so the
ladder measures loss *on top of* that file, not against the original BF16 weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize

_F16_MAX = float(np.finfo(np.float16).max)
_CHUNK_ROWS = 8192  # dequantize large tensors (the 262144 x 640 embedding) in chunks to bound memory


def _field_value(field: Any) -> tuple[Any, GGUFValueType, GGUFValueType | None]:
    vtype = GGUFValueType(field.types[0])
    if vtype == GGUFValueType.ARRAY:
        if len(field.types) > 2:
            raise ValueError(f"nested array metadata {field.name} is not supported")
        sub = GGUFValueType(field.types[-1])
        if sub == GGUFValueType.STRING:
            return [bytes(field.parts[i]) for i in field.data], vtype, sub
        return [v for i in field.data for v in field.parts[i].tolist()], vtype, sub
    if vtype == GGUFValueType.STRING:
        return bytes(field.parts[-1]), vtype, None
    return field.parts[-1].tolist()[0], vtype, None


def _chunks(tensor: Any) -> Iterator[np.ndarray[Any, Any]]:
    data = (
        tensor.data.reshape(-1, tensor.data.shape[-1]) if tensor.data.ndim > 1 else tensor.data.reshape(1, -1)
    )
    for start in range(0, data.shape[0], _CHUNK_ROWS):
        yield dequantize(data[start : start + _CHUNK_ROWS], tensor.tensor_type)


def _target_type(tensor: Any) -> GGMLQuantizationType:
    if len(tensor.shape) <= 1 or tensor.name.endswith("_norm.weight"):
        return GGMLQuantizationType.F32
    if all(float(np.abs(c).max()) <= _F16_MAX for c in _chunks(tensor)):
        return GGMLQuantizationType.F16
    return GGMLQuantizationType.F32  # values F16 cannot hold stay in F32


def dequantize_to_f16(
    source: Path, destination: Path, *, progress: Callable[[int, int], None] | None = None
) -> None:
    """Write an F16 copy of a quantized GGUF file, metadata and tokenizer included.

    Args:
        source: The quantized GGUF.
        destination: Where to write the F16 GGUF (written in place; the caller handles
            atomicity).
        progress: Called with (tensors done, tensors total).
    """
    reader = GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(destination, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value, vtype, sub = _field_value(field)
        if name == "general.file_type":
            value = int(gguf.LlamaFileType.MOSTLY_F16)
        writer.add_key_value(name, value, vtype, sub_type=sub)
    plan = []
    for tensor in reader.tensors:
        shape = tuple(int(x) for x in reversed(tensor.shape))  # reader: ggml order; writer: numpy
        qtype = _target_type(tensor)
        dtype = np.dtype(np.float16 if qtype == GGMLQuantizationType.F16 else np.float32)
        writer.add_tensor_info(tensor.name, shape, dtype, int(np.prod(shape)) * dtype.itemsize)
        plan.append((tensor, shape, dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for done, (tensor, shape, dtype) in enumerate(plan, start=1):
        out = np.empty(shape, dtype=dtype)
        flat = out.reshape(-1, shape[-1])
        row = 0
        for chunk in _chunks(tensor):
            flat[row : row + chunk.shape[0]] = chunk
            row += chunk.shape[0]
        writer.write_tensor_data(out)
        if progress:
            progress(done, len(plan))
    writer.close()
