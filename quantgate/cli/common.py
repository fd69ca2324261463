"""What several `quantgate` commands share: the default dataset, and resolving datasets and variants."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from quantgate.dataset import Dataset, load_dataset

if TYPE_CHECKING:
    from quantgate.variants import VariantSet

DEFAULT_DATASET = "contacts-events"
DEFAULT_LIMIT = 10


def cli_dataset(name: str, skip_invalid_cases: bool) -> Dataset:
    """Load a dataset by directory or bundled name, printing its warnings to stderr."""
    dataset = load_dataset(name, skip_invalid_cases=skip_invalid_cases)
    for warning in dataset.warnings:
        print(f"warning: {dataset.path}/{warning}", file=sys.stderr)
    return dataset


def cli_variants(specs: list[str] | None) -> VariantSet:
    """The variants given on the command line, else the default ladder (built if missing)."""
    from quantgate.ladder import build_ladder
    from quantgate.variants import resolve_variants

    if specs:
        return resolve_variants(specs)
    print("building the default ladder (Gemma 3 270M: F16 reference, Q8_0, Q5_K_M, Q4_K_M) if missing")
    variant_set, _ = build_ladder()
    return variant_set
