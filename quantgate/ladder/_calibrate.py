"""Calibrated variants: an importance matrix from a dataset's cases, and llama.cpp types made with it.

`calibrate` has the F16 reference answer the cases of a split (`quantgate.ladder._reference_answers`),
writes the calibration text of the split with those answers (`quantgate.ladder._calibration_split`),
runs `llama-imatrix` on the F16 reference, checks that the matrix belongs to that model, and makes each
type with `llama-quantize --imatrix`, named `Q2_K+imat`. Everything is built in a temporary
directory inside the ladder directory and moved into place (`calibration-<dataset>/`) only when
complete, so a failure or Ctrl-C leaves nothing half-built.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from quantgate._hardware import package_version
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import ImatrixCalibration, Variant
from quantgate.ladder._calibration_record import (
    CALIBRATION_FILE,
    CalibrationCase,
    CalibrationRecord,
    text_sha256,
)
from quantgate.ladder._calibration_split import (
    CHUNK_TOKENS,
    calibration_split,
    calibration_text,
    check_enough_tokens,
)
from quantgate.ladder._imatrix_check import check_imatrix_model
from quantgate.ladder._llama_tool_calls import CalibrationError, find_llama_tool, run_llama_tool, tool_version
from quantgate.ladder._reference_answers import ReferenceAnswers, answer_cases, reference_variant

CALIBRATED_SUFFIX = "+imat"
IMATRIX_FILE = "imatrix.gguf"
TEXT_FILE = "calibration.txt"

CalibrationAnswers = Literal["reference", "gold"]
"""`--calibration-answers`: what follows each case's prompt in the calibration text."""

TokenCounter = Callable[[str], int]
"""Tokens of a text as the F16 reference tokenizes it (with its BOS)."""


@dataclass(frozen=True, kw_only=True)
class CalibrationRequest:
    """What `quantgate ladder --calibrate` asks: a dataset, how many of its cases, which types."""

    dataset: Dataset
    cases: int
    quants: Sequence[str]
    seed: int = 0
    answers: CalibrationAnswers = "reference"
    """What follows each prompt in the text: the F16 reference's own answer, or the gold record."""


def check_calibration(request: CalibrationRequest) -> None:
    """Refuse, before anything is built, a split the dataset cannot give or a tool that is missing.

    Raises:
        CalibrationError: As `calibrate` does for these.
    """
    calibration_split(request.dataset, request.cases, seed=request.seed)
    find_llama_tool("llama-imatrix")
    find_llama_tool("llama-quantize")


def vocabulary_token_counter(model: Path) -> TokenCounter:
    """Count tokens with the model's own tokenizer (its vocabulary only is loaded)."""
    import llama_cpp

    llama = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
    return lambda text: len(llama.tokenize(text.encode("utf-8"), add_bos=True, special=False))


