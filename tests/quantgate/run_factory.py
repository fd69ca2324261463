"""Synthetic run directories for decision tests: records and summaries written by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from quantgate.dataset import Case, write_dataset
from quantgate.runstore import DATASET_DIR, RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": ["string", "null"]}, "b": {"type": ["number", "null"]}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def make_run(
    directory: Path,
    variants: dict[str, list[dict[str, float]]],
    *,
    footprints: dict[str, float],
    invalid: dict[str, int] | None = None,
    reference: str = "R",
) -> Path:
    """A complete run: one record per case per variant with the given field scores.

    `invalid[name]` makes that variant's first n cases invalid outputs (an error each).
    """
    directory.mkdir(parents=True)
    n = len(next(iter(variants.values())))
    cases = [
        Case(id=f"c{i}", text=f"case {i}", expected={"a": "x", "b": float(i)}, tags=("lang:en", "numbers"))
        for i in range(n)
    ]
    write_dataset(directory / DATASET_DIR, schema=SCHEMA, cases=cases, card="synthetic\n")
    entries, lines = [], []
    for name, scores in variants.items():
        bad = (invalid or {}).get(name, 0)
        for i, fields in enumerate(scores):
            agreement = (
                None
                if name == reference
                else {k: float(v == variants[reference][i][k]) for k, v in fields.items()}
            )
            lines.append(
                {
                    "variant": name,
                    "case_id": f"c{i}",
                    "tags": ["lang:en", "numbers"],
                    "fields": fields,
                    "valid": i >= bad,
                    "format_valid": i >= bad,
                    "error_kind": "invalid_output" if i < bad else None,
                    "agreement_fields": agreement,
                    "total_s": 1.0 + i / 10,
                }
            )
        entries.append(
            {
                "name": name,
                "status": "ok",
                "is_reference": name == reference,
                "quantization": name,
                "model_memory_mb": footprints[name],
                "memory_mb": footprints[name] + 300,
            }
        )
    (directory / RECORDS_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary: dict[str, Any] = {
        "run_id": directory.name,
        "status": "complete",
        "reference": reference,
        "dataset": {"name": "synthetic", "path": str(directory / DATASET_DIR), "sha256": "x", "cases": n},
        "hardware": {"cpu": "test"},
        "variants": entries,
    }
    (directory / SUMMARY_FILE).write_text(json.dumps(summary))
    metadata = [
        {"name": name, "quantization": name, "method": "test", "calibration": "none"} for name in variants
    ]
    (directory / VARIANTS_FILE).write_text(json.dumps({"format_version": 1, "variants": metadata}))
    return directory
