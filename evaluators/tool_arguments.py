"""A tool call's arguments against its gold call's, argument by argument.

A gold call comes in one of two forms (docs/tasks.md):

- the exact form, `{"name": ..., "arguments": {...}}`: each argument is compared by the matchers
  of `evaluators.fields`, chosen from the argument's schema in the tool's `parameters` (numbers
  within tolerance, strings normalized, enums exactly, arrays of scalars as sets, arrays of objects
  item by item, nested objects per sub-field). An argument whose schema those matchers cannot read
  (no `type`, an `anyOf`, an object without `properties`) or that the tool does not declare must be
  equal as JSON. An argument left out is its schema's `default` when it has one; without one it is
  absent, which matches only absent.
- BFCL's form, `{"name": ..., "acceptable": {argument: [value, ...]}}`: an argument is right when
  it passes the Berkeley Function Calling Leaderboard's AST checker (`bfcl_eval/eval_checker/
  ast_eval/ast_checker.py`, its Python rules): the tool must declare it, its value must have the
  schema's type (an integer where a number is expected too; a value of the acceptable values' own
  type too, BFCL's "variable" rule; an argument without one JSON type is taken as a string, BFCL's
  `any`) and be one of the acceptable values, strings compared after BFCL's `standardize_string`
  (spaces and `,./-_*^` dropped, lower case, `'` as `"`), arrays item by item in order, objects key
  by key against acceptable values per key. An argument left out is right when its list holds `""`
  and the tool does not require it; an argument not in `acceptable` must not be given.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.fields import score_fields
from evaluators.matchers import MatchOptions
from evaluators.schema import FieldSpec, SchemaSupportError, parse_schema

__all__ = ["ACCEPTABLE", "bfcl_standardize", "first_acceptable", "score_arguments"]

ACCEPTABLE = "acceptable"
"""The key of a gold call in BFCL's form: the acceptable values of each argument."""

_ABSENT = object()
"""An argument neither given nor defaulted."""

_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
"""JSON Schema's types as the Python types BFCL's checker compares with `type(value) ==`."""

_BFCL_PUNCTUATION = re.compile(r"[ \,\.\/\-\_\*\^]")


def bfcl_standardize(text: str) -> str:
    """BFCL's `standardize_string`: spaces and `,./-_*^` dropped, lower case, `'` as `"`."""
    return _BFCL_PUNCTUATION.sub("", text).lower().replace("'", '"')


def _standardized(value: Any) -> Any:
    return bfcl_standardize(value) if type(value) is str else value


def _python_type(schema: Any) -> type:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    return _PYTHON_TYPES.get(kind, str) if isinstance(kind, str) else str


def _gold_type(acceptable: Sequence[Any]) -> type | None:
    return next((type(value) for value in acceptable if value != ""), None)


def _type_ok(
    value: Any, acceptable: Sequence[Any], expected: type, item_type: type | None
) -> tuple[bool, bool]:
    """(the value's type passes, it is a "variable": the gold's values are of another type than
    the schema's), as BFCL's `type_checker`, arrays' items checked one level deep."""
    gold_type = _gold_type(acceptable)
    variable = gold_type is not None and gold_type is not expected
    items = value if isinstance(value, list) else []
    if type(value) is expected:
        if item_type is None:
            return True, variable
        for answer in acceptable:
            if type(answer) is not list or all(_type_ok(item, answer, item_type, None)[0] for item in items):
                return True, variable
    if gold_type is not None and type(value) is gold_type:
        return True, True
    return False, False


def _dict_ok(value: Mapping[str, Any], acceptable: Sequence[Any]) -> bool:
    """BFCL's `dict_checker`: some acceptable object whose keys hold each given value, none of its
    keys left out unless its list holds `""`."""
    for answer in acceptable:
        if not isinstance(answer, Mapping):
            continue
        given = all(
            key in answer and _standardized(item) in [_standardized(a) for a in answer[key]]
            for key, item in value.items()
        )
        if given and all(key in value or "" in values for key, values in answer.items()):
            return True
    return False


def _list_of_dicts_ok(value: Sequence[Any], acceptable: Sequence[Any]) -> bool:
    """BFCL's `list_dict_checker`: some acceptable list of as many objects, each matched in order."""
    return any(
        isinstance(answer, (list, str))
        and len(answer) == len(value)
        and all(
            isinstance(item, Mapping) and _dict_ok(item, [a]) for item, a in zip(value, answer, strict=True)
        )
        for answer in acceptable
    )


def _list_ok(value: Sequence[Any], acceptable: Sequence[Any]) -> bool:
    """BFCL's `list_checker`: the standardized list equals a standardized acceptable one (`""` is
    the empty list)."""
    given = [_standardized(item) for item in value]
    return any(
        isinstance(answer, (list, str)) and given == [_standardized(a) for a in answer]
        for answer in acceptable
    )


