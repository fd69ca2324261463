"""Whether an importance matrix belongs to a model, before llama-quantize is given it.

llama-quantize uses a matrix entry only for the tensor of the same name, and quantizes any tensor
without one as if uncalibrated: a matrix from another model can give a "calibrated" file that is
not, with no error. So every entry of the matrix (a GGUF whose tensors are `<tensor>.in_sum2`, one
value per input column, and `<tensor>.counts`) must name a tensor of the model with that many
input columns.
"""

from __future__ import annotations

from pathlib import Path

from quantgate.ladder._llama_tool_calls import CalibrationError

SUM_SUFFIX = ".in_sum2"
_SHOWN = 3


def _tensor_columns(path: Path, what: str) -> dict[str, int]:
    """Each tensor's name and first dimension (ggml's ne[0]: a weight's input columns)."""
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"{path}: cannot read the {what} as GGUF: {exc}") from exc
    return {tensor.name: int(tensor.shape[0]) for tensor in reader.tensors}


def check_imatrix_model(imatrix: Path, model: Path) -> None:
    """Refuse an importance matrix whose entries do not match `model`'s tensors.

    Raises:
        CalibrationError: Unreadable, empty, or entries the model does not have (or not with that
            many columns), naming a few.
    """
    entries = {
        name.removesuffix(SUM_SUFFIX): columns
        for name, columns in _tensor_columns(imatrix, "importance matrix").items()
        if name.endswith(SUM_SUFFIX)
    }
    if not entries:
        raise CalibrationError(f"{imatrix}: the importance matrix has no entries ({SUM_SUFFIX} tensors)")
    weights = _tensor_columns(model, "model")
    wrong = [
        f"{name} ({columns} columns; the model's: {weights.get(name, 'no such tensor')})"
        for name, columns in entries.items()
        if weights.get(name) != columns
    ]
    if wrong:
        raise CalibrationError(
            f"{imatrix}: the importance matrix is not of {model.name}: {len(wrong)} of its {len(entries)} "
            f"entries do not match the model's tensors, e.g. {'; '.join(wrong[:_SHOWN])}; compute it "
            "from this model (quantgate ladder --calibrate)"
        )
