"""The run directory: its file names, typed models, readers and writers.

The names below are loaded on first use (PEP 562): the run-file models import each other through
their own modules, and a feature package's record (`quantgate.capacity._shape_record`) imports
`quantgate.rundir._lines` without loading every reader and writer first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quantgate.rundir._completeness import Completeness, completeness_of, run_completeness
    from quantgate.rundir._decision import Decision, GateResult, RollbackSignal, VariantDecision
    from quantgate.rundir._lines import CaseRecord, FidelityLine, LoadLine
    from quantgate.rundir._loadtest_section import LoadSection
    from quantgate.rundir._schemas import write_schemas
    from quantgate.rundir._store import (
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
    from quantgate.rundir._summary import RunSummary, VariantEntry, VariantMetadata, VariantsFile

_MODULE_OF: dict[str, str] = {
    "Completeness": "quantgate.rundir._completeness",
    "completeness_of": "quantgate.rundir._completeness",
    "run_completeness": "quantgate.rundir._completeness",
    "Decision": "quantgate.rundir._decision",
    "GateResult": "quantgate.rundir._decision",
    "RollbackSignal": "quantgate.rundir._decision",
    "VariantDecision": "quantgate.rundir._decision",
    "CaseRecord": "quantgate.rundir._lines",
    "FidelityLine": "quantgate.rundir._lines",
    "LoadLine": "quantgate.rundir._lines",
    "LoadSection": "quantgate.rundir._loadtest_section",
    "write_schemas": "quantgate.rundir._schemas",
    "LineProblem": "quantgate.rundir._store",
    "Run": "quantgate.rundir._store",
    "RunFileError": "quantgate.rundir._store",
    "RunStore": "quantgate.rundir._store",
    "latest_records": "quantgate.rundir._store",
    "load_run": "quantgate.rundir._store",
    "read_decision": "quantgate.rundir._store",
    "read_fidelity": "quantgate.rundir._store",
    "read_load": "quantgate.rundir._store",
    "read_records": "quantgate.rundir._store",
    "read_summary": "quantgate.rundir._store",
    "RunSummary": "quantgate.rundir._summary",
    "VariantEntry": "quantgate.rundir._summary",
    "VariantMetadata": "quantgate.rundir._summary",
    "VariantsFile": "quantgate.rundir._summary",
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
