"""Whether an importance matrix belongs to a model, before llama-quantize is given it.

llama-quantize uses a matrix entry only for the tensor of the same name, and quantizes any tensor
without one as if uncalibrated: a matrix from another model can give a "calibrated" file that is
not, with no error. So every entry of the matrix must name a tensor of the model with that many
input columns. Two formats are read, as llama-quantize reads them: a GGUF (what llama-imatrix writes
now) whose tensors are `<tensor>.in_sum2`, one value per input column, and `<tensor>.counts`; and
llama.cpp's legacy `.dat` (`--output-format dat`): an int32 count of entries, then per entry its
name (int32 length, bytes), int32 calls, int32 values and as many float32 values (input columns
times experts), then the last call and the dataset's name.
"""

from __future__ import annotations

import struct
from pathlib import Path

from quantgate.ladder._llama_tool_calls import CalibrationError

SUM_SUFFIX = ".in_sum2"
_SHOWN = 3
_MAX_ENTRIES = 1 << 20


def _tensor_shapes(path: Path, what: str) -> dict[str, tuple[int, ...]]:
    """Each tensor's name and shape in ggml's order (ne[0] first: a weight's input columns)."""
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"{path}: cannot read the {what} as GGUF: {exc}") from exc
    return {tensor.name: tuple(int(n) for n in tensor.shape) for tensor in reader.tensors}


def is_gguf(path: Path) -> bool:
    """Whether the file is a GGUF (its magic), else it is read as a legacy `.dat` matrix.

    Raises:
        CalibrationError: Missing or unreadable, named with the path.
    """
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"GGUF"
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the importance matrix: {exc.strerror or exc}") from exc


def _legacy_values(path: Path) -> dict[str, int]:
    """Each entry's name and number of values in a legacy `.dat` matrix.

    Raises:
        CalibrationError: Unreadable, or not in that format (where it stops making sense).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the importance matrix: {exc.strerror or exc}") from exc
    entries: dict[str, int] = {}
    try:
        (count,), offset = struct.unpack_from("<i", data), 4
        if not 0 < count <= _MAX_ENTRIES:
            raise ValueError(f"{count} entries")
        for _ in range(count):
            (length,) = struct.unpack_from("<i", data, offset)
            name = data[offset + 4 : offset + 4 + length].decode("utf-8")
            _calls, values = struct.unpack_from("<ii", data, offset + 4 + length)
            offset += 4 + length + 8 + 4 * values
            if length <= 0 or values < 0 or offset > len(data):
                raise ValueError(f"entry {name!r} runs past the end")
            entries[name] = values
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise CalibrationError(
            f"{path}: neither a GGUF importance matrix nor llama.cpp's legacy .dat one ({exc}); give "
            "a matrix llama-imatrix wrote"
        ) from exc
    return entries


def _matrix_columns(imatrix: Path, weights: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, int]]:
    """Each entry of the matrix: (its columns, the columns the model's tensor of that name expects,
    0 when it has none)."""
    if is_gguf(imatrix):
        found = _tensor_shapes(imatrix, "importance matrix")
        expected = {name: shape[0] for name, shape in weights.items()}
        return {
            name.removesuffix(SUM_SUFFIX): (shape[0], expected.get(name.removesuffix(SUM_SUFFIX), 0))
            for name, shape in found.items()
            if name.endswith(SUM_SUFFIX)
        }
    experts = {name: shape[0] * (shape[2] if len(shape) > 2 else 1) for name, shape in weights.items()}
    return {name: (values, experts.get(name, 0)) for name, values in _legacy_values(imatrix).items()}


def check_imatrix_model(imatrix: Path, model: Path) -> None:
    """Refuse an importance matrix (GGUF or legacy `.dat`) whose entries do not match `model`'s tensors.

    Raises:
        CalibrationError: Unreadable, not a matrix, empty, or entries the model does not have (or not
            with that many columns), naming a few.
    """
    weights = _tensor_shapes(model, "model")
    entries = _matrix_columns(imatrix, weights)
    if not entries:
        raise CalibrationError(f"{imatrix}: the importance matrix has no entries ({SUM_SUFFIX} tensors)")
    wrong = [
        f"{name} ({columns} columns; the model's: {expected or 'no such tensor'})"
        for name, (columns, expected) in entries.items()
        if columns != expected
    ]
    if wrong:
        raise CalibrationError(
            f"{imatrix}: the importance matrix is not of {model.name}: {len(wrong)} of its {len(entries)} "
            f"entries do not match the model's tensors, e.g. {'; '.join(wrong[:_SHOWN])}; compute it "
            "from this model (quantgate ladder --calibrate)"
        )