def calibrate(
    request: CalibrationRequest,
    *,
    reference: Path,
    directory: Path,
    count_tokens: TokenCounter | None = None,
    progress: bool = True,
) -> list[Variant]:
    """Make the importance matrix and the calibrated variants into `directory/calibration-<dataset>/`.

    Args:
        request: The dataset, the number of cases, the types and the answers.
        reference: The F16 reference GGUF (it answers the cases, `quantgate.ladder._reference_answers`).
        directory: The ladder directory.
        count_tokens: The reference's tokenizer; default: `vocabulary_token_counter(reference)`.
        progress: Show a progress bar while the reference answers.

    Returns:
        One variant per type, `<TYPE>+imat`, each with its `imatrix` record.

    Raises:
        CalibrationError: Too few cases or tokens, a tool missing or failing, a matrix that is not
            the reference's; nothing is left of the attempt.
    """
    prompted, cases = calibration_split(request.dataset, request.cases, seed=request.seed)
    count_tokens = count_tokens or vocabulary_token_counter(reference)
    text = calibration_text(prompted, cases)
    check_enough_tokens(request.dataset, len(cases), count_tokens(text))  # before minutes of answers
    find_llama_tool("llama-imatrix")
    find_llama_tool("llama-quantize")
    answered = None
    if request.answers == "reference":
        answered = _reference_answered(prompted, cases, reference, progress=progress)
        text = calibration_text(prompted, cases, answered.texts)
    tokens = count_tokens(text)
    check_enough_tokens(request.dataset, len(cases), tokens)
    origin = {
        "dataset": request.dataset.name,
        "dataset_path": str(request.dataset.path),
        "dataset_sha256": request.dataset.sha256,
        "seed": request.seed,
        "cases": [CalibrationCase(id=c.id, text_sha256=text_sha256(c.text)) for c in cases],
        "answers": request.answers,
        "valid_answers": answered.valid if answered else None,
    }
    return build_calibrated(
        CalibratedText(text=text, tokens=tokens, chunks=tokens // CHUNK_TOKENS, origin=origin),
        quants=request.quants,
        reference=reference,
        final=directory / f"calibration-{request.dataset.name}",
        suffix=CALIBRATED_SUFFIX,
    )


def _reference_answered(
    prompted: Dataset, cases: list[Case], reference: Path, *, progress: bool
) -> ReferenceAnswers:
    """The F16 reference's answers to the cases, and how many were valid said on stderr."""
    answered = answer_cases(prompted, cases, reference_variant(reference), progress=progress)
    print(
        f"the reference answered {answered.valid} of {len(cases)} calibration cases with a valid "
        "record (an invalid answer is kept as it was written)",
        file=sys.stderr,
        flush=True,
    )
    return answered


@dataclass(frozen=True, kw_only=True)
class CalibratedText:
    """A calibration text, its tokens, the chunks llama-imatrix reads of it, and where it came from
    (calibration.json's fields that say so: `source`, `dataset`, `dataset_path`, `dataset_sha256`,
    `seed`, `cases`, `answers`)."""

    text: str
    tokens: int
    chunks: int
    origin: dict[str, Any]


def build_calibrated(
    calibrated: CalibratedText, *, quants: Sequence[str], reference: Path, final: Path, suffix: str
) -> list[Variant]:
    """Compute the text's matrix, make each type with it, and move the whole into `final`
    (calibration.txt, imatrix.gguf, the GGUF files, calibration.json) only when complete.

    Returns:
        One variant per type, `<TYPE><suffix>`, each with its `imatrix` record.
    """

    def compute(work: Path) -> dict[str, Any]:
        (work / TEXT_FILE).write_text(calibrated.text, encoding="utf-8")
        label = str(calibrated.origin["dataset"])
        version = _imatrix_into(work, reference, label=label, chunks=calibrated.chunks)
        return {
            **calibrated.origin,
            "tokens": calibrated.tokens,
            "chunk_tokens": CHUNK_TOKENS,
            "chunks": calibrated.chunks,
            "text_sha256": text_sha256(calibrated.text),
            "imatrix_file": IMATRIX_FILE,
            "tool_version": version,
        }

    return quantize_with_matrix(compute, quants=quants, reference=reference, final=final, suffix=suffix)


MatrixMaker = Callable[[Path], dict[str, Any]]
"""Puts an importance matrix into a work directory and returns calibration.json's fields about it
and where it came from (`imatrix_file` naming it in the directory)."""


def quantize_with_matrix(
    make_matrix: MatrixMaker, *, quants: Sequence[str], reference: Path, final: Path, suffix: str
) -> list[Variant]:
    """In a work directory beside `final`: the matrix (`make_matrix`), each type quantized with it
    and calibration.json; the whole moved into `final` only when complete, nothing left otherwise.

    Returns:
        One variant per type, `<TYPE><suffix>`, each with its `imatrix` record.
    """
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    try:
        fields = make_matrix(work)
        matrix = work / fields["imatrix_file"]
        quantize_tool = find_llama_tool("llama-quantize")
        for quant in quants:
            out = work / _file_name(reference, quant, suffix)
            _quantize(quantize_tool, matrix, reference, out, quant)
        record = CalibrationRecord(
            **fields,
            model_sha256=file_sha256(reference),
            imatrix_sha256=file_sha256(matrix),
            bindings_version=package_version("llama-cpp-python") or "unknown",
        )
        (work / CALIBRATION_FILE).write_text(record.model_dump_json(indent=2), encoding="utf-8")
        _move_into_place(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [_variant(final, reference, quant, record, suffix) for quant in quants]


def _imatrix_into(work: Path, reference: Path, *, label: str, chunks: int) -> str:
    """Run llama-imatrix on the calibration text in `work`, check its matrix; return its version."""
    tool = find_llama_tool("llama-imatrix")
    files: list[str | Path | int] = ["-m", reference, "-f", work / TEXT_FILE, "-o", work / IMATRIX_FILE]
    print(
        f"computing the importance matrix of {label} with {tool.name}: {chunks} chunks of "
        f"{CHUNK_TOKENS} tokens read through {reference.name} (minutes on a CPU; it reports when done)",
        file=sys.stderr,
        flush=True,
    )
    started = time.monotonic()
    run_llama_tool(
        tool,
        [*files, "-c", CHUNK_TOKENS, "--chunks", chunks, "--no-ppl"],
        step=f"computing the importance matrix of {label}",
    )
    print(f"importance matrix done in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    check_imatrix_model(work / IMATRIX_FILE, reference)
    return tool_version(tool)


def _quantize(tool: Path, imatrix: Path, reference: Path, out: Path, quant: str) -> None:
    step = f"quantizing {reference.name} to {quant} with the importance matrix"
    run_llama_tool(tool, ["--imatrix", imatrix, reference, out, quant], step=step)
    if not out.is_file():
        raise CalibrationError(f"{step}: {tool.name} succeeded but wrote no {out.name}")


def _file_name(reference: Path, quant: str, suffix: str) -> str:
    stem = reference.stem.removesuffix("-F16")
    return f"{stem}-{quant}{suffix}.gguf"


def _move_into_place(work: Path, final: Path) -> None:
    """Replace `final` by the complete `work` directory (the previous calibration is removed)."""
    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    work.rename(final)
    shutil.rmtree(old, ignore_errors=True)


_ANSWERED = {"reference": ", answered by the reference", "gold": ", with gold answers", "none": ""}


def _calibration_sentence(record: CalibrationRecord) -> str:
    if record.source == "file":
        return f"importance matrix from the file {record.dataset_path} (sha256 {record.imatrix_sha256[:12]})"
    made_of = (
        f"{record.dataset} ({len(record.cases)} cases{_ANSWERED[record.answers]}, "
        if record.source == "dataset"
        else f"the text file {record.dataset} ("
    )
    return (
        f"importance matrix from {made_of}{record.tokens} tokens, {record.chunks} chunks of "
        f"{record.chunk_tokens}; sha256 {record.imatrix_sha256[:12]})"
    )


def _variant(final: Path, reference: Path, quant: str, record: CalibrationRecord, suffix: str) -> Variant:
    path = final / _file_name(reference, quant, suffix)
    return Variant(
        name=f"{quant}{suffix}",
        backend="llamacpp",
        model=str(path),
        quantization=quant,
        method=(
            "llama.cpp llama-quantize with an importance matrix, from the F16 reference "
            f"({record.tool_version or 'a given matrix'}; llama-cpp-python {record.bindings_version})"
        ),
        calibration=_calibration_sentence(record),
        imatrix=ImatrixCalibration(
            file=str(final / CALIBRATION_FILE),
            source=record.source,
            dataset=record.dataset,
            dataset_sha256=record.dataset_sha256,
            cases=len(record.cases),
            tokens=record.tokens,
            chunks=record.chunks,
            imatrix_sha256=record.imatrix_sha256,
            tool_version=record.tool_version,
        ),
        source=str(reference),
        source_sha256=record.model_sha256,
        sha256=file_sha256(path),
        file_size_bytes=path.stat().st_size,
    )
