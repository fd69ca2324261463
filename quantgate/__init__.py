"""quantgate: is a quantized LLM good enough to replace its reference for structured extraction?"""

from quantgate.dataset import (
    Case,
    Dataset,
    DatasetError,
    Problem,
    bundled_datasets,
    check_dataset,
    load_dataset,
)
from quantgate.scoring import PredictionLine, ScoreReport, read_predictions, score_predictions

__version__ = "0.1.0"

__all__ = [
    "Case",
    "Dataset",
    "DatasetError",
    "PredictionLine",
    "Problem",
    "ScoreReport",
    "__version__",
    "bundled_datasets",
    "check_dataset",
    "load_dataset",
    "read_predictions",
    "score_predictions",
]