def _bfcl_value_ok(schema: Any, value: Any, acceptable: Sequence[Any]) -> bool:
    """One given argument against its acceptable values, by BFCL's rules (see the module docstring)."""
    expected = _python_type(schema)
    items = schema.get("items") if expected is list and isinstance(schema, Mapping) else None
    item_type = _python_type(items) if isinstance(items, Mapping) else None
    if expected is float and type(value) is int:
        value = float(value)
    type_ok, variable = _type_ok(value, acceptable, expected, item_type)
    if not type_ok:
        return False
    if not variable:
        if expected is dict:
            return _dict_ok(value, acceptable)
        if expected is list and item_type is dict:
            return _list_of_dicts_ok(value, acceptable)
        if expected is str:
            return bfcl_standardize(value) in [bfcl_standardize(a) for a in acceptable if type(a) is str]
        if expected is list:
            return _list_ok(value, acceptable)
    return value in acceptable


def _bfcl_scores(
    parameters: Mapping[str, Any], acceptable: Mapping[str, Any], predicted: Mapping[str, Any]
) -> dict[str, float]:
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = parameters.get("required")
    required = [str(name) for name in required] if isinstance(required, list) else []
    scores: dict[str, float] = {}
    for name in dict.fromkeys([*acceptable, *predicted, *required]):
        values = acceptable.get(name)
        values = values if isinstance(values, list) else None
        if name in predicted:
            right = name in properties and values is not None
            right = right and _bfcl_value_ok(properties[name], predicted[name], values or [])
        else:
            right = name not in required and values is not None and "" in values
        scores[name] = 1.0 if right else 0.0
    return scores


@functools.lru_cache(maxsize=256)
def _argument_spec(schema_json: str) -> FieldSpec | None:
    """The field tree of one argument (under the key `value`), None when the matchers cannot read it."""
    try:
        return parse_schema({"type": "object", "properties": {"value": json.loads(schema_json)}})
    except SchemaSupportError:
        return None


def _same_json(gold: Any, predicted: Any) -> bool:
    # json.dumps tells `true` from `1`, which Python's == does not
    return json.dumps(gold, sort_keys=True) == json.dumps(predicted, sort_keys=True)


def _exact_score(schema: Any, gold: Any, predicted: Any, options: MatchOptions) -> float:
    if gold is _ABSENT or predicted is _ABSENT:
        return 1.0 if gold is predicted else 0.0
    spec = _argument_spec(json.dumps(schema, sort_keys=True)) if isinstance(schema, Mapping) else None
    if spec is None:
        return 1.0 if _same_json(gold, predicted) else 0.0
    accuracy = score_fields(
        outputs={"value": predicted}, reference_outputs={"value": gold}, schema=spec, options=options
    )
    return accuracy.score if accuracy.score is not None else 1.0


def _exact_scores(
    parameters: Mapping[str, Any],
    gold: Mapping[str, Any],
    predicted: Mapping[str, Any],
    options: MatchOptions,
) -> dict[str, float]:
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    scores: dict[str, float] = {}
    for name in dict.fromkeys([*gold, *predicted]):
        schema = properties.get(name)
        default = schema["default"] if isinstance(schema, Mapping) and "default" in schema else _ABSENT
        scores[name] = _exact_score(schema, gold.get(name, default), predicted.get(name, default), options)
    return scores


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def score_arguments(
    *,
    parameters: Mapping[str, Any],
    gold: Mapping[str, Any],
    predicted: Mapping[str, Any],
    options: MatchOptions,
) -> dict[str, float]:
    """The score in [0, 1] of every argument given on either side (and, in BFCL's form, every
    required one), the gold call in either form (see the module docstring).

    Args:
        parameters: The called tool's `parameters` (JSON Schema of an object).
        gold: The gold call, `{"name", "arguments"}` or `{"name", "acceptable"}`.
        predicted: The predicted call's arguments.
        options: Matcher tolerances (the exact form's).
    """
    if ACCEPTABLE in gold:
        return _bfcl_scores(parameters, _mapping(gold[ACCEPTABLE]), predicted)
    return _exact_scores(parameters, _mapping(gold.get("arguments")), predicted, options)


def _first(values: Any) -> Any:
    """The first acceptable value (`""`: left out), its nested objects' values chosen alike."""
    value = (values[0] if values else "") if isinstance(values, list) else values
    if isinstance(value, Mapping):
        return {k: _first(v) for k, v in value.items() if _first(v) != ""}
    if isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
        return [_first([item]) for item in value]
    return value


def first_acceptable(acceptable: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """The arguments of a BFCL-form gold call made of each argument's first acceptable value
    (nested objects alike); an argument whose first value is `""` is left out."""
    chosen = {name: _first(list(values)) for name, values in acceptable.items()}
    return {name: value for name, value in chosen.items() if value != ""}
