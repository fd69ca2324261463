"""Production use of the chosen variant: the extractor, the online guard and its observations."""

from quantgate.production.extractor import (
    ChosenVariant,
    ExtractionFailedError,
    Extractor,
    ProductionError,
    load_chosen,
    open_extractor,
)
from quantgate.production.guard import GuardedExtractionState, OnlineGuard, SignalReading, guard_node

__all__ = [
    "ChosenVariant",
    "ExtractionFailedError",
    "Extractor",
    "GuardedExtractionState",
    "OnlineGuard",
    "ProductionError",
    "SignalReading",
    "guard_node",
    "load_chosen",
    "open_extractor",
]
