"""A call's arguments against a gold call in BFCL's form (acceptable values per argument), by the
rules of BFCL's AST checker, and the exact form's scoring as before."""

from __future__ import annotations

from typing import Any

import pytest

from evaluators.matchers import DEFAULT_OPTIONS
from evaluators.tool_arguments import bfcl_standardize, first_acceptable, score_arguments

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "ratio": {"type": "number"},
        "metric": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "weights": {"type": "array", "items": {"type": "number"}},
        "filters": {"type": "object"},
        "people": {"type": "array", "items": {"type": "object"}},
        "anything": {},
    },
    "required": ["city"],
}


def _right(acceptable: dict[str, list[Any]], **given: Any) -> dict[str, float]:
    gold = {"name": "f", "acceptable": acceptable}
    return score_arguments(parameters=PARAMETERS, gold=gold, predicted=given, options=DEFAULT_OPTIONS)


@pytest.mark.parametrize(
    ("acceptable", "given", "right"),
    [
        ({"ratio": [2.0]}, 2, True),  # an integer where a number is expected
        ({"days": [2]}, 2.0, False),  # a float where an integer is expected
        ({"days": [1]}, True, False),  # a boolean is not an integer
        ({"metric": [True]}, 1, False),
        ({"city": ["New York, NY"]}, "new york ny", True),  # BFCL's standardize_string
        ({"city": ["O'Hare"]}, 'o"hare', True),
        ({"city": ["Paris"]}, "Paris, France", False),
        ({"city": ["Paris", "Paris, France"]}, "paris france", True),  # any acceptable value
        ({"days": ["n"]}, "n", True),  # BFCL's "variable": a value of the gold's own type
        ({"tags": [["a b", "c"]]}, ["AB", "c"], True),  # items standardized, in order
        ({"tags": [["a", "c"]]}, ["c", "a"], False),
        ({"tags": [""]}, [], True),  # "" stands for the empty list too
        ({"weights": [[1.0, 2.5]]}, [1.0, 2.5], True),
        ({"weights": [[1.0, 2.5]]}, [1, 2.5], True),  # compared as Python compares (1 == 1.0)
        ({"filters": [{"k": ["A b"], "n": [1, ""]}]}, {"k": "ab"}, True),
        ({"filters": [{"k": ["A b"], "n": [1, ""]}]}, {"k": "ab", "n": 2}, False),
        ({"filters": [{"k": ["A b"], "n": [1]}]}, {"k": "ab"}, False),  # a key that may not be left out
        ({"filters": [{"k": ["a"]}]}, {"k": "a", "z": 1}, False),  # a key not in the answer
        ({"people": [[{"name": ["Ann"]}, {"name": ["Bob"]}]]}, [{"name": "ann"}, {"name": "Bob"}], True),
        ({"people": [[{"name": ["Ann"]}, {"name": ["Bob"]}]]}, [{"name": "Bob"}, {"name": "Ann"}], False),
        ({"anything": ["x"]}, "X", True),  # no type: a string (BFCL's `any`)
        ({"anything": ["x"]}, 1, False),
    ],
)
def test_one_argument_by_bfcl_s_rules(acceptable, given, right):
    (name,) = acceptable
    scores = _right({"city": ["Rome"], **acceptable}, **{"city": "Rome", name: given})
    assert scores[name] == (1.0 if right else 0.0)


def test_left_out_given_extra_and_required_arguments():
    acceptable: dict[str, list[Any]] = {"city": ["Rome"], "days": [3, ""], "ratio": [0.5]}
    assert _right(acceptable, city="Rome") == {"city": 1.0, "days": 1.0, "ratio": 0.0}  # "": may be left out
    extra = _right(acceptable, city="Rome", ratio=0.5, metric=True)
    assert extra == {"city": 1.0, "days": 1.0, "ratio": 1.0, "metric": 0.0}  # not acceptable: not given
    assert _right({"city": ["Rome", ""]}) == {"city": 0.0}  # required by the tool, "" or not
    assert _right({"city": ["Rome"]}, city="Rome", nowhere=1) == {"city": 1.0, "nowhere": 0.0}


def test_the_exact_form_is_scored_by_the_matchers_as_before():
    gold = {"name": "f", "arguments": {"city": "Rome", "tags": ["a", "b"]}}
    scores = score_arguments(
        parameters=PARAMETERS,
        gold=gold,
        predicted={"city": "rome", "tags": ["b", "a"]},
        options=DEFAULT_OPTIONS,
    )
    assert scores == {"city": 1.0, "tags": 1.0}  # strings normalized, arrays of scalars as sets


def test_bfcl_s_string_standardisation():
    assert bfcl_standardize("April 1, 2024 - 5/6_7*8^9.") == "april1202456789"
    assert bfcl_standardize("it's") == 'it"s'


def test_the_first_acceptable_values_make_a_gold_answer():
    acceptable: dict[str, list[Any]] = {
        "city": ["Rome", "Roma"],
        "days": ["", 3],
        "filters": [{"k": ["a", "b"], "n": ["", 1]}],
        "people": [[{"name": ["Ann"], "age": [30, ""]}]],
    }
    assert first_acceptable(acceptable) == {
        "city": "Rome",
        "filters": {"k": "a"},
        "people": [{"name": "Ann", "age": 30}],
    }
    assert _right(acceptable, **first_acceptable(acceptable)) == dict.fromkeys(acceptable, 1.0)
