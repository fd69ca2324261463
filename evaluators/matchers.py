"""Per-kind comparison of one predicted value with its gold value.

Each matcher returns a score in [0, 1]. Which matcher applies is chosen from the schema
(`FieldSpec.kind`); the tolerances are set by `MatchOptions`. Every matcher takes the case's
language as `lang` (None: the language-free rules of `evaluators.normalize`); numbers and
dates are read in it, the other kinds do not depend on it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from rapidfuzz import fuzz

from evaluators.normalize import normalize_string, parse_date, parse_number
from evaluators.schema import FieldKind


@dataclass(frozen=True, kw_only=True)
class MatchOptions:
    """Tolerances of the matchers.

    Attributes:
        string_fuzzy_threshold: When set (0-100), two normalized strings whose rapidfuzz
            ratio reaches it count as equal; None means exact after normalization.
        number_rel_tol: Relative tolerance for `number` fields.
        number_abs_tol: Absolute tolerance for `number` fields.
    """

    string_fuzzy_threshold: float | None = None
    number_rel_tol: float = 1e-6
    number_abs_tol: float = 1e-6


DEFAULT_OPTIONS = MatchOptions()


class ScalarMatcher(Protocol):
    """The signature every scalar matcher has."""

    def __call__(
        self, gold: Any, predicted: Any, options: MatchOptions = ..., *, lang: str | None = None
    ) -> float: ...


def match_string(
    gold: Any, predicted: Any, options: MatchOptions = DEFAULT_OPTIONS, *, lang: str | None = None
) -> float:
    """Equal after normalization (NFC, case, whitespace, trailing punctuation), or fuzzy-equal."""
    if not isinstance(predicted, str) or not isinstance(gold, str):
        predicted, gold = _as_text(predicted), _as_text(gold)
    left, right = normalize_string(gold), normalize_string(predicted)
    if left == right:
        return 1.0
    threshold = options.string_fuzzy_threshold
    if threshold is not None and fuzz.ratio(left, right) >= threshold:
        return 1.0
    return 0.0


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def match_number(
    gold: Any, predicted: Any, options: MatchOptions = DEFAULT_OPTIONS, *, lang: str | None = None
) -> float:
    """Equal within the relative or absolute tolerance; numeric strings are read (in `lang`)."""
    pair = _numbers(gold, predicted, lang)
    if pair is None:
        return 0.0
    close = math.isclose(*pair, rel_tol=options.number_rel_tol, abs_tol=options.number_abs_tol)
    return 1.0 if close else 0.0


def match_integer(
    gold: Any, predicted: Any, options: MatchOptions = DEFAULT_OPTIONS, *, lang: str | None = None
) -> float:
    """Exactly equal as integers; `3.0` and `"3"` equal `3`, `3.5` does not."""
    pair = _numbers(gold, predicted, lang)
    return 1.0 if pair is not None and pair[1].is_integer() and pair[0] == pair[1] else 0.0


def _numbers(gold: Any, predicted: Any, lang: str | None) -> tuple[float, float] | None:
    """Both values read as numbers (in `lang`); None if either is not one, or the prediction is
    not finite."""
    left, right = parse_number(gold, lang=lang), parse_number(predicted, lang=lang)
    if left is None or right is None or not math.isfinite(right):
        return None
    return left, right


def match_boolean(
    gold: Any, predicted: Any, options: MatchOptions = DEFAULT_OPTIONS, *, lang: str | None = None
) -> float:
    """Equal booleans; the strings "true"/"false" are read."""
    return 1.0 if _as_bool(gold) is not None and _as_bool(gold) == _as_bool(predicted) else 0.0


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().casefold() in ("true", "false"):
        return value.strip().casefold() == "true"
    return None


def match_date(
    gold: Any, predicted: Any, options: MatchOptions = DEFAULT_OPTIONS, *, lang: str | None = None
) -> float:
    """The same calendar date (read in `lang`); unreadable or ambiguous predictions do not match."""
    left, right = parse_date(gold, lang=lang), parse_date(predicted, lang=lang)
    if left is None or right is None:
        return match_string(gold, predicted, options)
    return 1.0 if left == right else 0.0


def match_enum(
    gold: Any, predicted: Any, options: MatchOptions = DEFAULT_OPTIONS, *, lang: str | None = None
) -> float:
    """Exactly one of the allowed values, the same as gold."""
    return 1.0 if type(gold) is type(predicted) and gold == predicted else 0.0


SCALAR_MATCHERS: dict[FieldKind, ScalarMatcher] = {
    "string": match_string,
    "number": match_number,
    "integer": match_integer,
    "boolean": match_boolean,
    "date": match_date,
    "enum": match_enum,
}


def match_scalar(
    kind: FieldKind,
    gold: Any,
    predicted: Any,
    options: MatchOptions = DEFAULT_OPTIONS,
    *,
    lang: str | None = None,
) -> float:
    """Dispatch to the matcher of `kind`."""
    return SCALAR_MATCHERS[kind](gold, predicted, options, lang=lang)


@dataclass(frozen=True, kw_only=True)
class SetScore:
    """Precision, recall and F1 of a predicted set against a gold set.

    `precision` is None when nothing was predicted and `recall` None when gold is empty:
    a ratio over an empty set is not measured.
    """

    precision: float | None
    recall: float | None
    f1: float


def canonical_item(kind: FieldKind, value: Any, *, lang: str | None = None) -> Hashable:
    """The key under which an array item is compared (duplicates collapse to one)."""
    if kind in ("number", "integer"):
        number = parse_number(value, lang=lang)
        return number if number is not None else normalize_string(_as_text(value))
    if kind == "date":
        date = parse_date(value, lang=lang)
        return date.isoformat() if date is not None else normalize_string(_as_text(value))
    if kind == "boolean":
        return _as_bool(value)
    if kind == "enum":
        return (type(value).__name__, value) if isinstance(value, Hashable) else repr(value)
    return normalize_string(_as_text(value))


def match_set(kind: FieldKind, gold: list[Any], predicted: list[Any], *, lang: str | None = None) -> SetScore:
    """Compare two arrays of scalars as sets of canonical items (numbers and dates read in `lang`).

    Both empty is a perfect match (F1 1.0); one empty and not the other is F1 0.0.
    """
    gold_set = {canonical_item(kind, v, lang=lang) for v in gold}
    predicted_set = {canonical_item(kind, v, lang=lang) for v in predicted}
    if not gold_set and not predicted_set:
        return SetScore(precision=None, recall=None, f1=1.0)
    hits = len(gold_set & predicted_set)
    precision = hits / len(predicted_set) if predicted_set else None
    recall = hits / len(gold_set) if gold_set else None
    if not precision or not recall:
        return SetScore(precision=precision, recall=recall, f1=0.0)
    return SetScore(precision=precision, recall=recall, f1=2 * precision * recall / (precision + recall))
