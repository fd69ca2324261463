"""Scoring any system's predictions file against a dataset's gold (`quantgate score`)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evaluators import CaseScore, DatasetScore, MatchOptions, aggregate
from evaluators.errors import MissingInputError, UsageError
from quantgate.inputs._dataset import Dataset, Problem, validation_problems
from quantgate.inputs._utf8 import utf8_lines


class PredictionLine(BaseModel):
    """One line of a predictions file: `{"id", "output": {...}}` or `{"id", "raw": "..."}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    output: dict[str, Any] | None = None
    raw: str | None = None

    @model_validator(mode="after")
    def _one_of_output_or_raw(self) -> PredictionLine:
        if (self.output is None) == (self.raw is None):
            raise ValueError("give exactly one of 'output' (a JSON object) or 'raw' (the model's text)")
        return self


def read_predictions(path: Path) -> tuple[dict[str, PredictionLine], list[Problem]]:
    """Read a predictions file, keeping every good line and naming every bad one.

    Returns:
        Predictions by id (the first line of an id wins) and the problems found (a line that is
        not UTF-8 among them).

    Raises:
        UsageError: The file is missing (a `MissingInputError`) or cannot be read.
    """
    predictions: dict[str, PredictionLine] = {}
    problems: list[Problem] = []
    for lineno, line in _lines(path, problems):
        try:
            prediction = PredictionLine.model_validate_json(line)
        except ValidationError as exc:
            problems.extend(validation_problems(exc, file=path.name, line=lineno))
            continue
        if prediction.id in predictions:
            problems.append(
                Problem.duplicate_id(file=path.name, line=lineno, case_id=prediction.id, kept="first kept")
            )
            continue
        predictions[prediction.id] = prediction
    return predictions, problems


def _lines(path: Path, problems: list[Problem]) -> list[tuple[int, str]]:
    """The non-blank lines of a predictions file with their numbers, each decoded on its own (a line
    that is not UTF-8 is a problem naming it); a file that cannot be read is the user's to fix."""
    try:
        return list(utf8_lines(path, problems))
    except FileNotFoundError:
        raise MissingInputError(f"{path}: no such predictions file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc}") from None


@dataclass(frozen=True, kw_only=True)
class ScoreReport:
    """The result of scoring a predictions file.

    Attributes:
        dataset: The dataset's name.
        summary: Dataset-level aggregates.
        case_scores: Per-case scores, in dataset order.
        missing: Case ids with no prediction (scored as failures).
        unknown_ids: Prediction ids that are not in the dataset (not scored).
        outcomes: Per field, how many cases ended in each outcome.
    """

    dataset: str
    summary: DatasetScore
    case_scores: list[CaseScore]
    missing: list[str] = field(default_factory=list)
    unknown_ids: list[str] = field(default_factory=list)
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The machine-readable summary printed by `quantgate score --json`."""
        return {
            "dataset": self.dataset,
            **self.summary.model_dump(),
            "missing": self.missing,
            "unknown_ids": self.unknown_ids,
            "outcomes": self.outcomes,
        }


def score_predictions(
    dataset: Dataset,
    predictions: dict[str, PredictionLine],
    options: MatchOptions | None = None,
) -> ScoreReport:
    """Score predictions against the dataset's gold; cases with no prediction fail."""
    scorer = dataset.scorer(options or MatchOptions())
    case_scores = []
    missing = []
    for case in dataset.cases:
        prediction = predictions.get(case.id)
        if prediction is None:
            missing.append(case.id)
            outputs: str | dict[str, Any] | None = None
        else:
            outputs = prediction.output if prediction.output is not None else prediction.raw
        case_scores.append(
            scorer(
                case_id=case.id,
                outputs=outputs,
                reference_outputs=case.expected,
                tags=case.tags,
                missing_reason="no prediction for this case",
            )
        )
    known = {case.id for case in dataset.cases}
    outcomes: dict[str, Counter[str]] = {}
    for score in case_scores:
        for name, result in (score.fields.fields if score.fields else {}).items():
            outcomes.setdefault(name, Counter())[result.outcome] += 1
    return ScoreReport(
        dataset=dataset.name,
        summary=aggregate(case_scores),
        case_scores=case_scores,
        missing=missing,
        unknown_ids=[i for i in predictions if i not in known],
        outcomes={name: dict(counts) for name, counts in outcomes.items()},
    )


def render_report(report: ScoreReport) -> str:
    """A human-readable table of per-field and overall figures."""
    summary = report.summary
    lines = [f"dataset: {report.dataset}   cases: {summary.cases}", ""]
    header = f"{'field':<32} {'accuracy':>8} {'correct':>8} {'wrong':>6} {'missed':>7} {'false+':>7}"
    lines += [header, "-" * len(header)]
    for name, accuracy in summary.fields.items():
        counts = report.outcomes.get(name, {})
        wrong = counts.get("wrong", 0) + counts.get("partial", 0) + counts.get("no_output", 0)
        lines.append(
            f"{name:<32} {_pct(accuracy):>8} {counts.get('correct', 0):>8} {wrong:>6} "
            f"{counts.get('missed', 0):>7} {counts.get('false_positive', 0):>7}"
        )
    lines += [
        "",
        f"field accuracy (micro): {_pct(summary.field_accuracy)}",
        f"field accuracy (macro): {_pct(summary.field_accuracy_macro)}",
        f"format validity:        {_pct(summary.format_validity)}",
    ]
    if summary.slices:
        slices = ", ".join(
            f"{tag} {_pct(acc)} (n={summary.slice_cases[tag]})" for tag, acc in summary.slices.items()
        )
        lines.append(f"slices: {slices}")
    if report.missing:
        lines.append(
            f"missing predictions ({len(report.missing)}, scored as failures): {_ids(report.missing)}"
        )
    if report.unknown_ids:
        lines.append(
            f"unknown ids, not in the dataset ({len(report.unknown_ids)}): {_ids(report.unknown_ids)}"
        )
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _ids(ids: list[str], limit: int = 10) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... (+{len(ids) - limit})" if len(ids) > limit else "")


def dump_json(value: Any) -> str:
    """JSON for humans and machines: indented, UTF-8 kept."""
    return json.dumps(value, indent=2, ensure_ascii=False)
