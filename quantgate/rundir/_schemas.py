"""The JSON Schemas of the run files, generated from their models (`quantgate schemas DIR`).

Users who parse run directories with other tools validate against these; the tests check
that every file of a fresh run validates.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from quantgate.rundir import _files as files
from quantgate.rundir._decision import Decision
from quantgate.rundir._embedding_files import EmbeddingsFile
from quantgate.rundir._lines import CaseRecord, FidelityLine, LoadLine, NoiseFloorLine
from quantgate.rundir._summary import RunSummary, VariantsFile
from quantgate.suite._suite_records import SUITE_DECISION_JSON, SUITE_FILE, SuiteDecision, SuiteRun

SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "summary.schema.json": (RunSummary, files.SUMMARY_FILE),
    "record.schema.json": (CaseRecord, files.RECORDS_FILE),
    "variants.schema.json": (VariantsFile, files.VARIANTS_FILE),
    "fidelity.schema.json": (FidelityLine, files.FIDELITY_FILE),
    "load.schema.json": (LoadLine, files.LOAD_FILE),
    "noise_floor.schema.json": (NoiseFloorLine, files.NOISE_FLOOR_FILE),
    "decision.schema.json": (Decision, files.DECISION_JSON),
    "embeddings.schema.json": (EmbeddingsFile, files.EMBEDDINGS_JSON),
    "suite.schema.json": (SuiteRun, SUITE_FILE),
    "suite_decision.schema.json": (SuiteDecision, SUITE_DECISION_JSON),
}
"""Schema file name -> (model, the run file it describes; a JSONL file's schema is of one line)."""


def json_schema(model: type[BaseModel], describes: str) -> dict[str, object]:
    """A model's JSON Schema (draft 2020-12), titled and described after the file it is for."""
    schema = model.model_json_schema(mode="serialization")
    line = " (one line of the file)" if describes.endswith(".jsonl") else ""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"quantgate/{describes}",
        **schema,
        "description": f"quantgate run file `{describes}`{line}. {schema.get('description', '')}".strip(),
    }


def write_schemas(directory: Path) -> list[Path]:
    """Write each run file's JSON Schema into `directory` (created if missing).

    Returns:
        The files written, in the order of `SCHEMAS`.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (model, describes) in SCHEMAS.items():
        path = directory / name
        text = json.dumps(json_schema(model, describes), indent=2, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")
        written.append(path)
    return written
