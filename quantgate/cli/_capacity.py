"""`quantgate capacity`: the parallel sequences each variant fits in a memory budget (the memory model)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from evaluators.errors import MissingInputError
from quantgate.cli._common import bounded_float, bounded_int

if TYPE_CHECKING:
    from quantgate.capacity._capacity_run import VariantCapacity
    from quantgate.cli._common import Commands
    from quantgate.inputs._variants import VariantSet

MAX_MEMORY_GIB = 2**20
"""The largest `--memory-gib`: 1 PiB, beyond any one machine's memory (and the byte counts stay exact)."""
MAX_CONTEXT = 2**31 - 1
"""The largest `--context`: llama.cpp counts a context's tokens in a 32-bit integer."""
BASELINE_HELP = 215.0
"""The default of --baseline-mib as `--help` shows it, without importing the model at start-up
(`quantgate.capacity._capacity_run.DEFAULT_BASELINE_MIB` is the one definition; a test keeps them equal)."""


def _variants(specs: list[str] | None) -> VariantSet:
    """The variants named, else the ladder's variants.toml in the user cache (not built here)."""
    from quantgate.inputs._shorthands import resolve_variants
    from quantgate.ladder._quantize import default_ladder_dir

    if specs:
        return resolve_variants(specs)
    ladder = default_ladder_dir() / "variants.toml"
    if not ladder.is_file():
        raise MissingInputError(
            f"no ladder at {ladder}: build it with `quantgate ladder`, or name variants with --variants"
        )
    return resolve_variants([str(ladder)])


def _table(found: list[VariantCapacity], args: argparse.Namespace) -> str:
    from quantgate._formatting import MISSING, text_table

    def mib(value: float | None) -> str:
        return MISSING if value is None else f"{value / 2**20:,.0f}"

    header = ["variant", "sequences", "KV cache", "KV B/token", "weights MiB", "1 seq MiB", "at capacity MiB"]
    rows = [[*header, "note"]]
    for item in found:
        rows.append([
            item.variant,
            MISSING if item.sequences is None else str(item.sequences),
            item.kv_cache or MISSING,
            MISSING if item.kv_bytes_per_token is None else f"{item.kv_bytes_per_token:,.0f}",
            mib(item.weights_bytes), mib(item.one_sequence_bytes), mib(item.at_capacity_bytes),
            item.note or "",
        ])  # fmt: skip
    title = (
        f"parallel sequences of {args.context:,} tokens in {args.memory_gib:g} GiB "
        f"(process baseline {args.baseline_mib:g} MiB; predicted by the memory model)"
    )
    return "\n".join([title, *text_table(rows)])


def _capacity(args: argparse.Namespace) -> int:
    from quantgate._formatting import terminal_text
    from quantgate.backends import capabilities
    from quantgate.capacity._capacity_run import capacities
    from quantgate.evaluate._predictions import dump_json

    args.type_k = args.type_k or args.kv_cache
    args.type_v = args.type_v or args.kv_cache
    variant_set = _variants(args.variants)
    variants = variant_set.variants
    found = capacities(
        variants,
        [capabilities(variant).model_file for variant in variants],
        budget_bytes=round(args.memory_gib * 2**30),
        context=args.context,
        baseline_bytes=round(args.baseline_mib * 2**20),
        type_k=args.type_k,
        type_v=args.type_v,
    )
    if args.json:
        print(dump_json([dataclasses.asdict(item) for item in found]))
    else:
        print(terminal_text(_table(found, args), lines=True))
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate capacity`."""
    parser = commands.add_parser(
        "capacity",
        help="the parallel sequences each embedded variant fits in a memory budget (the memory model)",
    )
    parser.add_argument(
        "--memory-gib",
        type=bounded_float(
            0, MAX_MEMORY_GIB, f"a number of GiB above 0, at most {MAX_MEMORY_GIB}", above=True
        ),
        required=True,
        help=f"the memory budget, in GiB (2^30 bytes; above 0, at most {MAX_MEMORY_GIB}: 1 PiB)",
    )
    parser.add_argument(
        "--context",
        type=bounded_int(1, MAX_CONTEXT, f"a number of tokens from 1 to {MAX_CONTEXT}"),
        required=True,
        help=f"tokens of context of each sequence (at most {MAX_CONTEXT}, llama.cpp's limit)",
    )
    parser.add_argument(
        "--variants", nargs="+", metavar="FILE.toml|llamacpp:PATH.gguf",
        help="variants files or shorthands (default: the ladder's variants.toml in the user cache)",
    )  # fmt: skip
    parser.add_argument(
        "--kv-cache",
        help="KV-cache type of K and V: f16, q8_0, q4_0 (default: each variant's kv_cache, else f16)",
    )
    parser.add_argument("--type-k", help="K cache type, if not --kv-cache")
    parser.add_argument("--type-v", help="V cache type, if not --kv-cache")
    parser.add_argument(
        "--baseline-mib",
        type=bounded_float(0, MAX_MEMORY_GIB * 1024, f"a number of MiB from 0 to {MAX_MEMORY_GIB * 1024}"),
        default=BASELINE_HELP,
        help=f"RSS of the process before the model loads, in MiB (default {BASELINE_HELP:g}, measured; "
        "at most 1 PiB)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.set_defaults(handler=_capacity)
