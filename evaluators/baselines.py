"""Trivial baselines: the field accuracy of predictors that never read the case text.

A model's field accuracy means little until it is set against what answering without
looking would score. Two predictors are scored, with the same `CaseScorer` and `aggregate`
as the model (so field accuracy keeps one definition):

- always null: every top-level schema property null;
- majority value: per top-level property, its most common gold value over the cases
  (values compared as canonical JSON, `json.dumps(v, sort_keys=True)`; null is a candidate
  like any other value; a tie goes to the value seen first).

The majority record is taken over the labeled cases given to `baseline_scores`; a variant
scored on fewer of them gets those same predictors averaged over its cases
(`baseline_accuracy`). Cases without a gold record are skipped; with no labeled case every
figure is None.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.aggregate import CaseScore, DatasetScore, aggregate
from evaluators.case import CaseScorer
from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions
from evaluators.tasks import ExtractionTask, Task

Gold = Mapping[str, Any]
_TIE = 1e-9


@dataclass(frozen=True, kw_only=True)
class BaselineScore:
    """One trivial predictor's figures, defined as a variant's are (`evaluators.aggregate`).

    Attributes:
        cases: Number of labeled cases scored.
        field_accuracy: Micro average over all fields of all cases; None without a labeled case.
        field_accuracy_macro: Mean of the per-field accuracies.
        fields: Per-field accuracy, keyed by dotted field name.
        slices: Micro field accuracy over the cases carrying each tag.
    """

    cases: int
    field_accuracy: float | None
    field_accuracy_macro: float | None
    fields: dict[str, float | None] = field(default_factory=dict)
    slices: dict[str, float | None] = field(default_factory=dict)

    @classmethod
    def of(cls, score: DatasetScore) -> BaselineScore:
        """The field figures of a dataset score (a baseline has no format to judge)."""
        return cls(
            cases=score.cases,
            field_accuracy=score.field_accuracy,
            field_accuracy_macro=score.field_accuracy_macro,
            fields=dict(score.fields),
            slices=dict(score.slices),
        )


@dataclass(frozen=True, kw_only=True)
class BaselineScores:
    """Both trivial predictors over the same labeled cases, with each case's scores kept.

    Attributes:
        always_null: The figures of the record with every top-level property null.
        majority: The figures of the record of each top-level property's most common gold value.
        majority_record: That record (empty without a labeled case).
        case_scores: Case id -> its scores under (always null, majority), for `restricted_to`.
    """

    always_null: BaselineScore
    majority: BaselineScore
    majority_record: dict[str, Any] = field(default_factory=dict)
    case_scores: dict[str, tuple[CaseScore, CaseScore]] = field(default_factory=dict, repr=False)

    @property
    def cases(self) -> int:
        """Number of labeled cases the predictors were scored on."""
        return len(self.case_scores)

    @property
    def best_field_accuracy(self) -> float | None:
        """The higher micro field accuracy of the two predictors; None when neither was measured."""
        measured = [
            s.field_accuracy for s in (self.always_null, self.majority) if s.field_accuracy is not None
        ]
        return max(measured) if measured else None

    def restricted_to(self, case_ids: Iterable[str]) -> BaselineScores:
        """The same two predictors (the majority record unchanged) scored on some of the cases.

        Args:
            case_ids: The cases to keep; ids that are not among the scored (labeled) cases are skipped.
        """
        kept = {i: self.case_scores[i] for i in dict.fromkeys(case_ids) if i in self.case_scores}
        return BaselineScores(
            always_null=BaselineScore.of(aggregate(null for null, _ in kept.values())),
            majority=BaselineScore.of(aggregate(majority for _, majority in kept.values())),
            majority_record=self.majority_record if kept else {},
            case_scores=kept,
        )


def _properties(schema: Mapping[str, Any]) -> list[str]:
    return list(schema.get("properties", {}))


def always_null_record(*, schema: Mapping[str, Any]) -> dict[str, None]:
    """The record with every top-level property of `schema` null."""
    return dict.fromkeys(_properties(schema))


def majority_record(*, golds: Iterable[Gold], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Per top-level property, its most common value over `golds` (a missing key counts as null).

    Values are compared as canonical JSON; a tie goes to the value seen first.
    """
    counts: dict[str, dict[str, int]] = {name: {} for name in _properties(schema)}
    values: dict[str, dict[str, Any]] = {name: {} for name in counts}
    for gold in golds:
        for name, seen in counts.items():
            value = gold.get(name)
            key = json.dumps(value, sort_keys=True)
            seen[key] = seen.get(key, 0) + 1
            values[name].setdefault(key, value)
    # max keeps the first of equal counts, and dicts keep first-occurrence order
    return {
        name: values[name][max(seen, key=seen.__getitem__)] if seen else None for name, seen in counts.items()
    }


