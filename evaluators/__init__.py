"""Scoring of extraction outputs: pure functions and typed results, no I/O, no model calls."""

from evaluators.aggregate import CaseScore, DatasetScore, aggregate, mean
from evaluators.case import CaseScorer
from evaluators.fields import FieldAccuracy, FieldScore, no_output, score_fields
from evaluators.format import (
    FormatError,
    FormatEvaluator,
    FormatResult,
    error_path,
    parse_json_output,
    score_format,
)
from evaluators.matchers import MatchOptions, SetScore, match_scalar, match_set
from evaluators.normalize import normalize_string, parse_date, parse_number
from evaluators.schema import FieldSpec, SchemaSupportError, field_names, parse_schema

__all__ = [
    "CaseScore",
    "CaseScorer",
    "DatasetScore",
    "FieldAccuracy",
    "FieldScore",
    "FieldSpec",
    "FormatError",
    "FormatEvaluator",
    "FormatResult",
    "MatchOptions",
    "SchemaSupportError",
    "SetScore",
    "aggregate",
    "error_path",
    "field_names",
    "match_scalar",
    "match_set",
    "mean",
    "no_output",
    "normalize_string",
    "parse_date",
    "parse_json_output",
    "parse_number",
    "parse_schema",
    "score_fields",
    "score_format",
]
