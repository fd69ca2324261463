"""quantgate: is a quantized LLM good enough to replace its reference for structured extraction?

The names below are loaded on first use (PEP 562), so that `import quantgate.production` does not
pay for the evaluation, the report or the server. The public surface is listed in docs/api.md.
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluators.errors import QuantgateError, UsageError
    from quantgate.analysis._compare import compare_runs
    from quantgate.analysis._report import write_report
    from quantgate.analysis._run_view import RunView, latest_run, load_run_view
    from quantgate.backends import BackendCapabilities, capabilities, register_backend
    from quantgate.decide._recommendation import decide, load_decision
    from quantgate.embeddings import EmbeddingOptions, VectorIndex, add_embeddings, run_embeddings
    from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
    from quantgate.evaluate._predictions import (
        PredictionLine,
        ScoreReport,
        read_predictions,
        score_predictions,
    )
    from quantgate.inputs._corpus import Corpus, load_corpus
    from quantgate.inputs._dataset import (
        Case,
        Dataset,
        DatasetError,
        Problem,
        bundled_datasets,
        check_dataset,
        load_dataset,
    )
    from quantgate.inputs._gates import Gates, load_gates
    from quantgate.inputs._variants import Variant, VariantSet, load_variants_file
    from quantgate.ladder._quantize import build_ladder
    from quantgate.loadtest._level_specs import LoadLevel, parse_levels
    from quantgate.loadtest._levels import LoadOptions
    from quantgate.loadtest._loadtest_run import run_load_test
    from quantgate.production import (
        ChosenVariant,
        Classification,
        Extractor,
        Generation,
        OnlineGuard,
        ProductionError,
        ToolCall,
        ToolCallAnswer,
        load_chosen,
        open_classifier,
        open_extractor,
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

_EXPORTS: dict[str, tuple[str, ...]] = {
    "evaluators.errors": ("QuantgateError", "UsageError"),
    "quantgate.analysis._compare": ("compare_runs",),
    "quantgate.analysis._report": ("write_report",),
    "quantgate.analysis._run_view": ("RunView", "latest_run", "load_run_view"),
    "quantgate.backends": ("BackendCapabilities", "capabilities", "register_backend"),
    "quantgate.decide._recommendation": ("decide", "load_decision"),
    "quantgate.embeddings": ("EmbeddingOptions", "VectorIndex", "add_embeddings", "run_embeddings"),
    "quantgate.evaluate._evaluation_run": ("RunOptions", "run_evaluation"),
    "quantgate.evaluate._predictions": (
        "PredictionLine",
        "ScoreReport",
        "read_predictions",
        "score_predictions",
    ),
    "quantgate.inputs._corpus": ("Corpus", "load_corpus"),
    "quantgate.inputs._dataset": (
        "Case",
        "Dataset",
        "DatasetError",
        "Problem",
        "bundled_datasets",
        "check_dataset",
        "load_dataset",
    ),
    "quantgate.inputs._gates": ("Gates", "load_gates"),
    "quantgate.inputs._variants": ("Variant", "VariantSet", "load_variants_file"),
    "quantgate.ladder._quantize": ("build_ladder",),
    "quantgate.loadtest._level_specs": ("LoadLevel", "parse_levels"),
    "quantgate.loadtest._levels": ("LoadOptions",),
    "quantgate.loadtest._loadtest_run": ("run_load_test",),
    "quantgate.production": (
        "ChosenVariant",
        "Classification",
        "Extractor",
        "Generation",
        "OnlineGuard",
        "ProductionError",
        "ToolCall",
        "ToolCallAnswer",
        "load_chosen",
        "open_classifier",
        "open_extractor",
        "open_generator",
        "open_tool_caller",
    ),
    "quantgate.rundir": (
        "CaseRecord",
        "Decision",
        "Run",
        "RunFileError",
        "RunSummary",
        "VariantEntry",
        "load_run",
        "write_schemas",
    ),
}
"""Where each public name is defined: the module imported on the name's first use."""

_RENAMED = {"run_load": "run_load_test"}
"""Old public names still answered, with a DeprecationWarning (`run_load` read like `load_run`)."""

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

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
    "load_variants_file",
    "open_classifier",
    "open_extractor",
    "open_generator",
    "open_tool_caller",
    "parse_levels",
    "read_predictions",
    "register_backend",
    "run_embeddings",
    "run_evaluation",
    "run_load_test",
    "score_predictions",
    "write_report",
    "write_schemas",
]


def __getattr__(name: str) -> object:
    """Import the module that defines a public name on its first use (PEP 562)."""
    if name in _RENAMED:
        warnings.warn(
            f"quantgate.{name} is now quantgate.{_RENAMED[name]}; the old name goes in a later release",
            DeprecationWarning,
            stacklevel=2,
        )
        return __getattr__(_RENAMED[name])
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'quantgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _LazyPackage(types.ModuleType):
    """The package whose public names a subpackage of the same name cannot replace: importing
    `quantgate.decide` binds that subpackage here, where `quantgate.decide` is the function."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _LazyPackage
