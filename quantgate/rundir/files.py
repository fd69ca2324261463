"""The names of a run directory's files, and the format version each is written in.

runs/<run-id>/
    summary.json       the run and one entry per variant            (RunSummary)
    records.jsonl      one line per case x variant                  (CaseRecord)
    variants.json      each variant's provenance, runtime, hardware (VariantsFile)
    fidelity.jsonl     token fidelity per variant x case            (FidelityLine)
    load.jsonl         one line per load-test request               (LoadLine)
    decision.json      the decision, its gates and evidence         (Decision)
    decision.md        the same, for people
    dataset/           a copy of the cases evaluated
    regressions/<v>/   each variant's regression cases, as a dataset
    report/            report.html and its charts
"""

from __future__ import annotations

from typing import Final, Literal

SUMMARY_FILE = "summary.json"
RECORDS_FILE = "records.jsonl"
VARIANTS_FILE = "variants.json"
FIDELITY_FILE = "fidelity.jsonl"
LOAD_FILE = "load.jsonl"
DECISION_JSON = "decision.json"
DECISION_MD = "decision.md"
DATASET_DIR = "dataset"
REGRESSIONS_DIR = "regressions"
REPORT_DIR = "report"

RUN_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of summary.json, records.jsonl, variants.json and fidelity.jsonl."""
LOAD_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of load.jsonl and the summary's `load` section."""
DECISION_FORMAT_VERSION: Final[Literal[2]] = 2
"""Of decision.json."""
