"""The run directory: its file names, typed models, readers and writers.

The names below are loaded on first use (PEP 562): the run-file models import each other through
their own modules, and a feature package's record (`quantgate.capacity.shape_record`) imports
`quantgate.rundir.lines` without loading every reader and writer first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quantgate.rundir.completeness import Completeness, completeness_of, run_completeness
    from quantgate.rundir.decision import Decision, GateResult, RollbackSignal, VariantDecision
    from quantgate.rundir.lines import CaseRecord, FidelityLine, LoadLine
    from quantgate.rundir.loadtest_section import LoadSection
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

_MODULE_OF: dict[str, str] = {
    "Completeness": "quantgate.rundir.completeness",
    "completeness_of": "quantgate.rundir.completeness",
    "run_completeness": "quantgate.rundir.completeness",
    "Decision": "quantgate.rundir.decision",
    "GateResult": "quantgate.rundir.decision",
    "RollbackSignal": "quantgate.rundir.decision",
    "VariantDecision": "quantgate.rundir.decision",
    "CaseRecord": "quantgate.rundir.lines",
    "FidelityLine": "quantgate.rundir.lines",
    "LoadLine": "quantgate.rundir.lines",
    "LoadSection": "quantgate.rundir.loadtest_section",
    "write_schemas": "quantgate.rundir.schemas",
    "LineProblem": "quantgate.rundir.store",
    "Run": "quantgate.rundir.store",
    "RunFileError": "quantgate.rundir.store",
    "RunStore": "quantgate.rundir.store",
    "latest_records": "quantgate.rundir.store",
    "load_run": "quantgate.rundir.store",
    "read_decision": "quantgate.rundir.store",
    "read_fidelity": "quantgate.rundir.store",
    "read_load": "quantgate.rundir.store",
    "read_records": "quantgate.rundir.store",
    "read_summary": "quantgate.rundir.store",
    "RunSummary": "quantgate.rundir.summary",
    "VariantEntry": "quantgate.rundir.summary",
    "VariantMetadata": "quantgate.rundir.summary",
    "VariantsFile": "quantgate.rundir.summary",
}
"""Where each public name is defined: the module imported on the name's first use."""


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


def __getattr__(name: str) -> object:
    """Import the module that defines a public name on its first use (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'quantgate.rundir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
