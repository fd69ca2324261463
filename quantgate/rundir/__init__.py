"""The run directory: its file names, typed models, readers and writers."""

from quantgate.rundir.completeness import Completeness, completeness_of, run_completeness
from quantgate.rundir.decision import Decision, GateResult, RollbackSignal, VariantDecision
from quantgate.rundir.lines import CaseRecord, FidelityLine, LoadLine
from quantgate.rundir.load import LoadSection
from quantgate.rundir.schemas import write_schemas
from quantgate.rundir.store import (
    LineProblem,
    Run,
    RunFileError,
    RunStore,
    latest_records,
    load_run,
    read_decision,
    read_fidelity,
    read_load,
    read_records,
    read_summary,
)
from quantgate.rundir.summary import RunSummary, VariantEntry, VariantMetadata, VariantsFile

__all__ = [
    "CaseRecord",
    "Completeness",
    "Decision",
    "FidelityLine",
    "GateResult",
    "LineProblem",
    "LoadLine",
    "LoadSection",
    "RollbackSignal",
    "Run",
    "RunFileError",
    "RunStore",
    "RunSummary",
    "VariantDecision",
    "VariantEntry",
    "VariantMetadata",
    "VariantsFile",
    "completeness_of",
    "latest_records",
    "load_run",
    "read_decision",
    "read_fidelity",
    "read_load",
    "read_records",
    "read_summary",
    "run_completeness",
    "write_schemas",
]
