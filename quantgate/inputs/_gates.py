"""Gates: the thresholds a variant must meet to replace the reference, from TOML and flags.

A gates file is flat TOML whose keys are the fields of `Gates` below, each optional, each with its
default; docs/decision.md#gates shows a file with every key. Each key is also a flag of `run`, `decide`
and `compare` (`--max-accuracy-drop`), whose help is the field's docstring.

Values are typed strictly: a number must be a TOML number (`"0.05"` and `true` are refused, an
integer is taken as a float) and finite (no `inf` or `nan`). Accuracy, validity and rates are
fractions in [0, 1]. A gate is switched off by leaving its threshold unset (the memory, latency,
embedding, capacity and runtime gates are off by default) or, for a default gate, by setting it to
its loosest value (1.0 for a drop or a rate, 0.0 for validity).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evaluators.betting import DEFAULT_TRUNCATION
from evaluators.comparison import ComparisonOptions, IntervalMethod
from evaluators.errors import UsageError
from quantgate.inputs._tomlfile import read_toml, validation_message

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]

DEFAULT_MAX_FLIP_SHARE = 0.25
"""The flip gate's default (docs/decision.md, Flips: how it was chosen from measured flip shares)."""


class GatesError(UsageError):
    """A gates file or flag that cannot be used; the message names the file and key."""


class Gates(BaseModel):
    """Thresholds and the statistics settings they are judged with.

    Each threshold is a gate, judged by the check of its name in `quantgate.decide._checks.GATE_CHECKS`;
    None switches it off. The settings (`SETTING_KEYS`) say how the gates are judged. Each field's
    docstring is its description: the help of its flag and of the JSON Schemas.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False, use_attribute_docstrings=True
    )

    format_version: Literal[1] = 1
    max_accuracy_drop: Fraction | None = 0.05
    """Largest tolerated drop of overall field accuracy vs the reference (0.05: 5 points); passes only
    when the lower bound of the paired interval of the delta is at or above minus this value."""
    max_slice_accuracy_drop: Fraction | None = 0.10
    """The same per slice (tag), for slices with at least min_slice_cases paired cases; smaller slices
    are reported, not gated."""
    max_runtime_accuracy_drop: Fraction | None = None
    """Largest tolerated drop of field accuracy of a variant against the variant of the same model file
    (same sha256) on another backend, the embedded one when there is one (docs/decision.md, Runtime
    comparison); passes only when the lower bound of the paired interval is at or above minus this
    value; a variant with no such partner is not measured. Off by default."""
    max_flip_share: Fraction | None = DEFAULT_MAX_FLIP_SHARE
    """Largest tolerated share of fields whose answer differs from the reference's on the labeled paired
    cases (right to wrong, wrong to right, or wrong to another wrong: evaluators.flips); passes only when
    the upper bound of its interval is at most this value, fails when the lower bound is above it. It
    catches a variant that changes most answers of a weak reference, which the accuracy gates cannot
    (docs/decision.md, Flips)."""
    min_format_validity: Fraction | None = 0.90
    """Lowest share of outputs that parse and match the schema."""
    max_error_rate: Fraction | None = 0.05
    """Highest share of cases that ended in an error (invalid output after repairs, or a backend
    failure)."""
    max_memory_mb: Annotated[float, Field(gt=0)] | None = None
    """Highest peak memory (MiB) of the process that holds the model."""
    max_p95_latency_s: Annotated[float, Field(gt=0)] | None = None
    """Highest 95th percentile of a case's end-to-end time (seconds)."""
    min_neighbour_recall: Fraction | None = None
    """Lowest share of the reference's exact top-k neighbours that the variant's own top k keeps
    (run --embeddings)."""
    min_cosine_p5: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    """Lowest 5th percentile of the cosine similarity between the variant's and the reference's
    embedding of the same text (run --embeddings)."""
    max_recall_drop: Fraction | None = None
    """Largest tolerated drop of recall@k against relevance labels (run --embeddings); passes only when
    the lower bound of the paired interval is at or above minus this value."""
    min_parallel_sequences: Annotated[int, Field(ge=1)] | None = None
    """Fewest parallel sequences of capacity_context tokens that the memory model must fit in
    capacity_memory_gib (embedded variants, from the model shape the run recorded; needs
    capacity_memory_gib)."""
    min_goodput_rps: Annotated[float, Field(gt=0)] | None = None
    """Lowest goodput (requests per second within the load test's latency targets) at the variant's
    highest-rate Poisson load level; passes when the lower bound of its interval is at or above it."""
    equivalence_margin: Fraction = 0.02
    """Margin of the equivalence verdicts."""
    min_cases: Annotated[int, Field(ge=1)] = 30
    """Fewer paired cases than this make accuracy verdicts of a fixed sample inconclusive."""
    min_slice_cases: Annotated[int, Field(ge=1)] = 20
    """Slices with fewer paired cases are not gated."""
    confidence: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.95
    """Coverage of every confidence interval."""
    capacity_context: Annotated[int, Field(ge=1)] = 4096
    """Tokens of context of each sequence that min_parallel_sequences is judged at."""
    capacity_memory_gib: Annotated[float, Field(gt=0)] | None = None
    """Memory budget (GiB) that min_parallel_sequences is judged in; required with that gate."""

    @model_validator(mode="after")
    def _capacity_budget(self) -> Gates:
        if self.min_parallel_sequences is not None and self.capacity_memory_gib is None:
            raise ValueError(
                "min_parallel_sequences needs capacity_memory_gib, the memory budget in GiB it is judged in"
            )
        return self


GATE_KEYS = tuple(k for k in Gates.model_fields if k != "format_version")
"""Every key of a gates file (and flag), thresholds and settings, in the model's order."""
SETTING_KEYS = (
    "equivalence_margin",
    "min_cases",
    "min_slice_cases",
    "confidence",
    "capacity_context",
    "capacity_memory_gib",
)
"""The keys that set how the gates are judged (margin, case minimums, coverage), not gates themselves."""
THRESHOLD_KEYS = tuple(k for k in GATE_KEYS if k not in SETTING_KEYS)
"""The gates: each a threshold judged by its check in `quantgate.decide._checks.GATE_CHECKS`."""


def value_type(key: str) -> type[int] | type[float]:
    """The number type of a key's values (`int` for the case counts, else `float`): what its flag
    parses the command line's text with."""
    stack = [Gates.model_fields[key].annotation]
    while stack:
        annotation = stack.pop()
        if annotation is int:
            return int
        stack.extend(get_args(annotation))
    return float


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
