"""Evaluating variants: the run over a dataset, the token-fidelity step, worker processes, measurement."""

from quantgate.evaluate._evaluation_run import run_evaluation
from quantgate.evaluate._options import RunOptions, extraction_context, select_cases
from quantgate.evaluate._predictions import PredictionLine, ScoreReport, read_predictions, score_predictions

__all__ = [
    "PredictionLine",
    "RunOptions",
    "ScoreReport",
    "extraction_context",
    "read_predictions",
    "run_evaluation",
    "score_predictions",
    "select_cases",
]
