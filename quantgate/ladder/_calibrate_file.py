"""A ready-made importance matrix: `quantgate ladder --imatrix FILE`.

A team may already have a matrix (from llama-imatrix on its own texts, or one published beside a
model). `--imatrix FILE` makes each `--quants` type with it, named `Q2_K+imat-file`, in
`calibration-file-<name>/` beside the other arms, with the file copied there and calibration.json
recording `source: "file"`, where it was read from and its sha256 (no dataset, cases, tokens or tool
version: quantgate did not compute it). The matrix must be the reference's: a file that is missing,
unreadable, not a matrix (a GGUF or llama.cpp's legacy `.dat`) or of another model is refused with its
path, before anything of it is built (`quantgate.ladder._imatrix_check`).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import Variant
from quantgate.ladder._calibrate import IMATRIX_FILE, quantize_with_matrix
from quantgate.ladder._calibrate_text import name_part
from quantgate.ladder._imatrix_check import check_imatrix_model, is_gguf

FILE_SUFFIX = "+imat-file"
LEGACY_IMATRIX_FILE = "imatrix.dat"


@dataclass(frozen=True, kw_only=True)
class ImatrixFileRequest:
    """`--imatrix FILE`: the matrix file and the types made with it."""

    imatrix: Path
    quants: Sequence[str]


def check_imatrix_file(request: ImatrixFileRequest) -> None:
    """Refuse, before anything is built, a matrix file that is missing or unreadable.

    Raises:
        CalibrationError: Named with the path.
    """
    is_gguf(request.imatrix)


def calibrate_from_file(request: ImatrixFileRequest, *, reference: Path, directory: Path) -> list[Variant]:
    """Make each type with the given matrix into `directory/calibration-file-<name>/`.

    Returns:
        One variant per type, `<TYPE>+imat-file`, each with its `imatrix` record (`source` "file").

    Raises:
        CalibrationError: The file cannot be read, is not a matrix or not of `reference`, or
            llama-quantize is missing or fails; nothing is left of the attempt.
    """
    given = request.imatrix
    check_imatrix_model(given, reference)
    name = IMATRIX_FILE if is_gguf(given) else LEGACY_IMATRIX_FILE

    def copy(work: Path) -> dict[str, Any]:
        shutil.copyfile(given, work / name)
        return {
            "source": "file",
            "dataset": given.name,
            "dataset_path": str(given.resolve()),
            "dataset_sha256": file_sha256(work / name),
            "seed": 0,
            "cases": [],
            "answers": "none",
            "tokens": None,
            "chunk_tokens": None,
            "chunks": None,
            "text_sha256": None,
            "imatrix_file": name,
            "imatrix_path": str(given.resolve()),
            "tool_version": None,
        }

    final = directory / f"calibration-file-{name_part(given)}"
    return quantize_with_matrix(
        copy, quants=request.quants, reference=reference, final=final, suffix=FILE_SUFFIX
    )
