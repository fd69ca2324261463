"""LangGraph graphs: the extraction pipeline production runs, and the evaluation graph."""

from graphs.evaluation import CaseOutcome, EvaluationContext, build_evaluation_graph
from graphs.extraction import (
    ExtractionContext,
    ExtractionResult,
    ModelCallError,
    build_extraction_graph,
    prompt_messages,
)

__all__ = [
    "CaseOutcome",
    "EvaluationContext",
    "ExtractionContext",
    "ExtractionResult",
    "ModelCallError",
    "build_evaluation_graph",
    "build_extraction_graph",
    "prompt_messages",
]
