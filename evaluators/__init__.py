"""Scoring of extraction outputs: pure functions and typed results, no I/O, no model calls."""

from evaluators.aggregate import CaseScore, DatasetScore, aggregate, mean
from evaluators.case import CaseScorer, case_language
from evaluators.comparison import (
    AgreementSummary,
    Comparison,
    ComparisonOptions,
    PairedCase,
    PairedDelta,
    Regression,
    accuracy_delta,
    compare_paired,
    paired_delta,
    regressions,
    summarize_agreement,
)
from evaluators.fidelity import (
    TokenFidelity,
    TokenFidelitySummary,
    summarize_token_fidelity,
    token_fidelity,
    top_k_kld,
    top_logprob_fidelity,
)
from evaluators.fields import FieldAccuracy, FieldScore, no_output, score_fields
from evaluators.format import (
    FormatError,
    FormatEvaluator,
    FormatResult,
    error_path,
    parse_json_output,
    score_format,
)
from evaluators.load import LoadRequest, LoadStats, summarize_load
from evaluators.matchers import MatchOptions, SetScore, match_scalar, match_set
from evaluators.normalize import normalize_string, parse_date, parse_number
from evaluators.schema import FieldSpec, SchemaSupportError, field_names, parse_schema
from evaluators.statistics import (
    Interval,
    Verdict,
    bootstrap_interval,
    equivalence_verdict,
    mcnemar_exact,
    proportion_interval,
)

__all__ = [
    "AgreementSummary",
    "CaseScore",
    "CaseScorer",
    "Comparison",
    "ComparisonOptions",
    "DatasetScore",
    "FieldAccuracy",
    "FieldScore",
    "FieldSpec",
    "FormatError",
    "FormatEvaluator",
    "FormatResult",
    "Interval",
    "LoadRequest",
    "LoadStats",
    "MatchOptions",
    "PairedCase",
    "PairedDelta",
    "Regression",
    "SchemaSupportError",
    "SetScore",
    "TokenFidelity",
    "TokenFidelitySummary",
    "Verdict",
    "accuracy_delta",
    "aggregate",
    "bootstrap_interval",
    "case_language",
    "compare_paired",
    "equivalence_verdict",
    "error_path",
    "field_names",
    "match_scalar",
    "match_set",
    "mcnemar_exact",
    "mean",
    "no_output",
    "normalize_string",
    "paired_delta",
    "parse_date",
    "parse_json_output",
    "parse_number",
    "parse_schema",
    "proportion_interval",
    "regressions",
    "score_fields",
    "score_format",
    "summarize_agreement",
    "summarize_load",
    "summarize_token_fidelity",
    "token_fidelity",
    "top_k_kld",
    "top_logprob_fidelity",
]
