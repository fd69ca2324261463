"""Field-level accuracy of one extracted record against its gold record.

Nested objects are flattened to dotted names (`organizer.email`); arrays of scalars are
compared as sets (F1); arrays of objects are paired by best assignment and then scored
per sub-field (`line_items.amount`). Null rules: gold null and predicted null is correct,
a value where gold is null is a false positive, null where gold has a value is a miss.
A missing key and an empty or blank string both count as null.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

from evaluators.matchers import DEFAULT_OPTIONS, MatchOptions, match_scalar, match_set
from evaluators.schema import FieldSpec, parse_schema

Outcome = Literal["correct", "partial", "wrong", "missed", "false_positive", "no_output"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FieldScore:
    """The score of one field of one case.

    Attributes:
        field: Dotted field name.
        score: 1.0 right, 0.0 wrong, in between for sets and arrays of objects.
        outcome: Why it scored what it did.
        expected: The gold value (for array sub-fields, the list of item values).
        predicted: The predicted value, same shape.
    """

    field: str
    score: float
    outcome: Outcome
    expected: Any = None
    predicted: Any = None


@dataclass(frozen=True, kw_only=True)
class FieldAccuracy:
    """Per-field scores of one case, keyed by dotted field name in schema order."""

    fields: dict[str, FieldScore] = field(default_factory=dict)

    @property
    def score(self) -> float | None:
        """Mean of the field scores; None when the schema has no fields."""
        if not self.fields:
            return None
        return sum(f.score for f in self.fields.values()) / len(self.fields)

    def as_keys(self) -> dict[str, float | None]:
        """One key per field (`field:items.amount`) plus the case score under `field:*`."""
        keys: dict[str, float | None] = {f"field:{k}": v.score for k, v in self.fields.items()}
        keys["field:*"] = self.score
        return keys


def score_fields(
    *,
    outputs: Mapping[str, Any] | None,
    reference_outputs: Mapping[str, Any],
    schema: Mapping[str, Any] | FieldSpec,
    options: MatchOptions = DEFAULT_OPTIONS,
    lang: str | None = None,
) -> FieldAccuracy:
    """Score a predicted record field by field.

    Args:
        outputs: The predicted record; None when the system produced nothing usable,
            in which case every field scores 0 with outcome `no_output`.
        reference_outputs: The gold record (or another variant's record, for agreement).
        schema: The dataset's JSON Schema, or its parsed `FieldSpec`.
        options: Matcher tolerances.
        lang: The case's language (from its `lang:xx` tag, see `case_language`): numbers
            and dates are read in it. None reads them with the language-free rules.

    Returns:
        The per-field scores.
    """
    root = schema if isinstance(schema, FieldSpec) else parse_schema(schema)
    if outputs is None:
        return no_output(root, reference_outputs)
    scores = _score_node(root, reference_outputs, outputs, options, lang=lang)
    return FieldAccuracy(fields={leaf.name: scores[leaf.name] for leaf in root.leaves()})


def no_output(root: FieldSpec, reference_outputs: Mapping[str, Any] | None = None) -> FieldAccuracy:
    """Every field failed because there was no record to score."""
    gold = _flatten_values(root, reference_outputs or {})
    return FieldAccuracy(
        fields={
            leaf.name: FieldScore(
                field=leaf.name, score=0.0, outcome="no_output", expected=gold.get(leaf.name)
            )
            for leaf in root.leaves()
        }
    )


def _flatten_values(node: FieldSpec, value: Any) -> dict[str, Any]:
    if node.kind == "object":
        mapping = value if isinstance(value, Mapping) else {}
        merged: dict[str, Any] = {}
        for child in node.children:
            merged.update(_flatten_values(child, mapping.get(child.leaf_name)))
        return merged
    if node.kind == "object_array":
        items = value if isinstance(value, list) else []
        return {
            leaf.name: [_flatten_values(_item_spec(node), i).get(leaf.name) for i in items]
            for leaf in node.leaves()
        }
    return {node.name: value}


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _score_node(
    node: FieldSpec, gold: Any, predicted: Any, options: MatchOptions, *, lang: str | None
) -> dict[str, FieldScore]:
    if node.kind == "object":
        gold_map = gold if isinstance(gold, Mapping) else {}
        pred_map = predicted if isinstance(predicted, Mapping) else {}
        merged: dict[str, FieldScore] = {}
        for child in node.children:
            merged.update(
                _score_node(
                    child, gold_map.get(child.leaf_name), pred_map.get(child.leaf_name), options, lang=lang
                )
            )
        return merged
    if node.kind == "object_array":
        return _score_object_array(node, _as_list(gold), _as_list(predicted), options, lang=lang)
    if node.kind == "scalar_array":
        return {node.name: _score_scalar_array(node, _as_list(gold), _as_list(predicted), lang=lang)}
    return {node.name: _score_scalar(node, gold, predicted, options, lang=lang)}


def _as_list(value: Any) -> list[Any]:
    if _is_null(value):
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _score_scalar(
    node: FieldSpec, gold: Any, predicted: Any, options: MatchOptions, *, lang: str | None
) -> FieldScore:
    gold_null, pred_null = _is_null(gold), _is_null(predicted)
    outcome: Outcome
    if gold_null or pred_null:
        if gold_null and pred_null:
            score, outcome = 1.0, "correct"
        else:
            score, outcome = 0.0, ("missed" if pred_null else "false_positive")
        return FieldScore(field=node.name, score=score, outcome=outcome, expected=gold, predicted=predicted)
    score = match_scalar(node.kind, gold, predicted, options, lang=lang)
    return FieldScore(
        field=node.name,
        score=score,
        outcome="correct" if score == 1.0 else "wrong",
        expected=gold,
        predicted=predicted,
    )


def _array_outcome(score: float, n_gold: int, n_predicted: int) -> Outcome:
    if score == 1.0:
        return "correct"
    if n_predicted == 0:
        return "missed"
    if n_gold == 0:
        return "false_positive"
    return "wrong" if score == 0.0 else "partial"


def _score_scalar_array(
    node: FieldSpec, gold: list[Any], predicted: list[Any], *, lang: str | None
) -> FieldScore:
    assert node.item_kind is not None
    result = match_set(node.item_kind, gold, predicted, lang=lang)
    return FieldScore(
        field=node.name,
        score=result.f1,
        outcome=_array_outcome(result.f1, len(gold), len(predicted)),
        expected=gold,
        predicted=predicted,
    )


def _item_spec(node: FieldSpec) -> FieldSpec:
    return FieldSpec(name=node.name, kind="object", children=node.children)


def _score_object_array(
    node: FieldSpec, gold: list[Any], predicted: list[Any], options: MatchOptions, *, lang: str | None
) -> dict[str, FieldScore]:
    """Pair gold and predicted items by best assignment, then average per sub-field.

    Unpaired items (more predicted than gold or the reverse) score 0 on every sub-field,
    so each sub-field's score is the sum over pairs divided by the longer list's length.
    """
    item = _item_spec(node)
    leaves = [leaf.name for leaf in node.leaves()]
    pair_scores = [[_score_node(item, g, p, options, lang=lang) for p in predicted] for g in gold]
    totals = dict.fromkeys(leaves, 0.0)
    if gold and predicted:
        similarity = np.array(
            [[sum(s[n].score for n in leaves) / len(leaves) for s in row] for row in pair_scores]
        )
        rows, cols = linear_sum_assignment(similarity, maximize=True)
        for r, c in zip(rows, cols, strict=True):
            for name in leaves:
                totals[name] += pair_scores[r][c][name].score
    longest = max(len(gold), len(predicted))
    gold_values = _flatten_values(node, gold)
    predicted_values = _flatten_values(node, predicted)
    results = {}
    for name in leaves:
        score = totals[name] / longest if longest else 1.0
        results[name] = FieldScore(
            field=name,
            score=score,
            outcome=_array_outcome(score, len(gold), len(predicted)),
            expected=gold_values[name],
            predicted=predicted_values[name],
        )
    return results
