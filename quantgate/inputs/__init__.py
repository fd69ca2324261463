"""What a run takes from the user: datasets, variant specs, gates and record schemas."""

from quantgate.inputs._dataset import (
    Case,
    Dataset,
    DatasetError,
    Problem,
    bundled_datasets,
    check_dataset,
    load_dataset,
    write_dataset,
)
from quantgate.inputs._gates import Gates, GatesError, comparison_options, load_gates
from quantgate.inputs._record_schema import record_schema
from quantgate.inputs._shorthands import resolve_variants
from quantgate.inputs._variants import Variant, VariantSet, VariantSpec, VariantSpecError, load_variants_file

__all__ = [
    "Case",
    "Dataset",
    "DatasetError",
    "Gates",
    "GatesError",
    "Problem",
    "Variant",
    "VariantSet",
    "VariantSpec",
    "VariantSpecError",
    "bundled_datasets",
    "check_dataset",
    "comparison_options",
    "load_dataset",
    "load_gates",
    "load_variants_file",
    "record_schema",
    "resolve_variants",
    "write_dataset",
]
