"""calibration.json: what `quantgate ladder --calibrate` computed its importance matrix from.

A run reads its case ids and text hashes to leave those cases out of scoring
(`quantgate.evaluate._calibration_holdout`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quantgate.inputs._variants import CalibrationSource
from quantgate.ladder._llama_tool_calls import CalibrationError

CALIBRATION_FILE = "calibration.json"


class CalibrationCase(BaseModel):
    """One case of the split: its id, and its text's sha256 (to recognise it in another dataset)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text_sha256: str


class CalibrationRecord(BaseModel):
    """calibration.json, beside the calibrated variants' files."""

    model_config = ConfigDict(extra="forbid")

    format_version: Literal[1] = 1
    source: CalibrationSource = Field(default="dataset", description="What the text was made from.")
    dataset: str = Field(
        description="The dataset's name (its directory's), or the text file's or the matrix file's name."
    )
    dataset_path: str
    dataset_sha256: str = Field(description="The dataset's sha256, or the text file's or the matrix file's.")
    seed: int
    cases: list[CalibrationCase] = Field(description="The split's cases; none for a text or matrix file.")
    answers: Literal["reference", "gold", "none"] = Field(
        default="gold",
        description="What follows each prompt: the F16 reference's own answer (its first model call's "
        "text), or the gold record as JSON; none for a text file or a given matrix. A record without "
        "the field was made with gold (before the reference answered).",
    )
    valid_answers: int | None = Field(
        default=None,
        description="With answers 'reference': the cases the reference answered with a valid record; "
        "the others' text is what it wrote anyway.",
    )
    tokens: int | None = Field(
        description="Tokens of the calibration text (with the model's BOS); None for a matrix file."
    )
    chunk_tokens: int | None
    chunks: int | None = Field(description="Chunks llama-imatrix computed over: tokens // chunk_tokens.")
    text_sha256: str | None = Field(description="The calibration text's sha256; None for a matrix file.")
    model_sha256: str = Field(
        description="The F16 reference the matrix was computed with (for a matrix file: checked against)."
    )
    imatrix_file: str = Field(description="The matrix, beside this file (a given file is copied there).")
    imatrix_sha256: str
    imatrix_path: str | None = Field(default=None, description="Where a given matrix file was read from.")
    tool_version: str | None = Field(description="llama-imatrix --version; None for a matrix file.")
    bindings_version: str = Field(description="llama-cpp-python's version, whose llama.cpp the tools are.")

    def case_ids(self) -> set[str]:
        """The ids of the split's cases."""
        return {case.id for case in self.cases}


def text_sha256(text: str) -> str:
    """The sha256 of a case text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_calibration_record(path: Path) -> CalibrationRecord:
    """Read calibration.json.

    Raises:
        CalibrationError: Missing, unreadable or not a calibration record.
    """
    try:
        return CalibrationRecord.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the calibration record: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        raise CalibrationError(f"{path}: not a calibration record ({exc.error_count()} errors)") from exc
