"""quantgate: is a quantized LLM good enough to replace its reference for structured extraction?"""

from quantgate.compare import compare_runs
from quantgate.dataset import (
    Case,
    Dataset,
    DatasetError,
    Problem,
    bundled_datasets,
    check_dataset,
    load_dataset,
)
from quantgate.decision import decide, load_decision
from quantgate.explore import RunView, latest_run, load_run_view
from quantgate.gates import Gates, load_gates
from quantgate.guard import OnlineGuard
from quantgate.ladder import build_ladder
from quantgate.load import LoadLevel, LoadOptions, parse_levels
from quantgate.load_run import run_load
from quantgate.production import ChosenVariant, Extractor, ProductionError, load_chosen, open_extractor
from quantgate.report import write_report
from quantgate.run import RunOptions, run_evaluation
from quantgate.runstore import Run, load_run
from quantgate.scoring import PredictionLine, ScoreReport, read_predictions, score_predictions
from quantgate.variants import Variant, VariantSet

__version__ = "0.1.0"

__all__ = [
    "Case",
    "ChosenVariant",
    "Dataset",
    "DatasetError",
    "Extractor",
    "Gates",
    "LoadLevel",
    "LoadOptions",
    "OnlineGuard",
    "PredictionLine",
    "Problem",
    "ProductionError",
    "Run",
    "RunOptions",
    "RunView",
    "ScoreReport",
    "Variant",
    "VariantSet",
    "__version__",
    "build_ladder",
    "bundled_datasets",
    "check_dataset",
    "compare_runs",
    "decide",
    "latest_run",
    "load_chosen",
    "load_dataset",
    "load_decision",
    "load_gates",
    "load_run",
    "load_run_view",
    "open_extractor",
    "parse_levels",
    "read_predictions",
    "run_evaluation",
    "run_load",
    "score_predictions",
    "write_report",
]
