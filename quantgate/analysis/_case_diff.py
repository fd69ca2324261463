"""One case of a run side by side: gold, the reference's output and a variant's, field by field.

`case_diff` reads a `RunView` (`quantgate.analysis._run_view`); the scorer of the run's task kind
(`evaluators.CaseScorer`: field by field for extraction and classification, the whole call for tool
calling, chrF for generation) flattens each side's record into per-field values, as it did when
scoring the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from evaluators import CaseScorer
from evaluators.fields import FieldScore
from quantgate.analysis._run_view import RunView
from quantgate.rundir._lines import CaseRecord


def _values(
    scorer: CaseScorer, record: CaseRecord | None, gold: Mapping[str, Any] | None, lang: str | None
) -> dict[str, FieldScore]:
    """Per field: gold (`expected`) and the record's value (`predicted`), flattened by the scorer."""
    output = record.record if record is not None and _answered(record) else None
    if gold is None:  # unlabeled: flatten the output against itself
        gold = output
    return scorer.fields(outputs=output, reference_outputs=gold or {}, lang=lang).fields


def _differs(
    scorer: CaseScorer, own: CaseRecord, ref: CaseRecord | None, lang: str | None
) -> dict[str, bool] | None:
    """Per field, whether the variant's value differs from the reference's as the kind's scorer
    judges agreement (a tool call's left-out default, 50 and 50.0 are the same); None when one
    side has no record."""
    if ref is None or not (_answered(own) and _answered(ref)) or own.record is None or ref.record is None:
        return None
    scores = scorer.fields(outputs=own.record, reference_outputs=ref.record, lang=lang).fields
    return {name: score.score is not None and score.score < 1.0 for name, score in scores.items()}


def case_diff(view: RunView, *, case_id: str, variant: str) -> pd.DataFrame:
    """Gold, reference output and variant output of one case side by side, one row per field.

    Columns: gold, reference, variant (the values), reference_answered and
    variant_answered (whether each side gave a valid record; if not, its values are None),
    reference_score, variant_score, outcome (the variant's), agreement (field agreement
    with the reference), wrong (the variant scores below 1 against gold) and differs (its
    value differs from the reference's).

    Raises:
        KeyError: The case or the variant has no record in this run.
        ValueError: The run's cases are not available.
    """
    case = view.case(case_id)
    if view.dataset is None or case is None:
        raise ValueError(f"{view.run.directory}: the run's copy of case {case_id!r} is not available")
    own = view.records[variant][case_id]
    ref = view.records.get(view.reference, {}).get(case_id)
    scorer = view.dataset.scorer().for_case(case_id)  # a case that brings its tools: against them
    mine = _values(scorer, own, case.expected, case.lang)
    theirs = _values(scorer, ref, case.expected, case.lang)
    judged = _differs(scorer, own, ref, case.lang) or {}
    rows = []
    for field in mine:
        score = own.fields.get(field)
        agreement = (own.agreement_fields or {}).get(field)  # None for the reference itself
        value, ref_value = mine[field].predicted, theirs[field].predicted
        differs = judged.get(field, _dumps(value) != _dumps(ref_value))
        rows.append(
            {
                "field": field,
                "gold": mine[field].expected if case.expected is not None else None,
                "reference": ref_value,
                "variant": value,
                "reference_answered": _answered(ref),
                "variant_answered": _answered(own),
                "reference_score": ref.fields.get(field) if ref is not None else None,
                "variant_score": score,
                "outcome": own.outcomes.get(field),
                "agreement": agreement,
                "wrong": score is not None and score < 1.0,
                "differs": agreement < 1.0 if agreement is not None else differs,
            }
        )
    kinds: dict[str, type] = {"reference_score": float, "variant_score": float, "agreement": float}
    kinds |= dict.fromkeys(["reference_answered", "variant_answered", "wrong", "differs"], bool)
    return pd.DataFrame(rows, dtype=object).astype(kinds).set_index("field")  # a null value stays None


def _answered(record: CaseRecord | None) -> bool:
    return record is not None and record.valid and record.record is not None


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
