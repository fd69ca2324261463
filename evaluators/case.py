"""Scoring one case end to end: format validity, then field accuracy of what parsed.

A case's language is its `lang:xx` tag (`case_language`); fields are read in it. Fields are
scored by the task kind's scorer (`evaluators.tasks`): field by field for extraction and
classification, the kind's own for tool calling and generation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evaluators.aggregate import CaseScore
from evaluators.fields import FieldAccuracy, no_output
from evaluators.format import FormatEvaluator, FormatProblem, FormatResult
from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions
from evaluators.schema import FieldSpec
from evaluators.task_models import tool_set_key
from evaluators.tasks import CaseFieldScorer, ExtractionTask, Task, case_field_scorer, field_spec

_LANGUAGE_TAG = "lang:"


def case_language(tags: Iterable[str]) -> str | None:
    """The language of a case from its first `lang:xx` tag (`"lang:fr"` -> `"fr"`); None without one."""
    return next((t[len(_LANGUAGE_TAG) :] for t in tags if t.startswith(_LANGUAGE_TAG)), None)


@dataclass(frozen=True, kw_only=True)
class CaseScorer:
    """Scores outputs against one schema; schema parsing and validator are built once.

    Attributes:
        schema: The dataset's record schema (for the kinds other than extraction, derived
            from its task).
        options: Matcher tolerances.
        task: The dataset's task; its kind's scorer scores the fields.
        case_tasks: Each case's task by id when some case brings its own tools (the dataset's
            `case_tasks`): a case is then scored against its task and its task's record schema
            (`for_case`); empty: every case against `schema` and `task`.

    Raises:
        UsageError: The task's kind has no scorer wired yet (`evaluators.kinds.TASK_KINDS`).
    """

    schema: Mapping[str, Any]
    options: MatchOptions = field(default=DEFAULT_OPTIONS)
    task: Task = field(default_factory=ExtractionTask)
    case_tasks: Mapping[str, Task] = field(default_factory=dict)

    def __post_init__(self) -> None:
        case_field_scorer(self.task)  # refuse a kind without a scorer before any case runs

    def for_case(self, case_id: str) -> CaseScorer:
        """The scorer of one case: against its own task (and that task's record schema) when it
        brings its own tools, else this one; cases with the same tools share one."""
        task = self.case_tasks.get(case_id)
        if task is None:
            return self
        key = tool_set_key(task.offered_tools)
        if key not in self._case_scorers:
            schema = task.record_schema()
            assert schema is not None, "a task of a case's own derives its record schema"
            self._case_scorers.setdefault(key, CaseScorer(schema=schema, options=self.options, task=task))
        return self._case_scorers[key]

    @cached_property
    def _case_scorers(self) -> dict[str, CaseScorer]:
        """The scorers of the cases' own tasks, by tool set (`for_case`)."""
        return {}

    @cached_property
    def spec(self) -> FieldSpec:
        """The scored fields, as a field tree."""
        return field_spec(self.task, self.schema)

    @cached_property
    def _score_fields(self) -> CaseFieldScorer:
        return case_field_scorer(self.task)

    def fields(
        self, *, outputs: Mapping[str, Any] | None, reference_outputs: Mapping[str, Any], lang: str | None
    ) -> FieldAccuracy:
        """The fields of a record (None: no record, every field fails) against a gold record,
        scored by the task kind's scorer; the reference's record as gold gives the agreement."""
        if outputs is None:
            return no_output(self.spec, reference_outputs)
        return self._score_fields(
            outputs=outputs,
            reference_outputs=reference_outputs,
            task=self.task,
            spec=self.spec,
            options=self.options,
            lang=lang,
        )

    @cached_property
    def format(self) -> FormatEvaluator:
        """The format evaluator for this schema."""
        return FormatEvaluator(schema=self.schema)

    def __call__(
        self,
        *,
        case_id: str,
        outputs: str | Mapping[str, Any] | None,
        reference_outputs: Mapping[str, Any] | None,
        tags: Sequence[str] = (),
        missing_reason: str = "no output",
        record: Mapping[str, Any] | None = None,
    ) -> CaseScore:
        """Score one case.

        Args:
            case_id: The case's id.
            outputs: Raw model text (parsed here), a parsed record, or None when the
                system produced nothing (then every field fails and the format is invalid).
            reference_outputs: The gold record, or None for an unlabeled case.
            tags: The case's slices; its `lang:xx` tag sets the language fields are read in.
            missing_reason: The format error recorded when `outputs` is None.
            record: The record to score fields on when it differs from the parsed output
                (a pipeline's normalized record); format validity is still judged on `outputs`.
        """
        own = self.for_case(case_id)
        if own is not self:
            return own(
                case_id=case_id,
                outputs=outputs,
                reference_outputs=reference_outputs,
                tags=tags,
                missing_reason=missing_reason,
                record=record,
            )
        if outputs is None:
            fmt = FormatResult(
                is_json=None,
                schema_valid=None,
                errors=(FormatProblem(path="<root>", message=missing_reason),),
            )
        else:
            fmt = self.format(outputs=outputs)
        if record is None:
            record = fmt.parsed if isinstance(fmt.parsed, Mapping) else None
        fields = (
            None
            if reference_outputs is None
            else self.fields(outputs=record, reference_outputs=reference_outputs, lang=case_language(tags))
        )
        return CaseScore(case_id=case_id, tags=tuple(tags), fields=fields, format=fmt)
