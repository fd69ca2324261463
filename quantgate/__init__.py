"""quantgate: is a quantized LLM good enough to replace its reference for structured extraction?"""

from evaluators.errors import QuantgateError, UsageError
from quantgate.analysis.compare import compare_runs
from quantgate.analysis.report import write_report
from quantgate.analysis.run_view import RunView, latest_run, load_run_view
from quantgate.backends import BackendCapabilities, capabilities, register_backend
from quantgate.decide.recommendation import decide, load_decision
from quantgate.embeddings import EmbeddingOptions, VectorIndex, add_embeddings, run_embeddings
from quantgate.evaluate.evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate.predictions import PredictionLine, ScoreReport, read_predictions, score_predictions
from quantgate.inputs.corpus import Corpus, load_corpus
from quantgate.inputs.dataset import (
    Case,
    Dataset,
    DatasetError,
    Problem,
    bundled_datasets,
    check_dataset,
    load_dataset,
)
from quantgate.inputs.gates import Gates, load_gates
from quantgate.inputs.variants import Variant, VariantSet
from quantgate.ladder.quantize import build_ladder
from quantgate.loadtest.levels import LoadLevel, LoadOptions, parse_levels
from quantgate.loadtest.load_run import run_load
from quantgate.production.extractor import (
    ChosenVariant,
    Extractor,
    ProductionError,
    load_chosen,
    open_extractor,
)
from quantgate.production.guard import OnlineGuard
from quantgate.production.tasks import (
    Classification,
    Generation,
    ToolCall,
    ToolCallAnswer,
    open_classifier,
    open_generator,
    open_tool_caller,
)
from quantgate.rundir import (
    CaseRecord,
    Decision,
    Run,
    RunFileError,
    RunSummary,
    VariantEntry,
    load_run,
    write_schemas,
)

__version__ = "0.1.0"

__all__ = [
    "BackendCapabilities",
    "Case",
    "CaseRecord",
    "ChosenVariant",
    "Classification",
    "Corpus",
    "Dataset",
    "DatasetError",
    "Decision",
    "EmbeddingOptions",
    "Extractor",
    "Gates",
    "Generation",
    "LoadLevel",
    "LoadOptions",
    "OnlineGuard",
    "PredictionLine",
    "Problem",
    "ProductionError",
    "QuantgateError",
    "Run",
    "RunFileError",
    "RunOptions",
    "RunSummary",
    "RunView",
    "ScoreReport",
    "ToolCall",
    "ToolCallAnswer",
    "UsageError",
    "Variant",
    "VariantEntry",
    "VariantSet",
    "VectorIndex",
    "__version__",
    "add_embeddings",
    "build_ladder",
    "bundled_datasets",
    "capabilities",
    "check_dataset",
    "compare_runs",
    "decide",
    "latest_run",
    "load_chosen",
    "load_corpus",
    "load_dataset",
    "load_decision",
    "load_gates",
    "load_run",
    "load_run_view",
    "open_classifier",
    "open_extractor",
    "open_generator",
    "open_tool_caller",
    "parse_levels",
    "read_predictions",
    "register_backend",
    "run_embeddings",
    "run_evaluation",
    "run_load",
    "score_predictions",
    "write_report",
    "write_schemas",
]