def _score(
    scorer: CaseScorer, case_id: str, gold: Gold, tags: Sequence[str], record: Mapping[str, Any]
) -> CaseScore:
    # outputs=None with `record`: the fields of `record` are scored, there is no text to judge the format of
    return scorer(
        case_id=case_id,
        outputs=None,
        reference_outputs=gold,
        tags=tags,
        record=record,
        missing_reason="a trivial baseline",
    )


def baseline_scores(
    *,
    golds: Mapping[str, Gold | None],
    tags: Mapping[str, Sequence[str]],
    schema: Mapping[str, Any],
    options: MatchOptions = DEFAULT_OPTIONS,
    task: Task | None = None,
    case_tasks: Mapping[str, Task] | None = None,
) -> BaselineScores:
    """Score the always-null and majority-value predictors on the labeled cases.

    Args:
        golds: Case id -> gold record; a None gold (an unlabeled case) is skipped.
        tags: Case id -> the case's tags: its `lang:xx` tag sets the language fields are
            read in, as for the model; a case missing here has no tags.
        schema: The dataset's JSON Schema.
        options: Matcher tolerances: those the model was scored with.
        task: The dataset's task, whose kind's scorer scores the fields (None: extraction).
        case_tasks: Each case's task by id when cases bring their own tools (the dataset's
            `case_tasks`): a case is scored against its own (None: every case against `task`).

    Returns:
        Both predictors' figures; None figures when no case is labeled.
    """
    labeled = {case_id: gold for case_id, gold in golds.items() if gold is not None}
    scorer = CaseScorer(
        schema=schema, options=options, task=task or ExtractionTask(), case_tasks=case_tasks or {}
    )
    null = always_null_record(schema=schema)
    majority = majority_record(golds=labeled.values(), schema=schema)
    case_scores = {
        case_id: (
            _score(scorer, case_id, gold, tags.get(case_id, ()), null),
            _score(scorer, case_id, gold, tags.get(case_id, ()), majority),
        )
        for case_id, gold in labeled.items()
    }
    return BaselineScores(
        always_null=BaselineScore.of(aggregate(n for n, _ in case_scores.values())),
        majority=BaselineScore.of(aggregate(m for _, m in case_scores.values())),
        majority_record=majority if labeled else {},
        case_scores=case_scores,
    )


def baseline_accuracy(*, scores: BaselineScores, case_ids: Iterable[str]) -> float | None:
    """The best trivial baseline's micro field accuracy over some cases (those a variant was scored on).

    The predictors are the run's (the majority record taken over all of `scores`' cases), only
    the cases they are averaged over change; it re-aggregates kept scores, nothing is re-scored.

    Args:
        scores: `baseline_scores` of the run's labeled cases.
        case_ids: The cases the variant was scored on; unlabeled or unknown ids are skipped.

    Returns:
        `BaselineScores.best_field_accuracy` over those cases; None when none of them is labeled.
    """
    return scores.restricted_to(case_ids).best_field_accuracy


def above_baseline(*, field_accuracy: float | None, baseline_accuracy: float | None) -> bool | None:
    """Whether a field accuracy is strictly above the best trivial baseline's on the same cases.

    Returns:
        False at or below the baseline (a model no better than not reading the text); None
        when either figure was not measured.
    """
    if field_accuracy is None or baseline_accuracy is None:
        return None
    # the same figure summed in another case order can differ in the last bits: that is a tie
    return field_accuracy > baseline_accuracy + _TIE
