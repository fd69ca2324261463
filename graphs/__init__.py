"""LangGraph graphs: the extraction pipeline production runs, and the evaluation graph."""

from graphs.evaluation import CaseOutcome, EvaluationContext, build_evaluation_graph
from graphs.extraction import ExtractionContext, ExtractionResult, build_extraction_graph
from graphs.long_inputs import prompt_messages
from graphs.streamed import ModelCallError
from graphs.variant_summary import EVALUATORS, EvaluatorNode, VariantSummary

__all__ = [
    "EVALUATORS",
    "CaseOutcome",
    "EvaluationContext",
    "EvaluatorNode",
    "ExtractionContext",
    "ExtractionResult",
    "ModelCallError",
    "VariantSummary",
    "build_evaluation_graph",
    "build_extraction_graph",
    "prompt_messages",
]
