"""Gates: the thresholds a variant must meet to replace the reference, from TOML and flags.

A gates file is flat TOML; every key is optional and falls back to the default below:

    format_version = 1
    max_accuracy_drop = 0.05        # overall field accuracy, fraction (0.05 = 5 points)
    max_slice_accuracy_drop = 0.10  # per slice with at least min_slice_cases cases
    min_format_validity = 0.90
    max_error_rate = 0.05
    max_memory_mb = 2048            # peak RSS of the process holding the model
    max_p95_latency_s = 20
    min_neighbour_recall = 0.8      # embeddings (run --embeddings): share of the reference's top-k kept
    min_cosine_p5 = 0.95            # embeddings: 5th percentile of cosine similarity to the reference
    max_recall_drop = 0.05          # embeddings with relevance labels: recall@k drop vs the reference
    equivalence_margin = 0.02
    min_cases = 30
    min_slice_cases = 20
    confidence = 0.95

Values are typed strictly: a number must be a TOML number (`"0.05"` and `true` are refused, an
integer is taken as a float) and finite (no `inf` or `nan`). Accuracy, validity and rates are
fractions in [0, 1]. A gate is switched off by leaving
its threshold unset (the memory, latency and embedding gates are off by default) or, for a default
gate, by setting it to its loosest value (1.0 for a drop or a rate, 0.0 for validity).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluators.betting import DEFAULT_TRUNCATION
from evaluators.comparison import ComparisonOptions, IntervalMethod
from evaluators.errors import UsageError
from quantgate.inputs.tomlfile import read_toml, validation_message

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class GatesError(UsageError):
    """A gates file or flag that cannot be used; the message names the file and key."""


class Gates(BaseModel):
    """Thresholds and the statistics settings they are judged with.

    Attributes:
        max_accuracy_drop: Largest tolerated drop of overall field accuracy vs the reference.
            Passes only when the lower bound of the paired bootstrap interval of the delta
            is above minus this value: the data must show the drop is small.
        max_slice_accuracy_drop: The same per slice (tag), for slices with at least
            `min_slice_cases` paired cases; smaller slices are reported, not gated.
        min_format_validity: Lowest share of outputs that parse and match the schema.
        max_error_rate: Highest share of cases that ended in an error (invalid output
            after repairs, or a backend failure).
        max_memory_mb: Highest peak memory (MiB) of the process that holds the model.
        max_p95_latency_s: Highest 95th percentile of a case's end-to-end time.
        min_neighbour_recall: Lowest share of the reference's exact top-k neighbours that the
            variant's own top k keeps (`run --embeddings`).
        min_cosine_p5: Lowest 5th percentile of the cosine similarity between the variant's and
            the reference's embedding of the same text.
        max_recall_drop: Largest tolerated drop of recall@k against relevance labels; passes only
            when the lower bound of the paired bootstrap interval is above minus this value.
        equivalence_margin: Margin of the equivalence verdicts.
        min_cases: Fewer paired cases than this make accuracy verdicts inconclusive (a
            percentile bootstrap interval over a handful of cases is too narrow to trust).
        min_slice_cases: Slices with fewer paired cases are not gated.
        confidence: Coverage of every confidence interval.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    format_version: Literal[1] = 1
    max_accuracy_drop: Fraction | None = 0.05
    max_slice_accuracy_drop: Fraction | None = 0.10
    min_format_validity: Fraction | None = 0.90
    max_error_rate: Fraction | None = 0.05
    max_memory_mb: Annotated[float, Field(gt=0)] | None = None
    max_p95_latency_s: Annotated[float, Field(gt=0)] | None = None
    min_neighbour_recall: Fraction | None = None
    min_cosine_p5: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    max_recall_drop: Fraction | None = None
    equivalence_margin: Fraction = 0.02
    min_cases: Annotated[int, Field(ge=1)] = 30
    min_slice_cases: Annotated[int, Field(ge=1)] = 20
    confidence: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.95


GATE_KEYS = tuple(k for k in Gates.model_fields if k != "format_version")


def load_gates(path: str | Path | None = None, *, overrides: dict[str, Any] | None = None) -> Gates:
    """Gates from a TOML file (or the defaults), with CLI overrides applied on top.

    Args:
        path: A gates TOML file; None for the defaults.
        overrides: Values given on the command line; None values are ignored.

    Raises:
        GatesError: The file is missing or malformed, or a value is out of range.
    """
    values: dict[str, Any] = {}
    where = "defaults"
    if path is not None:
        where = str(path)
        values = read_toml(path, what="gates file", error=GatesError)
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    try:
        return Gates.model_validate({**values, **given})
    except ValidationError as exc:
        raise GatesError(
            validation_message(exc, f"{where} (with command-line values)" if given else where)
        ) from None


def comparison_options(
    gates: Gates, method: IntervalMethod = "betting", *, truncation: float = DEFAULT_TRUNCATION
) -> ComparisonOptions:
    """How the paired statistics are judged under these gates (margin, minimum cases, confidence),
    with the run's interval method ("sequential" for a sequential run) and betting truncation.

    The one translation of gates into comparison options: `decide`, `compare`, `explore` and
    the sequential run's stopping rule all judge deltas with it.
    """
    return ComparisonOptions(
        margin=gates.equivalence_margin,
        min_cases=gates.min_cases,
        confidence=gates.confidence,
        method=method,
        truncation=truncation,
    )
