"""Production use of the chosen variant: the extractor, the typed openers of the other task kinds,
the online guard and its observations."""

from quantgate.production._extractor import (
    ChosenVariant,
    ExtractionFailedError,
    Extractor,
    ProductionError,
    load_chosen,
    open_extractor,
)
from quantgate.production._guard import GuardedExtractionState, OnlineGuard, SignalReading, guard_node
from quantgate.production._kind_openers import (
    Answer,
    Classification,
    Classifier,
    Generation,
    Generator,
    TaskRunner,
    ToolCall,
    ToolCallAnswer,
    ToolCaller,
    open_classifier,
    open_generator,
    open_tool_caller,
)

__all__ = [
    "Answer",
    "ChosenVariant",
    "Classification",
    "Classifier",
    "ExtractionFailedError",
    "Extractor",
    "Generation",
    "Generator",
    "GuardedExtractionState",
    "OnlineGuard",
    "ProductionError",
    "SignalReading",
    "TaskRunner",
    "ToolCall",
    "ToolCallAnswer",
    "ToolCaller",
    "guard_node",
    "load_chosen",
    "open_classifier",
    "open_extractor",
    "open_generator",
    "open_tool_caller",
]
