"""`quantgate ladder`: build the embedded quantization ladder (F16 reference + quants)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import UsageError
from quantgate.cli._common import cli_dataset, positive_int

if TYPE_CHECKING:
    from quantgate.cli._common import Commands
    from quantgate.ladder._calibrate import CalibrationAnswers, CalibrationRequest
    from quantgate.ladder._calibrate_file import ImatrixFileRequest
    from quantgate.ladder._calibrate_text import TextCalibrationRequest


LADDER_HELP = "Q8_0,Q4_K_M,Q2_K"
"""The default of --quants as `--help` shows it, without importing the ladder at start-up
(`quantgate.ladder._quantize.DEFAULT_QUANTS` is the one definition; a test keeps them equal)."""
DEFAULT_CALIBRATION_CASES = 64
"""The default of --calibration-cases (`quantgate.ladder._calibration_split.DEFAULT_CALIBRATION_CASES`,
kept equal by a test), without importing the ladder at start-up."""


_BUNDLED = "<bundled>"
"""`--calibrate-text` without FILE: the bundled text (`quantgate.ladder._calibrate_text.BUNDLED_TEXT`)."""


def _names(text: str) -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _ladder(args: argparse.Namespace) -> int:
    from quantgate.ladder._quantize import DEFAULT_QUANTS, build_ladder

    quants = _names(args.quants or ",".join(DEFAULT_QUANTS))
    variant_set, variants_file = build_ladder(
        calibration=_calibration(args, quants),
        text_calibration=_text_calibration(args, quants),
        imatrix_file=_imatrix_file(args, quants),
        source=Path(args.source) if args.source else None,
        quants=quants,
        out=Path(args.out) if args.out else None,
        kv_caches=_names(args.kv_cache or ""),
        kv_cache_of=_names(args.kv_cache_of) if args.kv_cache_of else None,
    )
    width = max([12, *(len(v.name) for v in variant_set.variants)])
    for variant in variant_set.variants:
        size = (variant.file_size_bytes or 0) / 2**20
        cache = f"  KV cache {variant.kv_cache.label()}" if variant.kv_cache else ""
        print(f"{variant.name:<{width}} {size:8.1f} MiB  {variant.model}{cache}")
        if variant.imatrix:
            print(f"{'':<{width}} {variant.calibration}")
    print(f"variants file: {variants_file}")
    return 0


def _calibration(args: argparse.Namespace, quants: list[str]) -> CalibrationRequest | None:
    """`--calibrate DATASET`: the request, its dataset loaded (a bad one fails before any build)."""
    if args.calibrate is None:
        for flag, value in (
            ("--calibration-cases", args.calibration_cases),
            ("--calibration-answers", args.calibration_answers),
        ):
            if value is not None:
                raise UsageError(f"{flag} needs --calibrate DATASET")
        return None
    from quantgate.ladder._calibrate import CalibrationRequest

    cases = args.calibration_cases or DEFAULT_CALIBRATION_CASES
    answers: CalibrationAnswers = args.calibration_answers or "reference"
    dataset = cli_dataset(args.calibrate, False)
    return CalibrationRequest(dataset=dataset, cases=cases, quants=quants, answers=answers)


def _text_calibration(args: argparse.Namespace, quants: list[str]) -> TextCalibrationRequest | None:
    """`--calibrate-text FILE`: the request (the file is read before any build)."""
    if args.calibrate_text is None:
        return None
    from quantgate.ladder._calibrate_text import BUNDLED_TEXT, TextCalibrationRequest

    text = BUNDLED_TEXT if args.calibrate_text == _BUNDLED else Path(args.calibrate_text)
    return TextCalibrationRequest(text=text, quants=quants)


def _imatrix_file(args: argparse.Namespace, quants: list[str]) -> ImatrixFileRequest | None:
    """`--imatrix FILE`: the request (the file is checked before any build)."""
    if args.imatrix is None:
        return None
    from quantgate.ladder._calibrate_file import ImatrixFileRequest

    return ImatrixFileRequest(imatrix=Path(args.imatrix), quants=quants)


def add_parser(commands: Commands) -> None:
    """Add `quantgate ladder`."""
    ladder = commands.add_parser(
        "ladder", help="build the embedded quantization ladder (F16 reference + quants)"
    )
    ladder.add_argument("--source", help="GGUF to start from (default: the bundled Gemma 3 270M Q4_K_M)")
    ladder.add_argument(
        "--quants",
        help=f"comma-separated llama.cpp types (also Q5_K_M, Q6_K, Q3_K_M, Q4_0, ...); default {LADDER_HELP}",
    )
    ladder.add_argument(
        "--kv-cache",
        help="comma-separated KV-cache types (q8_0, q4_0): each weight type also gets a variant with "
        "that cache for K and V, named like Q4_K_M-kv-q8_0 (same GGUF file)",
    )
    ladder.add_argument(
        "--kv-cache-of",
        help="comma-separated weight types the --kv-cache variants are made of (default: every "
        "quantization built, not the F16 reference)",
    )
    _add_calibration_arguments(ladder)
    ladder.add_argument("--out", help="output directory (default: the user cache dir, quantgate/ladder)")
    ladder.set_defaults(handler=_ladder)


def _add_calibration_arguments(ladder: argparse.ArgumentParser) -> None:
    """The calibrated arms: `--calibrate` (and its cases and answers), `--calibrate-text`, `--imatrix`."""
    ladder.add_argument(
        "--calibrate",
        metavar="DATASET",
        help="also make each --quants type with an importance matrix (llama-imatrix, llama-quantize) "
        "from the dataset's texts as the graph sends them (each case's prompt, then the F16 reference's "
        "answer), named like Q2_K+imat; its calibration cases "
        "(calibration-DATASET/calibration.json) are then left out of every run's scoring",
    )
    ladder.add_argument(
        "--calibration-cases",
        type=positive_int,
        metavar="N",
        help=f"--calibrate: labeled cases in the calibration split, drawn with a fixed seed (default "
        f"{DEFAULT_CALIBRATION_CASES}: on restaurants about 860 tokens a case, 107 chunks of 512, within "
        "llama.cpp's usual 50-200; llama-imatrix needs at least 1024 tokens, two chunks)",
    )
    ladder.add_argument(
        "--calibration-answers",
        choices=("reference", "gold"),
        help="--calibrate: what follows each case's prompt in the calibration text: the F16 reference's "
        "own answer (default; it answers the cases first, about 4 s a case on a CPU) or the case's "
        "gold record",
    )
    ladder.add_argument(
        "--calibrate-text",
        metavar="FILE",
        nargs="?",
        const=_BUNDLED,
        help="also make each --quants type with an importance matrix from a general text file (UTF-8; "
        "an encyclopedia's pages, a book: not your task; without FILE the bundled opening of Pride and "
        "Prejudice, public domain), named like Q2_K+imat-text: the third arm "
        "beside the plain and the --calibrate types, to see whether your own data is what helps; with "
        "--calibrate it reads as many chunks of 512 tokens as the dataset's matrix did, else at most 128",
    )
    ladder.add_argument(
        "--imatrix",
        metavar="FILE",
        help="also make each --quants type with a ready-made importance matrix (a .gguf as llama-imatrix "
        "writes, or the legacy .dat) of this ladder's model (checked), named like Q2_K+imat-file; "
        "combines with --calibrate and --calibrate-text (one directory each, side by side)",
    )
