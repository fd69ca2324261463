"""Scoring one case end to end: format validity, then field accuracy of what parsed.

A case's language is its `lang:xx` tag (`case_language`); fields are read in it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evaluators.aggregate import CaseScore
from evaluators.fields import no_output, score_fields
from evaluators.format import FormatEvaluator, FormatProblem, FormatResult
from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions
from evaluators.schema import FieldSpec, parse_schema

_LANGUAGE_TAG = "lang:"


def case_language(tags: Iterable[str]) -> str | None:
    """The language of a case from its first `lang:xx` tag (`"lang:fr"` -> `"fr"`); None without one."""
    return next((t[len(_LANGUAGE_TAG) :] for t in tags if t.startswith(_LANGUAGE_TAG)), None)


@dataclass(frozen=True, kw_only=True)
class CaseScorer:
    """Scores outputs against one schema; schema parsing and validator are built once.

    Attributes:
        schema: The dataset's JSON Schema.
        options: Matcher tolerances.
    """

    schema: Mapping[str, Any]
    options: MatchOptions = field(default=DEFAULT_OPTIONS)

    @cached_property
    def spec(self) -> FieldSpec:
        """The schema as a field tree."""
        return parse_schema(self.schema)

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
        if reference_outputs is None:
            fields = None
        elif record is None:
            fields = no_output(self.spec, reference_outputs)
        else:
            fields = score_fields(
                outputs=record,
                reference_outputs=reference_outputs,
                schema=self.spec,
                options=self.options,
                lang=case_language(tags),
            )
        return CaseScore(case_id=case_id, tags=tuple(tags), fields=fields, format=fmt)
