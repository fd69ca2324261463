"""The general-text arm of a calibration: an importance matrix from a text file the user names.

`quantgate ladder --calibrate-text FILE` computes the matrix from a general text (an encyclopedia's
pages, a book: not the team's task) the same way `--calibrate` does from a dataset's cases, and makes
each type with it, named `Q2_K+imat-text`. Beside the plain type and the dataset-calibrated one it is
the third arm of the comparison (`quantgate.decide._calibrations`): it shows whether the team's *own*
data is what helps, or any importance matrix would. When both arms are built, the text's matrix reads
as many chunks as the dataset's did, so the two see the same number of tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import Variant
from quantgate.ladder._calibrate import (
    CalibratedText,
    TokenCounter,
    build_calibrated,
    vocabulary_token_counter,
)
from quantgate.ladder._calibration_split import CHUNK_TOKENS, MIN_TOKENS
from quantgate.ladder._llama_tool_calls import CalibrationError

TEXT_SUFFIX = "+imat-text"
BUNDLED_TEXT = Path(__file__).parent / "texts" / "pride-and-prejudice.txt"
"""The general text `--calibrate-text` reads when given no file: the opening of Pride and Prejudice,
public domain (its source in texts/README.md)."""
DEFAULT_TEXT_CHUNKS = 128
"""Chunks read from a text file when no dataset arm sets the number (llama.cpp's usual 50-200)."""


@dataclass(frozen=True, kw_only=True)
class TextCalibrationRequest:
    """`--calibrate-text FILE`: the text file, the types, and at most how many chunks to read."""

    text: Path
    quants: Sequence[str]
    max_chunks: int = DEFAULT_TEXT_CHUNKS


def read_calibration_text(path: Path) -> str:
    """The text file's content.

    Raises:
        CalibrationError: Missing, unreadable or not UTF-8, named with the path.
    """
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{path}: not UTF-8 text (byte {exc.start}); give a plain text file") from exc
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the calibration text: {exc.strerror or exc}") from exc


def name_part(path: Path) -> str:
    """The file's stem as a directory-name part (`wiki.test` for wiki.test.raw)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem) or "text"


def calibrate_text(
    request: TextCalibrationRequest,
    *,
    reference: Path,
    directory: Path,
    count_tokens: TokenCounter | None = None,
) -> list[Variant]:
    """Make the text's importance matrix and its variants into `directory/calibration-text-<name>/`.

    Returns:
        One variant per type, `<TYPE>+imat-text`, each with its `imatrix` record (`source` "text").

    Raises:
        CalibrationError: A file that cannot be read, a text shorter than two chunks (with its
            count), a tool missing or failing; nothing is left of the attempt.
    """
    text = read_calibration_text(request.text)
    tokens = (count_tokens or vocabulary_token_counter(reference))(text)
    if tokens < MIN_TOKENS:
        raise CalibrationError(
            f"{request.text}: {tokens} tokens; llama-imatrix needs at least {MIN_TOKENS} (two chunks of "
            f"{CHUNK_TOKENS}): give a longer text"
        )
    chunks = min(tokens // CHUNK_TOKENS, request.max_chunks)
    origin = {
        "source": "text",
        "dataset": request.text.name,
        "dataset_path": str(request.text),
        "dataset_sha256": file_sha256(request.text),
        "seed": 0,
        "cases": [],
        "answers": "none",
    }
    calibrated = CalibratedText(text=text, tokens=chunks * CHUNK_TOKENS, chunks=chunks, origin=origin)
    final = directory / f"calibration-text-{name_part(request.text)}"
    return build_calibrated(
        calibrated, quants=request.quants, reference=reference, final=final, suffix=TEXT_SUFFIX
    )
